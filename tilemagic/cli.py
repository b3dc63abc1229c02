"""Command line: ``tilemagic run FILE.tile``, ``tilemagic demo``, ``tilemagic status``.

The same pipeline as the magic.  A ``.tile`` file holds a cell's description; an
optional first line ``%%tilecopy NAME --launch sim ...`` gives its options (the
command-line flags, the same table of options, win).  Exit status: 0 when every ``check`` passed, 1 when one
failed (the report, then the located ``CheckFailed`` on stderr; with ``--allow-fail`` the report alone, the
status is still 1), 2 on a description/launch error (printed located, with a caret), 130 when interrupted.
"""

from __future__ import annotations

import argparse
import os
import html
import sys
from importlib import resources

from .errors import CheckFailed, TileMagicError
from .options import FIELDS, add_arguments

DEMOS = ("tmem_roundtrip", "fallback_demo", "ldgsts_roundtrip", "tma_roundtrip", "tma_multicast", "dsmem_exchange",
         "tcgen05_cp_roundtrip")


def demo_source(name: str) -> str:
    """Text of a bundled demo (one of :data:`DEMOS`: the seed demos ``tmem_roundtrip`` and ``fallback_demo``, the
    asynchronous copies ``ldgsts_roundtrip`` and ``tma_roundtrip``, and the cluster demos ``tma_multicast`` (TMA
    multicast to a 2-CTA cluster) and ``dsmem_exchange`` (a tile swap through distributed shared memory), and
    ``tcgen05_cp_roundtrip`` (shared memory -> TMEM by ``tcgen05.cp`` and ``tcgen05.commit``, back by
    ``tcgen05.ld``))."""
    return resources.files("tilemagic.demos").joinpath(f"{name}.tile").read_text()


def _run_one(source: str, args: argparse.Namespace, label: str | None, filename: str = "tilecopy"):
    """Run one description; command-line flags win over its ``%%tilecopy`` line, which wins over defaults
    (the file's name is the default NAME)."""
    from .pipeline import cell_options, tilecopy

    flags = {f.name: getattr(args, f.name) for f in FIELDS if hasattr(args, f.name)}
    return tilecopy(source, options=cell_options(source, flags, defaults={"name": label}), filename=filename)


def _write_html(results, path: str):
    parts = "\n<hr>\n".join(r.html() for r in results)
    title = ", ".join(html.escape(r.name) for r in results)
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>tilemagic: {title}</title></head>"
                f"<body style='font-family: sans-serif; margin: 1em'>\n{parts}\n</body></html>\n")


def _report(sources: list[tuple], args) -> int:
    """Run ``(label, text, filename)`` descriptions; an error names ``filename`` (``f.tile:4:11: ...``)."""
    results, status = [], 0
    for label, src, filename in sources:
        try:
            res = _run_one(src, args, label, filename or "tilecopy")
        except KeyboardInterrupt as e:  # LaunchInterrupted too: Ctrl-C ends the run, not just this description
            if isinstance(e, TileMagicError):
                e.filename = filename or "tilecopy"  # main() prints it: located in the file, as every error
            raise
        except CheckFailed as e:  # the report, then the located failure: as the magic shows it
            e.filename = filename
            res = e.result
            print(res.text())
            print()
            print(e.render(), file=sys.stderr)
            results.append(res)
            status = max(status, 1)
            continue
        except TileMagicError as e:
            e.filename = filename
            print(e.render(), file=sys.stderr)
            status = 2
            continue
        results.append(res)
        print(res.text())
        print()
        if res.launch and not res.launch.passed:
            status = max(status, 1)
    if getattr(args, "html", None) and results:
        try:
            _write_html(results, args.html)
            print(f"HTML report: {args.html}")
        except OSError as e:
            print(f"tilemagic: cannot write the HTML report {args.html}: {e.strerror or e}", file=sys.stderr)
            status = 2
    for res in results:
        if res.launch:
            checks = ", ".join(f"{c.text}: {c.status}" for c in res.launch.checks) or "no checks"
            print(f"{res.name}: {res.launch.backend} ({res.launch.mode}) — {checks}")
        else:
            print(f"{res.name}: not launched")
    return status


def main(argv: list[str] | None = None) -> int:
    """The ``tilemagic`` command; a closed pipe on stdout (``tilemagic run X | head``) ends it quietly."""
    try:
        return _main(argv)
    except KeyboardInterrupt as e:  # a LaunchInterrupted says what it stopped
        print(e.render() if isinstance(e, TileMagicError) else "tilemagic: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 1


def _main(argv: list[str] | None) -> int:
    p = argparse.ArgumentParser(prog="tilemagic", description="TIRx-style tile-copy dispatch, lowering and launch.",
                                epilog="exit status: 0 when every check passed, 1 when one failed, 2 on a "
                                       "description, launch or usage error")
    sub = p.add_subparsers(dest="cmd", metavar="{run,demo,status}")

    def common(sp):  # the %%tilecopy options of the shared table, and the command line's own
        add_arguments(sp, cli=True)
        sp.add_argument("--html", default=None, metavar="OUT.html", help="also write an HTML report")

    r = sub.add_parser("run", help="run a .tile description", allow_abbrev=False)
    r.add_argument("file")
    common(r)
    d = sub.add_parser("demo", help="run the demos (tcgen05 round trips, fallback, cp.async, TMA, clusters)",
                       allow_abbrev=False)
    common(d)
    sub.add_parser("status", help="CuPy, driver, device, NVRTC/nvcc, and how launches would run")
    args = p.parse_args(argv)
    if args.cmd is None:  # bare `tilemagic`: the help, not argparse's "required: cmd"
        p.print_help()
        return 0

    if args.cmd == "status":
        from .runtime.status import status_report

        print(status_report())
        return 0
    if args.cmd == "demo":
        return _report([(n, demo_source(n), f"{n}.tile") for n in DEMOS], args)
    try:
        with open(args.file, encoding="utf-8-sig") as f:  # (a byte-order mark from a Windows editor is not text)
            src = f.read()
    except OSError as e:
        print(f"tilemagic: cannot read {args.file}: {e.strerror}", file=sys.stderr)
        return 2
    except UnicodeDecodeError as e:
        print(f"tilemagic: cannot read {args.file}: not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset "
              f"{e.start}); a .tile file is a cell's text", file=sys.stderr)
        return 2
    label = args.file.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return _report([(label if label.isidentifier() and label.isascii() else None, src, args.file)], args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
