"""Random TMEM cells checked value by value against an independent NumPy model of tensor memory.

The round-trip fuzz (test_fuzz.py) checks ``B == A`` after a store and a load through the same
mapping, so an offset or lane error that both directions share cancels out.  Here every cell
mixes buffers that alias one allocation (``at T0 + COLS``, other dtypes, data paths D, F and B,
``+ k@TCol`` windows), column slices of TMEM and of the register tile, 64- and 128-row fragments
of every tcgen05 shape, and ops that only store or only load; each global output is compared with
what a model of the physical 128 lanes × 512 32-bit cells predicts.  The model is written from
docs/language.md's tables (PTX ISA 9.0 §9.7.16.2.3), not from tilemagic.layout:

* D: lane = r; F(sub_slab s): lane = 32·(r//16) + 16·s + r%16; B: lane = r + 64·(c // (N/2)),
  column c % (N/2); a 64-row ``.16x*b`` fragment on a D buffer is TVM's pairing, lane
  32·(r//16) + r%16;
* element column e of a buffer at 32-bit column ``base`` lies in cell ``base + e // epc`` at
  bits ``(e % epc)·width`` (epc = 32 / width: the even 16-bit column in the low half).

Only cells a load actually defined are compared (TMEM is undefined after tcgen05.alloc).
"""

import random
import warnings

import numpy as np
import pytest

import tilemagic

BITS = {"float32": 32, "float16": 16, "bfloat16": 16, "int8": 8, "uint8": 8, "int32": 32}
UINT = {32: np.uint32, 16: np.uint16, 8: np.uint8}
UNIT_COLS = {"32x32b": 1, "16x64b": 2, "16x128b": 4, "16x256b": 8}  # 32-bit columns per unit of num


class TmemBuf:
    def __init__(self, name, dtype, rows, cols, path, base, sub=0, tcol=0):
        self.name, self.dtype, self.rows, self.cols = name, dtype, rows, cols
        self.path, self.base, self.sub, self.tcol = path, base, sub, tcol

    def cell(self, r, c, pair64):
        """(lane, 32-bit column, slot within the cell) of element (r, c)."""
        epc = 32 // BITS[self.dtype]
        if self.path == "B":
            lane, e = r + 64 * (c // (self.cols // 2)), c % (self.cols // 2)
        elif self.path == "F":
            lane, e = 32 * (r // 16) + 16 * self.sub + r % 16, c + self.tcol
        else:
            lane, e = (32 * (r // 16) + r % 16 if pair64 else r), c + self.tcol
        return lane, self.base + e // epc, e % epc


class Tmem:
    def __init__(self):
        self.bits = np.zeros((128, 512), np.uint64)
        self.defined = np.zeros((128, 512, 4), bool)  # per byte

    def store(self, buf, r, c, value, pair64):
        w = BITS[buf.dtype]
        lane, col, slot = buf.cell(r, c, pair64)
        mask = ((1 << w) - 1) << (slot * w)
        self.bits[lane, col] = (int(self.bits[lane, col]) & ~mask) | ((int(value) << (slot * w)) & mask)
        self.defined[lane, col, slot * w // 8:(slot + 1) * w // 8] = True

    def load(self, buf, r, c, pair64):
        w = BITS[buf.dtype]
        lane, col, slot = buf.cell(r, c, pair64)
        ok = bool(self.defined[lane, col, slot * w // 8:(slot + 1) * w // 8].all())
        return (int(self.bits[lane, col]) >> (slot * w)) & ((1 << w) - 1), ok


def random_cell(rng):
    """(source, ops, global dtypes) of one random cell; every op is A_j -> r_j -> TMEM -> r_j -> B_j."""
    dt = rng.choice(list(BITS))
    W32 = rng.choice([32, 64, 128, 256])
    lines = ["kernel k threads=128", f"tmem T0: {dt}[128, {W32 * 32 // BITS[dt]}]"]
    ops, globs = [], {}
    for j in range(rng.randrange(1, 5)):
        adt = dt if rng.random() < 0.7 else rng.choice(list(BITS))
        path = rng.choice(["D", "D", "Dwin", "F", "B", "D64"])
        if BITS[adt] == 8 and path in ("F", "D64"):
            path = "D"
        if path == "B":
            adt, shape, num = "float32", "32x32b", 2 ** rng.randrange(1, 6)
        else:
            shapes = ["16x64b", "16x128b", "16x256b"] if path in ("F", "D64") else \
                ["32x32b"] if BITS[adt] == 8 else ["32x32b", "32x32b", "16x64b", "16x128b", "16x256b"]
            shape, num = rng.choice(shapes), 2 ** rng.randrange(0, 5)
        epc = 32 // BITS[adt]
        atom = UNIT_COLS[shape] * epc
        lcols = atom * num
        num2 = max(num >> rng.randrange(0, 3), 1) if path != "B" and rng.random() < 0.4 else num
        nc = atom * num2  # the op moves a column slice of the register tile ...
        loff = nc * rng.randrange(0, num // num2)
        if path == "B":
            lrows, lay, tcols, c0, tcw = 64, "frag(32x32b)", lcols, 0, 0
            need = lcols // 2
        else:
            lrows = 128 if path in ("D", "Dwin") and (shape == "32x32b" or rng.random() < 0.6) else 64
            lay = f"S[({lrows}, {lcols}) : (1@tid_in_wg, 1)]" if shape == "32x32b" and rng.random() < 0.5 \
                else f"frag({shape})"
            extra = epc * rng.randrange(0, 4)
            tcols, c0 = nc + extra, epc * rng.randrange(0, extra // epc + 1)  # ... at a column offset of TMEM
            tcw = epc * rng.randrange(0, 3) if path == "Dwin" else 0
            need = (tcols + tcw) // epc
        if need > W32:
            continue
        off = rng.randrange(0, W32 - need + 1)
        name = f"T{len(ops) + 1}"
        sub = rng.randrange(2)
        decl = {"B": f"tmem {name}: float32[64, {lcols}] @ datapath(B) at T0 + {off}",
                "F": f"tmem {name}: {adt}[64, {tcols}] @ datapath(F, sub_slab={sub}) at T0 + {off}",
                "Dwin": f"tmem {name}: {adt}[128, {tcols}] @ S[(128, {tcols}) : (1@TLane, 1@TCol)] + {tcw}@TCol "
                        f"at T0 + {off}"}.get(path, f"tmem {name}: {adt}[128, {tcols}] at T0 + {off}")
        buf = TmemBuf(name, adt, 64 if path in ("B", "F") else 128, lcols if path == "B" else tcols,
                      "B" if path == "B" else "F" if path == "F" else "D", off, sub, tcw)
        lines += [decl, f"local r{j}: {adt}[{lrows}, {lcols}] @ {lay}"]
        globs[f"A{j}"] = (adt, lrows, lcols, "random")
        globs[f"B{j}"] = (adt, lrows, lcols, "zeros")
        ops.append((rng.choice(["st_ld", "st_ld", "st", "ld"]), buf, (c0, c0 + nc), j, lrows, lcols, loff, nc))
    lines += [f"global {g}: {d}[{r}, {c}] = {init}" for g, (d, r, c, init) in globs.items()]

    def region(name, rows, cols, c, full_cols):
        return name if (c == (0, full_cols)) else f"{name}[0:{rows}, {c[0]}:{c[1]}]"

    for kind, buf, cs, j, lrows, lcols, loff, nc in ops:
        reg = region(f"r{j}", lrows, lcols, (loff, loff + nc), lcols)
        tm = region(buf.name, lrows if buf.rows == 128 else 64, buf.cols, cs, buf.cols)
        if buf.rows == 128 and lrows == 64 and tm == buf.name:
            tm = f"{buf.name}[0:64, :]"
        lines.append(f"wg.copy r{j} <- A{j}")
        if kind in ("st_ld", "st"):
            lines += [f"wg.copy_async {tm} <- {reg}", "wait st", "cta_sync"]
        if kind in ("st_ld", "ld"):
            lines += [f"wg.copy_async {reg} <- {tm}", "wait ld", "cta_sync"]
        lines.append(f"wg.copy B{j} <- r{j}")
    return "\n".join(lines), ops, globs


def expected(ops, globs, inputs):
    """Every global buffer after the kernel, and which of its elements the model defines."""
    tm = Tmem()
    out = {g: np.ascontiguousarray(inputs[g]).view(UINT[BITS[d]]).copy() for g, (d, *_rest) in globs.items()}
    known = {g: np.ones(out[g].shape, bool) for g in globs}
    for kind, buf, cs, j, lrows, lcols, loff, nc in ops:
        regs, ok = out[f"A{j}"].copy(), np.ones((lrows, lcols), bool)
        pair64 = lrows == 64 and buf.path == "D"
        for r in range(lrows):
            for c in range(nc):
                if kind in ("st_ld", "st"):
                    tm.store(buf, r, cs[0] + c, regs[r, loff + c], pair64)
                if kind in ("st_ld", "ld"):
                    regs[r, loff + c], ok[r, loff + c] = tm.load(buf, r, cs[0] + c, pair64)
        out[f"B{j}"], known[f"B{j}"] = regs, ok
    return out, known


@pytest.mark.parametrize("seed", range(8))
def test_random_tmem_cells_match_the_independent_model(seed):
    rng = random.Random(1000 + seed)
    lowered = 0
    for _ in range(25):
        src, ops, globs = random_cell(rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                res = tilemagic.tilecopy(src, launch="sim")
            except tilemagic.TileMagicError as e:  # a rejection must be located, never a crash
                assert e.line and e.col, src
                continue
        lowered += 1
        want, known = expected(ops, globs, res.launch.inputs)
        for g, (dtype, *_rest) in globs.items():
            got = res.launch.outputs[g].view(UINT[BITS[dtype]])
            bad = np.argwhere((got != want[g]) & known[g])
            assert not len(bad), f"{g}: {len(bad)} elements differ, first {bad[:3].tolist()}\n{src}"
    assert lowered >= 20  # the generator makes legal cells: the comparison is not vacuous
