"""The Pygments lexer of the cell language (tilemagic.lang.highlight) on every construct of docs/language.md."""

from __future__ import annotations

import re
from importlib import import_module
from pathlib import Path

import pytest
from pygments.token import Comment, Error, Keyword, Name, Number, Operator, Punctuation, String, Text

from tilemagic.lang.highlight import TileCopyLexer

ROOT = Path(__file__).resolve().parents[3]
DOC = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```tilecopy\n(.*?)```", DOC, re.S)


def tokens(text: str) -> list[tuple[object, str]]:
    return [(t, v) for t, v in TileCopyLexer().get_tokens(text) if v.strip()]


def kind_of(text: str, word: str, nth: int = 0):
    hits = [t for t, v in tokens(text) if v == word]
    assert len(hits) > nth, (word, tokens(text))
    return hits[nth]


def test_the_docs_have_tilecopy_blocks():
    assert len(BLOCKS) >= 10


@pytest.mark.parametrize("i", range(len(BLOCKS)))
def test_every_block_of_the_language_page_lexes_without_plain_or_error_tokens(i):
    # every visible character of the page's examples is a known construct: nothing falls through as plain text
    leftovers = [(t, v) for t, v in tokens(BLOCKS[i]) if t in Error or t is Text]
    assert not leftovers, (BLOCKS[i].splitlines()[0], leftovers)


@pytest.mark.parametrize("cell,word,kind", [
    ("%%tilecopy rt --launch sim\n", "%%tilecopy", Comment.Preproc),
    ("%%tilecopy rt --launch sim\n", "--launch", Name.Attribute),
    ("%%tilecopy rt --launch sim\n", "sim", String),
    ("# a comment\n", "# a comment", Comment.Single),
    ("kernel k threads=128  # trailing\n", "kernel", Keyword),
    ("kernel k threads=128\n", "threads", Keyword),
    ("kernel k threads=128\n", "k", Name.Variable),
    ("kernel k threads=128\n", "128", Number.Integer),
    ("global A: float16[128, 8]\n", "global", Keyword.Declaration),
    ("shared S: int8[64]\n", "shared", Keyword.Declaration),
    ("local a: bfloat16[8]\n", "local", Keyword.Declaration),
    ("tmem T: float32[128, 32]\n", "tmem", Keyword.Declaration),
    ("global A: uint8[4]\n", "uint8", Keyword.Type),
    ("global A: int32[4]\n", "int32", Keyword.Type),
    ("global A: float32[4] = x\n", "x", Name.Variable),
    ("local a: float16[128, 8] @ S[(128, 8) : (1@tid_in_wg, 1)]\n", "S", Name.Function),
    ("local a: float16[128, 8] @ S[(128, 8) : (1@tid_in_wg, 1)]\n", "tid_in_wg", Name.Builtin),
    ("local a: float16[32, 8] @ S[(32, 8) : (1@laneid, 1)] + 4@warpid\n", "warpid", Name.Builtin),
    ("tmem T: float32[128, 32] @ datapath(F, sub_slab=1)\n", "datapath", Name.Function),
    ("tmem T: float32[128, 32] @ datapath(F, sub_slab=1)\n", "F", Name.Constant),
    ("tmem T: float32[128, 32] @ datapath(F, sub_slab=1)\n", "sub_slab", Keyword),
    ("local f: float32[64, 32] @ frag(16x256b)\n", "frag", Name.Function),
    ("local f: float32[64, 32] @ frag(16x256b)\n", "16x256b", Name.Constant),
    ("shared S: float16[64, 64] @ swizzle(3, 3, 3)\n", "swizzle", Name.Function),
    ("tmem U: float32[128, 8] at T + 16\n", "at", Keyword),
    ("wg.copy a <- A[0:128, :]\n", "wg", Name.Builtin),
    ("warp.copy a <- A\n", "copy", Keyword),
    ("cta.copy_async T <- a dispatch=tmem<->local\n", "copy_async", Keyword),
    ("cta.copy_async T <- a dispatch=tmem<->local\n", "<-", Operator),
    ("cta.copy_async T <- a dispatch=tmem<->local\n", "dispatch", Keyword),
    ("cta.copy_async T <- a dispatch=tmem<->local\n", "tmem<->local", Name.Constant),
    ("thread.copy a <- A[0, 1:3]\n", "[", Punctuation),
    ("wait ld\n", "wait", Keyword),
    ("wait st\n", "st", Keyword),
    ("cta_sync\n", "cta_sync", Keyword),
    ("check B == A\n", "check", Keyword),
    ("check B == A\n", "==", Operator),
])
def test_each_construct_gets_its_token(cell, word, kind):
    assert kind_of(cell, word) in kind


def test_a_buffer_named_like_a_keyword_is_a_name_where_a_name_is_expected():
    assert kind_of("global ld: float32[4]\n", "ld") in Name.Variable
    assert kind_of("wg.copy check <- A\n", "check") in Name.Variable


def test_a_line_the_parser_rejects_is_coloured_not_an_error_token():
    assert all(t not in Error for t, _ in tokens("buf A: global f32[16]\nwarp.copy A -> B[0:\n"))


def test_lines_stay_lines():
    text = "kernel k threads=32\n\n# c\nglobal A: float32[4]\nwarp.copy A <- A"
    assert "".join(v for _, v in TileCopyLexer(stripnl=False).get_tokens(text)).split("\n")[:5] == text.split("\n")


def test_the_package_registers_the_lexer_with_pygments():
    text = (ROOT / "pyproject.toml").read_text()  # (tomllib is Python 3.11+)
    section = text.split('[project.entry-points."pygments.lexers"]', 1)[1].split("\n[", 1)[0]
    target = re.search(r'^tilecopy = "([^"]+)"', section, re.M).group(1)
    module, cls = target.split(":")
    assert getattr(import_module(module), cls) is TileCopyLexer
    assert {"tilecopy", "tile"} <= set(TileCopyLexer.aliases) and "*.tile" in TileCopyLexer.filenames


def test_the_description_pane_is_highlighted():
    import tilemagic
    from tilemagic.cli import demo_source

    page = tilemagic.tilecopy(demo_source("tmem_roundtrip"), launch="off").html()
    src = page[page.index('<pre class="tm-code tm-src"'):]
    src = src[:src.index("</pre>")]
    assert '<span style="color:var(--jp-mirror-editor-keyword-color,#008000);font-weight:bold">kernel</span>' in src
    assert "float16</span>" in src and "tid_in_wg</span>" in src


def test_the_labextension_word_lists_are_the_packages():
    import subprocess
    import sys

    r = subprocess.run([sys.executable, str(ROOT / "tools" / "labextension_words.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_the_prebuilt_labextension_is_shipped():
    import json

    meta = json.loads((ROOT / "tilemagic" / "labextension" / "package.json").read_text())
    entry = ROOT / "tilemagic" / "labextension" / meta["jupyterlab"]["_build"]["load"]
    assert meta["name"] == "tilemagic-labextension" and entry.is_file()
    assert "text/x-tilecopy" in "".join(p.read_text() for p in entry.parent.glob("*.js"))
    text = (ROOT / "pyproject.toml").read_text()
    assert '"share/jupyter/labextensions/tilemagic-labextension/static" = ["tilemagic/labextension/static/*"]' in text


@pytest.mark.parametrize("blank", ["\x0b", "\x0c", "\xa0", "\u3000", "\u2028", "\x85", "\x1c"])
def test_odd_blanks_on_the_magic_line_are_no_error_tokens(blank):
    assert all(t not in Error for t, _ in tokens(f"%%tilecopy k{blank}--launch sim\nkernel k threads=32\n"))
