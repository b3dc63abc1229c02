import warnings

import pytest

import tilemagic
from tilemagic.cli import demo_source


def run(src, **kw):
    """tilecopy with warnings silenced (the fallback's UserWarning is tested on its own)."""
    kw.setdefault("launch", "sim")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return tilemagic.tilecopy(src, **kw)


@pytest.fixture
def demo():
    return demo_source


@pytest.fixture
def ip():
    """A real IPython InteractiveShell with ``%load_ext tilemagic`` (no kernel)."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.extension_manager.load_extension("tilemagic")
    yield shell
    shell.extension_manager.unload_extension("tilemagic")
    InteractiveShell.clear_instance()
