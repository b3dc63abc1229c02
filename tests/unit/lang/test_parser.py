"""Tests of the %%tilecopy statement parser (tilemagic.lang.parser)."""

from __future__ import annotations

import re
import time

import pytest
from cells import SEED_B_READBACK, SEED_F_HALVES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tilemagic.cli import demo_source
from tilemagic.errors import Span, TileMagicError, TileSyntaxError
from tilemagic.lang import (
    Alias,
    CheckStmt,
    CopyStmt,
    DatapathLayout,
    FragLayout,
    KernelDecl,
    Program,
    SLayout,
    Slice,
    Stride,
    SyncStmt,
    WaitStmt,
    parse,
)

# ----------------------------------------------------------------------------- seed cells (docs/language.md)
ROUNDTRIP = demo_source("tmem_roundtrip")

FALLBACK = demo_source("fallback_demo")

F_HALVES = SEED_F_HALVES

B_READBACK = SEED_B_READBACK

SEEDS = [ROUNDTRIP, FALLBACK, F_HALVES, B_READBACK]


def one(line: str):
    """Parse a single statement line and return its node."""
    prog = parse(line)
    assert len(prog.items) == 1
    return prog.items[0]


def syntax_error(source: str, **kw) -> TileSyntaxError:
    with pytest.raises(TileSyntaxError) as info:
        parse(source, **kw)
    return info.value


# ----------------------------------------------------------------------------- seeds
def test_seed_roundtrip():
    prog = parse(ROUNDTRIP)
    assert isinstance(prog, Program)
    assert prog.source == ROUNDTRIP
    assert prog.kernel == KernelDecl(
        "tmem_roundtrip", 128, Span(2, 1, 2, 34), Span(2, 8, 2, 22), Span(2, 23, 2, 34)
    )
    assert [b.name for b in prog.buffers] == ["A", "B", "T", "a", "b"]
    assert [b.kind for b in prog.buffers] == ["global", "global", "tmem", "local", "local"]
    assert all(b.dtype == "float16" and b.shape == (128, 8) for b in prog.buffers)
    A_, _, T, a, _ = prog.buffers
    assert A_.layout is None and A_.init is None and A_.alias is None
    assert T.layout is None and T.alias is None
    assert a.layout == SLayout(
        (128, 8),
        (Stride(1, "tid_in_wg", Span(6, 43, 6, 54)), Stride(1, "m", Span(6, 56, 6, 57))),
        (),
        Span(6, 29, 6, 59),
    )
    assert a.name_span == Span(6, 8, 6, 9)
    assert a.dtype_span == Span(6, 11, 6, 18)
    assert a.shape_span == Span(6, 18, 6, 26)
    assert a.span == Span(6, 1, 6, 59)
    kinds = [type(s).__name__ for s in prog.stmts]
    assert kinds == ["CopyStmt", "CopyStmt", "WaitStmt", "SyncStmt", "CopyStmt", "WaitStmt", "CopyStmt", "CheckStmt"]
    c0, c1 = prog.stmts[0], prog.stmts[1]
    assert (c0.scope, c0.is_async, c0.dst.name, c0.src.name, c0.dispatch) == ("wg", False, "a", "A", None)
    assert (c1.scope, c1.is_async, c1.dst.name, c1.src.name) == ("wg", True, "T", "a")
    assert c1.op_name == "copy_async" and c0.op_name == "copy"
    assert c1.op_span == Span(9, 1, 9, 14)
    assert c0.dst.slices is None and c0.dst.span == Span(8, 9, 8, 10)
    assert prog.stmts[2] == WaitStmt("st", Span(10, 1, 10, 8))
    assert prog.stmts[3] == SyncStmt(Span(11, 1, 11, 9))
    assert prog.stmts[5].kind == "ld"
    chk = prog.stmts[7]
    assert isinstance(chk, CheckStmt) and (chk.lhs.name, chk.rhs.name) == ("B", "A")
    assert prog.items == (prog.kernel,) + prog.buffers + prog.stmts


def test_seed_fallback():
    prog = parse(FALLBACK)
    assert prog.kernel.name == "fallback_demo" and prog.kernel.threads == 32
    smem = prog.buffers[2]
    assert (smem.kind, smem.name, smem.dtype, smem.shape, smem.layout) == ("shared", "A_smem", "float32", (4, 6), None)
    copies = [s for s in prog.stmts if isinstance(s, CopyStmt)]
    assert [(c.scope, c.dst.name, c.src.name) for c in copies] == [("warp", "A_smem", "A"), ("warp", "B", "A_smem")]
    assert len(prog.items) == 8


def test_seed_f_halves():
    prog = parse(F_HALVES)
    assert prog.kernel is None
    T, lower, upper, lo = prog.buffers
    assert T.layout is None and T.shape == (128, 32)
    assert lower.layout == DatapathLayout("F", 0, Span(2, 31, 2, 54))
    assert upper.layout.letter == "F" and upper.layout.sub_slab == 1
    assert lower.alias == Alias("T", 0, Span(2, 55, 2, 59), Span(2, 58, 2, 59))
    assert upper.alias.target == "T" and upper.alias.cols == 0
    assert lo.layout == FragLayout("16x64b", Span(4, 31, 4, 43))
    (cp,) = prog.stmts
    assert cp.is_async and cp.dst.name == "lo" and cp.src.name == "lower"


def test_seed_b_readback():
    prog = parse(B_READBACK)
    acc, frag = prog.buffers
    assert acc.layout == DatapathLayout("B", 0, acc.layout.span)
    assert frag.name == "frag" and frag.layout.shape == "32x32b"
    assert [type(s).__name__ for s in prog.stmts] == ["CopyStmt", "WaitStmt", "CopyStmt", "WaitStmt"]
    assert prog.stmts[0].dst.name == "frag" and prog.stmts[0].src.name == "acc"
    # the trailing comment is not part of the statement span
    assert prog.stmts[0].span == Span(3, 1, 3, 26)


def test_seeds_parse_fast():
    parse(ROUNDTRIP), parse(FALLBACK)  # warm (grammar built once)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        parse(ROUNDTRIP)
        parse(FALLBACK)
        best = min(best, time.perf_counter() - t0)
    assert best < 0.005


# ----------------------------------------------------------------------------- statements
def test_kernel_forms():
    k = one("kernel k")
    assert k == KernelDecl("k", None, Span(1, 1, 1, 9), Span(1, 8, 1, 9), None)
    k = one("kernel my_kernel threads = 256")
    assert k.threads == 256 and k.threads_span == Span(1, 18, 1, 31)


def test_global_inits():
    for init in ("random", "arange", "zeros", "my_array"):
        b = one(f"global X: i32[3] = {init}")
        assert b.init == init and b.kind == "global"
        assert b.init_span == Span(1, 20, 1, 20 + len(init))
    assert one("global X: i32[3]").init is None


def test_dtype_aliases():
    pairs = {
        "float32": "float32", "f32": "float32", "float16": "float16", "f16": "float16",
        "bfloat16": "bfloat16", "bf16": "bfloat16", "uint8": "uint8", "u8": "uint8",
        "int8": "int8", "i8": "int8", "int32": "int32", "i32": "int32",
    }
    for written, canonical in pairs.items():
        b = one(f"global X: {written}[2, 3]")
        assert b.dtype == canonical
        assert b.dtype_span == Span(1, 11, 1, 11 + len(written))


def test_shapes():
    assert one("global X: f32[7]").shape == (7,)
    assert one("global X: f32[2,3,4]").shape == (2, 3, 4)
    assert one("global X: f32[ 2 , 3 ]").shape == (2, 3)
    huge = 10**40
    assert one(f"global X: f32[{huge}]").shape == (huge,)


def test_shared_forms():
    b = one("shared s: f16[4, 6]")
    assert b.kind == "shared" and b.layout is None
    b = one("shared s: f16[4, 6] @ S[4, 6]")
    assert b.layout.extents == (4, 6) and b.layout.strides is None


def test_tmem_forms():
    b = one("tmem t: f32[128, 64]")
    assert b.layout is None and b.alias is None
    b = one("tmem t: f32[128, 64] at big + 32")
    assert b.alias == Alias("big", 32, Span(1, 22, 1, 33), Span(1, 25, 1, 28))
    b = one("tmem t: f32[64, 32] @ datapath(F, sub_slab=1) at big+16")
    assert b.layout.sub_slab == 1 and b.alias.cols == 16
    b = one("tmem t: f32[128, 32] @ datapath(D)")
    assert b.layout == DatapathLayout("D", 0, Span(1, 24, 1, 35))
    assert one("tmem t: f32[64, 32] @ datapath(F)").layout.sub_slab == 0


def test_local_forms():
    for shape in ("32x32b", "16x64b", "16x128b", "16x256b"):
        assert one(f"local r: f32[128, 32] @ frag({shape})").layout.shape == shape


@pytest.mark.parametrize("scope, mapped", [("thread", "thread"), ("warp", "warp"), ("wg", "wg"),
                                           ("warpgroup", "wg"), ("cta", "cta")])
@pytest.mark.parametrize("op", ["copy", "copy_async"])
def test_copy_scopes(scope, mapped, op):
    c = one(f"{scope}.{op} d <- s")
    assert c.scope == mapped and c.is_async == (op == "copy_async")
    assert c.op_span == Span(1, 1, 1, len(scope) + len(op) + 2)


@pytest.mark.parametrize("text, variant", [
    ("dispatch=tmem<->local", "tmem<->local"),
    ("dispatch = vec_128b", "vec_128b"),
    ("dispatch=gmem_smem", "gmem_smem"),
    ("dispatch=smem->gmem", "smem->gmem"),
    ("dispatch=a-b-c", "a-b-c"),
    ('dispatch="tmem<->local"', "tmem<->local"),
    ("dispatch='fallback loop'", "fallback loop"),
])
def test_copy_dispatch(text, variant):
    c = one(f"wg.copy_async T <- a {text}")
    assert c.dispatch == variant
    col = 22 + text.index("=") + 1 + (len(text.split("=", 1)[1]) - len(text.split("=", 1)[1].lstrip()))
    assert c.dispatch_span.col == col and c.dispatch_span.end_col == 22 + len(text)


def test_copy_spacing_variants():
    c = one("   wg . copy   a<-A   ")
    assert c.scope == "wg" and c.dst.name == "a" and c.src.name == "A"
    assert c.op_span.col == 4


def test_wait_sync_check():
    assert one("wait ld") == WaitStmt("ld", Span(1, 1, 1, 8))
    assert one("  wait   st").kind == "st"
    assert one("cta_sync") == SyncStmt(Span(1, 1, 1, 9))
    c = one("check B[0:64, :] == A[64:128, :]")
    assert c.lhs.name == "B" and c.rhs.name == "A"
    assert c.lhs.slices[0] == Slice(0, 64, False, Span(1, 9, 1, 13))
    assert c.rhs.slices[0].start == 64 and c.rhs.slices[1] == Slice(None, None, False, Span(1, 31, 1, 32))


def test_region_slices():
    c = one("wg.copy a[0:4, :, 3, 2:, :5] <- A")
    s = c.dst.slices
    assert [(x.start, x.stop, x.point) for x in s] == [(0, 4, False), (None, None, False), (3, 4, True),
                                                       (2, None, False), (None, 5, False)]
    assert s[2].span == Span(1, 19, 1, 20)
    assert c.dst.span == Span(1, 9, 1, 29) and c.dst.name_span == Span(1, 9, 1, 10)
    assert c.src.slices is None


def test_keywords_are_names_where_names_are_expected():
    prog = parse("global global: f32[4]\ntmem ld: f32[128, 32] at at\nwg.copy at <- global")
    assert [b.name for b in prog.buffers] == ["global", "ld"]
    assert prog.buffers[1].alias.target == "at"
    assert prog.stmts[0].dst.name == "at"


# ----------------------------------------------------------------------------- layouts
def test_s_layout_full():
    lay = one("local a: f16[128, 8] @ S[(128, 8) : (1@tid_in_wg, 1)]").layout
    assert lay.extents == (128, 8)
    assert [(s.value, s.axis) for s in lay.strides] == [(1, "tid_in_wg"), (1, "m")]
    assert lay.offsets == ()


def test_s_layout_all_axes():
    from tilemagic.lang import AXES
    strides = ", ".join(f"{i}@{ax}" for i, ax in enumerate(AXES))
    extents = ", ".join("2" for _ in AXES)
    lay = one(f"local a: f16[2] @ S[({extents}) : ({strides})]").layout
    assert [s.axis for s in lay.strides] == list(AXES)
    assert [s.value for s in lay.strides] == list(range(len(AXES)))


def test_s_layout_1d_and_extents_and_offsets():
    lay = one("shared s: f32[32] @ S[32 : 4@laneid]").layout
    assert lay.extents == (32,) and lay.strides[0].axis == "laneid" and lay.strides[0].value == 4
    lay = one("shared s: f32[32] @ S[32:1]").layout
    assert lay.strides[0].axis == "m"
    lay = one("shared s: f32[4, 8] @ S[4, 8]").layout
    assert lay.extents == (4, 8) and lay.strides is None
    lay = one("shared s: f32[4, 8] @ S[(4, 8)]").layout
    assert lay.extents == (4, 8) and lay.strides is None
    lay = one("shared s: f32[4] @ S[(4,) : (1,)]").layout
    assert lay.extents == (4,) and len(lay.strides) == 1
    lay = one("local r: f32[128, 8] @ S[(128, 8) : (1@tid_in_wg, 1)] + 2@TCol + 3 + 0@TLane").layout
    assert [(o.value, o.axis) for o in lay.offsets] == [(2, "TCol"), (3, "m"), (0, "TLane")]
    lay = one("shared s: f32[4, 8] @ S[(4, 8) : (0, 1)]").layout
    assert lay.strides[0].value == 0


def test_layout_spans():
    b = one("local r: f32[128, 8] @ S[(128, 8) : (1@tid_in_wg, 1)] + 2@TCol")
    assert b.layout.span == Span(1, 24, 1, 63)
    assert b.layout.offsets[0].span == Span(1, 57, 1, 63)


# ----------------------------------------------------------------------------- cell structure
def test_comments_blank_lines_indentation():
    src = "\n\n   # a comment\n\tkernel k   # trailing\n\n    global A: f32[4]#no space\n  \t \nwg.copy A <- A\n"
    prog = parse(src)
    assert prog.kernel.span.line == 4 and prog.kernel.span.col == 2
    assert prog.buffers[0].span == Span(6, 5, 6, 21)
    assert prog.stmts[0].span.line == 8


def test_empty_and_comment_only_cells():
    for src in ("", "\n\n", "# nothing\n   # here", "%%tilecopy\n", "%%tilecopy demo --launch off\n# c\n"):
        prog = parse(src)
        assert prog.items == () and prog.kernel is None


def test_header_skipped_and_counted():
    prog = parse("%%tilecopy demo --launch sim\nglobal A: f32[4]")
    assert prog.buffers[0].span.line == 2
    prog = parse("\n  %%tilecopy\nglobal A: f32[4]")
    assert prog.buffers[0].span.line == 3
    # only the first non-blank line can be the header
    err = syntax_error("global A: f32[4]\n%%tilecopy x")
    assert (err.line, err.col) == (2, 1) and "%%tilecopy" in err.hint


def test_line_offset():
    body = "global A: f32[4]\nwg.copy A <- B"
    prog = parse(body, line_offset=1)
    assert prog.buffers[0].span.line == 2 and prog.stmts[0].span.line == 3
    assert prog.source == body
    err = syntax_error("global A: f32[4]\nwg.copy A -> B", line_offset=1)
    assert (err.line, err.col) == (3, 11)
    text = err.render()
    assert "  3 | wg.copy A -> B" in text
    assert "    |           ^^" in text


def test_crlf_and_tabs():
    prog = parse("kernel k\r\nglobal A:\tf32[4]\r\n\twg.copy A <- A\r\n")
    assert prog.kernel.name == "k" and prog.buffers[0].dtype == "float32"
    assert prog.stmts[0].span == Span(3, 2, 3, 16)


def test_kernel_optional_and_not_required_first_when_absent():
    prog = parse("global A: f32[4]\nwg.copy A <- A")
    assert prog.kernel is None and len(prog.items) == 2


# ----------------------------------------------------------------------------- errors
BAD_CELLS = [
    # (source, line, col, message fragment)
    ("global A: flot16[4]", 1, 11, "unknown dtype 'flot16'"),
    ("global A: F16[4]", 1, 11, "unknown dtype"),
    ("local a: f16[128, 8]", 1, 7, "local buffer 'a' needs a register layout"),
    ("global A: f32[4]\nkernel k", 2, 1, "`kernel` must be the first statement"),
    ("kernel k\nkernel j", 2, 1, "duplicate `kernel`"),
    ("local a: f16[4] @ S[(4, 8) : (1@tid, 1)]", 1, 33, "unknown axis 'tid'"),
    ("local a: f16[4] @ S[(4, 8) : (1@tlane, 1)]", 1, 33, "unknown axis 'tlane'"),
    ("local a: f16[4] @ S[(4, 8) : (1@tid_in_wg)]", 1, 30, "2 extents but 1 stride"),
    ("local a: f16[4] @ S[(4,) : (1, 2, 3)]", 1, 28, "1 extent but 3 strides"),
    ("wg.copy a -> A", 1, 11, "the copy arrow is '<-'"),
    ("block.copy a <- A", 1, 1, "unknown exec scope 'block'"),
    ("wg.cpy a <- A", 1, 4, "unknown operation 'cpy'"),
    ("copy a <- A", 1, 1, "missing exec scope"),
    ("wg copy a <- A", 1, 3, "expected '.copy'"),
    ("local a: f16[4] @ frag(32x32)", 1, 24, "unknown tcgen05 fragment shape '32x32'"),
    ("local a: f16[4] @ frag(64x32b)", 1, 24, "expected one of 32x32b, 16x64b, 16x128b, 16x256b"),
    ("tmem t: f32[64, 32] @ datapath(F, sub_slab=2)", 1, 44, "sub_slab must be 0 or 1"),
    ("tmem t: f32[64, 32] @ datapath(F, slab=1)", 1, 35, "expected 'sub_slab='"),
    ("tmem t: f32[64, 32] @ datapath(F, sub_slab)", 1, 43, "expected '='"),
    ("tmem t: f32[64, 32] @ datapath(D, sub_slab=0)", 1, 35, "sub_slab only applies to datapath(F)"),
    ("tmem t: f32[64, 32] @ datapath(A)", 1, 32, "unknown datapath layout 'A'"),
    ("global A: f32[128, 8", 1, 21, "unexpected end of line; expected ']' or ','"),
    ("local a: f16[4] @ S[(4, 8) : (1, 1)", 1, 36, "expected ']'"),
    ("wg.copy a[0:2 <- A", 1, 15, "unexpected '<-'; expected ']' or ','"),
    ("shared s: f32[4] = zeros", 1, 18, "`= INIT` is only allowed on global buffers"),
    ("tmem t: f32[4] = arange", 1, 16, "only allowed on global"),
    ("global A: f32[4] @ S[4]", 1, 18, "global memory is row-major"),
    ("shared s: f32[4] at T", 1, 18, "`at OTHER` aliases tensor memory"),
    ("global A: f32[0, 4]", 1, 15, "a dimension must be positive, got 0"),
    ("global A: f32[4, -2]", 1, 18, "must be positive, got -2"),
    ("wg.copy a[-1:] <- A", 1, 11, "a slice start must be >= 0"),
    ("shared s: f32[4] @ S[(4) : (-1)]", 1, 29, "a stride must be >= 0"),
    ("shared s: f32[4] @ S[0]", 1, 22, "an extent must be positive"),
    ("kernel k threads=0", 1, 18, "threads must be positive"),
    ("tmem t: f32[4] at T + -32", 1, 23, "a column offset must be >= 0"),
    ("GLOBAL A: f32[4]", 1, 1, "unknown statement 'GLOBAL'"),
    ("foo bar", 1, 1, "unknown statement 'foo'"),
    ("  = x", 1, 3, "expected a statement"),
    ("wg.copy <- A", 1, 9, "unexpected '<-'; expected a buffer name"),
    ("wg.copy a <- A foo", 1, 16, "unknown option 'foo'"),
    ("wg.copy a = A", 1, 11, "expected '<-' or '['"),
    ("wait", 1, 5, "expected 'ld', 'st' or an mbarrier name"),
    ("wait foo", 1, 9, "unexpected end of line; expected 'phase'"),
    ("cta_sync now", 1, 10, "expected end of line"),
    ("check A = B", 1, 9, "expected '==' or '['"),
    ("global A f32[4]", 1, 10, "expected ':'"),
    ("global A: [4]", 1, 11, "expected a dtype"),
    ("global A: f32", 1, 14, "expected '['"),
    ("global A: f32[]", 1, 15, "expected an integer"),
    ("kernel", 1, 7, "expected a kernel name"),
    ("kernel k threads=", 1, 18, "expected an integer"),
    ("local a: f16[4] @ tiles[4]", 1, 19, "expected `S[...]`, `datapath(...)`, `frag(...)` or `swizzle(...)`"),
    ("wg.copy a <- A dispatch=", 1, 25, "expected a variant name or a quoted string"),
    ("wg.copy a <- A dispatch=''", 1, 25, "dispatch variant is empty"),
    ("global A: f32[4] = 3", 1, 20, "expected an initializer"),
    ("global A: f32[4] é", 1, 18, "unexpected character 'é'"),
    ("global A: f32[4]\x00", 1, 17, "unexpected character '\\x00'"),
    ("global A: f32[4]\nglobal B: f32[4]\n   local b: f32[4]", 3, 10, "needs a register layout"),
    ("global A: f32[" + "9" * 1200 + "]", 1, 15, "too many digits"),
]


@pytest.mark.parametrize("source, line, col, fragment", BAD_CELLS,
                         ids=[re.sub(r"\W+", "_", c[0])[:40] for c in BAD_CELLS])
def test_bad_cells(source, line, col, fragment):
    err = syntax_error(source)
    assert isinstance(err, TileMagicError)
    assert (err.line, err.col) == (line, col), err.render()
    assert fragment in err.message, err.render()
    assert err.source == source
    text = err.render()
    assert text.startswith(f"tilecopy:{line}:{col}: TileSyntaxError: ")
    lines = text.splitlines()
    caret = next(ln for ln in lines[2:] if set(ln.split("|", 1)[-1].strip()) == {"^"})
    assert caret.split("|", 1)[1].index("^") == col  # "| " + (col - 1) spaces
    # no lark internals in the message
    assert "__ANON" not in text and "NAME" not in err.message and "$END" not in text


@pytest.mark.parametrize("source, hint_fragment", [
    ("copy a <- A", "write the exec scope first: `wg.copy DST <- SRC` (thread, warp, wg, cta)"),
    ("copy_async a <- A", "write the exec scope first"),
    ("wg.copy a -> A", "destination comes first and the arrow is `<-`"),
    ("GLOBAL A: f32[4]", "keywords are lowercase"),
    ("Wait ld", "keywords are lowercase"),
    ("WG.copy a <- A", "keywords are lowercase"),
    ("foo bar", "kernel NAME"),
    ("global A: flot16[4]", "bf16"),
    ("local a: f16[4] @ S[(4, 8) : (1@tid, 1)]", "tid_in_wg"),
    ("local a: f16[4] @ S[(4, 8) : (1@tcol, 1)]", "case-sensitive: `TCol`"),
    ("global A: f32[4", "close the bracket with ']'"),
    ("check A = B", "compare with '=='"),
    ("tmem t: f32[64, 32] @ datapath(f)", "uppercase"),
])
def test_error_hints(source, hint_fragment):
    err = syntax_error(source)
    assert err.hint and hint_fragment in err.hint


def test_error_messages_name_accepted_values():
    err = syntax_error("global A: half[4]")
    for d in ("float32", "float16", "bfloat16", "uint8", "int8", "int32"):
        assert d in err.message
    err = syntax_error("local a: f16[4] @ S[(4) : (1@lane)]")
    for ax in ("m", "tid_in_wg", "laneid", "wid_in_wg", "warpid", "tx", "TLane", "TCol"):
        assert ax in err.message
    err = syntax_error("tmem t: f32[64, 32] @ datapath(C)")
    assert "D, F or B" in err.message


def test_error_span_covers_token():
    err = syntax_error("global A: flot16[4]")
    assert err.span == Span(1, 11, 1, 17)
    assert "^^^^^^" in err.render()


def test_unicode_and_long_lines():
    err = syntax_error("global Ä: f32[4]")
    assert (err.line, err.col) == (1, 8)
    long_name = "x" * 20000
    prog = parse(f"global {long_name}: f32[4]")
    assert prog.buffers[0].name == long_name
    err = syntax_error(f"{long_name} a")
    assert len(err.message) < 200


# ----------------------------------------------------------------------------- robustness (hypothesis)
_TOKEN_RE = re.compile(r"[A-Za-z0-9_]+|\s+|<-|->|==|.", re.S)
_NOISE = st.sampled_from(list("[](){}:,@+=<->#.%\"'\t\r\n\x00é0123456789xSFm_") + ["<-", "->", "==", "\u2028", "\r\n"])


def _check_parse(src: str, offset: int = 0) -> None:
    try:
        prog = parse(src, line_offset=offset)
    except TileSyntaxError as err:
        assert err.line is not None and err.line >= 1 + offset
        assert err.col is not None and err.col >= 1
        assert "internal parser error" not in err.message
        err.render()
    else:
        assert isinstance(prog, Program)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text())
def test_fuzz_arbitrary_text(src):
    _check_parse(src)


@st.composite
def mutated_seed(draw):
    toks = _TOKEN_RE.findall(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, max(0, len(toks) - 1)))
        op = draw(st.sampled_from(["delete", "duplicate", "insert", "replace"]))
        if op == "delete" and toks:
            del toks[i]
        elif op == "duplicate" and toks:
            toks.insert(i, toks[i])
        elif op == "insert":
            toks.insert(i, "".join(draw(st.lists(_NOISE, min_size=1, max_size=3))))
        elif toks:
            toks[i] = draw(_NOISE)
    return "".join(toks)


@settings(max_examples=180, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_seed(), st.sampled_from([0, 1]))
def test_fuzz_mutated_seeds(src, offset):
    _check_parse(src, offset)


# ----------------------------------------------------------------------------- docs
def test_docs_examples_parse():
    """Every ```tilecopy block of docs/language.md is a valid cell."""
    from pathlib import Path

    doc = Path(__file__).resolve().parents[3] / "docs" / "language.md"
    blocks = re.findall(r"^```tilecopy\n(.*?)^```", doc.read_text(encoding="utf-8"), re.S | re.M)
    assert len(blocks) >= 10
    for block in blocks:
        prog = parse(block)
        assert prog.items, block
