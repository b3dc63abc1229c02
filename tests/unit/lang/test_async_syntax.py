"""The language of asynchronous copies: mbarriers, arrive/wait, commit groups, fences, guards and the
copy_async options (docs/language.md) — every statement's AST and every misuse's located error."""

from __future__ import annotations

import pytest

from tilemagic.errors import TileMagicError
from tilemagic.lang import ast as A
from tilemagic.lang import parse
from helpers import located_parse_error


def one(line: str):
    (node,) = parse(line).items
    return node


def test_mbarrier_declaration_defaults_to_count_1_and_is_kept_apart_from_buffers():
    prog = parse("mbarrier full\nmbarrier empty count=128\nshared S: float32[4]")
    assert [(m.name, m.count) for m in prog.mbarriers] == [("full", 1), ("empty", 128)]
    assert [b.name for b in prog.buffers] == ["S"]
    assert prog.mbarriers[1].count_span is not None and prog.mbarriers[1].count_span.col == 16


@pytest.mark.parametrize("line,expect", [
    ("arrive full", A.ArriveStmt("full", None, False, None, None)),  # spans compared separately
    ("arrive full expect_tx=8192", A.ArriveStmt("full", 8192, False, None, None)),
    ("arrive full expect_tx=0", A.ArriveStmt("full", 0, False, None, None)),
    ("arrive  bar2   expect_tx = auto", A.ArriveStmt("bar2", None, True, None, None)),
])
def test_arrive(line, expect):
    node = one(line)
    assert isinstance(node, A.ArriveStmt)
    assert (node.bar, node.expect_tx, node.auto) == (expect.bar, expect.expect_tx, expect.auto)


def test_wait_on_an_mbarrier_beside_wait_ld_st():
    w = one("wait full phase 1")
    assert isinstance(w, A.MbarWaitStmt) and (w.bar, w.phase) == ("full", 1)
    assert (w.bar_span.col, w.phase_span.col) == (6, 17)
    assert isinstance(one("wait ld"), A.WaitStmt) and one("wait st").kind == "st"
    # a barrier whose name starts like ld is a barrier
    assert one("wait ldbar phase 0").bar == "ldbar"


@pytest.mark.parametrize("line,kind,bulk,n,read", [
    ("commit_group", "commit", False, 0, False),
    ("wait_group 0", "wait", False, 0, False),
    ("wait_group 3", "wait", False, 3, False),
    ("bulk_commit_group", "commit", True, 0, False),
    ("bulk_wait_group 1", "wait", True, 1, False),
    ("bulk_wait_group 0 read", "wait", True, 0, True),
])
def test_groups(line, kind, bulk, n, read):
    g = one(line)
    assert isinstance(g, A.GroupStmt) and (g.kind, g.bulk, g.n, g.read) == (kind, bulk, n, read)


@pytest.mark.parametrize("line", ["fence.proxy.async", "fence . proxy . async  # before the TMA store"])
def test_fence(line):
    f = one(line)
    assert isinstance(f, A.FenceStmt) and f.kind == "proxy_async"


def test_copy_async_options_in_any_order():
    a = one("thread.copy_async S <- A[0:8, :] cache_hint=evict_last dispatch=tma_explicit oob=nan mbar=full")
    b = one("thread.copy_async S <- A[0:8, :] mbar=full oob=nan dispatch=tma_explicit cache_hint=evict_last")
    for c in (a, b):
        assert isinstance(c, A.CopyStmt)
        assert {o.key: o.value for o in c.options} == {"mbar": "full", "oob": "nan", "cache_hint": "evict_last",
                                                         "dispatch": "tma_explicit"}
        assert c.dispatch == "tma_explicit"
        assert c.option("mbar").value_span.end_col - c.option("mbar").value_span.col == 4
    assert [o.key for o in a.options] == ["cache_hint", "dispatch", "oob", "mbar"]


def test_guards_wrap_the_statement_and_keep_its_columns():
    c = one("if tx == 0: thread.copy_async S <- A mbar=full dispatch=tma_auto")
    assert isinstance(c, A.CopyStmt) and c.guard is not None
    assert [(t.axis, t.op, t.value) for t in c.guard.terms] == [("tx", "==", 0)]
    assert c.op_span.col == 13 and c.guard.span.col == 1
    g = one("if warpid >= 1 and laneid < 4 and wgid != 1: arrive full")
    assert [(t.axis, t.op, t.value) for t in g.guard.terms] == [("warpid", ">=", 1), ("laneid", "<", 4),
                                                                ("wgid", "!=", 1)]
    assert str(g.guard) == "warpid >= 1 and laneid < 4 and wgid != 1"
    for line in ("if tid_in_wg <= 3: wait full phase 0", "if wid_in_wg > 0: commit_group",
                 "if tx==0:bulk_wait_group 0 read", "if laneid == 0: fence.proxy.async", "if warpid == 0: wait ld",
                 "if warpid == 1: warp.copy a <- A"):
        assert one(line).guard is not None, line


# ----------------------------------------------------------------------------- every error, located
BAD = [
    # mbarrier
    ("mbarrier ld", 1, 10, "an mbarrier cannot be named 'ld'"),
    ("mbarrier st count=2", 1, 10, "an mbarrier cannot be named 'st'"),
    ("mbarrier full count=0", 1, 21, "an mbarrier count must be positive"),
    ("mbarrier full count=-3", 1, 21, "an mbarrier count must be positive"),
    ("mbarrier full count=1048576", 1, 21, "at most 1048575"),
    ("mbarrier full count", 1, 20, "expected '='"),
    ("mbarrier", 1, 9, "expected an mbarrier name"),
    ("mbarrier full: uint64[1]", 1, 14, "unexpected ':'"),
    # arrive
    ("arrive", 1, 7, "expected an mbarrier name"),
    ("arrive full expect_tx=-1", 1, 23, "expect_tx must be >= 0"),
    ("arrive full expect_tx=8.5", 1, 23, "expect_tx is a whole number of bytes"),
    ("arrive full expect_tx=1048576", 1, 23, "expect_tx must be at most 1048575"),
    ("arrive full expect_tx=many", 1, 23, "unexpected 'many'"),
    ("arrive full count=2", 1, 13, "unexpected 'count'"),
    # wait BAR phase P
    ("wait full phase 2", 1, 17, "the phase parity is 0 or 1"),
    ("wait full phase -1", 1, 17, "a phase parity must be >= 0"),
    ("wait full 0", 1, 11, "expected 'phase'"),
    ("wait full phase", 1, 16, "expected an integer"),
    # groups
    ("wait_group", 1, 11, "expected an integer"),
    ("wait_group -1", 1, 12, "the number of pending groups must be >= 0"),
    ("commit_group 0", 1, 14, "unexpected '0'; expected end of line"),
    ("bulk_wait_group 0 write", 1, 19, "unexpected 'write'"),
    ("wait_group 0 read", 1, 14, "unexpected 'read'"),
    # fences
    ("fence.proxy.alias", 1, 1, "unknown fence 'fence.proxy.alias'"),
    ("fence", 1, 1, "unknown fence 'fence'"),
    ("fence.proxy.async.shared", 1, 18, "unexpected"),
    # copy options
    ("thread.copy_async S <- A mbr=full", 1, 26, "unknown option 'mbr'"),
    ("thread.copy_async S <- A mbar=full mbar=other", 1, 36, "option `mbar` is given twice"),
    ("thread.copy_async S <- A dispatch=a dispatch=b", 1, 37, "option `dispatch` is given twice"),
    ("wg.copy S <- A mbar=full", 1, 16, "`mbar=` is an option of `copy_async`"),
    ("wg.copy S <- A oob=zero", 1, 16, "`oob=` is an option of `copy_async`"),
    ("wg.copy S <- A cache_hint=evict_first", 1, 16, "`cache_hint=` is an option of `copy_async`"),
    ("thread.copy_async S <- A oob=one", 1, 30, "unknown oob value 'one'; expected zero or nan"),
    ("thread.copy_async S <- A cache_hint=evict_firts", 1, 37, "unknown cache_hint value 'evict_firts'"),
    ("thread.copy_async S <- A mbar", 1, 26, "option `mbar` needs a value"),
    ("thread.copy_async S <- A mbar=a-b", 1, 31, "not a name"),
    ("thread.copy_async S <- A mbar=", 1, 31, "unexpected end of line"),
    # guards
    ("if tx == 0: cta_sync", 1, 1, "a guarded `cta_sync` deadlocks"),
    ("if tx == 0: shared S: float32[4]", 1, 1, "a declaration cannot be guarded"),
    ("if tx == 0: mbarrier full", 1, 1, "a declaration cannot be guarded"),
    ("if tx == 0: kernel k threads=32", 1, 1, "a declaration cannot be guarded"),
    ("if tx == 0: check B == A", 1, 1, "`check` cannot be guarded"),
    ("if tid == 0: arrive full", 1, 4, "unknown thread axis 'tid'"),
    ("if TX == 0: arrive full", 1, 4, "unknown thread axis 'TX'"),
    ("if tx = 0: arrive full", 1, 7, "expected a comparison"),
    ("if tx =< 0: arrive full", 1, 7, "expected a comparison"),
    ("if tx == x: arrive full", 1, 10, "expected an integer after `tx ==`"),
    ("if tx == -1: arrive full", 1, 10, "a guard compares with a non-negative integer"),
    ("if tx == 0 arrive full", 1, 12, "expected `and` or ':'"),
    ("if tx == 0 or tx == 1: arrive full", 1, 12, "guards join conditions with `and` only"),
    ("if tx == 0:", 1, 12, "expected a statement after the guard"),
    ("if tx == 0:  # nothing", 1, 12, "expected a statement after the guard"),
    ("if tx == 0: if laneid == 0: arrive full", 1, 13, "guards do not nest"),
    ("if : arrive full", 1, 4, "expected a thread axis"),
    ("if tx == 0: arrive full expect_tx=-2", 1, 35, "expect_tx must be >= 0"),
    ("if tx == 0: thread.copy_async S <- A mbar=full mbar=x", 1, 48, "given twice"),
]


@pytest.mark.parametrize("src,line,col,fragment", BAD, ids=[b[0] for b in BAD])
def test_misuse_is_a_located_error_with_a_hint(src, line, col, fragment):
    located_parse_error(src, line, col, fragment)


def test_unknown_option_suggests_the_closest_legal_one():
    with pytest.raises(TileMagicError) as ei:
        parse("thread.copy_async S <- A cache_hnt=evict_first")
    assert "did you mean `cache_hint=`" in ei.value.hint
    with pytest.raises(TileMagicError) as ei:  # a sync copy is not offered copy_async's options
        parse("wg.copy S <- A dispach=reg")
    assert "did you mean `dispatch=`" in ei.value.hint
    with pytest.raises(TileMagicError) as ei:
        parse("wg.copy S <- A mbr=full")
    assert "mbar" not in ei.value.hint.split(";")[0]


def test_errors_inside_a_guard_show_the_original_line():
    with pytest.raises(TileMagicError) as ei:
        parse("kernel k threads=128\nif tx == 0: arrive full expect_tx=1.5")
    text = ei.value.render()
    assert "if tx == 0: arrive full expect_tx=1.5" in text and ei.value.line == 2 and ei.value.col == 35


# ----------------------------------------------------------------------------- the Pygments lexer
@pytest.mark.parametrize("cell,word,kind", [
    ("mbarrier full count=2\n", "mbarrier", "Keyword.Declaration"),
    ("mbarrier full count=2\n", "count", "Keyword"),
    ("mbarrier full count=2\n", "full", "Name.Variable"),
    ("arrive full expect_tx=auto\n", "arrive", "Keyword"),
    ("arrive full expect_tx=auto\n", "expect_tx", "Keyword"),
    ("arrive full expect_tx=auto\n", "auto", "Keyword"),
    ("wait full phase 1\n", "phase", "Keyword"),
    ("wait full phase 1\n", "1", "Literal.Number.Integer"),
    ("bulk_wait_group 0 read\n", "bulk_wait_group", "Keyword"),
    ("bulk_wait_group 0 read\n", "read", "Keyword"),
    ("commit_group\n", "commit_group", "Keyword"),
    ("fence.proxy.async\n", "async", "Keyword"),
    ("if warpid == 1 and laneid < 4: arrive full\n", "if", "Keyword"),
    ("if warpid == 1 and laneid < 4: arrive full\n", "and", "Keyword"),
    ("if warpid == 1 and laneid < 4: arrive full\n", "laneid", "Name.Builtin"),
    ("if warpid == 1 and laneid < 4: arrive full\n", "<", "Operator"),
    ("if tx == 0: thread.copy_async S <- A mbar=full oob=nan\n", "mbar", "Keyword"),
    ("if tx == 0: thread.copy_async S <- A mbar=full oob=nan\n", "nan", "Name.Constant"),
    ("thread.copy_async S <- A cache_hint=evict_first\n", "evict_first", "Name.Constant"),
])
def test_the_lexer_colours_the_new_words(cell, word, kind):
    from pygments.token import Error, Text, string_to_tokentype

    from tilemagic.lang.highlight import TileCopyLexer

    toks = [(t, v) for t, v in TileCopyLexer().get_tokens(cell) if v.strip()]
    assert (string_to_tokentype(kind), word) in toks, toks
    assert not [v for t, v in toks if t in Error or t is Text], toks


def test_slips_get_a_specific_hint():
    for src, hint in (("wait_group 0 read", "bulk_wait_group N read"), ("mbarrier full: uint64[1]", "has no dtype")):
        with pytest.raises(TileMagicError) as ei:
            parse(src)
        assert hint in ei.value.hint, ei.value.render()
