"""The one-way flow of docs/architecture.md, enforced: an import-linter ``layers`` contract and no import cycle.

Both read the import graph with grimp (import-linter's graph builder), which sees every import statement of a
module, the function-local (lazy) ones included, so a stage cannot reach back up by importing inside a function.
"""

from __future__ import annotations

from pathlib import Path



ROOT = Path(__file__).resolve().parents[2]




def test_layers_contract_holds():
    from importlinter.cli import lint_imports

    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True) == 0, (
        "an import goes against the layers of [tool.importlinter] in pyproject.toml (run `lint-imports`)")


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for start in sorted(graph.modules):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph.find_modules_directly_imported_by(nxt)))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_no_import_cycle_among_modules():
    import grimp

    graph = grimp.build_graph("tilemagic")
    # a package's __init__ importing its own submodules is how packages re-export; a cycle through the
    # package itself is still a cycle between modules, so nothing is exempt
    assert _cycles(graph) == [], "import cycles (lazy imports included)"


def test_cycle_finder_finds_a_cycle():
    class G:
        modules = {"a", "b", "c"}
        edges = {"a": {"b"}, "b": {"a"}, "c": {"a"}}

        def find_modules_directly_imported_by(self, m):
            return self.edges[m]

    assert _cycles(G()) == [["a", "b"]]
