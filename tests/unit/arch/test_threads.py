"""tilemagic.arch: thread axes defined once, read by every stage; arch imports nothing above it; wgid end to end."""

from __future__ import annotations

import ast
import pathlib
import warnings

import numpy as np
import pytest

import tilemagic
from tilemagic.arch import ptx, threads
from tilemagic.codegen.cuda import generate
from tilemagic.ir import nodes as ir
from tilemagic.ir.evaluate import thread_values
from tilemagic.ir.printer import print_ir
from tilemagic.lang import ast as lang_ast
from tilemagic.sim.interpreter import Simulator

PKG = pathlib.Path(tilemagic.__file__).parent
AXES = [a for a in threads.THREAD_AXES if a != "tx"]


def _kernel_using(axes, nthreads=256):
    """A kernel storing each thread coordinate of ``axes`` to a global buffer (one row per axis)."""
    out = ir.Buffer("O", "global", "int32", (len(axes), nthreads), None, per_thread=len(axes) * nthreads)
    body = tuple(ir.Store(out, (ir.Const(i), ir.ThreadVar("tx")), ir.ThreadVar(a)) for i, a in enumerate(axes))
    return ir.Kernel("k", nthreads, (out,), (), (), (), 0, None, ir.Seq(body)), out


def test_every_axis_is_a_closed_form_of_tx():
    tid = np.arange(1024)
    for axis, (sub, scope) in threads.AXIS_SCOPES.items():
        v = thread_values(axis, tid)
        step = threads.THREADS_PER[sub]
        assert np.array_equal(v, (tid // step) % (threads.THREADS_PER[scope] // step) if scope != "cta" else tid // step)
    assert threads.SCOPE_TID == {"warp": "laneid", "warpgroup": "tid_in_wg", "cta": "tx"}
    assert threads.AXIS_WEIGHT["wgid"] == 128 and threads.AXIS_WEIGHT["wid_in_wg"] == 32


@pytest.mark.parametrize("axis", AXES)
def test_printer_codegen_evaluator_and_simulator_agree_on_each_axis(axis):
    """The IR's and the CUDA's definition of an axis, evaluated as Python, equal the evaluator's values,
    and the simulator stores those values: one table, four readers."""
    k, out = _kernel_using([axis])
    tid = np.arange(k.threads)
    want = thread_values(axis, tid)
    text, _ = print_ir(k)
    (line,) = [ln.strip() for ln in text.splitlines() if ln.strip().startswith(f"{axis} = ")]
    assert np.array_equal(eval(line.split(" = ", 1)[1], {"tx": tid}), want)
    cuda = generate(k).text
    (cline,) = [ln.strip() for ln in cuda.splitlines() if ln.strip().startswith(f"const int {axis} = ")]
    rhs = cline.split(" = ", 1)[1].rstrip(";").replace("threadIdx.x", "tx").replace("/", "//")
    assert np.array_equal(eval(rhs, {"tx": tid}), want)
    got = Simulator(k, {"O": np.zeros(out.shape, np.int32)}).run()["O"].view(np.int32)
    assert np.array_equal(got, want)


def test_language_accepts_exactly_the_arch_axes():
    assert set(lang_ast.AXES) == set(threads.THREAD_AXES) | set(threads.MEMORY_AXES)


def test_arch_imports_nothing_above_it():
    for f in (PKG / "arch").glob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.level == 1 or node.module == "errors", f"{f.name} imports ..{node.module}"
            elif isinstance(node, ast.Import):
                assert all(not a.name.startswith("tilemagic") for a in node.names), f.name


def _tables(tree):
    """Tuple/list/set/dict literals naming three or more thread axes, or any PTX vector form (``v4.u32``)."""
    vec = {f for f in ptx.PTX_FORM.values() if f.startswith("v")}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
            elts = [*node.keys, *node.values] if isinstance(node, ast.Dict) else node.elts
            found = {e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            if len(found & set(threads.THREAD_AXES)) >= 3 or found & vec:
                yield node.lineno, sorted(found)


def test_thread_axes_and_vector_forms_are_tabled_in_arch_only():
    """Adding a thread axis or a PTX vector form touches ``arch/`` only: no other module keeps a
    table of them (the six thread-axis tables and three vector-form tables this replaced)."""
    bad = []
    for f in PKG.rglob("*.py"):
        parts = f.relative_to(PKG).parts
        if parts[0] in ("arch", "widgets"):  # widgets/: reworked separately (the heatmap split)
            continue
        tree = ast.parse(f.read_text())
        bad += [(str(f.relative_to(PKG)), *hit) for hit in _tables(tree)]
    assert not bad


WGID_CELL = """kernel k threads=256
global A: float32[128, 2, 4] = arange
global B: float32[128, 2, 4]
local a: float32[128, 2, 4] @ S[(128, 2, 4) : (1@tid_in_wg, 1@wgid, 1)]
cta.copy a <- A
cta.copy B <- a
check B == A
"""


def test_wgid_layout_end_to_end_through_the_simulator():
    """``wgid`` (the warpgroup in the CTA) parses, checks, lowers and runs: element (r, g, c) lives in
    register c of thread g * 128 + r."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = tilemagic.tilecopy(WGID_CELL, launch="sim")
    assert res.launch.passed
    A = np.arange(128 * 2 * 4, dtype=np.float32).reshape(128, 2, 4)
    sim = Simulator(res.kernel, {"A": A, "B": np.zeros_like(A)})
    sim.run()
    regs = sim.local["a"].view(np.float32)  # (threads, registers)
    for g in range(2):
        assert np.array_equal(regs[g * 128: (g + 1) * 128], A[:, g, :])


def test_wgid_needs_the_cta_scope():
    with pytest.raises(tilemagic.TileMagicError, match="wgid"):
        tilemagic.tilecopy(WGID_CELL.replace("cta.copy", "wg.copy").replace("threads=256", "threads=128"),
                           launch="off")
