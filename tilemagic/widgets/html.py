"""Static ``text/html`` report of a :class:`~tilemagic.result.TileCopyResult`.

One self-contained fragment that renders the same in JupyterLab, VS Code, nbviewer,
nbconvert and GitHub: inline styles only (no ``<style>`` block, no scripts, no
external resources), Pygments with ``HtmlFormatter(noclasses=True)``, the heatmap as
a ``data:image/png;base64`` image, and no random ids, so the HTML is deterministic
(nbval compares ``text/html``).  Class names all start with ``tm-`` and are hooks
only (nothing depends on them for styling).

Every line of the IR and CUDA panes is wrapped in
``<span class="tm-line" data-src-line="N">`` with ``N`` the description line that
produced it (``result.ir_lines`` / ``result.cuda_lines``; the attribute is omitted for
scaffolding lines whose entry is None), and every description line carries its own
number the same way, so hover highlighting can be added later without re-rendering.

The section builders (:func:`banner_html`, :func:`dispatch_html`, ...) are shared with
the ipywidgets view (:mod:`tilemagic.widgets.view`).
"""

from __future__ import annotations

import base64
import functools
from html import escape
from typing import List, Optional, Sequence

from .text import (
    array_summary,
    cuda_title,
    execution_note,
    is_native_blackwell,
    launch_headline,
    tmem_summary_rows,
    uses_tmem,
)

__all__ = [
    "render_html",
    "banner_html",
    "source_html",
    "dispatch_html",
    "code_pane_html",
    "code_grid_html",
    "emulated_html",
    "heatmap_html",
    "tmem_html",
    "launch_html",
    "warnings_html",
    "highlight_lines",
]

_FONT = "font-family:-apple-system,BlinkMacSystemFont,'Segoe UI',Helvetica,Arial,sans-serif"
_MONO = "font-family:SFMono-Regular,Menlo,Consolas,'Liberation Mono',monospace"
_PRE = (f"margin:0;padding:6px 8px;{_MONO};font-size:12px;line-height:1.4;white-space:pre;"
        "background:#f8f8f8;color:#1f2328;text-align:left")
_PANE = "border:1px solid #d0d7de;border-radius:6px;overflow:auto;max-height:480px;min-width:0;background:#f8f8f8"
_PANE_HEAD = (f"{_FONT};font-size:12px;font-weight:600;padding:4px 8px;background:#eef1f4;"
              "border-bottom:1px solid #d0d7de;position:sticky;top:0")
_H = f"{_FONT};font-size:14px;font-weight:600;margin:14px 0 6px 0;color:#1f2328"
_TABLE = f"border-collapse:collapse;{_FONT};font-size:12px;margin:4px 0 10px 0"
_TH = "text-align:left;padding:3px 8px;border-bottom:2px solid #d0d7de;background:#f6f8fa"
_TD = "text-align:left;vertical-align:top;padding:3px 8px;border-bottom:1px solid #eaeef2"
_TD_R = _TD.replace("text-align:left", "text-align:right")
_VERDICT = {
    "chosen": "background:#dafbe1;color:#116329;border:1px solid #4ac26b",
    "rejected": "background:#ffebe9;color:#a40e26;border:1px solid #ff8182",
    "declined": "background:#fff8c5;color:#7d4e00;border:1px solid #d4a72c",
    "not tried": "background:#f6f8fa;color:#57606a;border:1px solid #d0d7de",
}
_BADGE = "display:inline-block;padding:0 6px;border-radius:10px;font-size:11px;font-weight:600"


# ----------------------------------------------------------------------------- highlighting
_CACHE: dict = {}


def _formatter():
    f = _CACHE.get("fmt")
    if f is None:
        from pygments.formatters import HtmlFormatter

        f = _CACHE["fmt"] = HtmlFormatter(noclasses=True, nowrap=True, style="default")
    return f


def _lexer(language: str):
    lx = _CACHE.get(language)
    if lx is None:
        from pygments.lexers import CudaLexer, PythonLexer, TextLexer

        cls = {"python": PythonLexer, "cuda": CudaLexer}.get(language, TextLexer)
        # stripnl=False: keep leading/trailing blank lines so line i stays line i
        lx = _CACHE[language] = cls(stripnl=False, ensurenl=True)
    return lx


def _split_lines(text: str) -> List[str]:
    if not text:
        return []
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return lines


def highlight_lines(text: str, language: str) -> List[str]:
    """Pygments-highlighted HTML, one string per source line (inline styles, no wrapper).

    Parameters
    ----------
    text : str
        Source text; line ``i`` of the result is line ``i`` of ``text``.
    language : {"python", "cuda", "text"}
        ``PythonLexer`` for the TIR-like IR (as TVM's ``cprint`` does), ``CudaLexer``
        for CUDA C++.

    Returns
    -------
    list of str
        Escaped HTML fragments whose spans never cross a line (Pygments closes every
        span at a newline); falls back to plain ``html.escape`` if the line count of
        the highlighted text ever differed.  Memoised on ``(text, language)``.
    """
    return list(_highlight_cached(text, language))


@functools.lru_cache(maxsize=64)
def _highlight_cached(text: str, language: str) -> tuple:
    lines = _split_lines(text)
    if not lines:
        return ()
    from pygments import highlight

    src = "\n".join(lines) + "\n"
    out = highlight(src, _lexer(language), _formatter()).split("\n")
    if out and out[-1] == "":
        out.pop()
    if len(out) != len(lines):  # pragma: no cover - defensive
        return tuple(escape(line) for line in lines)
    return tuple(out)


def _line_attr(src_line: Optional[int]) -> str:
    """`` data-src-line="N"`` (leading space), or '' for None."""
    return f' data-src-line="{int(src_line)}"' if src_line is not None else ""


def _line_span(html_line: str, src_line: Optional[int]) -> str:
    return f'<span class="tm-line"{_line_attr(src_line)}>{html_line}</span>'


# ----------------------------------------------------------------------------- sections
def banner_html(result) -> str:
    """Header banner: kernel, threads, backend/mode/arch, where TMEM really ran, reason."""
    launch = result.launch
    native = is_native_blackwell(launch)
    if launch is None or launch.backend == "off":
        colours = "background:#f6f8fa;border:1px solid #d0d7de"
    elif native:
        colours = "background:#dafbe1;border:1px solid #4ac26b"
    else:
        colours = "background:#ddf4ff;border:1px solid #54aeff"
    threads = getattr(result.kernel, "threads", None)
    parts = [f'<span style="font-size:15px;font-weight:700">{escape(result.name)}</span>']
    if threads is not None:
        parts.append(f"{int(threads)} threads")
    parts.append(escape(launch_headline(result)))
    head = ' <span style="color:#57606a">·</span> '.join(parts)
    note = escape(execution_note(result))
    if uses_tmem(result) and not native:
        note = f"<b>{note}</b>"
    reason = ""
    if launch is not None and launch.reason:
        reason = f'<div style="color:#57606a;font-size:12px">reason: {escape(launch.reason)}</div>'
    return (f'<div class="tm-banner" style="{_FONT};{colours};border-radius:6px;padding:8px 12px;'
            f'margin:0 0 8px 0;color:#1f2328">'
            f"<div>{head}</div><div style=\"font-size:13px;margin-top:2px\">{note}</div>{reason}</div>")


def source_html(result) -> str:
    """The description, numbered; each line ``<span data-src-line="n">`` (1-based)."""
    lines = _split_lines(result.source or "")
    width = len(str(len(lines))) if lines else 1
    body = "\n".join(
        _line_span(f'<span style="color:#8c959f;user-select:none">{str(i).rjust(width)} </span>{escape(t)}', i)
        for i, t in enumerate(lines, 1)
    )
    return (f'<div class="tm-pane" style="{_PANE}"><div style="{_PANE_HEAD}">Description</div>'
            f'<pre class="tm-code" style="{_PRE}">{body}</pre></div>')


def _reasons_cell(rec, c) -> str:
    """The why-table lines of ``c`` (DispatchRecord.why); the predicates that held in grey."""
    return "<br>".join(f'<span style="color:#8c959f;font-size:11px">{escape(w)}</span>' if w.startswith("ok: ")
                       else escape(w) for w in rec.why(c))


def dispatch_html(result) -> str:
    """One table per op: variant, priority, verdict (coloured), reasons; the op's line as heading."""
    if not result.dispatch:
        return f'<div style="{_FONT};font-size:12px;color:#57606a">(no copy ops)</div>'
    out = []
    for rec in result.dispatch:
        head = f"L{rec.line}: {rec.text}"
        tag = f"[{rec.op}" + (f", dispatch={rec.forced}]" if rec.forced else "]")
        rows = []
        for c in rec.candidates:
            v = c.verdict
            badge = f'<span style="{_BADGE};{_VERDICT.get(v, _VERDICT["not tried"])}">{escape(v)}</span>'
            weight = "font-weight:600;" if c.chosen else ""
            rows.append(
                f'<tr class="tm-cand"><td style="{_TD};{_MONO};{weight}">{escape(c.variant)}</td>'
                f'<td style="{_TD_R}">{int(c.priority)}</td>'
                f'<td style="{_TD}">{badge}</td><td style="{_TD}">{_reasons_cell(rec, c)}</td></tr>'
            )
        out.append(
            f'<div class="tm-dispatch"{_line_attr(rec.line)}>'
            f'<div style="{_FONT};font-size:12px;margin-top:6px"><code style="{_MONO}">{escape(head)}</code> '
            f'<span style="color:#57606a">{escape(tag)}</span></div>'
            f'<table style="{_TABLE}"><thead><tr><th style="{_TH}">variant</th><th style="{_TH}">priority</th>'
            f'<th style="{_TH}">verdict</th><th style="{_TH}">reason</th></tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>'
        )
    return "".join(out)


def code_pane_html(title: str, text: str, src_lines: Sequence[Optional[int]], language: str) -> str:
    """A scrollable (``max-height``) highlighted code pane with per-line ``data-src-line`` spans.

    Parameters
    ----------
    title : str
        Pane heading (escaped).
    text : str
    src_lines : sequence of int or None
        Description line for each line of ``text``; missing entries count as None.
    language : {"python", "cuda", "text"}
    """
    hl = highlight_lines(text or "", language)
    src = list(src_lines or [])
    body = "\n".join(_line_span(h, src[i] if i < len(src) else None) for i, h in enumerate(hl))
    return (f'<div class="tm-pane" style="{_PANE}"><div style="{_PANE_HEAD}">{escape(title)}</div>'
            f'<pre class="tm-code" data-lang="{escape(language)}" style="{_PRE}">{body}</pre></div>')


def code_grid_html(result) -> str:
    """IR and native CUDA side by side (CSS grid, two equal columns)."""
    ir = code_pane_html("IR (TIR-like)", result.ir or "", result.ir_lines, "python")
    cu = code_pane_html(cuda_title(result), result.cuda or "", result.cuda_lines, "cuda")
    return (f'<div class="tm-grid" style="display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);'
            f'gap:8px;align-items:start">{ir}{cu}</div>')


def emulated_html(result, open_: bool = False) -> str:
    """The emulated-TMEM CUDA inside a ``<details>`` ('' when there is none)."""
    if not result.cuda_emulated:
        return ""
    pane = code_pane_html("CUDA (TMEM emulated in global memory, pre-Blackwell)", result.cuda_emulated,
                          [], "cuda")
    return (f'<details class="tm-emulated" style="margin:8px 0"{" open" if open_ else ""}>'
            f'<summary style="{_FONT};font-size:12px;cursor:pointer">Emulated CUDA (what runs on GPUs '
            f'without tcgen05)</summary>{pane}</details>')


def heatmap_html(result, png: Optional[bytes] = None) -> str:
    """The heatmap PNG as a ``data:`` image (TMEM occupancy, or the shared tile without TMEM)."""
    k = result.kernel
    if k is None:
        return ""
    if not uses_tmem(result) and not [b for b in k.shared if b is not k.tmem_addr and b.name != "tmem_addr"]:
        return ""
    if png is None:
        try:
            from .heatmap import heatmap_png

            png = heatmap_png(result.kernel)
        except Exception as e:  # a display layer must not hide the rest of the report
            return (f'<div style="{_FONT};font-size:12px;color:#a40e26">heatmap unavailable: '
                    f"{escape(type(e).__name__)}: {escape(str(e))}</div>")
    what = "TMEM occupancy (TLane × TCol)" if uses_tmem(result) else "shared-memory tile (writing thread)"
    b64 = base64.b64encode(png).decode("ascii")
    return (f'<div class="tm-heatmap"><img alt="{escape(what)}" style="max-width:100%;height:auto" '
            f'src="data:image/png;base64,{b64}"></div>')


def tmem_html(result) -> str:
    """TMEM allocation table (buffer, dtype, shape, datapath, 32-bit columns); '' without TMEM."""
    k = result.kernel
    if k is None or not uses_tmem(result):
        return ""
    rows = "".join(
        "<tr>" + "".join(f'<td style="{_TD}">{escape(x)}</td>' for x in r) + "</tr>" for r in tmem_summary_rows(k)
    )
    head = "".join(f'<th style="{_TH}">{h}</th>' for h in ("buffer", "dtype", "shape", "datapath", "columns"))
    return (f'<div style="{_FONT};font-size:12px">allocated {int(k.tmem_cols)} of 512 32-bit columns × 128 lanes</div>'
            f'<table class="tm-tmem" style="{_TABLE}"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>')


def _arrays_table(title: str, arrays: dict) -> str:
    if not arrays:
        return ""
    rows = []
    for name, arr in arrays.items():
        n, dt, shp, vals = array_summary(name, arr)
        rows.append(f'<tr><td style="{_TD};{_MONO}">{escape(n)}</td><td style="{_TD}">{escape(dt)}</td>'
                    f'<td style="{_TD}">{escape(shp)}</td><td style="{_TD};{_MONO}">{escape(vals)}</td></tr>')
    head = "".join(f'<th style="{_TH}">{h}</th>' for h in ("name", "dtype", "shape", "first values"))
    return (f'<div style="{_FONT};font-size:12px;font-weight:600">{escape(title)}</div>'
            f'<table style="{_TABLE}"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>')


def launch_html(result) -> str:
    """Inputs / outputs (small tables), checks (PASS green, FAIL red), timings with ``--bench``."""
    launch = result.launch
    if launch is None or launch.backend == "off":
        return f'<div style="{_FONT};font-size:12px;color:#57606a">not launched</div>'
    parts = [f'<div style="{_FONT};font-size:12px;margin-bottom:4px">{escape(launch.summary())}</div>']
    parts.append(_arrays_table("inputs", launch.inputs))
    parts.append(_arrays_table("outputs", launch.outputs))
    checks = []
    for c in launch.checks:
        style = _VERDICT["chosen"] if c.passed else _VERDICT["rejected"]
        extra = "" if c.passed else f" ({c.mismatches} of {c.total} elements differ)"
        checks.append(f'<div class="tm-check"{_line_attr(c.line)} style="{_FONT};font-size:12px;margin:2px 0">'
                      f'<span style="{_BADGE};{style}">{c.status}</span> '
                      f'<code style="{_MONO}">check {escape(c.text)}</code>{escape(extra)}</div>')
    parts.append("".join(checks) or f'<div style="{_FONT};font-size:12px;color:#57606a">(no checks)</div>')
    if launch.timing:
        items = "".join(f"<li>{escape(str(k))}: {escape(str(launch.timing[k]))}</li>" for k in sorted(launch.timing))
        parts.append(f'<div style="{_FONT};font-size:12px">timing:<ul style="margin:2px 0">{items}</ul></div>')
    return "".join(parts)


def warnings_html(result) -> str:
    """Warnings in a yellow box ('' when there are none)."""
    if not result.warnings:
        return ""
    items = "".join(f'<li style="white-space:pre-wrap">{escape(w)}</li>' for w in result.warnings)
    return (f'<div class="tm-warnings" style="{_FONT};font-size:12px;background:#fff8c5;border:1px solid #d4a72c;'
            f'border-radius:6px;padding:6px 12px;margin:8px 0;color:#3b2300"><b>Warnings</b>'
            f'<ul style="margin:4px 0 0 0;padding-left:18px">{items}</ul></div>')


def _section(title: str, body: str) -> str:
    return f'<div style="{_H}">{escape(title)}</div>{body}' if body else ""


# ----------------------------------------------------------------------------- report
def render_html(result, png: Optional[bytes] = None) -> str:
    """The full static HTML report of one ``%%tilecopy`` result.

    Parameters
    ----------
    result : tilemagic.result.TileCopyResult
    png : bytes, optional
        A pre-rendered heatmap PNG (default: ``heatmap_png(result.kernel)``).

    Returns
    -------
    str
        One ``<div class="tm-report">`` fragment: banner, warnings, dispatch why-tables,
        description, IR ∥ CUDA (scrollable panes, ``data-src-line`` per line), emulated
        CUDA in ``<details>``, TMEM allocation and heatmap, launch.  Deterministic.
    """
    body = [
        banner_html(result),
        warnings_html(result),
        _section("Dispatch", dispatch_html(result)),
        f'<details class="tm-source" style="margin:8px 0" open><summary style="{_FONT};font-size:12px;'
        f'cursor:pointer">Description</summary>{source_html(result)}</details>',
        _section("IR and CUDA", code_grid_html(result)),
        emulated_html(result),
        _section("TMEM" if uses_tmem(result) else "Shared memory", tmem_html(result) + heatmap_html(result, png)),
        _section("Launch", launch_html(result)),
    ] + [_section(sec.title, sec.html or f'<pre style="overflow:auto;margin:0">{escape(sec.text)}</pre>')
         for sec in getattr(result, "sections", ())]  # extra sections (--export, --compare)
    return (f'<div class="tm-report" style="{_FONT};color:#1f2328;max-width:100%">'
            + "".join(b for b in body if b) + "</div>")
