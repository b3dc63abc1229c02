"""Resource limits of the target (tilemagic/lower/limits.py): located errors before any code is generated."""

import pytest

import tilemagic
from tilemagic.errors import LoweringError, TileTypeError
from tilemagic.arch.limits import limits_for


def err(src, arch=None):
    with pytest.raises(tilemagic.TileMagicError) as ei:
        tilemagic.tilecopy(src, launch="off", emit_warnings=False, **({"arch": arch} if arch else {}))
    return ei.value


def test_limits_per_arch():
    assert limits_for("sm_100a").smem_per_cta == 227 * 1024 and limits_for("sm_100a").static_smem == 48 * 1024
    assert limits_for("sm_90").smem_per_cta == 227 * 1024
    assert limits_for("sm_120").smem_per_cta == 99 * 1024
    assert limits_for("sm_72").static_smem == 48 * 1024
    lim = limits_for("sm_100a")
    assert (lim.threads_per_cta, lim.regs_per_thread, lim.tmem_cols) == (1024, 255, 512)


def test_threads_per_cta():
    e = err("kernel k threads=1025\nglobal A: float32[4]\n")
    assert isinstance(e, TileTypeError) and (e.line, e.col) == (1, 10) and "1 to 1024 threads" in e.message


def test_static_shared_memory_counts_the_tmem_slot():
    full = "kernel k threads=128\nshared S: float32[12288]\n"  # exactly 48 KiB
    tilemagic.tilecopy(full, launch="off")
    e = err(full + "tmem T: float32[128, 32]\n")
    assert e.line == 2 and "and the 16-byte TMEM address slot need 49168 bytes" in e.message
    assert "49152 bytes (48 KiB) per CTA on sm_100a" in e.message
    e = err("kernel k threads=128\nshared S: float32[8192]\nshared U: float16[8193]\n", arch="sm_90")
    assert e.line == 3 and "up to 'U'" in e.message and "on sm_90" in e.message


def test_registers_per_thread():
    """More than 255 registers is a warning with ptxas's cost (tests/unit/runtime/test_costs.py); more than 8192
    elements per thread a located error."""
    ok = "kernel k threads=128\nlocal a: float32[128, 256] @ S[(128, 256) : (1@tid_in_wg, 1)]\n"
    tilemagic.tilecopy(ok, launch="off", emit_warnings=False)
    e = err("kernel k threads=4\nlocal a: float32[4, 8193] @ S[(4, 8193) : (1@laneid, 1)]\n")
    assert e.line == 2 and "'a' needs 8193 register elements per thread (at most 8192)" in e.message


def test_tmem_columns():
    e = err("kernel k threads=128\ntmem T: float32[128, 512]\ntmem U: float32[128, 32]\n")
    assert isinstance(e, LoweringError) and e.line == 3 and "544 32-bit columns exceeds the 512" in e.message


def test_global_buffers_count_and_bytes():
    e = err("global A: float32[200000000]\nglobal B: float32[100000000]\n")
    assert e.line == 2 and "limited to 1073741824 bytes (1 GiB) together" in e.message
    many = "\n".join(f"global G{i}: int8[1]" for i in range(513))
    e = err(many)
    assert e.line == 513 and "at most 512" in e.message


def test_limits_are_checked_before_code_generation(monkeypatch):
    import tilemagic.codegen.cuda as cuda

    def boom(*a, **k):
        raise AssertionError("generate() reached")

    monkeypatch.setattr(cuda, "generate", boom)
    e = err("kernel k threads=128\nshared S: float32[12289]\n")
    assert "49152 bytes (48 KiB)" in e.message
