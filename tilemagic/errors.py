"""Errors raised for bad ``%%tilecopy`` descriptions.

Every error about the description is a :class:`TileMagicError`.  It carries the
1-based ``line`` and ``col`` of the offending text and renders as one located
message with the source line and a caret underneath, e.g.::

    tilecopy:7:9: TileTypeError: unknown buffer 'X'
        7 | wg.copy X <- A
          |         ^
    hint: declare it first, e.g. `global X: float16[128, 8]`

In IPython the ``_render_traceback_`` hook makes the kernel show exactly this
text (no Python traceback from tilemagic's internals) while still sending a real
``error`` message, so nbval and other notebook CI see the failure.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from collections.abc import Sequence
from typing import Any

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
#: Characters that Python's ``str.splitlines`` takes for line breaks but an editor (and tilemagic) does not:
#: inside a line they are ordinary characters, an error outside a comment (:func:`odd_break`).
ODD_BREAKS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def split_lines(text: str) -> list[str]:
    """The lines of a cell as an editor shows them: split at ``\\n``, ``\\r\\n`` and ``\\r`` only.

    Every stage that numbers lines (the parser, the option line, the caret of an error, the source panes of
    the HTML and widget views, the CLI) splits with this one function, so line ``N`` is the same line
    everywhere.  Unlike ``str.splitlines``, U+2028, U+2029, U+0085, ``\\x0b``, ``\\x0c`` and ``\\x1c``-``\\x1e``
    (:data:`ODD_BREAKS`) stay inside their line.  A final line break adds no empty line; ``""`` has no lines.

    Parameters
    ----------
    text : str

    Returns
    -------
    list of str
        The lines without their terminators.
    """
    if not text:
        return []
    lines = _LINE_BREAK.split(text)
    if lines[-1] == "":
        lines.pop()
    return lines


def odd_break(text: str) -> int | None:
    """0-based index of the first :data:`ODD_BREAKS` character in ``text``, or None."""
    for i, ch in enumerate(text):
        if ch in ODD_BREAKS:
            return i
    return None


def char_name(ch: str) -> str:
    """``U+2028 (LINE SEPARATOR)``: a character named for an error message."""
    return f"U+{ord(ch):04X} ({unicodedata.name(ch, 'control character')})"


@dataclass(frozen=True)
class Span:
    """A 1-based, end-exclusive source range: ``line:col`` to ``end_line:end_col``."""

    line: int
    col: int
    end_line: int
    end_col: int

    @staticmethod
    def point(line: int, col: int, width: int = 1) -> Span:
        return Span(line, col, line, col + max(1, width))

    def __str__(self) -> str:  # deterministic, short
        return f"{self.line}:{self.col}"


class TileMagicError(Exception):
    """Base class of every description error.

    Parameters
    ----------
    message : str
        What is wrong, in one sentence.
    span : Span, optional
        Where (1-based line and column).  ``line``/``col`` mirror it.
    source : str, optional
        The cell text, used to print the offending line with a caret.
    hint : str, optional
        How to fix it.
    details : str, optional
        Extra block printed after the hint (e.g. a dispatch why-table).
    filename : str, optional
        Where the source came from, shown in front of ``line:col`` (the CLI sets the ``.tile`` file's
        path); ``tilecopy`` when None (a notebook cell, the API).
    """

    def __init__(
        self,
        message: str,
        span: Span | None = None,
        *,
        source: str | None = None,
        hint: str | None = None,
        details: str | None = None,
        filename: str | None = None,
    ):
        self.filename = filename
        self.message = message
        self.span = span
        self.source = source
        self.hint = hint
        self.details = details
        super().__init__(message)

    @property
    def line(self) -> int | None:
        return self.span.line if self.span else None

    @property
    def col(self) -> int | None:
        return self.span.col if self.span else None

    def with_source(self, source: str) -> TileMagicError:
        """Attach the cell text (if not already attached) and return self."""
        if self.source is None:
            self.source = source
        return self

    def render(self) -> str:
        """The located message: header, source line, caret, hint, details."""
        loc = f"{self.span.line}:{self.span.col}:" if self.span else ""
        out = [f"{self.filename or 'tilecopy'}:{loc} {type(self).__name__}: {self.message}"]
        if self.span and self.source is not None:
            lines = split_lines(self.source)
            if 1 <= self.span.line <= len(lines):
                text = lines[self.span.line - 1]
                num = str(self.span.line)
                out.append(f"  {num} | {text}")
                width = 1
                if self.span.end_line == self.span.line:
                    width = max(1, self.span.end_col - self.span.col)
                width = max(1, min(width, len(text) - self.span.col + 1)) if text else 1
                out.append(f"  {' ' * len(num)} | {' ' * (self.span.col - 1)}{'^' * width}")
        if self.hint:
            out.append(f"hint: {self.hint}")
        if self.details:
            out.append(self.details)
        return "\n".join(out)

    def __str__(self) -> str:
        return self.render()

    def _render_traceback_(self) -> Sequence[str]:  # IPython hook
        return split_lines(self.render())


class TileSyntaxError(TileMagicError):
    """The cell text does not follow the grammar (docs/language.md)."""


class TileTypeError(TileMagicError):
    """The description parses but is inconsistent (unknown buffer, shape or dtype mismatch, bad layout)."""


class DispatchError(TileMagicError):
    """No variant accepted an op; ``details`` holds the why-table.

    Parameters
    ----------
    message, span, source, hint, details, filename
        As :class:`TileMagicError` (the rendering is that class's: the why-table text only).
    records : sequence of DispatchRecord, optional
        The op's :class:`~tilemagic.lower.dispatch.DispatchRecord` (every candidate with its reasons and, for a
        decline that names a place, its ``DeclineDetail``), kept as ``.records`` so the notebook can draw the
        rejected layout under the error (:func:`tilemagic.widgets.figures.cp_decline_figure`).
    buffer_bytes : dict of str -> int, optional
        Bytes of the op's buffers by name (the picture's extent), kept as ``.buffer_bytes``.

    Attributes
    ----------
    records : tuple of DispatchRecord
        Empty when the error is not a dispatch decision (a forced variant that is not registered).
    buffer_bytes : dict of str -> int
    """

    def __init__(self, message: str, span: Span | None = None, *, records: Sequence[Any] = (),
                 buffer_bytes: dict[str, int] | None = None, **kw: str | None):
        super().__init__(message, span, **kw)
        self.records: tuple[Any, ...] = tuple(records)  # DispatchRecords (errors.py imports nothing of tilemagic)
        self.buffer_bytes: dict[str, int] = dict(buffer_bytes or {})


class InternalError(TileMagicError):
    """A bug in tilemagic itself, shown as one message instead of a traceback: a dispatch predicate that
    raised (named in the message; ``details`` holds the why-table, that row's verdict ``error``, instead of a
    later variant winning), or any other exception the magic met (``%config TileMagics.short_errors``)."""


class LoweringError(TileMagicError):
    """A program-level lowering rule failed (e.g. TMEM allocation larger than 512 columns)."""


class HazardError(TileMagicError):
    """A happens-before hazard under ``--strict`` (a race, an in-flight tcgen05 register or TMEM use, an
    uninitialised read): located at the later access, the message names both lines."""


class LaunchError(TileMagicError):
    """Compiling or launching the kernel failed, or the TMEM emulation trapped."""


class LaunchInterrupted(LaunchError, KeyboardInterrupt):
    """``KeyboardInterrupt`` while a launch was waited for: the launch stopped, its worker was killed.

    A kernel on the GPU cannot be cancelled, so the launch worker
    (:mod:`tilemagic.runtime.worker`) is killed and the next launch starts a fresh one.  It is a
    ``KeyboardInterrupt`` (``except KeyboardInterrupt`` sees it; a script still stops) and a
    :class:`LaunchError` (IPython shows it as one located message; the notebook kernel stays usable).
    """


class CheckFailed(TileMagicError):
    """A ``check`` of the cell failed after the launch (``--allow-fail`` shows the report instead).

    Located at the first failing ``check`` line; the message names every failing check with its
    line and how many elements differ.

    Parameters
    ----------
    result : TileCopyResult
        The whole result, kept as ``.result`` (its report shows what failed).
    message, span, source, hint, details
        As :class:`TileMagicError`.

    Attributes
    ----------
    result : TileCopyResult
        The result of the cell, with ``result.launch.checks``.
    """

    def __init__(self, message: str, span: Span | None = None, *, result: Any = None, **kw: str | None):
        super().__init__(message, span, **kw)
        self.result: Any = result  # a TileCopyResult (errors.py imports nothing of tilemagic)

