"""IPython magics: ``%%tilecopy`` and ``%tilemagic``.

``%load_ext tilemagic`` registers them.  Defaults come from traits, so
``%config TileMagics.launch = "sim"`` (or ``arch``, ``view``, ``strict``, ``seed``, ``timeout``)
changes them for the rest of the session.
"""

from __future__ import annotations

import keyword

from IPython.core.magic import Magics, cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument, kwds, magic_arguments, parse_argstring
from traitlets import Bool, CaselessStrEnum, Float, Int, TraitError, Unicode, validate

from .errors import Span, TileMagicError, TileSyntaxError
from .options import DEFAULT_TIMEOUT_S, LAUNCH_CHOICES, OPTION_SUMMARY, OPTIONS, VIEW_CHOICES
from .pipeline import check_arch, check_timeout, tilecopy


class WidgetView:
    """``--view widget``: the ipywidgets Tab, with the static HTML and the text report as fallbacks.

    Front ends without live widget state (nbconvert, GitHub, a reopened notebook) show the
    HTML report or the text instead of an empty output.
    """

    def __init__(self, result):
        self.result = result
        self.widget = result.widget()

    def _repr_mimebundle_(self, include=None, exclude=None):
        data = dict(self.widget._repr_mimebundle_() or {})
        data["text/plain"] = self.result.text()
        data["text/html"] = self.result.html()
        return data

    def __repr__(self):
        return self.result.text()


def _with_options(fn):
    """Apply the shared option table (tilemagic.options.OPTIONS) as magic_arguments."""
    for flags, kw in reversed(OPTIONS):
        fn = argument(*flags, **kw)(fn)
    fn = kwds(usage="%%tilecopy " + OPTION_SUMMARY)(fn)
    return magic_arguments()(fn)


def _option_error(source: str, message: str) -> TileSyntaxError:
    """A bad ``%%tilecopy`` option line, located on line 1 (the magic line).

    A TileMagicError rather than IPython's UsageError: the kernel then sends an ``error``
    message (UsageError is only printed to stderr), so nbval and nbclient see the failure.
    """
    first = source.split("\n", 1)[0]
    return TileSyntaxError(f"bad %%tilecopy option line: {message}", Span(1, 1, 1, len(first) + 1), source=source,
                           hint="options: " + OPTION_SUMMARY)


def _is_variable_name(name: str) -> bool:
    """``--out`` names a plain notebook variable: an identifier, no keyword, no ``__dunder__``."""
    return name.isidentifier() and not keyword.iskeyword(name) and not (name.startswith("__") and name.endswith("__"))


class InternalError(TileMagicError):
    """A bug in tilemagic itself, shown as one message instead of a traceback."""


@magics_class
class TileMagics(Magics):
    """The ``%%tilecopy`` cell magic and the ``%tilemagic`` line magic."""

    launch = CaselessStrEnum(LAUNCH_CHOICES, default_value="auto",
                             help="Default --launch: auto (GPU if found, else CPU simulator), sim, gpu, off.",
                             ).tag(config=True)
    arch = Unicode("sm_100a", help="Default --arch of the shown CUDA (tcgen05 needs sm_100a).").tag(config=True)
    view = CaselessStrEnum(VIEW_CHOICES, default_value="html",
                           help="Default --view: html, text, widget.").tag(config=True)
    strict = Bool(False, help="Default --strict (flag TMEM addresses in the wrong lane quadrant).").tag(config=True)
    seed = Int(0, help="Default --seed of random initialisers.").tag(config=True)
    timeout = Float(DEFAULT_TIMEOUT_S, help="Default --timeout: seconds a GPU kernel may run before its worker process "
                                            "is stopped (the next cell gets a fresh one).").tag(config=True)
    short_errors = Bool(True, help="Show tilemagic's own bugs as one message (False: full traceback).").tag(config=True)

    @validate("arch")
    def _valid_arch(self, proposal):
        try:
            return check_arch(proposal["value"])
        except ValueError as e:
            raise TraitError(f"TileMagics.arch: {e}") from None

    @validate("seed")
    def _valid_seed(self, proposal):
        if proposal["value"] < 0:
            raise TraitError("TileMagics.seed must be a non-negative integer")
        return proposal["value"]

    @validate("timeout")
    def _valid_timeout(self, proposal):
        # refused here, not at the next cell (which would blame that cell's %%tilecopy line)
        try:
            return check_timeout(proposal["value"])
        except ValueError as e:
            raise TraitError(f"TileMagics.timeout: {e}") from None

    def defaults(self) -> dict:
        """The session defaults of ``%%tilecopy`` (``%config TileMagics.<name>``)."""
        return {k: getattr(self, k) for k in ("launch", "arch", "view", "strict", "seed", "timeout")}

    @_with_options
    @no_var_expand
    @cell_magic
    def tilecopy(self, line, cell):
        """Describe a tile-copy kernel; dispatch, lower, show IR ∥ CUDA and TMEM, and run it.

        Usage::

            %%tilecopy [NAME] [--launch auto|sim|gpu|off] [--arch sm_100a] [--view html|text|widget]
                       [--out VAR] [--strict] [--bench] [--seed N] [--timeout SECONDS]
                       [--export tvmscript] [--compare tvm]
                       [--heatmap tmem,instr,fragment,data|none] [--color-by warp|thread|reg|instr]
            kernel NAME threads=128
            global A: float16[128, 8]
            ...

        The cell language is described in docs/language.md of the tilemagic repository.  The cell returns a
        ``TileCopyResult``: per op the dispatch why-table, the TIR-like IR and the
        CUDA side by side, a TMEM heatmap, and the round trip (which backend ran,
        each ``check`` PASS/FAIL).  Description errors are shown as one located
        message with a caret.
        """
        source = f"%%tilecopy {line}\n{cell}"
        try:
            args = parse_argstring(self.tilecopy, line)
        except (UsageError, ValueError) as e:  # ValueError: shlex on an unclosed quote
            raise _option_error(source, str(e)) from None
        opts = dict(
            launch=args.launch or self.launch,
            arch=args.arch or self.arch,
            view=args.view or self.view,
            strict=self.strict if args.strict is None else args.strict,
            seed=self.seed if args.seed is None else args.seed,
            bench=bool(args.bench),
            timeout=self.timeout if args.timeout is None else args.timeout,
            export=args.export,
            compare=args.compare,
            heatmap=args.heatmap,
            color_by=args.color_by,
        )
        try:
            check_arch(opts["arch"])
            check_timeout(opts["timeout"])
        except ValueError as e:
            raise _option_error(source, str(e)) from None
        if opts["seed"] < 0:
            raise _option_error(source, "--seed must be a non-negative integer")
        if args.out is not None and not _is_variable_name(args.out):
            raise _option_error(source, f"--out {args.out!r} is not a notebook variable name (an identifier, "
                                        f"not a keyword nor a __dunder__ name)")
        try:
            res = tilecopy(source, name=args.name, namespace=self.shell.user_ns, **opts)
        except (TileMagicError, Warning):  # ours, or a warning the user's filters turned into an error
            raise
        except Exception as e:  # a bug of ours: one message, never a dead kernel
            if not self.short_errors:
                raise
            raise InternalError(
                f"internal error in tilemagic: {type(e).__name__}: {e}",
                hint="please report it with the cell; `%config TileMagics.short_errors = False` shows the traceback",
            ) from e
        if args.out:
            self.shell.user_ns[args.out] = res
        if opts["view"] == "widget":
            return WidgetView(res)
        return res

    @line_magic
    def tilemagic(self, line):
        """``%tilemagic status``: CuPy, driver, device, NVRTC/nvcc and how launches would run.

        ``%tilemagic variants`` lists the registered dispatch variants with their priorities.
        The status ends with the session defaults (``%config TileMagics.<name> = ...``).
        """
        cmd = line.strip()
        if cmd in ("", "status"):
            from .runtime.status import status_report

            print(status_report(defaults=self.defaults()))
            return None
        if cmd == "variants":
            from .lower.dispatch import registered_variants

            for op in ("copy", "copy_async"):
                print(f"{op}: " + ", ".join(f"{v} (priority {p})" for v, p in registered_variants(op)))
            return None
        raise UsageError(f"%tilemagic: unknown command {cmd!r}; use `%tilemagic status` or `%tilemagic variants`")
