"""The copy family of issue 4: gmem_smem, reg, ldstmatrix and fallback, dispatched together.

Every case runs the real pipeline (parse → check → dispatch → lower → simulate) on a cell from
tests/cells.py (the GPU and TVM-differential suites run the same cells) and checks which variant
won, the vector width / instruction it chose, and the round trip.  ``smem_cell`` also writes the
register tile straight to global memory through copy/reg, so the register contents an
``ldmatrix`` produced are checked against the layout independently of ``stmatrix``.
"""

import re
import warnings

import numpy as np
import pytest
from cells import (
    GMEM_SMEM_CASES,
    LDSTMATRIX_CASES,
    REG_SHARED_CASES,
    gmem_smem_cell,
    smem_cell,
)
from helpers import run

import tilemagic
from tilemagic.errors import DispatchError
from tilemagic.ir import nodes as ir
from tilemagic.widgets.placement import shared_writers


def nodes(res, kind):
    return [s for s in ir.walk(res.kernel.body) if isinstance(s, kind)]


# ----------------------------------------------------------------------------- gmem_smem
@pytest.mark.parametrize("case", GMEM_SMEM_CASES, ids=[c.id for c in GMEM_SMEM_CASES])
def test_gmem_smem_vector_width_and_round_trip(case):
    res = run(gmem_smem_cell(case))
    assert [d.chosen for d in res.dispatch] == ["gmem_smem", "gmem_smem"]
    t = {"thread": 1, "warp": 32, "wg": 128, "cta": case.threads}[case.scope]
    n = case.rows * case.cols
    assert f"[outer={n // (t * case.vec)}, threads={t}, vec={case.vec}]" in res.dispatch[0].summary
    moves = nodes(res, ir.VecMove)
    assert moves and all(m.elems == case.vec for m in moves)
    form = {16: "v4.u32", 8: "v2.u32", 4: "u32", 2: "u16", 1: "u8"}[case.vec * moves[0].dst.elem_bytes]
    assert f"ld.global.{form}" in res.cuda and f"st.shared.{form}" in res.cuda
    assert f'T.ptx["ld.shared.{form}"]' in res.ir
    assert res.launch.passed, res.launch.checks


def test_gmem_smem_outer_loop_is_serial_and_thread_split_is_tvm_order():
    """[outer, threads, vec]: thread t moves vectors f*threads + t (f = 0..outer-1) in a serial loop."""
    res = run(gmem_smem_cell(GMEM_SMEM_CASES[0]))  # warp, 8x64 f16, vec 8, outer 2
    (grid,) = [s for s in nodes(res, ir.Grid)][:1]
    assert grid.extents == (2,) and isinstance(grid.body, ir.VecMove)
    assert "for i in T.grid(2):" in res.ir
    assert 'A.access_ptr("r", offset=i * 256 + laneid * 8)' in res.ir


def test_gmem_smem_swizzled_address_is_the_xor_of_the_tile_address():
    res = run(gmem_smem_cell(GMEM_SMEM_CASES[2]))  # wg, 8x64 f16, swizzle(3, 3, 3)
    assert "offset=(tid_in_wg * 4) ^ (tid_in_wg * 4 // 64 % 8 * 8)" in res.ir  # the XOR's sides bracketed
    assert "S + ((tid_in_wg * 4) ^ (tid_in_wg * 4 / 64 % 8 * 8))" in res.cuda  # (bracketed in the CUDA too)
    assert "swizzle chunk caps at 8 elements" in res.dispatch[0].summary


@pytest.mark.parametrize("scope,threads,rows,cols", [("warp", 32, 4, 6), ("wg", 128, 1, 8), ("cta", 64, 3, 7)])
def test_gmem_smem_declines_with_tvms_reason(scope, threads, rows, cols):
    src = gmem_smem_cell(GMEM_SMEM_CASES[0]._replace(scope=scope, threads=threads, rows=rows, cols=cols,
                                                       dtype="float32"))
    res = run(src)
    t = {"warp": 32, "wg": 128, "cta": threads}[scope]
    rec = res.dispatch[0]
    assert rec.chosen == "fallback"
    table = rec.table()
    assert f"divides_thread_cnt: region size {rows * cols} not divisible by thread_cnt={t}" in table
    assert res.launch.passed


# ----------------------------------------------------------------------------- reg with a shared side
@pytest.mark.parametrize("layout,rows,cols,scope,threads,dtype,smem,summary", REG_SHARED_CASES,
                         ids=[f"reg-smem{i}" for i in range(len(REG_SHARED_CASES))])
def test_reg_shared_side(layout, rows, cols, scope, threads, dtype, smem, summary):
    res = run(smem_cell(layout, rows, cols, scope, threads, dtype, smem))
    assert [d.chosen for d in res.dispatch] == ["gmem_smem", "reg", "reg", "reg", "gmem_smem"]
    assert summary in res.dispatch[1].summary
    ld = next(c for c in res.dispatch[1].candidates if c.variant == "ldstmatrix")
    assert not ld.chosen and (ld.declined or not ld.accepted)  # ldstmatrix was tried first and gave way
    assert res.launch.passed, res.launch.checks


# ----------------------------------------------------------------------------- ldstmatrix
@pytest.mark.parametrize("layout,rows,cols,scope,threads,dtype,smem,chain,n", LDSTMATRIX_CASES,
                         ids=[f"ldst{i}" for i in range(len(LDSTMATRIX_CASES))])
def test_ldstmatrix_matrix(layout, rows, cols, scope, threads, dtype, smem, chain, n):
    res = run(smem_cell(layout, rows, cols, scope, threads, dtype, smem))
    assert [d.chosen for d in res.dispatch] == ["gmem_smem", "ldstmatrix", "reg", "ldstmatrix", "gmem_smem"]
    ld, st = res.dispatch[1], res.dispatch[3]
    assert f"{n} × {chain}" in ld.summary
    assert f"{n} × {chain.replace('ldmatrix', 'stmatrix')}" in st.summary
    ops = nodes(res, ir.LdStMatrix)
    assert len(ops) == 2 * n or (len(ops) == 2 and n > 16)
    assert chain in res.cuda and chain.replace("ldmatrix", "stmatrix") in res.cuda
    assert res.launch.passed, res.launch.checks  # B: registers vs layout (via reg); C: stmatrix


def _decline(layout, rows, cols, dtype, smem="", scope="warp", threads=32, **kw):
    res = run(smem_cell(layout, rows, cols, scope, threads, dtype, smem), **kw)
    rec = res.dispatch[1]
    cand = next(c for c in rec.candidates if c.variant == "ldstmatrix")
    assert rec.chosen == "reg" and res.launch.passed
    return cand, rec.table()


MMA_A = "S[(2, 8, 2, 4, 2) : (2, 4@laneid, 4, 1@laneid, 1)]"


def test_ldstmatrix_declines_so_reg_takes_the_copy():
    c, table = _decline(MMA_A, 16, 16, "float32")
    assert c.declined.startswith("ldmatrix/stmatrix move 16-bit elements (.b16); a is float32")
    assert "emitter declined: ldmatrix/stmatrix move 16-bit elements" in table
    c, _ = _decline("S[(32, 8) : (1@laneid, 1)]", 32, 8, "float16")
    assert "do not hold an m8n8 fragment" in c.declined
    c, _ = _decline(MMA_A, 16, 16, "float16", "swizzle(2, 3, 3)")
    assert "swizzle per_element=2 < 3 incompatible with .b16 ldmatrix/stmatrix" in c.declined
    c, _ = _decline("S[(2, 8, 2, 4, 2) : (1, 4@laneid, 4, 1@laneid, 2)]", 16, 16, "float16")
    assert "do not hold an m8n8 fragment" in c.declined  # a register pairs rows 0 and 8, not two columns
    c, _ = _decline(MMA_A + " + 1", 16, 16, "float16")  # registers start at an odd slot
    assert "register pairs (2k, 2k+1)" in c.declined
    c, _ = _decline("S[(16, 16) : (1@laneid, 1)]", 16, 16, "float16", scope="warp")
    assert "R thread section total 16 not divisible by 32" in c.declined


def test_ldstmatrix_declines_rows_that_are_not_16_byte_aligned():
    src = """
kernel k threads=32
global A: float16[16, 24]
global B: float16[16, 16]
shared S: float16[16, 24]
local  a: float16[16, 16] @ S[(2, 8, 2, 4, 2) : (2, 4@laneid, 4, 1@laneid, 1)]
warp.copy S <- A
cta_sync
warp.copy a <- S[:, 4:20]
warp.copy B <- a
check B == A[:, 4:20]
"""
    res = run(src)
    c = next(c for c in res.dispatch[1].candidates if c.variant == "ldstmatrix")
    assert res.dispatch[1].chosen == "reg" and "not 16-byte aligned" in c.declined
    assert res.launch.passed


def test_stmatrix_needs_sm_90_and_ldmatrix_does_not():
    res = run(smem_cell(*LDSTMATRIX_CASES[0][:7]), arch="sm_80")
    ld, st = res.dispatch[1], res.dispatch[3]
    assert ld.chosen == "ldstmatrix" and st.chosen == "reg"
    cand = next(c for c in st.candidates if c.variant == "ldstmatrix")
    assert "sm_version: st direction needs sm_90 or newer; the target is sm_80" in cand.reasons
    assert res.launch.passed


def test_ldstmatrix_is_tried_before_reg_and_thread_scope_is_not_a_warp():
    res = run(smem_cell(*LDSTMATRIX_CASES[0][:7]))
    order = [c.variant for c in res.dispatch[1].candidates]
    assert order == ["gmem_smem", "ldstmatrix", "reg", "fallback"]
    src = smem_cell("S[(16, 16) : (16, 1)]", 16, 16, "thread", 1, "float16")
    res = run(src)
    c = next(c for c in res.dispatch[1].candidates if c.variant == "ldstmatrix")
    assert "exec_scope: unsupported exec_scope thread (needs warp or warpgroup or cta)" in c.reasons
    assert res.dispatch[1].chosen == "reg" and res.launch.passed


# ----------------------------------------------------------------------------- forced variants
def test_forced_variant_narrows_but_still_runs_predicates():
    base = smem_cell(*LDSTMATRIX_CASES[0][:7])
    res = run(base.replace("warp.copy a <- S", "warp.copy a <- S dispatch=reg"))
    rec = res.dispatch[1]
    assert rec.chosen == "reg" and rec.forced == "reg"
    assert [c.variant for c in rec.candidates] == ["reg"]
    assert "dispatch=reg]" in rec.table() and res.launch.passed
    # forcing a variant whose predicate fails is an error with its why-table
    with pytest.raises(DispatchError) as e:
        run(base.replace("warp.copy S <- A", "warp.copy S <- A dispatch=ldstmatrix"))
    assert "storage_scope: unsupported memory scopes src=global dst=shared" in e.value.details
    assert "\n  gmem_smem " not in e.value.details and e.value.line == 9
    # forcing the fallback on a copy gmem_smem would take: it runs, and warns
    with pytest.warns(UserWarning, match="copy/fallback"):
        res = tilemagic.tilecopy(base.replace("warp.copy S <- A", "warp.copy S <- A dispatch=fallback"),
                                 launch="sim")
    assert res.dispatch[0].chosen == "fallback" and res.launch.passed


def test_forced_emitter_decline_is_an_error():
    base = smem_cell(MMA_A, 16, 16, "warp", 32, "float32")
    with pytest.raises(DispatchError) as e:
        run(base.replace("warp.copy a <- S", "warp.copy a <- S dispatch=ldstmatrix"))
    assert "emitter declined: ldmatrix/stmatrix move 16-bit elements" in e.value.details


def test_unknown_forced_variant_is_located_and_lists_the_registered_names():
    src = gmem_smem_cell(GMEM_SMEM_CASES[0]).replace("warp.copy S <- A", "warp.copy S <- A dispatch=gmem")
    with pytest.raises(DispatchError) as e:
        run(src)
    err = e.value
    assert err.message == ("no variant named 'gmem' is registered for copy "
                           "(registered: gmem_smem, ldstmatrix, reg, fallback)")
    assert (err.line, err.col) == (6, 27)
    assert err.hint.startswith("did you mean dispatch=gmem_smem?")


# ----------------------------------------------------------------------------- the why-table
def test_why_table_for_every_op_lists_every_candidate_and_predicate():
    res = run(smem_cell(*LDSTMATRIX_CASES[0][:7]))
    assert len(res.dispatch) == 5
    for rec in res.dispatch:
        lines = rec.table().splitlines()
        assert lines[0].startswith(f"L{rec.line}: {rec.text}")
        assert lines[1].split() == ["variant", "prio", "verdict", "reason"]
        body = "\n".join(lines[2:])
        for name, prio in (("gmem_smem", 10), ("ldstmatrix", 10), ("reg", 10), ("fallback", 0)):
            assert re.search(rf"^  {name} +{prio} +(chosen|rejected|declined|not tried)", body, re.MULTILINE), name
        assert sum(c.chosen for c in rec.candidates) == 1
    # L11 (a <- S): gmem_smem rejected by one predicate, the others listed as ok; ldstmatrix chosen
    rec = res.dispatch[1]
    gs, ld = rec.candidates[0], rec.candidates[1]
    assert rec.why(gs) == [("storage_scope: unsupported memory scopes src=shared dst=local; allowed: "
                            "global->shared, shared->global"), "ok: validate_copy_op, exec_scope, divides_thread_cnt"]
    assert rec.why(ld) == [rec.summary, "ok: validate_copy_op, exec_scope, storage_scope, register_layout, sm_version"]
    assert rec.why(rec.candidates[2]) == ["an earlier candidate was chosen"]


def test_nothing_accepts_shows_the_same_table_in_the_error():
    src = """
kernel k threads=128
global A: float32[128, 8]
tmem T: float32[128, 8]
wg.copy T <- A
"""
    with pytest.raises(DispatchError) as e:
        run(src)
    details = e.value.details
    for name in ("gmem_smem", "ldstmatrix", "reg", "fallback"):
        assert f"\n  {name} " in details
    assert "storage_scope: unsupported memory scopes src=global dst=tmem" in details
    assert "TMEM is reached only through tcgen05.ld/st" in details
    assert "why-table" in e.value.render()


# ----------------------------------------------------------------------------- shared-tile writers
def test_shared_writers_follow_physical_layouts_and_stmatrix():
    res = tilemagic.tilecopy(smem_cell(*LDSTMATRIX_CASES[0][:7]), launch="off")
    by = {inf["buffer"].name: inf for inf in shared_writers(res.kernel)}
    t = by["U"]["writer"]  # stmatrix: element (r, c) of each 8x8 matrix came from lane 4*(r%8) + (c%8)//2
    r, c = np.meshgrid(np.arange(16), np.arange(16), indexing="ij")
    np.testing.assert_array_equal(t, 4 * (r % 8) + (c % 8) // 2)
    assert by["U"]["variants"] == ["copy/ldstmatrix"]
    res = tilemagic.tilecopy(gmem_smem_cell(GMEM_SMEM_CASES[14]), launch="off")  # column-major shared
    w = shared_writers(res.kernel)[0]["writer"]
    # vector f*32 + t of the row-major region order: element (r, c) -> lane (r*16 + c) % 32
    r, c = np.meshgrid(np.arange(8), np.arange(16), indexing="ij")
    np.testing.assert_array_equal(w, (r * 16 + c) % 32)


def test_fallback_warning_only_when_the_faster_variants_declined():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        tilemagic.tilecopy(gmem_smem_cell(GMEM_SMEM_CASES[0]), launch="sim")
    assert not [x for x in w if "copy/fallback" in str(x.message)]
