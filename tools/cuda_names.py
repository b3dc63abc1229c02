"""Derive, with nvcc, the names a kernel translation unit sees that cannot name a buffer or a kernel.

Candidates are every identifier of the preprocessed generated code (``nvcc -E``: the CUDA runtime header
nvcc includes by itself, ``cuda_fp16.h``, ``cuda_bf16.h``, ``stdint.h`` and the libc headers they pull in)
and every macro it defines (``nvcc -E -Xcompiler -dM``).  A macro's name always fails (the preprocessor
replaces it; a function-like one before the kernel's parameter list), so macros are not probed.  Every other
candidate that tilemagic's identifier check (:func:`tilemagic.lower.names.check_identifier`) does not reject
already by a rule is put, by text substitution into kernels that tilemagic generated, in every role a name
has in the CUDA: the kernel's name, a global buffer (a parameter), a shared buffer and a register tile, in
the native (``sm_100a``) and the emulated-TMEM (``sm_90a``) sources.  The probes go into four translation
units (kernel names apart: a kernel declared at file scope would hide a type from the later probes) checked
by nvcc's front end, and kernel names also into a cubin (ptxas); a probe with an error after a clean canary
fails, the others are compiled again until a unit is clean.

``python tools/cuda_names.py`` writes ``tilemagic/lower/cuda_reserved.py`` (the table the check reads);
``tests/unit/lang/test_identifiers.py`` derives the set again and asserts every failing name is rejected.
"""

from __future__ import annotations

import bisect
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLACEHOLDER = "zqprobeq"
#: Not probed: the probes' own names, and the loop variables the generator picks (``Builder.loop_vars`` renames
#: them away from every buffer, which a text substitution into generated code cannot).
_NOT_PROBED = re.compile(r"^(zq\w*|kq|[ijklpqrsuvw]|i\d+)$")

# one cell per role; PLACEHOLDER is replaced by the candidate (kernel k{i}_... keeps probe kernels distinct)
_CELLS = {
    "kernel": ("native", f"kernel {PLACEHOLDER} threads=32\nglobal zqA: float32[4, 6]\nglobal zqB: float32[4, 6]\n"
                         "shared zqS: float32[4, 6]\nwarp.copy zqS <- zqA\ncta_sync\nwarp.copy zqB <- zqS\n"),
    "global": ("native", f"kernel kq threads=32\nglobal {PLACEHOLDER}: float16[4, 8]\nglobal zqB: float16[4, 8]\n"
                         f"shared zqS: float16[4, 8]\nwarp.copy zqS <- {PLACEHOLDER}\ncta_sync\n"
                         "warp.copy zqB <- zqS\n"),
    "shared": ("native", f"kernel kq threads=32\nglobal zqA: float32[4, 6]\nglobal zqB: float32[4, 6]\n"
                         f"shared {PLACEHOLDER}: float32[4, 6]\nwarp.copy {PLACEHOLDER} <- zqA\ncta_sync\n"
                         f"warp.copy zqB <- {PLACEHOLDER}\n"),
}


def _roundtrip(role: str) -> str:
    names = {"kernel": "kq", "local": "zqa"}
    names[role] = PLACEHOLDER
    k, a = names["kernel"], names["local"]
    return "\n".join([
        f"kernel {k} threads=128", "global zqA: float16[128, 16]", "global zqB: float16[128, 16]",
        "tmem zqT: float16[128, 16]", f"local {a}: float16[128, 16] @ S[(128, 16) : (1@tid_in_wg, 1)]",
        f"wg.copy {a} <- zqA", f"wg.copy_async zqT <- {a}", "wait st", "cta_sync", f"wg.copy_async {a} <- zqT",
        "wait ld", f"wg.copy zqB <- {a}"])


def _templates() -> dict[str, list[str]]:
    """Generated sources with PLACEHOLDER in each role, by unit: ``MODE:ROLES`` (``native``/``emulated``).

    A kernel's name is declared at file scope, where it would hide a type or function for every later
    kernel of the unit (a kernel named ``uint32_t``), so the kernel names get units of their own; the
    buffer probes' kernels are named ``kq...``."""
    from tilemagic import tilecopy

    def gen(cell: str, emulated: bool = False) -> str:
        res = tilecopy(cell, launch="off", emit_warnings=False)
        return res.cuda_emulated if emulated else res.cuda

    return {
        "native:buffers": [gen(_CELLS["global"][1]), gen(_CELLS["shared"][1]), gen(_roundtrip("local"))],
        "native:kernel": [gen(_CELLS["kernel"][1])],  # (one kernel of each name per unit)
        "emulated:buffers": [gen(_roundtrip("local"), True)],
        "emulated:kernel": [gen(_roundtrip("kernel"), True)],
    }


def _nvcc(args: list[str], text: str, tmp: str) -> subprocess.CompletedProcess:
    path = os.path.join(tmp, "p.cu")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    env = dict(os.environ, TMPDIR=tmp)
    return subprocess.run(["nvcc", *args, path], cwd=tmp, env=env, capture_output=True, text=True, check=False)


def candidates(tmp: str) -> tuple[set[str], set[str]]:
    """(every identifier, every macro name) the generated code's translation unit sees (for sm_90a and
    sm_100a: the device pass's macros differ)."""
    from tilemagic.codegen.cuda import translation_unit

    src = translation_unit(_templates()["emulated:buffers"])
    found: list[set[str]] = []
    for extra, pattern in (((), r"\b[A-Za-z_]\w*\b"), (("-Xcompiler", "-dM"), r"#define\s+([A-Za-z_]\w*)")):
        names: set[str] = set()
        for arch in ("sm_90a", "sm_100a"):
            proc = _nvcc([f"-arch={arch}", "-E", *extra, "-o", "p.i"], src, tmp)
            if proc.returncode != 0:
                raise RuntimeError(f"nvcc -E failed: {proc.stderr[-2000:]}")
            names |= set(re.findall(pattern, Path(tmp, "p.i").read_text(errors="replace")))
        found.append(names)
    return found[0] | found[1], found[1]


def _unit(kind: str, sources: list[str], names: list[str]) -> tuple[str, list[tuple[int, int, str, bool]]]:
    """One translation unit of every probe, each name's probes after a *canary* (the first source with
    names no header has): (text, [(first line, last line, name, is_canary)])."""
    from tilemagic.codegen.cuda import translation_unit

    def body_of(text: str, name: str, kq: str) -> str:
        body = text[text.index('extern "C"'):].rstrip("\n")
        return re.sub(rf"\b{PLACEHOLDER}\b", name, re.sub(r"\bkq\b", kq, body))

    kernels: list[tuple[str, str, bool]] = []
    for i, name in enumerate(names):
        if kind != "ptx":
            kernels.append((body_of(sources[0], f"zqc{i}", f"zqk{i}"), name, True))
        for j, text in enumerate(sources):
            kernels.append((body_of(text, name, f"kq{i}_{j}"), name, False))
    prelude = translation_unit(sources[:1])
    prelude = prelude[:prelude.index('extern "C"')]
    text, spans, line = prelude, [], prelude.count("\n") + 1
    for body, name, canary in kernels:
        n = body.count("\n") + 1
        spans.append((line, line + n - 1, name, canary))
        text += body + "\n"
        line += n
    if kind != "ptx":  # the front end's errors are all we need: stop before cicc (the slow part) always
        text += _SENTINEL + "\n"
    return text, spans


_SENTINEL = 'static_assert(sizeof(int) == 0, "tilemagic probe: end of the unit");'
_KERNEL_ONLY = f'extern "C" __global__ void {PLACEHOLDER}(float* __restrict__ zqA) {{\n    zqA[0] = 0.0f;\n}}\n'


_ERROR_AT = re.compile(r"p\.cu(?:\((\d+)\):|:(\d+):(?:\d+:)?) (?:fatal |catastrophic )?error")


def _fails(mode: str, sources: list[str], names: list[str], tmp: str) -> set[str]:
    """The names whose probes fail, found by compiling them in one unit, again and again without the failures
    found.  An error can make the front end lose its way into the probes after it, so a name fails only when
    its probes have an error and its canary (compiled right before them) has none: the parser entered them in
    step.  The others are compiled again in the next round; every round finds one failure at least (the
    first error of a unit follows a clean canary), and a unit that compiles cleanly ends it."""
    arch = "sm_90a" if mode.startswith("emulated") else "sm_100a"
    stage = ["-cubin", "-Xcicc", "-O0"] if mode == "ptx" else ["-ptx"]
    bad: set[str] = set()
    todo = list(names)
    while todo:
        text, spans = _unit(mode, sources, todo)
        proc = _nvcc([f"-arch={arch}", *stage, "-Xcudafe", "--error_limit=100000", "-o", "p.out"], text, tmp)
        log = proc.stdout + proc.stderr
        lines = sorted({int(a or b) for a, b in _ERROR_AT.findall(log)})
        if proc.returncode == 0 or (mode != "ptx" and lines == [text.count("\n")]):  # (only the sentinel's error)
            break
        near = set(re.findall(r"ptxas .*near '(\w+)'", log))  # ptxas names the token, not the .cu line
        starts = [lo for lo, _, _, _ in spans]
        hit = [False] * len(spans)
        for ln in lines:
            k = bisect.bisect_right(starts, ln) - 1
            if k >= 0 and ln <= spans[k][1]:
                hit[k] = True
        found, canary_ok = set(), True
        for k, (_, _, name, canary) in enumerate(spans):
            if canary:
                canary_ok = not hit[k]
            elif (hit[k] and canary_ok) or name in near:
                found.add(name)
        if not found:
            first = next((k for k, h in enumerate(hit) if h), None)
            if first is None or first == 0:
                raise RuntimeError("nvcc failed outside the probes:\n" + log[-3000:])
            found.add(spans[first - 1][2])  # a probe without an error of its own broke the canary after it
        bad |= found
        todo = [n for n in todo if n not in found]
    return bad


def failing(names: set[str], tmp: str) -> set[str]:
    """The names among ``names`` whose probes do not compile, in any role and mode.

    The front end (``nvcc -cuda``) sees every role; a kernel's name also reaches the PTX (an entry named
    ``WARP_SZ`` is a ptxas syntax error), so the names the front end accepts also name a minimal kernel
    compiled to a cubin (cicc and ptxas).  The front-end units end in a failing ``static_assert`` so that
    nvcc never runs cicc on them (the slow part): a unit whose only error is that one is clean.
    """
    templates = _templates()
    bad = {n for mode, sources in templates.items() for n in _fails(mode, sources, sorted(names), tmp)}
    return bad | _fails("ptx", [_KERNEL_ONLY], sorted(names - bad), tmp)


def rule_rejected(name: str) -> bool:
    """Whether the check rejects ``name`` by a rule other than the derived table."""
    from tilemagic.lower import names as N

    return N.rule_reason(name) is not None


def derive() -> tuple[set[str], set[str]]:
    """(candidates, the candidates that fail to compile); needs ``nvcc`` on PATH."""
    if shutil.which("nvcc") is None:
        raise RuntimeError("nvcc not on PATH")
    with tempfile.TemporaryDirectory(prefix="tilemagic-names-") as tmp:
        every, macros = candidates(tmp)
        cands = {c for c in every if c.isidentifier() and c.isascii()}
        probe = {c for c in cands if not rule_rejected(c) and not _NOT_PROBED.match(c)}
        # a macro's name is replaced wherever the generated code writes it (a function-like one before the
        # kernel's parameter list): it cannot name a kernel, and its expansion (empty, a number, a call)
        # makes the front end lose its way through the probes after it, so macros are not probed
        return cands, (probe & macros) | failing(probe - macros, tmp)


def write_table(bad: set[str]) -> Path:
    path = ROOT / "tilemagic" / "lower" / "cuda_reserved.py"
    version = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    rows, row = [], ""
    for name in sorted(bad):
        if len(row) + len(name) + 1 > 110:
            rows.append(row)
            row = ""
        row += (" " if row else "") + name
    rows.append(row)
    body = "\n".join(rows)
    path.write_text(
        '"""Names of the CUDA/C headers a kernel translation unit sees that fail to compile as a buffer or kernel\n'
        'name (not already rejected by a rule of :mod:`tilemagic.lower.names`).\n\n'
        f"Generated by ``python tools/cuda_names.py`` with nvcc ({version}); do not edit.\n"
        "``tests/unit/lang/test_identifiers.py`` derives the set again and fails when a name is missing.\n"
        '"""\n\nfrom __future__ import annotations\n\n'
        f'CUDA_RESERVED: frozenset[str] = frozenset("""\n{body}\n""".split())\n', encoding="utf-8")
    return path


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    cands, bad = derive()
    print(f"{len(cands)} candidates, {len(bad)} fail to compile; wrote {write_table(bad)}")
