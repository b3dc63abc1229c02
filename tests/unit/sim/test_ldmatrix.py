"""The simulator's ldmatrix / stmatrix against a decoder written from the PTX ISA text.

PTX ISA, "Warp-level matrix load instruction: ldmatrix" / "...store instruction: stmatrix"
(.m8n8, .b16): threads 0-7 give the row addresses of matrix 0, 8-15 of matrix 1, 16-23 of
matrix 2, 24-31 of matrix 3 (only the first 8*num threads are read); each row is 8 contiguous
16-bit elements.  Thread t receives in its i-th register the elements of matrix i at row t/4,
columns 2*(t%4) and 2*(t%4)+1 (lower column in the lower half).  With .trans thread t receives
the elements at rows 2*(t%4) and 2*(t%4)+1, column t/4.  The decoder below spells this out
lane by lane with Python integers; it shares no code with tilemagic.arch.ldmatrix.

The addresses come from a global table (one per thread), so every row may sit anywhere.
"""

import numpy as np
import pytest

from tilemagic.errors import LaunchError
from tilemagic.ir import nodes as ir
from tilemagic.sim.hb import GARBAGE
from tilemagic.sim import Simulator

SMEM = 4096  # 16-bit elements


def decode_ld(smem, rowaddr, num, trans):
    """regs[t][i] (uint32) of one warp from the shared contents and the 32 thread addresses."""
    regs = [[0] * num for _ in range(32)]
    for i in range(num):
        row_start = [rowaddr[8 * i + r] for r in range(8)]  # row r of matrix i from thread 8i + r
        for t in range(32):
            if not trans:
                lo = smem[row_start[t // 4] + 2 * (t % 4)]
                hi = smem[row_start[t // 4] + 2 * (t % 4) + 1]
            else:
                lo = smem[row_start[2 * (t % 4)] + t // 4]
                hi = smem[row_start[2 * (t % 4) + 1] + t // 4]
            regs[t][i] = int(lo) | (int(hi) << 16)
    return regs


def decode_st(smem, rowaddr, regs, num, trans):
    out = list(smem)
    for i in range(num):
        row_start = [rowaddr[8 * i + r] for r in range(8)]
        for t in range(32):
            lo, hi = regs[t][i] & 0xFFFF, regs[t][i] >> 16
            if not trans:
                out[row_start[t // 4] + 2 * (t % 4)] = lo
                out[row_start[t // 4] + 2 * (t % 4) + 1] = hi
            else:
                out[row_start[2 * (t % 4)] + t // 4] = lo
                out[row_start[2 * (t % 4) + 1] + t // 4] = hi
    return out


def _kernel(op, num, trans, warps, words=4):
    threads = 32 * warps
    tab = ir.Buffer("ADDR", "global", "int32", (threads,), per_thread=threads)
    s = ir.Buffer("S", "shared", "float16", (SMEM,), per_thread=SMEM)
    r = ir.Buffer("r", "local", "float16", (2 * words,), per_thread=2 * words)
    regs = tuple(ir.Const(words - 1 - i) for i in range(num))  # registers in reverse order: any word works
    stmt = ir.LdStMatrix(op, num, trans, r, regs, s, ir.Load(tab, (ir.ThreadVar("tx"),)))
    return ir.Kernel("k", threads, (tab,), (s,), (r,), (), 0, None, ir.Seq((stmt,))), regs


def _addresses(rng, warps, num):
    """Distinct, 16-byte aligned row starts; threads past 8*num get addresses outside the buffer."""
    rows = rng.choice(SMEM // 8, size=(warps, 32), replace=False) * 8
    rows[:, 8 * num:] = 10 ** 6  # never read by .x1 / .x2: an out-of-bounds value proves it
    return rows


@pytest.mark.parametrize("trans", [False, True], ids=["row", "trans"])
@pytest.mark.parametrize("num", [1, 2, 4])
@pytest.mark.parametrize("warps", [1, 2])
def test_ldmatrix_matches_the_ptx_decoder(num, trans, warps):
    rng = np.random.default_rng(num * 10 + trans + warps)
    k, regs = _kernel("ld", num, trans, warps)
    rows = _addresses(rng, warps, num)
    sim = Simulator(k, {"ADDR": rows.reshape(-1).astype(np.int32)})
    smem = rng.integers(0, 1 << 16, SMEM, dtype=np.uint16)
    sim.mem["S"].view(np.uint16)[:] = smem
    sim.run_stmt(k.body, np.arange(k.threads), {})
    got = sim.local["r"].view(np.uint32)
    for w in range(warps):
        want = decode_ld(smem.tolist(), rows[w].tolist(), num, trans)
        for t in range(32):
            for i in range(num):
                assert got[32 * w + t, regs[i].value] == want[t][i], (w, t, i)
    untouched = [j for j in range(4) if j not in {r.value for r in regs}]
    assert (got[:, untouched] == GARBAGE.view(np.uint32)[0]).all()  # registers start as garbage, untouched


@pytest.mark.parametrize("trans", [False, True], ids=["row", "trans"])
@pytest.mark.parametrize("num", [1, 2, 4])
def test_stmatrix_matches_the_ptx_decoder(num, trans):
    rng = np.random.default_rng(100 + num * 10 + trans)
    k, regs = _kernel("st", num, trans, 1)
    rows = _addresses(rng, 1, num)
    sim = Simulator(k, {"ADDR": rows.reshape(-1).astype(np.int32)})
    words = rng.integers(0, 1 << 32, (32, 4), dtype=np.uint32)
    sim.local["r"].view(np.uint32)[:] = words
    before = sim.mem["S"].view(np.uint16).tolist()  # uninitialised shared memory: garbage
    sim.run_stmt(k.body, np.arange(32), {})
    reg_vals = [[int(words[t, regs[i].value]) for i in range(num)] for t in range(32)]
    want = decode_st(before, rows[0].tolist(), reg_vals, num, trans)
    np.testing.assert_array_equal(sim.mem["S"].view(np.uint16), want)


def test_misaligned_row_and_partial_warp_are_errors():
    k, _ = _kernel("ld", 4, False, 1)
    rows = np.arange(32, dtype=np.int32) * 8
    rows[5] += 4  # 8-byte aligned only
    with pytest.raises(LaunchError, match="thread 5 supplies row address element 44 of S, not 16-byte aligned"):
        Simulator(k, {"ADDR": rows}).run()
    sim = Simulator(k, {"ADDR": np.arange(32, dtype=np.int32) * 8})
    mask = np.ones(32, bool)
    mask[7] = False
    with pytest.raises(LaunchError, match="partial warp"):
        sim.run_stmt(k.body, np.flatnonzero(mask), {})
    rows = np.arange(32, dtype=np.int32) * 8
    rows[0] = SMEM
    with pytest.raises(LaunchError, match="leaves S"):
        Simulator(k, {"ADDR": rows}).run()
