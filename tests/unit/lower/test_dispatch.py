"""The dispatcher itself: ordering, predicate answers, forced variants, declines, the why-table.

Mirrors TVM TIRx's test_dispatcher.py: dummy ops against a private op name so the
real variants are untouched.
"""

from dataclasses import dataclass

import pytest

from tilemagic.errors import DispatchError, Span
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
    return D.DispatchContext({"kind": "cuda", "arch": "sm_100a"}, 128, "warpgroup", builder=None)


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
        lambda o, c: (["zeta-body"], "zeta emitted"))
    D.register_dispatch(OP, "cuda", variant="alpha", priority=10, when=[
        D.predicate("tuple_no", lambda o, c: (False, "tuple says no")),
        D.predicate("bool_no", lambda o, c: False),
        D.predicate("raises", _raise),
        D.predicate("buggy", _boom),
        D.predicate("kw", lambda o, c, need: (need == 4, f"need={need}"), need=3),
    ])(lambda o, c: (["alpha-body"], "alpha"))
    D.register_dispatch(OP, "cuda", variant="high", priority=20, when=[])(
        lambda o, c: D.fail("width 3 is odd"))
    D.register_dispatch(OP, "cuda", variant="low", priority=0, when=[])(lambda o, c: (["low-body"], "low"))


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
        "buggy: predicate exception: KeyError: 'tid'",
        "kw: need=3",
    )
    assert rows["zeta"].chosen and rows["low"].verdict == "not tried"
    table_text = rec.table()
    for frag in ("high", "declined", "emitter declined: width 3 is odd", "alpha", "rejected", "tuple says no",
                 "zeta", "chosen", "zeta emitted", "low", "not tried"):
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
        D.predicate("exec_scope", lambda o, c: (False, "unsupported exec_scope warpgroup"))])(lambda o, c: ([], ""))
    with pytest.raises(DispatchError) as e:
        D.run_dispatch(FakeOp(), ctx())
    err = e.value
    assert err.line == 3 and "only" in err.details and "unsupported exec_scope warpgroup" in err.details
    assert "why-table" in err.render()


def test_reregistering_replaces(table):
    D.register_dispatch(OP, "cuda", variant="v", priority=1)(lambda o, c: (["a"], ""))
    D.register_dispatch(OP, "cuda", variant="v", priority=1)(lambda o, c: (["b"], ""))
    assert D.registered_variants(OP) == [("v", 1)]
    assert D.run_dispatch(FakeOp(), ctx())[0] == ["b"]


def test_real_registry_names_follow_tvm():
    # priority first, then the name: ldstmatrix is tried before reg (TVM's tie-break)
    assert D.registered_variants("copy") == [("gmem_smem", 10), ("ldstmatrix", 10), ("reg", 10), ("fallback", 0)]
    assert D.registered_variants("copy_async") == [("tmem<->local", 10)]
