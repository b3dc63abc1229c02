"""Thread axes and execution scopes of one CTA (TVM TIRx's axis registry, ``apache-tvm 0.27.0.post1``).

A *scope* is a set of threads that run an op together: a thread, a warp (32 threads), a
warpgroup (4 consecutive warps, 128 threads, the unit of PTX ISA 9.0's ``wgmma``) or the
whole CTA.
A *thread axis* numbers one kind of sub-unit inside one kind of scope, e.g. ``laneid`` the threads
of a warp.  Every axis is a closed form of the CTA-linear thread id ``tx`` (``threadIdx.x``)::

    axis = (tx // div) % mod        (div, mod) = axis_def(axis); no modulo when mod is None

Adding an axis here is enough: the language accepts it in ``n@AXIS``, register layouts may use
it, the evaluator, the simulator, the printer and the code generator define it from this table.
"""

from __future__ import annotations

#: Execution scopes, innermost first (the index is the scope's rank).
SCOPES: tuple[str, ...] = ("thread", "warp", "warpgroup", "cta")
SCOPE_RANK: dict[str, int] = {s: i for i, s in enumerate(SCOPES)}
#: Threads in one instance of a scope; a CTA's size is the kernel's (``threads=``).
THREADS_PER: dict[str, int] = {"thread": 1, "warp": 32, "warpgroup": 128}

#: Thread axis -> (subscope, scope): one step of the axis is one ``subscope``, the axis ranges
#: over one ``scope``.  The printer and the code generator declare axes in this order.
AXIS_SCOPES: dict[str, tuple[str, str]] = {
    "laneid": ("thread", "warp"),
    "warpid": ("warp", "cta"),
    "tid_in_wg": ("thread", "warpgroup"),
    "wid_in_wg": ("warp", "warpgroup"),
    "wgid": ("warpgroup", "cta"),
    "tx": ("thread", "cta"),
}
THREAD_AXES: tuple[str, ...] = tuple(AXIS_SCOPES)
#: Memory axes of a layout: ``m`` (element offset in global/shared/register storage) and the
#: TMEM lane and 32-bit column (PTX ISA 9.0 §9.7.16.1).
MEMORY_AXES: tuple[str, ...] = ("m", "TLane", "TCol")
#: (subscope, scope) -> the one axis that expresses it.
CANONICAL_AXIS: dict[tuple[str, str], str] = {v: k for k, v in AXIS_SCOPES.items()}
#: Scope -> the axis that numbers the threads of one instance (``warp`` -> ``laneid``).
SCOPE_TID: dict[str, str] = {s: CANONICAL_AXIS[("thread", s)] for s in SCOPES[1:]}
#: Thread axis -> CTA-linear threads per step (``wid_in_wg`` -> 32).
AXIS_WEIGHT: dict[str, int] = {a: THREADS_PER[sub] for a, (sub, _) in AXIS_SCOPES.items()}


def axis_def(axis: str) -> tuple[int, int | None]:
    """``(div, mod)`` with ``axis = (tx // div) % mod`` (``mod`` None: the axis spans the CTA).

    Raises
    ------
    KeyError
        ``axis`` is not in :data:`AXIS_SCOPES`.
    """
    sub, scope = AXIS_SCOPES[axis]
    div = THREADS_PER[sub]
    return div, (None if scope == "cta" else THREADS_PER[scope] // div)
