"""The dispatcher itself: ordering, predicate answers, forced variants, declines, the why-table.

Mirrors TVM TIRx's test_dispatcher.py: dummy ops against a private op name so the
real variants are untouched.
"""

from dataclasses import dataclass

import pytest

from tilemagic.errors import DispatchError, InternalError, Span, TileMagicError
from tilemagic.lower import dispatch as D

OP = "test_op_for_dispatch"


@dataclass
class FakeOp:
    op: str = OP
    text: str = "wg.test_op X <- Y"
    span: Span = Span(3, 1, 3, 10)
    dispatch: str = None
    dispatch_span: Span = None
    exec_scope: str = "warpgroup"


def ctx():
    return D.DispatchContext(D.TargetSpec("cuda", "sm_100a"), 128, "warpgroup", builder=None)


@pytest.fixture
def table():
    yield
    D._TABLE.pop((OP, "cuda"), None)


def _raise(*a, **k):
    raise D.DispatchFail("needs a frobnicated buffer")


def _boom(*a, **k):
    raise KeyError("tid")


def register_all():
    D.register_dispatch(OP, "cuda", variant="zeta", priority=10, when=[D.predicate("always", lambda o, c: True)])(
        lambda o, c: (["zeta-body"], D.EmitSummary("zeta emitted")))
    D.register_dispatch(OP, "cuda", variant="alpha", priority=10, when=[
        D.predicate("tuple_no", lambda o, c: (False, "tuple says no")),
        D.predicate("bool_no", lambda o, c: False),
        D.predicate("raises", _raise),
        D.predicate("kw", lambda o, c, need: (need == 4, f"need={need}"), need=3),
    ])(lambda o, c: (["alpha-body"], D.EmitSummary("alpha")))
    D.register_dispatch(OP, "cuda", variant="high", priority=20, when=[])(
        lambda o, c: D.fail("width 3 is odd"))
    D.register_dispatch(OP, "cuda", variant="low", priority=0, when=[])(lambda o, c: (["low-body"], D.EmitSummary("low")))


def test_order_and_every_reason_recorded(table):
    register_all()
    assert [v for v, _ in D.registered_variants(OP)] == ["high", "alpha", "zeta", "low"]
    stmts, rec = D.run_dispatch(FakeOp(), ctx())
    assert stmts == ["zeta-body"] and rec.chosen == "zeta"
    rows = {c.variant: c for c in rec.candidates}
    assert rows["high"].accepted and rows["high"].declined == "width 3 is odd"
    a = rows["alpha"]
    assert not a.accepted
    # every predicate evaluated (no short-circuit), each with its answer form
    assert a.reasons == (
        "tuple_no: tuple says no",
        "bool_no: failed",
        "raises: needs a frobnicated buffer",
        "kw: need=3",
    )
    assert rows["zeta"].chosen and rows["low"].verdict == "not tried"
    table_text = rec.table()
    for frag in ("high", "declined", "emitter declined: width 3 is odd", "alpha", "rejected", "tuple says no",
                 "zeta", "chosen", "per thread: 1 × zeta emitted", "low", "not tried"):
        assert frag in table_text


def test_forced_variant_still_runs_predicates(table):
    register_all()
    with pytest.raises(DispatchError) as e:
        D.run_dispatch(FakeOp(dispatch="alpha"), ctx())
    assert "tuple says no" in e.value.details and "zeta" not in e.value.details
    _, rec = D.run_dispatch(FakeOp(dispatch="low"), ctx())
    assert rec.chosen == "low" and rec.forced == "low"


def test_unknown_forced_variant_lists_registered(table):
    register_all()
    with pytest.raises(DispatchError, match="no variant named 'nope' is registered") as e:
        D.run_dispatch(FakeOp(dispatch="nope"), ctx())
    assert "alpha, high, low, zeta" in e.value.hint or all(v in e.value.hint for v in ("alpha", "high", "low", "zeta"))


def test_nothing_accepts_raises_with_table(table):
    D.register_dispatch(OP, "cuda", variant="only", priority=5, when=[
        D.predicate("exec_scope", lambda o, c: (False, "unsupported exec_scope warpgroup"))])(lambda o, c: ([], D.EmitSummary("")))
    with pytest.raises(DispatchError) as e:
        D.run_dispatch(FakeOp(), ctx())
    err = e.value
    assert err.line == 3 and "only" in err.details and "unsupported exec_scope warpgroup" in err.details
    assert "why-table" in err.render()


def test_reregistering_replaces(table):
    D.register_dispatch(OP, "cuda", variant="v", priority=1)(lambda o, c: (["a"], D.EmitSummary("a")))
    D.register_dispatch(OP, "cuda", variant="v", priority=1)(lambda o, c: (["b"], D.EmitSummary("b")))
    assert D.registered_variants(OP) == [("v", 1)]
    assert D.run_dispatch(FakeOp(), ctx())[0] == ["b"]


def test_real_registry_names_follow_tvm():
    # priority first, then the name: ldstmatrix is tried before reg (TVM's tie-break)
    assert D.registered_variants("copy") == [("gmem_smem", 10), ("ldstmatrix", 10), ("reg", 10), ("fallback", 0)]
    assert D.registered_variants("copy_async") == [("ldgsts", 20), ("dsmem", 10), ("smem->tmem", 10),
                                                   ("tma_auto", 10), ("tma_explicit", 10), ("tmem<->local", 10)]


def test_a_raising_predicate_is_an_internal_error_not_a_rejection(table):
    """A predicate bug is never hidden behind a lower-priority variant (the fallback): the row reads
    ``error`` with the predicate's name and the exception, and the dispatch raises InternalError."""
    D.register_dispatch(OP, "cuda", variant="buggy", priority=10, when=[
        D.predicate("fine", lambda o, c: True), D.predicate("boom", _boom), D.predicate("later", lambda o, c: False),
    ])(lambda o, c: (["buggy-body"], D.EmitSummary("buggy")))
    D.register_dispatch(OP, "cuda", variant="safety_net", priority=0)(lambda o, c: (["net"], D.EmitSummary("net")))
    with pytest.raises(InternalError) as e:
        D.run_dispatch(FakeOp(), ctx())
    err = e.value
    assert isinstance(err, TileMagicError) and not isinstance(err, DispatchError) and err.line == 3
    assert "internal error in predicate boom: KeyError: 'tid'" in err.message
    assert "test_op_for_dispatch/buggy" in err.message and "bug in tilemagic" in err.hint
    lines = err.details.splitlines()
    row = next(ln for ln in lines if ln.strip().startswith("buggy"))
    assert row.split()[:3] == ["buggy", "10", "error"] and "internal error in predicate boom" in row
    assert "later: failed" in err.details and "ok: fine" in err.details  # every predicate still evaluated
    assert any(ln.split()[:4] == ["safety_net", "0", "not", "tried"] for ln in lines)  # the fallback did not win
    assert "tilecopy:3:1: InternalError: internal error in predicate boom" in err.render()


def test_candidate_verdicts():
    C = D.Candidate
    assert C("v", 1, True, (), chosen=True).verdict == "chosen"
    assert C("v", 1, True, (), declined="no").verdict == "declined"
    assert C("v", 1, False, ("p: no",)).verdict == "rejected"
    assert C("v", 1, False, (), tried=False).verdict == "not tried"
    assert C("v", 1, False, ("internal error in predicate p: E: x",), error="internal error in predicate p: E: x"
             ).verdict == "error"


def test_emit_summary_wording():
    S = D.EmitSummary
    assert S("", moves="4 × 6", tid="laneid").text() == "scalar loop over 4 × 6 element(s) by laneid == 0"
    assert S("", moves="1").text() == "scalar loop over 1 element(s) by every thread"
    assert S("ld.global.v4.u32 + st.shared.v4.u32", 2, moves="8 float16 (16 B)", tid="laneid", split=(2, 32, 8),
             how="in a serial loop", notes=("swizzle chunk caps at 8 elements",)).text() == (
        "[outer=2, threads=32, vec=8]: each of 32 threads (laneid) moves 2 × 8 float16 (16 B) with "
        "ld.global.v4.u32 + st.shared.v4.u32 in a serial loop; swizzle chunk caps at 8 elements")
    assert S("ld.shared.u32", 1, moves="2 float16 (4 B)", split=(1, 1, 2)).text() == (
        "[outer=1, threads=1, vec=2]: the thread moves 1 × 2 float16 (4 B) with ld.shared.u32")
    assert S("st.global.v4.u32", 4, moves="8 float16 = 16 B each", how="in a serial loop; threads laneid < 16",
             notes=("swizzle chunk caps at 8 elements",)).text() == (
        "per thread: 4 × st.global.v4.u32 (8 float16 = 16 B each; swizzle chunk caps at 8 elements) "
        "in a serial loop; threads laneid < 16")
    assert S("tcgen05.ld.sync.aligned.16x64b.x2.b32", 2, "warp", at="rows 0 and 16, TMEM column 4",
             notes=("fragment row r at TMEM lane r",)).text() == (
        "tcgen05.ld.sync.aligned.16x64b.x2.b32 at rows 0 and 16, TMEM column 4 "
        "(2 instructions per warp, 4 warps; fragment row r at TMEM lane r)")
    rec = D.DispatchRecord("copy", "wg.copy a <- A", 1, "warpgroup", (), None)
    assert rec.summary == ""


def test_a_buggy_real_predicate_surfaces_as_one_located_message(monkeypatch):
    """Through tilecopy(): a raising predicate of a real variant (gmem_smem, whose fallback would
    otherwise take the op with a warning) is an InternalError with the cell's line and caret, shown by
    IPython's ``_render_traceback_`` hook as one message (the kernel stays alive), the why-table after it."""
    import dataclasses

    import tilemagic

    buggy = [dataclasses.replace(c, preds=(D.predicate("boom", _boom), *c.preds)) if c.variant == "gmem_smem" else c
             for c in D._TABLE[("copy", "cuda")]]
    monkeypatch.setitem(D._TABLE, ("copy", "cuda"), buggy)
    src = "kernel k threads=32\nglobal A: float32[4, 8]\nshared S: float32[4, 8]\nwarp.copy S <- A\n"
    with pytest.raises(InternalError) as e:
        tilemagic.tilecopy(src, launch="off")
    lines = e.value._render_traceback_()
    assert lines[0] == ("tilecopy:4:1: InternalError: internal error in predicate boom: KeyError: 'tid' "
                        "(variant copy/gmem_smem, op `warp.copy S <- A`)")
    assert lines[1] == "  4 | warp.copy S <- A" and lines[2].strip().startswith("| ^")
    assert any(ln.split()[:3] == ["gmem_smem", "10", "error"] for ln in lines)
    assert any(ln.split()[:2] == ["fallback", "0"] and "not tried" in ln for ln in lines)
