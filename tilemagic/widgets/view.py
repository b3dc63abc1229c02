"""The ipywidgets stage view of a :class:`~tilemagic.result.TileCopyResult` (``--view widget``).

:class:`WidgetView` is a composite widget (a ``VBox``, built the way ipywidgets'
``interactive`` is: its parts are set in ``__init__``): the banner, a *source line*
selector, and a ``Tab`` over the stages -- Description, Dispatch, IR, CUDA, CUDA (emulated)
when the kernel uses TMEM, PTX, the result's own sections (``--export``, ``--compare``),
Heatmaps, Launch.  Every pane is an ``HTML`` widget built by the same section renderers as
the static report (:mod:`tilemagic.widgets.html`); the pictures are an ``Image`` driven by
``ToggleButtons``/``Dropdown`` controls (:class:`HeatmapPane`).  Nothing lives in an
``ipywidgets.Output`` widget: headless executors (nbconvert, nbclient, nbval) would leak
its content as stray ``stdout``.  Its display carries the static HTML and the text report
as fallbacks, so front ends without live widget state (nbconvert, GitHub, a reopened
notebook) show the report instead of an empty output.

Line mapping.  Selecting a description line re-renders the Description, IR, CUDA, CUDA
(emulated) and PTX panes with that line's lines highlighted (an inline style: ``HTML`` widget
values run no scripts) and named in each pane's header.  In JupyterLab, tilemagic's extension
(``labextension/src/panes.ts``) scrolls each pane to its first highlighted line; without it, a pane
whose first highlighted line is below the fold lists them above its code
(:func:`tilemagic.widgets.html.code_pane_html`).  The PTX tab compiles lazily when first
opened (``nvcc -ptx -lineinfo`` or NVRTC, :func:`tilemagic.runtime.ptx.ptx_for`, cached), so
building the view costs no compiler run.  This module imports ipywidgets; nothing imports it
before a widget is asked for.
"""

from __future__ import annotations

from html import escape

import ipywidgets as W

from . import figures
from . import html as H
from .format import instr_label, split_lines
from .placement import async_pictures, tmem_occupancy
from .png import picture_png
from .text import uses_tmem

__all__ = ["ASYNC_TABS", "HEATMAP_TABS", "TAB_TITLES", "HeatmapPane", "WidgetView"]

#: Tab titles in order ("CUDA (emulated)" only when the result has an emulated source).
TAB_TITLES = ("Description", "Dispatch", "IR", "CUDA", "CUDA (emulated)", "PTX", "Heatmaps", "Launch")
#: The picture kinds of the Heatmaps tab: (button label, kind).
HEATMAP_TABS = (("TMEM occupancy", "tmem"), ("per instruction", "instr"), ("register fragment", "fragment"),
                ("round-trip data", "data"))
#: The pictures of asynchronous copies, offered where they apply (:func:`~tilemagic.widgets.placement.async_pictures`).
ASYNC_TABS = (("TMA boxes", "tma"), ("swizzle", "swizzle"), ("async timeline", "timeline"),
              ("cluster smem", "cluster"), ("tcgen05.cp descriptors", "tcgen05_cp"))
_NONE = 0  # the selector's "no line" value (description lines are 1-based)
_ALL = -1  # the instruction selector's "all instructions" value (a Dropdown shows a None value as blank)
_HIGHLIGHTED = ("Description", "IR", "CUDA", "CUDA (emulated)", "PTX")  # panes that follow the line selector


def _source_options(result) -> list[tuple[str, int]]:
    """Dropdown options: ``(label, line)`` for every description line that maps to IR/CUDA."""
    text = split_lines(result.source or "")
    opts = [("(none)", _NONE)]
    for n in H.mapped_lines(result):
        line = text[n - 1].strip() if 0 < n <= len(text) else ""
        opts.append((f"L{n}: {line}"[:80], n))
    return opts


def _pane(value: str = "") -> W.HTML:
    return W.HTML(value=value, layout=W.Layout(width="100%"))


class HeatmapPane(W.VBox):
    """The Heatmaps tab: controls (``kind``, ``color_by``, ``instr``, ``check``), ``image`` and ``note``;
    the PNG is re-rendered when a control changes."""

    def __init__(self, result):
        super().__init__()
        self.result = result
        tmem = uses_tmem(result)
        kinds = [("TMEM occupancy" if tmem else "shared tile", "tmem")]
        instr_opts = [("all (overlay)", _ALL)]
        if tmem:
            occ = tmem_occupancy(result.kernel)
            kinds.append(HEATMAP_TABS[1])
            if occ["instructions"]:
                kinds.append(HEATMAP_TABS[2])
            instr_opts += [(instr_label(i), i["index"]) for i in occ["instructions"]]
        launch = result.launch
        if launch is not None and launch.backend != "off" and launch.checks:
            kinds.append(HEATMAP_TABS[3])
        checks = ([(f"check {c.text} ({c.status})", i) for i, c in enumerate(launch.checks)]
                  if kinds[-1][1] == "data" else [("-", None)])
        applies = async_pictures(result.kernel, launch)
        kinds += [tab for tab in ASYNC_TABS if tab[1] in applies]
        self.kind = W.ToggleButtons(options=kinds, value="tmem", description="picture")
        self.color_by = W.Dropdown(options=list(figures.COLOR_BY),
                                   value=result.options.color_by, description="colour by")
        self.instr = W.Dropdown(options=instr_opts, value=_ALL, description="instruction")
        self.check = W.Dropdown(options=checks, value=checks[0][1], description="check")
        self.image = W.Image(format="png", layout=W.Layout(max_width="100%"))
        self.note = W.HTML(value="")
        for w in (self.kind, self.color_by, self.instr, self.check):
            w.observe(self._redraw, names="value")
        self.children = (self.kind, W.HBox([self.color_by, self.instr, self.check]), self.image, self.note)
        self._redraw()

    def _redraw(self, _change=None) -> None:
        kind = self.kind.value
        self.color_by.disabled = kind not in ("tmem", "instr")
        self.instr.disabled = kind not in ("tmem", "fragment") or len(self.instr.options) <= 1
        self.check.disabled = kind != "data"
        instr = self.instr.value if kind in ("tmem", "fragment") and self.instr.value != _ALL else None
        try:
            png = picture_png(self.result, kind, color_by=self.color_by.value, instr=instr, check=self.check.value)
        except ValueError as e:
            self.note.value = f'<span style="color:{H.MUTED}">{escape(str(e))}</span>'
            return
        except Exception as e:  # noqa: BLE001 - keep the other tabs usable
            self.note.value = (f'<span style="color:{H.ERROR_FG}">heatmap unavailable: {escape(type(e).__name__)}: '
                               f"{escape(str(e))}</span>")
            return
        self.note.value = ""
        self.image.value = png


class WidgetView(W.VBox):
    """The stage view of one ``%%tilecopy`` result.

    Parameters
    ----------
    result : tilemagic.result.TileCopyResult

    Attributes
    ----------
    result : TileCopyResult
    tab : ipywidgets.Tab
        The stages (titles from :data:`TAB_TITLES`; "CUDA (emulated)" only with TMEM).
    line_select : ipywidgets.Dropdown
        The source line whose lines the code panes highlight (0: none).
    panes : dict of str -> ipywidgets.HTML
        The stage panes by title (all but Heatmaps and Launch).
    heatmaps : HeatmapPane or None
        The Heatmaps tab (None without a kernel).

    Notes
    -----
    Children: the banner (``HTML``), ``line_select`` and ``tab``.  ``_repr_mimebundle_``
    is the widget's own bundle plus ``text/html`` (:meth:`TileCopyResult.html`) and
    ``text/plain`` (:meth:`TileCopyResult.text`).
    """

    def __init__(self, result):
        super().__init__()
        self.add_class(H.WIDGET_CLASS)  # where it renders live, the static fallback beside it hides itself
        self.result = result
        self.fallback_shown = False  # the magic displayed html.fallback_html just before this view
        self._ptx_opened = False
        self.panes = {t: _pane(self._render(t, None)) for t in ("Description", "Dispatch", "IR", "CUDA")}
        if result.cuda_emulated:
            self.panes["CUDA (emulated)"] = _pane(self._render("CUDA (emulated)", None))
        self.panes["PTX"] = _pane(f'<div style="{H.FONT};font-size:12px;color:{H.MUTED}">'
                                  "PTX is compiled when this tab is opened (nvcc -ptx -lineinfo, or NVRTC).</div>")
        for title, body in H.extra_sections(result):
            self.panes.setdefault(title, _pane(body))
        self.heatmaps = HeatmapPane(result) if result.kernel is not None else None
        children = [*self.panes.values(), self.heatmaps or _pane("no kernel to draw"), _pane(H.launch_html(result))]
        self.tab = W.Tab(children=tuple(children), titles=(*self.panes, "Heatmaps", "Launch"))
        self.line_select = W.Dropdown(options=_source_options(result), value=_NONE, description="source line",
                                      layout=W.Layout(width="60%"), style={"description_width": "initial"})
        self.line_select.observe(self._on_line, names="value")
        self.tab.observe(self._on_tab, names="selected_index")
        self.children = (_pane(H.banner_html(result) + H.warnings_html(result)), self.line_select, self.tab)

    def _render(self, title: str, line: int | None) -> str:
        r, hl = self.result, line or None
        if title == "Description":
            return H.source_html(r, hl) + H.tmem_html(r) + H.cp_descriptors_html(r)
        if title == "Dispatch":  # (with what each candidate costs, --cost)
            return H.dispatch_with_costs_html(r)
        if title == "IR":
            return H.ir_pane_html(r, hl)
        if title == "CUDA":
            return H.cuda_pane_html(r, hl)
        if title == "CUDA (emulated)":
            return H.emulated_pane_html(r, hl)
        if title == "PTX":
            return self._ptx_html(hl)
        raise KeyError(title)

    def _ptx_html(self, highlight: int | None) -> str:
        """The PTX pane (compiles on first use), or a note saying why there is none."""
        res = self.result.ptx()
        if not res.ok:
            return (f'<div style="{H.FONT};font-size:12px;color:{H.MUTED}">No PTX: '
                    f"{escape(res.log.splitlines()[0] if res.log else 'no compiler')}</div>")
        title = f"PTX ({res.arch}, {res.tool}, -lineinfo: each line mapped through its CUDA line)"
        return H.code_pane_html(title, res.text, res.lines, "ptx", role="tm-ptx", highlight=highlight,
                                where="result.ptx().text")

    def _on_line(self, change) -> None:
        for title in _HIGHLIGHTED:
            if title in self.panes and (title != "PTX" or self._ptx_opened):
                self.panes[title].value = self._render(title, change["new"])

    def _on_tab(self, change) -> None:
        if change["new"] is not None and self.tab.titles[change["new"]] == "PTX" and not self._ptx_opened:
            self._ptx_opened = True
            self.panes["PTX"].value = self._render("PTX", self.line_select.value)

    def _repr_mimebundle_(self, **kwargs):
        data = dict(super()._repr_mimebundle_(**kwargs) or {})
        if self.fallback_shown:  # the report is the output above: a front end without widgets shows it once
            data["text/plain"] = f"(stage view of {self.result.name}: the static report is the output above)"
            return data
        data["text/plain"] = self.result.text()
        data["text/html"] = self.result.html()
        return data
