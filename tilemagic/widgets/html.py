"""Static ``text/html`` report of a :class:`~tilemagic.result.TileCopyResult`.

One self-contained fragment that renders the same in JupyterLab, VS Code, nbviewer,
nbconvert and GitHub: inline styles for everything visible (Pygments tokens as inline
colours), the heatmaps as ``data:image/png;base64`` images, no external resources and no
random ids, so the HTML is deterministic (nbval compares ``text/html``).  Class names all
start with ``tm-``.

Themes.  Every text colour, background and border of the report is a JupyterLab CSS variable
with the light value as fallback (``color:var(--jp-content-font-color1,#1f2328)``; code tokens
``var(--jp-mirror-editor-keyword-color,#008000)``, the editor's own colours in both themes), so
JupyterLab Dark shows light text on its own background and nbconvert, VS Code or a saved file
look as before; banners, warnings and line highlights are translucent tints, the verdict badges
carry their own background and text; the pictures have a transparent background and mid-grey
ink (:data:`~tilemagic.widgets.figures.NEUTRAL`).

Line mapping.  Every line of the description, IR, CUDA (native and emulated) panes is
``<span class="tm-line tm-L{N}" data-src-line="N">`` with ``N`` the description line
that produced it (``result.ir_lines`` / ``result.cuda_lines``; scaffolding lines whose
entry is None get neither), and each why-table heading carries its op's line the same
way.  A small ``<style>`` block (:func:`line_map_style`) adds, per description line
``N``, ``.tm-report:has(.tm-LN:hover) .tm-LN {background: ...}``: hovering a line
of any pane highlights every line with the same source line in the same report (the
description line and its IR and CUDA lines, in both directions) with CSS alone.  A
``<script>`` (:data:`PIN_SCRIPT`, installed once per page) adds click-to-pin: a click
on a mapped line sets ``data-tm-pin="N"`` on the report, which the same style block
highlights until the next click.

Where it works.  JupyterLab / Notebook 7 and VS Code render trusted outputs (the ones a
cell produced in this session) unsanitised: hover and pin work.  JupyterLab's sanitizer
removes ``<style>`` and ``<script>`` from untrusted outputs (a notebook opened from disk
and not re-run or trusted): the report still renders, without highlighting.  nbconvert's
HTML export keeps both; GitHub strips both.  ``:has()`` needs Chromium 105, Safari 15.4,
Firefox 121 or later.

The section builders (:func:`banner_html`, :func:`dispatch_html`, ...) are shared with
the ipywidgets view (:mod:`tilemagic.widgets.view`), which bakes the highlight of a
selected line into the pane instead (``highlight=N``): ipywidgets ``HTML`` values run no
scripts.  Such a pane says ``data-tm-highlight="N"``, its highlighted lines carry
:data:`HL_ATTR` (``data-tm-hl``) and its header names them (``L14: lines 31-32 of 38``);
tilemagic's JupyterLab extension (``labextension/src/panes.ts``) scrolls the pane to the first
of them.  Elsewhere nothing scrolls it, so a pane whose first highlighted line is below the
fold (:data:`FOLD_LINES`) also lists them above its code (``tm-hl-excerpt``, which the
extension hides).
"""

from __future__ import annotations

import base64
import functools
import re
import threading
from collections.abc import Sequence
from html import escape

from ..caches import register_cache
from .format import (
    MAX_LISTED,
    NOT_LAUNCHED,
    array_summary,
    budgeted,
    capped_list,
    check_overflow,
    clip_line,
    cp_descriptor_rows,
    cp_heading,
    cp_listing,
    dispatch_overflow,
    elided_text,
    elision_note,
    mismatch_lines,
    range_text,
    shown_lines,
    split_lines, split_sections)
from .placement import async_pictures, cp_declines, cp_ops
from .png import picture_png
from .text import (
    cp_decline_line,
    cp_simulated_line,
    timeline_line,
    cuda_title,
    execution_note,
    is_native_blackwell,
    launch_headline,
    tmem_summary_rows,
    uses_tmem,
)

__all__ = [
    "DeclineView",
    "EXCERPT_LINES",
    "FOLD_LINES",
    "FONT",
    "HIGHLIGHT",
    "HL_ATTR",
    "MAX_PANE_HTML",
    "MAX_SECTION_HTML",
    "PANE_MAX_HEIGHT_PX",
    "PIN_SCRIPT",
    "banner_html",
    "code_grid_html",
    "code_pane_html",
    "cp_descriptors_html",
    "decline_view",
    "cuda_pane_html",
    "data_html",
    "dispatch_html",
    "emulated_html",
    "emulated_pane_html",
    "extra_sections",
    "fallback_html",
    "stripped_note_html",
    "heatmap_html",
    "heatmap_kinds",
    "highlight_lines",
    "ir_pane_html",
    "launch_html",
    "line_map_style",
    "linked_lines",
    "mapped_lines",
    "render_html",
    "shown_src_lines",
    "source_html",
    "tmem_html",
    "warnings_html",
]

#: Theme colours: JupyterLab's CSS variables (the light and the dark theme define them) with the light value
#: as fallback for pages without them (nbconvert's classic page, VS Code, GitHub, a saved HTML file).
FG = "var(--jp-content-font-color1,#1f2328)"
MUTED = "var(--jp-content-font-color2,#57606a)"
FAINT = "var(--jp-content-font-color3,#8c959f)"
CODE_BG = "var(--jp-cell-editor-background,#f8f8f8)"
HEAD_BG = "var(--jp-layout-color2,#eef1f4)"
TH_BG = "var(--jp-layout-color2,#f6f8fa)"
BORDER = "var(--jp-border-color1,#d0d7de)"
BORDER2 = "var(--jp-border-color2,#eaeef2)"
ERROR_FG = "var(--jp-error-color1,#a40e26)"
#: The sans-serif font stack of every heading, table and note.
FONT = "font-family:-apple-system,BlinkMacSystemFont,'Segoe UI',Helvetica,Arial,sans-serif"
_MONO = "font-family:SFMono-Regular,Menlo,Consolas,'Liberation Mono',monospace"
#: A code pane's geometry: a scroll box at most ``PANE_MAX_HEIGHT_PX`` high (its header sticks to the top), its code
#: ``_CODE_PX`` px at line height ``_LINE_HEIGHT``, one line per text line (``white-space:pre``).
PANE_MAX_HEIGHT_PX: int = 480
_CODE_PX, _LINE_HEIGHT = 12, 1.4
#: Lines of a code pane in view before it is scrolled: its height less the sticky header, the code's padding and a
#: horizontal scroll bar (44 px together), in code lines (25).  A highlighted line further down is "below the fold".
FOLD_LINES: int = int((PANE_MAX_HEIGHT_PX - 44) / (_CODE_PX * _LINE_HEIGHT))
_PRE = (f"margin:0;padding:6px 8px;{_MONO};font-size:{_CODE_PX}px;line-height:{_LINE_HEIGHT};white-space:pre;"
        f"background:{CODE_BG};color:{FG};text-align:left")
_PANE = (f"border:1px solid {BORDER};border-radius:6px;overflow:auto;max-height:{PANE_MAX_HEIGHT_PX}px;min-width:0;"
         f"background:{CODE_BG}")
_PANE_HEAD = (f"{FONT};font-size:12px;font-weight:600;padding:4px 8px;background:{HEAD_BG};"
              f"border-bottom:1px solid {BORDER};position:sticky;top:0")
_H = f"{FONT};font-size:14px;font-weight:600;margin:14px 0 6px 0;color:{FG}"
_TABLE = f"border-collapse:collapse;{FONT};font-size:12px;margin:4px 0 10px 0"
_TH = f"text-align:left;padding:3px 8px;border-bottom:2px solid {BORDER};background:{TH_BG}"
_TD = f"text-align:left;vertical-align:top;padding:3px 8px;border-bottom:1px solid {BORDER2}"
_TD_R = _TD.replace("text-align:left", "text-align:right")
_VERDICT = {
    "chosen": "background:#dafbe1;color:#116329;border:1px solid #4ac26b",
    "rejected": "background:#ffebe9;color:#a40e26;border:1px solid #ff8182",
    "declined": "background:#fff8c5;color:#7d4e00;border:1px solid #d4a72c",
    "not tried": "background:#f6f8fa;color:#57606a;border:1px solid #d0d7de",
}
_BADGE = "display:inline-block;padding:0 6px;border-radius:10px;font-size:11px;font-weight:600"
#: Most characters of HTML one code pane holds (its first lines get 4/5 of it, its last lines 1/5): a collapsed
#: pane of long highlighted lines shows fewer lines rather than more bytes.
MAX_PANE_HTML: int = 256 * 1024
#: Largest ready-made HTML of an extra section (``--compare tvm``) shown as is; a larger one is shown as its text.
MAX_SECTION_HTML: int = 256 * 1024


# ----------------------------------------------------------------------------- highlighting
_CACHE: dict = {}
# Pygments loads its lexers, formatters and styles lazily on first attribute access, which is not thread-safe
# (a first render in several threads at once saw half-loaded modules): the first ones are made under a lock.
_PYGMENTS_LOCK = threading.Lock()


def _formatter():
    f = _CACHE.get("fmt")
    if f is None:
        with _PYGMENTS_LOCK:
            from pygments.formatters import HtmlFormatter

            f = _CACHE.get("fmt") or HtmlFormatter(nowrap=True, style="default")  # class names, replaced below
            _CACHE["fmt"] = f
    return f


#: JupyterLab's editor colour of each token family (the ``--jp-mirror-editor-*-color`` variables, defined by the
#: light and the dark theme), most specific first; the fallback is Pygments' ``default`` style colour, so outside
#: JupyterLab (nbconvert's light page, VS Code, a saved HTML file) the report reads as before.
_TOKEN_VARS = (
    ("Keyword.Type", "variable-3"), ("Keyword", "keyword"), ("Operator.Word", "keyword"),
    ("Name.Function", "def"), ("Name.Class", "def"), ("Name.Builtin", "builtin"), ("Name.Decorator", "meta"),
    ("Name.Attribute", "property"), ("Name.Property", "property"), ("Name.Variable", "variable-2"),
    ("Name.Tag", "tag"), ("Name.Label", "meta"), ("Comment.Preproc", "meta"), ("Comment", "comment"),
    ("String", "string"), ("Number", "number"), ("Operator", "operator"), ("Punctuation", "punctuation"),
    ("Generic.Error", "error"), ("Error", "error"),
)


def _token_styles() -> dict[str, str]:
    """Pygments short class (``k``, ``nf``, ...) -> inline style with a theme variable and a light fallback."""
    styles = _CACHE.get("styles")
    if styles is None:
        from pygments.token import STANDARD_TYPES, Whitespace

        style = _formatter().style
        styles = {}
        for tt, cls in STANDARD_TYPES.items():
            if not cls or tt in Whitespace:  # (a blank's colour shows nothing)
                continue
            name = str(tt).removeprefix("Token.").removeprefix("Literal.")
            var = next((v for fam, v in _TOKEN_VARS if name == fam or name.startswith(fam + ".")), None)
            info = style.style_for_token(tt)
            css = []
            if info["color"]:  # (a token of no family: the editor's plain variable colour, which every theme sets)
                css.append(f"color:var(--jp-mirror-editor-{var or 'variable'}-color,#{info['color']})")
            if info["bold"]:
                css.append("font-weight:bold")
            if info["italic"]:
                css.append("font-style:italic")
            if css:
                styles[cls] = ";".join(css)
        _CACHE["styles"] = styles
    return styles


_CLASS_SPAN = re.compile(r'<span class="([\w-]+)">([^<]*)</span>')  # one token (Pygments never nests them)


def _inline_token_styles(html: str) -> str:
    """Pygments' ``<span class="k">for</span>`` as ``<span style="color:var(--jp-mirror-editor-keyword-color,
    #008000);...">for</span>``; a token without a colour is its bare text."""
    styles = _token_styles()
    return _CLASS_SPAN.sub(lambda m: f'<span style="{styles[m.group(1)]}">{m.group(2)}</span>'
                           if m.group(1) in styles else m.group(2), html)


def _lexer(language: str):
    lx = _CACHE.get(language)
    if lx is None:
        with _PYGMENTS_LOCK:
            from pygments.lexers import CudaLexer, PtxLexer, PythonLexer, TextLexer

            from ..lang.highlight import TileCopyLexer

            cls = {"python": PythonLexer, "cuda": CudaLexer, "ptx": PtxLexer,
                   "tilecopy": TileCopyLexer}.get(language, TextLexer)
            # stripnl=False: keep leading/trailing blank lines so line i stays line i
            lx = _CACHE.get(language) or cls(stripnl=False, ensurenl=True)
            _CACHE[language] = lx
    return lx


def highlight_lines(text: str, language: str) -> list[str]:
    """Pygments-highlighted HTML, one string per source line (inline styles, no wrapper).

    Parameters
    ----------
    text : str
        Source text; line ``i`` of the result is line ``i`` of ``text``.
    language : {"python", "cuda", "ptx", "tilecopy", "text"}
        ``PythonLexer`` for the TIR-like IR (as TVM's ``cprint`` does), ``CudaLexer``
        for CUDA C++, ``PtxLexer`` for PTX, :class:`~tilemagic.lang.highlight.TileCopyLexer` for the description.

    Returns
    -------
    list of str
        Escaped HTML fragments whose spans never cross a line (Pygments closes every
        span at a newline); falls back to plain ``html.escape`` if the line count of
        the highlighted text ever differed.  Memoised on ``(text, language)``.
    """
    return list(_highlight_cached(text, language))


@functools.lru_cache(maxsize=64)
def _highlight_cached(text: str, language: str) -> tuple:
    lines = split_lines(text)
    if not lines:
        return ()
    from pygments import highlight

    src = "\n".join(lines) + "\n"
    out = _inline_token_styles(highlight(src, _lexer(language), _formatter())).split("\n")
    if out and out[-1] == "":
        out.pop()
    if len(out) != len(lines):  # pragma: no cover - defensive
        return tuple(escape(line) for line in lines)
    return tuple(out)


register_cache("widgets.html.highlight", _highlight_cached.cache_clear, "Pygments-highlighted lines (last 64 texts)")
register_cache("widgets.html.pygments", _CACHE.clear, "the Pygments HTML formatter and lexers")


def _line_attr(src_line: int | None) -> str:
    """`` data-src-line="N"`` (leading space), or '' for None."""
    return f' data-src-line="{int(src_line)}"' if src_line is not None else ""


#: Background of a highlighted (hovered, pinned or selected) line, and its left marker.
HIGHLIGHT = "background:rgba(255,213,0,0.33);box-shadow:inset 3px 0 0 #d4a72c"
_PINNED = "background:rgba(255,170,0,0.5);box-shadow:inset 3px 0 0 #9a6700"
_BLOCK_LINE = "display:inline-block;min-width:100%;box-sizing:border-box"


#: The attribute of a line highlighted for the widget view's *source line* selector (``highlight=N``); the pane
#: that holds it says ``data-tm-highlight="N"``.  tilemagic's JupyterLab extension (``labextension/src/panes.ts``)
#: scrolls each such pane to its first ``.tm-line[data-tm-hl]``.
HL_ATTR = "data-tm-hl"


def _line_span(html_line: str, src_line: int | None, highlight: int | None = None) -> str:
    """One pane line: ``<span class="tm-line tm-LN" data-src-line="N">`` (plain ``tm-line`` if unmapped).

    With ``highlight == src_line`` the highlight is baked in as an inline style and the line carries
    :data:`HL_ATTR` (widget view).
    """
    if src_line is None:
        return f'<span class="tm-line">{html_line}</span>'
    n = int(src_line)
    mark = (f' style="{HIGHLIGHT};{_BLOCK_LINE}" {HL_ATTR}' if highlight is not None and int(highlight) == n
            else "")
    return f'<span class="tm-line tm-L{n}" data-src-line="{n}"{mark}>{html_line}</span>'


def _pane_open(highlight: int | None) -> str:
    """A pane's opening ``<div class="tm-pane" ...>``, with ``data-tm-highlight="N"`` when it follows line N."""
    mark = f' data-tm-highlight="{int(highlight)}"' if highlight is not None else ""
    return f'<div class="tm-pane"{mark} style="{_PANE}">'


def _pane_head(title: str, note: str = "") -> str:
    """A pane's sticky header: ``title`` and, after a dot, ``note`` (``tm-hl-note``: which lines are highlighted)."""
    extra = (f'<span class="tm-hl-note" style="font-weight:400;color:{MUTED}"> · {escape(note)}</span>'
             if note else "")
    return f'<div style="{_PANE_HEAD}">{escape(title)}{extra}</div>'


def mapped_lines(result) -> list[int]:
    """Description lines (1-based, sorted) that produced at least one IR or CUDA line."""
    seen: set[int] = set()
    for lines in (result.ir_lines, result.cuda_lines, getattr(result, "cuda_emulated_lines", None)):
        seen.update(int(n) for n in (lines or ()) if n is not None)
    return sorted(seen)


def linked_lines(result) -> list[int]:
    """Description lines that something in the report points back to: code, why-tables, checks."""
    out = set(mapped_lines(result)) | {int(rec.line) for rec in result.dispatch or ()}
    if result.launch is not None:
        out |= {int(c.line) for c in result.launch.checks if c.line is not None}
    return sorted(out)


def line_map_style(lines: Sequence[int]) -> str:
    """The ``<style>`` block of the hover/pin line mapping for description lines ``lines``.

    Parameters
    ----------
    lines : sequence of int
        Description lines that carry a ``tm-L{N}`` class somewhere in the report.

    Returns
    -------
    str
        ``<style>``: mapped lines become full-width blocks with a pointer cursor; for each
        ``N``, ``.tm-report:has(.tm-LN:hover) .tm-LN`` (hover, CSS only) and
        ``.tm-report[data-tm-pin="N"] .tm-LN`` (pinned by :data:`PIN_SCRIPT`) get the
        highlight.  Rules are scoped to the enclosing report, so several reports on one
        page do not interfere; '' when ``lines`` is empty.  Deterministic (sorted).
    """
    ns = sorted({int(n) for n in lines})
    if not ns:
        return ""
    rules = [f".tm-report .tm-code .tm-line{{{_BLOCK_LINE}}}",
             ".tm-report .tm-line[data-src-line]{cursor:pointer}",
             ".tm-report .tm-stripped{display:none}",  # the note that says this style is gone hides itself
             *_PANE_RULES]
    for n in ns:
        rules.append(f".tm-report:has(.tm-L{n}:hover) .tm-L{n}{{{HIGHLIGHT} !important}}")
    for n in ns:
        rules.append(f'.tm-report[data-tm-pin="{n}"] .tm-L{n}{{{_PINNED} !important}}')
    return "<style>" + "\n".join(rules) + "</style>"


#: The code panes' options, switched by the toolbar's buttons (:data:`PIN_SCRIPT` sets ``data-tm-wrap``,
#: ``data-tm-numbers``, ``data-tm-stack`` on the report): long lines wrapped, line numbers (a CSS counter per pane;
#: a collapsed pane's elision line sets it to the first tail line's number), IR and CUDA stacked.  The toolbar is
#: shown by this style only (it needs the script too, and both are stripped together).
_PANE_RULES = (
    ".tm-report .tm-tools{display:flex !important}",
    ".tm-report[data-tm-wrap] .tm-code{white-space:pre-wrap !important;overflow-wrap:anywhere}",
    ".tm-report[data-tm-numbers] .tm-code:not(.tm-src){counter-reset:tm-ln}",
    ".tm-report[data-tm-numbers] .tm-code:not(.tm-src)>.tm-line:not(.tm-elided)::before{counter-increment:tm-ln;"
    f"content:counter(tm-ln);display:inline-block;min-width:2.6em;padding-right:0.8em;text-align:right;"
    f"color:{FAINT};user-select:none}}",
    ".tm-report[data-tm-stack] .tm-grid{grid-template-columns:minmax(0,1fr) !important}",
    ".tm-report .tm-tools button[aria-pressed=true]{background:rgba(84,174,255,0.25)}",
)
#: The toolbar's buttons: (option, label).
PANE_OPTIONS = (("wrap", "wrap long lines"), ("numbers", "line numbers"), ("stack", "stack IR and CUDA"))


def tools_html() -> str:
    """The code panes' toolbar (hidden unless the report's style survived; :data:`_PANE_RULES`)."""
    btn = (f"{FONT};font-size:11px;padding:1px 8px;border:1px solid {BORDER};border-radius:4px;"
           f"background:transparent;color:{FG};cursor:pointer")
    buttons = "".join(f'<button type="button" data-tm-toggle="{k}" aria-pressed="false" style="{btn}">'
                      f"{escape(label)}</button>" for k, label in PANE_OPTIONS)
    return f'<div class="tm-tools" style="display:none;gap:6px;margin:0 0 4px 0">{buttons}</div>'


#: The note shown only where the report's ``<style>`` was removed (the style hides it): JupyterLab drops the
#: ``<style>`` and ``<script>`` of an untrusted notebook's outputs, and hovering a line then does nothing.
STRIPPED_NOTE = ("Hovering and pinning lines is off here: this output's stylesheet was removed, as JupyterLab "
                 "does for a notebook it does not trust. Trust the notebook (command palette: “Trust Notebook”, "
                 "or jupyter trust NOTEBOOK.ipynb in a shell) and reopen it, or run the cell again.")


def stripped_note_html() -> str:
    """The :data:`STRIPPED_NOTE` element: visible by default, hidden by :func:`line_map_style`'s own rule, so it
    shows exactly where that style did not survive (an untrusted notebook in JupyterLab, GitHub)."""
    return (f'<div class="tm-stripped" style="{FONT};font-size:11px;color:{MUTED};'
            f'border-left:3px solid #d4a72c;padding:2px 8px;margin:0 0 4px 0">{escape(STRIPPED_NOTE)}</div>')


#: Click-to-pin for the line mapping and the panes' toolbar: one delegated listener per page (idempotent), no
#: ids.  A pin also scrolls the other panes of the report to their first line of the pinned source line.
PIN_SCRIPT = (
    "<script>(function(){if(window.__tilemagicPin)return;window.__tilemagicPin=true;"
    "document.addEventListener('click',function(e){var t=e.target;if(!t||!t.closest)return;"
    "var b=t.closest('.tm-report .tm-tools [data-tm-toggle]');if(b){var rr=b.closest('.tm-report');"
    "var a='data-tm-'+b.getAttribute('data-tm-toggle');var on=!rr.hasAttribute(a);"
    "if(on)rr.setAttribute(a,'');else rr.removeAttribute(a);b.setAttribute('aria-pressed',on?'true':'false');"
    "return;}"
    "var l=t.closest('.tm-report .tm-line[data-src-line]');if(!l)return;var r=l.closest('.tm-report');"
    "var n=l.getAttribute('data-src-line');"
    "if(r.getAttribute('data-tm-pin')===n){r.removeAttribute('data-tm-pin');return;}"
    "r.setAttribute('data-tm-pin',n);var ps=r.querySelectorAll('.tm-pane');"
    "for(var i=0;i<ps.length;i++){var p=ps[i];if(p.contains(l))continue;"
    "var m=p.querySelector('.tm-L'+n);if(!m)continue;"
    "p.scrollTop=Math.max(0,m.getBoundingClientRect().top-p.getBoundingClientRect().top+p.scrollTop-40);}"
    "});})();</script>"
)


# ----------------------------------------------------------------------------- sections
def banner_html(result) -> str:
    """Header banner: kernel, threads, backend/mode/arch, where TMEM really ran, reason."""
    launch = result.launch
    native = is_native_blackwell(launch)
    if launch is None or launch.backend == "off":
        colours = f"background:rgba(175,184,193,0.12);border:1px solid {BORDER}"
    elif native:
        colours = "background:rgba(74,194,107,0.15);border:1px solid #4ac26b"
    else:
        colours = "background:rgba(84,174,255,0.15);border:1px solid #54aeff"
    threads = getattr(result.kernel, "threads", None)
    parts = [f'<span style="font-size:15px;font-weight:700">{escape(result.name)}</span>']
    if threads is not None:
        parts.append(f"{int(threads)} threads")
    parts.append(escape(launch_headline(result)))
    head = f' <span style="color:{MUTED}">·</span> '.join(parts)
    note = escape(execution_note(result))
    if uses_tmem(result) and not native:
        note = f"<b>{note}</b>"
    reason = ""
    if launch is not None and launch.reason:
        reason = f'<div style="color:{MUTED};font-size:12px">reason: {escape(launch.reason)}</div>'
    return (f'<div class="tm-banner" style="{FONT};{colours};border-radius:6px;padding:8px 12px;'
            f'margin:0 0 8px 0;color:{FG}">'
            f"<div>{head}</div><div style=\"font-size:13px;margin-top:2px\">{note}</div>{reason}</div>")


def source_html(result, highlight: int | None = None) -> str:
    """The description, numbered and highlighted (:class:`~tilemagic.lang.highlight.TileCopyLexer`); each line
    ``<span class="tm-line tm-Ln" data-src-line="n">`` (1-based).

    Lines that produced no IR/CUDA (declarations, comments) are numbered but unmapped; a long
    description is collapsed as the code panes are (:func:`code_pane_html`).
    """
    lines = split_lines(result.source or "")
    mapped = set(linked_lines(result))
    width = len(str(len(lines))) if lines else 1
    head, tail = shown_lines(len(lines))
    shown = [*range(1, head + 1), *range(len(lines) - tail + 1, len(lines) + 1)]
    coloured = highlight_lines("\n".join(clip_line(lines[i - 1]) for i in shown), "tilecopy")
    spans = [
        _line_span(f'<span style="color:{FAINT};user-select:none">{str(i).rjust(width)} </span>'
                   f"{h}", i if i in mapped else None, highlight)
        for i, h in zip(shown, coloured)
    ]
    if tail:
        spans.insert(head, f'<span class="tm-line tm-elided" style="{_ELIDED}">'
                           f"{escape(elision_note(len(lines) - head - tail, 'result.source'))}</span>")
    body = "\n".join(spans)
    note = ""
    if highlight is not None:
        note = f"L{int(highlight)} highlighted" + ("" if int(highlight) in shown else " (in the part not shown)")
    return (f'{_pane_open(highlight)}{_pane_head("Description", note)}'
            f'<pre class="tm-code tm-src" style="{_PRE}">{body}</pre></div>')


def _reasons_cell(rec, c) -> str:
    """The why-table lines of ``c`` (DispatchRecord.why); the predicates that held in grey."""
    return "<br>".join(f'<span style="color:{FAINT};font-size:11px">{escape(clip_line(w))}</span>'
                       if w.startswith("ok: ") else escape(clip_line(w)) for w in rec.why(c)[:MAX_LISTED])


def dispatch_html(result) -> str:
    """One table per op: variant, priority, verdict (coloured), reasons; the op's line as heading.

    Tables for the first :data:`~tilemagic.widgets.format.MAX_LISTED` ops, then one line per
    further op (:func:`~tilemagic.widgets.format.dispatch_overflow`); reason lines are cut at
    :data:`~tilemagic.widgets.format.MAX_LINE_CHARS` characters.
    """
    if not result.dispatch:
        return f'<div style="{FONT};font-size:12px;color:{MUTED}">(no copy ops)</div>'
    out = []
    for rec in result.dispatch[:MAX_LISTED]:
        head = f"L{rec.line}: {clip_line(rec.text)}"
        tag = f"[{rec.op}" + (f", dispatch={rec.forced}]" if rec.forced else "]")
        rows = []
        for c in rec.candidates:
            v = c.verdict
            badge = f'<span style="{_BADGE};{_VERDICT.get(v, _VERDICT["not tried"])}">{escape(v)}</span>'
            weight = "font-weight:600;" if c.chosen else ""
            rows.append(
                f'<tr class="tm-cand"><td style="{_TD};{_MONO};white-space:nowrap;{weight}">{escape(c.variant)}</td>'
                f'<td style="{_TD_R}">{int(c.priority)}</td>'
                f'<td style="{_TD}">{badge}</td><td style="{_TD}">{_reasons_cell(rec, c)}</td></tr>'
            )
        out.append(
            f'<div class="tm-dispatch"{_line_attr(rec.line)}>'
            f'<div style="{FONT};font-size:12px;margin-top:6px"><code class="tm-line tm-L{int(rec.line)}"'
            f'{_line_attr(rec.line)} style="{_MONO}">{escape(head)}</code> '
            f'<span style="color:{MUTED}">{escape(tag)}</span></div>'
            f'<table style="{_TABLE}"><thead><tr><th style="{_TH}">variant</th><th style="{_TH}">priority</th>'
            f'<th style="{_TH}">verdict</th><th style="{_TH}">reason</th></tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>'
        )
    more = dispatch_overflow(result.dispatch)
    if more:
        out.append(f'<div class="tm-dispatch-more" style="{FONT};font-size:12px">{escape(more[0])}'
                   f'<pre style="{_PRE}">{escape(chr(10).join(more[1:]))}</pre></div>')
    return "".join(out)


_ELIDED = f"color:{MUTED};font-style:italic;background:{HEAD_BG}"


def _pane_lines(text: str, src_lines: Sequence[int | None] | None, language: str, highlight: int | None,
                where: str) -> list[tuple[int | None, str, str]]:
    """The lines of a pane as ``(index, coloured line, <span> line)``: all of them, or a collapsed pane's first and
    last lines (:func:`~tilemagic.widgets.format.shown_lines`) around an unmapped elision line (index None); each
    line cut by :func:`~tilemagic.widgets.format.clip_line`.  Only the shown lines are highlighted, and line ``i``
    keeps ``src_lines[i]``, so the mapping holds for every line shown."""
    lines = split_lines(text or "")
    src = list(src_lines or [])
    head, tail = shown_lines(len(lines))
    keep = list(range(head)) + list(range(len(lines) - tail, len(lines)))
    hl = highlight_lines("\n".join(clip_line(lines[i]) for i in keep), language)
    out = [_line_span(h, src[i] if i < len(src) else None, highlight) for i, h in zip(keep, hl)]
    first, last = budgeted(out[:head], out[head:], MAX_PANE_HTML)  # highlighted lines can be long: a byte budget
    rows: list[tuple[int | None, str, str]] = list(zip(keep, hl, out))
    hidden = len(lines) - len(first) - len(last)
    if hidden:
        note = escape(elision_note(hidden, where))
        numbering = f"counter-set:tm-ln {len(lines) - len(last)}"  # the line numbers go on at the first tail line
        elided = f'<span class="tm-line tm-elided" style="{_ELIDED};{numbering}">{note}</span>'
        return [*rows[:len(first)], (None, "", elided), *rows[len(rows) - len(last):]]
    return rows


#: Most highlighted lines a pane lists above its code when the first of them is below the fold.
EXCERPT_LINES: int = 6
#: Most runs of highlighted lines a pane header names (``lines 31-32, 35 of 44``).
NOTE_RUNS: int = 4


def _line_runs(indices: Sequence[int]) -> list[str]:
    """Sorted 0-based line indices as 1-based inclusive runs: ``[30, 31, 34] -> ["31-32", "35"]``."""
    runs: list[list[int]] = []
    for i in indices:
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return [range_text(a + 1, b + 1) for a, b in runs]


def _highlight_parts(n: int, src: Sequence[int | None], total: int,
                     rows: Sequence[tuple[int | None, str, str]]) -> tuple[str, str]:
    """The header note and the excerpt of a pane that highlights description line ``n``.

    The note names the pane's lines of ``n`` (1-based runs of its ``total`` lines, and how many of them a
    collapsed pane does not show).  The excerpt lists the first :data:`EXCERPT_LINES` of them with their
    numbers, above the code, when the first one is below the fold (:data:`FOLD_LINES`): where nothing scrolls
    the pane (no JupyterLab extension), the selected lines are in view all the same.  '' when not needed.
    """
    hit = [i for i, s in enumerate(src[:total]) if s is not None and int(s) == n]
    if not hit:
        return f"L{n}: no lines here", ""
    runs = _line_runs(hit)
    listed = ", ".join(runs[:NOTE_RUNS]) + (f", … ({len(runs) - NOTE_RUNS} more runs)" if len(runs) > NOTE_RUNS else "")
    note = f"L{n}: {'line' if len(hit) == 1 else 'lines'} {listed} of {total:,}"
    wanted = set(hit)
    shown = [(pos, i, h) for pos, (i, h, _) in enumerate(rows) if i is not None and i in wanted]
    if len(shown) < len(hit):
        note += f" ({len(hit) - len(shown):,} not shown)"
    if not shown or shown[0][0] < FOLD_LINES:
        return note, ""
    width = len(str(total))
    listed_rows = "\n".join(f'<span style="color:{FAINT};user-select:none">{str(i + 1).rjust(width)} </span>{h}'
                            for _, i, h in shown[:EXCERPT_LINES])
    more = len(shown) - EXCERPT_LINES
    caption = (f"L{n} in this pane, highlighted further down (from line {shown[0][1] + 1:,}"
               + (f"; {more:,} more after these" if more > 0 else "") + "):")
    return note, (f'<div class="tm-hl-excerpt" style="border-bottom:1px solid {BORDER};'
                  f'box-shadow:inset 3px 0 0 #d4a72c">'
                  f'<div style="{FONT};font-size:11px;color:{MUTED};padding:2px 8px">{escape(caption)}</div>'
                  f'<pre style="{_PRE}">{listed_rows}</pre></div>')


def code_pane_html(title: str, text: str, src_lines: Sequence[int | None], language: str, *,
                   role: str = "", highlight: int | None = None, where: str = "") -> str:
    """A scrollable (``max-height``) highlighted code pane with per-line ``data-src-line`` spans.

    A text of more than :data:`~tilemagic.widgets.format.MAX_LINES` lines shows its first
    :data:`~tilemagic.widgets.format.HEAD_LINES` and last :data:`~tilemagic.widgets.format.TAIL_LINES`
    lines around one ``tm-elided`` line ``… N lines not shown (full text: WHERE)``; the shown
    lines keep their ``data-src-line``, a line longer than
    :data:`~tilemagic.widgets.format.MAX_LINE_CHARS` is cut, and fewer lines are shown when their
    HTML would pass :data:`MAX_PANE_HTML` characters, so a pane's HTML is bounded.

    Parameters
    ----------
    title : str
        Pane heading (escaped).
    text : str
    src_lines : sequence of int or None
        Description line for each line of ``text``; missing entries count as None.
    language : {"python", "cuda", "ptx", "text"}
    role : str, optional
        Extra class of the ``<pre>`` naming the stage (``tm-ir``, ``tm-cu``, ``tm-emu``, ``tm-ptx``).
    highlight : int, optional
        Description line whose lines get the highlight (widget view): an inline style and :data:`HL_ATTR` on
        each of them, ``data-tm-highlight="N"`` on the pane, a header note naming them (``L14: lines 31-32 of
        38``, ``L9: no lines here``) and, when the first is below the fold (:data:`FOLD_LINES`), an excerpt
        ``tm-hl-excerpt`` above the code listing the first :data:`EXCERPT_LINES` with their numbers.  The
        JupyterLab extension scrolls the pane to the first one and hides the excerpt.
    where : str, optional
        Where the full text is (``result.ir``), named by a collapsed pane's elision line.
    """
    rows = _pane_lines(text, src_lines, language, highlight, where or "the result")
    body = "\n".join(span for _, _, span in rows)
    cls = "tm-code" + (f" {role}" if role else "")
    note, excerpt = "", ""
    if highlight is not None:
        note, excerpt = _highlight_parts(int(highlight), list(src_lines or []), len(split_lines(text or "")), rows)
    return (f'{_pane_open(highlight)}{_pane_head(title, note)}{excerpt}'
            f'<pre class="{cls}" data-lang="{escape(language)}" style="{_PRE}">{body}</pre></div>')


def ir_pane_html(result, highlight: int | None = None) -> str:
    """The IR pane (``tm-ir``)."""
    return code_pane_html("IR (TIR-like)", result.ir or "", result.ir_lines, "python", role="tm-ir",
                          highlight=highlight, where="result.ir")


def cuda_pane_html(result, highlight: int | None = None) -> str:
    """The native CUDA pane (``tm-cu``)."""
    return code_pane_html(cuda_title(result), result.cuda or "", result.cuda_lines, "cuda", role="tm-cu",
                          highlight=highlight, where="result.cuda")


def emulated_pane_html(result, highlight: int | None = None) -> str:
    """The emulated-TMEM CUDA pane (``tm-emu``); '' when the kernel uses no TMEM."""
    if not result.cuda_emulated:
        return ""
    return code_pane_html("CUDA (TMEM emulated in global memory, pre-Blackwell)", result.cuda_emulated,
                          getattr(result, "cuda_emulated_lines", None) or [], "cuda", role="tm-emu",
                          highlight=highlight, where="result.cuda_emulated")


def code_grid_html(result, highlight: int | None = None) -> str:
    """IR and native CUDA side by side (CSS grid, two equal columns), stacked in an output narrower than two
    480 px panes or with the toolbar's "stack" button."""
    return (f'<div class="tm-grid" style="display:grid;{_GRID_COLUMNS};'
            f'gap:8px;align-items:start">{ir_pane_html(result, highlight)}{cuda_pane_html(result, highlight)}</div>')


#: Two columns where the output is wide enough for two panes of 480 px, else one under the other (no style sheet
#: needed: it holds in a stripped output too).
_GRID_COLUMNS = "grid-template-columns:repeat(auto-fit,minmax(min(100%,480px),1fr))"


def emulated_html(result) -> str:
    """The emulated-TMEM CUDA inside a ``<details>`` ('' when there is none)."""
    pane = emulated_pane_html(result)
    if not pane:
        return ""
    return (f'<details class="tm-emulated" style="margin:8px 0">'
            f'<summary style="{FONT};font-size:12px;cursor:pointer">Emulated CUDA (what runs on GPUs '
            f'without tcgen05)</summary>{pane}</details>')


def heatmap_kinds(result) -> list[str]:
    """The pictures the report shows: ``result.options.heatmap`` (default ``tmem``).

    ``data`` is added when a check failed (unless ``none`` was asked for).
    """
    kinds = list(result.options.heatmap)
    if "none" in kinds:
        return []
    launch = result.launch
    if launch is not None and any(not c.passed and not c.not_evaluated for c in launch.checks) and "data" not in kinds:
        kinds.append("data")
    return kinds


def _img(png: bytes, alt: str, kind: str) -> str:
    b64 = base64.b64encode(png).decode("ascii")
    return (f'<div class="tm-heatmap" data-kind="{escape(kind)}"><img alt="{escape(alt)}" '
            f'style="max-width:100%;height:auto" src="data:image/png;base64,{b64}"></div>')


def _note(text: str, error: bool = False) -> str:
    colour = ERROR_FG if error else MUTED
    return f'<div style="{FONT};font-size:12px;color:{colour}">{escape(text)}</div>'


_ALT = {
    "tmem": "TMEM occupancy (TLane × TCol)",
    "instr": "TMEM occupancy, one panel per tcgen05 instruction",
    "fragment": "register fragment: thread × register → TMEM lane, column",
    "data": "round-trip data: expected, got, mismatches",
    "tma": "TMA boxes over the global tensor (one colour per issue, out-of-bounds part hatched)",
    "swizzle": "shared-memory swizzle: 16-byte chunk → physical chunk, coloured by bank group",
    "timeline": "asynchronous events per warp: issue → completion → wait, mbarrier phases, commit groups",
    "cluster": "cluster shared memory: one panel per CTA, each byte coloured by the CTA that wrote it",
    "tcgen05_cp": "tcgen05.cp descriptors: the shared tile's 16-byte chunks by instruction → TMEM lanes × columns",
}


def _picture_html(result, kind: str) -> str:
    """One picture as a ``data:`` image, or a note saying why there is none."""
    try:
        png = picture_png(result, kind)
    except ValueError as e:
        return _note(f"{kind} picture: {e}")
    except Exception as e:  # noqa: BLE001 - a display layer must not hide the rest of the report
        return _note(f"{kind} picture unavailable: {type(e).__name__}: {e}", error=True)
    return _img(png, _ALT[kind] if uses_tmem(result) or kind not in ("tmem", "instr", "fragment")
                else "shared-memory tile (writing thread)", kind)


def async_html(result) -> str:
    """The asynchronous-copy pictures (:func:`~tilemagic.widgets.placement.async_pictures`: TMA boxes,
    swizzle, the simulator's timeline, and for a cluster kernel what each CTA's shared memory received) as
    ``data:`` images; '' without asynchronous copies or a cluster, or with ``--heatmap none``."""
    if result.kernel is None or "none" in result.options.heatmap:
        return ""
    return "".join((_line_html(timeline_line(result)) if kind == "timeline" else "") + _picture_html(result, kind)
                   for kind in async_pictures(result.kernel, result.launch))


def _line_html(text: str) -> str:
    """One line of the report's facts (the text report's same line), in the report's font."""
    return f'<div class="tm-fact" style="{FONT};font-size:12px;margin-top:6px">{escape(text)}</div>'


def cp_descriptors_html(result) -> str:
    """Each ``tcgen05.cp``'s shared-memory descriptor decoded (:func:`~tilemagic.widgets.placement.cp_ops`,
    :func:`~tilemagic.widgets.format.cp_descriptor_rows`: the raw value at the simulator's shared window and
    every field as ``arch.smem_desc.decode`` reads it, PTX ISA 9.0 §9.7.16.4.1), one ``tm-cp-desc`` table per
    instruction under its heading (instruction, TMEM lane and column), the first
    :data:`~tilemagic.widgets.format.MAX_LISTED`; then each ``smem->tmem`` decline that names a place.
    Colours are theme variables.  '' when there is neither."""
    k = result.kernel
    parts: list[str] = []
    head = "".join(f'<th style="{_TH}">{h}</th>' for h in ("field", "bits", "value"))
    listed, more = cp_listing(cp_ops(k) if k is not None else [])
    for smem, cp in listed:
        rows = "".join("<tr>" + "".join(f'<td style="{_TD}">{escape(x)}</td>' for x in r) + "</tr>"
                       for r in cp_descriptor_rows(cp, smem))
        parts.append(f'<div style="{FONT};font-size:12px;margin-top:6px" data-src-line="{cp["line"]}">'
                     f'{escape(cp_heading(cp, smem))}</div>'
                     f'<table class="tm-cp-desc" style="{_TABLE}"><thead><tr>{head}</tr></thead>'
                     f"<tbody>{rows}</tbody></table>")
    if more:
        parts.append(_note(f"… {more} more tcgen05.cp not listed"))
    sim = cp_simulated_line(result)
    if sim is not None:
        parts.append(_line_html(sim))
    parts += [f'<div class="tm-cp-decline" style="{FONT};font-size:12px;color:{ERROR_FG}">'
              f"{escape(cp_decline_line(d))}</div>" for d in cp_declines(getattr(result, "dispatch", ()))]
    return "".join(parts)


class DeclineView:
    """What a notebook shows beside a ``DispatchError`` whose ``smem->tmem`` decline names a place: per decline its
    one line (:func:`~tilemagic.widgets.text.cp_decline_line`) and, except with ``view="text"``, the rejected
    layout (:func:`~tilemagic.widgets.figures.cp_decline_figure`) as a ``data:`` image above it.

    Parameters
    ----------
    declines : list of dict
        :func:`~tilemagic.widgets.placement.cp_declines` of the error's ``records``.
    buffer_bytes : dict of str -> int
        The error's ``buffer_bytes`` (bytes of the op's buffers: the picture's extent).
    view : {"html", "text", "widget"}
        The cell's ``--view``: ``text`` shows the lines only.
    """

    def __init__(self, declines: list[dict], buffer_bytes: dict[str, int], view: str = "html"):
        self.declines = declines
        self.buffer_bytes = buffer_bytes
        self.view = view

    def text(self) -> str:
        """The decline lines, one per decline."""
        return "\n".join(cp_decline_line(d) for d in self.declines)

    def html(self) -> str:
        """Per decline the picture (a note when it cannot be drawn: never an exception) and its line."""
        from .figures import cp_decline_figure, figure_png

        parts = []
        for d in self.declines:
            nbytes = self.buffer_bytes.get(d["detail"].buffer)
            try:
                if nbytes is None:
                    raise ValueError(f"the size of buffer {d['detail'].buffer} is not known")
                parts.append(_img(figure_png(cp_decline_figure(d, nbytes)), "rejected smem->tmem layout: the "
                                  "16-byte chunk that breaks the rule in red, where the rule wanted it dashed",
                                  "cp_decline"))
            except Exception as e:  # noqa: BLE001 - the error below is what the user must see
                parts.append(_note(f"rejected-layout picture unavailable: {type(e).__name__}: {e}", error=True))
            parts.append(f'<div class="tm-cp-decline" data-src-line="{d["line"]}" style="{FONT};font-size:12px;'
                         f'color:{ERROR_FG}">{escape(cp_decline_line(d))}</div>')
        return "".join(parts)

    def _repr_mimebundle_(self, include=None, exclude=None):
        data = {"text/plain": self.text()}
        if self.view != "text":
            data["text/html"] = self.html()
        return data

    def __repr__(self) -> str:
        return self.text()


def decline_view(error, view: str = "html") -> DeclineView | None:
    """The :class:`DeclineView` of an error that carries dispatch records (``DispatchError.records``) with a
    ``smem->tmem`` decline that names a place; None for any other error."""
    declines = cp_declines(getattr(error, "records", ()))
    if not declines:
        return None
    return DeclineView(declines, dict(getattr(error, "buffer_bytes", {}) or {}), view)


def heatmap_html(result, kinds: Sequence[str] | None = None) -> str:
    """The placement pictures as ``data:`` images (TMEM occupancy etc., or the shared tile without TMEM).

    ``kinds`` defaults to :func:`heatmap_kinds` without ``data`` (which goes with the launch).
    """
    k = result.kernel
    if k is None:
        return ""
    if not uses_tmem(result) and not [b for b in k.shared if b is not k.tmem_addr and b.name != "tmem_addr"]:
        return ""
    kinds = [x for x in (heatmap_kinds(result) if kinds is None else kinds) if x != "data"]
    if not uses_tmem(result):
        kinds = ["tmem"] if kinds else []  # the shared-tile picture is the only one without TMEM
    return "".join(_picture_html(result, kind) for kind in kinds)


def data_html(result) -> str:
    """The round-trip data picture when :func:`heatmap_kinds` asks for it ('' otherwise)."""
    if "data" not in heatmap_kinds(result) or result.launch is None or not result.launch.checks:
        return ""
    return _picture_html(result, "data")


def tmem_html(result) -> str:
    """TMEM allocation table (buffer, dtype, shape, datapath, 32-bit columns); '' without TMEM."""
    k = result.kernel
    if k is None or not uses_tmem(result):
        return ""
    rows = "".join(
        "<tr>" + "".join(f'<td style="{_TD}">{escape(x)}</td>' for x in r) + "</tr>" for r in tmem_summary_rows(k)
    )
    head = "".join(f'<th style="{_TH}">{h}</th>' for h in ("buffer", "dtype", "shape", "datapath", "columns"))
    return (f'<div style="{FONT};font-size:12px">allocated {int(k.tmem_cols)} of 512 32-bit columns × 128 lanes</div>'
            f'<table class="tm-tmem" style="{_TABLE}"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>')


def _arrays_table(title: str, arrays: dict) -> str:
    if not arrays:
        return ""
    rows = []
    for name, arr in arrays.items():
        n, dt, shp, vals = array_summary(name, arr)
        rows.append(f'<tr><td style="{_TD};{_MONO}">{escape(n)}</td><td style="{_TD}">{escape(dt)}</td>'
                    f'<td style="{_TD}">{escape(shp)}</td><td style="{_TD};{_MONO}">{escape(vals)}</td></tr>')
    head = "".join(f'<th style="{_TH}">{h}</th>' for h in ("name", "dtype", "shape", "first values"))
    return (f'<div style="{FONT};font-size:12px;font-weight:600">{escape(title)}</div>'
            f'<table style="{_TABLE}"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>')


def launch_html(result) -> str:
    """Inputs / outputs (small tables), checks (PASS green, FAIL red; a failing check's first
    mismatches, at most :data:`~tilemagic.widgets.format.MAX_LISTED`, with the count), timings with ``--bench``."""
    launch = result.launch
    if launch is None or launch.backend == "off":
        return f'<div style="{FONT};font-size:12px;color:{MUTED}">{escape(NOT_LAUNCHED)}</div>'
    parts = [f'<div style="{FONT};font-size:12px;margin-bottom:4px">{escape(launch.summary())}</div>']
    parts.append(_arrays_table("inputs", launch.inputs))
    parts.append(_arrays_table("outputs", launch.outputs))
    checks = []
    for c in launch.checks[:MAX_LISTED]:
        style = _VERDICT["chosen"] if c.passed else _VERDICT["rejected"]
        extra = str(c)[len(f"check {c.text}: {c.status}"):]  # (the mismatch / uninitialised note)
        mark = f" tm-line tm-L{int(c.line)}" if c.line is not None else ""
        checks.append(f'<div class="tm-check{mark}"{_line_attr(c.line)} style="{FONT};font-size:12px;margin:2px 0">'
                      f'<span style="{_BADGE};{style}">{c.status}</span> '
                      f'<code style="{_MONO}">check {escape(c.text)}</code>{escape(extra)}</div>')
        first = mismatch_lines(getattr(c, "first", ()), c.mismatches)
        if first:
            checks.append(f'<div class="tm-mismatches" style="{FONT};font-size:12px;margin:0 0 4px 12px">'
                          f'{escape(first[0])}<pre style="{_PRE}">{escape(chr(10).join(first[1:]))}</pre></div>')
    more = check_overflow(launch.checks)
    if more:
        checks.append(f'<div class="tm-checks-more" style="{FONT};font-size:12px;margin:2px 0">{escape(more[0])}'
                      f'<pre style="{_PRE}">{escape(chr(10).join(more[1:]))}</pre></div>')
    parts.append("".join(checks) or f'<div style="{FONT};font-size:12px;color:{MUTED}">(no checks)</div>')
    hb = launch.hb_summary()
    if hb:
        parts.append(f'<div class="tm-hb" style="{FONT};font-size:12px;margin:2px 0">{escape(hb)}</div>')
    if launch.timing:
        items = "".join(f"<li>{escape(str(k))}: {escape(str(launch.timing[k]))}</li>" for k in sorted(launch.timing))
        parts.append(f'<div style="{FONT};font-size:12px">timing:<ul style="margin:2px 0">{items}</ul></div>')
    return "".join(parts)


def warnings_html(result) -> str:
    """Warnings in a yellow box ('' when there are none): the first :data:`~tilemagic.widgets.format.MAX_LISTED`,
    each collapsed like a pane, and the count of the rest."""
    if not result.warnings:
        return ""
    shown = capped_list([elided_text(w, "result.warnings") for w in result.warnings[:MAX_LISTED]],
                        "warnings (all: result.warnings)", total=len(result.warnings))
    items = "".join(f'<li style="white-space:pre-wrap">{escape(w)}</li>' for w in shown)
    return (f'<div class="tm-warnings" style="{FONT};font-size:12px;background:rgba(212,167,44,0.15);'
            f'border:1px solid #d4a72c;border-radius:6px;padding:6px 12px;margin:8px 0;color:{FG}"><b>Warnings</b>'
            f'<ul style="margin:4px 0 0 0;padding-left:18px">{items}</ul></div>')


def extra_sections(result, with_dispatch: bool = False) -> list[tuple[str, str]]:
    """``(title, html)`` of the result's own sections (``result.sections``: ``--export``, ``--compare``,
    ``--cost``): those shown with the dispatch why-tables when ``with_dispatch``
    (:data:`~tilemagic.widgets.format.WITH_DISPATCH`), else the others.

    A section's own HTML is used up to :data:`MAX_SECTION_HTML` characters; a larger one (or a
    text section) is shown as its text, collapsed like a pane (:func:`~tilemagic.widgets.format.elided_text`).
    """
    out = []
    for i, sec in split_sections(result)[0 if with_dispatch else 1]:
        html = sec.html if sec.html is not None and len(sec.html) <= MAX_SECTION_HTML else None
        out.append((sec.title, html or f'<pre style="overflow:auto;margin:0">'
                                       f'{escape(elided_text(sec.text, f"result.sections[{i}].text"))}</pre>'))
    return out


def dispatch_with_costs_html(result) -> str:
    """The why-tables, and beside them what each candidate costs (``--cost``: the sections of
    :data:`~tilemagic.widgets.format.WITH_DISPATCH`): the Dispatch section of the report and the widget's tab."""
    return dispatch_html(result) + "".join(_section(t, b) for t, b in extra_sections(result, with_dispatch=True))


def _section(title: str, body: str) -> str:
    return f'<div style="{_H}">{escape(title)}</div>{body}' if body else ""


# ----------------------------------------------------------------------------- report
def render_html(result) -> str:
    """The full static HTML report of one ``%%tilecopy`` result.

    Parameters
    ----------
    result : tilemagic.result.TileCopyResult

    Returns
    -------
    str
        One ``<div class="tm-report">`` fragment: the line-mapping ``<style>``, banner,
        warnings, dispatch why-tables, description, IR ∥ CUDA (scrollable panes, a
        ``tm-L{N}`` class and ``data-src-line`` per mapped line), emulated CUDA in
        ``<details>``, TMEM allocation and the pictures of :func:`heatmap_kinds`, the asynchronous-copy
        pictures, each ``tcgen05.cp``'s descriptor decoded (:func:`cp_descriptors_html`), launch
        (with the round-trip data picture when a check failed), and :data:`PIN_SCRIPT`.
        Deterministic.  Bounded whatever the cell: long panes collapse (:func:`code_pane_html`),
        why-tables, warnings and mismatch lists are capped with a count, the line-mapping style
        covers only the lines shown (:func:`shown_src_lines`), and each picture is a PNG of the
        fixed figure size (:data:`~tilemagic.widgets.figures.FIGSIZE` at
        :data:`~tilemagic.widgets.figures.DPI`) whose data is downsampled to the axes.
    """
    body = [
        banner_html(result),
        warnings_html(result),
        _section("Dispatch", dispatch_with_costs_html(result)),
        _section("Description, IR and CUDA",
                 f'<div class="tm-hint" style="{FONT};font-size:11px;color:{MUTED};margin:0 0 4px 0">'
                 "hover a line to light up the lines it maps to in the other panes; click to pin</div>"
                 + tools_html() +
                 f'<div class="tm-source" style="margin:0 0 8px 0">{source_html(result)}</div>'
                 + code_grid_html(result)),
        emulated_html(result),
        *(_section(title, body) for title, body in extra_sections(result)),
        _section("TMEM" if uses_tmem(result) else "Shared memory", tmem_html(result) + heatmap_html(result)),
        _section("Asynchronous copies", async_html(result)),
        _section("tcgen05.cp descriptors", cp_descriptors_html(result)),
        _section("Launch", launch_html(result) + data_html(result)),
    ]
    html = "".join(b for b in body if b)
    style = line_map_style(shown_src_lines(html))  # rules only for the lines the (collapsed) panes show
    if style:  # (after the banner: the note is about the panes, the banner comes first)
        html = html.replace('<div style="' + _H + '">Description, IR and CUDA</div>',
                            '<div style="' + _H + '">Description, IR and CUDA</div>' + stripped_note_html(), 1)
    return (f'<div class="tm-report" style="{FONT};color:{FG};max-width:100%">'
            + style + html + (PIN_SCRIPT if style else "") + "</div>")


#: The class of the widget view's root element (:class:`~tilemagic.widgets.view.WidgetView`), which the
#: fallback's style looks for.
WIDGET_CLASS = "tm-widget-view"
#: The fallback hides itself where the live widget view rendered in the same output area (JupyterLab,
#: Notebook 7 and nbconvert's lab template call it ``jp-OutputArea``).
_FALLBACK_STYLE = (f"<style>.jp-OutputArea:has(.{WIDGET_CLASS}) .tm-fallback{{display:none}}</style>")


def fallback_html(result) -> str:
    """The static report shown beside a widget view wherever the live widget cannot be.

    A notebook saved without widget state (JupyterLab's default) and reopened shows "Error displaying widget:
    model not found" for the widget output, and nbconvert's HTML an empty one; the magic therefore displays
    this output before the widget.  Its own ``<style>`` hides it where the live view rendered in the same cell
    (``.jp-OutputArea:has(.tm-widget-view)``), so a live session shows the widget alone, and everywhere else
    (reopened, exported, untrusted: the style is dropped with the rest) the report is there.

    Returns
    -------
    str
        ``<div class="tm-fallback">`` with the style, one line saying what it is, and :func:`render_html`.
    """
    note = ("The live stage view (--view widget) is not available here (its widget state was not saved, or "
            "this is a static export): the static report.")
    return (f'<div class="tm-fallback">{_FALLBACK_STYLE}<div style="{FONT};font-size:11px;'
            f'color:{MUTED};margin:0 0 4px 0">{escape(note)}</div>'
            f"{render_html(result)}</div>")


_MAPPED = re.compile(r'data-src-line="(\d+)"')


def shown_src_lines(html: str) -> list[int]:
    """The description lines some element of a rendered fragment maps to (its ``data-src-line`` values), sorted."""
    return sorted({int(n) for n in _MAPPED.findall(html)})
