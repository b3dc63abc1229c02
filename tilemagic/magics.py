"""IPython magics: ``%%tilecopy`` and ``%tilemagic``.

``%load_ext tilemagic`` registers them.  Defaults come from traits generated from the option table
(:class:`tilemagic.options.Options`, the fields marked ``config``), so
``%config TileMagics.launch = "sim"`` (or ``arch``, ``view``, ``strict``, ``allow_fail``, ``seed``, ``timeout``)
changes them for the rest of the session; ``--no-strict`` turns a configured boolean off per cell.
"""

from __future__ import annotations

import dataclasses
import re
import textwrap
import sys
import warnings
from collections.abc import Callable
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import MagicArgumentParser, argument, magic_arguments, parse_argstring
from traitlets import Bool, Float, Int, TraitError, TraitType, Unicode, validate

from .errors import CheckFailed, InternalError, TileMagicError
from .options import FIELDS, OptionError, add_arguments, check_value, flag, usage
from .pipeline import cell_options, tilecopy


def _with_usage(fn: Callable) -> Callable:
    """``%%tilecopy?`` shows the usage and option help generated from the option table, once."""
    # IPython's help formatter prints "%" before the usage; "%%" is argparse's "%": it reads "%%tilecopy [NAME] ..."
    # (wrapped between options, never inside one: the spaces inside [...] are held together while filling)
    held = re.sub(r"\[[^\]]*\]", lambda m: m.group(0).replace(" ", "\0"), "%tilecopy " + usage())
    line = textwrap.fill(held, width=100, subsequent_indent=" " * 12, break_on_hyphens=False).replace("\0", " ")
    parser = MagicArgumentParser(prog="%tilecopy", usage=line.replace("%", "%%"), description=fn.__doc__)
    fn.__doc__ = add_arguments(parser).format_help()
    return fn


def _trait(f: dataclasses.Field) -> TraitType:
    """The ``%config TileMagics.<name>`` trait of an option: its default and help from the table."""
    m, text = f.metadata, f"Default {flag(f)}: {f.metadata['help']}"
    if m["choices"]:  # (case folded and checked by the option table, which names the option in its message)
        trait: TraitType = Unicode(str(f.default), help=text)
    else:
        kind = {bool: Bool, int: Int, float: Float, str: Unicode}[type(f.default)]
        trait = kind(f.default, help=text)
    return trait.tag(config=True)


def magic_after_line_magics(lines: list[str]) -> list[str]:
    """IPython cleanup transformer: a ``%%tilecopy`` line after the cell's leading line magics.

    IPython runs a cell magic only from a cell's first line, so the README's two lines pasted into one cell
    (``%load_ext tilemagic``, then ``%%tilecopy ...``) are Python and fail with a bare ``SyntaxError``.  Once
    the extension is loaded (``load_ipython_extension`` registers this in ``input_transformers_cleanup``), a
    cell whose lines before a ``%%tilecopy`` line are only line magics (``%load_ext``, ``%config``, ...),
    comments and blank lines runs those line magics, then the cell magic on the rest; any other cell is left
    as it is.  Line numbers in the cell's messages count from the ``%%tilecopy`` line, as in a cell of its own.

    Parameters
    ----------
    lines : list of str
        The cell's lines, each with its line end (IPython's transformer protocol).

    Returns
    -------
    list of str
        The same lines, or the line magics followed by one ``run_cell_magic('tilecopy', ...)`` call.
    """
    for i, raw in enumerate(lines):
        text = raw.strip()
        if text.startswith("%%"):
            if i == 0 or not (text == "%%tilecopy" or text.startswith(("%%tilecopy ", "%%tilecopy\t"))):
                return lines  # a cell magic on the first line is IPython's own case; another magic is not ours
            head, body = text[len("%%tilecopy"):].strip(), "".join(lines[i + 1:])
            return [*lines[:i], f"get_ipython().run_cell_magic('tilecopy', {head!r}, {body!r})\n"]
        if text and not (text.startswith("%") or text.startswith("#")):
            return lines
    return lines


def _show_fallback(res: Any) -> None:
    """With ``--view widget``, display the static report first (:func:`tilemagic.widgets.html.fallback_html`):
    a reopened notebook without widget state, nbconvert and GitHub show it where the widget cannot be; it hides
    itself beside a live view.  The result's own display then carries the widget and a pointer line."""
    if res.options.view != "widget":
        return
    from IPython.display import display

    from .widgets.html import fallback_html

    display({"text/html": fallback_html(res), "text/plain": res.text()}, raw=True)
    res._fallback_shown = True


def _show_decline(err: TileMagicError, view: str) -> None:
    """A ``DispatchError`` whose ``smem->tmem`` decline names a place: display the rejected layout's picture and its
    one line (:func:`tilemagic.widgets.html.decline_view`; ``--view text``: the line only) just before the located
    error fails the cell, as a failed ``check`` shows its report first.  Drawing it never replaces the error."""
    try:
        from IPython.display import display

        from .widgets.html import decline_view

        shown = decline_view(err, view)
        if shown is not None:
            display(shown)
    except Exception:  # noqa: BLE001 - the error itself is what must reach the user
        pass


def _show_unreported(caught: list[warnings.WarningMessage], reported: list[str]) -> None:
    """Show the warnings of a cell that its report does not list (each report lists its own in a box).

    The fallback's and the hazards' ``UserWarning`` are in the result's ``warnings``, which every view shows,
    so the magic does not print them a second time on stderr (where JupyterLab wraps them mid-word); any other
    warning (an export's failure, one from a library) is shown as Python would.
    """
    for w in caught:
        if not (issubclass(w.category, UserWarning) and str(w.message) in reported):
            warnings.showwarning(w.message, w.category, w.filename, w.lineno, w.file, w.line)


#: The options that are also traits (``%config``), in table order.
CONFIG = tuple(f for f in FIELDS if f.metadata["config"])


@magics_class
class TileMagics(Magics):
    """The ``%%tilecopy`` cell magic and the ``%tilemagic`` line magic."""

    # one trait per option marked ``config`` in the table (a class body's namespace is a dict)
    locals().update({f.name: _trait(f) for f in CONFIG})
    short_errors = Bool(True, help="Show tilemagic's own bugs as one message (False: full traceback).").tag(config=True)

    @validate(*(f.name for f in CONFIG))
    def _valid_option(self, proposal: dict[str, Any]) -> Any:
        # refused here, not at the next cell (which would blame that cell's %%tilecopy line)
        name = proposal["trait"].name
        try:
            return check_value(next(f for f in CONFIG if f.name == name), proposal["value"])
        except OptionError as e:
            raise TraitError(f"TileMagics.{name}: {e}") from None

    def update_config(self, config: Any) -> None:
        """``%config TileMagics.<name> = value``: a refused value is one line on stderr, the option unchanged.

        IPython's ``%config`` logs a configurable's exception through the root logger (``ERROR:root:...``);
        the magic says it itself, as ``%config: TileMagics.seed: --seed must be ...``.  Setting the attribute
        from Python still raises ``TraitError``.
        """
        try:
            super().update_config(config)
        except TraitError as e:
            print(f"%config: {e} (unchanged)", file=sys.stderr)

    def defaults(self) -> dict[str, Any]:
        """The session defaults of ``%%tilecopy`` (``%config TileMagics.<name>``)."""
        return {f.name: getattr(self, f.name) for f in CONFIG}

    @_with_usage
    @no_var_expand
    @cell_magic
    def tilecopy(self, line: str, cell: str) -> Any:
        """Describe a tile-copy kernel; dispatch, lower, show IR ∥ CUDA and TMEM, and run it.

        The cell language: docs/language.md in the tilemagic repository (every statement, layout and rule);
        ``%tilemagic status`` tells what a launch would use here.  The cell returns a
        ``TileCopyResult``: per op the dispatch why-table, the TIR-like IR and the
        CUDA side by side, a TMEM heatmap, and the round trip (which backend ran,
        each ``check`` PASS/FAIL).  Description errors and bad options are shown as one located
        message with a caret (a TileMagicError, so that nbval and nbclient see an ``error``).  A failing
        ``check`` shows the report, then fails the cell with a located ``CheckFailed`` (``--allow-fail``:
        the report alone).
        """
        source = f"%%tilecopy {line}\n{cell}"
        reported: list[str] = []  # the warnings the displayed report lists (shown there, not again on stderr)
        caught: list[warnings.WarningMessage] = []
        self.last: Any = None  # what `%tilemagic grade` grades: this cell's result, or the error it raised
        try:
            with warnings.catch_warnings(record=True) as caught:  # the user's filters still apply ("error" raises)
                return self._run(source, reported)
        finally:  # outside the recording, so shown to the user's own warning handler
            _show_unreported(caught, reported)

    def _run(self, source: str, reported: list[str]) -> Any:
        view = str(self.defaults().get("view", "html"))
        try:
            opts = cell_options(source, defaults=self.defaults())  # the line, parsed once
            view = opts.view
            res = tilecopy(source, options=opts, namespace=self.shell.user_ns if self.shell is not None else None)
        except CheckFailed as e:  # the report first (what failed), then the located error fails the cell
            from IPython.display import display

            self.last = e
            reported += e.result.warnings
            _show_fallback(e.result)
            display(e.result)
            raise
        except TileMagicError as e:
            self.last = e
            _show_decline(e, view)
            raise
        except Warning:  # a warning the user's filters turned into an error
            raise
        except Exception as e:  # a bug of ours: one message, never a dead kernel
            if not self.short_errors:
                raise
            raise InternalError(
                f"internal error in tilemagic: {type(e).__name__}: {e}",
                hint="please report it with the cell; `%config TileMagics.short_errors = False` shows the traceback",
            ) from e
        self.last = res
        reported += res.warnings
        _show_fallback(res)
        return res  # displayed as options.view asks (TileCopyResult._repr_mimebundle_)

    @magic_arguments()
    @argument("command", nargs="?", default="status", choices=("status", "variants", "grade"),
              help="status (default): CuPy, driver, device, NVRTC/nvcc, how launches would run and the session "
                   "defaults (``%%config TileMagics.<name> = ...``); variants: the registered dispatch variants "
                   "with their priorities; grade EXERCISE: grade the last %%tilecopy cell (tilemagic.exercises).")
    @argument("exercise", nargs="?", default=None, help="the exercise id, with grade")
    @line_magic
    def tilemagic(self, line: str) -> Any:
        """What tilemagic sees: ``%tilemagic status``, ``%tilemagic variants``; ``%tilemagic grade EXERCISE``."""
        args = parse_argstring(self.tilemagic, line)
        if args.command == "grade":
            from .exercises import EXERCISES, check

            if args.exercise not in EXERCISES:
                raise UsageError(f"%tilemagic grade EXERCISE: one of {', '.join(EXERCISES)}")
            return check(getattr(self, "last", None), args.exercise)
        if args.command == "status":
            from .runtime.status import status_report

            print(status_report(defaults=self.defaults()))
            return
        from .lower.dispatch import registered_variants

        for op in ("copy", "copy_async"):
            print(f"{op}: " + ", ".join(f"{v} (priority {p})" for v, p in registered_variants(op)))
