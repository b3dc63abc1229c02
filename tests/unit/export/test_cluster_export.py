"""The TVMScript export of cluster kernels, as TVM 0.27 TIRx writes them (``T.cta_id_in_cluster``,
``T.cuda.cluster_sync()``, rank expressions in regions, ``cta_mask=``, ``remote_cta_id=``, ``use_tma_reduce=``);
the text parses with the oracle (``apache-tvm 0.27.0.post1``) where it is installed."""

from __future__ import annotations

import pytest
from cells import cluster_halves_cell

from tilemagic.export.tvmscript import tvmscript_from_source

HALVES = cluster_halves_cell(tail="if cta_rank == 1: wg.copy B[0:128, 0:64] <- S\n")

EXCHANGE = """kernel exchange threads=128 cluster=2
global A: float32[2, 64, 32] = arange
global B: float32[2, 64, 32] = zeros
shared S: float32[64, 32]
shared P: float32[64, 32]
mbarrier got
wg.copy S <- A[cta_rank, 0:64, 0:32]
fence.proxy.async
cluster_sync
if tx == 0: arrive got expect_tx=8192
if tx == 0: thread.copy_async P <- S remote_cta_id=cta_rank^1 mbar=got
wait got phase 0
wg.copy B[cta_rank^1, 0:64, 0:32] <- P
if tx == 0: thread.copy_async A[0, 0:64, 0:32] <- S use_tma_reduce=add
if tx == 0: thread.copy_async S <- A[1, 0:64, 0:32] mbar=got cta_mask=0b11 dispatch=tma_auto
cluster_sync
"""


def _lines(text):
    return [ln.strip() for ln in text.splitlines()]


def test_cluster_kernel_binds_the_rank_and_launches_one_cluster():
    lines = _lines(tvmscript_from_source(HALVES).text)
    i = lines.index("cta_rank = T.cta_id_in_cluster([2])")
    assert lines[i + 1] == "T.cta_id([2])"
    assert lines.count("T.cuda.cluster_sync()") == 2 and "T.cuda.cta_sync()" not in lines
    assert ("Tx.copy_async(S[(64 * cta_rank):((64 * cta_rank) + 64), 0:64], "
            "A[(64 * cta_rank):((64 * cta_rank) + 64), 0:64], dispatch=\"tma_auto\", mbar=T.address_of(full[0]))"
            in lines)
    assert "Tx.wg.copy(B[(128 * cta_rank):((128 * cta_rank) + 128), 0:64], S[0:128, 0:64])" in lines
    j = lines.index("if cta_rank == 1:")
    assert lines[j + 1] == "Tx.wg.copy(B[0:128, 0:64], S[0:128, 0:64])"
    assert "T.ptx.mbarrier.arrive.expect_tx.shared.b64(T.address_of(full[0]), T.uint32(8192))" in lines


def test_the_cluster_options_as_tvm_spells_them():
    lines = _lines(tvmscript_from_source(EXCHANGE).text)
    assert "Tx.wg.copy(S[0:64, 0:32], A[cta_rank:cta_rank + 1, 0:64, 0:32])" in lines
    assert ("Tx.copy_async(P[0:64, 0:32], S[0:64, 0:32], remote_cta_id=(cta_rank ^ T.int32(1)), "
            "mbar=T.address_of(got[0]))") in lines
    assert "Tx.wg.copy(B[(cta_rank ^ 1):(cta_rank ^ 1) + 1, 0:64, 0:32], P[0:64, 0:32])" in lines
    assert 'Tx.copy_async(A[0:1, 0:64, 0:32], S[0:64, 0:32], use_tma_reduce="add")' in lines
    assert any(ln.endswith("mbar=T.address_of(got[0]), cta_mask=3)") for ln in lines)


def test_per_cta_expect_tx_is_written_per_rank():
    from tilemagic.export.tvmscript import _sync_lines
    from tilemagic.ir import nodes as ir
    from tilemagic.lower.program import ArriveItem
    from tilemagic.errors import Span

    bar = ir.Buffer("full", "shared", "uint64", (1,), None, mbar_count=1)
    item = ArriveItem(bar, None, True, Span(6, 1, 6, 2))
    out = _sync_lines(item, {"full": "full"}, {6: {0: 8192, 1: 16384}}, rank="cta_rank")
    assert out == ["# expect_tx=auto per receiving CTA (tilemagic): CTA 0: 8192 bytes, CTA 1: 16384 bytes",
                   "if cta_rank == 0:", "    T.ptx.mbarrier.arrive.expect_tx.shared.b64(T.address_of(full[0]), "
                   "T.uint32(8192))",
                   "if cta_rank == 1:", "    T.ptx.mbarrier.arrive.expect_tx.shared.b64(T.address_of(full[0]), "
                   "T.uint32(16384))"]


@pytest.mark.parametrize("src", [HALVES, EXCHANGE], ids=["halves", "exchange"])
def test_tvm_parses_the_exported_cluster_kernel(src):
    tvm = pytest.importorskip("tvm")
    func = tvm.script.from_source(tvmscript_from_source(src).text)
    assert func is not None
