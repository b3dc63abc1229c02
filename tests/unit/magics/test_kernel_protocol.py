"""A failing %%tilecopy cell is an `error` in the Jupyter kernel protocol (what nbval and nbclient see).

A real ipykernel is started with jupyter_client; the shell reply of a failing cell must have
status "error" with the TileMagicError's name and located value, iopub must carry an `error`
message, and the next cell must still run.
"""

import os
from pathlib import Path

import pytest

jupyter_client = pytest.importorskip("jupyter_client")
from jupyter_client.manager import start_new_kernel  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def kernel():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    km, kc = start_new_kernel(kernel_name="python3", env=env, startup_timeout=120)
    try:
        yield kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def execute(kc, code):
    """Run ``code``; return (shell reply content, list of iopub (msg_type, content))."""
    msg_id = kc.execute(code)
    reply = kc.get_shell_msg(timeout=120)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=120)
    iopub = []
    while True:
        msg = kc.get_iopub_msg(timeout=120)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        iopub.append((msg["msg_type"], msg["content"]))
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return reply["content"], iopub


def test_failing_cell_is_an_error_message_and_the_next_cell_runs(kernel):
    reply, _ = execute(kernel, "%load_ext tilemagic")
    assert reply["status"] == "ok"
    reply, iopub = execute(kernel, "%%tilecopy --launch sim\nkernel k threads=32\nglobal A: float32[4, 6]\n"
                                   "warp.copy Q <- A\n")
    assert reply["status"] == "error"
    assert reply["ename"] == "TileTypeError"
    assert reply["evalue"].startswith("tilecopy:4:11: TileTypeError: unknown buffer 'Q'")
    errors = [c for t, c in iopub if t == "error"]
    assert len(errors) == 1 and errors[0]["ename"] == "TileTypeError"
    shown = "\n".join(errors[0]["traceback"])
    assert "tilecopy:4:11" in shown and "  4 | warp.copy Q <- A" in shown and "Traceback" not in shown

    reply, iopub = execute(kernel, "%%tilecopy --launch sim --view text\nkernel k threads=32\n"
                                   "global A: float32[4, 6]\nglobal B: float32[4, 6]\nwarp.copy B <- A\ncheck B == A\n")
    assert reply["status"] == "ok"
    results = [c for t, c in iopub if t == "execute_result"]
    assert results and "check B == A: PASS" in results[0]["data"]["text/plain"]


def test_bad_option_line_is_an_error_too(kernel):
    execute(kernel, "%load_ext tilemagic")
    reply, iopub = execute(kernel, "%%tilecopy --timeout -1\nglobal A: float32[4]\n")
    assert reply["status"] == "error" and reply["ename"] == "TileSyntaxError"
    assert reply["evalue"].startswith("tilecopy:1:12: TileSyntaxError: bad %%tilecopy option line: --timeout")
    assert [c["ename"] for t, c in iopub if t == "error"] == ["TileSyntaxError"]
    reply, _ = execute(kernel, "1 + 1")
    assert reply["status"] == "ok"
