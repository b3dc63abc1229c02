"""The one option table (tilemagic.options): every entry point reads it the same way.

Entry points: a notebook cell's ``%%tilecopy`` line, a ``%%tilecopy`` line inside ``tilecopy(source)``, a
``.tile`` file on the command line (its line and the CLI flags), ``%config TileMagics.<name>`` and keyword
arguments.  "Adding an option touches one place" is checked as far as a test can: every field of
``Options`` shows up in each of the generated surfaces.
"""

from __future__ import annotations

import dataclasses
import inspect

import pytest
from IPython.core.error import UsageError

import tilemagic
from tilemagic import TileSyntaxError, options
from tilemagic.cli import main
from tilemagic.magics import TileMagics
from tilemagic.options import FIELDS, OptionError, Options, flag, parse, resolve

CELL = "kernel k threads=32\nglobal A: float32[4, 6] = arange\nglobal B: float32[4, 6]\nwarp.copy B <- A\ncheck B == A\n"


def _cli_parser():
    import argparse

    return options.add_arguments(argparse.ArgumentParser(), cli=True)


def test_every_option_appears_in_every_generated_surface():
    usage, magic_help, api_doc = options.usage(), TileMagics.tilecopy.__doc__, tilemagic.tilecopy.__doc__
    traits = TileMagics.class_traits(config=True)
    cli_dests = {a.dest for a in _cli_parser()._actions}
    for f in FIELDS:
        shown = "NAME" if f.name == "name" else flag(f)
        assert shown in usage and shown in magic_help, f.name
        assert f"    {f.name} : " in api_doc, f.name  # the tilecopy() docstring's parameter list
        assert (f.name in traits) == f.metadata["config"], f.name
        if f.metadata["config"]:
            assert traits[f.name].default_value == f.default and f.metadata["help"] in traits[f.name].help
        assert (f.name in cli_dests) == f.metadata["cli"], f.name
        assert getattr(resolve(), f.name) == f.default  # the table's default is the default everywhere
    assert magic_help.count("%%tilecopy [") == 1 and "Usage::" not in magic_help  # %%tilecopy? prints it once
    with pytest.raises(TypeError, match="unknown tilecopy option 'lauch'"):
        tilemagic.tilecopy(CELL, lauch="sim")


def test_keywords_of_the_api_are_the_table():
    for f in FIELDS:  # every field is a keyword of tilecopy(); its default value is accepted as given
        value = None if f.name in ("name", "out") else f.default
        res = tilemagic.tilecopy(CELL, emit_warnings=False, **{"launch": "off", f.name: value})
        assert isinstance(res.options, Options)
    assert set(inspect.signature(tilemagic.tilecopy).parameters) >= {"source", "options", "namespace"}


def test_parse_quotes_and_folds_case_and_booleans_have_no_forms():
    ns = parse('rt --launch "SIM" --view TEXT --no-strict --bench --heatmap "tmem, Data" --color-by Thread')
    opts = resolve(ns)
    assert (opts.name, opts.launch, opts.view, opts.strict, opts.bench) == ("rt", "sim", "text", False, True)
    assert opts.heatmap == ("tmem", "data") and opts.color_by == "thread"
    assert resolve(parse("--no-strict"), defaults={"strict": True}).strict is False
    assert resolve(parse(""), defaults={"strict": True}).strict is True
    assert resolve(parse("--seed 3"), {"seed": 4}, {"seed": 5}).seed == 4  # keyword > line > session default
    assert Options().heatmap == ("tmem",) and dataclasses.is_dataclass(Options)
    with pytest.raises(dataclasses.FrozenInstanceError):
        Options().seed = 1  # type: ignore[misc]


@pytest.mark.parametrize("line, message", [
    ("--launch moon", "--launch: invalid choice: 'moon'"),
    ("--seed -1", "--seed must be a non-negative integer"),
    ("--timeout 0", "--timeout must be a positive number"),
    ("--arch volta", "--arch 'volta' is not a CUDA target"),
    ("--heatmap pie", "invalid --heatmap 'pie'"),
    ("--bogus", "unrecognized arguments: --bogus"),
])
def test_a_bad_option_is_the_same_error_in_every_entry_point(ip, tmp_path, capsys, line, message):
    with pytest.raises(OptionError, match=message):
        parse(line)
    with pytest.raises(TileSyntaxError, match=message) as ei:  # a notebook cell: located on line 1
        ip.run_cell_magic("tilecopy", line, CELL)
    # located at the bad word (the flag and its value), after "%%tilecopy " (column 12)
    assert (ei.value.line, ei.value.col) == (1, 12) and "^" * len(line.split()[0]) in ei.value.render()
    with pytest.raises(TileSyntaxError, match=message) as ei:  # its line in tilecopy(source): located there
        tilemagic.tilecopy(f"\n%%tilecopy {line}\n" + CELL)
    assert (ei.value.line, ei.value.col) == (2, 12)
    f = tmp_path / "bad.tile"  # a .tile file: exit 2, the located message, no traceback
    f.write_text(f"%%tilecopy {line}\n" + CELL)
    assert main(["run", str(f)]) == 2
    err = capsys.readouterr().err
    assert f"{f}:1:12: TileSyntaxError: bad %%tilecopy option line" in err and "Traceback" not in err
    key, _, value = line.removeprefix("--").partition(" ")
    if key != "bogus":  # a keyword argument: a ValueError naming the option
        with pytest.raises(ValueError, match=message):
            tilemagic.tilecopy(CELL, **{key: int(value) if key in ("seed", "timeout") else value})


def test_launch_off_in_any_case_everywhere(ip, tmp_path, capsys):
    """``--launch OFF`` used to be refused by the magic and a header, accepted by the API and %config."""
    assert ip.run_cell_magic("tilecopy", "--launch OFF", CELL).launch is None
    assert tilemagic.tilecopy("%%tilecopy --launch 'OFF'\n" + CELL).launch is None
    assert tilemagic.tilecopy(CELL, launch="OFF").launch is None
    f = tmp_path / "k.tile"
    f.write_text(CELL)
    assert main(["run", str(f), "--launch", "OFF"]) == 0 and "k: not launched" in capsys.readouterr().out
    ip.run_line_magic("config", "TileMagics.launch = 'OFF'")
    assert ip.run_cell_magic("tilecopy", "", CELL).launch is None


def test_config_boolean_is_turned_off_per_cell(ip):
    ip.run_line_magic("config", "TileMagics.strict = True")
    assert ip.run_cell_magic("tilecopy", "--launch off", CELL).options.strict is True
    assert ip.run_cell_magic("tilecopy", "--launch off --no-strict", CELL).options.strict is False


def test_the_magic_parses_its_line_once(ip, monkeypatch):
    import tilemagic.pipeline as pipeline

    calls = []
    real = pipeline.parse_options
    monkeypatch.setattr(pipeline, "parse_options", lambda line: calls.append(line) or real(line))
    ip.run_cell_magic("tilecopy", "--launch off --seed 2", CELL)
    assert calls == [" --launch off --seed 2"]


def test_out_stores_the_result_from_the_api_too():
    ns: dict = {}
    res = tilemagic.tilecopy("%%tilecopy --out R --launch off\n" + CELL, namespace=ns)
    assert ns == {"R": res}


def test_tilemagic_line_magic_takes_a_positional_choice(ip, capsys):
    assert "positional arguments" in TileMagics.tilemagic.__doc__ and "variants" in TileMagics.tilemagic.__doc__
    with pytest.raises(UsageError, match="invalid choice: 'frobnicate'"):
        ip.run_line_magic("tilemagic", "frobnicate")
    ip.run_line_magic("tilemagic", "")  # status is the default
    assert "defaults" in capsys.readouterr().out


def test_boolean_and_seed_keywords_refuse_strings_and_bools():
    import numpy as np

    from tilemagic.cli import demo_source

    src = demo_source("tmem_roundtrip")
    for kw, msg in ((dict(strict="False"), "--strict: takes True or False"), (dict(bench=1), "--bench: takes True"),
                    (dict(seed=True), "--seed must be a non-negative integer")):
        with pytest.raises(ValueError, match=msg):
            tilemagic.tilecopy(src, launch="off", **kw)
    assert tilemagic.tilecopy(src, launch="off", strict=np.bool_(True)).options.strict is True


def test_breaker_findings_on_options():
    from tilemagic.cli import demo_source

    src = demo_source("tmem_roundtrip")
    r = tilemagic.tilecopy(src, launch="off")
    assert r.options["launch"] == "off" and r.options.get("seed") == 0 and dict(r.options)["view"] == "html"
    with pytest.raises(KeyError):
        r.options["nope"]
    for line in ("--lau sim", "--st", "--heatmap none,tmem"):  # no flag prefixes; none stands alone
        with pytest.raises(TileSyntaxError):
            tilemagic.tilecopy(f"%%tilecopy {line}\n{src}", launch="off")
    with pytest.raises(ValueError, match="NAME must be a str"):
        tilemagic.tilecopy(src, launch="off", name=3)
    with pytest.raises(SystemExit):
        main(["run", "x.tile", "--lau", "sim"])


def test_one_internal_error_class():
    import tilemagic.magics as magics
    from tilemagic import errors

    assert magics.InternalError is errors.InternalError is tilemagic.InternalError


@pytest.mark.parametrize("line, col, width, hint", [
    ("--lanch sim", 12, 7, "did you mean --launch?"),
    ("--launch sim --seed nan", 25, 10, ""),
    ("--seed=-3", 12, 9, ""),
    ("--no-strict --strictt", 24, 9, "did you mean --strict?"),
])
def test_option_error_points_at_the_bad_word(line, col, width, hint):
    from tilemagic.cli import demo_source

    with pytest.raises(TileSyntaxError) as ei:
        tilemagic.tilecopy(f"%%tilecopy {line}\n" + demo_source("tmem_roundtrip"))
    assert (ei.value.line, ei.value.col, ei.value.span.end_col - ei.value.col) == (1, col, width)
    assert ei.value.hint.startswith(hint + " " if hint else "options:")
