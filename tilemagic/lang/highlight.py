"""A Pygments lexer for the ``%%tilecopy`` cell language (docs/language.md).

``TileCopyLexer`` colours what the grammar (``grammar.lark``) knows: the ``%%tilecopy`` line and its
``--flags``, statement keywords (``kernel``, ``global``/``shared``/``local``/``tmem``, ``SCOPE.copy``,
``SCOPE.copy_async``, ``wait ld|st``, ``cta_sync``, ``check``, ``mbarrier``, ``arrive``, ``wait BAR phase P``,
``commit_group``, ``wait_group``, ``bulk_commit_group``, ``bulk_wait_group``, ``fence.proxy.async``,
``cluster_sync``, ``tcgen05.commit BAR [cta_mask=M]``, ``tcgen05.fence::after_thread_sync|before_thread_sync``,
the guard ``if COND:``), the keywords inside a statement (``threads``, ``cluster``, ``at``,
``dispatch``, ``sub_slab``, ``count``, ``expect_tx``, ``auto``, ``phase``, ``read``, the copy options
``mbar``/``oob``/``cache_hint``/``cta_mask``/``remote_cta_id``/``use_tma_reduce`` and tcgen05.cp's
``shape``/``multicast``/``cta_group``/``decompress``), execution
scopes, thread axes and ``cta_rank``, dtypes, layouts (``S[...]`` with replicas ``+ R[...]``,
``datapath(D|F|B)``, ``frag(SHAPE)``, ``swizzle(...)``), tcgen05 shapes, numbers, arrows and comments.  The
static report's description pane uses it; the package registers it with Pygments (entry point
``pygments.lexers``: ``tilecopy``, files ``*.tile``), so nbconvert, Sphinx and ``pygmentize`` colour
```` ```tilecopy ```` blocks too.

The word lists come from where the language defines them (``lang.ast.DTYPES``, ``arch.threads``,
``arch.tcgen05.SHAPES``), so a new dtype or axis is coloured without touching this file.  The lexer is a
highlighter, not a parser: a line the parser rejects is still coloured as far as its words allow, never an
error token (the located error comes from :func:`tilemagic.lang.parser.parse`).
"""

from __future__ import annotations

import re

from pygments.lexer import RegexLexer, bygroups, words
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Text,
    Whitespace,
)

from ..arch.cluster import CTA_RANK
from ..arch.tcgen05 import SHAPES
from ..arch.threads import AXIS_SCOPES, MEMORY_AXES, SCOPES
from .ast import COPY_OPTIONS, DTYPES, EXPR_OPTIONS, FREE_OPTIONS, INT_OPTIONS

__all__ = ["TileCopyLexer"]

#: The exec scopes a copy is written with (``wg`` is the language's alias of ``warpgroup``).
_SCOPE_WORDS = (*SCOPES, "wg")
_END = r"(?![A-Za-z0-9_])"


class TileCopyLexer(RegexLexer):
    """Pygments lexer of ``%%tilecopy`` cells and ``.tile`` files.

    Token types: ``Comment.Preproc`` the ``%%tilecopy`` line (its flags ``Name.Attribute``, its values
    ``String``), ``Comment.Single`` comments, ``Keyword`` statement keywords (buffer kinds
    ``Keyword.Declaration``), ``Name.Builtin`` exec scopes and thread/memory axes, ``Keyword.Type`` dtypes,
    ``Name.Function`` layout constructors, ``Name.Constant`` data-path letters and tcgen05 shapes,
    ``Number.Integer``, ``Operator`` (``<-``, ``->``, ``==``, ``=``, ``+``, ``@``, ``:``), ``Punctuation``,
    ``Name.Variable`` kernel and buffer names.
    """

    name = "tilecopy"
    aliases = ["tilecopy", "tile"]
    filenames = ["*.tile"]
    mimetypes = ["text/x-tilecopy"]
    flags = re.MULTILINE

    tokens = {
        "root": [
            (r"\n", Whitespace),
            (r"[ \t\f\r]+", Whitespace),
            (r"#[^\n]*", Comment.Single),
            (r"(%%tilecopy)" + _END, Comment.Preproc, "header"),
            (r"(kernel)" + _END, Keyword, "kernel"),
            (words(("global", "shared", "local", "tmem"), suffix=_END), Keyword.Declaration, "decl"),
            (r"(" + "|".join(_SCOPE_WORDS) + r")([ \t]*)(\.)([ \t]*)(copy_async|copy)" + _END,
             bygroups(Name.Builtin, Whitespace, Punctuation, Whitespace, Keyword), "statement"),
            (r"(wait)([ \t]+)(ld|st)" + _END, bygroups(Keyword, Whitespace, Keyword)),
            (r"(if)" + _END, Keyword, "guard"),
            (r"(mbarrier)" + _END, Keyword.Declaration, "sync"),
            (r"(fence)([ \t]*\.[ \t]*)(proxy)([ \t]*\.[ \t]*)(async)" + _END,
             bygroups(Keyword, Punctuation, Keyword, Punctuation, Keyword)),
            (r"(tcgen05)([ \t]*\.[ \t]*)(fence)([ \t]*::[ \t]*)(after_thread_sync|before_thread_sync)" + _END,
             bygroups(Name.Builtin, Punctuation, Keyword, Punctuation, Keyword)),
            (r"(tcgen05)([ \t]*\.[ \t]*)(commit)" + _END, bygroups(Name.Builtin, Punctuation, Keyword), "statement"),
            (words(("arrive", "wait", "wait_group", "bulk_wait_group"), suffix=_END), Keyword, "sync"),
            (words(("cta_sync", "cluster_sync", "commit_group", "bulk_commit_group"), suffix=_END), Keyword),
            (r"(check)" + _END, Keyword, "statement"),
            (r"[^\n]+", Text),  # an unknown statement: plain text (the parser locates the error)
        ],
        "header": [
            (r"(?=\n)", Text, "#pop"),
            (r"[ \t]+", Whitespace),
            (r"#[^\n]*", Comment.Single),
            (r"--[A-Za-z0-9-]+", Name.Attribute),
            (r"\"[^\"\n]*\"|'[^'\n]*'", String),
            (r"[^\s#]+", String),
            (r"[^\S\n]+", Text),  # (other blanks — \x0b, \xa0, … — as text: the option parser says what they are)
        ],
        "kernel": [
            (r"(?=\n)", Text, "#pop"),
            (words(("threads", "cluster"), suffix=_END), Keyword),
            (r"[A-Za-z_][A-Za-z0-9_]*", Name.Variable),
            (r"=", Operator),
            (r"-?[0-9]+", Number.Integer),
            (r"[ \t\f\r]+", Whitespace),
            (r"#[^\n]*", Comment.Single),
            (r"[^\n]", Text),
        ],
        "decl": [
            (r"(?=\n)", Text, "#pop"),
            (r"[ \t\f\r]+", Whitespace),
            (r"#[^\n]*", Comment.Single),
            (r"([A-Za-z_][A-Za-z0-9_]*)([ \t]*)(:)", bygroups(Name.Variable, Whitespace, Operator)),
            (words(DTYPES, suffix=_END), Keyword.Type),
            (r"(at)" + _END, Keyword),
            (r"(=)([ \t]*)([A-Za-z_][A-Za-z0-9_]*)", bygroups(Operator, Whitespace, Name.Variable)),
            (r"(@)([ \t]*)(?=[A-Za-z])", bygroups(Operator, Whitespace), "layout"),
            (r"-?[0-9]+", Number.Integer),
            (r"[\[\](),]", Punctuation),
            (r"\+", Operator),
            (r"[A-Za-z_][A-Za-z0-9_]*", Name.Variable),  # an `at X` target, or a dtype the parser rejects
            (r"[^\n]", Text),
        ],
        "layout": [
            (r"(?=\n)", Text, "#pop"),
            (r"(sub_slab)([ \t]*)(=)", bygroups(Keyword, Whitespace, Operator)),
            (r"(?=at" + _END + r"|=)", Text, "#pop"),  # `at X + N`, `= NAME` after the layout
            (r"[ \t\f\r]+", Whitespace),
            (r"#[^\n]*", Comment.Single),
            (words(("S", "R", "datapath", "frag", "swizzle"), suffix=_END), Name.Function),
            (words(SHAPES, suffix=_END), Name.Constant),
            (r"(?<=\()[DFB](?=[ \t]*[,)])", Name.Constant),  # datapath(D|F|B)
            (r"(@)([ \t]*)([A-Za-z_][A-Za-z0-9_]*)", bygroups(Operator, Whitespace, Name.Builtin)),
            (words((*AXIS_SCOPES, *MEMORY_AXES), suffix=_END), Name.Builtin),
            (r"-?[0-9]+", Number.Integer),
            (r"[\[\](),]", Punctuation),
            (r"[:+=]", Operator),
            (r"[A-Za-z_][A-Za-z0-9_]*", Name),
            (r"[^\n]", Text),
        ],
        "guard": [  # `if AXIS OP INT [and ...]:` -- the statement after the colon is lexed from the root
            (r"(?=\n)", Text, "#pop"),
            (r"[ \t\f\r]+", Whitespace),
            (r"#[^\n]*", Comment.Single),
            (words((*AXIS_SCOPES, CTA_RANK), suffix=_END), Name.Builtin),
            (r"(and)" + _END, Keyword),
            (r"==|!=|<=|>=|<|>", Operator),
            (r"-?[0-9]+", Number.Integer),
            (r":", Punctuation, "#pop"),
            (r"[A-Za-z_][A-Za-z0-9_]*", Name),
            (r"[^\n]", Text),
        ],
        "sync": [  # the rest of `mbarrier NAME count=N`, `arrive BAR expect_tx=N|auto`, `wait BAR phase P`, ...:
            (r"(?=\n)", Text, "#pop"),
            (r"[ \t\f\r]+", Whitespace),
            (r"#[^\n]*", Comment.Single),
            (words(("count", "expect_tx", "auto", "phase", "read"), suffix=_END), Keyword),
            (r"=", Operator),
            (r"-?[0-9]+", Number.Integer),
            (r"[A-Za-z_][A-Za-z0-9_]*", Name.Variable),
            (r"[^\n]", Text),
        ],
        "statement": [  # a copy or a check: regions, an arrow, `dispatch=VARIANT`, the copy_async options
            (r"(?=\n)", Text, "#pop"),
            (r"[ \t\f\r]+", Whitespace),
            (r"#[^\n]*", Comment.Single),
            (r"<-|->|==", Operator),
            (r"(dispatch)([ \t]*)(=)([ \t]*)([A-Za-z_][A-Za-z0-9_]*(?:(?:<->|->|-)[A-Za-z0-9_]+)*)",
             bygroups(Keyword, Whitespace, Operator, Whitespace, Name.Constant)),
            (r"(dispatch)([ \t]*)(=)([ \t]*)(\"[^\"\n]*\"|'[^'\n]*')",
             bygroups(Keyword, Whitespace, Operator, Whitespace, String)),
            (r"(mbar)([ \t]*)(=)([ \t]*)([A-Za-z_][A-Za-z0-9_]*)",
             bygroups(Keyword, Whitespace, Operator, Whitespace, Name.Variable)),
            (r"(" + "|".join(k for k, v in COPY_OPTIONS.items() if v or k in (*INT_OPTIONS, *FREE_OPTIONS))
             + r")([ \t]*)(=)([ \t]*)([A-Za-z0-9_]+(?:(?:::|\.)[A-Za-z0-9_]+)*)",
             bygroups(Keyword, Whitespace, Operator, Whitespace, Name.Constant)),
            (r"(" + "|".join(EXPR_OPTIONS) + r")([ \t]*)(=)", bygroups(Keyword, Whitespace, Operator)),
            (r"(" + CTA_RANK + r")" + _END, Name.Builtin),
            (r"0[xX][0-9A-Fa-f_]+|0[bB][01_]+", Number.Integer),
            (r"-?[0-9]+", Number.Integer),
            (r"[\[\](),]", Punctuation),
            (r":|//|[-+*%^]", Operator),
            (r"[A-Za-z_][A-Za-z0-9_]*", Name.Variable),
            (r"[^\n]", Text),
        ],
    }
