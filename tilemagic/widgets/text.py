"""Deterministic ``text/plain`` report of a :class:`~tilemagic.result.TileCopyResult`.

This is what nbval compares and what terminals show, so it contains no addresses,
temp paths, random ids or timings (timings only when ``result.launch.timing`` is set,
i.e. with ``--bench``).  The helpers that phrase the launch mode
(:func:`launch_headline`, :func:`execution_note`) are shared with the HTML renderer; values
are formatted by :mod:`tilemagic.widgets.format`, TMEM columns come from the placement
model (:mod:`tilemagic.widgets.placement`), never from the figures.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .format import (
    MAX_LISTED,
    NOT_LAUNCHED,
    array_summary,
    capped_list,
    check_overflow,
    dispatch_overflow,
    elided_text,
    cp_descriptor_rows,
    cp_heading,
    cp_listing,
    mismatch_lines, split_sections, timeline_summary, tma_box_phrase)
from .placement import (async_pictures, async_timeline, cluster_placement, cluster_receipts, cluster_size,
                        cluster_summary, cp_declines, cp_ops, cp_simulated, swizzle_chunks, tma_boxes, tmem_columns)

__all__ = [
    "async_summary_lines",
    "cp_simulated_line",
    "timeline_line",
    "cp_decline_line",
    "cp_descriptor_lines",
    "cuda_title",
    "execution_note",
    "is_native_blackwell",
    "launch_headline",
    "render_text",
    "tmem_summary_rows",
    "uses_tmem",
]

_BLACKWELL_ARCH = re.compile(r"sm_1\d\da")


# ----------------------------------------------------------------------------- phrasing
def uses_tmem(result) -> bool:
    """Whether the lowered kernel allocates Tensor Memory (``kernel.tmem_cols > 0``)."""
    return int(getattr(result.kernel, "tmem_cols", 0) or 0) > 0


def is_native_blackwell(launch) -> bool:
    """True only for a CuPy launch in a native ``sm_100a``-family mode (tcgen05 ran on hardware).

    Parameters
    ----------
    launch : tilemagic.result.LaunchResult or None

    Returns
    -------
    bool
        ``backend == "cupy"``, the mode says "native" (not "emulated") and the mode or
        ``arch`` names an arch-specific Blackwell target (``sm_100a``, ``sm_103a`` ...).
    """
    if launch is None or launch.backend != "cupy":
        return False
    mode = (launch.mode or "").lower()
    if "emulat" in mode or "native" not in mode:
        return False
    return bool(_BLACKWELL_ARCH.search(mode) or _BLACKWELL_ARCH.search(launch.arch or ""))


def launch_headline(result) -> str:
    """``backend=sim (CPU simulator)`` style summary, or ``not launched``."""
    launch = result.launch
    if launch is None or launch.backend == "off":
        return "not launched"
    return launch.summary()


def execution_note(result) -> str:
    """One sentence saying where the kernel (and its TMEM) actually ran.

    States plainly when TMEM was simulated (CPU model) or emulated (global memory on a
    pre-Blackwell GPU), and that nothing ran on Blackwell unless the launch was a CuPy
    launch in a native ``sm_100a`` mode.
    """
    launch, tmem = result.launch, uses_tmem(result)
    if launch is None or launch.backend == "off":
        return "Not launched: nothing ran (IR and CUDA only)."
    if launch.backend == "sim":
        if tmem:
            return ("TMEM simulated: the CPU simulator ran the IR with a NumPy model of TMEM "
                    "(128 lanes × 512 32-bit columns); nothing ran on a GPU or on Blackwell.")
        return "Simulated: the CPU simulator ran the IR; nothing ran on a GPU."
    where = launch.device or (f"a GPU ({launch.arch})" if launch.arch else "a GPU")
    if is_native_blackwell(launch):
        return f"Ran natively on Blackwell: tcgen05 instructions executed on {where} ({launch.arch or launch.mode})."
    if launch.backend == "cupy-emulated" or "emulat" in (launch.mode or "").lower():
        if tmem:
            return (f"TMEM emulated in global memory on {where} (the emulated CUDA ran); "
                    "nothing ran on Blackwell.")
        return f"Ran on {where} (emulation mode); nothing ran on Blackwell."
    return f"Ran on {where}; nothing ran on Blackwell" + (" and TMEM was not exercised natively." if tmem else ".")


# ----------------------------------------------------------------------------- TMEM
def tmem_summary_rows(kernel) -> list[tuple[str, str, str, str, str]]:
    """``(name, dtype, shape, datapath, "cols a-b")`` for each TMEM buffer of ``kernel``.

    The columns are the TMEM plan's (:func:`~tilemagic.widgets.placement.tmem_columns`).
    """
    rows = []
    for b in getattr(kernel, "tmem", ()) or ():
        a, z = tmem_columns(b)
        cols = f"cols {a}-{z - 1}" if z - 1 > a else f"col {a}"
        dp = b.datapath or "?"
        if b.sub_slab and b.datapath == "F":
            dp += f" (sub_slab={b.sub_slab})"
        rows.append((b.name, b.dtype, "[" + ", ".join(str(int(d)) for d in b.shape) + "]", dp, cols))
    return rows


def cuda_title(result) -> str:
    """``CUDA (native, sm_100a)``: the arch from the launch, else from the options."""
    arch = None
    if result.launch is not None and result.launch.arch:
        arch = result.launch.arch
    else:
        arch = result.options.arch
    return "CUDA (native" + (f", {arch}" if arch else "") + ")"


def _table(rows: Sequence[tuple[str, ...]], indent: str = "  ") -> list[str]:
    if not rows:
        return []
    n = max(len(r) for r in rows)
    widths = [max(len(r[i]) for r in rows if i < len(r)) for i in range(n)]
    out = []
    for r in rows:
        cells = [r[i].ljust(widths[i]) if i < len(r) - 1 else r[i] for i in range(len(r))]
        out.append((indent + "  ".join(cells)).rstrip())
    return out


def _block(title: str, body: str) -> list[str]:
    head = f"== {title} "
    return [head + "=" * max(3, 78 - len(head)), body.rstrip("\n") if body else "(empty)", ""]


def _box_phrase(op) -> str:
    return (f"{tma_box_phrase(op)}, {op['oob']} elements out of bounds"
            + ("" if op["determined"] else " (some not static)"))


def async_summary_lines(result) -> list[str]:
    """The text report's "Asynchronous copies" lines: each TMA op's boxes (:func:`~tilemagic.widgets.placement.
    tma_boxes`), each swizzled destination (:func:`~tilemagic.widgets.placement.swizzle_chunks`), the
    simulator's timeline in numbers (:func:`~tilemagic.widgets.placement.async_timeline`), and the pictures
    that show them, and in a cluster what each CTA's shared memory received (:func:`~tilemagic.widgets.
    placement.cluster_summary`); empty without asynchronous copies or a cluster."""
    k = result.kernel
    kinds = async_pictures(k, result.launch)
    if not kinds:
        return []
    out = []
    for op in tma_boxes(k):
        tm = op["tmap"]
        arrow = f"{tm.buf.name} -> {op['smem']}" if op["direction"] == "g2s" else f"{op['smem']} -> {tm.buf.name}"
        out.append(f"L{op['line']} {op['variant']} {op['direction'].upper()} {arrow}: {tm.name} dims "
                   f"{list(tm.dims)}, {_box_phrase(op)}")
    for sw in swizzle_chunks(k):
        n = int((sw["physical"] >= 0).sum())
        out.append(f"{sw['buffer']}: {n} 16-byte chunks swizzled ({sw['via']}: {sw['how']})")
    if "timeline" in kinds:
        out.append(timeline_line(result))
    if "cluster" in kinds:
        try:
            out += cluster_summary(cluster_placement(k, cluster_receipts(result.launch)))
        except ValueError as e:  # (an inconsistent record of the simulator: said, not raised)
            out.append(f"cluster receipts: {e}")
    out.append("pictures: " + ", ".join(f"result.heatmap(kind={kd!r})" for kd in kinds))
    return out


def timeline_line(result) -> str:
    """``timeline: 4 copy issue(s) by thread 0 (warp 0), …`` of a simulated result
    (:func:`~tilemagic.widgets.format.timeline_summary`; ``; would hang at L12`` appended to a hang), for the text
    and HTML reports."""
    k = result.kernel
    tl = async_timeline(result.launch.hb, int(k.threads), cluster=cluster_size(k))
    line = f"timeline: {timeline_summary(tl)}"
    if tl["hang"]:
        line += f"; would hang at L{tl['hang']['line']}"
    return line


def cp_simulated_line(result) -> str | None:
    """``simulator: L15 128x256b: 4 of 4 landed, 1024 cells each; the TMEM cells written are the ones drawn``
    (:func:`~tilemagic.widgets.placement.cp_simulated`), for the text and HTML reports; None without a
    simulated ``tcgen05.cp``."""
    k = result.kernel
    sim = cp_simulated(result.launch, k) if k is not None else None
    if sim is None:
        return None
    done = ", ".join(f"L{line} {e['key']}: {e['landed']} of {e['executions']} landed, {e['cells']} cells each"
                     for line, e in sorted(sim["by_line"].items()))
    same = ("the TMEM cells written are the ones drawn" if sim["agrees"]
            else "the TMEM cells written differ from the IR's (see the tcgen05_cp picture)")
    return f"simulator: {done}; {same}"


def cp_decline_line(decline: dict) -> str:
    """One ``smem->tmem`` decline that names a place, in one line: ``L11 smem->tmem declined (128x256b, rule sbo): S
    at byte 1056 (the rule wants byte 1040): <the rule's message>``; of a decline without ``shape=`` (whose reason
    lists every candidate shape) the message of the shape the detail is about.

    Parameters
    ----------
    decline : dict
        One entry of :func:`~tilemagic.widgets.placement.cp_declines`.
    """
    det = decline["detail"]
    at = f" at byte {det.byte}" if det.byte is not None else ""
    want = f" (the rule wants byte {det.expected})" if det.expected is not None else ""
    lines = [ln.strip() for ln in decline["reason"].splitlines()]
    # without shape= the reason lists every candidate shape, one per line: the line of the shape the detail is about
    own = [ln[len(det.shape) + 1:].strip() for ln in lines[1:] if det.shape and ln.startswith(f"{det.shape}:")]
    why = own[0] if own else (lines[0] if lines else "")
    return (f"L{decline['line']} smem->tmem declined ({det.shape or 'no shape'}, rule {det.rule}): {det.buffer}"
            f"{at}{want}: {why}")


def cp_descriptor_lines(result) -> list[str]:
    """The text report's "tcgen05.cp descriptors" lines: for each ``tcgen05.cp`` of the kernel
    (:func:`~tilemagic.widgets.placement.cp_ops`), the instruction and its TMEM place, then its descriptor
    decoded field by field (:func:`~tilemagic.widgets.format.cp_descriptor_rows`); the first
    :data:`~tilemagic.widgets.format.MAX_LISTED` instructions, the rest counted; after a simulated launch what
    the simulator's cps wrote (:func:`~tilemagic.widgets.placement.cp_simulated`); then each ``smem->tmem``
    decline that names a place (:func:`~tilemagic.widgets.placement.cp_declines`).  Empty when there is
    neither."""
    k = result.kernel
    out: list[str] = []
    listed, more = cp_listing(cp_ops(k) if k is not None else [])
    for smem, cp in listed:
        out.append(cp_heading(cp, smem))
        out += _table([("field", "bits", "value")] + cp_descriptor_rows(cp, smem), "    ")
    if more:
        out.append(f"… {more} more tcgen05.cp not listed (all: result.heatmap(kind='tcgen05_cp'))")
    sim = cp_simulated_line(result)
    if sim is not None:
        out.append(sim)
    out += [cp_decline_line(d) for d in cp_declines(getattr(result, "dispatch", ()))]
    if out:
        out.append("pictures: result.heatmap(kind='tcgen05_cp')")
    return out


# ----------------------------------------------------------------------------- report
def render_text(result) -> str:
    """The deterministic plain-text report of one ``%%tilecopy`` result.

    Sections, in order: header (kernel, threads, backend/mode/arch or "not launched",
    where TMEM ran), dispatch why-tables (``DispatchRecord.table()``), IR, CUDA (the
    native source; the emulated one is only mentioned), TMEM allocation, warnings,
    launch (input/output summaries, ``check ...: PASS/FAIL`` with the first mismatches,
    timings with ``--bench``).

    Bounded whatever the cell: a text of more than :data:`~tilemagic.widgets.format.MAX_LINES`
    lines (IR, CUDA, a why-table, a warning, an extra section) shows its first and last lines
    around ``… N lines not shown (full text: result.ir)`` and every line is cut at
    :data:`~tilemagic.widgets.format.MAX_LINE_CHARS` characters
    (:func:`~tilemagic.widgets.format.elided_text`); why-tables are shown for the first
    :data:`~tilemagic.widgets.format.MAX_LISTED` ops, later ops one line each
    (:func:`~tilemagic.widgets.format.dispatch_overflow`); warnings and a check's mismatches
    are listed up to ``MAX_LISTED`` with the count of the rest.

    Parameters
    ----------
    result : tilemagic.result.TileCopyResult

    Returns
    -------
    str
        No trailing newline.  Identical for identical results (no addresses, temp paths
        or timings unless ``result.launch.timing`` is set).
    """
    k = result.kernel
    threads = getattr(k, "threads", None)
    lines: list[str] = []
    head = f"tilecopy {result.name}"
    if threads is not None:
        cluster = getattr(k, "cluster", 1)
        head += f" · cluster of {cluster} CTAs × {threads} threads" if cluster > 1 else f" · {threads} threads"
    head += f" · {launch_headline(result)}"
    lines.append(head)
    lines.append("  " + execution_note(result))
    if result.launch is not None and result.launch.reason:
        lines.append(f"  reason: {result.launch.reason}")
    lines.append("")

    # dispatch
    if result.dispatch:
        body = "\n\n".join([elided_text(rec.table(), "result.dispatch") for rec in result.dispatch[:MAX_LISTED]]
                           + ["\n".join(dispatch_overflow(result.dispatch))])
    else:
        body = "(no copy ops)"
    lines += _block("Dispatch", body.rstrip("\n"))
    beside, others = split_sections(result)
    for i, sec in beside:  # (what each candidate costs, beside which ones accepted: --cost)
        lines += _block(sec.title, elided_text(sec.text, f"result.sections[{i}].text"))

    lines += _block("IR", elided_text(result.ir or "", "result.ir"))
    lines += _block(cuda_title(result), elided_text(result.cuda or "", "result.cuda"))
    if result.cuda_emulated:
        n = len(result.cuda_emulated.rstrip("\n").split("\n"))
        lines.insert(len(lines) - 1, f"(emulated-TMEM CUDA for pre-Blackwell GPUs: {n} lines, in result.cuda_emulated)")

    # TMEM
    if k is not None and uses_tmem(result):
        tbody = [f"allocated {int(k.tmem_cols)} of 512 32-bit columns × 128 lanes"]
        tbody += _table([("buffer", "dtype", "shape", "datapath", "columns")] + tmem_summary_rows(k))
        lines += _block("TMEM", "\n".join(tbody))

    if k is not None:
        asy = async_summary_lines(result)
        if asy:
            lines += _block("Asynchronous copies", "\n".join(asy))
        cpl = cp_descriptor_lines(result)
        if cpl:
            lines += _block("tcgen05.cp descriptors", "\n".join(cpl))

    if result.warnings:
        shown = capped_list([f"- {elided_text(w, 'result.warnings')}" for w in result.warnings[:MAX_LISTED]],
                            "warnings (all: result.warnings)", total=len(result.warnings))
        lines += _block("Warnings", "\n".join(shown))

    # launch
    launch = result.launch
    if launch is None or launch.backend == "off":
        lines += _block("Launch", NOT_LAUNCHED)
    else:
        body_l: list[str] = [launch.summary()]
        if launch.inputs:
            body_l.append("inputs:")
            body_l += _table([array_summary(n, a) for n, a in launch.inputs.items()], "  ")
        if launch.outputs:
            body_l.append("outputs:")
            body_l += _table([array_summary(n, a) for n, a in launch.outputs.items()], "  ")
        for c in launch.checks[:MAX_LISTED]:
            body_l.append(str(c))
            body_l += ["  " + x for x in mismatch_lines(getattr(c, "first", ()), c.mismatches)]
        body_l += check_overflow(launch.checks)
        if not launch.checks:
            body_l.append("(no checks)")
        if launch.hb_summary():
            body_l.append(launch.hb_summary())
        if launch.timing:
            body_l.append("timing:")
            for key in sorted(launch.timing):
                body_l.append(f"  {key}: {launch.timing[key]}")
        lines += _block("Launch", "\n".join(body_l))
    for i, sec in others:  # extra sections (--export, --compare, --cost's banks and SASS)
        lines += _block(sec.title, elided_text(sec.text, f"result.sections[{i}].text"))
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(line.rstrip() for line in lines)
