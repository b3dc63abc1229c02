"""A failing check fails the cell: the API, the magic, the command line and notebook CI agree.

``tilemagic.tilecopy`` raises a located :class:`tilemagic.CheckFailed` carrying the result; the
``%%tilecopy`` magic shows the report first and then raises it (IPython sends an ``error``); the
command line prints the report and the located error and exits 1; nbval and nbclient see the
failing cell.  ``--allow-fail`` (a flag, a keyword, a ``%config`` trait) keeps the report without
raising.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from IPython.utils.capture import capture_output
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

import tilemagic
from tilemagic.cli import main

ROOT = Path(tilemagic.__file__).resolve().parents[1]

# the warp copies rows 0:2 back only (B's rows 2:4 stay zeros), and a second check compares a wrong half
PARTIAL = """kernel partial threads=32
global A: float32[4, 6]
global B: float32[4, 6]
shared S: float32[4, 6]
warp.copy S <- A
cta_sync
warp.copy B[0:2, :] <- S[0:2, :]
check B[0:2, :] == A[0:2, :]
check B == A
check B[2:4, :] == A[0:2, :]
"""
GOOD = PARTIAL.replace("B[0:2, :] <- S[0:2, :]", "B <- S").replace("check B[2:4, :] == A[0:2, :]\n", "")
FAIL_LINE, FAIL_COL = 9, 1  # `check B == A`: the first failing check
MESSAGE = ("FAIL: 2 checks: B == A on line 9 (12 of 24 elements differ); B[2:4, :] == A[0:2, :] on line 10 "
           "(12 of 12 elements differ)")


def sim(src: str, **kw):
    kw.setdefault("launch", "sim")
    return tilemagic.tilecopy(src, emit_warnings=False, **kw)


# ----------------------------------------------------------------------------- the API
def test_api_raises_check_failed_located_at_the_first_failing_check():
    ns: dict = {}
    with pytest.raises(tilemagic.CheckFailed) as ei:
        sim(PARTIAL, out="r", namespace=ns)
    err = ei.value
    assert isinstance(err, tilemagic.TileMagicError)
    assert (err.line, err.col) == (FAIL_LINE, FAIL_COL) and err.message == MESSAGE
    text = err.render().splitlines()
    assert text[0] == f"tilecopy:{FAIL_LINE}:{FAIL_COL}: CheckFailed: {MESSAGE}"
    assert text[1:3] == ["  9 | check B == A", "    | ^^^^^^^^^^^^"]
    assert "--allow-fail" in err.hint
    res = err.result
    assert isinstance(res, tilemagic.TileCopyResult) and [c.passed for c in res.launch.checks] == [True, False, False]
    assert ns["r"] is res  # out= is stored before the error


def test_api_allow_fail_returns_the_result():
    res = sim(PARTIAL, allow_fail=True)
    assert not res.launch.passed and res.options.allow_fail
    res = sim("%%tilecopy --allow-fail\n" + PARTIAL)
    assert not res.launch.passed and res.options.allow_fail
    with pytest.raises(tilemagic.CheckFailed) as ei:  # the keyword wins over the line
        sim("%%tilecopy --allow-fail\n" + PARTIAL, allow_fail=False)
    assert ei.value.line == FAIL_LINE + 1  # the %%tilecopy line counts
    assert sim(GOOD).launch.passed
    assert sim(PARTIAL, launch="off").launch is None  # nothing ran: nothing failed


# ----------------------------------------------------------------------------- the magic
def test_magic_shows_the_report_then_fails_the_cell(ip):
    with capture_output() as cap:
        r = ip.run_cell("%%tilecopy --launch sim --view text\n" + PARTIAL)
    assert not r.success and isinstance(r.error_in_exec, tilemagic.CheckFailed)
    assert r.error_in_exec.result.launch.checks[1].mismatches == 12
    shown = "".join(o.data.get("text/plain", "") for o in cap.outputs)
    assert "check B == A: FAIL (12 of 24 elements differ" in shown  # the report came first
    err = cap.stdout + cap.stderr
    assert f"tilecopy:{FAIL_LINE + 1}:1: CheckFailed: FAIL: 2 checks: B == A on line {FAIL_LINE + 1}" in err
    assert "Traceback" not in err
    assert ip.run_cell("%%tilecopy --launch sim --view text\n" + GOOD).success


def test_magic_allow_fail_flag_and_trait(ip):
    with capture_output():
        r = ip.run_cell("%%tilecopy --launch sim --view text --allow-fail\n" + PARTIAL)
    assert r.success and not r.result.launch.passed
    ip.run_line_magic("config", "TileMagics.allow_fail = True")
    with capture_output():
        r = ip.run_cell("%%tilecopy --launch sim --view text\n" + PARTIAL)
        assert r.success and r.result.options.allow_fail
        r = ip.run_cell("%%tilecopy --launch sim --view text --no-allow-fail\n" + PARTIAL)
    assert isinstance(r.error_in_exec, tilemagic.CheckFailed)


# ----------------------------------------------------------------------------- the command line
def test_cli_agrees(tmp_path, capsys):
    f = tmp_path / "partial.tile"
    f.write_text(PARTIAL)
    assert main(["run", str(f), "--launch", "sim"]) == 1
    out, err = capsys.readouterr()
    assert "check B == A: FAIL (12 of 24 elements differ" in out  # the report
    assert "partial: sim (CPU simulator) — B[0:2, :] == A[0:2, :]: PASS, B == A: FAIL" in out
    assert f":{FAIL_LINE}:{FAIL_COL}: CheckFailed: {MESSAGE}" in err and "  9 | check B == A" in err
    assert main(["run", str(f), "--launch", "sim", "--allow-fail"]) == 1  # still exit 1, no error printed
    out, err = capsys.readouterr()
    assert "check B == A: FAIL" in out and "CheckFailed" not in err


# ----------------------------------------------------------------------------- notebook CI
def notebook(*cells: tuple[str, list[str]]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("%load_ext tilemagic")] + [
        nbformat.v4.new_code_cell(src, metadata={"tags": tags}) for src, tags in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


@pytest.fixture
def kernel_env(monkeypatch):
    """The notebook kernel imports this checkout's tilemagic."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))


def test_nbclient_sees_a_failing_check_and_honours_the_tag_and_allow_fail(kernel_env):
    cell = "%%tilecopy --launch sim --view text\n" + PARTIAL
    nb = notebook((cell, ["raises-exception"]), ("%%tilecopy --launch sim --view text --allow-fail\n" + PARTIAL, []),
                  (cell, []), ("after = 1", []))
    with pytest.raises(CellExecutionError, match="CheckFailed"):
        NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=False).execute()
    tagged, allowed, plain, after = nb.cells[1:]
    assert [o.output_type for o in tagged.outputs][-1] == "error" and tagged.outputs[-1].ename == "CheckFailed"
    assert any("FAIL (12 of 24" in o.get("data", {}).get("text/plain", "") for o in tagged.outputs)  # report first
    assert all(o.output_type != "error" for o in allowed.outputs)
    assert plain.outputs[-1].ename == "CheckFailed" and after.execution_count is None


def test_nbval_fails_the_untagged_failing_cell(kernel_env, tmp_path):
    cell = "%%tilecopy --launch sim --view text\n" + PARTIAL
    path = tmp_path / "checks.ipynb"
    good = "%%tilecopy --launch sim --view text\n" + GOOD
    nbformat.write(notebook((cell, ["raises-exception"]), (cell, []), (good, [])), path)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
                           "--nbval-lax", str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert "1 failed, 3 passed" in proc.stdout, proc.stdout[-3000:]
    assert "CheckFailed" in proc.stdout


def test_a_check_over_elements_the_kernel_never_wrote_says_so():
    import warnings as _w

    src = """kernel nw threads=32
global A: float32[32, 4]
global B: float32[32, 4]
global C: float32[32, 4]
warp.copy B[0:16, :] <- A[0:16, :]
warp.copy C[0:16, :] <- A[0:16, :]
check B == C
check B[0:16, :] == A[0:16, :]"""
    with _w.catch_warnings(record=True) as got:
        _w.simplefilter("always")
        res = tilemagic.tilecopy(src, launch="sim")
    c, ok = res.launch.checks
    assert c.passed and c.unwritten == 64 and c.first_unwritten == "B[16, 0]"
    assert "PASS (but 64 of 128 elements were never written by the kernel, first B[16, 0]" in str(c)
    assert ok.passed and ok.unwritten == 0 and "never written" not in str(ok)
    assert any("compares elements the kernel never wrote" in str(w.message) for w in got)
    # an explicit initialiser says the zeros are meant
    res = tilemagic.tilecopy(src.replace("global C: float32[32, 4]", "global C: float32[32, 4] = zeros")
                             .replace("global B: float32[32, 4]", "global B: float32[32, 4] = zeros"),
                             launch="sim", emit_warnings=False)
    assert res.launch.checks[0].unwritten == 0


def test_a_failing_check_of_one_element_is_reported_not_an_internal_error():
    src = ("kernel k threads=32\nglobal A: float32[4, 8]\nglobal B: float32[4, 8] = zeros\nwarp.copy B <- A\n"
           "check B[0, 0] == A[1, 0]")
    res = tilemagic.tilecopy(src, launch="sim", allow_fail=True)
    (c,) = res.launch.checks
    assert not c.passed and c.mismatches == 1 and c.first[0][0] == ()
    assert "the element: got" in res.text()
    with pytest.raises(tilemagic.CheckFailed, match="1 of 1 elements differ"):
        tilemagic.tilecopy(src, launch="sim")
