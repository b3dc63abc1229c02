"""A real IPython InteractiveShell with tilemagic loaded (no kernel), shared by the magics tests."""

import contextlib

from IPython.core.interactiveshell import InteractiveShell

from tilemagic.cli import demo_source


@contextlib.contextmanager
def loaded_shell():
    shell = InteractiveShell.instance()
    shell.extension_manager.load_extension("tilemagic")
    try:
        yield shell
    finally:
        shell.extension_manager.unload_extension("tilemagic")
        InteractiveShell.clear_instance()


def body(name):
    """A seed demo's description without its ``%%tilecopy`` line."""
    return demo_source(name).split("\n", 1)[1]
