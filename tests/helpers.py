"""Helpers the tests import (``from helpers import run``); fixtures stay in ``conftest.py``.

pytest documents ``conftest.py`` as not importable (it breaks under ``--import-mode=importlib``), so
what tests call directly lives here, importable like ``cells`` (the ``tests`` directory is on the path).
"""

from __future__ import annotations

import warnings

import tilemagic
from tilemagic.cli import demo_source


def run(src: str, **kw) -> tilemagic.TileCopyResult:
    """``tilemagic.tilecopy(src, launch="sim", **kw)`` with UserWarnings silenced (the fallback's warning
    is tested on its own)."""
    kw.setdefault("launch", "sim")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return tilemagic.tilecopy(src, **kw)


def run_demo(name: str, **kw) -> tilemagic.TileCopyResult:
    """:func:`run` on the demo ``name`` (``tilemagic/demos/<name>.tile``)."""
    return run(demo_source(name), **kw)
