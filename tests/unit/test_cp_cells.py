"""The tcgen05.cp matrix through the whole pipeline (issue 14): every :data:`cells.CP_CELLS` case as a cell,
``tilemagic.tilecopy(..., launch="sim")``.

Per case: every ``check`` PASSes, the happens-before report is clean, and the TMEM the simulator's tcgen05.cp wrote —
the cells it reports (``launch.hb.cp_writes``) and their words, read back through ``tcgen05.ld`` of all 128 lanes
into ``B`` — equals what the independent ISA decoder (:func:`reference.tcgen05_cp_ref.tmem_image`) makes of the same
shared bytes (the input ``A`` placed by ``S``'s layout in the shared window, :func:`tilemagic.ir.nodes.shared_bases`)
and each instruction's descriptor.  The printed IR and CUDA (native and emulated) are the same on a second run.
"""

from __future__ import annotations

import numpy as np
import pytest
from cells import CP_CELLS, cp_case_cell
from reference.tcgen05_cp_ref import tmem_image

import tilemagic
from tilemagic.arch import tcgen05 as tc
from tilemagic.ir import nodes as ir

_WORD = {2: np.uint16, 4: np.uint32}


def _shared_window(kernel: ir.Kernel, a: np.ndarray) -> bytes:
    """The shared window after ``wg.copy S <- A``: element ``(r, c)`` of ``A`` at ``S``'s layout offset."""
    bases = ir.shared_bases(kernel)
    (s,) = [b for b in kernel.shared if b.name == "S"]
    end = max(bases[b.name] + b.nbytes for b in kernel.shared)
    window = np.zeros(end, np.uint8)
    rr, cc = np.meshgrid(np.arange(s.shape[0]), np.arange(s.shape[1]), indexing="ij")
    off = np.asarray(s.layout.apply(rr.ravel(), cc.ravel(), shape=s.shape)["m"])
    elems = np.zeros(s.storage_elems, _WORD[s.elem_bytes])
    elems[off] = np.asarray(a).view(_WORD[s.elem_bytes]).reshape(-1)
    window[bases["S"]: bases["S"] + s.nbytes] = elems.view(np.uint8)
    return window.tobytes()


def _expected_tmem(kernel: ir.Kernel, window: bytes) -> np.ndarray:
    """The words every tcgen05.cp of the kernel writes, by the ISA decoder: (128, 512) int64, -1 where none."""
    bases = ir.shared_bases(kernel)
    out = np.full((128, 512), -1, np.int64)
    cps = [s for s in ir.walk(kernel.body) if isinstance(s, ir.TcgenCp)]
    assert cps
    for cp in cps:
        c = tc.CP_SHAPES[cp.key]
        img = tmem_image(window, cp.descriptor(bases[cp.smem.name]), c.shape, c.multicast)
        lanes, cols = np.nonzero(img != None)  # noqa: E711 (an object array: None where nothing is written)
        col0 = (cp.tmem.tmem_col if cp.tmem is not None else 0) + cp.col
        out[lanes + cp.row, cols + col0] = img[lanes, cols].astype(np.int64)
    return out


def _run(case):
    src = "%%tilecopy\n" + cp_case_cell(case)
    return src, tilemagic.tilecopy(src, launch="sim", emit_warnings=False)  # (hazards: in launch.hazards)


@pytest.mark.parametrize("case", CP_CELLS, ids=[f"{c.key}-sw{c.swizzle}-{c.dtype}{'-off' if c.offsets else ''}"
                                                for c in CP_CELLS])
def test_cp_cell_through_the_pipeline(case):
    src, res = _run(case)
    launch = res.launch
    assert launch.backend == "sim" and launch.checks
    assert all(c.passed for c in launch.checks), [(c.text, c.passed) for c in launch.checks]
    assert launch.hazards == [] and launch.hb.clean, launch.hb.summary()
    kernel = res.kernel
    (cp_keys,) = {tuple(s.key for s in ir.walk(kernel.body) if isinstance(s, ir.TcgenCp))}
    assert set(cp_keys) == {case.key}  # the forced shape= / multicast=
    exp = _expected_tmem(kernel, _shared_window(kernel, launch.inputs["A"]))
    # the cells the simulator's cps wrote: exactly the decoder's
    wrote = np.zeros((128, 512), bool)
    for w in launch.hb.cp_writes:
        assert w.landed and w.barrier == "done" and w.phase == 0
        wrote[np.ix_(w.lanes, w.cols)] = True
    assert np.array_equal(wrote, exp >= 0)
    # their words, through tcgen05.ld of the alias `all` (all 128 lanes) into B
    (alias,) = [b for b in kernel.tmem if b.name == "all"]
    words = np.asarray(launch.outputs["B"]).view(np.uint32).reshape(128, -1)  # (B: 128 x (width * eb / 4) words)
    lo = alias.tmem_col
    region = exp[:, lo: lo + words.shape[1]]
    assert (exp[:, :lo] < 0).all() and (exp[:, lo + words.shape[1]:] < 0).all()  # every cell written is read back
    mask = region >= 0
    assert mask.sum() == sum(w.lanes.size * w.cols.size for w in launch.hb.cp_writes)
    assert np.array_equal(words[mask].astype(np.int64), region[mask])
    # and B's words that no cp wrote are the zeros the 4x256b cells store first (the other shapes write every lane);
    # nothing is uninitialised
    assert np.all(words[~mask] == 0)
    assert not launch.hb.poison.get("B", np.zeros(1, bool)).any()
    # deterministic printing: the same IR and CUDA from a second run
    again = tilemagic.tilecopy(src, launch="off")
    assert (again.ir, again.cuda, again.cuda_emulated) == (res.ir, res.cuda, res.cuda_emulated)
