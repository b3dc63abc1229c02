"""The ``--cost`` views: the candidates' cost table, the SASS pane and the shared-memory bank report.

Each is a report section (``result.sections``: title, text, HTML), so the text report, the HTML report and the
widget view show them through the same seam as ``--export`` and ``--compare``.  The SASS pane is a code pane
(:func:`tilemagic.widgets.html.code_pane_html`) whose lines carry their description line (``-lineinfo`` through the
CUDA line map), so hovering a line lights up the IR, CUDA and SASS lines of the same op.  Every conflicted
shared-memory instruction gets a picture (:func:`bank_figure`): its worst warp instance, lanes × banks.
"""

from __future__ import annotations

import base64
from html import escape

import numpy as np

from ..arch.banks import BANKS, lane_bank_map, phases
from .figures import _new_figure
from .format import MAX_LISTED
from .html import _MONO, _TABLE, _TD, _TD_R, _TH, FONT, code_pane_html

__all__ = ["bank_figure", "banks_html", "cost_sections", "costs_html", "sass_pane_html"]


def costs_html(report) -> str:
    """The candidates' table of every op (:class:`tilemagic.runtime.costs.CostReport`), the chosen row first."""
    if report.log and not report.ops:
        return f'<div style="{FONT};font-size:12px;color:#a40e26">costs not available: {escape(report.log)}</div>'
    out = [f'<div style="{FONT};font-size:12px;color:#57606a">{escape(report.text().splitlines()[0])}</div>']
    for op in report.ops[:MAX_LISTED]:
        rows = report.rows(op)
        head = "".join(f'<th style="{_TH}">{escape(h)}</th>' for h in rows[0])
        body = []
        for r in rows[1:]:
            weight = "font-weight:600;" if r[1] == "chosen" else ""
            if r[1] == "no":
                body.append(f'<tr><td style="{_TD};{_MONO}">{escape(r[0])}</td><td style="{_TD}">no</td>'
                            f'<td style="{_TD};color:#57606a" colspan="{len(rows[0]) - 2}">{escape(r[2])}</td></tr>')
                continue
            cells = "".join(f'<td style="{_TD_R}">{escape(x)}</td>' for x in r[2:])
            body.append(f'<tr><td style="{_TD};{_MONO};{weight}">{escape(r[0])}</td><td style="{_TD}">{r[1]}</td>'
                        f'{cells}</tr>')
        out.append(f'<div class="tm-costs" data-src-line="{int(op.line)}"><code class="tm-line tm-L{int(op.line)}" '
                   f'data-src-line="{int(op.line)}" style="{_MONO};font-size:12px">L{int(op.line)}: '
                   f'{escape(op.text)}</code><table style="{_TABLE}"><thead><tr>{head}</tr></thead>'
                   f'<tbody>{"".join(body)}</tbody></table></div>')
    if len(report.ops) > MAX_LISTED:
        out.append(f'<div style="{FONT};font-size:12px">… {len(report.ops) - MAX_LISTED} more ops (result.costs)'
                   f'</div>')
    return "".join(out)


def sass_pane_html(result, sass=None) -> str:
    """The SASS pane (``tm-sass``) of the native kernel, each line mapped to its description line."""
    s = sass if sass is not None else result.sass()
    if not s.ok:
        return f'<div style="{FONT};font-size:12px;color:#57606a">no SASS: {escape(s.log)}</div>'
    title = f"SASS ({s.tool}, {s.arch}" + (f"; {s.resources.text()}" if s.resources else "") + ")"
    return code_pane_html(title, s.text, s.lines, "text", role="tm-sass", where="result.sass().text")


def bank_figure(access):
    """Lanes × banks of the worst warp instance of one shared-memory instruction (a ``TileFigure``, Agg).

    A cell is coloured by the wavefront of its phase that serves the lane's word in that bank (white: the lane
    touches no word there); lanes that share a colour in a column read or write one word (a broadcast).  Phase
    boundaries (half / quarter warps, ldmatrix matrices) are drawn across; the title gives the instruction, the
    degree and the swizzle that removes the conflict when one exists.
    """
    addr, active, warp = access.worst
    m = lane_bank_map(addr, access.nbytes, active, access.matrix)
    fig = _new_figure()
    ax = fig.add_axes((0.07, 0.1, 0.62, 0.78))
    k = int(m.max()) + 1
    from matplotlib.colors import ListedColormap

    cmap = ListedColormap(["#ffffff"] + [f"C{i % 10}" for i in range(max(k, 1))])
    ax.imshow(m + 1, cmap=cmap, vmin=0, vmax=max(k, 1), aspect="auto", interpolation="nearest")
    for lanes in phases(access.nbytes, access.matrix)[1:]:
        ax.axhline(lanes[0] - 0.5, color="#1f2328", lw=1)
    ax.set_xlabel("bank")
    ax.set_ylabel("lane" if access.matrix is None else "lane (its row address)")
    ax.set_xticks(range(0, BANKS, 4))
    ax.set_yticks(range(0, 32, 4))
    fix = "no swizzle of 16-byte chunks removes it" if not access.swizzle else \
        f"{access.swizzle[0]} removes it ({access.swizzle[1]} wavefronts)"
    ax.set_title(f"L{access.line} {access.instr} {access.buffer}: {access.degree}-way, warp {warp}", fontsize=10)
    per = np.array([len(set(m[list(p)][:, b][m[list(p)][:, b] >= 0].tolist())) for p in
                    phases(access.nbytes, access.matrix) for b in range(BANKS)]).reshape(-1, BANKS)
    lines = [f"{access.executions:,} warp instructions", f"{access.wavefronts:,} wavefronts, ideal {access.ideal:,}",
             f"worst instance: {int(per.max(axis=1).sum())} wavefronts", "colour: wavefront within its phase",
             "", fix]
    fig.text(0.72, 0.86, "\n".join(lines), fontsize=9, va="top", family="monospace", wrap=True)
    return fig


def _bank_png(access) -> bytes:
    from .png import _draw_png

    return _draw_png(lambda: bank_figure(access))


def banks_html(report) -> str:
    """The bank table (:meth:`tilemagic.sim.banks.BankReport.text`) and a picture per conflicted instruction."""
    out = [f'<pre style="{_MONO};font-size:12px;margin:0 0 6px 0;overflow:auto">{escape(report.text())}</pre>']
    for a in report.conflicted()[:MAX_LISTED]:
        if a.worst is None:
            continue
        b64 = base64.b64encode(_bank_png(a)).decode("ascii")
        alt = f"L{a.line} {a.instr} {a.buffer}: lanes x banks, {a.degree}-way conflict"
        out.append(f'<div class="tm-banks" data-src-line="{int(a.line or 0)}"><img alt="{escape(alt)}" '
                   f'style="max-width:100%;height:auto" src="data:image/png;base64,{b64}"></div>')
    return "".join(out)


def cost_sections(result) -> list[tuple[str, str, str | None]]:
    """``(title, text, html)`` of the ``--cost`` sections: the candidates' costs, the shared-memory banks, SASS."""
    out: list[tuple[str, str, str | None]] = []
    if result.costs is not None:
        out.append(("Cost of every candidate", result.costs.text(), costs_html(result.costs)))
    if result.banks is not None:
        out.append(("Shared-memory banks", result.banks.text(), banks_html(result.banks)))
    s = result.sass()
    head = f"{s.tool}, {s.arch}" + (f"; {s.resources.text()}" if s.resources else "")
    out.append(("SASS", head + "\n" + s.text if s.ok else f"no SASS: {s.log}", sass_pane_html(result, s)))
    return out
