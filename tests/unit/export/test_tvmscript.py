"""The TVMScript exporter, the normalised instruction lists and ``--export``/``--compare`` without TVM.

(That TVM parses and lowers every export is tested in tests/tvm/, marker ``tvm``.)
"""

import builtins
import subprocess
import sys

import pytest
from cells import fallback_cell, roundtrip_cell

import tilemagic
from tilemagic.export.instructions import (
    Instr,
    summary_lines,
    tvm_instructions,
    vector_bytes,
)
from tilemagic.export.tvm_compare import (
    TVM_MISSING,
    condense_tvm_error,
)
from tilemagic.export.tvmscript import layout_text, tvmscript_from_source
from tilemagic.layout import TileLayout, tcgen05_atom_layout
from tilemagic.options import parse as parse_options
from tilemagic.pipeline import compare_source_with_tvm


def _lines(text):
    return [ln.strip() for ln in text.splitlines()]


def test_tmem_buffers_get_their_column_and_data_path():
    src = """
kernel k threads=128
tmem T: float32[128, 32]
tmem lower: float32[64, 32] @ datapath(F, sub_slab=0) at T
tmem upper: float32[64, 16] @ datapath(F, sub_slab=1) at T + 16
tmem acc: float32[64, 64] @ datapath(B)
tmem W: float32[128, 8] @ S[(128, 8) : (1@TLane, 1@TCol)] + 4@TCol at T
local lo: float32[64, 16] @ frag(16x64b)
local f: float32[64, 64] @ frag(32x32b)
wg.copy_async lo <- upper
wg.copy_async f <- acc
"""
    lines = _lines(tvmscript_from_source(src).text)
    assert ('T_ = T.decl_buffer((128, 32), "float32", scope="tmem", allocated_addr=tmem_addr[0], '
            'layout=tvm.tirx.layout.tmem_datapath_layout("D", 128, 32))') in lines
    assert ('lower = T.decl_buffer((64, 32), "float32", scope="tmem", allocated_addr=tmem_addr[0], '
            'layout=tvm.tirx.layout.tmem_datapath_layout("F", 64, 32))  # at T + 0') in lines
    assert ('upper = T.decl_buffer((64, 16), "float32", scope="tmem", allocated_addr=tmem_addr[0] + 16, '
            'layout=tvm.tirx.layout.tmem_datapath_layout("F", 64, 16, sub_slab=1))  # at T + 16') in lines
    # acc is allocated after T (32 columns), B spans N/2 = 32 columns
    assert ('acc = T.decl_buffer((64, 64), "float32", scope="tmem", allocated_addr=tmem_addr[0] + 32, '
            'layout=tvm.tirx.layout.tmem_datapath_layout("B", 64, 64))') in lines
    assert ('W = T.decl_buffer((128, 8), "float32", scope="tmem", allocated_addr=tmem_addr[0], '
            'layout=T.TileLayout(T.S[(128, 8):(1 @ Axis.TLane, 1 @ Axis.TCol)] + 4 @ Axis.TCol))  # at T + 0') in lines
    assert 'lo = T.alloc_tcgen05_ldst_frag("16x64b", (64, 16), "float32")' in lines
    assert 'f = T.alloc_tcgen05_ldst_frag("32x32b", (64, 64), "float32")' in lines
    assert "Tx.wg.copy_async(lo[0:64, 0:16], upper[0:64, 0:16])" in lines
    assert ("T.ptx.tcgen05.alloc.cta_group__1.sync.aligned.shared__cta.b32(T.address_of(tmem_addr), T.uint32(64))"
            in lines)
    assert "T.ptx.tcgen05.dealloc.cta_group__1.sync.aligned.b32(tmem_addr[0], T.uint32(64))" in lines


def test_const_tmem_base_writes_column_numbers():
    text = tvmscript_from_source(roundtrip_cell("float32", 8, tmem_cols=32, alias=8), tmem_base="const").text
    assert 'V = T.decl_buffer((128, 8), "float32", scope="tmem", allocated_addr=8,' in text
    assert "TMEMPool convention" in text
    with pytest.raises(ValueError, match="tmem_base"):
        tvmscript_from_source(roundtrip_cell("float32", 8), tmem_base="stack")


def test_names_that_shadow_tvmscript_are_renamed():
    src = """
kernel T threads=32
global Tx: float32[4, 6]
global Axis: float32[4, 6]
shared tvm: float32[4, 6]
warp.copy tvm <- Tx
cta_sync
warp.copy Axis <- tvm
"""
    exp = tvmscript_from_source(src)
    assert exp.func_name == "T_"
    assert exp.names == {"Tx": "Tx_", "Axis": "Axis_", "tvm": "tvm_"}
    assert "def T_(Tx__ptr: T.handle, Axis__ptr: T.handle):" in exp.text
    assert "Tx.warp.copy(tvm_[0:4, 0:6], Tx_[0:4, 0:6])" in _lines(exp.text)
    assert "# renamed: Tx -> Tx_ (would shadow a TVMScript name)" in exp.text


@pytest.mark.parametrize("scope, threads, ns, ids", [
    ("thread", 1, "Tx.copy", ["T.cta_id([1])", "T.thread_id([1])"]),
    ("warp", 32, "Tx.warp.copy", ["T.cta_id([1])", "T.warp_id([1])", "T.lane_id([32])", "T.thread_id([32])"]),
    ("wg", 128, "Tx.wg.copy", ["T.cta_id([1])", "T.warpgroup_id([1])", "T.warp_id_in_wg([4])",
                               "T.thread_id_in_wg([128])", "T.warp_id([4])", "T.lane_id([32])", "T.thread_id([128])"]),
    ("cta", 256, "Tx.cta.copy", ["T.cta_id([1])", "T.warpgroup_id([2])", "T.warp_id_in_wg([4])",
                                 "T.thread_id_in_wg([128])", "T.warp_id([8])", "T.lane_id([32])",
                                 "T.thread_id([256])"]),
])
def test_scope_ids_and_op_namespace(scope, threads, ns, ids):
    lines = _lines(tvmscript_from_source(fallback_cell(scope, threads, 4, 6)).text)
    start = lines.index("T.device_entry()") + 1
    assert lines[start:start + len(ids)] == ids
    assert f"{ns}(S[0:4, 0:6], A[0:4, 0:6])" in lines


def test_forced_dispatch_uses_tvm_names_and_op_lines_map_back():
    src = """
kernel r threads=128
global A: float32[128, 4]
local a: float32[128, 4] @ S[(128, 4) : (1@tid_in_wg, 1)]
wg.copy a <- A dispatch=reg
wg.copy A <- a dispatch=fallback
"""
    exp = tvmscript_from_source(src)
    lines = exp.text.splitlines()
    assert '    Tx.wg.copy(a[0:128, 0:4], A[0:128, 0:4], dispatch="vec_auto")' in lines
    assert "    # dispatch=reg: TVM 0.27 implements reg as its vec_auto variant" in lines
    assert '    Tx.wg.copy(A[0:128, 0:4], a[0:128, 0:4], dispatch="fallback")' in lines
    assert {lines[k - 1].strip()[:10] for k in exp.op_lines} == {"Tx.wg.copy"}
    assert sorted(exp.op_lines.values()) == [5, 6]


def test_layout_text_is_tvms_printed_form():
    assert layout_text(TileLayout.from_spec((4, 6), [(1, "m"), (4, "m")], [(3, "m")])) == \
        "T.TileLayout(T.S[(4, 6):(1, 4)] + 3)"
    assert layout_text(TileLayout.from_spec((8,), [(1, "m")])) == "T.TileLayout(T.S[8:1])"
    frag = tcgen05_atom_layout("16x64b", (64, 8), 32)
    text = layout_text(frag)
    assert text.startswith("T.TileLayout(T.S[(") and "@ Axis.laneid" in text and "@ Axis.wid_in_wg" in text


def test_export_is_deterministic_and_needs_no_lowering():
    src = """
kernel k threads=128
tmem acc: float32[64, 128] @ datapath(B)
local f: float32[64, 128] @ frag(16x256b)
wg.copy_async f <- acc
"""
    with pytest.raises(tilemagic.DispatchError):
        tilemagic.tilecopy(src, launch="off")
    a, b = tvmscript_from_source(src).text, tvmscript_from_source(src).text
    assert a == b and "Tx.wg.copy_async(f[0:64, 0:128], acc[0:64, 0:128])" in a


def test_result_tvmscript_and_export_option():
    res = tilemagic.tilecopy("%%tilecopy --export tvmscript\n" + roundtrip_cell("float16", 8), launch="off")
    assert res.export_text == res.tvmscript()
    assert res.sections[0].title == "TVMScript (TVM TIRx equivalent)"
    assert "== TVMScript (TVM TIRx equivalent) ==" in res.text()
    assert "Tx.wg.copy_async(T_[0:128, 0:8], a[0:128, 0:8])" in res.html()
    assert parse_options("--export tvmscript --compare tvm").compare == "tvm"
    with pytest.raises(ValueError, match="--export: invalid choice: .mlir."):
        tilemagic.tilecopy(roundtrip_cell("float16", 8), launch="off", export="mlir")


def test_compare_without_tvm_is_a_message_not_a_traceback(monkeypatch):
    real_import = builtins.__import__

    def no_tvm(name, *args, **kw):
        if name == "tvm" or name.startswith("tvm."):
            raise ImportError("No module named 'tvm'")
        return real_import(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_tvm)
    res = tilemagic.tilecopy(roundtrip_cell("float32", 4), launch="off", compare="tvm")
    assert not res.tvm_comparison.available
    assert res.tvm_comparison.text().startswith(TVM_MISSING)
    assert "== TVM comparison ==" in res.text()
    assert compare_source_with_tvm(roundtrip_cell("float32", 4)).message.startswith(TVM_MISSING)


def test_importing_tilemagic_does_not_import_tvm():
    code = "import sys, tilemagic, tilemagic.export.tvm_compare; print('tvm' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ----------------------------------------------------------------------------- instruction lists
_IMPL_16X = '''
@T.prim_func
def impl():
    f = T.Buffer((128, 16), scope="local")
    local_storage = T.decl_buffer((16,), data=f.data, scope="local")
    local_32b = local_storage.view("uint32")
    local_reg_base: T.int32 = 4
    for slab in range(2):
        reg_base: T.int32 = slab * 8
        tmem_addr = T.Buffer((1,), "uint32", scope="shared")
        T.ptx.tcgen05(T.cuda.get_tmem_addr(tmem_addr + T.uint32(8), slab * 16, 4), local_32b[local_reg_base + reg_base],\
 local_32b[local_reg_base + reg_base + 1], "st", "sync", "aligned", "16x256b", "x1", "", "b32", "")
'''


def test_tvm_instructions_expands_loops_and_resolves_views():
    ins = tvm_instructions(_IMPL_16X, {"f": "frag"})
    assert [i.line() for i in ins] == [
        "tcgen05.st.sync.aligned.16x256b.x1.b32 row=0 col=12 regs=frag[4:6]",
        "tcgen05.st.sync.aligned.16x256b.x1.b32 row=16 col=12 regs=frag[12:14]",
    ]


def test_tvm_instructions_scalar_register_guard_and_vectors():
    script = '''
@T.prim_func
def impl():
    tid = T.thread_id_in_wg()
    a = T.Buffer((128, 1), scope="local")
    local_storage = T.decl_scalar(T.float32, data=a.data, elem_offset=0, scope="local")
    tmem_addr = T.Buffer((1,), "uint32", scope="shared")
    T.ptx.tcgen05(local_storage, tmem_addr, "ld", "sync", "aligned", "32x32b", "x1", "", "b32", "")
    if tid == 0:
        for v, v_1 in T.grid(2, 3):
            S[v, v_1] = A[v, v_1]
    for f in range(2):
        T.ptx.ld(r[f], p, "", "", "", "global", "", "", "", "", "", "v4", "u32", "")
'''
    ins = tvm_instructions(script)
    assert summary_lines(ins) == ["tcgen05.ld.sync.aligned.32x32b.x1.b32 row=0 col=0 regs=a[0:1]",
                                  "store (one thread) ×6", "ld.global.v4.u32 ×2"]
    with pytest.raises(ValueError, match="non-constant extent"):
        tvm_instructions("@T.prim_func\ndef impl():\n    for i in range(n):\n        T.ptx.ld(x)\n")
    with pytest.raises(ValueError, match="too many"):
        tvm_instructions("@T.prim_func\ndef impl():\n    for i in range(100):\n        S[i] = A[i]\n", budget=50)


def test_vector_bytes_and_condensed_errors():
    assert [vector_bytes(c) for c in ("ld.global.v4.u32", "st.shared.u16", "ld.global.v8.u32", "store")] == \
        [16, 2, 32, None]
    assert Instr("store", guarded=True).line() == "store (one thread)"
    table = ("RuntimeError: TIRx schedule dispatch failed: op=tirx.tile.copy target=cuda\n+---+\n"
             "| vec_auto (prio=10) | exception — ValueError: tail too short for vec_len 1 |\n"
             "|                    | opcall:                                             |\n"
             "| fallback (prio=0)  | rejected: x — why\n")
    assert condense_tvm_error(table).splitlines() == [
        "TIRx schedule dispatch failed: op=tirx.tile.copy target=cuda",
        "  vec_auto (prio=10): exception — ValueError: tail too short for vec_len 1",
        "  fallback (prio=0): rejected: x — why"]


def test_a_layout_the_export_cannot_write_is_a_located_error():
    from tilemagic.export.tvmscript import ExportError, export_tvmscript
    from tilemagic.lang import parse
    from tilemagic.lower.program import check

    class Swizzled(TileLayout):  # stands for a layout kind the exporter does not know (e.g. a swizzle)
        pass

    prog = parse("kernel k threads=32\nglobal A: float32[4, 6]\nshared S: float32[4, 6] @ S[4, 6]\nwarp.copy S <- A\n")
    tp = check(prog)
    lay = tp.buffers["S"].layout
    tp.buffers["S"].layout = Swizzled(lay.shard, lay.replica, lay.offset)
    with pytest.raises(ExportError, match="no form for the layout") as ei:
        export_tvmscript(prog, tp)
    assert ei.value.line == 3
