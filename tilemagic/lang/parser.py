"""Parser of the ``%%tilecopy`` description language (docs/language.md).

:func:`parse` turns a cell into a :class:`~tilemagic.lang.ast.Program`.  The
cell is read line by line (one statement per line); each statement line is
parsed with the lark grammar in ``grammar.lark`` (LALR, contextual lexer,
built once and cached) and converted into AST nodes here.  Everything the
grammar accepts permissively (dtypes, axes, layout arguments, which clauses a
buffer kind may carry, ``->``) is validated here so the error can say exactly
what is wrong.

Every problem is a :class:`~tilemagic.errors.TileSyntaxError` located at the
offending token; no lark or other exception escapes for any input string.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import unicodedata
from functools import lru_cache
from pathlib import Path
from typing import NoReturn
from collections.abc import Iterable, Sequence

from lark import Lark, Token, Tree
from lark.exceptions import (
    LarkError,
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
)

from ..arch.cluster import CTA_MASK_BITS, CTA_RANK, MAX_PORTABLE_CLUSTER
from ..arch.mbarrier import MBAR_MAX_COUNT, MBAR_MAX_TX
from ..caches import register_cache
from ..errors import Span, TileSyntaxError, char_name, odd_break, split_lines
from . import ast as A

__all__ = ["parse", "STATEMENTS"]

_GRAMMAR_PATH = Path(__file__).with_name("grammar.lark")

# First words of the statements (copy ops are `SCOPE.copy` / `SCOPE.copy_async`).
STATEMENTS = ("kernel", "global", "shared", "local", "tmem", "wait", "cta_sync", "check", "mbarrier", "arrive",
              "commit_group", "wait_group", "bulk_commit_group", "bulk_wait_group", "fence", "cluster_sync", "tcgen05",
              "if")
_OPS = ("copy", "copy_async")
_SCOPE_WORDS = A.SCOPES + ("warpgroup",)

_STATEMENTS_HINT = (
    "a line is one of: `kernel NAME [threads=N] [cluster=C]`, `global|shared|local|tmem NAME: DTYPE[...]`, "
    "`SCOPE.copy DST <- SRC`, `SCOPE.copy_async DST <- SRC`, `wait ld|st`, `cta_sync`, `check A == B`, "
    "`mbarrier NAME [count=N]`, `arrive BAR [expect_tx=N|auto]`, `wait BAR phase P`, `commit_group`, "
    "`wait_group N`, `bulk_commit_group`, `bulk_wait_group N [read]`, `fence.proxy.async`, `cluster_sync`, "
    "`tcgen05.commit BAR [cta_mask=M]`, `tcgen05.fence::after_thread_sync|before_thread_sync`, "
    "`if COND: STATEMENT`"
)
_OPTIONS_LIST = ", ".join(f"`{k}=`" for k in A.COPY_OPTIONS)
_SCOPE_HINT = "write the exec scope first: `wg.copy DST <- SRC` (thread, warp, wg, cta)"
_ARROW_HINT = "the destination comes first and the arrow is `<-`: `wg.copy DST <- SRC` (like TIRx `copy(dst, src)`)"
_DTYPE_LIST = "float32 (f32), float16 (f16), bfloat16 (bf16), uint8 (u8), int8 (i8), int32 (i32)"
_LAYOUT_HINT = (
    "layouts: `S[(128, 8) : (1@tid_in_wg, 1)]`, `S[4, 6]`, `datapath(D)`, `datapath(F, sub_slab=0)`, "
    "`datapath(B)`, `frag(32x32b)`, `swizzle(3, 3, 3)`; a tmem layout may add replicas: "
    "`S[(32, 4) : (1@TLane, 1@TCol)] + R[4 : 32@TLane]`"
)
_MAX_INT_DIGITS = 1000
#: The largest unsigned PTX integer constant (PTX ISA 9.0 §4.5.1: integer constants are 64 bits).
_PTX_INT_MAX = 2**64 - 1

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FENCE = re.compile(r"[ \t]*fence[ \t]*\.[ \t]*proxy[ \t]*\.[ \t]*async(?![A-Za-z0-9_])")
_TCGEN05 = re.compile(r"tcgen05[ \t]*\.[ \t]*(?P<op>[A-Za-z_][A-Za-z0-9_]*)?")
_TCGEN05_KIND = re.compile(r"[ \t]*::[ \t]*(?P<kind>[A-Za-z_][A-Za-z0-9_]*)?")
_GUARD_TOKEN = re.compile(r"[ \t]*(?:(?P<int>-?[0-9]+)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|"
                          r"(?P<op>==|!=|<=|>=|<|>|=)|(?P<colon>:)|(?P<other>\S))")
_HEADER = re.compile(r"[ \t]*%%tilecopy(?![^ \t])")

# Usage line per statement, used as the hint of a generic grammar error.
_USAGE = {
    "kernel": ("usage: `kernel NAME [threads=N] [cluster=C]`, e.g. `kernel tmem_roundtrip threads=128` or "
               "`kernel tma_multicast threads=128 cluster=2`"),
    "global": ("usage: `global NAME: DTYPE[d0, d1, ...] [= random|arange|zeros|ARRAY]`, "
               "e.g. `global A: float16[128, 8]`"),
    "shared": "usage: `shared NAME: DTYPE[d0, d1, ...] [@ LAYOUT]`, e.g. `shared A_smem: float32[4, 6]`",
    "local": ("usage: `local NAME: DTYPE[d0, d1, ...] @ LAYOUT`, "
              "e.g. `local a: float16[128, 8] @ S[(128, 8) : (1@tid_in_wg, 1)]`"),
    "tmem": "usage: `tmem NAME: DTYPE[d0, d1, ...] [@ LAYOUT] [at OTHER [+ COLS]]`, e.g. `tmem T: float16[128, 8]`",
    "copy": "usage: `SCOPE.copy DST <- SRC [dispatch=VARIANT]`, e.g. `wg.copy a <- A[0:128, :]`",
    "copy_async": ("usage: `SCOPE.copy_async DST <- SRC [mbar=BAR] "
                   + " ".join(f"[{k}={'|'.join(v)}]" for k, v in A.COPY_OPTIONS.items() if v)
                   + " [dispatch=VARIANT]`, "
                   "e.g. `wg.copy_async T <- a` or `thread.copy_async S <- A mbar=full dispatch=tma_auto`"),
    "wait": "usage: `wait ld`, `wait st` or `wait BAR phase 0|1`",
    "mbarrier": "usage: `mbarrier NAME [count=N]`, e.g. `mbarrier full count=1`",
    "arrive": "usage: `arrive BAR [expect_tx=BYTES|auto]`, e.g. `arrive full expect_tx=auto`",
    "commit_group": "usage: `commit_group` (nothing else on the line)",
    "wait_group": "usage: `wait_group N`, e.g. `wait_group 0`",
    "bulk_commit_group": "usage: `bulk_commit_group` (nothing else on the line)",
    "bulk_wait_group": "usage: `bulk_wait_group N [read]`, e.g. `bulk_wait_group 0 read`",
    "fence": "usage: `fence.proxy.async` (nothing else on the line)",
    "tcgen05.commit": ("usage: `tcgen05.commit BAR [cta_mask=M]`, e.g. `if tx == 0: tcgen05.commit done` (the thread "
                       "that issued the tcgen05.cp copies)"),
    "tcgen05.fence": ("usage: `tcgen05.fence::after_thread_sync` or `tcgen05.fence::before_thread_sync` (nothing "
                      "else on the line)"),
    "cta_sync": "usage: `cta_sync` (nothing else on the line)",
    "cluster_sync": "usage: `cluster_sync` (nothing else on the line)",
    "expr": ("an integer expression in `cta_rank`: integers (decimal, 0b..., 0x...), `cta_rank`, "
             "`+ - * // % ^` and parentheses, e.g. `remote_cta_id=cta_rank^1` or `cta_mask=0b11`"),
    "check": "usage: `check A == B`, e.g. `check B == A` or `check B[0:64, :] == A[64:128, :]`",
}

# Human names of the grammar's terminals (for "expected ..." messages), in display order.
_TERMINAL_NAMES = {
    "KNAME": "a kernel name",
    "BUF_NAME": "a buffer name",
    "DTYPE": "a dtype",
    "INIT_NAME": "an initializer (random, arange, zeros or a NumPy array name)",
    "AXIS": "an axis name",
    "INT": "an integer",
    "DP_LETTER": "a datapath letter (D, F or B)",
    "FRAG_ARG": "a tcgen05 shape (32x32b, 16x64b, 16x128b or 16x256b)",
    "VARIANT": "a variant name",
    "STRING": "a quoted string",
    "S_KW": "`S[...]`",
    "DATAPATH": "`datapath(...)`",
    "FRAG": "`frag(...)`",
    "SWIZZLE": "`swizzle(...)`",
    "LARROW": "'<-'",
    "_EQEQ": "'=='",
    "_COLON": "':'",
    "_LSQB": "'['",
    "_RSQB": "']'",
    "_LPAR": "'('",
    "_RPAR": "')'",
    "_COMMA": "','",
    "_ATSIGN": "'@'",
    "_PLUS": "'+'",
    "_EQ": "'='",
    "THREADS": "'threads='",
    "CLUSTER": "'cluster='",
    "RANK_NAME": "`cta_rank`",
    "INT_LIT": "an integer",
    "MINUS": "'-'",
    "STAR": "'*'",
    "FLOORDIV": "'//'",
    "PERCENT": "'%'",
    "CARET": "'^'",
    "OPT_KEY": "an option (" + ", ".join(f"{k}=" for k in A.COPY_OPTIONS) + ")",
    "PHASE": "'phase'",
    "COUNT": "'count='",
    "EXPECT_TX": "'expect_tx='",
    "AUTO": "'auto'",
    "DECIMAL": "an integer",
    "READ": "'read'",
    "SUB_SLAB": "'sub_slab='",
    "AT": "'at'",
    "LD": "'ld'",
    "ST": "'st'",
    "BAR_NAME": "an mbarrier name",
    "KERNEL": "'kernel'",
    "BUFKIND": "a buffer kind",
    "COPY_OP": "a copy op",
    "WAIT": "'wait'",
    "CTA_SYNC": "'cta_sync'",
    "CLUSTER_SYNC": "'cluster_sync'",
    "CHECK": "'check'",
    "MBARRIER": "'mbarrier'",
    "ARRIVE": "'arrive'",
    "COMMIT_GROUP": "'commit_group'",
    "WAIT_GROUP": "'wait_group'",
    "BULK_COMMIT_GROUP": "'bulk_commit_group'",
    "BULK_WAIT_GROUP": "'bulk_wait_group'",
    "FENCE_PROXY_ASYNC": "'fence.proxy.async'",
    "TCGEN05_COMMIT": "'tcgen05.commit'",
    "TCGEN05_FENCE": "'tcgen05.fence::...'",
    "R_KW": "`R[...]`",
    "$END": "end of line",
}
_TERMINAL_ORDER = {name: i for i, name in enumerate(_TERMINAL_NAMES)}
# Never shown as "expected": ignored terminals and the wrong arrow (accepted only to give a hint).
_HIDDEN_TERMINALS = {"WS", "COMMENT", "RARROW"}
# Terminals that can occur in each statement (by first word).  LALR merges
# parser states across statements (a region after `check` and after `wg.copy`
# share states), so lark's "expected" sets are filtered through these.
_LAYOUT_TERMS = {"_ATSIGN", "S_KW", "R_KW", "DATAPATH", "FRAG", "SWIZZLE", "_LSQB", "_RSQB", "_LPAR", "_RPAR", "INT",
                 "_COMMA", "_COLON", "AXIS", "_PLUS", "DP_LETTER", "SUB_SLAB", "_EQ", "FRAG_ARG"}
_DECL_TERMS = {"BUF_NAME", "_COLON", "DTYPE", "_LSQB", "INT", "_COMMA", "_RSQB", "$END"}
_EXPR_TERMS = {"INT", "INT_LIT", "RANK_NAME", "_LPAR", "_RPAR", "_PLUS", "MINUS", "STAR", "FLOORDIV", "PERCENT",
               "CARET"}
_REGION_TERMS = {"BUF_NAME", "_LSQB", "_COLON", "_COMMA", "_RSQB"} | _EXPR_TERMS
_ALLOWED_TERMS = {
    "kernel": {"KNAME", "THREADS", "CLUSTER", "_EQ", "INT", "$END"},
    "global": _DECL_TERMS | {"_EQ", "INIT_NAME"},
    "shared": _DECL_TERMS | _LAYOUT_TERMS,
    "local": _DECL_TERMS | _LAYOUT_TERMS,
    "tmem": _DECL_TERMS | _LAYOUT_TERMS | {"AT"},
    "copy": _REGION_TERMS | {"LARROW", "OPT_KEY", "_EQ", "VARIANT", "STRING", "$END"},
    "copy_async": _REGION_TERMS | {"LARROW", "OPT_KEY", "_EQ", "VARIANT", "STRING", "$END"},
    "wait": {"LD", "ST", "BAR_NAME", "PHASE", "INT", "$END"},
    "mbarrier": {"BAR_NAME", "COUNT", "_EQ", "INT", "$END"},
    "arrive": {"BAR_NAME", "EXPECT_TX", "_EQ", "INT", "AUTO", "DECIMAL", "$END"},
    "commit_group": {"$END"},
    "wait_group": {"INT", "$END"},
    "bulk_commit_group": {"$END"},
    "bulk_wait_group": {"INT", "READ", "$END"},
    "fence": {"$END"},
    "tcgen05.commit": {"BAR_NAME", "OPT_KEY", "_EQ", "VARIANT", "STRING", "$END"},
    "tcgen05.fence": {"$END"},
    "cta_sync": {"$END"},
    "cluster_sync": {"$END"},
    "check": _REGION_TERMS | {"_EQEQ", "$END"},
}


@lru_cache(maxsize=1)
def _lark() -> Lark:
    """The statement parser, built once (LALR + contextual lexer)."""
    return Lark(
        _GRAMMAR_PATH.read_text(encoding="utf-8"),
        parser="lalr",
        lexer="contextual",
        propagate_positions=True,
        maybe_placeholders=True,
        start=["start", "opt_expr"],
    )


register_cache("lang.parser", _lark.cache_clear, "the lark statement parser (built once)")


# ----------------------------------------------------------------------------- helpers
def _show(text: str, limit: int = 40) -> str:
    """A token's text for a message: escaped if not printable, shortened if long."""
    if len(text) > limit:
        text = text[: limit - 1] + "\u2026"
    # what cannot be seen is named: a zero-width space (Cf) looks like nothing, a no-break space (Zs) like a space
    unseen = [c for c in dict.fromkeys(text) if unicodedata.category(c) == "Cf" or
              (unicodedata.category(c) == "Zs" and c != " ")]
    if not text.isprintable() or unseen:
        text = text.encode("unicode_escape").decode("ascii")
    if unseen:
        text += " (" + ", ".join(f"U+{ord(c):04X} {unicodedata.name(c, 'unnamed')}" for c in unseen[:3]) + ")"
    return text


def _join_or(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " or " + items[-1]


def _token(child: Token | Tree) -> Token:
    """A tree child that the grammar makes a token (a TypeError, i.e. an internal parser error, if not)."""
    if not isinstance(child, Token):
        raise TypeError(f"expected a token, got {type(child).__name__}")
    return child


class _Line:
    """One statement line being parsed: makes spans and located errors."""

    __slots__ = ("text", "lineno", "err_source", "word", "exprs")

    def __init__(self, text: str, lineno: int, err_source: str, word: str):
        self.text = text
        self.lineno = lineno
        self.err_source = err_source
        self.word = word  # first word ("copy"/"copy_async" for ops)
        #: the parsed values of the expression options (:func:`_blank_expr_options`), by 1-based column
        self.exprs: dict[int, int | A.RankExpr] = {}

    # spans -----------------------------------------------------------------
    def span(self, col: int, end_col: int | None = None) -> Span:
        col = max(1, col)
        if end_col is None or end_col <= col:
            end_col = col + 1
        return Span(self.lineno, col, self.lineno, end_col)

    def tok(self, tok: Token | Tree) -> Span:
        tok = _token(tok)
        return self.span(tok.column or 1, tok.end_column)

    def node(self, tree: Tree) -> Span:
        meta = tree.meta
        if getattr(meta, "empty", True):  # pragma: no cover - every rule here has tokens
            return self.span(1)
        return self.span(meta.column, meta.end_column)

    def join(self, a: Span, b: Span) -> Span:
        return self.span(a.col, b.end_col)

    # errors ----------------------------------------------------------------
    def error(self, message: str, span: Span, hint: str | None = None) -> NoReturn:
        ch = self.text[span.col - 1] if 0 < span.col <= len(self.text) else ""
        if ch and (unicodedata.category(ch) == "Cf" or (unicodedata.category(ch) == "Zs" and ch != " ")) \
                and f"U+{ord(ch):04X}" not in message:  # what the caret points at cannot be seen: name it
            message += f" (at the caret: U+{ord(ch):04X} {unicodedata.name(ch, 'unnamed')}, invisible: delete it)"
        raise TileSyntaxError(message, span, source=self.err_source, hint=hint)

    def int(self, tok: Token | Tree, what: str, *, minimum: int | None = None, hint: str | None = None) -> int:
        tok = _token(tok)
        text = tok.value
        digits = text.lstrip("-")
        if len(digits) > _MAX_INT_DIGITS:
            self.error(f"{what} has too many digits ({len(digits)})", self.tok(tok))
        value = int(text)
        if minimum is not None and value < minimum:
            need = "positive" if minimum == 1 else f">= {minimum}"
            self.error(f"{what} must be {need}, got {_show(text)}", self.tok(tok), hint=hint)
        return value


# ----------------------------------------------------------------------------- first word
def _precheck(ln: _Line) -> None:
    """Validate the first word of a statement line; set ``ln.word``."""
    text = ln.text
    pos = len(text) - len(text.lstrip())
    m = _IDENT.match(text, pos)
    if m is None:
        ch = text[pos]
        m2 = re.compile(r"\S+").match(text, pos)
        end = m2.end() if m2 else pos + 1
        if text.startswith("%%tilecopy", pos) or text.startswith("%", pos):
            ln.error(
                f"unexpected '{_show(text[pos:end])}'; expected a statement",
                ln.span(pos + 1, end + 1),
                hint="the `%%tilecopy [options]` line must be the first line of the cell",
            )
        ln.error(
            f"unexpected '{_show(ch)}'; expected a statement",
            ln.span(pos + 1, pos + 2),
            hint=_STATEMENTS_HINT,
        )
    word = m.group()
    wspan = ln.span(m.start() + 1, m.end() + 1)
    rest = m.end()
    while rest < len(text) and text[rest] in " \t":
        rest += 1
    if word == "fence":
        m_f = _FENCE.match(text, pos)
        if m_f is None:
            m2 = re.compile(r"[A-Za-z0-9_. \t]*[A-Za-z0-9_]").match(text, pos)
            end = m2.end() if m2 else m.end()
            ln.error(f"unknown fence '{_show(text[pos:end])}'", ln.span(pos + 1, end + 1),
                     hint="the fence a kernel writes is `fence.proxy.async` (fence.proxy.async.shared::cta); the "
                          "mbarrier-init fence is part of the prologue tilemagic writes")
        ln.word = "fence"
        return
    if word == "tcgen05":
        _precheck_tcgen05(ln, pos)
        return
    if rest < len(text) and text[rest] == ".":  # SCOPE.op
        if word not in _SCOPE_WORDS:
            if word.lower() in _SCOPE_WORDS:
                ln.error(f"unknown exec scope '{_show(word)}'", wspan,
                         hint=f"keywords are lowercase: `{word.lower()}`")
            ln.error(
                f"unknown exec scope '{_show(word)}'",
                wspan,
                hint="the exec scopes are thread, warp, wg (alias warpgroup) and cta, e.g. `wg.copy DST <- SRC`",
            )
        p = rest + 1
        while p < len(text) and text[p] in " \t":
            p += 1
        m_op = _IDENT.match(text, p)
        if m_op is None:
            ln.error(f"expected `copy` or `copy_async` after '{word}.'", ln.span(p + 1),
                     hint=_USAGE["copy"])
        op = m_op.group()
        if op not in _OPS:
            hint = (f"keywords are lowercase: `{word}.{op.lower()}`" if op.lower() in _OPS
                    else "the operations are `SCOPE.copy` and `SCOPE.copy_async`")
            ln.error(f"unknown operation '{_show(op)}'", ln.span(m_op.start() + 1, m_op.end() + 1),
                     hint=hint)
        ln.word = op
        return
    if word in STATEMENTS:
        ln.word = word
        return
    if word in _OPS:
        ln.error(f"missing exec scope before '{word}'", wspan, hint=_SCOPE_HINT)
    if word in _SCOPE_WORDS:
        ln.error(f"expected '.copy' or '.copy_async' after the exec scope '{word}'",
                 ln.span(m.end() + 1), hint=f"write `{word}.copy DST <- SRC`")
    low = word.lower()
    if low in STATEMENTS or low in _OPS or low in _SCOPE_WORDS:
        ln.error(f"unknown statement '{_show(word)}'", wspan, hint=f"keywords are lowercase: `{low}`")
    ln.error(f"unknown statement '{_show(word)}'", wspan, hint=_STATEMENTS_HINT)


_TCGEN05_HINT = ("the tcgen05 statements are `tcgen05.commit BAR [cta_mask=M]`, "
                 "`tcgen05.fence::after_thread_sync` and `tcgen05.fence::before_thread_sync`; tcgen05.ld/st/cp are "
                 "written as copies (`SCOPE.copy_async DST <- SRC`)")


def _precheck_tcgen05(ln: _Line, pos: int) -> None:
    """``tcgen05.commit`` / ``tcgen05.fence::KIND``: name an unknown operation or fence kind (with the known ones)."""
    text = ln.text
    m = _TCGEN05.match(text, pos)
    if m is None or m.group("op") is None:
        ln.error("expected `commit` or `fence::...` after 'tcgen05.'" if m is not None else
                 "expected '.' after 'tcgen05'", ln.span((m.end() if m else pos + 7) + 1), hint=_TCGEN05_HINT)
    op = m.group("op")
    ospan = ln.span(m.start("op") + 1, m.end("op") + 1)
    if op == "commit":
        ln.word = "tcgen05.commit"
        return
    if op != "fence":
        close = _closest(op, ("commit", "fence"))
        hint = (f"did you mean `tcgen05.{close}`? " if close else "") + _TCGEN05_HINT
        if op in ("ld", "st", "cp", "wait"):
            hint = ("tcgen05.ld/st are `wg.copy_async` between tmem and local buffers and tcgen05.cp a "
                    "`thread.copy_async` shared -> tmem; `wait ld`/`wait st` are tcgen05.wait")
        ln.error(f"unknown tcgen05 statement 'tcgen05.{_show(op)}'", ospan, hint=hint)
    k = _TCGEN05_KIND.match(text, m.end())
    if k is None or k.group("kind") is None:
        ln.error("expected '::after_thread_sync' or '::before_thread_sync' after 'tcgen05.fence'",
                 ln.span((k.end() if k else m.end()) + 1), hint=_USAGE["tcgen05.fence"])
    kind = k.group("kind")
    if kind not in A.TCGEN05_FENCES:
        close = _closest(kind, A.TCGEN05_FENCES)
        ln.error(f"unknown tcgen05 fence kind '{_show(kind)}'; expected after_thread_sync or before_thread_sync",
                 ln.span(k.start("kind") + 1, k.end("kind") + 1),
                 hint=(f"did you mean `tcgen05.fence::{close}`? " if close else "")
                 + "`::after_thread_sync` after a wait or barrier, before the tcgen05.ld; `::before_thread_sync` "
                   "after tcgen05 operations, before the barrier (PTX ISA 9.0 §9.7.16.11)")
    ln.word = "tcgen05.fence"


# ----------------------------------------------------------------------------- lark errors
def _filter_expected(ln: _Line, expected: Iterable[str], col: int) -> set:
    """Lark's expected terminals, cleaned: end of input as ``$END``, and only what
    can occur at this point of this statement (LALR merges states across
    statements and between the two regions of a copy)."""
    exp = {"$END" if t == "<END-OF-FILE>" else t for t in expected} - _HIDDEN_TERMINALS
    narrowed = exp & _ALLOWED_TERMS.get(ln.word, exp)
    before = ln.text[: max(0, col - 1)]
    if ln.word in _OPS or ln.word == "check":
        # inside a region: the operators of a bound expression may always follow an operand (not worth listing);
        # ')' only inside an open parenthesis, ':' only once per slice (LALR merges the start and stop states)
        narrowed -= {"_PLUS", "MINUS", "STAR", "FLOORDIV", "PERCENT", "CARET"}
        if before.count("(") <= before.count(")"):
            narrowed -= {"_RPAR"}
        if ":" in re.split(r"[\[,]", before)[-1]:
            narrowed -= {"_COLON"}
    if ln.word == "expr":  # an option's value (start rule opt_expr): no region punctuation
        narrowed -= {"_COLON", "_RSQB", "_COMMA"}
        if before.count("(") <= before.count(")"):
            narrowed -= {"_RPAR"}
    if ln.word == "tcgen05.commit" and re.search(r"commit[ \t]+[A-Za-z_]", before) is None:
        narrowed &= {"BAR_NAME"}
    if ln.word in _OPS:
        if "<-" in before or "->" in before:
            narrowed -= {"LARROW"}
        else:
            narrowed -= {"OPT_KEY", "VARIANT", "STRING", "$END"}
    elif ln.word == "check":
        narrowed -= {"_EQEQ"} if "==" in before else {"$END"}
    elif ln.word in ("shared", "local", "tmem") and not before.rstrip().endswith("sub_slab"):
        narrowed -= {"_EQ"}  # `= INIT` is for global buffers; '=' here only follows sub_slab
    return narrowed or exp


def _expected_names(expected: Iterable[str]) -> list[str]:
    names = sorted(expected, key=lambda t: (_TERMINAL_ORDER.get(t, len(_TERMINAL_ORDER)), t))
    out: list[str] = []
    for t in names:
        human = _TERMINAL_NAMES.get(t, t.lower().lstrip("_"))
        if human not in out:
            out.append(human)
    return out


_SWIZZLE_HINT = ("usage: `swizzle(per_element, swizzle_len, atom_len)` over the buffer's row-major order, or "
                 "`swizzle(per_element, swizzle_len, atom_len, S[...])` over a tile (TVM ComposeLayout)")


def _hint_for(ln: _Line, expected: set, got: str, col: int = 0) -> str:
    if ln.word == "wait_group" and got == "read":
        return "`read` belongs to the bulk groups of TMA stores: `bulk_wait_group N read`"
    if ln.word == "mbarrier" and got == ":":
        return "an mbarrier has no dtype or shape (it is one 64-bit object in shared memory): `mbarrier NAME [count=N]`"
    if got in ("->", "=", "<", "-", "<=", ">") and "LARROW" in expected and ln.word in _OPS:
        return _ARROW_HINT
    if got == "" and (expected & {"_RSQB", "_RPAR"}):
        closer = "]" if "_RSQB" in expected else ")"
        return f"close the bracket with '{closer}'"
    if "DTYPE" in expected:
        return f"dtypes: {_DTYPE_LIST}"
    if "AXIS" in expected:
        return "axes: " + ", ".join(A.AXES)
    if "INIT_NAME" in expected:
        return "initializers: random, arange, zeros, or the name of a NumPy array in the notebook"
    before = ln.text[: max(0, col - 1)]
    if "swizzle" in before and before.count("(") > before.count(")"):
        return _SWIZZLE_HINT
    if expected & {"S_KW", "DATAPATH", "FRAG", "SWIZZLE"}:
        return _LAYOUT_HINT
    if "_EQ" in expected and got == "==":
        return "use a single '='"
    if "_EQEQ" in expected and got == "=":
        return "compare with '==': `check B == A`"
    return _USAGE.get(ln.word, _STATEMENTS_HINT)


def _state_terminals(exc: UnexpectedInput) -> set:
    """Terminals the parser state accepts (the contextual lexer's sets omit end of line)."""
    try:
        state = exc.state
        return set(state.parse_conf.parse_table.states[state.position])
    except Exception:  # noqa: BLE001 - best effort, lark internals
        return set()


def _convert_lark_error(ln: _Line, exc: UnexpectedInput) -> NoReturn:
    if isinstance(exc, UnexpectedToken):
        tok = exc.token
        at_end = tok.type == "$END"
        pos = (getattr(tok, "end_column", None) if at_end else tok.column) or len(ln.text) + 1
        expected = _filter_expected(ln, set(exc.expected or ()) | _state_terminals(exc), pos)
        names = _expected_names(expected)
        exp = f"; expected {_join_or(names)}" if names else ""
        if at_end:
            ln.error(f"unexpected end of line{exp}", ln.span(pos), hint=_hint_for(ln, expected, "", pos))
        value = str(tok.value)
        col = tok.column or 1
        end_col = tok.end_column or col + len(value)
        if value == "->" and "LARROW" in expected:
            ln.error("the copy arrow is '<-', not '->'", ln.span(col, end_col), hint=_ARROW_HINT)
        ln.error(f"unexpected '{_show(value)}'{exp}", ln.span(col, end_col),
                 hint=_hint_for(ln, expected, value, col))
    if isinstance(exc, UnexpectedCharacters):
        col = exc.column if isinstance(exc.column, int) and exc.column >= 1 else 1
        ch = ln.text[col - 1] if col - 1 < len(ln.text) else ""
        expected = _filter_expected(ln, set(exc.allowed or ()) | _state_terminals(exc), col)
        names = _expected_names(expected)
        exp = f"; expected {_join_or(names)}" if names else ""
        if ch == "":
            ln.error(f"unexpected end of line{exp}", ln.span(col), hint=_hint_for(ln, expected, "", col))
        ln.error(f"unexpected character '{_show(ch)}'{exp}", ln.span(col, col + 1),
                 hint=_hint_for(ln, expected, ch, col))
    if isinstance(exc, UnexpectedEOF):  # pragma: no cover - LALR reports $END as UnexpectedToken
        pos = len(ln.text.rstrip()) + 1
        expected = _filter_expected(ln, exc.expected or (), pos)
        names = _expected_names(expected)
        exp = f"; expected {_join_or(names)}" if names else ""
        ln.error(f"unexpected end of line{exp}", ln.span(pos),
                 hint=_hint_for(ln, expected, ""))
    ln.error("could not parse this line", ln.span(1), hint=_USAGE.get(ln.word))  # pragma: no cover


# ----------------------------------------------------------------------------- tree -> AST
_RANK_HINT = ("a region bound is an integer or an integer expression in `cta_rank` (`+ - * // % ^`, parentheses), "
              "e.g. `A[64*cta_rank : 64*cta_rank+64, :]` or `A[cta_rank, 0:64, :]`")


def _rank_expr(ln: _Line, tree: Tree | Token) -> int | A.RankExpr:
    """An integer expression of the grammar (``rank_*`` rules): an ``int`` for a lone integer literal, else a
    :class:`~tilemagic.lang.ast.RankExpr` (constants inside it are ``const`` nodes)."""
    if isinstance(tree, Token):  # pragma: no cover - the grammar wraps every atom in a rule
        raise TypeError(f"expected a rank expression, got token {tree.type}")
    kind = tree.data
    if kind == "opt_expr":
        return _rank_expr(ln, tree.children[0])
    if kind == "rank_int":
        tok = _token(tree.children[0])
        digits = tok.value.lstrip("-")
        if len(digits) > _MAX_INT_DIGITS:
            ln.error(f"an integer has too many digits ({len(digits)})", ln.tok(tok))
        return int(tok.value, 0) if tok.type == "INT_LIT" else int(tok.value)
    if kind == "rank_name":
        tok = _token(tree.children[0])
        if tok.value != CTA_RANK:
            close = _closest(tok.value, (CTA_RANK,))
            ln.error(f"unknown name '{_show(tok.value)}' in an integer expression: the only name is `{CTA_RANK}`",
                     ln.tok(tok), hint=(f"did you mean `{close}`? " if close else "") + _RANK_HINT)
        return A.RankExpr("cta_rank", ln.tok(tok))
    if kind == "rank_bin":
        if len(tree.children) == 2:  # `+` is an anonymous terminal: its operands only
            a_t, b_t = tree.children
            op = "+"
        else:
            a_t, op_tok, b_t = tree.children
            op = str(op_tok)
        a, b = _rank_expr(ln, a_t), _rank_expr(ln, b_t)
        return A.RankExpr(op, ln.node(tree), a=_as_rank_expr(a, ln.node(a_t)), b=_as_rank_expr(b, ln.node(b_t)))
    raise AssertionError(kind)  # pragma: no cover


def _as_rank_expr(v: int | A.RankExpr, span: Span) -> A.RankExpr:
    return v if isinstance(v, A.RankExpr) else A.RankExpr("const", span, value=v)


def _bound(ln: _Line, tree: Tree, what: str) -> int | A.RankExpr:
    """A slice bound or point index: an int >= 0 as today, a constant expression folded to its int, or a
    :class:`~tilemagic.lang.ast.RankExpr` in ``cta_rank`` (checked per rank later, with the buffer's extent)."""
    if tree.data == "rank_int" and _token(tree.children[0]).type == "INT":
        return ln.int(tree.children[0], what, minimum=0)
    v = _rank_expr(ln, tree)
    if isinstance(v, A.RankExpr) and not v.uses_rank:
        try:
            v = v.at(0)
        except ZeroDivisionError as e:
            ln.error("division by zero in a region bound", e.args[0], hint=_RANK_HINT)
    if isinstance(v, int) and v < 0:
        ln.error(f"{what} must be >= 0, got {v}", ln.node(tree))
    return v


def _region(ln: _Line, tree: Tree) -> A.Region:
    name_tok, index = tree.children
    slices = None
    if index is not None:
        out = []
        for sl in index.children:
            if sl.data == "point":
                (k,) = sl.children
                v = _bound(ln, k, "an index")
                stop = v + 1 if isinstance(v, int) else A.RankExpr("+", v.span, a=v,
                                                                   b=A.RankExpr("const", v.span, value=1))
                out.append(A.Slice(v, stop, True, ln.node(sl)))
            else:
                start_t, stop_t = sl.children
                start = _bound(ln, start_t, "a slice start") if start_t is not None else None
                stop_v = _bound(ln, stop_t, "a slice stop") if stop_t is not None else None
                out.append(A.Slice(start, stop_v, False, ln.node(sl)))
        slices = tuple(out)
    return A.Region(str(name_tok), slices, ln.node(tree), ln.tok(name_tok))


#: ``cta_mask=`` / ``remote_cta_id=`` and their value: up to a comment, the end, or the next ``KEY=``
_EXPR_OPTION = re.compile(r"(?<![A-Za-z0-9_])(?:" + "|".join(A.EXPR_OPTIONS) + r")[ \t]*=(?!=)[ \t]*")
_VALUE_END = re.compile(r"[ \t]+[A-Za-z_][A-Za-z0-9_]*[ \t]*=(?!=)|[ \t]*#|[ \t]*$")


def _blank_expr_options(ln: _Line) -> str:
    """The line with the values of :data:`~tilemagic.lang.ast.EXPR_OPTIONS` parsed (start rule ``opt_expr``,
    kept in ``ln.exprs`` by column) and blanked to one name of the same width, so that the statement's grammar
    sees an ordinary ``KEY=VALUE`` and every column stays where the user wrote it."""
    text = ln.text
    if ln.word not in (*_OPS, "tcgen05.commit"):
        return text
    for m in list(_EXPR_OPTION.finditer(text)):
        start = m.end()
        end_m = _VALUE_END.search(text, start)
        end = end_m.start() if end_m else len(text)
        if end <= start or "#" in text[:m.start()]:
            continue
        sub = _Line(" " * start + text[start:end], ln.lineno, ln.err_source, "expr")
        try:
            tree = _lark().parse(sub.text, start="opt_expr")
        except UnexpectedInput as exc:
            _convert_lark_error(sub, exc)
        ln.exprs[start + 1] = _rank_expr(sub, tree)
        text = text[:start] + "_" * (end - start) + text[end:]
    return text


def _stride(ln: _Line, tree: Tree, what: str) -> A.Stride:
    n_tok, axis_tok = tree.children
    value = ln.int(n_tok, what, minimum=0)
    axis = "m"
    if axis_tok is not None:
        axis = str(axis_tok)
        if axis not in A.AXES:
            lower = {a.lower(): a for a in A.AXES}
            hint = (f"axis names are case-sensitive: `{lower[axis.lower()]}`" if axis.lower() in lower
                    else "axes: " + ", ".join(A.AXES))
            ln.error(f"unknown axis '{_show(axis)}'; expected one of {', '.join(A.AXES)}",
                     ln.tok(axis_tok), hint=hint)
    return A.Stride(value, axis, ln.node(tree))


def _s_layout(ln: _Line, tree: Tree) -> A.SLayout:
    span = ln.node(tree)
    body = tree.children[1]
    offsets = tuple(_stride(ln, t.children[0], "an offset") for t in tree.children[2:] if t.data == "offset")
    replicas = tuple(_replica(ln, t) for t in tree.children[2:] if t.data == "replica")
    if body.data == "s_extents":
        extents = tuple(ln.int(t, "an extent", minimum=1) for t in body.children)
        return A.SLayout(extents, None, offsets, span, replicas)
    extents, strides = _extents_strides(ln, body, "layout")
    return A.SLayout(extents, strides, offsets, span, replicas)


def _extents_strides(ln: _Line, body: Tree, what: str) -> tuple[tuple[int, ...], tuple[A.Stride, ...] | None]:
    """The extents and strides of an ``s_1d`` or ``s_full`` body (strides None when omitted)."""
    hint = _REPLICA_HINT if what == "replica" else None
    if body.data == "s_1d":
        e_tok, st = body.children
        return (ln.int(e_tok, "an extent", minimum=1, hint=hint),), (_stride(ln, st, "a stride"),)
    ext_tree, str_tree = body.children
    extents = tuple(ln.int(t, "an extent", minimum=1, hint=hint) for t in ext_tree.children)
    if str_tree is None:
        return extents, None
    strides = tuple(_stride(ln, s, "a stride") for s in str_tree.children)
    if len(strides) != len(extents):
        ln.error(
            f"the {what} has {len(extents)} extent{'s' * (len(extents) != 1)} but "
            f"{len(strides)} stride{'s' * (len(strides) != 1)}",
            ln.node(str_tree),
            hint="give one stride per extent: `S[(128, 8) : (1@tid_in_wg, 1)]`" if what == "layout" else
            "give one stride per extent: `R[(2, 2) : (32@TLane, 64@TLane)]`",
        )
    return extents, strides


_REPLICA_HINT = ("a replica repeats every element at lane offsets: `+ R[4 : 32@TLane]` (lanes +0, +32, +64, +96) or "
                 "`+ R[(2, 2) : (32@TLane, 64@TLane)]` (TVM TIRx `R[...]`)")


def _replica(ln: _Line, tree: Tree) -> A.Replica:
    """``+ R[...]``: extents with strides, every stride on ``TLane`` (the lane copies of a tcgen05.cp multicast)."""
    _kw, body = tree.children
    extents, strides = _extents_strides(ln, body, "replica")
    if strides is None:
        ln.error("a replica needs its strides: `R[(e0, e1) : (s0@TLane, s1@TLane)]`", ln.node(body),
                 hint=_REPLICA_HINT)
    for st in strides:
        if st.axis != "TLane":
            ln.error(f"a replica's strides are on TLane (lane copies), got {st.value}@{st.axis}"
                     if st.axis != "m" else f"a replica's strides are on TLane (lane copies), got {st.value}",
                     st.span, hint=_REPLICA_HINT)
        if st.value == 0:
            ln.error("a replica stride of 0 puts the copies on the same lanes", st.span, hint=_REPLICA_HINT)
    return A.Replica(extents, strides, ln.node(tree))


def _layout(ln: _Line, tree: Tree) -> A.LayoutExpr:
    kind = tree.data
    span = ln.node(tree)
    if kind == "s_layout":
        return _s_layout(ln, tree)
    if kind == "datapath_layout":
        _kw, letter_tok, sub_kw, sub_tok = tree.children
        letter = str(letter_tok)
        if letter not in ("D", "F", "B"):
            hint = (f"the letter is uppercase: `datapath({letter.upper()})`" if letter.upper() in ("D", "F", "B")
                    else "datapath layouts: D (lane = row), F (two 16-row halves per 32 lanes), "
                         "B (column halves stacked on lanes)")
            ln.error(f"unknown datapath layout '{_show(letter)}'; expected D, F or B", ln.tok(letter_tok),
                     hint=hint)
        sub_slab = 0
        if sub_kw is not None:
            if letter != "F":
                ln.error(f"sub_slab only applies to datapath(F), not datapath({letter})",
                         ln.join(ln.tok(sub_kw), ln.tok(sub_tok)),
                         hint=f"write `datapath({letter})`")
            sub_slab = ln.int(sub_tok, "sub_slab")
            if sub_slab not in (0, 1):
                ln.error(f"sub_slab must be 0 or 1, got {_show(str(sub_tok))}", ln.tok(sub_tok),
                         hint="datapath(F, sub_slab=0) selects lanes 32k+0..15, sub_slab=1 lanes 32k+16..31")
        return A.DatapathLayout(letter, sub_slab, span)
    if kind == "swizzle_layout":
        _kw, m_tok, b_tok, s_tok, tile_tree = tree.children
        m = ln.int(m_tok, "swizzle per_element", minimum=0)
        b = ln.int(b_tok, "swizzle swizzle_len", minimum=0)
        a = ln.int(s_tok, "swizzle atom_len", minimum=0)
        if m + b + a > 30:
            ln.error(f"swizzle bits per_element + swizzle_len + atom_len = {m + b + a} exceed 30",
                     span, hint="the swizzle acts on element offsets below 2**30")
        if a < b:
            ln.error(f"swizzle atom_len ({a}) must be >= swizzle_len ({b})", ln.tok(s_tok),
                     hint="the XOR source bits [per_element+atom_len, +swizzle_len) must lie above the bits "
                          "[per_element, +swizzle_len) they change (TVM's well-formed ComposeLayout)")
        tile = _s_layout(ln, tile_tree) if tile_tree is not None else None  # the grammar's tile is an s_layout
        return A.SwizzleLayout(m, b, a, tile, span)
    if kind == "frag_layout":
        _kw, shape_tok = tree.children
        shape = str(shape_tok)
        if shape not in A.TCGEN05_SHAPES:
            ln.error(f"unknown tcgen05 fragment shape '{_show(shape)}'; expected one of "
                     f"{', '.join(A.TCGEN05_SHAPES)}", ln.tok(shape_tok),
                     hint="e.g. `frag(32x32b)` (128 rows) or `frag(16x64b)` (64 rows)")
        return A.FragLayout(shape, span)
    raise AssertionError(kind)  # pragma: no cover


def _decl(ln: _Line, tree: Tree) -> A.BufferDecl:
    kind_tok, name_tok, dtype_tok, shape_tree, layout_clause, alias_tree, init_tree = tree.children
    kind = str(kind_tok)
    name = str(name_tok)
    dtype = A.DTYPE_ALIASES.get(str(dtype_tok))
    if dtype is None:
        low = str(dtype_tok).lower()
        hint = (f"dtype names are lowercase: `{low}`" if low in A.DTYPE_ALIASES
                else f"dtypes: {_DTYPE_LIST}")
        ln.error(f"unknown dtype '{_show(str(dtype_tok))}'; expected one of {', '.join(A.DTYPES)} "
                 f"(or f32, f16, bf16, u8, i8, i32)", ln.tok(dtype_tok), hint=hint)
    shape = tuple(ln.int(t, "a dimension", minimum=1) for t in shape_tree.children)
    layout = None
    if layout_clause is not None:
        if kind == "global":
            ln.error("a global buffer takes no layout: global memory is row-major",
                     ln.node(layout_clause),
                     hint="drop the `@ ...`; give the layout to the shared/local/tmem buffer it is copied to")
        layout = _layout(ln, layout_clause.children[0])
        tile = layout.tile if isinstance(layout, A.SwizzleLayout) else layout
        if isinstance(tile, A.SLayout) and tile.replicas and kind != "tmem":
            ln.error(f"replicas (`+ R[...]`) are lane copies in tensor memory; a {kind} buffer cannot take them",
                     tile.replicas[0].span,
                     hint="a tmem destination of a tcgen05.cp multicast declares them: "
                          "`tmem T: float32[32, 4] @ S[(32, 4) : (1@TLane, 1@TCol)] + R[4 : 32@TLane]`")
    elif kind == "local":
        ln.error(f"local buffer '{_show(name)}' needs a register layout, e.g. "
                 "`@ S[(128, 8) : (1@tid_in_wg, 1)]` or `@ frag(32x32b)`",
                 ln.tok(name_tok),
                 hint="the layout says which thread and register hold each element")
    alias = None
    if alias_tree is not None:
        at_tok, target_tok, cols_tok = alias_tree.children
        if kind != "tmem":
            ln.error(f"`at OTHER` aliases tensor memory; a {kind} buffer cannot take it",
                     ln.node(alias_tree), hint="only `tmem` buffers can alias another tmem allocation")
        cols = ln.int(cols_tok, "a column offset", minimum=0) if cols_tok is not None else 0
        alias = A.Alias(str(target_tok), cols, ln.node(alias_tree), ln.tok(target_tok))
    init = None
    init_span = None
    if init_tree is not None:
        if kind != "global":
            ln.error(f"`= INIT` is only allowed on global buffers, not on {kind} '{_show(name)}'",
                     ln.node(init_tree),
                     hint="initialize a global buffer and copy it in: `global A: ... = arange` then `wg.copy ... <- A`")
        (init_tok,) = init_tree.children
        init = str(init_tok)
        init_span = ln.tok(init_tok)
    return A.BufferDecl(
        kind=kind, name=name, dtype=dtype, shape=shape, layout=layout, init=init, alias=alias,
        span=ln.node(tree), name_span=ln.tok(name_tok), dtype_span=ln.tok(dtype_tok),
        shape_span=ln.node(shape_tree), init_span=init_span,
    )


def _closest(word: str, choices: Iterable[str]) -> str | None:
    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return found[0] if found else None


def _swapped_factors(word: str, choices: Iterable[str]) -> str | None:
    """``AxBb`` -> ``BxAb`` when that is a choice (``shape=256x128b`` means ``128x256b``, not ``64x128b``)."""
    m = re.fullmatch(r"([0-9]+)x([0-9]+)(b?)", word)
    if not m:
        return None
    swapped = f"{m.group(2)}x{m.group(1)}{m.group(3)}"
    return swapped if swapped in set(choices) else None


def _copy_option(ln: _Line, tree: Tree, is_async: bool, seen: dict[str, A.CopyOption]) -> A.CopyOption:
    """One ``KEY=VALUE`` of a copy, validated: known key, given once, legal for the op, a legal value."""
    key_tok, v_tok = tree.children
    key = str(key_tok)
    kspan = ln.tok(key_tok)
    if key not in A.COPY_OPTIONS:
        legal = A.COPY_OPTIONS if is_async else A.SYNC_COPY_OPTIONS
        close = _closest(key, legal)
        ln.error(f"unknown option '{_show(key)}'", kspan,
                 hint=(f"did you mean `{close}=`? " if close else "")
                 + (f"the options of copy_async are {_OPTIONS_LIST}" if is_async else
                    "a synchronous copy takes `dispatch=`; " f"copy_async takes {_OPTIONS_LIST}"))
    if v_tok is None:
        ln.error(f"option `{key}` needs a value", kspan, hint=f"write `{key}=VALUE`" + (
            f" (one of {', '.join(A.COPY_OPTIONS[key] or ())})" if A.COPY_OPTIONS[key] else ""))
    if key in seen:
        ln.error(f"option `{key}` is given twice (first at column {seen[key].span.col})", kspan,
                 hint="write each option once")
    if not is_async and key not in A.SYNC_COPY_OPTIONS:
        ln.error(f"`{key}=` is an option of `copy_async`; a synchronous `copy` takes only "
                 + ", ".join(f"`{k}=`" for k in A.SYNC_COPY_OPTIONS), kspan,
                 hint=f"drop `{key}=`, or make the copy asynchronous: `SCOPE.copy_async DST <- SRC {key}=...`")
    v_tok = _token(v_tok)
    value = str(v_tok)
    vspan = ln.tok(v_tok)
    if v_tok.type == "STRING":
        value = value[1:-1]
        if not value.strip():
            ln.error(f"the {'dispatch variant' if key == 'dispatch' else key + ' value'} is empty", vspan,
                     hint="name a variant, e.g. `dispatch=tmem<->local`" if key == "dispatch" else None)
    allowed = A.COPY_OPTIONS[key]
    expr: int | A.RankExpr | None = None
    if key in A.EXPR_OPTIONS:
        expr = ln.exprs.get(vspan.col)
        value = ln.text[vspan.col - 1: vspan.end_col - 1]  # as written (the grammar saw it blanked)
        if expr is None:
            ln.error(f"`{key}=` takes an integer expression, got '{_show(value)}'", vspan, hint=_USAGE["expr"])
        if key == "cta_mask":
            if not isinstance(expr, int):
                ln.error(f"cta_mask is an integer literal (decimal, 0b..., 0x...), got '{_show(value)}'", vspan,
                         hint="bit i of the mask is the CTA of rank i: e.g. `cta_mask=0b11` multicasts to ranks 0 "
                              "and 1")
            if not 1 <= expr < 2**CTA_MASK_BITS:
                ln.error(f"cta_mask must name at least one CTA and fit {CTA_MASK_BITS} bits (1 to "
                         f"{2**CTA_MASK_BITS - 1}), got {_show(value)}", vspan,
                         hint="bit i of the mask is the CTA of rank i (PTX ISA 9.0 §9.7.9.25.5.2 ctaMask)")
        elif isinstance(expr, int) and expr < 0:
            ln.error(f"remote_cta_id is a CTA rank (>= 0), got {expr}", vspan,
                     hint="e.g. `remote_cta_id=cta_rank^1` sends to the other CTA of a pair")
    elif key == "dispatch" or key in A.FREE_OPTIONS:
        pass  # any variant name: the dispatcher names an unknown one with the why-table; decompress: the variant
    elif key in A.INT_OPTIONS:
        if not re.fullmatch(r"[0-9]{1,6}", value):
            ln.error(f"`{key}=` takes an integer, got '{_show(value)}'", vspan,
                     hint="`cta_group=1` (one CTA's TMEM) or `cta_group=2` (a CTA pair)")
        expr = int(value)
    elif allowed is not None:
        if value not in allowed:
            close = _swapped_factors(value, allowed) or _closest(value, allowed)
            ln.error(f"unknown {key} value '{_show(value)}'; expected {_join_or(list(allowed))}", vspan,
                     hint=f"did you mean `{key}={close}`?" if close else f"write `{key}={allowed[0]}`")
    elif not _IDENT.fullmatch(value):  # mbar: the name of a declared mbarrier
        ln.error(f"`{key}=` names an mbarrier; '{_show(value)}' is not a name", vspan,
                 hint="declare one with `mbarrier NAME` and write `mbar=NAME`")
    opt = A.CopyOption(key, value, ln.join(kspan, vspan), kspan, vspan, expr)
    seen[key] = opt
    return opt


def _copy(ln: _Line, tree: Tree) -> A.CopyStmt:
    op_tok, dst_tree, arrow_tok, src_tree, *opt_trees = tree.children
    if _token(arrow_tok).type == "RARROW":
        ln.error("the copy arrow is '<-', not '->'", ln.tok(arrow_tok), hint=_ARROW_HINT)
    scope, _, op = str(op_tok).partition(".")
    scope, op = scope.strip(), op.strip()
    scope = "wg" if scope == "warpgroup" else scope
    is_async = op == "copy_async"
    seen: dict[str, A.CopyOption] = {}
    options = tuple(_copy_option(ln, t, is_async, seen) for t in opt_trees)
    disp = seen.get("dispatch")
    return A.CopyStmt(
        scope=scope, is_async=is_async, dst=_region(ln, dst_tree), src=_region(ln, src_tree),
        dispatch=disp.value if disp else None, span=ln.node(tree), op_span=ln.tok(op_tok),
        dispatch_span=disp.value_span if disp else None, options=options,
    )


def _tcgen05_commit(ln: _Line, tree: Tree) -> A.TcgenCommitStmt:
    """``tcgen05.commit BAR [cta_mask=M]``: the one option is ``cta_mask`` (an integer literal, as a copy's)."""
    _kw, bar_tok, *opt_trees = tree.children
    mask, mask_span = None, None
    seen: dict[str, A.CopyOption] = {}
    for t in opt_trees:
        key_tok = _token(t.children[0])
        if str(key_tok) != "cta_mask":
            close = _closest(str(key_tok), ("cta_mask",))
            ln.error(f"unknown option '{_show(str(key_tok))}' of tcgen05.commit", ln.tok(key_tok),
                     hint=(f"did you mean `{close}=`? " if close else "")
                     + "tcgen05.commit takes `cta_mask=M` only (its multicast form, in a cluster kernel)")
        opt = _copy_option(ln, t, True, seen)
        assert isinstance(opt.expr, int)  # _copy_option checked cta_mask is an integer literal
        mask, mask_span = opt.expr, opt.span
    return A.TcgenCommitStmt(str(bar_tok), ln.node(tree), ln.tok(bar_tok), mask, mask_span)


def _mbar_decl(ln: _Line, tree: Tree) -> A.MbarrierDecl:
    _kw, name_tok, count_kw, count_tok = tree.children
    name = str(name_tok)
    if name in ("ld", "st"):
        ln.error(f"an mbarrier cannot be named '{name}': `wait {name}` is tcgen05.wait::{name}", ln.tok(name_tok),
                 hint="choose another name, e.g. `mbarrier full`")
    count, count_span = 1, None
    if count_tok is not None:
        count = ln.int(count_tok, "an mbarrier count", minimum=1,
                       hint="the count is the number of arrivals that complete a phase, 1 to 2**20 - 1")
        count_span = ln.join(ln.tok(count_kw), ln.tok(count_tok))
        if count > MBAR_MAX_COUNT:
            ln.error(f"an mbarrier count must be at most {MBAR_MAX_COUNT} (2**20 - 1), got {count}",
                     ln.tok(count_tok), hint="the count is the number of arrivals that complete a phase "
                                             "(PTX ISA 9.0 §9.7.13.15.1)")
    return A.MbarrierDecl(name, count, ln.node(tree), ln.tok(name_tok), count_span)


def _arrive(ln: _Line, tree: Tree) -> A.ArriveStmt:
    _kw, bar_tok, ex_kw, v_tok = tree.children
    expect: int | None = None
    auto = False
    espan = None
    if v_tok is not None:
        v_tok = _token(v_tok)
        espan = ln.join(ln.tok(ex_kw), ln.tok(v_tok))
        if v_tok.type == "AUTO":
            auto = True
        elif v_tok.type == "DECIMAL":
            ln.error(f"expect_tx is a whole number of bytes, got {_show(str(v_tok))}", ln.tok(v_tok),
                     hint="write the bytes the copies deliver, or `expect_tx=auto`")
        else:
            expect = ln.int(v_tok, "expect_tx", minimum=0,
                            hint="expect_tx raises the phase's tx-count by this many bytes (0 to 2**20 - 1)")
            if expect > MBAR_MAX_TX:
                ln.error(f"expect_tx must be at most {MBAR_MAX_TX} bytes (2**20 - 1), got {expect}", ln.tok(v_tok),
                         hint="an mbarrier's tx-count lies in [-(2**20 - 1), 2**20 - 1] (PTX ISA 9.0 §9.7.13.15.1): "
                              "split the copies over several phases or barriers")
    return A.ArriveStmt(str(bar_tok), expect, auto, ln.node(tree), ln.tok(bar_tok), espan)


def _mbar_wait(ln: _Line, tree: Tree) -> A.MbarWaitStmt:
    _kw, bar_tok, _phase_kw, p_tok = tree.children
    phase = ln.int(p_tok, "a phase parity", minimum=0, hint="the phase parity is 0 or 1")
    if phase not in (0, 1):
        ln.error(f"the phase parity is 0 or 1, got {phase}", ln.tok(p_tok),
                 hint="`wait BAR phase P` waits for the phase of parity P (phase number k: P = k % 2)")
    return A.MbarWaitStmt(str(bar_tok), phase, ln.node(tree), ln.tok(bar_tok), ln.tok(p_tok))


def _group(ln: _Line, tree: Tree) -> A.GroupStmt:
    kind = tree.data
    bulk = kind.startswith("bulk_")
    if kind.endswith("commit_group"):
        return A.GroupStmt("commit", bulk, 0, False, ln.node(tree))
    n_tok = tree.children[1]
    n = ln.int(n_tok, "the number of pending groups", minimum=0,
               hint="`wait_group N` waits until at most N of the thread's newest groups are pending (0: all done)")
    if n > _PTX_INT_MAX:
        # the N of cp.async{.bulk}.wait_group is an integer constant in the PTX text: 64 bits (PTX ISA 9.0 §4.5.1);
        # a larger one is "Constant overflow" in ptxas, so the kernel shown would never build
        ln.error("the number of pending groups must fit a 64-bit PTX constant (at most 2**64 - 1), "
                 f"got {_show(str(n_tok))}", ln.tok(n_tok),
                 hint="any N at least the number of groups committed so far waits for none of them")
    read = bulk and tree.children[2] is not None
    return A.GroupStmt("wait", bulk, n, read, ln.node(tree))


def _kernel(ln: _Line, tree: Tree) -> A.KernelDecl:
    _kw, name_tok, *opts = tree.children
    threads = None
    threads_span = None
    cluster, cluster_span = 1, None
    for opt in opts:
        kw, n_tok = opt.children
        span = ln.join(ln.tok(kw), ln.tok(n_tok))
        if opt.data == "kernel_cluster":
            if cluster_span is not None:
                ln.error(f"`cluster=` is given twice (first at column {cluster_span.col})", span,
                         hint="write each option once")
            cluster, cluster_span = ln.int(n_tok, "cluster"), span
            if not 1 <= cluster <= 16:
                ln.error(f"a cluster has 1 to {MAX_PORTABLE_CLUSTER} CTAs, got {_show(str(n_tok))}", ln.tok(n_tok),
                         hint="`cluster=C` is the number of CTAs launched together (x only); `cluster=1` is no "
                              "cluster (PTX ISA 9.0 §11.7 .reqnctapercluster)")
            if cluster > MAX_PORTABLE_CLUSTER:
                ln.error(f"a cluster of {cluster} CTAs is not portable: at most {MAX_PORTABLE_CLUSTER}", ln.tok(n_tok),
                         hint="clusters of 9 to 16 CTAs (sm_90) need the non-portable cluster size attribute "
                              "(cudaFuncAttributeNonPortableClusterSizeAllowed), which tilemagic does not set; "
                              f"use cluster={MAX_PORTABLE_CLUSTER} or fewer")
        else:
            if threads_span is not None:
                ln.error(f"`threads=` is given twice (first at column {threads_span.col})", span,
                         hint="write each option once")
            threads, threads_span = ln.int(n_tok, "threads", minimum=1), span
    return A.KernelDecl(str(name_tok), threads, ln.node(tree), ln.tok(name_tok), threads_span, cluster,
                        cluster_span)


def _statement(ln: _Line, tree: Tree):
    kind = tree.data
    if kind == "decl_stmt":
        return _decl(ln, tree)
    if kind == "copy_stmt":
        return _copy(ln, tree)
    if kind == "kernel_stmt":
        return _kernel(ln, tree)
    if kind == "wait_stmt":
        return A.WaitStmt(str(tree.children[1]), ln.node(tree))
    if kind == "mbar_wait_stmt":
        return _mbar_wait(ln, tree)
    if kind == "mbar_decl":
        return _mbar_decl(ln, tree)
    if kind == "arrive_stmt":
        return _arrive(ln, tree)
    if kind in ("commit_group", "wait_group", "bulk_commit_group", "bulk_wait_group"):
        return _group(ln, tree)
    if kind == "fence_stmt":
        return A.FenceStmt("proxy_async", ln.node(tree))
    if kind == "sync_stmt":
        return A.SyncStmt(ln.node(tree))
    if kind == "cluster_sync_stmt":
        return A.ClusterSyncStmt(ln.node(tree))
    if kind == "tcgen05_commit_stmt":
        return _tcgen05_commit(ln, tree)
    if kind == "tcgen05_fence_stmt":
        kind_m = re.search(r"::[ \t]*([A-Za-z_][A-Za-z0-9_]*)", str(tree.children[0]))
        assert kind_m is not None and kind_m.group(1) in A.TCGEN05_FENCES  # _precheck_tcgen05 checked it
        return A.TcgenFenceStmt(kind_m.group(1), ln.node(tree))
    if kind == "check_stmt":
        _kw, lhs, rhs = tree.children
        regions = (_region(ln, lhs), _region(ln, rhs))
        for r in regions:
            for sl in r.slices or ():
                if sl.uses_rank:
                    ln.error(f"`{CTA_RANK}` in a `check` region: check compares global buffers on the host after "
                             "the kernel, where no CTA has a rank", sl.span,
                             hint="write one check per rank's region, e.g. `check B[0:128, :] == A` and "
                                  "`check B[128:256, :] == A`")
        return A.CheckStmt(*regions, ln.node(tree))
    raise AssertionError(kind)  # pragma: no cover


_GUARD_HINT = ("a guard is `if AXIS OP INT [and AXIS OP INT ...]: STATEMENT` with AXIS one of "
               + ", ".join(A.THREAD_AXIS_NAMES) + " and OP one of " + " ".join(A.GUARD_OPS)
               + ", e.g. `if tx == 0: arrive full expect_tx=auto`")


def _guard(ln: _Line) -> tuple[A.Guard, int]:
    """Parse the ``if COND:`` prefix of ``ln``; returns the guard and the index just past the colon."""
    text = ln.text
    pos = text.index("if") + 2
    terms: list[A.GuardTerm] = []
    start_col = text.index("if") + 1

    def next_tok(p: int):
        m = _GUARD_TOKEN.match(text, p)
        if m is None:  # only blanks are left
            return None, None, len(text.rstrip()) + 1, len(text)
        kind = m.lastgroup or "other"
        return kind, m.group(kind), m.start(kind) + 1, m.end()

    while True:
        kind, val, col, end = next_tok(pos)
        if kind != "name":
            what = "end of line" if kind is None else f"'{_show(val or '')}'"
            ln.error(f"unexpected {what}; expected a thread axis in the guard", ln.span(col, col + len(val or " ")),
                     hint=_GUARD_HINT)
        assert val is not None
        if val not in A.THREAD_AXIS_NAMES:
            close = _closest(val, A.THREAD_AXIS_NAMES)
            ln.error(f"unknown thread axis '{_show(val)}' in a guard", ln.span(col, end + 1),
                     hint=(f"did you mean `{close}`? " if close else "") + "guards compare the thread axes "
                          + ", ".join(A.THREAD_AXIS_NAMES))
        axis, axis_col = val, col
        kind, val, col, end = next_tok(end)
        if kind != "op" or val == "=":
            what = "end of line" if kind is None else f"'{_show(val or '')}'"
            ln.error(f"unexpected {what}; expected a comparison ({' '.join(A.GUARD_OPS)})",
                     ln.span(col, col + len(val or " ")),
                     hint="compare with '==': `if tx == 0: ...`" if val == "=" else _GUARD_HINT)
        assert val is not None
        op = val
        kind, val, col, end = next_tok(end)
        if kind != "int":
            what = "end of line" if kind is None else f"'{_show(val or '')}'"
            ln.error(f"unexpected {what}; expected an integer after `{axis} {op}`",
                     ln.span(col, col + len(val or " ")), hint=_GUARD_HINT)
        assert val is not None
        if val.startswith("-"):
            ln.error(f"a guard compares with a non-negative integer, got {val}", ln.span(col, end + 1),
                     hint="thread axes count from 0")
        if len(val) > 12:
            ln.error(f"the guard's integer has too many digits ({len(val)})", ln.span(col, end + 1))
        terms.append(A.GuardTerm(axis, op, int(val), ln.span(axis_col, end + 1)))
        kind, val, col, end = next_tok(end)
        if kind == "colon":
            return A.Guard(tuple(terms), ln.span(start_col, end + 1)), end
        if kind == "name" and val == "and":
            pos = end
            continue
        if kind == "name" and val in ("or", "&&", "||"):
            ln.error(f"guards join conditions with `and` only, not `{val}`", ln.span(col, end + 1),
                     hint="a statement under `or` would need two guards: write the statement twice")
        what = "end of line" if kind is None else f"'{_show(val or '')}'"
        ln.error(f"unexpected {what}; expected `and` or ':' after the guard condition",
                 ln.span(col, col + len(val or " ")), hint=_GUARD_HINT)


def _parse_guarded(ln: _Line):
    guard, end = _guard(ln)
    inner = _Line(" " * end + ln.text[end:], ln.lineno, ln.err_source, "")
    if not inner.text.split("#", 1)[0].strip():
        ln.error("expected a statement after the guard", ln.span(end + 1), hint=_GUARD_HINT)
    m = _IDENT.match(inner.text, len(inner.text) - len(inner.text.lstrip()))
    if m is not None and m.group() == "if":
        inner.error("guards do not nest", inner.span(m.start() + 1, m.end() + 1),
                    hint="join the conditions with `and`: `if warpid == 0 and laneid == 0: ...`")
    node = _parse_line(inner)
    if isinstance(node, A.ClusterSyncStmt):
        ln.error("a guarded `cluster_sync` deadlocks: barrier.cluster waits for every thread of every CTA of the "
                 "cluster, and the threads the guard excludes never reach it", guard.span,
                 hint="write `cluster_sync` without a guard")
    if isinstance(node, A.SyncStmt):
        ln.error("a guarded `cta_sync` deadlocks: `__syncthreads()` waits for every thread of the CTA, and the "
                 "threads the guard excludes never reach it", guard.span,
                 hint="write `cta_sync` without a guard")
    if isinstance(node, (A.KernelDecl, A.BufferDecl, A.MbarrierDecl)):
        ln.error("a declaration cannot be guarded: it holds for the whole CTA", guard.span,
                 hint="drop the `if ...:`; an mbarrier is initialised by thread 0 in the prologue without one")
    if isinstance(node, A.CheckStmt):
        ln.error("`check` cannot be guarded: it compares global buffers on the host after the launch",
                 guard.span, hint="drop the `if ...:`")
    assert isinstance(node, A.GUARDABLE)
    return dataclasses.replace(node, guard=guard)


def _parse_line(ln: _Line):
    _precheck(ln)
    if ln.word == "if":
        return _parse_guarded(ln)
    try:
        tree = _lark().parse(_blank_expr_options(ln), start="start")
    except UnexpectedInput as exc:
        _convert_lark_error(ln, exc)
    return _statement(ln, tree)


# ----------------------------------------------------------------------------- entry point
def parse(source: str, *, line_offset: int = 0) -> A.Program:
    """Parse a ``%%tilecopy`` description into a :class:`~tilemagic.lang.ast.Program`.

    Parameters
    ----------
    source : str
        The description, one statement per line.  If its first non-blank line
        is the ``%%tilecopy ...`` header it is skipped (its options are parsed
        by the caller); line numbers still count it.
    line_offset : int
        Added to every line number (the magic passes the cell body with
        ``line_offset=1`` so lines match the cell the user sees).

    Raises
    ------
    TileSyntaxError
        At the first malformed line, located at the offending token.  Its
        ``source`` is ``source`` preceded by ``line_offset`` empty lines so that
        ``render()`` shows the right line.
    """
    if not isinstance(source, str):
        raise TypeError(f"parse() expects the cell text as str, got {type(source).__name__}")
    line_offset = int(line_offset)
    err_source = "\n" * line_offset + source if line_offset > 0 else source
    kernel: A.KernelDecl | None = None
    buffers: list[A.BufferDecl] = []
    stmts: list[A.Stmt] = []
    mbarriers: list[A.MbarrierDecl] = []
    items: list = []
    seen_nonblank = False
    for idx, text in enumerate(split_lines(source)):
        bad = odd_break(text.split("#", 1)[0])
        if bad is not None:
            _Line(text, idx + 1 + line_offset, err_source, "").error(
                f"character {char_name(text[bad])} outside a comment: lines end only at \\n, \\r\\n or \\r, "
                "and this character is no separator in a statement", Span.point(idx + 1 + line_offset, bad + 1),
                hint="delete it (an editor may show it as a line break or not at all)")
        stripped = text.strip()
        if not stripped:
            continue
        first = not seen_nonblank
        seen_nonblank = True
        if first and _HEADER.match(text):
            continue
        if stripped.startswith("#"):
            continue
        ln = _Line(text, idx + 1 + line_offset, err_source, "")
        try:
            node = _parse_line(ln)
        except TileSyntaxError:
            raise
        except (LarkError, RecursionError, ValueError, IndexError, AttributeError, TypeError) as exc:
            # Safety net: the grammar and the checks above should make this unreachable.
            ln.error(f"internal parser error ({type(exc).__name__}): could not parse this line",
                     ln.span(len(text) - len(text.lstrip()) + 1), hint=_USAGE.get(ln.word))
        if isinstance(node, A.KernelDecl):
            if kernel is not None:
                ln.error(f"duplicate `kernel` line (the kernel was declared at line {kernel.span.line})",
                         node.span, hint="a cell describes one kernel: keep one `kernel` line, first")
            if items:
                ln.error("`kernel` must be the first statement", node.span,
                         hint="move the `kernel NAME [threads=N]` line above the declarations")
            kernel = node
        elif isinstance(node, A.BufferDecl):
            buffers.append(node)
        elif isinstance(node, A.MbarrierDecl):
            mbarriers.append(node)
        else:
            stmts.append(node)
        items.append(node)
    return A.Program(source=source, kernel=kernel, buffers=tuple(buffers), stmts=tuple(stmts),
                     items=tuple(items), mbarriers=tuple(mbarriers))
