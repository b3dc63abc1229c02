"""Execute the notebooks' jupytext sources into the stored notebooks that nbval checks.

Usage: ``python tools/build_notebooks.py [NAME ...]`` (all notebooks without a name; needs jupytext,
nbclient, nbformat, ipykernel).

Each notebook is written as MyST markdown in ``notebooks/src/NAME.md``: markdown cells as markdown,
code cells as ``{code-cell}`` blocks, tags (``raises-exception``, ``nbval-ignore-output``) in the
cells' ``:tags:`` option. The build reads a source with jupytext, gives its cells stable ids
(``NAME-000``, ...), executes it with nbclient in ``notebooks/`` without timing metadata, and writes
``notebooks/NAME.ipynb`` with its ipywidgets models renumbered (``normalize_widget_ids``), so a
rebuild changes only what the cells print. A cell that raises without the ``raises-exception`` tag
stops the build (``nbclient.exceptions.CellExecutionError``) and nothing is written.
"""

from __future__ import annotations

import json
import re
import sys
import uuid
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
SOURCES = NOTEBOOKS / "src"
NAMES = sorted(p.stem for p in SOURCES.glob("*.md"))
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def read_source(name: str) -> nbformat.NotebookNode:
    """The notebook ``notebooks/src/NAME.md`` as an unexecuted notebook with stable cell ids."""
    nb = jupytext.read(SOURCES / f"{name}.md", fmt="md:myst")
    nb.nbformat, nb.nbformat_minor = 4, 5  # cell ids
    nb.metadata = nbformat.from_dict({
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
    })
    for i, cell in enumerate(nb.cells):
        cell.id = f"{name[:40]}-{i:03d}"
    return nb


def execute(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Run every cell of ``nb`` in place, in ``notebooks/``, without timing metadata.

    Raises ``nbclient.exceptions.CellExecutionError`` at the first cell that raises without the
    ``raises-exception`` tag (nbclient's ``allow_errors=False``).
    """
    NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=False, record_timing=False,
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    return nb


def normalize_widget_ids(nb: nbformat.NotebookNode, name: str) -> nbformat.NotebookNode:
    """``nb`` with its widget models' random ids replaced by ids numbered in the order they are reached.

    Walks the cells (outputs in order) and then, depth first, the references in each model's state
    (sorted keys, list order); models no output reaches follow, by their state with the ids replaced.
    """
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state")
    if not state:
        return nb
    known, new = re.compile("|".join(map(re.escape, sorted(state)))), {}

    def walk(obj):
        if isinstance(obj, str):
            for old in known.findall(obj):
                if old not in new:
                    new[old] = uuid.uuid5(uuid.NAMESPACE_URL, f"tilemagic/{name}/{len(new)}").hex
                    walk(state[old])
        elif isinstance(obj, (dict, list)):
            for v in ([obj[k] for k in sorted(obj)] if isinstance(obj, dict) else obj):
                walk(v)

    def renamed(text):
        return known.sub(lambda m: new.get(m[0], "?"), text)

    walk(nb.cells)
    walk(sorted(set(state) - set(new), key=lambda old: renamed(json.dumps(state[old], sort_keys=True))))
    out = nbformat.from_dict(json.loads(renamed(json.dumps(nb))))
    widgets = out.metadata.widgets[WIDGET_STATE]
    widgets.state = {i: widgets.state[i] for i in new.values()}  # nbformat.write sorts keys again
    return out


def build(name: str) -> Path:
    """Execute ``notebooks/src/NAME.md`` and write ``notebooks/NAME.ipynb``."""
    out = NOTEBOOKS / f"{name}.ipynb"
    nbformat.write(normalize_widget_ids(execute(read_source(name)), name), out)
    return out


if __name__ == "__main__":
    unknown = sorted(set(sys.argv[1:]) - set(NAMES))
    if unknown:
        sys.exit(f"no source notebooks/src/{unknown[0]}.md (known: {', '.join(NAMES)})")
    for n in sys.argv[1:] or NAMES:
        print(f"wrote {build(n).relative_to(ROOT)}")
