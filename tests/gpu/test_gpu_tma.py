"""GPU tests of the TMA variants: tensor maps encoded with cuTensorMapEncodeTiled, passed by value, bytes moved.

Each case lowers a G2S ``copy_async`` (``mbar=``) and an S2G one through the real variants (``tma_auto`` or
``tma_explicit``), generates the CUDA with the real code generator (``__grid_constant__ CUtensorMap``
parameters, the shared buffer aligned to its swizzle pattern) and launches it through
:func:`tilemagic.runtime.run_on_gpu`, which encodes the maps on the device pointers.  The kernel then checks:

* the shared tile's *physical* bytes (every thread copies the raw shared buffer to a global buffer after the
  mbarrier wait): the hardware's swizzle must put logical element ``m`` at the shared layout's ``apply(m)``
  (``swizzle(3, 3, 3)`` on float16 = the 128B mode, PTX ISA 9.0 §5.5.7);
* the S2G result: the destination region equals the source region, the rest of the buffer untouched.

The mbarrier init / ``arrive.expect_tx`` / ``try_wait.parity`` and the bulk-group commit/wait are written here
as inline PTX at marker comments of the IR, below the language: the raw shared bytes are read here; the same
cases as ``%%tilecopy`` cells (``cells.TMA_CELLS``) run in tests/gpu/test_gpu_pipeline.py.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

from gpu_guard import cupy  # noqa: E402,F401  (skips the module without a GPU)
from helpers import copy_async_op, lower_ops, region, tma_buffers  # noqa: E402

from tilemagic.codegen.cuda import generate  # noqa: E402
from tilemagic.ir import nodes as ir  # noqa: E402
from tilemagic.layout import TileLayout, row_major  # noqa: E402
from tilemagic.layout.swizzle import ComposeLayout  # noqa: E402
from tilemagic.runtime import run_on_gpu  # noqa: E402

gbuf, sbuf, mbar = tma_buffers()

_ADDR = "(uint32_t)__cvta_generic_to_shared(full)"
_PTX = {
    "DECL": "__shared__ __align__(8) uint64_t full[1];",
    "INIT": ('if (threadIdx.x == 0) { asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(' + _ADDR
             + ') : "memory"); asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }\n'
             "__syncthreads();"),
    "ARRIVE": ('if (threadIdx.x == 0) asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"('
               + _ADDR + '), "r"(@BYTES@) : "memory");'),
    "WAIT": ('{ uint32_t done = 0; while (!done) asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 '
             'p, [%1], %2; selp.u32 %0, 1, 0, p; }" : "=r"(done) : "r"(' + _ADDR + '), "r"(0) : "memory"); }'),
    "DUMP": ("for (int i = threadIdx.x; i < @NBYTES@; i += blockDim.x) ((uint8_t*)RAW)[i] = ((uint8_t*)@S@)[i];\n"
             'asm volatile("fence.proxy.async.shared::cta;" ::: "memory");\n__syncthreads();'),
    "COMMIT": ('if (threadIdx.x == 0) { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); '
               'asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }'),
}


def _kernel(A, B, S, g2s_region, s2g_region, dispatch="tma_auto", **g2s_opts):
    raw = gbuf("RAW", S.dtype, S.shape)
    full = mbar("full")
    g2s = copy_async_op(region(S), g2s_region, dispatch=dispatch, mbar=full, **g2s_opts)
    s2g = copy_async_op(s2g_region, region(S), dispatch=dispatch, line=2)
    kernel, records = lower_ops([g2s, s2g], A, B, raw, S)
    copies = [s for s in ir.walk(kernel.body) if isinstance(s, ir.TmaCopy)]
    loads = [c for c in copies if c.direction == "g2s"]
    stores = [c for c in copies if c.direction == "s2g"]
    tx0 = ir.Bin("==", ir.ThreadVar("tx"), ir.Const(0))
    body = ir.Seq((ir.Comment("TM_INIT"), ir.Comment("TM_ARRIVE"), ir.If(tx0, ir.Seq(tuple(loads))),
                   ir.Comment("TM_WAIT"), ir.Comment("TM_DUMP"), ir.If(tx0, ir.Seq(tuple(stores))),
                   ir.Comment("TM_COMMIT")))
    kernel = dataclasses.replace(kernel, body=body)
    src = generate(kernel, arch="sm_90a")
    nbytes = sum(c.tmap.box_bytes for c in loads)
    head = src.text.index("\n", src.text.index('extern "C"')) + 1  # after the kernel's opening line
    text = src.text[:head] + "// TM_DECL\n" + src.text[head:]
    for key, snippet in _PTX.items():
        snippet = snippet.replace("@BYTES@", str(nbytes)).replace("@NBYTES@", str(S.numel * S.elem_bytes))
        text = text.replace(f"// TM_{key}", snippet.replace("@S@", S.name))
    return dataclasses.replace(src, text=text), records, loads, stores


def _host(buf, seed):
    rng = np.random.default_rng(seed)
    if buf.dtype == "float16":
        return rng.integers(0, 1 << 16, size=buf.shape, dtype=np.uint64).astype(np.uint16).view(np.float16)
    if buf.dtype == "float32":
        return rng.standard_normal(buf.shape).astype(np.float32)
    return rng.integers(0, 256, size=buf.shape, dtype=np.uint64).astype(np.uint8)


def _slices(r):
    return tuple(slice(b, b + e) for b, e in zip(r.begins, r.extents))


CASES = {
    # TVM's first example: a 64x64 fp16 SW128 tile, rank 2, one issue
    "fp16_sw128": lambda: (gbuf("A", "float16", (256, 128)), gbuf("B", "float16", (256, 128)),
                           sbuf("S", "float16", (64, 64), ComposeLayout(3, 3, 3, row_major((64, 64)), bare=True)),
                           ((64, 0), (64, 64)), ((0, 64), (64, 64)), "tma_auto", {}),
    # TVM's second example: 64x128 fp16 stored as two SW128 atoms of 64x64 -> rank 3
    "fp16_two_atoms": lambda: (gbuf("A", "float16", (256, 256)), gbuf("B", "float16", (256, 256)),
                               sbuf("S", "float16", (64, 128),
                                    ComposeLayout(3, 3, 3, TileLayout.from_spec((64, 2, 64), (64, 4096, 1)))),
                               ((64, 128), (64, 128)), ((128, 0), (64, 128)), "tma_auto", {}),
    # uint8 rows of 512: the descriptor unit is promoted to UINT16 (box 512 -> 256)
    "u8_promoted": lambda: (gbuf("A", "uint8", (16, 512)), gbuf("B", "uint8", (16, 512)),
                            sbuf("S", "uint8", (4, 512)), ((4, 0), (4, 512)), ((8, 0), (4, 512)), "tma_auto", {}),
    # 264 rows of 128 B: no box holds 264 rows, so one issue per row (an issue axis; 128-byte shared steps)
    "fp16_issue_axis": lambda: (gbuf("A", "float16", (512, 64)), gbuf("B", "float16", (512, 64)),
                                sbuf("S", "float16", (264, 64)), ((8, 0), (264, 64)), ((240, 0), (264, 64)),
                                "tma_auto", {}),
    # tma_explicit, fp32 with the 64B swizzle and an L2 cache hint
    "fp32_sw64_explicit": lambda: (gbuf("A", "float32", (64, 64)), gbuf("B", "float32", (64, 64)),
                                   sbuf("S", "float32", (16, 16),
                                        ComposeLayout(2, 2, 3, row_major((16, 16)), bare=True)),
                                   ((16, 32), (16, 16)), ((48, 0), (16, 16)), "tma_explicit",
                                   {"cache_hint": "evict_first"}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_tma_round_trip_on_the_gpu(name):
    A, B, S, (gb, ge), (ob, oe), dispatch, opts = CASES[name]()
    src, records, loads, stores = _kernel(A, B, S, region(A, gb, ge), region(B, ob, oe), dispatch, **opts)
    assert [r.chosen for r in records] == [dispatch, dispatch]
    a = _host(A, 1)
    run = run_on_gpu(src, None, {"A": a})
    assert run.arch.endswith("a"), run.arch
    tile = a[_slices(region(A, gb, ge))].reshape(-1)
    phys = S.layout.apply(np.arange(S.numel)).get("m")
    want_raw = np.zeros(S.numel, a.dtype)
    want_raw[phys] = tile
    got_raw = run.outputs["RAW"].reshape(-1)
    assert np.array_equal(got_raw.view(np.uint8), want_raw.view(np.uint8)), "shared bytes not where the layout says"
    want_b = np.zeros(B.shape, a.dtype)
    want_b[_slices(region(B, ob, oe))] = tile.reshape(oe)
    assert np.array_equal(run.outputs["B"].view(np.uint8), want_b.view(np.uint8))
