"""The whole display layer of tilemagic: text, HTML, pictures and the ipywidgets view.

Everything a result shows is rendered here, from the result's data (no stage reaches back):

* :mod:`tilemagic.widgets.format`    -- value and label formatting shared by all renderers;
* :mod:`tilemagic.widgets.text`      -- ``render_text(result)``, the deterministic ``text/plain``;
* :mod:`tilemagic.widgets.html`      -- ``render_html(result)``, one static self-contained fragment;
* :mod:`tilemagic.widgets.placement` -- the placement model (TMEM occupancy, fragments, shared
  writers, check data; pure NumPy, from the lowered IR and the TMEM plan);
* :mod:`tilemagic.widgets.figures`   -- the pictures of that model (matplotlib Agg, never pyplot);
* :mod:`tilemagic.widgets.png`       -- their PNG bytes, cached on the kernel's content;
* :mod:`tilemagic.widgets.view`      -- ``WidgetView(result)``, the ipywidgets stage view.

The submodules are imported lazily by :class:`tilemagic.result.TileCopyResult`; this package
imports nothing heavy (no matplotlib, ipywidgets or cupy).
"""
