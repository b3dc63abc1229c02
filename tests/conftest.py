import pytest

from tilemagic.cli import demo_source


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


TVM_VERSION = "0.27.0.post1"


@pytest.fixture(scope="session")
def tvm():
    """The TVM oracle of the ``tvm``-marked tests (tests/tvm), imported once per session.

    A missing or different apache-tvm is a test *error*, not a skip, so CI cannot silently stop
    comparing; ``TILEMAGIC_NO_TVM=1`` switches those tests off deliberately (they are then skipped).
    """
    import os

    if os.environ.get("TILEMAGIC_NO_TVM") == "1":
        pytest.skip("TILEMAGIC_NO_TVM=1: the TVM oracle tests are switched off")
    try:
        import tvm as tvm_mod
    except ImportError as e:
        pytest.fail(f"apache-tvm=={TVM_VERSION} is needed by the tvm-marked tests: pip install -e '.[tvm]' "
                    f"(or set TILEMAGIC_NO_TVM=1 to skip them): {e}", pytrace=False)
    if tvm_mod.__version__ != TVM_VERSION:
        pytest.fail(f"the TVM oracle is apache-tvm=={TVM_VERSION}; found {tvm_mod.__version__}", pytrace=False)
    return tvm_mod
