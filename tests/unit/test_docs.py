"""The docs' examples run: every ```tilecopy block of docs/language.md goes through the pipeline.

Every block must run (the one needing a notebook array runs once the array is given); the tcgen05
blocks must emit the instruction their comment or text names.
"""

import re
from pathlib import Path

import numpy as np
import pytest

from helpers import run

DOC = Path(__file__).resolve().parents[2] / "docs" / "language.md"
MARKED = re.findall(r"(?:<!-- needs ([^>]*?) -->\n)?```tilecopy\n(.*?)```", DOC.read_text(), re.S)
BLOCKS = [b for _, b in MARKED]


@pytest.mark.parametrize("need,block", MARKED, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_doc_block_runs(need, block):
    assert not need, f"a doc block is marked `<!-- needs {need} -->`: every block must run"
    ns = {"my_weights": np.zeros((4, 6), np.float32)}
    res = run(block, namespace=ns)
    for chain in re.findall(r"# one (tcgen05\.\w+\.sync\.aligned\.\w+\.x\d+\.b32)", block):
        assert chain in res.ir
    assert res.launch is not None and res.launch.passed, res.launch.checks


def test_tcgen05_doc_examples_emit_what_the_text_says():
    f_half = next(b for b in BLOCKS if "datapath(F, sub_slab=0) at T" in b)
    assert "tcgen05.ld.sync.aligned.16x64b.x16.b32" in run(f_half).ir
    chunks = next(b for b in BLOCKS if "kernel chunks" in b)
    res = run(chunks)
    assert res.ir.count("tcgen05.ld.sync.aligned.16x256b.x2.b32") == 8 and res.launch.passed


def test_tcgen05_cp_doc_examples_emit_what_their_comments_say():
    """The tcgen05.cp blocks (§tcgen05.commit, §tcgen05.cp) lower to the instructions their comments name, and the
    round trip's block is the demo."""
    from tilemagic.cli import demo_source

    for block in (b for b in BLOCKS if "tcgen05.commit" in b):
        n, chain = re.search(r"# (\d+ x |one )(tcgen05\.cp\.cta_group::1\.[\w.]+(?:::\w+)?)", block).groups()
        ir = run(block, launch="off").ir
        assert ir.count(f'T.ptx["{chain}"]') == (1 if n == "one " else int(n.split()[0])), block
    demo = next(b for b in BLOCKS if "kernel tcgen05_cp_roundtrip" in b)
    def statements(text):
        return [ln for ln in (re.sub(r" *#.*", "", line) for line in text.splitlines()) if ln.strip()]

    assert statements(demo) == statements(demo_source("tcgen05_cp_roundtrip"))[1:]  # (less the %%tilecopy line)


def test_docs_have_blocks():
    assert len(BLOCKS) >= 10
