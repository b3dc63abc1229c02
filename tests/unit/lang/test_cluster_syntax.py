"""The cluster language (issue 13, second milestone): ``kernel ... cluster=C``, ``cta_rank`` in guards and region
bounds, ``cluster_sync``, the options ``cta_mask=``, ``remote_cta_id=``, ``use_tma_reduce=``, and the located errors
of their misuse (docs/language.md "Clusters")."""

from __future__ import annotations

import pytest

from tilemagic.errors import TileMagicError
from tilemagic.lang import ast
from tilemagic.lang.parser import parse
from tilemagic.lower.program import check

HEAD = ("kernel k threads=128 cluster=2\nglobal A: float16[128, 64] = arange\nglobal B: float16[256, 64] = zeros\n"
        "shared S: float16[128, 64]\nmbarrier full\n")


def _err(src: str, arch: str = "sm_90a") -> TileMagicError:
    with pytest.raises(TileMagicError) as info:
        check(parse(src), arch=arch)
    return info.value


def _at(src: str, line: int, col: int, fragment: str, hint: str | None = None) -> TileMagicError:
    err = _err(src)
    assert (err.line, err.col) == (line, col), err.render()
    assert fragment in err.message, err.render()
    if hint is not None:
        assert hint in (err.hint or ""), err.render()
    return err


def test_kernel_line_takes_the_cluster_size():
    k = parse("kernel mc threads=64 cluster=4").kernel
    assert (k.threads, k.cluster) == (64, 4)
    assert (k.cluster_span.col, k.cluster_span.end_col) == (22, 31)
    assert parse("kernel mc cluster=2 threads=64").kernel.threads == 64  # either order
    assert parse("kernel mc threads=64").kernel.cluster == 1


@pytest.mark.parametrize("value, fragment, hint", [
    ("0", "a cluster has 1 to 8 CTAs, got 0", ".reqnctapercluster"),
    ("17", "a cluster has 1 to 8 CTAs, got 17", None),
    ("-2", "a cluster has 1 to 8 CTAs, got -2", None),
    ("16", "a cluster of 16 CTAs is not portable: at most 8", "NonPortableClusterSizeAllowed"),
    ("9", "a cluster of 9 CTAs is not portable", "non-portable"),
])
def test_cluster_size_out_of_range_is_located(value, fragment, hint):
    _at(f"kernel k threads=32 cluster={value}", 1, 29, fragment, hint)


def test_cluster_given_twice():
    _at("kernel k cluster=2 cluster=4", 1, 20, "`cluster=` is given twice (first at column 10)")


def test_cluster_sync_parses_and_needs_a_cluster():
    prog = parse(HEAD + "cluster_sync")
    assert isinstance(prog.stmts[-1], ast.ClusterSyncStmt)
    _at("kernel k threads=32\ncluster_sync", 2, 1, "`cluster_sync` needs a cluster", hint="cta_sync")


def test_guarded_cluster_sync_is_a_deadlock():
    _at(HEAD + "if tx == 0: cluster_sync", 6, 1, "a guarded `cluster_sync` deadlocks",
        hint="without a guard")


def test_cta_rank_in_guards():
    prog = parse(HEAD + "if cta_rank == 1 and tx == 0: arrive full")
    g = prog.stmts[-1].guard
    assert [(t.axis, t.op, t.value) for t in g.terms] == [("cta_rank", "==", 1), ("tx", "==", 0)]
    _at(HEAD + "if cta_rank == 2: arrive full", 6, 1, "selects no thread of the 128-thread CTA in any CTA of the "
                                                      "2-CTA cluster")
    _at(HEAD + "if ctarank == 0: arrive full", 6, 4, "unknown thread axis 'ctarank'", hint="`cta_rank`")


def test_region_bounds_are_rank_expressions_and_plain_ints_stay_ints():
    prog = parse(HEAD + "wg.copy B[128*cta_rank : 128*cta_rank+128, 0:64] <- S")
    sl0, sl1 = prog.stmts[-1].dst.slices
    assert isinstance(sl0.start, ast.RankExpr) and isinstance(sl0.stop, ast.RankExpr)
    assert [(sl0.start.at(r), sl0.stop.at(r)) for r in (0, 1)] == [(0, 128), (128, 256)]
    assert type(sl1.start) is int and type(sl1.stop) is int and (sl1.start, sl1.stop) == (0, 64)
    src = parse(HEAD + "wg.copy S <- A[(cta_rank ^ 1) % 2 * 64 // 2 - 0 : 64 + 64 * 0, :]").stmts[-1].src
    assert src.slices[0].start.at(0) == 32 and src.slices[0].start.at(1) == 0
    # a constant expression folds to the int it is; a point index in cta_rank stops one later
    assert parse(HEAD + "wg.copy S <- A[2*32-64 : 0x80, :]").stmts[-1].src.slices[0].start == 0
    pt = parse("kernel k threads=128 cluster=2\nglobal C: float32[2, 64]\nshared T: float32[64]\n"
               "wg.copy T <- C[cta_rank, :]").stmts[-1].src.slices[0]
    assert pt.point and (pt.start.at(1), pt.stop.at(1)) == (1, 2)


def test_rank_expression_errors_are_located():
    _at(HEAD + "wg.copy S <- A[rank*64 : 128, :]", 6, 16, "unknown name 'rank' in an integer expression",
        hint="`cta_rank`")
    _at(HEAD + "wg.copy S <- A[64 // (1 - cta_rank) : 128, :]", 6, 23, "division by zero in a region bound for "
                                                                       "cta_rank = 1")
    _at(HEAD + "wg.copy S <- A[64 // 0 : 128, :]", 6, 22, "division by zero in a region bound")
    _at(HEAD + "wg.copy S <- A[1-2 : 128, :]", 6, 16, "a slice start must be >= 0, got -1")
    err = _at(HEAD + "wg.copy B[0:64, 0:64] <- A[64*cta_rank : 64*cta_rank+128, :]", 6, 28,
              "index out of range for dimension of extent 128 for cta_rank = 1 (the bound is 64:192)")
    assert "every rank" in err.hint


def test_cta_rank_is_not_allowed_in_a_check_region():
    _at(HEAD + "check B[128*cta_rank : 128*cta_rank+128, :] == A", 6, 9, "`cta_rank` in a `check` region",
        hint="one check per rank")


def test_cta_rank_without_a_cluster_is_rank_zero():
    tp = check(parse("kernel k threads=128\nglobal A: float16[128, 64]\nglobal B: float16[128, 64]\n"
                     "wg.copy B[64*cta_rank : 64*cta_rank+64, :] <- A[64:128, :]"))
    (op,) = tp.copy_ops
    assert op.rank == 0 and op.dst.begins == (0, 0) and tp.cluster == 1


@pytest.mark.parametrize("value, mask", [("0b11", 3), ("0x3", 3), ("2", 2), ("0b1_0", 2)])
def test_cta_mask_is_an_integer_literal(value, mask):
    stmt = parse(HEAD + f"if tx == 0: thread.copy_async S <- A mbar=full cta_mask={value} dispatch=tma_auto").stmts[-1]
    opt = stmt.option("cta_mask")
    assert (opt.value, opt.expr) == (value, mask)
    assert stmt.option("dispatch").value == "tma_auto"  # the option after it is read as before


@pytest.mark.parametrize("value, col, fragment", [
    ("cta_rank", 57, "cta_mask is an integer literal"),
    ("1+1", 57, "cta_mask is an integer literal"),
    ("0", 57, "cta_mask must name at least one CTA"),
    ("0x10000", 57, "fit 16 bits"),
    ("abc", 57, "unknown name 'abc'"),
    ("0b12", 60, "unexpected '2'; expected"),
])
def test_cta_mask_errors(value, col, fragment):
    _at(HEAD + f"if tx == 0: thread.copy_async S <- A mbar=full cta_mask={value} dispatch=tma_auto", 6, col, fragment)


def test_async_options_are_copy_async_only():
    _at(HEAD + "wg.copy S <- A cta_mask=3", 6, 16, "`cta_mask=` is an option of `copy_async`")


def test_remote_cta_id_is_an_expression_in_cta_rank():
    src = HEAD + "shared R: float16[128, 64]\nif tx == 0: thread.copy_async R <- S remote_cta_id=(cta_rank + 1) % 2 mbar=full"
    opt = parse(src).stmts[-1].option("remote_cta_id")
    assert opt.value == "(cta_rank + 1) % 2" and [opt.expr.at(r) for r in (0, 1)] == [1, 0]
    _at("kernel k threads=32\nshared S: float32[32]\nshared R: float32[32]\nmbarrier m\n"
        "if tx == 0: thread.copy_async R <- S remote_cta_id=1 mbar=m", 5, 38,
        "`remote_cta_id=` names another CTA of the cluster, and this kernel has no cluster", hint="cluster=2")
    _at(HEAD + "shared R: float16[128, 64]\nif tx == 0: thread.copy_async R <- S remote_cta_id=cta_rank+1 mbar=full",
        7, 52, "remote_cta_id=cta_rank+1 is 2 for cta_rank = 1: the cluster has 2 CTAs")
    _at(HEAD + "shared R: float16[128, 64]\nif tx == 0: thread.copy_async R <- S remote_cta_id=1 // (1 - cta_rank) "
        "mbar=full", 7, 58, "division by zero in remote_cta_id for cta_rank = 1")


def test_use_tma_reduce_takes_the_reduction_operations():
    stmt = parse(HEAD + "if tx == 0: thread.copy_async A[0:64, :] <- S[0:64, :] use_tma_reduce=add").stmts[-1]
    assert stmt.option("use_tma_reduce").value == "add"
    _at(HEAD + "if tx == 0: thread.copy_async A[0:64, :] <- S[0:64, :] use_tma_reduce=addd", 6, 71,
        "unknown use_tma_reduce value 'addd'", hint="`use_tma_reduce=add`")


def test_a_cluster_needs_sm_90():
    err = _err("kernel k threads=32 cluster=2", arch="sm_80")
    assert (err.line, err.col) == (1, 21) and "a cluster needs sm_90 or newer; the target is sm_80" in err.message
    assert check(parse("kernel k threads=32 cluster=2"), arch="sm_100a").cluster == 2
