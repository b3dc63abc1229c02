"""The command line: demo, run, status (in-process and as the installed console script)."""

import shutil
import subprocess
import sys

from tilemagic.cli import main


def test_demo_writes_report_and_passes(tmp_path, capsys):
    out = tmp_path / "demo.html"
    assert main(["demo", "--launch", "sim", "--html", str(out)]) == 0
    text = capsys.readouterr().out
    assert "tmem_roundtrip: sim (CPU simulator, TMEM modelled in NumPy) — B == A: PASS" in text
    assert "fallback_demo: sim (CPU simulator) — B == A: PASS" in text
    assert "ldgsts_roundtrip: sim (CPU simulator) — B == A: PASS" in text
    assert "tma_roundtrip: sim (CPU simulator) — B[64:128, 0:64] == A[64:128, 64:128]: PASS" in text
    html = out.read_text()
    assert html.startswith("<!DOCTYPE html>") and html.count("data:image/png;base64,") >= 2


def test_run_file_with_header_options(tmp_path, capsys):
    f = tmp_path / "copy.tile"
    f.write_text("%%tilecopy mycopy --launch off\nkernel k threads=32\nglobal A: float32[4]\nglobal B: float32[4]\n"
                 "warp.copy B <- A\n")
    assert main(["run", str(f)]) == 0
    assert "mycopy: not launched" in capsys.readouterr().out


def test_run_failing_check_exits_1(tmp_path, capsys):
    f = tmp_path / "bad.tile"
    f.write_text("kernel k threads=32\nglobal A: float32[4]\nglobal B: float32[4]\nglobal C: float32[4]\n"
                 "warp.copy B <- A\ncheck C == A\n")
    assert main(["run", str(f), "--launch", "sim"]) == 1
    cap = capsys.readouterr()
    assert "check C == A: FAIL (4 of 4 elements differ" in cap.out
    assert f"{f}:6:1: CheckFailed" in cap.err and "tilecopy:" not in cap.err  # the file, as for every error


def test_run_warnings_name_the_file(tmp_path, capsys, recwarn):
    f = tmp_path / "race.tile"
    f.write_text("kernel k threads=64\nglobal A: float32[64]\nglobal B: float32[64]\nshared S: float32[64]\n"
                 "cta.copy S <- A\nwarp.copy B <- S\ncheck B == A\n")
    main(["run", str(f), "--launch", "sim"])
    hazards = [w for w in recwarn if "hazard" in str(w.message)]
    assert hazards and all(w.filename == str(f) and w.lineno == 6 for w in hazards)


def test_run_error_exits_2_with_caret(tmp_path, capsys):
    f = tmp_path / "err.tile"
    f.write_text("global A: float32[4]\nwarp.copy A -> B\n")
    assert main(["run", str(f)]) == 2
    err = capsys.readouterr().err
    assert f"{f}:2:" in err and "tilecopy:" not in err and "^" in err and "Traceback" not in err
    assert main(["run", str(tmp_path / "missing.tile")]) == 2


def test_status(capsys):
    assert main(["status"]) == 0
    assert "a launch would use" in capsys.readouterr().out.lower()


def test_console_script_installed():
    exe = shutil.which("tilemagic") or str(__import__("pathlib").Path(sys.executable).parent / "tilemagic")
    r = subprocess.run([exe, "demo", "--launch", "off"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "tmem_roundtrip: not launched" in r.stdout


def test_unreadable_input_and_unwritable_report_exit_2_without_traceback(tmp_path, capsys):
    # QA: a binary file and an --html path in a missing folder used to end in raw tracebacks
    binary = tmp_path / "a.tile"
    binary.write_bytes(b"kernel k threads=32\n\xd0\xff\n")
    assert main(["run", str(binary)]) == 2
    err = capsys.readouterr().err
    assert "cannot read" in err and "not UTF-8 text (byte 0xd0 at offset 20)" in err and "Traceback" not in err
    good = tmp_path / "good.tile"
    good.write_text("kernel k threads=32\nglobal A: float32[4]\nglobal B: float32[4]\nwarp.copy B <- A\ncheck B == A\n")
    missing = tmp_path / "no" / "such" / "dir" / "r.html"
    assert main(["run", str(good), "--launch", "sim", "--html", str(missing)]) == 2
    out = capsys.readouterr()
    assert f"cannot write the HTML report {missing}: No such file or directory" in out.err
    assert "good: sim (CPU simulator) — B == A: PASS" in out.out  # the text report still came out


def test_an_interrupted_launch_ends_the_run_with_status_130(tmp_path, capsys, monkeypatch):
    import tilemagic.pipeline
    from tilemagic.errors import LaunchInterrupted, Span

    calls = []

    def interrupted(source, **kw):
        calls.append(source)
        raise LaunchInterrupted("launch interrupted while running 'k'; the launch worker was stopped",
                                Span.point(1, 1), source=source)

    monkeypatch.setattr(tilemagic.pipeline, "tilecopy", interrupted)
    assert main(["demo", "--launch", "sim"]) == 130
    assert len(calls) == 1  # the second demo is not run: Ctrl-C ends the command
    assert "tmem_roundtrip.tile:1:1: LaunchInterrupted: launch interrupted while running 'k'" in capsys.readouterr().err


def test_bare_command_prints_the_help(capsys):
    assert main([]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("usage: tilemagic") and "run" in out.out and "status" in out.out
    assert "required" not in out.err


def test_an_interrupted_launch_is_located_in_the_file(tmp_path, capsys, monkeypatch):
    import tilemagic.pipeline
    from tilemagic.errors import LaunchInterrupted, Span

    def interrupted(source, **kw):
        raise LaunchInterrupted("launch interrupted while running 'k'", Span.point(3, 1), source=source)

    monkeypatch.setattr(tilemagic.pipeline, "tilecopy", interrupted)
    f = tmp_path / "slow.tile"
    f.write_text("kernel k threads=32\nglobal A: float32[4]\nglobal B: float32[4]\nwarp.copy B <- A\n")
    assert main(["run", str(f)]) == 130
    err = capsys.readouterr().err
    assert f"{f}:3:1: LaunchInterrupted" in err and "tilecopy:" not in err


def test_a_closed_pipe_ends_quietly(tmp_path):
    # `tilemagic demo | head -1`: the reader is gone (its end of the pipe closed before the report is written,
    # so every write fails: deterministic)
    exe = shutil.which("tilemagic") or str(__import__("pathlib").Path(sys.executable).parent / "tilemagic")
    p = subprocess.Popen([exe, "demo", "--launch", "off"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout is not None and p.stderr is not None
    p.stdout.close()
    err = p.stderr.read().decode()
    p.wait(timeout=120)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
