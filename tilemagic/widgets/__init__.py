"""Display layer of tilemagic: text report, static HTML, heatmaps and the ipywidgets view.

The submodules are imported lazily by :class:`tilemagic.result.TileCopyResult`:

* :mod:`tilemagic.widgets.text`    -- ``render_text(result)``, the deterministic ``text/plain``;
* :mod:`tilemagic.widgets.html`    -- ``render_html(result)``, one static self-contained fragment;
* :mod:`tilemagic.widgets.heatmap` -- TMEM occupancy / shared-tile pictures (matplotlib Agg, no pyplot);
* :mod:`tilemagic.widgets.view`    -- ``build_widget(result)``, an opt-in ipywidgets ``Tab``.

This package deliberately imports nothing heavy (no matplotlib.pyplot, ipywidgets or cupy).
"""
