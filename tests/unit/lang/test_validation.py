"""Validation and locations (issue 12 §5, §6): option values, line splitting, located errors from every
entry point, the first HTML render in threads, and a cache directory whose files tilemagic never deletes."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import tilemagic
from tilemagic.errors import TileMagicError, TileSyntaxError, split_lines
from tilemagic.options import OptionError, resolve

CELL = "kernel kv threads=32\nglobal A: float32[4, 6]\nglobal B: float32[4, 6]\nshared S: float32[4, 6]\n" \
       "warp.copy S <- A\ncta_sync\nwarp.copy B <- S\ncheck B == A\n"


def _error(src: str, **kw) -> TileMagicError:
    with pytest.raises(TileMagicError) as info:
        tilecopy_quiet(src, **kw)
    return info.value


def tilecopy_quiet(src: str, **kw):
    kw.setdefault("launch", "sim")
    return tilemagic.tilecopy(src, emit_warnings=False, **kw)


# ----------------------------------------------------------------------------- options
@pytest.mark.parametrize("arch", ["sm_100a\n", "sm_１００a", "sm_100a ", " sm_90", "sm_9\u0660"])
def test_arch_is_ascii_without_whitespace(arch):
    with pytest.raises(OptionError, match="--arch"):
        resolve(overrides={"arch": arch})
    with pytest.raises(OptionError, match="--arch"):
        resolve(defaults={"arch": arch})  # a %config value goes through the same check


@pytest.mark.parametrize("timeout", ["1e400", 1e300, 86401, "１０", True, "1_0", "nan", "inf", 0, -1])
def test_timeout_is_finite_and_at_most_a_day(timeout):
    with pytest.raises(OptionError, match="--timeout"):
        resolve(overrides={"timeout": timeout})


def test_timeout_bounds_accepted():
    assert resolve(overrides={"timeout": "86400"}).timeout == 86400
    assert resolve(overrides={"timeout": "1e-3"}).timeout == 0.001


@pytest.mark.parametrize("name", ["_oh", "_ih", "_i", "_", "__", "___", "_i3", "_7", "get_ipython", "In", "Out",
                                  "exit", "quit", "_private", "match", "class", "résultat"])
def test_out_refuses_ipython_names_and_keywords(name):
    with pytest.raises(OptionError, match="--out"):
        resolve(overrides={"out": name})


def test_out_name_error_is_located_at_the_word():
    src = "%%tilecopy --out _oh --launch sim\n" + CELL
    err = _error(src)
    assert (err.line, err.col) == (1, 12) and "^^^^^^^^^" in err.render()


@pytest.mark.parametrize("value", ["ｓｉｍ", "sim\u2028", "\u212aernel"])
def test_choice_values_are_ascii(value):
    with pytest.raises(OptionError):
        resolve(overrides={"launch": value})


@pytest.mark.parametrize("seed", ["１２", "1_000", " 3"])
def test_seed_text_is_ascii_digits(seed):
    with pytest.raises(OptionError, match="--seed"):
        resolve(overrides={"seed": seed})


# ----------------------------------------------------------------------------- lines
def test_split_lines_as_an_editor():
    assert split_lines("a\r\nb\rc\nd\u2028e\x0cf\x85g\n") == ["a", "b", "c", "d\u2028e\x0cf\x85g"]
    assert split_lines("") == [] and split_lines("\n") == [""]


@pytest.mark.parametrize("ch", ["\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"])
def test_odd_breaks_in_comments_keep_line_numbers(ch):
    # on main, str.splitlines split the comment in two and every later line number was off by one
    src = f"kernel kv threads=32  # a{ch}b\nglobal A: float32[4, 6]\nglobal A: float32[4, 6]\n"
    err = _error(src)
    assert err.line == 3, err.render()
    assert err.render().splitlines()[1].startswith("  3 | global A")


@pytest.mark.parametrize("ch", ["\u2028", "\x85", "\x0b", "\x0c"])
def test_odd_break_outside_a_comment_is_a_located_error(ch):
    src = f"kernel kv threads=32\nglobal A: float32[4, 6]{ch}\n"
    err = _error(src)
    assert (err.line, err.col) == (2, 24) and f"U+{ord(ch):04X}" in err.message


def test_crlf_and_cr_cells_number_lines_alike():
    for sep in ("\r\n", "\r"):
        err = _error(sep.join(["kernel kv threads=32", "global A: float32[4, 6]", "global A: float32[4, 6]"]))
        assert err.line == 3 and "  3 | global A: float32[4, 6]" in err.render()


def test_option_line_with_cr_endings():
    res = tilecopy_quiet("%%tilecopy --launch off\r" + CELL.replace("\n", "\r"), launch=None)
    assert res.launch is None


# ----------------------------------------------------------------------------- locations
def test_wait_ld_on_a_target_without_tcgen05_is_located():
    src = "kernel kv threads=32\nglobal A: float32[32]\nlocal a: float32[32] @ S[(32) : (1@laneid)]\n" \
          "warp.copy a <- A\nwait ld\n"
    err = _error(src, arch="sm_90a")
    assert (err.line, err.col) == (5, 1) and "^" in err.render()


def test_a_reserved_kernel_name_from_name_is_located():
    err = _error(CELL.replace("kernel kv threads=32\n", ""), name="hypot")
    assert err.line == 1 and err.col == 1 and "'hypot'" in err.message


def test_cli_errors_name_the_file(tmp_path, capsys):
    from tilemagic.cli import main

    path = tmp_path / "bad.tile"
    path.write_text("kernel kv threads=32\nglobal A: float32[4, 6]\nglobal A: float32[4, 6]\n")
    assert main(["run", str(path), "--launch", "off"]) == 2
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith(f"{path}:3:8: TileTypeError"), first


def test_cli_file_name_that_is_reserved_is_located_in_the_file(tmp_path, capsys):
    from tilemagic.cli import main

    path = tmp_path / "erf.tile"
    path.write_text(CELL.replace("kernel kv threads=32\n", ""))
    assert main(["run", str(path), "--launch", "off"]) == 2
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith(f"{path}:1:1: TileTypeError") and "'erf'" in first, first


def test_export_failure_keeps_the_launched_result(monkeypatch):
    # every layout has a TVMScript form now: one is made to have none, so the export fails after the launch
    from tilemagic.export import tvmscript

    def no_swizzle(layout, _real=tvmscript.layout_text):
        if "swizzle" in str(layout):
            raise ValueError(f"the TVMScript export has no form for the layout {layout}")
        return _real(layout)

    monkeypatch.setattr(tvmscript, "layout_text", no_swizzle)
    src = "kernel kv threads=32\nglobal A: float16[8, 64]\nglobal B: float16[8, 64]\n" \
          "shared S: float16[8, 64] @ swizzle(3, 3, 3)\nwarp.copy S <- A\ncta_sync\nwarp.copy B <- S\ncheck B == A\n"
    res = tilecopy_quiet(src, export="tvmscript")
    assert res.launch is not None and res.launch.passed
    sec = next(s for s in res.sections if "failed" in s.title)
    assert "tilecopy:4:" in sec.text and "^" in sec.text
    assert any("--export tvmscript failed" in w for w in res.warnings)


# ----------------------------------------------------------------------------- threads
def test_first_html_render_in_eight_threads():
    code = textwrap.dedent(f"""
        import threading, tilemagic
        res = tilemagic.tilecopy({CELL!r}, launch="sim", emit_warnings=False)
        out, errs = [], []
        def go():
            try:
                out.append(res.html())  # pictures included: widgets.png draws one at a time
            except BaseException as e:
                errs.append(repr(e))
        ts = [threading.Thread(target=go) for _ in range(8)]
        [t.start() for t in ts]; [t.join() for t in ts]
        assert not errs, errs
        assert len(set(out)) == 1 and len(out) == 8, [len(o) for o in out]
        print("ok")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


# ----------------------------------------------------------------------------- §5: files
def test_caches_never_delete_a_users_files(tmp_path, monkeypatch):
    files = {tmp_path / "k.ptx": b".version 9.0\n", tmp_path / "k.cubin": b"\x7fELF", tmp_path / "sub" / "x.cubin":
             b"\x7fELF2", tmp_path / "tilemagic" / "y.ptx": b"y"}
    for path, data in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    monkeypatch.setenv("TILEMAGIC_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CUPY_CACHE_DIR", str(tmp_path))
    for _ in range(2):
        res = tilecopy_quiet(CELL)
        res.html()
        tilemagic.clear_caches()
    for path, data in files.items():
        assert path.read_bytes() == data
    assert sorted(p.name for p in tmp_path.rglob("*")) == sorted(["k.ptx", "k.cubin", "sub", "x.cubin", "tilemagic",
                                                                    "y.ptx"])


def test_tilemagic_has_no_file_deletion():
    import pathlib
    import re

    root = pathlib.Path(tilemagic.__file__).parent
    pattern = re.compile(r"\b(os\.remove|os\.unlink|os\.rmdir|os\.removedirs|shutil\.rmtree|\.unlink\(|\.rmdir\()")
    hits = [f"{p.relative_to(root)}:{n}" for p in root.rglob("*.py")
            for n, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert hits == []


def test_invisible_characters_are_named_and_a_bom_in_a_tile_file_is_skipped(tmp_path, capsys):
    from tilemagic.cli import main

    with pytest.raises(TileSyntaxError) as ei:
        tilecopy_quiet("kernel kv threads=32\nglobal A: float32[4]\nglobal B: float32[4]\nwarp.\u200bcopy B <- A\n",
                       launch="off")
    assert "U+200B ZERO WIDTH SPACE" in ei.value.message and ei.value.col == 6
    with pytest.raises(TileSyntaxError) as ei:
        tilecopy_quiet("kernel kv threads=32\nglobal\u00a0A: float32[4]\n", launch="off")
    assert "U+00A0 NO-BREAK SPACE" in ei.value.message
    f = tmp_path / "bom.tile"
    f.write_text("\ufeffkernel kv threads=32\nglobal A: float32[4]\nglobal B: float32[4]\nwarp.copy B <- A\n"
                 "check B == A\n", encoding="utf-8")
    assert main(["run", str(f), "--launch", "sim"]) == 0
