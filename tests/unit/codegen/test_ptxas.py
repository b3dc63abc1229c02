"""The generated CUDA assembles with ptxas: native tcgen05 for sm_100a, emulated TMEM for sm_90.

nvcc/ptxas 13.0 assemble sm_100a code without a GPU (CI has them; the test is skipped
only where nvcc is absent).  Covers both seed demos and every legal .32x32b num for
ld and st, fp32 and fp16, with and without a column offset.
"""

import shutil

import pytest
from helpers import run

from tilemagic.cli import DEMOS, demo_source
from tilemagic.errors import DispatchError
from tilemagic.runtime.nvcc import nvcc_compile

pytestmark = [pytest.mark.nvcc,
              pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")]


def _res(src):
    return run(src, launch="off")


@pytest.mark.parametrize("name", DEMOS)
def test_demo_native_assembles_for_sm_100a(name):
    res = _res(demo_source(name))
    r = nvcc_compile(res.cuda, "sm_100a")
    assert r.ok, r.log
    assert r.cubin and len(r.cubin) > 100


#: the demos with tcgen05 (TMEM by tcgen05.st/ld; by tcgen05.cp + tcgen05.commit): sm_100a natively, emulated elsewhere
TCGEN05_DEMOS = ("tmem_roundtrip", "tcgen05_cp_roundtrip")


@pytest.mark.parametrize("name", [d for d in DEMOS if d not in TCGEN05_DEMOS])
def test_demo_assembles_for_sm_90a(name):
    """The demos without tcgen05 — the asynchronous copies and the clusters among them — assemble natively for the
    H200's target (``sm_90a``: TMA, multicast, ``mapa``, ``barrier.cluster``)."""
    r = nvcc_compile(_res(demo_source(name)).cuda, "sm_90a")
    assert r.ok, r.log
    assert r.cubin and len(r.cubin) > 100


@pytest.mark.parametrize("name", TCGEN05_DEMOS)
def test_tcgen05_demo_does_not_assemble_for_sm_90_natively_but_emulated_does(name):
    res = _res(demo_source(name))
    bad = nvcc_compile(res.cuda, "sm_90")
    assert not bad.ok and "not supported" in bad.log
    for arch in ("sm_90", "sm_100a"):
        r = nvcc_compile(res.cuda_emulated, arch)
        assert r.ok, r.log


def test_fallback_demo_assembles_for_sm_90():
    assert nvcc_compile(_res(demo_source("fallback_demo")).cuda, "sm_90").ok


def _matrix_source():
    """One kernel holding st+ld of every legal .32x32b num, fp32 and fp16, offset 0 and 3 columns."""
    lines = ["kernel matrix threads=128", "tmem T: float32[128, 512]", "tmem H: float16[128, 256] at T + 0"]
    ops = []
    for num in (1, 2, 4, 8, 16, 32, 64, 128):
        lines.append(f"local r{num}: float32[128, {num}] @ S[(128, {num}) : (1@tid_in_wg, 1)]")
        lines.append(f"local h{num}: float16[128, {2 * num}] @ S[(128, {2 * num}) : (1@tid_in_wg, 1)]")
        off = 3 if num <= 64 else 0
        ops += [f"wg.copy_async T[:, {off}:{off + num}] <- r{num}", "wait st",
                f"wg.copy_async r{num} <- T[:, {off}:{off + num}]", "wait ld",
                f"wg.copy_async H[:, {2 * off}:{2 * off + 2 * num}] <- h{num}", "wait st",
                f"wg.copy_async h{num} <- H[:, {2 * off}:{2 * off + 2 * num}]", "wait ld"]
    return "\n".join(lines + ops)


def test_every_32x32b_num_assembles():
    res = _res(_matrix_source())
    for num in (1, 2, 4, 8, 16, 32, 64, 128):
        assert f"tcgen05.ld.sync.aligned.32x32b.x{num}.b32" in res.cuda
        assert f"tcgen05.st.sync.aligned.32x32b.x{num}.b32" in res.cuda
    r = nvcc_compile(res.cuda, "sm_100a", timeout=300)
    assert r.ok, r.log


# ----------------------------------------------------------------------------- the copy family (issue 4)
def _copy_family_sources():
    """Every cell of the copy-variant matrices (tests/cells.py), one kernel each, as CUDA sources."""
    import re

    from cells import (
        FALLBACK_CASES,
        GMEM_SMEM_CASES,
        LDSTMATRIX_CASES,
        REG_CASES,
        REG_SHARED_CASES,
        fallback_cell,
        gmem_smem_cell,
        golden_cells,
        reg_cell,
        smem_cell,
    )

    cells = ([gmem_smem_cell(c) for c in GMEM_SMEM_CASES] + [fallback_cell(*c) for c in FALLBACK_CASES]
             + [reg_cell(*c[:6]) for c in REG_CASES] + [smem_cell(*c[:7]) for c in REG_SHARED_CASES]
             + [smem_cell(*c[:7]) for c in LDSTMATRIX_CASES] + list(golden_cells().values()))
    out = []
    for i, src in enumerate(cells):
        res = _res(re.sub(r"^kernel \w+", f"kernel copy_k{i}", src.strip(), count=1, flags=re.MULTILINE))
        assert not res.cuda_emulated  # no tcgen05 in the copy family
        out.append(res)
    return out


def _one_translation_unit(results):
    """The kernels of many sources behind one preamble, so ptxas runs once per target."""
    head = results[0].cuda[: results[0].cuda.index('extern "C"')]
    return head + "\n".join(r.cuda[r.cuda.index('extern "C"'):] for r in results)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_every_copy_family_cell_assembles(arch):
    results = _copy_family_sources()
    text = _one_translation_unit(results)
    for chain in ("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", "stmatrix.sync.aligned.m8n8.x2.shared.b16",
                  "ldmatrix.sync.aligned.m8n8.x1.shared.b16", "ld.global.v4.u32", "st.shared.v2.u32",
                  "ld.shared.u16", "st.global.u8"):
        assert chain in text, chain
    r = nvcc_compile(text, arch, timeout=600)
    assert r.ok, r.log
    assert text.count('extern "C" __global__') == len(results) > 60


# ----------------------------------------------------------------------------- copy_async -> ldgsts (issue 13)
@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_every_ldgsts_cell_assembles(arch):
    """Every gmem_smem case whose vector is 4, 8 or 16 bytes, as copy_async: cp.async.cg 16 B and .ca 8/4 B
    (unrolled, in a serial loop, through a swizzle), one translation unit per target."""
    import re

    from cells import GMEM_SMEM_CASES, ldgsts_cell

    results = []
    for i, case in enumerate(GMEM_SMEM_CASES + [GMEM_SMEM_CASES[0]._replace(scope="thread", threads=1, rows=16,
                                                                          cols=32, dtype="float32")]):
        try:
            res = _res(re.sub(r"^kernel \w+", f"kernel ldg_k{i}", ldgsts_cell(case).strip(), count=1,
                              flags=re.MULTILINE))
        except DispatchError:  # no 4-byte run: declined (tests/unit/lower/test_ldgsts.py)
            continue
        results.append(res)
    text = _one_translation_unit(results)
    for form in ("cp.async.cg.shared.global [%0], [%1], 16;", "cp.async.ca.shared.global [%0], [%1], 8;",
                 "cp.async.ca.shared.global [%0], [%1], 4;"):
        assert form in text, form
    assert "for (int i = 0; i < 128; ++i)" in text  # the serial loop of the one-thread case
    r = nvcc_compile(text, arch, timeout=600)
    assert r.ok, r.log
    assert len(results) >= 18


def _tma_kernel_source():
    """A G2S (128B swizzle, L2 hint) and an S2G through the real TMA variants; the mbarrier object is declared
    here, below the language (tests/unit/lower/test_async_sync.py assembles the language's statements)."""
    from helpers import copy_async_op, region, tma_buffers

    from tilemagic.layout import row_major
    from tilemagic.layout.swizzle import ComposeLayout

    gbuf, sbuf, mbar = tma_buffers()
    A, B = gbuf("A", "float16", (256, 128)), gbuf("B", "float16", (256, 128))
    S = sbuf("S", "float16", (64, 64), ComposeLayout(3, 3, 3, row_major((64, 64)), bare=True))
    ops = [copy_async_op(region(S), region(A, (64, 0), (64, 64)), mbar=mbar(), cache_hint="evict_first"),
           copy_async_op(region(B, (0, 64), (64, 64)), region(S), line=2)]
    return _lowered_tma_source(ops, A, B, S)


def _lowered_tma_source(ops, *bufs, cluster: int = 1) -> str:
    """The CUDA of ``ops`` lowered through the real variants, with the mbarrier object ``full`` declared in it and,
    for a cluster, ``__cluster_dims__`` given to the kernel here (the kernel line's ``cluster=`` is the language's)."""
    from helpers import lower_ops

    from tilemagic.codegen.cuda import generate

    kernel, _ = lower_ops(ops, *bufs, cluster=cluster)
    text = generate(kernel, arch="sm_90a").text
    if cluster > 1 and "__cluster_dims__" not in text:
        text = text.replace("__global__ ", f"__global__ __cluster_dims__({cluster}, 1, 1) ", 1)
        assert f"__cluster_dims__({cluster}, 1, 1)" in text
    head = text.index("\n", text.index('extern "C"')) + 1
    return text[:head] + "__shared__ __align__(8) uint64_t full[1];\n" + text[head:]


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_tma_copies_assemble(arch):
    r = nvcc_compile(_tma_kernel_source(), arch)
    assert r.ok, r.log


def test_tma_copies_need_sm_90():
    assert not nvcc_compile(_tma_kernel_source(), "sm_80").ok


def _tma_multicast_reduce_source():
    """A multicast G2S (cta_mask 0b11, and 0b10 with an L2 hint) and a reduction S2G (.add on float16, .max on
    int32) through the real TMA variants, in a kernel given ``__cluster_dims__(2, 1, 1)`` here (the kernel line's
    ``cluster=`` is the language's part; ``.multicast::cluster`` needs the kernel to be a cluster kernel)."""
    from helpers import copy_async_op, region, tma_buffers

    gbuf, sbuf, mbar = tma_buffers()
    A, B = gbuf("A", "float16", (256, 64)), gbuf("B", "float16", (256, 64))
    C, D = gbuf("C", "int32", (64, 32)), sbuf("D", "int32", (32, 32))
    S = sbuf("S", "float16", (64, 64))
    ops = [copy_async_op(region(S), region(A, (0, 0), (64, 64)), mbar=mbar(), cta_mask=0b11),
           copy_async_op(region(S), region(A, (224, 0), (64, 64)), mbar=mbar(), cta_mask=0b10,
                         cache_hint="evict_last", line=2),
           copy_async_op(region(B, (0, 0), (64, 64)), region(S), use_tma_reduce="add", line=3),
           copy_async_op(region(C, (48, 0), (32, 32)), region(D), use_tma_reduce="max", line=4)]
    text = _lowered_tma_source(ops, A, B, C, D, S, cluster=2)
    assert text.count(".multicast::cluster") == 2 and "cp.reduce.async.bulk.tensor.2d" in text
    return text


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_tma_multicast_and_reductions_assemble(arch):
    r = nvcc_compile(_tma_multicast_reduce_source(), arch)
    assert r.ok, r.log


def test_the_reduce_form_takes_no_noftz():
    """``.add.noftz`` belongs to the non-tensor ``cp.reduce.async.bulk`` (f16/bf16); the tensor form takes the
    element type from the map and ptxas rejects the modifier there — which is why the generated chain has none."""
    bad = _tma_multicast_reduce_source().replace(".add.tile.bulk_group", ".add.noftz.tile.bulk_group")
    r = nvcc_compile(bad, "sm_90a")
    assert not r.ok and "noftz" in r.log
