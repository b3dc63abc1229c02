"""No code injection: cell text never reaches eval/exec/compile, names are checked before CUDA, and
``= NAME`` initialisers only look a variable up (never evaluate it).

Every identifier position of a cell gets injection payloads: the kernel name, the cell name, buffer
names (all four kinds), ``at OTHER``, region names in ops and checks, ``= NAME``, ``dispatch=``, and
the option line (``--out``, ``--arch``, ``--view``, ``--launch``, ``--seed``, ``--timeout``).  Each must
end in a located TileMagicError (through the magic too, for the option line), and no
payload may run: a marker file the payloads try to create must never appear.
"""

import ast
import re
from pathlib import Path

import numpy as np
import pytest

import tilemagic
from tilemagic.errors import TileMagicError, TileSyntaxError, TileTypeError


def test_package_calls_no_eval_exec_compile():
    root = Path(tilemagic.__file__).parent
    found = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("eval", "exec",
                                                                                                  "compile"):
                found.append(f"{path.relative_to(root)}:{node.lineno} {node.func.id}()")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                    "run_cell", "ex", "ev", "system", "getoutput", "run_line_magic", "run_cell_magic", "literal_eval"):
                found.append(f"{path.relative_to(root)}:{node.lineno} .{node.func.attr}()")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                    "Popen", "run", "call", "check_output") and isinstance(node.func.value, ast.Name) and \
                    node.func.value.id == "subprocess":
                # subprocesses: only nvcc --version / nvcc itself (argument lists, no shell) and the launch worker
                src = ast.get_source_segment(path.read_text(), node)
                assert "shell=True" not in src, f"{path}:{node.lineno}"
    assert not found, found


@pytest.fixture
def marker(tmp_path):
    path = tmp_path / "pwned"
    yield path
    assert not path.exists(), "an injection payload ran"


def payloads(marker):
    m = str(marker)
    return [
        f"__import__('os').system('touch {m}')",
        f"x; import os; os.system('touch {m}')",
        f"A); }} __global__ void evil() {{ system(\"touch {m}\"); }} //",
        f"$(touch {m})", f"`touch {m}`", "{{7*7}}", "%s%n", "<script>", "A\\nB",
        "int", "threadIdx", "__syncthreads", "tm_scratch", "tmem_addr", "printf", "_Z3foo", "CUDA_VERSION",
        "exec", "eval", "__class__", "A.b", "A-B", "é", "A\u200b", "9x", "",
    ]


def cell(kernel="k", a="A", b="B", s="S", t="T", loc="a", init=None, alias=None):
    return "\n".join([
        f"kernel {kernel} threads=128",
        f"global {a}: float32[128, 8]" + (f" = {init}" if init is not None else ""),
        f"global {b}: float32[128, 8]",
        f"shared {s}: float32[4, 6]",
        f"tmem {t}: float32[128, 8]" + (f" at {alias}" if alias is not None else ""),
        f"local {loc}: float32[128, 8] @ S[(128, 8) : (1@tid_in_wg, 1)]",
        f"wg.copy {loc} <- {a}",
        f"wg.copy {b} <- {loc}",
        f"check {b} == {a}",
    ])


POSITIONS = {
    "kernel name": lambda p: cell(kernel=p),
    "global name": lambda p: cell(a=p),
    "second global name": lambda p: cell(b=p),
    "shared name": lambda p: cell(s=p),
    "tmem name": lambda p: cell(t=p),
    "local name": lambda p: cell(loc=p),
    "at OTHER": lambda p: cell(alias=p),
    "= NAME": lambda p: cell(init=p),
    "op region": lambda p: cell().replace("wg.copy a <- A", f"wg.copy a <- {p}"),
    "check region": lambda p: cell().replace("check B == A", f"check B == {p}"),
    "dispatch": lambda p: cell().replace("wg.copy B <- a", f"wg.copy B <- a dispatch={p}"),
    "dispatch string": lambda p: cell().replace("wg.copy B <- a", f"wg.copy B <- a dispatch=\"{p}\""),
    "cell name": lambda p: f"%%tilecopy {p}\n" + cell().split("\n", 1)[1],
}


@pytest.mark.parametrize("position", list(POSITIONS))
def test_payloads_in_every_identifier_position(position, marker):
    for payload in payloads(marker):
        src = POSITIONS[position](payload)
        try:
            res = tilemagic.tilecopy(src, launch="sim", namespace={}, emit_warnings=False)
        except TileMagicError as e:
            assert e.line is not None and e.col is not None and e.message, (position, payload)
            continue
        # accepted: only a plain identifier (e.g. `exec` is a fine C and Python name), or text in a place that
        # never reaches CUDA; nothing of it reaches CUDA except as a checked identifier
        assert (re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", payload) or payload == ""
                or position in ("dispatch string", "cell name")), (position, payload)
        names = {b.name for b in res.kernel.params + res.kernel.shared + res.kernel.locals} | {res.kernel.name}
        for n in names:
            assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n), n
        assert "touch" not in res.cuda and "system" not in res.cuda


def test_names_are_checked_before_cuda():
    """The name guard (lower/names.py) runs in check(): a reserved name never gets to code generation."""
    for bad in ("int", "threadIdx", "tm_status", "__shfl_sync", "_Reserved", "CUDART_VERSION", "INT_MAX", "half2"):
        with pytest.raises(TileTypeError) as ei:
            tilemagic.tilecopy(cell(a=bad), launch="off")
        assert ei.value.line == 2 and ei.value.col == 8, bad


class SpyNamespace(dict):
    """A notebook namespace that records which names were looked up."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.looked_up = []

    def __contains__(self, key):
        self.looked_up.append(key)
        return super().__contains__(key)

    def __getitem__(self, key):
        self.looked_up.append(key)
        return super().__getitem__(key)


class Booby:
    """Any use of this object beyond an isinstance check runs 'code'."""

    ran = False

    def _run(self, *a, **k):
        Booby.ran = True
        raise AssertionError("initialiser object was used")

    __array__ = __len__ = __iter__ = __getitem__ = __float__ = __index__ = _run


def test_initialiser_is_looked_up_never_evaluated():
    w = np.arange(128 * 8, dtype=np.float32).reshape(128, 8)
    ns = SpyNamespace(w=w, booby=Booby(), f16=w.astype(np.float16), short=w[:64], lst=w.tolist())
    res = tilemagic.tilecopy(cell(init="w"), launch="sim", namespace=ns, emit_warnings=False)
    assert set(ns.looked_up) == {"w"}
    np.testing.assert_array_equal(res.launch.outputs["B"], w)
    assert res.launch.inputs["A"] is not w  # copied, the notebook's array is never written
    for name, frag in (("booby", "is a Booby, not a NumPy array"), ("lst", "is a list, not a NumPy array"),
                       ("f16", "is float16[128, 8]; A needs float32[128, 8]"),
                       ("short", "is float32[64, 8]; A needs float32[128, 8]"),
                       ("missing", "'missing' is not a variable in the notebook namespace")):
        with pytest.raises(TileTypeError) as ei:
            tilemagic.tilecopy(cell(init=name), launch="sim", namespace=ns)
        assert frag in ei.value.message and (ei.value.line, ei.value.col) == (2, 29), name
    assert not Booby.ran


def test_initialiser_expression_is_a_syntax_error(marker):
    ns = SpyNamespace(os=__import__("os"))
    for expr in (f"os.system('touch {marker}')", "os.path", "w[0]", "w + 1", "lambda: 0"):
        with pytest.raises(TileSyntaxError) as ei:
            tilemagic.tilecopy(cell(init=expr), launch="sim", namespace=ns)
        assert ei.value.line == 2
    assert ns.looked_up == []
    with pytest.raises(TileTypeError, match="is a module, not a NumPy array"):
        tilemagic.tilecopy(cell(init="os"), launch="sim", namespace=ns)


# ----------------------------------------------------------------------------- through the magic
def test_magic_initialiser_uses_the_user_namespace(ip):
    from IPython.utils.capture import capture_output

    w = np.full((128, 8), 7, np.float32)
    ip.user_ns["weights"] = w
    res = ip.run_cell_magic("tilecopy", "--launch sim", cell(init="weights").split("\n", 1)[1])
    np.testing.assert_array_equal(res.launch.outputs["B"], w)
    ip.user_ns["weights"] = "not an array"
    with capture_output() as cap:
        r = ip.run_cell("%%tilecopy --launch sim\n" + cell(init="weights").split("\n", 1)[1])
    assert isinstance(r.error_in_exec, TileTypeError)
    assert "tilecopy:2:29: TileTypeError: 'weights' is a str, not a NumPy array" in cap.stdout + cap.stderr


def test_magic_option_payloads(ip, marker):
    body = cell().split("\n", 1)[1]
    ns_before = set(ip.user_ns)
    for line in (f"--out \"x; __import__('os').system('touch {marker}')\"", "--out __builtins__", "--out 1x",
                 "--out class", f"--arch \"sm_100a; touch {marker}\"", "--view '<script>'", "--launch 'gpu;'",
                 "--seed '1; 2'", "--timeout '__import__(\"os\")'", f"$(touch {marker})", f"`touch {marker}`"):
        with pytest.raises(TileSyntaxError) as ei:
            ip.run_cell_magic("tilecopy", f"--launch off {line}", body)
        assert ei.value.line == 1 and ei.value.col >= 12 and "bad %%tilecopy option line" in ei.value.message
    assert set(ip.user_ns) == ns_before  # --out stored nothing under a bad name
    assert ip.user_ns["__builtins__"] is not None
    ip.run_cell_magic("tilecopy", "--launch off --out good_name", body)
    assert isinstance(ip.user_ns["good_name"], tilemagic.TileCopyResult)
