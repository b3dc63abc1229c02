"""The TVMScript export as TVM sees it: it parses, its layouts are TVM's, and ``--compare tvm`` works."""

import pytest
from cells import fallback_cell, reg_cell, roundtrip_cell
from tvm_cases import FRAG_SPECS, spec_cell
from helpers import demo_params

import tilemagic
from tilemagic.cli import DEMOS, demo_source
from tilemagic.pipeline import compare_source_with_tvm
from tilemagic.export.tvmscript import layout_text, tvmscript_from_source
from tilemagic.layout import TileLayout, tcgen05_atom_layout, tmem_datapath_layout

pytestmark = pytest.mark.tvm  # the TVM oracle tests (fixture `tvm` in tests/conftest.py)


def _tvm_layout(tvm, layout):
    """The same layout built with TVM's own API (``S[...]`` with ``n @ Axis``)."""
    from tvm.tirx.layout import Axis, S
    from tvm.tirx.layout import TileLayout as TvmLayout

    def stride(it):
        return it.stride if it.axis == "m" else it.stride @ Axis.get(it.axis)

    ext = tuple(it.extent for it in layout.shard)
    spec = S[ext:tuple(stride(it) for it in layout.shard)] if len(ext) > 1 else S[ext[0]:stride(layout.shard[0])]
    for axis, v in layout.offset:
        spec = spec + (v if axis == "m" else v @ Axis.get(axis))
    return TvmLayout(spec)


@pytest.mark.parametrize("layout", [
    TileLayout.from_spec((128, 8), [(1, "tid_in_wg"), (1, "m")]),
    TileLayout.from_spec((4, 6), [(1, "m"), (4, "m")], [(3, "m")]),
    TileLayout.from_spec((8, 4, 2, 2), [(4, "laneid"), (1, "laneid"), (2, "m"), (1, "m")]),
    tmem_datapath_layout("F", 64, 32, 1),
    tmem_datapath_layout("B", 64, 64),
    tcgen05_atom_layout("16x256b", (128, 16), 16),
    tcgen05_atom_layout("32x32b", (64, 32), 32),
], ids=["wg-rows", "offset", "laneid", "F1", "B", "frag16x256b-f16", "frag32x32b-B"])
def test_layout_text_parses_to_the_same_tvm_layout(tvm, layout):
    src = f"""
@T.prim_func
def f():
    T.device_entry()
    T.cta_id([1])
    T.thread_id([128])
    a = T.alloc_local({tuple(it.extent for it in layout.shard)}, "float32", layout={layout_text(layout)})
"""
    printed = tvm.script.from_source(src).script()
    assert str(_tvm_layout(tvm, layout)) in printed


def test_tilemagic_factories_print_as_tvms(tvm):
    """Our datapath and fragment factories equal TVM's, structurally (same TVMScript after canonicalize)."""
    from tvm.tirx import layout as tl

    for args in (("D", 128, 32), ("F", 64, 32, 0), ("F", 64, 16, 1), ("B", 64, 64)):
        ours = _tvm_layout(tvm, tmem_datapath_layout(*args)).canonicalize()
        tvm.ir.assert_structural_equal(ours, tl.tmem_datapath_layout(*args).canonicalize())
    for shape, rc, dt in (("16x64b", (64, 8), "float32"), ("16x128b", (128, 16), "float16"),
                          ("16x256b", (64, 32), "bfloat16"), ("32x32b", (64, 32), "float32")):
        bits = 32 if dt == "float32" else 16
        with tvm.target.Target({"kind": "cuda", "arch": "sm_100a"}):  # canonicalize fuses thread axes per target
            ours = _tvm_layout(tvm, tcgen05_atom_layout(shape, rc, bits)).canonicalize()
            tvm.ir.assert_structural_equal(ours, tl.tcgen05_atom_layout(shape, rc, dt).canonicalize())


@pytest.mark.parametrize("source", demo_params(DEMOS, [demo_source(d) for d in DEMOS])
                         + [pytest.param(spec_cell(s), id=s["id"]) for s in FRAG_SPECS[::4]]
                         + [pytest.param(fallback_cell("cta", 1024, 8, 8), id="fallback-cta1024"),
                            pytest.param(reg_cell("S[(4, 32, 8) : (1@wid_in_wg, 1@laneid, 1)]", 128, 8, dtype="uint8"),
                                         id="reg-u8")])
def test_export_parses_in_tvm_with_both_tmem_bases(tvm, source):
    for base in ("shared", "const"):
        func = tvm.script.from_source(tvmscript_from_source(source, tmem_base=base).text)
        assert isinstance(func, tvm.tirx.PrimFunc)


@pytest.mark.parametrize("name", demo_params(DEMOS))
def test_compare_tvm_on_the_demos(tvm, name):
    res = tilemagic.tilecopy(demo_source(name), launch="off", compare="tvm", emit_warnings=False)
    cmp = res.tvm_comparison
    assert cmp.available and cmp.agrees, cmp.text()
    assert "== TVM comparison ==" in res.text() and "vs tilemagic: " in res.text()
    assert "tm-tvm-compare" in res.html() and "TVM LowerTIRx output" in res.html()
    # QA: the tilemagic and TVM columns ran together outside a notebook stylesheet (a saved .html report)
    assert ".tm-tvm-compare td,.tm-tvm-compare th{padding:" in cmp.html()
    assert cmp.tvm.cuda and "__global__" in cmp.tvm.cuda
    if name == "tmem_roundtrip":  # tvm.compile stops in MakePackedAPI on tmem_addr[0]: constant addresses
        assert "constant TMEM addresses" in cmp.tvm.cuda_note and "tmem_addr.source" in cmp.tvm.cuda_note


def test_compare_marks_differences(tvm):
    """A copy tilemagic lowers one way and TVM another is marked ≠ with both lines, and TVM says why."""
    cmp = tilemagic.tilecopy(reg_cell("S[(128, 1) : (1@tid_in_wg, 1)]", 128, 1), launch="off",
                             compare="tvm").tvm_comparison
    assert not cmp.agrees
    text = cmp.text()
    assert "≠ tilemagic: ld.global.u32 ×1" in text
    assert "TVM: store (one thread) ×128" in text
    assert "TVM with dispatch=vec_auto:" in text and "tail too short" in text
    assert "background:#fff8c5" in cmp.html()


def test_compare_a_cell_tilemagic_rejects(tvm):
    cmp = compare_source_with_tvm(roundtrip_cell("float32", 3), cuda=False)
    verdicts = [o.verdict for o in cmp.ops]
    assert verdicts.count("both reject") == 1  # tcgen05.st of 3 columns: illegal .num on both sides


ASYNC_SYNC_CELL = """kernel k threads=128
global A: float16[128, 64] = arange
global B: float16[128, 64] = zeros
shared S: float16[64, 64]
mbarrier full
mbarrier empty count=4
if tx == 0: arrive full expect_tx=8192
if tx == 0: thread.copy_async S <- A[64:128, :] mbar=full cache_hint=evict_last dispatch=tma_auto
wait full phase 0
if laneid == 0: arrive empty
if warpid == 1 and laneid < 1: wait empty phase 0
commit_group
wait_group 0
fence.proxy.async
cta_sync
if tx == 0: thread.copy_async B[0:64, :] <- S dispatch=tma_auto
if tx == 0: bulk_commit_group
if tx == 0: bulk_wait_group 0 read
if warpid == 2: warp.copy B[64:128, :] <- A[0:64, :]
"""


def test_export_of_mbarriers_groups_fences_and_guards_parses_in_tvm(tvm):
    text = tvmscript_from_source(ASYNC_SYNC_CELL).text
    printed = tvm.script.from_source(text).script()
    # TVM's own printing of the calls: the mbarrier ops, the try_wait loop, the groups and the fences
    for want in ('"init", "", "shared", "b64"', '"arrive", "expect_tx"', "T.cuda.mbarrier_wait(",
                 'T.ptx.cp("async", "commit_group"', 'T.ptx.cp(0, "async", "wait_group"',
                 'T.ptx.fence("proxy", "async", "shared::cta"', 'T.ptx.fence("mbarrier_init", "release", "cluster"',
                 'T.ptx.cp(0, "async", "bulk", "wait_group", "read"', 'cache_hint="evict_last"', "mbar=",
                 "if warpid == 1 and laneid < 1:"):
        assert want in printed, want


def test_compare_tvm_agrees_on_guarded_copies(tvm):
    src = ("kernel k threads=64\nglobal A: float32[32] = arange\nglobal B: float32[32] = zeros\n"
           "shared S: float32[32]\nmbarrier ready count=32\nif warpid == 0: warp.copy S <- A\n"
           "if warpid == 0: arrive ready\nif warpid == 1: wait ready phase 0\nif warpid == 1: warp.copy B <- S\n"
           "check B == A")
    res = tilemagic.tilecopy(src, launch="off", compare="tvm", emit_warnings=False)
    assert res.tvm_comparison.agrees, res.tvm_comparison.text()
