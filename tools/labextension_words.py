"""Write labextension/src/words.json: the word lists of the JupyterLab highlighter, from the Python package.

The cell language's dtypes, exec scopes, thread and memory axes (and ``cta_rank``), tcgen05 shapes (tcgen05.ld/st's, and
tcgen05.cp's ``shape=`` / ``multicast=`` values), copy options and ``tcgen05.fence::KIND`` kinds are defined once
(``tilemagic.lang.ast.DTYPES`` / ``COPY_OPTIONS`` / ``TCGEN05_FENCES``, ``tilemagic.arch.threads``,
``tilemagic.arch.tcgen05.SHAPES`` / ``CP_MULTICAST``); the
labextension's CodeMirror mode reads them from this generated file.  ``--check`` exits 1 when the file is
stale (``tests/unit/lang/test_highlight.py`` runs it).

Usage: ``python tools/labextension_words.py [--check]``
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "labextension" / "src" / "words.json"


def words() -> str:
    sys.path.insert(0, str(ROOT))
    from tilemagic.arch.cluster import CTA_RANK
    from tilemagic.arch.tcgen05 import CP_MULTICAST, SHAPES
    from tilemagic.arch.threads import AXIS_SCOPES, MEMORY_AXES, SCOPES
    from tilemagic.lang.ast import COPY_OPTIONS, DTYPES, TCGEN05_FENCES

    data = {"dtypes": list(DTYPES), "scopes": [*SCOPES, "wg"], "axes": [*AXIS_SCOPES, *MEMORY_AXES, CTA_RANK],
            # tcgen05.ld/st shapes, then tcgen05.cp's shape= and multicast= values
            "shapes": [*SHAPES, *CP_MULTICAST, *dict.fromkeys(m for ms in CP_MULTICAST.values() for m in ms if m)],
            "options": list(COPY_OPTIONS), "tcgen05_fences": list(TCGEN05_FENCES)}
    return json.dumps(data, indent=1) + "\n"


def main(argv: list[str]) -> int:
    text = words()
    if "--check" in argv:
        if not OUT.exists() or OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT.relative_to(ROOT)} is stale: run python tools/labextension_words.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
