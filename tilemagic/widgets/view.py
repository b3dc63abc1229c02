"""Opt-in ipywidgets view of a :class:`~tilemagic.result.TileCopyResult` (``--view widget``).

A ``VBox``: the banner, a *source line* selector, and a ``Tab`` over the stages --
Description, Dispatch, IR, CUDA, CUDA (emulated) when the kernel uses TMEM, PTX, any stage a
module adds (``result.sections``, :data:`tilemagic.widgets.html.SECTION_HOOKS`), Heatmaps, Launch.
Every pane is an ``HTML`` widget built by the same section renderers as the static report
(:mod:`tilemagic.widgets.html`); the pictures are an ``Image`` driven by ``ToggleButtons``/``Dropdown``
controls.  Nothing lives in an ``ipywidgets.Output``
widget: headless executors (nbconvert, nbclient, nbval) would leak its content as stray
``stdout`` (notebook_conventions.md §4).

Line mapping.  Selecting a description line re-renders the Description, IR, CUDA and PTX
panes with that line's lines highlighted (an inline style: ``HTML`` widget values run no
scripts).  The PTX tab compiles lazily when first opened (``nvcc -ptx -lineinfo`` or
NVRTC, :func:`tilemagic.runtime.compile.ptx_for`, cached), so building the view costs no
compiler run.  ipywidgets is imported inside :func:`build_widget` only.
"""

from __future__ import annotations

from html import escape

__all__ = ["HEATMAP_TABS", "TAB_TITLES", "build_widget"]

#: Tab titles in order ("CUDA (emulated)" only when the result has an emulated source).
TAB_TITLES = ("Description", "Dispatch", "IR", "CUDA", "CUDA (emulated)", "PTX", "Heatmaps", "Launch")
#: The picture kinds of the Heatmaps tab: (button label, kind).
HEATMAP_TABS = (("TMEM occupancy", "tmem"), ("per instruction", "instr"), ("register fragment", "fragment"),
                ("round-trip data", "data"))
_NONE = 0  # the selector's "no line" value (description lines are 1-based)
_ALL = -1  # the instruction selector's "all instructions" value (a Dropdown shows a None value as blank)


def _source_options(result):
    """Dropdown options: ``(label, line)`` for every description line that maps to IR/CUDA."""
    from .html import _split_lines, mapped_lines

    text = _split_lines(result.source or "")
    opts = [("(none)", _NONE)]
    for n in mapped_lines(result):
        line = text[n - 1].strip() if 0 < n <= len(text) else ""
        opts.append((f"L{n}: {line}"[:80], n))
    return opts


def _ptx_html(result, highlight):
    """The PTX pane (compiles on first use), or a note saying why there is none."""
    from . import html as H

    res = result.ptx()
    if not res.ok:
        return (f'<div style="{H._FONT};font-size:12px;color:#57606a">No PTX: '
                f"{escape(res.log.splitlines()[0] if res.log else 'no compiler')}</div>")
    title = f"PTX ({res.arch}, {res.tool}, -lineinfo: each line mapped through its CUDA line)"
    return H.code_pane_html(title, res.text, res.lines, "ptx", role="tm-ptx", highlight=highlight)


class _HeatmapPane:
    """Controls + ``Image`` of the Heatmaps tab; re-renders the PNG when a control changes."""

    def __init__(self, W, result):
        from . import heatmap as hm
        from .text import uses_tmem

        self.result = result
        kinds = [("TMEM occupancy" if uses_tmem(result) else "shared tile", "tmem")]
        if uses_tmem(result):
            occ = hm.tmem_occupancy(result.kernel)
            kinds.append(HEATMAP_TABS[1])
            if occ["instructions"]:
                kinds.append(HEATMAP_TABS[2])
            instr_opts = [("all (overlay)", _ALL)] + [(hm._instr_label(i), i["index"]) for i in occ["instructions"]]
        else:
            instr_opts = [("all (overlay)", _ALL)]
        launch = result.launch
        if launch is not None and launch.backend != "off" and launch.checks:
            kinds.append(HEATMAP_TABS[3])
        default_color = result.options.color_by
        self.kind = W.ToggleButtons(options=kinds, value="tmem", description="picture")
        self.color_by = W.Dropdown(options=list(hm.COLOR_BY), value=default_color, description="colour by")
        self.instr = W.Dropdown(options=instr_opts, value=_ALL, description="instruction")
        checks = [(f"check {c.text} ({c.status})", i) for i, c in enumerate(launch.checks)] if kinds[-1][1] == "data" \
            else [("-", None)]
        self.check = W.Dropdown(options=checks, value=checks[0][1], description="check")
        self.image = W.Image(format="png", layout=W.Layout(max_width="100%"))
        self.note = W.HTML(value="")
        for w in (self.kind, self.color_by, self.instr, self.check):
            w.observe(self._redraw, names="value")
        self.widget = W.VBox([self.kind, W.HBox([self.color_by, self.instr, self.check]), self.image, self.note])
        self._redraw()

    def _redraw(self, _change=None):
        from . import heatmap as hm
        from .html import picture_png

        kind = self.kind.value
        self.color_by.disabled = kind not in ("tmem", "instr")
        self.instr.disabled = kind not in ("tmem", "fragment") or len(self.instr.options) <= 1
        self.check.disabled = kind != "data"
        try:
            if kind == "data":
                png = hm.figure_png(hm.data_figure(self.result, check=self.check.value))
            else:
                instr = self.instr.value if kind in ("tmem", "fragment") and self.instr.value != _ALL else None
                png = picture_png(self.result, kind, color_by=self.color_by.value, instr=instr)
        except ValueError as e:
            self.note.value = f'<span style="color:#57606a">{escape(str(e))}</span>'
            return
        except Exception as e:  # noqa: BLE001 - keep the other tabs usable
            self.note.value = (f'<span style="color:#a40e26">heatmap unavailable: {escape(type(e).__name__)}: '
                               f"{escape(str(e))}</span>")
            return
        self.note.value = ""
        self.image.value = png


def build_widget(result):
    """The stage view of one ``%%tilecopy`` result.

    Parameters
    ----------
    result : tilemagic.result.TileCopyResult

    Returns
    -------
    ipywidgets.VBox
        Children: the banner (``HTML``), the source-line ``Dropdown`` and the stage
        ``Tab`` (titles from :data:`TAB_TITLES`; "CUDA (emulated)" only with TMEM).  The
        box carries the parts it updates as attributes: ``tab``, ``line_select``,
        ``panes`` (dict title -> ``HTML``), ``heatmaps`` (the Heatmaps tab's controls:
        ``kind``, ``color_by``, ``instr``, ``check``, ``image``, ``note``).
    """
    import ipywidgets as W

    from . import html as H

    def pane(value: str = ""):
        return W.HTML(value=value, layout=W.Layout(width="100%"))

    def render(title, line):
        hl = line or None
        if title == "Description":
            return H.source_html(result, hl) + H.tmem_html(result)
        if title == "IR":
            return H.ir_pane_html(result, hl)
        if title == "CUDA":
            return H.cuda_pane_html(result, hl)
        if title == "CUDA (emulated)":
            return H.emulated_pane_html(result, hl)
        if title == "PTX":
            return _ptx_html(result, hl)
        raise KeyError(title)

    panes = {"Description": pane(render("Description", None)), "Dispatch": pane(H.dispatch_html(result)),
             "IR": pane(render("IR", None)), "CUDA": pane(render("CUDA", None))}
    if result.cuda_emulated:
        panes["CUDA (emulated)"] = pane(render("CUDA (emulated)", None))
    panes["PTX"] = pane(f'<div style="{H._FONT};font-size:12px;color:#57606a">'
                        "PTX is compiled when this tab is opened (nvcc -ptx -lineinfo, or NVRTC).</div>")
    for title, body in H.extra_sections(result):  # stages contributed through html.SECTION_HOOKS
        panes.setdefault(title, pane(body))
    heat = _HeatmapPane(W, result) if result.kernel is not None else None
    launch = pane(H.launch_html(result))

    children = list(panes.values()) + [heat.widget if heat else pane("no kernel to draw"), launch]
    titles = list(panes) + ["Heatmaps", "Launch"]
    tab = W.Tab(children=tuple(children), titles=tuple(titles))
    state = {"ptx": False}

    line_select = W.Dropdown(options=_source_options(result), value=_NONE, description="source line",
                             layout=W.Layout(width="60%"), style={"description_width": "initial"})

    def on_line(change):
        for title in ("Description", "IR", "CUDA", "CUDA (emulated)") + (("PTX",) if state["ptx"] else ()):
            if title in panes:
                panes[title].value = render(title, change["new"])

    def on_tab(change):
        if change["new"] is not None and titles[change["new"]] == "PTX" and not state["ptx"]:
            state["ptx"] = True
            panes["PTX"].value = render("PTX", line_select.value)

    line_select.observe(on_line, names="value")
    tab.observe(on_tab, names="selected_index")
    box = W.VBox([pane(H.banner_html(result) + H.warnings_html(result)), line_select, tab])
    box.tab, box.line_select, box.panes, box.heatmaps = tab, line_select, panes, heat
    return box
