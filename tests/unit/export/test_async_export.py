"""The TVMScript export and ``--compare tvm`` of the asynchronous copies, without TVM.

The swizzle layout's TVM spelling, the TMA instruction lines (coordinates are not a cp-size, ``.cta_group::1``
is the default group), the export's note where TVM 0.27 would pick ``ldgsts`` for an ``mbar=`` copy, the
verdicts that name a documented TVM bug only when TVM forced to tilemagic's variant agrees, and the HTML's
clipping of TVM's very long outputs.  (TVM itself: tests/tvm/test_tvm_async_export.py.)
"""

from __future__ import annotations

import pytest

from tilemagic.errors import TileMagicError
from tilemagic.export.instructions import Instr, instr_bytes, ours_instructions, summary_lines, tvm_instructions
from tilemagic.export.tvm_compare import (
    LDGSTS_MBAR_BUG,
    MAX_PANE_CHARS,
    OpComparison,
    TvmComparison,
    TvmRun,
    known_dispatch_bug,
)
from tilemagic.export.tvm_tma import SWIZZLE_BUG, TmaFacts, TmaPlanComparison
from tilemagic.export.tvmscript import export_tvmscript, layout_text, tvmscript_from_source
from tilemagic.lang import parse
from tilemagic.layout import TileLayout, row_major
from tilemagic.layout.swizzle import ComposeLayout
from tilemagic.lower.program import check
from tilemagic.pipeline import tilecopy

# what TVM 0.27 prints for a TMA store (S2G): the tensor map, then the coordinates (innermost first), then the
# shared pointer -- the third operand is a coordinate, not a cp-size
TVM_S2G = '''
@T.prim_func
def impl():
    buffer = T.Buffer((64, 64), "float16", scope="shared.dyn")
    T.ptx.cp(T.reinterpret(T.handle().ty, T.address_of(B_tensormap)), 0, 64, T.cuda.cvta_generic_to_shared(T.address_of(buffer)), "async", "bulk", "tensor", "2d", "global", "shared::cta", "tile", "bulk_group", "", "")
'''
# a TMA load as TVM prints it for sm_100a: `.cta_group::1` spelled out
TVM_G2S = '''
@T.prim_func
def impl():
    buffer = T.Buffer((32, 64), "float16", scope="shared.dyn")
    T.ptx.cp(T.cuda.cvta_generic_to_shared(T.address_of(buffer)), T.reinterpret(T.handle().ty, T.address_of(A_tensormap)), 32, 16, T.cuda.cvta_generic_to_shared(bar), "async", "bulk", "tensor", "2d", "shared::cluster", "global", "mbarrier::complete_tx::bytes", "cta_group::1", "")
'''
G2S_CHAIN = "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"


def test_tma_store_coordinates_are_not_a_cp_size():
    (ins,) = tvm_instructions(TVM_S2G)
    assert ins == Instr("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group")
    assert ins.nbytes is None and instr_bytes(ins) is None


def test_tma_load_cta_group_1_is_the_default_group():
    (ins,) = tvm_instructions(TVM_G2S)
    assert ins == Instr(G2S_CHAIN)


def tma_cell(sdecl="float16[32, 64] @ swizzle(3, 3, 3)", g2s_opts="", s2g=True):
    text = ("kernel c threads=32\nglobal A: float16[64, 64] = arange\nglobal B: float16[64, 64] = zeros\n"
            f"shared S: {sdecl}\nmbarrier bar count=1\nif tx == 0: arrive bar expect_tx=auto\n"
            f"if tx == 0: thread.copy_async S <- A[32:64, :] mbar=bar{g2s_opts}\nwait bar phase 0\n")
    if s2g:
        text += "if tx == 0: thread.copy_async B[0:32, :] <- S\nif tx == 0: bulk_commit_group\n" \
                "if tx == 0: bulk_wait_group 0\n"
    return text


def test_ours_tma_lines_match_tvms_spelling():
    res = tilecopy(tma_cell(), launch="off", emit_warnings=False)
    assert [d.chosen for d in res.dispatch] == ["tma_auto", "tma_auto"]
    ours = ours_instructions(res.kernel)
    assert summary_lines(ours[7]) == summary_lines(tvm_instructions(TVM_G2S)) == [f"{G2S_CHAIN} ×1"]
    assert summary_lines(ours[9]) == summary_lines(tvm_instructions(TVM_S2G))


# ----------------------------------------------------------------------------- the swizzle in the export
def test_swizzle_layout_is_tvms_compose_layout():
    assert layout_text(ComposeLayout(3, 3, 3, row_major((8, 64)), bare=True)) == \
        "T.ComposeLayout(3, 3, 3, T.TileLayout(T.S[(8, 64):(64, 1)]))"
    atoms = ComposeLayout(3, 3, 3, TileLayout.from_spec((64, 2, 64), (64, 4096, 1)))
    assert layout_text(atoms) == "T.ComposeLayout(3, 3, 3, T.TileLayout(T.S[(64, 2, 64):(64, 4096, 1)]))"


def test_swizzled_shared_buffer_exports():
    text = tvmscript_from_source("kernel k threads=32\nglobal A: float32[8, 32]\n"
                                 "shared S: float32[8, 32] @ swizzle(2, 3, 3)\nwarp.copy S <- A\n").text
    assert ('S = T.alloc_shared((8, 32), "float32", layout=T.ComposeLayout(2, 3, 3, '
            "T.TileLayout(T.S[(8, 32):(32, 1)])))") in text


# ----------------------------------------------------------------------------- the known ldgsts bug
def test_export_notes_where_tvm_would_take_ldgsts():
    text = tilecopy(tma_cell(), launch="off", emit_warnings=False).tvmscript()
    assert text.count("known TVM 0.27 bug: without dispatch=, TVM lowers this copy with ldgsts") == 1
    note = text.index("known TVM 0.27 bug")
    assert text.index("L7: if tx == 0") < note < text.index("Tx.copy_async(S[0:32, 0:64]")  # above the G2S op
    forced = tilecopy(tma_cell(g2s_opts=" dispatch=tma_auto"), launch="off", emit_warnings=False).tvmscript()
    assert "known TVM 0.27 bug" not in forced and 'dispatch="tma_auto"' in forced


def test_known_dispatch_bug_is_ldgsts_taking_an_mbar_copy():
    g2s, s2g = check(parse(tma_cell())).copy_ops
    assert known_dispatch_bug(g2s, "tma_auto", "ldgsts") == LDGSTS_MBAR_BUG
    assert known_dispatch_bug(g2s, "tma_auto", "tma_auto") is None
    assert known_dispatch_bug(g2s, None, "ldgsts") is None  # tilemagic did not lower it: nothing to compare
    assert known_dispatch_bug(s2g, "tma_auto", "ldgsts") is None  # no mbar=


def _op(**kw):
    ours = [Instr(G2S_CHAIN)]
    base = dict(line=7, text="copy", ours_variant="tma_auto", tvm_variant="ldgsts", ours=ours,
                tvm=[Instr("cp.async.cg.shared.global", nbytes=16)] * 128, known_bug=LDGSTS_MBAR_BUG)
    base.update(kw)
    return OpComparison(**base)


def test_known_bug_verdict_needs_tvm_forced_to_agree():
    assert _op(tvm_forced=[Instr(G2S_CHAIN)]).verdict == "known TVM bug"
    assert _op(tvm_forced=[Instr(G2S_CHAIN)] * 2).verdict == "differs"  # forced TVM issues twice: not explained
    assert _op(tvm_forced=None).verdict == "differs"  # TVM refused the forced variant
    assert _op(known_bug=None, tvm_forced=[Instr(G2S_CHAIN)]).verdict == "differs"
    facts = TmaFacts("FLOAT16", (64, 64), (128,), (64, 32), (0, 32), 3, 1)
    other = TmaFacts("FLOAT16", (64, 64), (128,), (64, 32), (0, 0), 3, 1)
    bad_plan = TmaPlanComparison("tma_auto", facts, other)
    assert _op(tvm_forced=[Instr(G2S_CHAIN)], tma=bad_plan).verdict == "differs"  # the plan still counts
    cmp = TvmComparison(True, "m", None, [_op(tvm_forced=[Instr(G2S_CHAIN)])], TvmRun())
    assert cmp.agrees and LDGSTS_MBAR_BUG in cmp.text()
    assert "  TVM with dispatch=tma_auto:\n    = " + G2S_CHAIN + " ×1" in cmp.text()
    assert cmp.html().count("background:#fff8c5") == 1  # TVM's own pick differs; the forced rows are equal


def test_swizzle_bug_note_only_where_tilemagic_declines_the_swizzle():
    facts = TmaFacts("FLOAT16", (64, 64), (128,), (64, 8), (0, 0), 3, 1)
    assert TmaPlanComparison("tma_auto", None, facts, "x stage=shared-swizzle: y", None, SWIZZLE_BUG).agrees
    assert not TmaPlanComparison("tma_auto", None, facts, "x stage=coordinate: y").agrees


# ----------------------------------------------------------------------------- expect_tx=auto without a kernel
def test_unresolved_expect_tx_auto_raises_located_or_is_a_placeholder():
    prog = parse(tma_cell(sdecl="float16[32, 64] @ swizzle(2, 3, 3)", s2g=False))
    tp = check(prog)
    with pytest.raises(TileMagicError) as e:
        export_tvmscript(prog, tp)
    assert e.value.span.line == 6 and "expect_tx=auto" in str(e.value)
    text = export_tvmscript(prog, tp, unresolved_auto=True).text
    assert "T.ptx.mbarrier.arrive.expect_tx.shared.b64(T.address_of(bar[0]), T.uint32(0))" in text
    assert "expect_tx=auto: not resolved" in text


def test_expect_tx_auto_is_resolved_by_tvmscript_from_source():
    text = tvmscript_from_source(tma_cell()).text
    assert "# expect_tx=auto: 4096 bytes (tilemagic)" in text and "T.uint32(4096))" in text  # 32 x 64 fp16


# ----------------------------------------------------------------------------- HTML
def test_long_tvm_outputs_are_clipped_in_the_html():
    cuda = "".join(f"line {k}\n" for k in range(40_000))
    html = TvmComparison(True, "m", None, [], TvmRun(cuda=cuda, cuda_note="n")).html()
    assert len(html) < MAX_PANE_CHARS + 4096
    assert "more lines (the whole text: result.tvm_comparison.tvm.cuda)" in html
    short = TvmComparison(True, "m", None, [], TvmRun(cuda="a\nb\n", cuda_note="n")).html()
    assert "more lines" not in short
