"""The simulator's cost is the work (issue 12 §3): it evaluates the active threads only, batches loop
iterations where the serial order cannot be told apart, never allocates elements x threads arrays,
stops at --timeout with a located error, shows progress after two seconds, and reports every access
to the happens-before tracker (sim.hb.Tracker) with batched arrays.  No test here is timed."""

from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pytest

import tilemagic
from tilemagic.errors import LaunchError
from tilemagic.sim import interpreter
from tilemagic.sim.hb import Prepared, Run
from tilemagic.sim.interpreter import Simulator


def _kernel(src):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tilecopy_off(src).kernel


def tilecopy_off(src):
    return tilemagic.tilecopy(src, launch="off")


def _inputs(k, seed=0):
    rng = np.random.default_rng(seed)
    return {b.name: rng.integers(0, 2**31, b.numel, dtype=np.int64).astype(np.uint32).view(np.float32)
            .reshape(b.shape) if b.elem_bytes == 4 else np.zeros(b.shape, np.float16) for b in k.params}


FALLBACK_WIDE = """kernel fbw threads=1024
global A: float32[48, 40]
global B: float32[48, 40] = zeros
cta.copy B <- A dispatch=fallback
check B == A"""


def _record_eval(monkeypatch):
    """Wrap the evaluator the simulator calls: (number of threads evaluated, lanes) per call."""
    calls: list[int] = []
    real = interpreter.eval_static

    def spy(e, tid, env=None, load=None):
        calls.append(int(np.size(tid)))
        return real(e, tid, env, load)

    monkeypatch.setattr(interpreter, "eval_static", spy)
    return calls


def test_fallback_evaluates_only_the_elected_thread(monkeypatch):
    k = _kernel(FALLBACK_WIDE)
    calls = _record_eval(monkeypatch)
    sim = Simulator(k, _inputs(k))
    out = sim.run()
    assert np.array_equal(out["A"], out["B"])
    # the `if tx == 0` condition is evaluated for the CTA; everything under it for thread 0 alone
    # (a contiguous copy loop evaluates no per-element index at all: its affine bases only)
    assert calls and sorted(calls)[:-1] == [1] * (len(calls) - 1) and calls.count(1024) <= 1, calls[:20]
    assert sim.lanes == 48 * 40  # one lane per element moved, not per element x thread


def test_no_elements_x_threads_temporaries():
    src = FALLBACK_WIDE.replace("48, 40", "256, 256")
    k = _kernel(src)
    inp = _inputs(k)
    tracemalloc.start()
    try:
        Simulator(k, inp).run()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 * 2**20, peak  # 64 Ki elements x 1,024 threads of int64 would be 512 MiB


SAME_BUFFER = """kernel sb threads=32
global A: float32[32, 24]
global B: float32[32, 24] = zeros
shared S: float32[64, 24]
warp.copy S[0:32, :] <- A
cta_sync
warp.copy S[32:64, :] <- S[0:32, :]
cta_sync
warp.copy B <- S[32:64, :]
check B == A"""


def test_copy_inside_one_buffer_is_batched(monkeypatch):
    k = _kernel(SAME_BUFFER)
    calls = _record_eval(monkeypatch)
    out = Simulator(k, _inputs(k)).run()
    assert np.array_equal(out["A"], out["B"])
    assert len(calls) < 300, len(calls)  # a Python loop per element evaluates > 768 x 3 times


def test_interfering_same_buffer_loop_keeps_the_serial_order():
    # S[i + 1, j] = S[i, j] over a serial loop (the language refuses overlapping regions; the IR can hold it):
    # the serial loop smears row 0 downwards; running all iterations at once would shift the rows instead
    from tilemagic.ir import nodes as ir

    A = ir.Buffer("A", "global", "float32", (32, 24))
    B = ir.Buffer("B", "global", "float32", (33, 24))
    S = ir.Buffer("S", "shared", "float32", (33, 24))
    i, j = ir.LoopVar("i"), ir.LoopVar("j")
    body = ir.Seq((
        ir.Grid((i, j), (32, 24), ir.Store(S, (i, j), ir.Load(A, (i, j)))),
        ir.Grid((i, j), (32, 24), ir.Store(S, (ir.add(i, 1), j), ir.Load(S, (i, j)))),
        ir.Grid((i, j), (33, 24), ir.Store(B, (i, j), ir.Load(S, (i, j)))),
    ))
    k = ir.Kernel("smear", 1, (A, B), (S,), (), (), 0, None, body)
    a = np.arange(32 * 24, dtype=np.uint32).reshape(32, 24)
    out = Simulator(k, {"A": a, "B": np.zeros((33, 24), np.uint32)}).run()
    assert np.array_equal(out["B"].view(np.uint32).reshape(33, 24), np.repeat(a[:1], 33, axis=0))


def test_seq_body_with_scratch_registers_is_batched(monkeypatch):
    # ld.global -> tmp -> st.global per iteration through the same scratch registers (privatised per iteration),
    # and a second loop whose scratch is read before it is written (kept serial): both give the serial result
    from tilemagic.ir import nodes as ir

    A = ir.Buffer("A", "global", "uint32", (64 * 32 * 4,))
    B = ir.Buffer("B", "global", "uint32", (64 * 32 * 4,))
    C = ir.Buffer("C", "global", "uint32", (64 * 32 * 4,))
    tmp = ir.Buffer("tmp", "local", "uint32", (4,), per_thread=4)
    i = ir.LoopVar("i")
    g = ir.add(ir.mul(i, 128), ir.mul(ir.ThreadVar("laneid"), 4))
    chain = ir.Grid((i,), (64,), ir.Seq((ir.VecMove(tmp, ir.Const(0), A, g, 4), ir.VecMove(B, g, tmp, ir.Const(0), 4))))
    late = ir.Grid((i,), (64,), ir.Seq((ir.VecMove(C, g, tmp, ir.Const(0), 4), ir.VecMove(tmp, ir.Const(0), A, g, 4))))
    k = ir.Kernel("chain", 32, (A, B, C), (), (tmp,), (), 0, None, ir.Seq((chain, late)))
    a = np.arange(A.numel, dtype=np.uint32)
    inp = {"A": a, "B": np.zeros_like(a), "C": np.zeros_like(a)}
    out = Simulator(k, inp).run()
    assert np.array_equal(out["B"].view(np.uint32), a)
    c = out["C"].view(np.uint32).reshape(64, 32, 4)
    assert np.array_equal(c[1:], a.reshape(64, 32, 4)[:-1]) and np.array_equal(c[0], a.reshape(64, 32, 4)[-1])
    calls = _record_eval(monkeypatch)
    k.body = ir.Seq((chain,))
    Simulator(k, inp).run()
    assert len(calls) < 30, len(calls)  # one batch of 64 iterations: a few evaluations, not a few per iteration


def test_the_simulator_stops_at_the_timeout():
    src = SAME_BUFFER
    with pytest.raises(LaunchError, match=r"the simulator ran past --timeout 1e-09 s at L\d+") as e:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tilemagic.tilecopy(src, launch="sim", timeout=1e-9)
    assert e.value.span is not None and e.value.span.line >= 5


def test_progress_shows_after_the_threshold(monkeypatch, capsys):
    monkeypatch.setattr(interpreter, "PROGRESS_AFTER_S", 0.0)
    k = _kernel(SAME_BUFFER)
    Simulator(k, _inputs(k), progress=True).run()
    err = capsys.readouterr().err
    assert "simulating sb" in err


def _item_bytes(off) -> np.ndarray:
    """The byte offset of every item of an access (a Run's items, or the offsets themselves)."""
    if isinstance(off, Run):
        return off.start + off.nbytes * np.arange(off.count, dtype=np.int64)
    return np.asarray(off)


class _Recorder(interpreter.Tracker):
    def __init__(self, kernel, nthreads, strict=False):
        super().__init__(kernel, nthreads, strict)
        self.log: list = []

    def _bytes(self, buf, off, tids, nbytes) -> int:
        """Bytes an access covers, checking the interface's contract (items of whole units, never per byte)."""
        if isinstance(off, Prepared):  # (normalised once by prepare, which checked the same contract)
            assert off.nbytes % self.unit(buf) == 0
            return int(np.prod(off.shape)) * off.nbytes
        nb = self.unit(buf) if nbytes is None else nbytes
        assert nb % self.unit(buf) == 0
        if isinstance(off, Run):
            assert off.nbytes == nb and off.start % self.unit(buf) == 0
            local = buf is not None and buf.scope == "local"
            assert np.ndim(tids) == 0 or np.shape(tids) == ((np.size(tids),) if local else (off.count,))
            return off.count * nb * (np.size(tids) if local else 1)
        assert np.shape(off) == np.shape(tids) and np.asarray(off).dtype == np.int64
        assert not np.any(np.asarray(off) % self.unit(buf))
        return np.asarray(off).size * nb

    def read(self, buf, off, tids, span, nbytes=None):
        size = self._bytes(buf, off, tids, nbytes)
        self.log.append(("read", buf.scope if buf is not None else "tmem", size, span))
        ini = super().read(buf, off, tids, span, nbytes)
        assert np.shape(ini) == (off.shape if isinstance(off, Prepared) else np.shape(off) if not isinstance(off, Run) else
                                 (np.size(tids), off.count) if buf is not None and buf.scope == "local" else
                                 (off.count,))
        return ini

    def write(self, buf, off, tids, span, init=True, *, value=None, nbytes=None, init_bytes=None):
        size = self._bytes(buf, off, tids, nbytes)
        items = off.shape if isinstance(off, Prepared) else \
            (np.size(tids), off.count) if isinstance(off, Run) and buf.scope == "local" else \
            (off.count,) if isinstance(off, Run) else np.shape(off)
        assert np.ndim(init) == 0 or np.shape(init) == items
        assert init_bytes is None or np.asarray(init_bytes).size == size  # (one bit per byte of the items)
        assert value is None or np.asarray(value).size * np.asarray(value).itemsize == size
        self.log.append(("write", buf.scope if buf is not None else "tmem", size, span))
        super().write(buf, off, tids, span, init, value=value, nbytes=nbytes, init_bytes=init_bytes)

    def event(self, kind, tids, span, **info):
        self.log.append(("event", kind, info, span))
        super().event(kind, tids, span, **info)


def test_every_access_reaches_the_tracker(monkeypatch):
    made: list = []

    def make(*a, **kw):
        made.append(_Recorder(*a, **kw))
        return made[-1]

    monkeypatch.setattr(interpreter, "Tracker", make)
    src = "\n".join(["kernel rt threads=128", "global A: float32[128, 32]", "global B: float32[128, 32] = zeros",
                     "tmem T: float32[128, 32]", "local a: float32[128, 32] @ S[(128, 32) : (1@tid_in_wg, 1)]",
                     "wg.copy a <- A", "wg.copy_async T <- a", "wait st", "cta_sync", "wg.copy_async a <- T",
                     "wait ld", "wg.copy B <- a", "check B == A"])
    k = _kernel(src)
    out = Simulator(k, _inputs(k)).run()
    assert np.array_equal(out["A"], out["B"])
    log = made[0].log
    moved = {(kind, scope): 0 for kind in ("read", "write") for scope in ("global", "local", "tmem")}
    for kind, scope, size, _ in log:
        if kind in ("read", "write") and (kind, scope) in moved:
            moved[kind, scope] += size
    tile = 128 * 32 * 4
    # (A is never written: nothing can race on it or leave it uninitialised, so its reads are not reported)
    assert not made[0].tracks(k.params[0])
    assert moved == {("read", "global"): 0, ("write", "local"): 2 * tile, ("read", "local"): 2 * tile,
                     ("write", "tmem"): tile, ("read", "tmem"): tile, ("write", "global"): tile}
    events = [e[1] for e in log if e[0] == "event"]
    for kind in ("alloc", "cta_sync", "tcgen05.st", "wait_st", "tcgen05.ld", "wait_ld", "dealloc"):
        assert kind in events, events
    st = next(e for e in log if e[0] == "event" and e[1] == "tcgen05.st")
    # one 32-bit word per register and TMEM cell (byte offsets), a row per thread
    assert st[2]["regs"].shape == (128, 32) and st[2]["cells"].shape == (128, 32) and st[2]["local"].name == "a"
    assert not np.any(st[2]["regs"] % 4) and not np.any(st[2]["cells"] % 4)


def test_poison_is_carried_per_element(monkeypatch):
    class Poison(_Recorder):
        def tracks(self, buf):  # (A is never written, so the simulator would not ask about it)
            return (buf is not None and buf.name == "A") or super().tracks(buf)

        def read(self, buf, off, tids, span, nbytes=None):
            ini = super().read(buf, off, tids, span, nbytes)
            ok = np.ones(np.shape(ini), bool)
            if buf is not None and buf.name == "A":
                ok &= _item_bytes(off) // 4 != 7  # element 7 of A is uninitialised
            return ok

        def init_bytes(self, buf, off, tids, nbytes=None):  # (the same lie per byte: element 7 of A)
            b = super().init_bytes(buf, off, tids, nbytes)
            if buf is not None and buf.name == "A":
                o = _item_bytes(off)
                at = o.reshape(o.shape + (1,)) + np.arange(b.shape[-1])
                b = b & (at.reshape(b.shape) // 4 != 7)
            return b

        def write(self, buf, off, tids, span, init=True, *, value=None, nbytes=None, init_bytes=None):
            if buf is not None and buf.name == "B":
                o = _item_bytes(off)
                if init_bytes is not None:  # (per byte: an item is initialised when all of its bytes are)
                    init = np.asarray(init_bytes).reshape(o.size, -1).all(1)
                self.stored.append((o.reshape(-1), np.broadcast_to(init, o.shape).reshape(-1)))
            super().write(buf, off, tids, span, init, value=value, nbytes=nbytes, init_bytes=init_bytes)

    made: list = []

    def make(*a, **kw):
        made.append(Poison(*a, **kw))
        made[-1].stored = []
        return made[-1]

    monkeypatch.setattr(interpreter, "Tracker", make)
    for src in (FALLBACK_WIDE.replace("48, 40", "4, 6"),  # scalar stores, batched over the loop
                "kernel v threads=32\nglobal A: float32[8, 16]\nglobal B: float32[8, 16] = zeros\n"
                "shared S: float32[8, 16]\nwarp.copy S <- A\ncta_sync\nwarp.copy B <- S"):
        k = _kernel(src)
        Simulator(k, _inputs(k)).run()
        if "S" not in src:
            off, init = map(np.concatenate, zip(*made[-1].stored))
            assert set(off[~init] // 4) == {7} and init[off // 4 != 7].all()
        else:  # through shared memory: this tracker's reads of S answer "initialised", so B is clean again
            off, init = map(np.concatenate, zip(*made[-1].stored))
            assert init.all() and off.size * 16 == 8 * 16 * 4  # (16-byte vector items)


def test_apply_skips_unit_iters_with_the_same_result():
    from tilemagic.layout.tile import Iter, TileLayout

    its = [Iter(2, 8), Iter(1, 5), Iter(4, 1), Iter(1, 3), Iter(1, 64), Iter(2, 4), Iter(1, 1)]
    lay = TileLayout(tuple(its))
    ref = TileLayout((Iter(2, 8), Iter(4, 1), Iter(2, 4)))
    x = np.arange(16)
    assert np.array_equal(lay.apply(x)["m"], ref.apply(x)["m"])


def _recorded(monkeypatch, src):
    made: list = []

    def make(*a, **kw):
        made.append(_Recorder(*a, **kw))
        return made[-1]

    monkeypatch.setattr(interpreter, "Tracker", make)
    k = _kernel(src)
    sim = Simulator(k, _inputs(k))
    out = sim.run()
    return k, sim, out, made[0].log


def test_a_contiguous_copy_loop_reaches_the_tracker_as_a_few_runs(monkeypatch):
    """The fallback's 1 Mi-element loop: each chunk one Run of the elected thread (no per-element offsets), and
    chunks of RUN_ELEMS elements, not of CHUNK_LANES lanes."""
    k, sim, out, log = _recorded(monkeypatch, FALLBACK_WIDE.replace("48, 40", "1024, 1024"))
    assert np.array_equal(out["A"], out["B"])
    writes = [e for e in log if e[0] == "write" and e[1] == "global"]
    assert sum(size for _, _, size, _ in writes) == 1024 * 1024 * 4
    assert len(writes) <= -(-1024 * 1024 // interpreter.RUN_ELEMS)
    assert sim.lanes == 1024 * 1024


def test_a_copy_by_every_thread_is_one_run_per_loop(monkeypatch):
    """global -> shared -> global by 1,024 threads, each thread the next 16 bytes: one Run per copy (its threads
    cycle over the CTA), not (iterations x threads) offset arrays."""
    src = ("kernel gs threads=1024\nglobal A: float32[32, 256]\nglobal B: float32[32, 256] = zeros\n"
           "shared S: float32[32, 256]\ncta.copy S <- A\ncta_sync\ncta.copy B <- S\ncheck B == A")
    kinds: list = []
    real = interpreter.Tracker.write

    def spy(self, buf, off, tids, span, init=True, *, value=None, nbytes=None, init_bytes=None):
        kinds.append((buf.name, type(off).__name__, np.size(tids)))
        return real(self, buf, off, tids, span, init, value=value, nbytes=nbytes, init_bytes=init_bytes)

    monkeypatch.setattr(interpreter.Tracker, "write", spy)
    k = _kernel(src)
    out = Simulator(k, _inputs(k)).run()
    assert np.array_equal(out["A"], out["B"])
    assert kinds == [("S", "Run", 1024), ("B", "Run", 1024)], kinds


def test_progress_total_counts_every_tick_of_the_run(monkeypatch):
    """The bar's total is the statements the run ticks for (an If's condition included): it ends at 100 %."""
    seen = []
    real = interpreter._Progress

    class Spy(real):
        def close(self):
            seen.append((self.done, self.total))
            super().close()

    monkeypatch.setattr(interpreter, "_Progress", Spy)
    k = _kernel(FALLBACK_WIDE.replace("48, 40", "4, 6"))  # (the fallback: its copy loop is under `if tx == 0`)
    Simulator(k, _inputs(k), progress=True).run()
    (done, total), = seen
    assert done == total
