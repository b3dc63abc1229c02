"""Which names a description may give its kernel and buffers.

Buffer and kernel names appear verbatim in the generated CUDA and IR, so they must
not collide with C/C++/CUDA keywords, types, library functions and macros that the
CUDA headers define, nor with the names tilemagic's own generated code uses.  The
parser already limits names to ASCII identifiers; this module rejects the rest with
a located error (the injection guard of the pipeline: nothing else in a cell reaches
the CUDA text as an identifier).

Two sources: rules (C/C++ and Python keywords, the implementation-reserved ``__x`` and
``_X`` forms, CUDA's macro prefixes, ``limits.h``-style macros, tilemagic's own names)
and :data:`~tilemagic.lower.cuda_reserved.CUDA_RESERVED`, the names of the headers the
generated code includes (``erf``, ``hypot``, ``M_PI``, ``EXIT_SUCCESS``, ``printf`` ...)
that nvcc fails to compile as a buffer or kernel name: derived by compiling probes
(``tools/cuda_names.py``), never listed by hand; ``tests/unit/lang/test_identifiers.py``
derives it again with the nvcc on PATH.
"""

from __future__ import annotations

import keyword
import re

from ..arch.cluster import CTA_RANK
from ..arch.threads import THREAD_AXES
from ..errors import Span, TileTypeError
from .cuda_reserved import CUDA_RESERVED

# C and C++ keywords, including the alternative operator tokens (and, xor, ...) and C11/C++20 additions
_CXX_KEYWORDS = set("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t char32_t class compl
concept const consteval constexpr constinit const_cast continue co_await co_return co_yield decltype default delete
do double dynamic_cast else enum explicit export extern false float for friend goto if inline int long mutable
namespace new noexcept not not_eq nullptr operator or or_eq private protected public register reinterpret_cast
requires restrict return short signed sizeof static static_assert static_cast struct switch template this
thread_local throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t while xor
xor_eq _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn _Pragma _Static_assert _Thread_local
""".split())

# names the generated IR, CUDA and TMEM emulation use; `cuda`: the namespace of <cuda/std/cstdint>, which the
# NVRTC build includes instead of <stdint.h> (the derived table comes from nvcc, which never sees it)
_TILEMAGIC_NAMES = {"tmem_addr", "tm", "TmEmu", "get_tmem_addr", "cuda", *THREAD_AXES, CTA_RANK}
_TILEMAGIC_PATTERN = re.compile(r"^(tm_|TM_|Tm)")  # tilemagic's emulation and helpers
_C_PATTERNS = (
    re.compile(r"^__"),  # implementation-reserved in C/C++, CUDA intrinsics
    re.compile(r"^_[A-Z]"),  # implementation-reserved in C/C++
    re.compile(r"^(CUDA|CUDART|NV_|NVRTC)"),  # CUDA macros
    re.compile(r"^[A-Z][A-Z0-9]*_(MAX|MIN|BIT|DIG|EPSILON)$"),  # limits.h / float.h / stdint.h macros
)


def rule_reason(name: str) -> str | None:
    """Why a rule (not the derived table) rejects ``name``: ``"keyword"``, ``"cuda"``, ``"tilemagic"``, or None."""
    if name in _CXX_KEYWORDS or keyword.iskeyword(name):
        return "keyword"
    if any(p.match(name) for p in _C_PATTERNS):
        return "cuda"
    if name in _TILEMAGIC_NAMES or _TILEMAGIC_PATTERN.match(name):
        return "tilemagic"
    return None


def reserved_reason(name: str) -> str | None:
    """Why ``name`` cannot name a buffer or a kernel (see :func:`rule_reason`; ``"cuda"`` also for a name of
    :data:`CUDA_RESERVED`), or None when it can."""
    return rule_reason(name) or ("cuda" if name in CUDA_RESERVED else None)


def suggest_name(name: str) -> str:
    """A legal name close to a rejected ``name`` (itself passing :func:`reserved_reason`): ``erf`` -> ``erf_buf``."""
    stem = name.lstrip("_") or "x"
    if not (stem[0].isalpha() and stem.isascii()):
        stem = "x" + stem
    for cand in (f"{stem}_buf", f"{stem}_t", f"my_{stem}", *(f"{stem}_buf{k}" for k in range(2, 100))):
        if reserved_reason(cand) is None:
            return cand
    return "buf"


_MESSAGES = {
    "keyword": "'{name}' is a C/C++ or Python keyword and cannot name a {what}",
    "cuda": "'{name}' is a CUDA/C name the generated code would collide with; it cannot name a {what}",
    "tilemagic": "'{name}' is reserved by tilemagic's generated code and cannot name a {what}",
}


def check_identifier(name: str, span: Span | None, what: str) -> None:
    """Reject a buffer or kernel name that would collide in the generated CUDA/IR.

    Raises
    ------
    TileTypeError
        Located at ``span``, with a hint proposing another name that is itself legal
        (:func:`suggest_name`).
    """
    reason = reserved_reason(name)
    if reason is not None:
        raise TileTypeError(_MESSAGES[reason].format(name=name, what=what), span,
                            hint=f"rename it, e.g. '{suggest_name(name)}'")
