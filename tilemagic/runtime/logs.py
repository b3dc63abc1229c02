"""Compiler logs as a notebook shows them: temporary paths scrubbed, long logs trimmed.

Used by :mod:`.nvrtc` (a :class:`~tilemagic.errors.LaunchError`'s details), :mod:`.nvcc`
(:class:`~tilemagic.runtime.nvcc.NvccResult.log`) and :mod:`.ptx`, so the same source gives
the same text on every machine.
"""

from __future__ import annotations

import os
import re
import tempfile

#: Lines of a compiler log kept in a LaunchError / NvccResult before trimming.
MAX_LOG_LINES = 40

_HASHED_CU = re.compile(r"[0-9a-f]{32,}[^\s/\\:()\"']*\.cu\b")
_NVCC_TMP = re.compile(r"tmpxft_[0-9a-fA-F]+_[0-9a-fA-F]+-\d+_")


def _temp_roots() -> tuple[str, ...]:
    roots = {"/tmp", "/var/tmp", tempfile.gettempdir()}
    for r in list(roots):
        try:
            roots.add(os.path.realpath(r))
        except OSError:  # pragma: no cover
            pass
    return tuple(sorted((r.rstrip("/\\") for r in roots if r and r not in ("/", "\\")), key=len, reverse=True))


def scrub_paths(log: str, tmpdir: str | None = None) -> str:
    """Remove temporary paths from a compiler log (deterministic notebook output).

    ``tmpdir`` (and its realpath) becomes ``<tmp>``; any other path under the
    system temp directories becomes ``<tmp>/<basename>``; nvcc's ``tmpxft_*``
    prefixes and CuPy's hashed ``<md5>_2.cubin.cu`` names become ``k.ptx`` /
    ``kernel.cu``.
    """
    out = log
    if tmpdir:
        for p in sorted({tmpdir, os.path.realpath(tmpdir)}, key=len, reverse=True):
            out = out.replace(p, "<tmp>")
    for root in _temp_roots():
        out = re.sub(r"(?<![\w.\-/\\])" + re.escape(root) + r"[/\\][^\s:;,()\"']*",
                     lambda m: "<tmp>/" + re.split(r"[/\\]", m.group(0))[-1], out)
    out = _NVCC_TMP.sub("", out)
    out = _HASHED_CU.sub("kernel.cu", out)
    return out


def trim_log(log: str, max_lines: int = MAX_LOG_LINES) -> str:
    """Strip blank lines at the ends and keep at most ``max_lines`` lines."""
    lines = [ln.rstrip() for ln in log.strip("\n").splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    if len(lines) > max_lines:
        extra = len(lines) - max_lines
        lines = lines[:max_lines] + [f"... ({extra} more line{'s' if extra != 1 else ''})"]
    return "\n".join(lines)
