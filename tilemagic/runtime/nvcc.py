"""nvcc: the ptxas legality check of generated CUDA, and the PTX view's preferred compiler; no GPU needed.

TMEM code (``tcgen05.*``, PTX ISA 9.0 §9.7.16) needs an arch-specific target: ptxas
accepts it for ``sm_100a`` and rejects it for ``sm_100`` and ``sm_90``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

from .logs import scrub_paths, trim_log


@dataclass(frozen=True)
class NvccResult:
    """Outcome of :func:`nvcc_compile`.

    Attributes
    ----------
    ok : bool
        nvcc exited with status 0.
    log : str
        nvcc/ptxas output (trimmed), temp paths replaced by ``<tmp>``.
    cubin : bytes or None
        The cubin when ``ok`` and ``cubin=True``.
    command : str
        The command line, with ``<tmp>`` for the temp directory.
    ptx : str or None
        The PTX text when ``ok`` and ``cubin=False``.
    """

    ok: bool
    log: str
    cubin: bytes | None = None
    command: str = ""
    ptx: str | None = None


def nvcc_compile(text: str, arch: str = "sm_100a", *, cubin: bool = True, timeout: float = 120,
                 flags: tuple[str, ...] = (), log_lines: int | None = None) -> NvccResult:
    """Compile CUDA source with ``nvcc`` (the ptxas legality check); works without a GPU.

    Runs ``nvcc -arch=<arch> -cubin -o k.cubin k.cu`` in a temporary directory
    (no shell; ``TMPDIR`` points there too so nvcc's intermediates are scrubbed).

    Parameters
    ----------
    text : str
        Complete CUDA C++ source.
    arch : str, default "sm_100a"
        Real target; tcgen05 needs ``sm_100a`` (``sm_100`` / ``sm_90`` are rejected by ptxas).
    cubin : bool, default True
        Build a cubin (front end + ptxas) and return its bytes.  ``False`` stops
        at PTX (``-ptx``): front-end check only, no ptxas, ``cubin=None``, and the
        PTX text (temp paths scrubbed) in ``ptx``.
    timeout : float, default 120
        Seconds before nvcc is killed (then ``ok=False``).
    flags : tuple of str, optional
        Extra nvcc flags placed before the input (e.g. ``("-lineinfo",)``).
    log_lines : int, optional
        Lines of the log kept (default :data:`tilemagic.runtime.logs.MAX_LOG_LINES`; the cost view keeps
        every ``ptxas -v`` line of a many-kernel unit).

    Returns
    -------
    NvccResult
        Never raises for compile failures; ``ok=False`` with the log, or with
        ``"nvcc not found on PATH"``.
    """
    exe = shutil.which("nvcc")
    if exe is None:
        return NvccResult(False, "nvcc not found on PATH")
    out_name = "k.cubin" if cubin else "k.ptx"
    with tempfile.TemporaryDirectory(prefix="tilemagic-") as tmp:
        with open(os.path.join(tmp, "k.cu"), "w", encoding="utf-8") as f:
            f.write(text)
        cmd = [exe, f"-arch={arch}", "-cubin" if cubin else "-ptx", *flags, "-o", out_name, "k.cu"]
        shown = " ".join(["nvcc"] + cmd[1:])
        env = dict(os.environ, TMPDIR=tmp, TMP=tmp, TEMP=tmp)
        try:
            proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True,
                                  timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return NvccResult(False, f"nvcc timed out after {timeout:g} s", None, shown)
        except OSError as exc:
            return NvccResult(False, f"nvcc could not run: {exc.strerror or exc}", None, shown)
        log = scrub_paths((proc.stdout or "") + (proc.stderr or ""), tmp)
        log = trim_log(log) if log_lines is None else trim_log(log, log_lines)
        ok = proc.returncode == 0
        data = ptx = None
        if ok:
            path = os.path.join(tmp, out_name)
            if os.path.exists(path):
                with open(path, "rb") as f:
                    raw = f.read()
                if cubin:
                    data = raw
                else:
                    ptx = scrub_paths(raw.decode("utf-8", "replace"), tmp)
            else:  # pragma: no cover
                ok, log = False, (log + f"\nnvcc produced no {out_name}").strip()
    return NvccResult(ok, log, data, shown, ptx)
