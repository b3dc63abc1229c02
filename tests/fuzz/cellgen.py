"""Cells for fuzzing the whole pipeline: valid cells built from the grammar, and mutated seed cells.

Shared by ``tests/fuzz`` (a few hundred examples in CI) and ``benchmarks/fuzz.py``
(10 000 examples, counts by outcome).

* :func:`valid_cells` draws complete, valid descriptions (tilemagic/lang/grammar.lark):
  a ``kernel`` line (or none), global buffers with initialisers, shared buffers with
  row-major / ``S[...]`` / column-major layouts, register tiles with thread-axis layouts
  for every exec scope, TMEM buffers (windows, ``at`` aliases), copies of whole buffers
  and of row slices, ``copy_async`` through TMEM with ``wait``/``cta_sync``, forced
  ``dispatch=``, comments, indentation and the ``%%tilecopy`` header.  Every one moves
  ``A`` to ``B`` and ends with ``check B == A``, so one that lowers must PASS in the simulator.
* :func:`mutated_cells` takes the demos, the docs' examples, the notebook's cells and
  valid cells and damages them: deleted/duplicated/replaced tokens, swapped dimensions,
  huge numbers, unicode, very long lines, dropped/duplicated/swapped lines.
* :func:`outcome` runs one cell and names what happened; anything other than a result
  or a located :class:`~tilemagic.errors.TileMagicError` is a violation.
"""

from __future__ import annotations

import itertools
import json
import re
import sys
import warnings
from pathlib import Path

import numpy as np
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from cells import EPC, fallback_cell, reg_cell, roundtrip_cell

import tilemagic
from tilemagic.errors import Span, TileMagicError
from tilemagic.lower.names import check_identifier

DTYPES = ("float32", "float16", "bfloat16", "uint8", "int8", "int32")
DTYPE_ALIASES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "uint8": "u8", "int8": "i8", "int32": "i32"}
SCOPE_THREADS = {"thread": 1, "warp": 32, "wg": 128, "cta": None}
#: Notebook arrays the fuzzed cells may name in ``= NAME`` initialisers.
NAMESPACE = {"my_weights": np.zeros((4, 6), np.float32), "w16": np.ones((128, 8), np.float16), "scalar": 3}
#: Cells whose global buffers hold more than this many bytes are lowered but not simulated (fuzz speed).
MAX_SIM_BYTES = 1 << 20


# ----------------------------------------------------------------------------- names
def _valid_name(s: str) -> bool:
    try:
        check_identifier(s, Span.point(1, 1), "buffer")
    except TileMagicError:
        return False
    return s not in ("S",)  # `S` is a buffer name too, but keep layouts readable


names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True).filter(_valid_name)


def _rename(src: str, mapping: dict) -> str:
    """Rename buffers (whole words; ``S[`` of a layout is never a buffer here)."""
    return re.sub(r"\b[A-Za-z_][A-Za-z0-9_]*\b", lambda m: mapping.get(m.group(), m.group()), src)


# ----------------------------------------------------------------------------- valid cells
def _split(draw, n: int):
    """A partition of range(n) into 1..3 consecutive [lo, hi) pieces."""
    k = draw(st.integers(1, min(3, n)))
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), min_size=k - 1, max_size=k - 1))) if n > 1 else []
    edges = [0, *cuts, n]
    return list(itertools.pairwise(edges))


def _region(name, lo, hi, rows):
    if lo == 0 and hi == rows:
        return name
    return f"{name}[{lo}:{hi}, :]"


@st.composite
def _shared_or_direct(draw, dtype):
    """global -> (shared ->) global through copy/fallback, whole buffers or row slices, any scopes."""
    threads = draw(st.sampled_from([1, 32, 64, 128, 256]))
    scopes = ["thread"] + (["warp"] if threads % 32 == 0 else []) + (["wg"] if threads % 128 == 0 else []) + ["cta"]
    rows, cols = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    lines = [f"kernel k threads={threads}", f"global A: {dtype}[{rows}, {cols}]", f"global B: {dtype}[{rows}, {cols}]"]
    direct = draw(st.booleans())
    mid = "B" if direct else "S"
    if not direct:
        lay = draw(st.sampled_from(["", f" @ S[{rows}, {cols}]", f" @ S[({rows}, {cols}) : ({cols}, 1)]",
                                    f" @ S[({rows}, {cols}) : (1, {rows})]"]))
        lines.append(f"shared S: {dtype}[{rows}, {cols}]{lay}")
    for lo, hi in _split(draw, rows):
        lines.append(f"{draw(st.sampled_from(scopes))}.copy {_region(mid, lo, hi, rows)} <- {_region('A', lo, hi, rows)}")
    if not direct:
        lines.append("cta_sync")
        for lo, hi in _split(draw, rows):
            lines.append(f"{draw(st.sampled_from(scopes))}.copy {_region('B', lo, hi, rows)} <- "
                         f"{_region('S', lo, hi, rows)}")
    lines.append("check B == A")
    return "\n".join(lines)


@st.composite
def _registers(draw, dtype):
    """global -> local -> global through copy/reg, a thread-axis layout for each exec scope."""
    scope = draw(st.sampled_from(["thread", "warp", "wg", "cta"]))
    cols = draw(st.integers(1, 8))
    if scope == "thread":
        rows = draw(st.integers(1, 6))
        layout = draw(st.sampled_from([f"S[{rows}, {cols}]", f"S[({rows}, {cols}) : ({cols}, 1)]",
                                       f"S[({rows}, {cols}) : (1, {rows})]"]))
        threads = draw(st.sampled_from([1, 32]))
    elif scope == "warp":
        rows, threads = 32, draw(st.sampled_from([32, 64, 128]))
        layout = f"S[(32, {cols}) : (1@laneid, 1)]"
    elif scope == "wg":
        rows, threads = 128, draw(st.sampled_from([128, 256]))
        layout = draw(st.sampled_from([f"S[(128, {cols}) : (1@tid_in_wg, 1)]",
                                       f"S[(4, 32, {cols}) : (1@wid_in_wg, 1@laneid, 1)]"]))
    else:
        threads = rows = draw(st.sampled_from([32, 64, 256]))
        layout = f"S[({rows}, {cols}) : (1@tx, 1)]"
    src = reg_cell(layout, rows, cols, scope, threads, dtype)
    if scope != "cta" and draw(st.booleans()):  # the CTA size from the widest scope
        src = src.replace(f"kernel r threads={threads}\n", "" if threads == max(SCOPE_THREADS[scope], 1) else
                          f"kernel r threads={threads}\n")
    return src


@st.composite
def _tmem(draw, dtype):
    """global -> local -> TMEM -> local -> global (tcgen05.st/ld .32x32b), windows and aliases."""
    num = draw(st.sampled_from([1, 2, 4, 8, 16, 32]))
    e = EPC[dtype]
    off = draw(st.sampled_from([0, 0, 1, 3]))
    alias = draw(st.sampled_from([None, None, 0, 1])) if off == 0 else None
    width = num * e
    tcols = (num + off) * e if alias is None else (num + alias) * e
    return roundtrip_cell(dtype, width, tcols, off * e, alias)


def _cosmetics(draw, src: str) -> str:
    """Equivalent spellings: dtype aliases, `warpgroup`, indentation, comments, a header, renamed buffers."""
    lines = src.strip("\n").split("\n")
    out = []
    for ln in lines:
        if draw(st.integers(0, 4)) == 0:
            for full, short in DTYPE_ALIASES.items():
                ln = re.sub(rf"(:\s*){full}\[", rf"\g<1>{short}[", ln)
        if ln.startswith("wg.") and draw(st.integers(0, 3)) == 0:
            ln = "warpgroup." + ln[3:]
        ln = " " * draw(st.sampled_from([0, 0, 2, 4])) + ln
        if draw(st.integers(0, 5)) == 0:
            ln += "   # " + draw(st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=12))
        out.append(ln)
        if draw(st.integers(0, 8)) == 0:
            out.append(draw(st.sampled_from(["", "# a comment line", "   "])))
    if draw(st.booleans()):
        old = sorted({m for m in re.findall(r"\b(?:global|local|tmem)\s+([A-Za-z_]\w*)\s*:", src)})
        new = draw(st.lists(names, min_size=len(old), max_size=len(old), unique=True))
        kname = re.findall(r"^kernel\s+(\w+)", src, re.MULTILINE)
        if not set(new) & set(kname) and not set(new) & {"S", "k", "r"}:
            out = _rename("\n".join(out), dict(zip(old, new))).split("\n")
    if draw(st.booleans()):
        opts = draw(st.lists(st.sampled_from(["--launch sim", "--view text", "--strict", "--seed 7", "--bench",
                                              "--timeout 5", "--arch sm_100a"]), max_size=3, unique=True))
        out.insert(0, "%%tilecopy " + " ".join(["cellname"] * draw(st.booleans()) + opts))
    return "\n".join(out) + "\n"


@st.composite
def valid_cells(draw):
    """A valid description that moves A to B and checks ``B == A``."""
    dtype = draw(st.sampled_from(DTYPES))
    kind = draw(st.sampled_from(["shared", "registers", "tmem"]))
    src = draw({"shared": _shared_or_direct, "registers": _registers, "tmem": _tmem}[kind](dtype))
    if draw(st.integers(0, 3)) == 0:  # an initialiser for A
        src = re.sub(r"^(global A: [^\n]*)$", lambda m: m.group(1) + draw(st.sampled_from(
            [" = random", " = arange", " = zeros"])), src, count=1, flags=re.MULTILINE)
    return _cosmetics(draw, src)


# ----------------------------------------------------------------------------- seeds and mutations
def seed_cells():
    """The demos, every docs example, the notebook's %%tilecopy cells and the test builders' cells."""
    from tilemagic.cli import DEMOS, demo_source

    seeds = [demo_source(d) for d in DEMOS]
    doc = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
    # (not the examples marked as waiting for the asynchronous-copy variants or simulator: they cannot run yet)
    seeds += [b for need, b in re.findall(r"(?:<!-- needs ([^>]*?) -->\n)?```tilecopy\n(.*?)```", doc, re.DOTALL)
              if not need]
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for c in json.loads(nb.read_text(encoding="utf-8"))["cells"]:
            text = "".join(c.get("source", ""))
            if c.get("cell_type") == "code" and text.lstrip().startswith("%%tilecopy"):
                seeds.append(text)
    seeds += [roundtrip_cell("float16", 8), roundtrip_cell("float32", 4, 8, 2, None),
              fallback_cell("cta", 256, 4, 8), reg_cell("S[(4, 32, 8) : (1@wid_in_wg, 1@laneid, 1)]", 128, 8)]
    return seeds


SEEDS = seed_cells()
_TOKEN = re.compile(r"[A-Za-z0-9_]+|[ \t]+|\n|<-|->|==|.", re.DOTALL)
HUGE = ["0", "-1", "1" + "0" * 30, str(2 ** 31), str(2 ** 31 - 1), str(2 ** 32), str(2 ** 63), "65536", "1025",
        "4096", "9" * 999, "9" * 1001, "00000000128"]
UNICODE = ["é", "ß", "İ", "\u200b", "\u202e", "\ufeff", "１２８", "𝟙", "\x00", "\u2028", "\u0085", "ﬁ", "😀", "\u0301",
           "Ａ", "\t", "\r", "\x0b", "\x0c", "Σ", "ℌ", "\U000e0041"]
NOISE = list("[](){}:,@+=<->#.%\"'") + ["<-", "->", "==", "\r\n", " "]
# grammar-aware replacements: a word of one class becomes another word of the same class
CLASSES = [
    ("global", "shared", "local", "tmem"),
    ("thread", "warp", "wg", "cta", "warpgroup"),
    DTYPES + ("f16", "bf16", "u8", "i8", "i32", "f32", "uint32", "float64"),
    ("m", "tid_in_wg", "laneid", "wid_in_wg", "warpid", "tx", "TLane", "TCol", "wgid"),
    ("copy", "copy_async"),
    ("ld", "st"),
    ("D", "F", "B"),
    ("32x32b", "16x64b", "16x128b", "16x256b", "16x32bx2"),
]
LAYOUTS = ["datapath(D)", "datapath(F, sub_slab=0)", "datapath(F, sub_slab=1)", "datapath(B)", "datapath(F, sub_slab=2)",
           "frag(32x32b)", "frag(16x64b)", "frag(16x128b)", "frag(16x256b)", "S[4, 6]", "S[(128, 8) : (1@tid_in_wg, 1)]",
           "S[(128, 4) : (1@TLane, 1@TCol)]", "S[(4, 32, 8) : (1@wid_in_wg, 1@laneid, 1)]", "S[(2, 64) : (0, 1)]",
           "S[(8, 16) : (16, 1)] + 3@m", "S[(128, 8) : (1@TLane, 2@TCol)] + 1@TCol", "S[(32, 4) : (1@laneid, 1)]"]
DISPATCH = [" dispatch=reg", " dispatch=fallback", " dispatch=tmem<->local", ' dispatch="reg"', " dispatch=nope"]


@st.composite
def mutated_cells(draw):
    """A seed (or a valid cell) with 1-4 mutations."""
    if draw(st.integers(0, 3)) == 0:
        src = draw(valid_cells())
    else:
        src = draw(st.sampled_from(SEEDS))
    toks = _TOKEN.findall(src)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["delete", "duplicate", "noise", "swap_dims", "huge", "unicode", "long_line",
                                   "long_name", "many_dims", "drop_line", "dup_line", "swap_lines", "swap_tokens",
                                   "nudge", "same_class", "same_class", "layout", "dispatch"]))
        if not toks:
            toks = [""]
        i = draw(st.integers(0, len(toks) - 1))
        ints = [k for k, t in enumerate(toks) if re.fullmatch(r"[0-9]+", t)]
        words = [k for k, t in enumerate(toks) if re.fullmatch(r"[A-Za-z_]\w*", t)]
        if op == "delete":
            del toks[i]
        elif op == "duplicate":
            toks.insert(i, toks[i])
        elif op == "noise":
            toks.insert(i, draw(st.sampled_from(NOISE)))
        elif op == "swap_dims" and len(ints) >= 2:
            a, b = draw(st.sampled_from(ints)), draw(st.sampled_from(ints))
            toks[a], toks[b] = toks[b], toks[a]
        elif op == "huge" and ints:
            toks[draw(st.sampled_from(ints))] = draw(st.sampled_from(HUGE))
        elif op == "unicode":
            toks.insert(i, draw(st.sampled_from(UNICODE)))
        elif op == "long_line":
            toks.insert(i, draw(st.sampled_from(["x", " ", "[", "(", "1,", "@", "#", "a.b "])) * draw(
                st.sampled_from([1000, 20000, 100000])))
        elif op == "long_name" and words:
            toks[draw(st.sampled_from(words))] = "n" * draw(st.sampled_from([256, 5000, 100000]))
        elif op == "many_dims" and ints:
            toks[draw(st.sampled_from(ints))] = ", ".join(["1"] * draw(st.sampled_from([9, 64, 2000])))
        elif op in ("drop_line", "dup_line", "swap_lines"):
            lines = "".join(toks).split("\n")
            a, b = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            if op == "drop_line":
                del lines[a]
            elif op == "dup_line":
                lines.insert(a, lines[a])
            else:
                lines[a], lines[b] = lines[b], lines[a]
            toks = _TOKEN.findall("\n".join(lines))
        elif op == "nudge" and ints:
            k = draw(st.sampled_from(ints))
            v = int(toks[k])
            toks[k] = str(max(0, draw(st.sampled_from([v + 1, v - 1, v * 2, v // 2, v + 32, v * 4]))))
        elif op == "same_class":
            hits = [(k, c) for k, t in enumerate(toks) for c in CLASSES if t in c]
            if hits:
                k, c = draw(st.sampled_from(hits))
                toks[k] = draw(st.sampled_from(c))
        elif op == "layout":
            text = "".join(toks)
            spans = [m.span(1) for m in re.finditer(r"@ (S\[[^\n]*?\](?: \+ \S+)*|datapath\([^)]*\)|frag\([^)]*\))", text)]
            new = draw(st.sampled_from(LAYOUTS))
            if spans:
                a, b = draw(st.sampled_from(spans))
                text = text[:a] + new + text[b:]
            else:
                lines = text.split("\n")
                j = draw(st.integers(0, len(lines) - 1))
                lines[j] += " @ " + new
                text = "\n".join(lines)
            toks = _TOKEN.findall(text)
        elif op == "dispatch":
            lines = "".join(toks).split("\n")
            ops = [j for j, ln in enumerate(lines) if ".copy" in ln]
            if ops:
                j = draw(st.sampled_from(ops))
                lines[j] = lines[j].split("#")[0].rstrip() + draw(st.sampled_from(DISPATCH))
            toks = _TOKEN.findall("\n".join(lines))
        elif op == "swap_tokens" and len(words) >= 2:
            a, b = draw(st.sampled_from(words)), draw(st.sampled_from(words))
            toks[a], toks[b] = toks[b], toks[a]
    return "".join(toks)


# ----------------------------------------------------------------------------- running one cell
class Violation(AssertionError):
    """A fuzzed cell ended in something other than a result or a located TileMagicError."""


def _global_bytes(res) -> int:
    return sum(b.nbytes for b in res.kernel.params)


def outcome(src: str, *, must_pass: bool = False) -> str:
    """Run ``src`` through the pipeline (simulator); return the outcome's name.

    Returns ``"PASS"`` / ``"FAIL"`` (launched; every check passed or not), ``"lowered"``
    (global buffers over :data:`MAX_SIM_BYTES`: lowered, not simulated) or the
    TileMagicError subclass's name.

    Raises
    ------
    Violation
        Any other exception; a TileMagicError without line, column or message or whose
        render() fails; with ``must_pass``, a lowered cell whose check does not PASS.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            res = tilemagic.tilecopy(src, launch="off", namespace=NAMESPACE, emit_warnings=False)
            if _global_bytes(res) > MAX_SIM_BYTES:
                return "lowered"
            res = tilemagic.tilecopy(src, launch="sim", namespace=NAMESPACE, emit_warnings=False, allow_fail=True)
        except TileMagicError as e:
            return _check_located(e)
        except Exception as e:
            raise Violation(f"{type(e).__name__}: {e}") from e
    status = "PASS" if res.launch.passed else "FAIL"
    if must_pass and status != "PASS":
        raise Violation(f"a valid cell lowered but did not round-trip: {[str(c) for c in res.launch.checks]}")
    return status


# ----------------------------------------------------------------------------- the option line and entry points
#: Values an option of the ``%%tilecopy`` line may be given: valid ones, junk, unicode, odd whitespace, quotes.
OPTION_VALUES = {
    "launch": ["sim", "SIM", "off", "auto", "gpu", "moon", "ｓｉｍ", "s\u0131m", '"sim"', "'off'", "sim\u2028"],
    "arch": ["sm_100a", "sm_90a", "sm_90", "sm_80", "sm_1000a", "sm_１００a", "volta", "'sm_100a '", "sm_100a\x0c",
             "", '""', "sm_100a\u00a0"],
    "timeout": ["5", "0", "-1", "1e-9", "86400", "86401", "1e400", "inf", "nan", "1_0", "１０", "0x10", "", "1e5"],
    "seed": ["0", "7", "-1", "1.5", "99999999999999999999999", "１", "1_000", "x"],
    "out": ["res", "r2", "_", "_oh", "__", "_i3", "In", "Out", "get_ipython", "exit", "class", "match", "résumé",
            "9x", "a-b", "__dunder__"],
    "heatmap": ["tmem", "data", "tmem,data", "none", "none,tmem", "pie", "TMEM", "ｔmem", ",", "tmem,,data"],
    "color-by": ["warp", "thread", "reg", "instr", "WARP", "lane", "wärp"],
    "export": ["tvmscript", "TVMScript", "tvm"],
    "compare": ["tvm", "TVM", "torch"],
    "view": ["html", "text", "widget", "pdf"],
}
_SPACES = [" ", " ", " ", "  ", "\t", " \t ", "\u00a0", "\u2003", "\x0b", "\x0c"]


@st.composite
def option_lines(draw, compare: bool = False) -> str:
    """The words after ``%%tilecopy``: flags from the option table (their ``--no-`` forms, misspellings), values
    from :data:`OPTION_VALUES`, NAME words, quotes, unicode and odd whitespace.  ``--compare`` only when
    ``compare`` (TVM is slow), and never ``--launch gpu`` with ``--bench`` timing (no GPU here anyway)."""
    from tilemagic.options import option_flags

    flags = [f for f in option_flags() if compare or "compare" not in f]
    words = []
    if draw(st.booleans()):
        words.append(draw(st.sampled_from(["cellname", "k2", "erf", "hypot", "M_PI", "9bad", "név", "a.b", "main"])))
    for _ in range(draw(st.integers(0, 3))):
        f = draw(st.sampled_from(flags * 3 + ["bogus", "launc", "-launch", "timeout=3", "--"]))
        word = ("" if f.startswith("-") else "--") + f
        key = f.removeprefix("no-")
        if key in OPTION_VALUES and not f.startswith("no-"):
            tame = draw(st.booleans())  # half of the values are good ones, after a plain space
            value = draw(st.sampled_from(OPTION_VALUES[key][:2] if tame else OPTION_VALUES[key]))
            word += ("=" if draw(st.integers(0, 3)) == 0 else " " if tame else draw(st.sampled_from(_SPACES))) + value
        words.append(word)
    if draw(st.integers(0, 6)) == 0:
        words.insert(draw(st.integers(0, len(words))), draw(st.sampled_from(['"', "'", "\\", "#", "ä", "\u2028",
                                                                              "--launch", "%%tilecopy"])))
    sep = draw(st.sampled_from(_SPACES))
    return sep + sep.join(words) + draw(st.sampled_from(["", " ", "\t", "\u00a0"]))


#: The entry points a fuzzed cell goes through (``export``: the API with ``--export tvmscript`` on the line;
#: ``compare``: with ``--compare tvm``, a small share, only when apache-tvm is installed).
ENTRIES = ("api", "magic", "cli", "export", "compare")


@st.composite
def entry_cells(draw, compare: bool = False):
    """``(entry, option line, cell body)``: a valid or mutated cell behind a fuzzed ``%%tilecopy`` line, through
    one of the entry points but ``compare`` (only ``compare`` when ``compare``)."""
    body = draw(valid_cells()) if draw(st.booleans()) else draw(mutated_cells())
    body = "\n".join(ln for ln in body.split("\n") if not ln.lstrip().startswith("%%tilecopy"))
    entry = "compare" if compare else draw(st.sampled_from([e for e in ENTRIES if e != "compare"]))
    line = draw(option_lines(compare=entry == "compare"))
    if entry == "export":
        line += " --export tvmscript"
    elif entry == "compare":
        line += " --compare tvm"
    return entry, line, body


def _check_located(e: TileMagicError, prefix: str = "tilecopy") -> str:
    if e.line is None or e.col is None or e.line < 1 or e.col < 1 or not e.message:
        raise Violation(f"unlocated {type(e).__name__}: {e.message!r}") from e
    try:
        text = e.render()
    except Exception as exc:
        raise Violation(f"render() of {type(e).__name__} raised {type(exc).__name__}: {exc}") from exc
    if not text.startswith(f"{prefix}:{e.line}:{e.col}:") or "^" not in text:
        raise Violation(f"render() does not start with the location or has no caret: {text[:120]!r}")
    return type(e).__name__


_SHELL = None


def _shell():
    global _SHELL
    if _SHELL is None:
        from IPython.core.interactiveshell import InteractiveShell

        _SHELL = InteractiveShell.instance()
        _SHELL.extension_manager.load_extension("tilemagic")
    return _SHELL


def close_shell() -> None:
    """Unload the extension and drop the shell :func:`entry_outcome` made (tests share IPython's singleton)."""
    global _SHELL
    if _SHELL is not None:
        from IPython.core.interactiveshell import InteractiveShell

        _SHELL.extension_manager.unload_extension("tilemagic")
        InteractiveShell.clear_instance()
        _SHELL = None


def entry_outcome(entry: str, line: str, body: str, tmpdir: str) -> str:
    """Run one cell through ``entry`` (see :data:`ENTRIES`) and name the outcome (as :func:`outcome`).

    Raises
    ------
    Violation
        Anything but a result or a located TileMagicError (from a file: located ``FILE:line:col``, with a
        caret); a cell whose global buffers exceed :data:`MAX_SIM_BYTES` is only lowered.
    """
    import contextlib
    import io
    import os

    from tilemagic.cli import main as cli_main

    src = f"%%tilecopy{line}\n{body}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:  # the cell's size first (lowered only): the entry then runs it for real when it is small
            res = tilemagic.tilecopy(src, launch="off", export=None, compare=None, namespace=NAMESPACE,
                                     emit_warnings=False)
            launch = None if _global_bytes(res) <= MAX_SIM_BYTES else "off"
        except TileMagicError as e:  # the entry must report the same error, located its own way
            _check_located(e)
            launch = "off"
        except Exception as e:
            raise Violation(f"{type(e).__name__}: {e}") from e
        try:
            if entry == "cli":
                path = os.path.join(tmpdir, "fuzz.tile")
                with open(path, "w", encoding="utf-8") as f:
                    f.write(src)
                err = io.StringIO()
                argv = ["run", path] + (["--launch", "off"] if launch else [])
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                    rc = cli_main(argv)
                first = (err.getvalue().splitlines() or [""])[0]
                if rc == 2 and not re.match(rf"{re.escape(path)}:\d+:\d+: \w+: ", first):
                    raise Violation(f"the CLI's error does not name the file with line:col: {first[:160]!r}")
                if rc not in (0, 1, 2):
                    raise Violation(f"the CLI exited {rc}")
                return {0: "PASS", 1: "FAIL", 2: "cli-error"}[rc]
            if entry == "magic":
                ip = _shell()
                ip.user_ns.update(NAMESPACE)
                with contextlib.redirect_stdout(io.StringIO()):
                    res = ip.run_cell_magic("tilecopy", line + (" --launch off" if launch else ""), body)
            else:
                res = tilemagic.tilecopy(src, launch=launch, namespace=NAMESPACE, emit_warnings=False)
        except TileMagicError as e:
            return _check_located(e)
        except Violation:
            raise
        except Exception as e:
            raise Violation(f"{entry}: {type(e).__name__}: {e}") from e
    if res is None or res.launch is None:
        return "lowered"
    return "PASS" if res.launch.passed else "FAIL"
