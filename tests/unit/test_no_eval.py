"""Cell text never reaches Python's eval/exec/compile: no such call exists in the package."""

import ast
from pathlib import Path

import tilemagic


def test_package_calls_no_eval_exec_compile():
    root = Path(tilemagic.__file__).parent
    found = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("eval", "exec",
                                                                                                  "compile"):
                found.append(f"{path.relative_to(root)}:{node.lineno} {node.func.id}()")
    assert not found, found
