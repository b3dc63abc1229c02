"""Fixtures of the browser tests: Debian's chromium through Playwright, a JupyterLab server on localhost.

Playwright's own browser download is never used (``playwright install`` is not run):
the tests launch ``/usr/bin/chromium`` (or ``$TILEMAGIC_CHROMIUM``).  Where chromium or
Playwright is missing the tests are skipped on a developer machine and FAIL under CI
(``CI`` set), so a CI run can never pass without having driven a browser.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CHROMIUM = os.environ.get("TILEMAGIC_CHROMIUM", "/usr/bin/chromium")
# flags for a machine without network or GPU: no background connections, no sandbox (root in CI)
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]


def _missing(what: str):
    if os.environ.get("CI"):
        pytest.fail(f"browser test cannot run in CI: {what} (.ci/run installs chromium, jupyterlab and playwright)")
    pytest.skip(f"{what}")


@pytest.fixture(scope="session")
def browser():
    """A headless Debian chromium driven by Playwright (sync API)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("playwright is not installed (pip install -e '.[browser]')")
    exe = CHROMIUM if os.path.isabs(CHROMIUM) else shutil.which(CHROMIUM)
    if not exe or not os.path.exists(exe):
        _missing(f"chromium not found at {CHROMIUM} (apt-get install chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _strip_outputs(src: Path, dst: Path):
    nb = json.loads(src.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    nb["metadata"].pop("widgets", None)
    dst.write_text(json.dumps(nb, indent=1), encoding="utf-8")


@pytest.fixture(scope="session")
def jupyterlab(tmp_path_factory):
    """A JupyterLab server on 127.0.0.1 (random free port, random token) serving a copy of the notebooks.

    The notebooks are copied without their stored outputs, so every output the test sees
    was produced by this run.  The kernel is this interpreter's ``python3`` with the
    repository first on ``PYTHONPATH``.  Yields ``(base_url, token, root_dir)``.
    """
    try:
        import jupyterlab  # noqa: F401
    except ImportError:
        _missing("jupyterlab is not installed (pip install -e '.[browser]')")
    root = tmp_path_factory.mktemp("lab")
    for nb in (ROOT / "notebooks").glob("*.ipynb"):
        _strip_outputs(nb, root / nb.name)
    home = tmp_path_factory.mktemp("home")
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ)
    env.update(
        PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]),
        JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        IPYTHONDIR=str(home / "ipython"), HOME=str(home), MPLBACKEND="Agg",
    )
    # user settings: no "official Jupyter news?" toast over the outputs
    settings = home / "lab-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}', encoding="utf-8")
    env["JUPYTERLAB_SETTINGS_DIR"] = str(home / "lab-settings")
    log = open(home / "jupyterlab.log", "w", encoding="utf-8")  # noqa: SIM115 - closed below
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
           "--LabApp.news_url=", "--ServerApp.open_browser=False"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # CI runs as root
        cmd.append("--allow-root")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError("JupyterLab exited:\n" + (home / "jupyterlab.log").read_text()[-3000:])
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("JupyterLab did not start in 120 s:\n"
                                   + (home / "jupyterlab.log").read_text()[-3000:])
            time.sleep(0.5)
        yield base, token, root
    finally:
        _stop(proc)
        log.close()


def _stop(proc):
    """End the server and its kernels (the process group this fixture started)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
