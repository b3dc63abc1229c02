"""tilemagic: ``%%tilecopy`` — TIRx-style tile-copy dispatch, lowering, TMEM heatmaps and round trips.

>>> import tilemagic
>>> res = tilemagic.tilecopy(source, launch="sim")   # doctest: +SKIP

In IPython/Jupyter: ``%load_ext tilemagic``, then ``%%tilecopy`` cells.  Importing
tilemagic imports neither CuPy, nor matplotlib's pyplot, nor ipywidgets.
"""

from .errors import (  # noqa: F401
    CheckFailed,
    DispatchError,
    HazardError,
    InternalError,
    LaunchError,
    LaunchInterrupted,
    LoweringError,
    Span,
    TileMagicError,
    TileSyntaxError,
    TileTypeError,
)
from .caches import clear_caches  # noqa: F401
from .pipeline import tilecopy  # noqa: F401
from .result import TileCopyResult  # noqa: F401

__version__ = "0.1.0"


def load_ipython_extension(ip):
    """``%load_ext tilemagic``: register ``%%tilecopy`` and ``%tilemagic`` (idempotent)."""
    from .magics import TileMagics, magic_after_line_magics

    ip.register_magics(TileMagics(shell=ip))  # Magics.__init__ adds it to ip.configurables (%config)
    if magic_after_line_magics not in ip.input_transformers_cleanup:  # `%load_ext tilemagic` + `%%tilecopy`
        ip.input_transformers_cleanup.append(magic_after_line_magics)


def unload_ipython_extension(ip):
    """``%unload_ext tilemagic``: remove the magics again."""
    ip.input_transformers_cleanup[:] = [t for t in ip.input_transformers_cleanup
                                         if getattr(t, "__name__", "") != "magic_after_line_magics"]
    mm = ip.magics_manager
    for kind, name in (("cell", "tilecopy"), ("line", "tilemagic")):
        mm.magics[kind].pop(name, None)
    mm.registry.pop("TileMagics", None)
    ip.configurables[:] = [c for c in ip.configurables if type(c).__name__ != "TileMagics"]


def _jupyter_labextension_paths():
    """The prebuilt JupyterLab extension (``tilemagic/labextension``, the ``%%tilecopy`` cell language): for
    ``jupyter labextension develop --overwrite .`` after an editable install (``pip install -e .`` installs no
    setuptools ``data-files``, so JupyterLab would not find it; a plain ``pip install .`` installs it under
    ``share/jupyter/labextensions``)."""
    return [{"src": "labextension", "dest": "tilemagic-labextension"}]
