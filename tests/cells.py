"""Cell builders shared by the unit, golden and GPU tests (one definition of each test program)."""

EPC = {"float32": 1, "int32": 1, "float16": 2, "bfloat16": 2, "uint8": 4, "int8": 4}  # elements per 32-bit cell


def roundtrip_cell(dtype, width, tmem_cols=None, lo=0, alias=None):
    """global → local (reg) → TMEM (tcgen05.st) → local (tcgen05.ld) → global, with `check B == A`.

    ``lo``: first TMEM column (elements) of the window; ``alias``: place the window in a second
    tmem buffer declared ``at T + alias`` (32-bit columns).
    """
    tc = tmem_cols or (lo + width)
    region = f"T[:, {lo}:{lo + width}]" if (lo or tc != width) else "T"
    lines = ["kernel k threads=128", f"global A: {dtype}[128, {width}]", f"global B: {dtype}[128, {width}]",
             f"tmem T: {dtype}[128, {tc}]"]
    if alias is not None:
        lines.append(f"tmem V: {dtype}[128, {width}] at T + {alias}")
        region = "V"
    lines += [
        f"local a: {dtype}[128, {width}] @ S[(128, {width}) : (1@tid_in_wg, 1)]",
        f"local b: {dtype}[128, {width}] @ S[(128, {width}) : (1@tid_in_wg, 1)]",
        "wg.copy a <- A", f"wg.copy_async {region} <- a", "wait st", "cta_sync",
        f"wg.copy_async b <- {region}", "wait ld", "wg.copy B <- b", "check B == A",
    ]
    return "\n".join(lines)


# TVM's test_fallback_round_trip cases (scope, CTA threads, rows, cols) plus thread scope
FALLBACK_CASES = [
    ("warp", 32, 4, 6), ("warp", 32, 1, 8), ("wg", 128, 4, 6), ("wg", 128, 4, 8),
    ("cta", 256, 4, 8), ("cta", 1024, 8, 8), ("thread", 1, 4, 6), ("thread", 32, 2, 3),
]


def fallback_cell(scope, threads, rows, cols):
    """global → shared → global through copy/fallback, with an explicit cta_sync."""
    return f"""
kernel fb threads={threads}
global A: float32[{rows}, {cols}]
global B: float32[{rows}, {cols}]
shared S: float32[{rows}, {cols}]
{scope}.copy S <- A
cta_sync
{scope}.copy B <- S
check B == A
"""


# register layouts for copy/reg: (layout, rows, cols, scope, threads, dtype, expected per-thread summary)
REG_CASES = [
    ("S[(128, 8) : (1@tid_in_wg, 1)]", 128, 8, "wg", 128, "float16", "1 × ld.global.v4.u32"),
    ("S[(128, 8) : (1@tid_in_wg, 1)]", 128, 8, "wg", 128, "float32", "2 × ld.global.v4.u32"),
    ("S[(128, 3) : (1@tid_in_wg, 1)]", 128, 3, "wg", 128, "float32", "3 × ld.global.u32"),
    ("S[(32, 4) : (1@laneid, 1)]", 32, 4, "warp", 32, "float32", "1 × ld.global.v4.u32"),
    ("S[(32, 4) : (1@laneid, 1)]", 32, 4, "wg", 128, "float32", "1 × ld.global.v4.u32"),
    ("S[(4, 32, 8) : (1@wid_in_wg, 1@laneid, 1)]", 128, 8, "wg", 128, "uint8", "1 × ld.global.v2.u32"),
    ("S[(128, 2, 4) : (1@tid_in_wg, 1, 2)]", 128, 8, "wg", 128, "float32", "8 × ld.global.u32"),
    ("S[(128, 8) : (1@tid_in_wg, 1)]", 128, 8, "cta", 256, "float32", "2 × ld.global.v4.u32"),
    ("S[(256, 2) : (1@tx, 1)]", 256, 2, "cta", 256, "bfloat16", "1 × ld.global.u32"),
    ("S[(4, 6) : (6, 1)]", 4, 6, "thread", 1, "float32", "6 × ld.global.v4.u32"),
    ("S[(4, 6) : (1, 4)]", 4, 6, "thread", 1, "float32", "24 × ld.global.u32"),
]


def reg_cell(layout, rows, cols, scope="wg", threads=128, dtype="float32"):
    """global → local → global through copy/reg."""
    return f"""
kernel r threads={threads}
global A: {dtype}[{rows}, {cols}]
global B: {dtype}[{rows}, {cols}]
local a: {dtype}[{rows}, {cols}] @ {layout}
{scope}.copy a <- A
{scope}.copy B <- a
check B == A
"""
