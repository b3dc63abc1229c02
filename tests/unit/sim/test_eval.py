"""One IR traversal (ir.iter_exprs) and one evaluator (eval_static, under Simulator.eval_expr)."""

from __future__ import annotations

import numpy as np
import pytest

from tilemagic.errors import LaunchError, Span
from tilemagic.ir import nodes as ir
from tilemagic.ir.evaluate import Undetermined, eval_static
from tilemagic.sim.interpreter import Simulator

TX = ir.ThreadVar("tx")


def _kernel(body, nthreads=32):
    out = ir.Buffer("O", "global", "int32", (nthreads,), None, per_thread=nthreads)
    return ir.Kernel("k", nthreads, (out,), (), (), (), 0, None, ir.Seq(tuple(body(out)))), out


def test_iter_exprs_reaches_every_statement_kind_and_nested_expression():
    a = ir.Buffer("a", "local", "int32", (4,), None, per_thread=4)
    s = ir.Buffer("s", "shared", "uint16", (64,), None, per_thread=64)
    lane, i = ir.ThreadVar("laneid"), ir.LoopVar("i")
    load = ir.Load(a, (ir.Bin("%", lane, ir.Const(4)),))
    body = ir.Seq((
        ir.If(ir.Bin("<", ir.ThreadVar("warpid"), ir.Const(1)),
              ir.Grid((i,), (2,), ir.Store(a, (i,), load))),
        ir.VecMove(a, ir.Const(0), s, ir.ThreadVar("tid_in_wg"), 2),
        ir.LdStMatrix("ld", 1, False, a, (ir.ThreadVar("wgid"),), s, ir.ThreadVar("wid_in_wg")),
        ir.Barrier(),
    ))
    kinds = {e.kind for e in ir.iter_exprs(body) if isinstance(e, ir.ThreadVar)}
    assert kinds == {"laneid", "warpid", "tid_in_wg", "wgid", "wid_in_wg"}
    assert [ld.buf.name for ld in ir.loads(body)] == ["a"]
    assert list(ir.iter_exprs(load))[:2] == [load, load.indices[0]]  # pre-order, an expression as root


def test_walk_scoped_gives_each_statement_its_enclosing_guards_and_loops():
    a = ir.Buffer("a", "local", "int32", (4,), None, per_thread=4)
    i = ir.LoopVar("i")
    store = ir.Store(a, (i,), ir.Const(1))
    grid = ir.Grid((i,), (2,), store)
    guard = ir.If(ir.Bin("<", TX, ir.Const(8)), grid)
    barrier = ir.Barrier()
    body = ir.Seq((guard, barrier))
    scoped = list(ir.walk_scoped(body))
    assert [s for s, _ in scoped] == [body, guard, grid, store, barrier] == list(ir.walk(body))
    assert dict((id(s), sc) for s, sc in scoped)[id(store)] == (guard, grid)  # outermost first
    assert dict((id(s), sc) for s, sc in scoped)[id(barrier)] == ()


def test_loop_variables_are_keyed_by_object_in_both_evaluators():
    i, j = ir.LoopVar("i"), ir.LoopVar("i")  # same name, different loops
    e = ir.Bin("+", ir.Bin("*", i, ir.Const(10)), j)
    tid = np.arange(4)
    assert eval_static(e, tid, {i: 2, j: 3}) == 23
    k, _ = _kernel(lambda out: ())
    assert Simulator(k, {"O": np.zeros(32, np.int32)}).eval_expr(e, {i: 2, j: 3}) == 23
    with pytest.raises(Undetermined, match="free loop variable"):
        eval_static(e, tid, {i: 2})


def test_simulated_division_by_zero_is_a_located_error():
    span = Span(3, 1, 3, 9)
    k, _ = _kernel(lambda out: [ir.Store(out, (TX,), ir.Bin("//", TX, ir.Bin("-", TX, TX)), span=span)])
    with pytest.raises(LaunchError, match="division by zero") as ei:
        Simulator(k, {"O": np.zeros(32, np.int32)}).run()
    assert ei.value.span == span


def test_simulator_loads_through_the_static_evaluator():
    k, out = _kernel(lambda out: [ir.Store(out, (TX,), ir.Bin("*", ir.Load(out, (ir.Bin("^", TX, ir.Const(1)),)),
                                                                 ir.Const(2)))])
    got = Simulator(k, {"O": np.arange(32, dtype=np.int32)}).run()["O"].view(np.int32)
    assert np.array_equal(got, (np.arange(32) ^ 1) * 2)


def test_stmt_buffers_reads_and_writes_of_every_statement_kind():
    """The one answer the simulator, the tracker and the static hazard pass share (``ir.stmt_buffers``)."""
    import tilemagic

    src = """kernel rt threads=128
global A: float16[128, 64]
global B: float16[128, 64]
shared S: float16[128, 64]
tmem T: float16[128, 64]
local a: float16[128, 64] @ frag(16x128b)
local t: float16[128, 64] @ S[(128, 64) : (1@tid_in_wg, 1)]
wg.copy S <- A
cta_sync
wg.copy a <- S
wg.copy S <- a
cta_sync
wg.copy t <- A
wg.copy_async T <- t
wait st
wg.copy_async t <- T
wait ld
wg.copy B <- t"""
    k = tilemagic.tilecopy(src, launch="off", emit_warnings=False).kernel
    seen = {}
    for s in ir.walk(k.body):
        r, w = ir.stmt_buffers(s)
        kind = type(s).__name__ + (f".{s.op}" if hasattr(s, "op") else "")
        seen.setdefault(kind, set()).add((tuple(sorted(b.name for b in r)), tuple(sorted(b.name for b in w))))
    assert any("A" in r and w == ("S",) for r, w in seen["VecMove"] | seen.get("Store", set()))
    assert all(w == ("a",) and "S" in r for r, w in seen["LdStMatrix.ld"])
    assert all(w == ("S",) and "a" in r for r, w in seen["LdStMatrix.st"])
    assert all(w == () and "t" in r for r, w in seen["TcgenLdSt.st"])  # the registers a tcgen05.st reads
    assert all(w == ("t",) for r, w in seen["TcgenLdSt.ld"])  # ... and a tcgen05.ld writes
    assert all(w == (k.tmem_addr.name,) for _, w in seen["TcgenAlloc"])


# ----------------------------------------------------------------------------- hash-consed expressions
def test_equal_expressions_are_one_node_and_loop_variables_stay_apart():
    a = ir.Buffer("a", "local", "int32", (4,), None, per_thread=4)
    e1 = ir.add(ir.mul(TX, 8), ir.Load(a, (ir.Const(1),)))
    e2 = ir.add(ir.mul(ir.ThreadVar("tx"), 8), ir.Load(a, (ir.Const(1),)))
    assert e1 is e2 and ir.Const(3) is ir.Const(3) and ir.Const(3) is not ir.Const(4)
    assert ir.Const(True) is not ir.Const(1)  # (one value, two types: two nodes, printed apart)
    i, j = ir.LoopVar("i"), ir.LoopVar("i")
    assert i is not j and ir.add(i, 1) is not ir.add(j, 1)  # (each loop variable is its own variable)
    b = ir.Buffer("a", "local", "int32", (4,), None, per_thread=4)  # (another buffer of the same name)
    assert ir.Load(b, (ir.Const(1),)) is not ir.Load(a, (ir.Const(1),))


def test_hash_consed_nodes_pickle_and_die_with_their_last_reference():
    import gc
    import pickle
    import weakref

    e = ir.xor(ir.add(TX, ir.Const(12345)), ir.Const(7))
    assert pickle.loads(pickle.dumps(e)) is e  # (rebuilt through the constructor: the live node)
    probe = weakref.ref(e)
    del e
    gc.collect()
    assert probe() is None  # (the table keeps nothing alive)
    fresh = ir.xor(ir.add(TX, ir.Const(12345)), ir.Const(7))
    assert pickle.loads(pickle.dumps(fresh)).a.b.value == 12345


def test_one_loop_variable_per_name_per_kernel():
    from helpers import run

    res = run("kernel k threads=128\nglobal A: float32[128, 64]\nglobal B: float32[128, 64] = zeros\n"
              "shared S: float32[128, 64]\nwg.copy S <- A\ncta_sync\nwg.copy B <- S\ncheck B == A", launch="off")
    grids = [s for s in ir.walk(res.kernel.body) if isinstance(s, ir.Grid)]
    assert len(grids) == 2 and grids[0].vars[0] is grids[1].vars[0]


def test_the_simulator_pauses_the_cyclic_collector_only_during_a_run():
    import gc

    out = ir.Buffer("O", "global", "int32", (32,), None, per_thread=32)
    bad = ir.Kernel("k", 32, (out,), (), (), (), 0, None,
                    ir.Store(out, (TX,), ir.Bin("//", TX, ir.Const(0))))
    assert gc.isenabled()
    with pytest.raises(LaunchError):
        Simulator(bad, {"O": np.zeros(32, np.int32)}).run()
    assert gc.isenabled()
    gc.disable()
    try:
        with pytest.raises(LaunchError):
            Simulator(bad, {"O": np.zeros(32, np.int32)}).run()
        assert not gc.isenabled()  # (a caller's own choice is left as it was)
    finally:
        gc.enable()
