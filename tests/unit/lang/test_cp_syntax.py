"""The language of tcgen05.cp (issue 14): ``tcgen05.commit BAR [cta_mask=M]``, ``tcgen05.fence::KIND``, the
copy_async options ``shape=``/``multicast=``/``cta_group=``/``decompress=`` and replicas ``+ R[...]`` on tmem
layouts — every form's AST and every misuse's located error (line, column, caret, hint)."""

from __future__ import annotations

import pytest
from pygments.token import Error

from cells import CP_CELLS, cp_case_cell
from helpers import located_parse_error
from tilemagic.arch.tcgen05 import CP_MULTICAST
from tilemagic.lang import ast as A
from tilemagic.lang import parse
from tilemagic.lang.highlight import TileCopyLexer

CP = "if tx == 0: thread.copy_async T <- S"


def one(line: str):
    (node,) = parse(line).items
    return node


located = located_parse_error


# ----------------------------------------------------------------------------- tcgen05.commit
def test_commit_names_its_barrier_and_keeps_its_guard():
    c = one("if warpid == 0 and laneid == 0: tcgen05.commit  done   # the issuing thread")
    assert isinstance(c, A.TcgenCommitStmt)
    assert (c.bar, c.cta_mask, c.mask_span) == ("done", None, None)
    assert c.bar_span.col == 49 and c.span.col == 33
    assert c.guard is not None and str(c.guard) == "warpid == 0 and laneid == 0"


@pytest.mark.parametrize("text,mask", [("cta_mask=0b11", 3), ("cta_mask=5", 5), ("cta_mask = 0x1", 1)])
def test_commit_multicast_mask_is_an_integer_literal(text, mask):
    c = one(f"tcgen05.commit done {text}")
    assert isinstance(c, A.TcgenCommitStmt) and c.cta_mask == mask
    assert c.mask_span is not None and c.mask_span.col == 21


def test_tcgen05_with_spaces_around_the_dot():
    assert one("tcgen05 . commit bar").bar == "bar"
    assert one("tcgen05 .fence :: before_thread_sync").kind == "before_thread_sync"


@pytest.mark.parametrize("src,line,col,fragment,hint", [
    ("tcgen05.commit", 1, 15, "expected an mbarrier name", "tcgen05.commit BAR"),
    ("tcgen05.commit done cta_mask=0", 1, 30, "at least one CTA", "rank i"),
    ("tcgen05.commit done cta_mask=cta_rank", 1, 30, "integer literal", "cta_mask=0b11"),
    ("tcgen05.commit done mbar=full", 1, 21, "unknown option 'mbar' of tcgen05.commit", "cta_mask=M"),
    ("tcgen05.commit done cta_msk=1", 1, 21, "unknown option", "did you mean `cta_mask=`"),
    ("tcgen05.commit done cta_mask=1 cta_mask=1", 1, 32, "given twice", None),
    ("tcgen05.comit done", 1, 9, "unknown tcgen05 statement 'tcgen05.comit'", "did you mean `tcgen05.commit`"),
    ("tcgen05.cp T, S", 1, 9, "unknown tcgen05 statement", "thread.copy_async"),
    ("tcgen05.", 1, 9, "expected `commit` or `fence::...`", None),
    ("tcgen05 done", 1, 8, "expected '.' after 'tcgen05'", None),
])
def test_commit_misuse(src, line, col, fragment, hint):
    located(src, line, col, fragment, hint)


# ----------------------------------------------------------------------------- tcgen05.fence
@pytest.mark.parametrize("kind", A.TCGEN05_FENCES)
def test_fence_kinds(kind):
    f = one(f"if tx < 32: tcgen05.fence::{kind}  # order the ld after the wait")
    assert isinstance(f, A.TcgenFenceStmt) and f.kind == kind and f.guard is not None
    assert f.span.col == 13


@pytest.mark.parametrize("src,col,fragment,hint", [
    ("tcgen05.fence::after_sync", 16, "unknown tcgen05 fence kind 'after_sync'",
     "did you mean `tcgen05.fence::after_thread_sync`"),
    ("tcgen05.fence::wait", 16, "expected after_thread_sync or before_thread_sync", "§9.7.16.11"),
    ("tcgen05.fence", 14, "expected '::after_thread_sync' or '::before_thread_sync'", "tcgen05.fence::"),
    ("tcgen05.fence::before_thread_sync done", 35, "unexpected 'done'; expected end of line", None),
])
def test_fence_misuse(src, col, fragment, hint):
    located(src, 1, col, fragment, hint)


def test_a_tcgen05_fence_is_not_a_proxy_fence():
    assert isinstance(one("fence.proxy.async"), A.FenceStmt)
    assert isinstance(one("tcgen05.fence::after_thread_sync"), A.TcgenFenceStmt)


# ----------------------------------------------------------------------------- copy_async options
@pytest.mark.parametrize("shape", list(CP_MULTICAST))
def test_every_shape_name_is_an_option_value(shape):
    c = one(f"{CP} shape={shape}")
    assert c.option("shape").value == shape


@pytest.mark.parametrize("mc", ["warpx2::02_13", "warpx2::01_23", "warpx4"])
def test_multicast_values_with_double_colons_lex_as_one_word(mc):
    c = one(f"{CP} shape=64x128b multicast={mc} dispatch=smem->tmem")
    opt = c.option("multicast")
    assert opt.value == mc and opt.value_span.end_col - opt.value_span.col == len(mc)
    assert c.dispatch == "smem->tmem"


def test_cta_group_is_an_int_and_decompress_takes_any_word():
    c = one(f"{CP} cta_group=2 decompress=b8x16.b6x16_p32")
    assert (c.option("cta_group").value, c.option("cta_group").expr) == ("2", 2)
    assert c.option("decompress").value == "b8x16.b6x16_p32"
    assert one(f"{CP} decompress=anything").option("decompress").value == "anything"


@pytest.mark.parametrize("opts,col,fragment,hint", [
    ("shape=128x265b", 44, "unknown shape value '128x265b'", "did you mean `shape=128x256b`"),
    ("shape=64x128b.warpx2::02_13", 44, "unknown shape value", None),
    ("multicast=warpx2", 48, "unknown multicast value 'warpx2'", "multicast=warpx"),
    ("multicast=warpx2::03_12", 48, "unknown multicast value", None),
    ("cta_group=two", 48, "`cta_group=` takes an integer, got 'two'", "cta_group=2"),
    ("cta_group=1.5", 48, "`cta_group=` takes an integer", None),
    ("cta_grup=1", 38, "unknown option 'cta_grup'", "did you mean `cta_group=`"),
    ("shape", 38, "option `shape` needs a value", "128x256b"),
])
def test_option_misuse(opts, col, fragment, hint):
    located(f"{CP} {opts}", 1, col, fragment, hint)


def test_the_cp_options_belong_to_copy_async():
    located("wg.copy T <- S shape=128x256b", 1, 16, "`shape=` is an option of `copy_async`", "copy_async")


# ----------------------------------------------------------------------------- replicas
def test_a_replica_on_a_tmem_layout():
    d = one("tmem T: float32[32, 4] @ S[(32, 4) : (1@TLane, 1@TCol)] + R[4 : 32@TLane]")
    lay = d.layout
    assert isinstance(lay, A.SLayout) and lay.offsets == ()
    (rep,) = lay.replicas
    assert rep.extents == (4,) and [(s.value, s.axis) for s in rep.strides] == [(32, "TLane")]
    assert rep.span.col == 57  # from its `+`


def test_replicas_and_offsets_mix_in_any_order():
    d = one("tmem T: float32[32, 4] @ S[(32, 4) : (1@TLane, 1@TCol)] + 4@TCol + R[(2, 2) : (32@TLane, 64@TLane)]"
            " + 8@TCol")
    lay = d.layout
    assert [(o.value, o.axis) for o in lay.offsets] == [(4, "TCol"), (8, "TCol")]
    (rep,) = lay.replicas
    assert rep.extents == (2, 2) and [s.value for s in rep.strides] == [32, 64]
    two = one("tmem T: float32[32, 4] @ S[(32, 4) : (1@TLane, 1@TCol)] + R[2 : 64@TLane] + R[2 : 32@TLane]")
    assert [r.strides[0].value for r in two.layout.replicas] == [64, 32]


@pytest.mark.parametrize("src,col,fragment,hint", [
    ("shared S: float32[32, 4] @ S[(32, 4) : (4, 1)] + R[4 : 32@TLane]", 48,
     "a shared buffer cannot take them", "tmem T"),
    ("local r: float32[32, 4] @ S[(32, 4) : (1@laneid, 1)] + R[2 : 1@warpid]", 0,
     "a replica's strides are on TLane", "R[4 : 32@TLane]"),
    ("tmem T: float32[32, 4] @ S[(32, 4) : (1@TLane, 1@TCol)] + R[4 : 32@TCol]", 65,
     "a replica's strides are on TLane (lane copies), got 32@TCol", "+ R[4 : 32@TLane]"),
    ("tmem T: float32[32, 4] @ S[(32, 4) : (1@TLane, 1@TCol)] + R[4 : 32]", 65,
     "a replica's strides are on TLane (lane copies), got 32", None),
    ("tmem T: float32[32, 4] @ S[(32, 4) : (1@TLane, 1@TCol)] + R[(4, 2)]", 61,
     "a replica needs its strides", None),
    ("tmem T: float32[32, 4] @ S[(32, 4) : (1@TLane, 1@TCol)] + R[(4, 2) : (32@TLane)]", 70,
     "the replica has 2 extents but 1 stride", "R[(2, 2)"),
    ("tmem T: float32[32, 4] @ S[(32, 4) : (1@TLane, 1@TCol)] + R[4 : 0@TLane]", 65,
     "a replica stride of 0", None),
    ("tmem T: float32[32, 4] @ S[(32, 4) : (1@TLane, 1@TCol)] + R[0 : 32@TLane]", 61, "an extent must be positive",
     None),
])
def test_replica_misuse(src, col, fragment, hint):
    if col == 0:  # a wrong axis is named before the buffer kind is judged
        col = src.index("1@warpid") + 1
    located(src, 1, col, fragment, hint)


def test_a_replica_inside_a_swizzle_tile_is_refused_for_shared():
    src = "shared S: float32[32, 4] @ swizzle(2, 1, 3, S[(32, 4) : (4, 1)] + R[2 : 32@TLane])"
    located(src, 1, src.index("+ R") + 1, "a shared buffer cannot take them")


# ----------------------------------------------------------------------------- the matrix cells
@pytest.mark.parametrize("case", CP_CELLS, ids=lambda c: f"{c.key}-sw{c.swizzle}-{c.dtype}{'-off' * c.offsets}")
def test_every_matrix_cell_parses_and_highlights_without_error_tokens(case):
    cell = cp_case_cell(case)
    prog = parse(cell)
    kinds = [type(s).__name__ for s in prog.stmts]
    assert kinds.count("TcgenCommitStmt") == 1 and kinds.count("TcgenFenceStmt") == 1
    assert not [v for t, v in TileCopyLexer().get_tokens(cell) if t in Error]


def test_the_lexer_colours_the_new_words():
    toks = [(t, v) for t, v in TileCopyLexer().get_tokens(
        "if tx == 0: tcgen05.commit done\ntcgen05.fence::after_thread_sync\n"
        f"{CP} multicast=warpx2::01_23\n") if v.strip()]
    kw = {v for t, v in toks if "Keyword" in str(t)}
    assert {"commit", "fence", "after_thread_sync", "multicast"} <= kw
    assert ("Token.Name.Constant", "warpx2::01_23") in [(str(t), v) for t, v in toks]
