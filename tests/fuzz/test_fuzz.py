"""Fuzzing the whole pipeline (CI size: a few hundred examples; benchmarks/fuzz.py runs 10 000).

Every cell ends in a result or a located TileMagicError (line, column, message, render());
valid generated cells that lower must round-trip in the simulator (``check B == A`` PASS).
"""

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cellgen import SEEDS, Violation, close_shell, entry_cells, entry_outcome, mutated_cells, outcome, valid_cells


def fast(n):
    return settings(max_examples=n, deadline=None, suppress_health_check=list(HealthCheck), database=None)


@fast(150)
@given(valid_cells())
def test_valid_cells_round_trip(src):
    assert outcome(src, must_pass=True) == "PASS"


@fast(250)
@given(mutated_cells())
def test_mutated_cells_end_in_a_result_or_a_located_error(src):
    outcome(src)


@pytest.mark.parametrize("i", range(len(SEEDS)))
def test_every_seed_is_a_result_or_located_error(i):
    outcome(SEEDS[i])


def test_outcome_flags_violations():
    """The harness itself: a non-TileMagicError and a failing valid cell are violations."""
    with pytest.raises(Violation, match="TypeError: source must be the cell's text"):
        outcome(None)
    bad = "kernel k threads=32\nglobal A: float32[4]\nglobal B: float32[4]\nwarp.copy B[0:2] <- A[0:2]\ncheck B == A\n"
    assert outcome(bad) == "FAIL"
    with pytest.raises(Violation, match="did not round-trip"):
        outcome(bad, must_pass=True)


@pytest.fixture(scope="module")
def shell_closed():
    yield
    close_shell()


@fast(120)
@given(entry_cells())
def test_every_entry_point_ends_in_a_result_or_a_located_error(tmp_path_factory, shell_closed, case):
    entry, line, body = case
    entry_outcome(entry, line, body, str(tmp_path_factory.getbasetemp()))


def test_entry_outcome_flags_an_unlocated_cli_error(tmp_path, monkeypatch):
    """The harness: a CLI error that does not name the file (as on main) is a violation."""
    import tilemagic.errors as errors

    monkeypatch.setattr(errors.TileMagicError, "filename", property(lambda self: None, lambda self, v: None),
                        raising=False)
    with pytest.raises(Violation, match="does not name the file"):
        entry_outcome("cli", " --launch sim", "global A: float32[4]\nglobal A: float32[4]\n", str(tmp_path))
