"""The TVM oracle tests (marker ``tvm``): apache-tvm==0.27.0.post1 must be importable.

They are part of the plain ``pytest`` run and of CI.  A missing or different TVM is a
test *error*, not a skip, so CI cannot silently stop comparing; set
``TILEMAGIC_NO_TVM=1`` to switch them off deliberately (they are then skipped).
"""

import os
from pathlib import Path

import pytest

TVM_VERSION = "0.27.0.post1"
_HERE = Path(__file__).parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.tvm)


@pytest.fixture(scope="session")
def tvm():
    """The imported ``tvm`` module (once per session)."""
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
