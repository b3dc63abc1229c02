"""Opt-in ipywidgets view of a :class:`~tilemagic.result.TileCopyResult` (``--view widget``).

A :class:`ipywidgets.Tab` whose children are ``HTML`` widgets (and one ``Image`` for
the heatmap), built from the same section renderers as the static HTML.  Content
never lives in an ``ipywidgets.Output`` widget: headless executors (nbconvert,
nbclient, nbval) would leak it as stray ``stdout`` (notebook_conventions.md §4).
ipywidgets is imported inside :func:`build_widget` only.
"""

from __future__ import annotations

__all__ = ["build_widget", "TAB_TITLES"]

#: Tab titles in order ("CUDA (emulated)" only when the result has an emulated source).
TAB_TITLES = ("Description", "Dispatch", "IR", "CUDA", "CUDA (emulated)", "Heatmap", "Launch")


def build_widget(result):
    """Tabs over the stages of one ``%%tilecopy`` result.

    Parameters
    ----------
    result : tilemagic.result.TileCopyResult

    Returns
    -------
    ipywidgets.Tab
        Children, titled via ``titles=``: "Description" (banner, warnings, numbered
        description, TMEM allocation table), "Dispatch" (why-tables), "IR", "CUDA" (native), "CUDA (emulated)"
        (only if ``result.cuda_emulated``), "Heatmap" (``ipywidgets.Image`` with the PNG,
        or an ``HTML`` message when there is nothing to draw), "Launch" (inputs, outputs,
        checks).  All but the heatmap are ``ipywidgets.HTML``.
    """
    import ipywidgets as W

    from . import html as H

    def pane(value: str):
        return W.HTML(value=value, layout=W.Layout(width="100%"))

    children, titles = [], []

    def add(title, widget):
        children.append(widget)
        titles.append(title)

    add("Description", pane(H.banner_html(result) + H.warnings_html(result) + H.source_html(result)
                            + H.tmem_html(result)))
    add("Dispatch", pane(H.dispatch_html(result)))
    add("IR", pane(H.code_pane_html("IR (TIR-like)", result.ir or "", result.ir_lines, "python")))
    add("CUDA", pane(H.code_pane_html(H.cuda_title(result), result.cuda or "", result.cuda_lines, "cuda")))
    if result.cuda_emulated:
        add("CUDA (emulated)", pane(H.code_pane_html(
            "CUDA (TMEM emulated in global memory, pre-Blackwell)", result.cuda_emulated, [], "cuda")))
    heat = None
    if result.kernel is not None:
        try:
            from .heatmap import heatmap_png

            heat = W.Image(value=heatmap_png(result.kernel), format="png", layout=W.Layout(max_width="100%"))
        except Exception as e:  # keep the other tabs usable
            heat = pane(f"heatmap unavailable: {H.escape(type(e).__name__)}: {H.escape(str(e))}")
    if heat is None:
        heat = pane("no kernel to draw")
    add("Heatmap", heat)
    add("Launch", pane(H.launch_html(result)))
    return W.Tab(children=tuple(children), titles=tuple(titles))
