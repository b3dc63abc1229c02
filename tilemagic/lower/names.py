"""Which names a description may give its kernel and buffers.

Buffer and kernel names appear verbatim in the generated CUDA and IR, so they must
not collide with C/C++/CUDA keywords, types, library functions and macros that the
CUDA headers define, nor with the names tilemagic's own generated code uses.  The
parser already limits names to ASCII identifiers; this module rejects the rest with
a located error (the injection guard of the pipeline: nothing else in a cell reaches
the CUDA text as an identifier).
"""

from __future__ import annotations

import keyword
import re

from ..arch.threads import THREAD_AXES
from ..errors import Span, TileTypeError

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

# CUDA built-in variables, types and common functions/macros of the CUDA and C headers
_CUDA_NAMES = set("""
threadIdx blockIdx blockDim gridDim warpSize dim3 half half2 nv_bfloat16 nv_bfloat162 bfloat16 uint ushort ulong
uchar longlong ulonglong size_t ptrdiff_t intptr_t uintptr_t int8_t uint8_t int16_t uint16_t int32_t uint32_t
int64_t uint64_t std cuda main printf malloc free memcpy memset memmove assert abort exit min max abs labs llabs
fabs fabsf sqrt sqrtf rsqrt rsqrtf exp expf exp2 exp2f log logf log2 log2f log10 pow powf sin sinf cos cosf tan
tanf tanh tanhf floor floorf ceil ceilf round roundf trunc truncf fmin fminf fmax fmaxf fma fmaf signbit isnan
isinf isfinite clock clock64 atomicAdd atomicCAS atomicExch atomicMin atomicMax NULL EOF INFINITY NAN HUGE_VAL
offsetof linux unix i386 errno stdin stdout stderr FILE va_list
""".split())
for _base in ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "longlong", "ulonglong", "float",
              "double"):
    _CUDA_NAMES.update(f"{_base}{n}" for n in (1, 2, 3, 4))

# names the generated IR, CUDA and TMEM emulation use
_TILEMAGIC_NAMES = {"tmem_addr", "tm", "TmEmu", "get_tmem_addr", *THREAD_AXES}
_TILEMAGIC_PATTERN = re.compile(r"^(tm_|TM_|Tm)")  # tilemagic's emulation and helpers
_C_PATTERNS = (
    re.compile(r"^__"),  # implementation-reserved in C/C++, CUDA intrinsics
    re.compile(r"^_[A-Z]"),  # implementation-reserved in C/C++
    re.compile(r"^(CUDA|CUDART|NV_|NVRTC)"),  # CUDA macros
    re.compile(r"^[A-Z][A-Z0-9]*_(MAX|MIN|BIT|DIG|EPSILON)$"),  # limits.h / float.h / stdint.h macros
)


def check_identifier(name: str, span: Span | None, what: str) -> None:
    """Reject a buffer or kernel name that would collide in the generated CUDA/IR.

    Raises
    ------
    TileTypeError
        Located at ``span``, with a hint proposing another name.
    """
    if name in _CXX_KEYWORDS or keyword.iskeyword(name):
        raise TileTypeError(f"'{name}' is a C/C++ or Python keyword and cannot name a {what}", span,
                            hint=f"rename it, e.g. '{name}_'")
    if name in _CUDA_NAMES or any(p.match(name) for p in _C_PATTERNS):
        raise TileTypeError(f"'{name}' is a CUDA/C name the generated code would collide with; it cannot name a {what}",
                            span, hint=f"rename it, e.g. '{name.lstrip('_') or 'x'}_buf'")
    if name in _TILEMAGIC_NAMES or _TILEMAGIC_PATTERN.match(name):
        raise TileTypeError(f"'{name}' is reserved by tilemagic's generated code and cannot name a {what}", span,
                            hint=f"rename it, e.g. '{name.lstrip('_') or 'x'}_buf'")
