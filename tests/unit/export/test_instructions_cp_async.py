"""``cp.async`` in the normalised instruction lists: TVM 0.27's ``T.ptx.cp(dst, src, cp_size, "async", "cg"|"ca",
"shared", "global", ...)`` (the TIR its ldgsts variant returns) and tilemagic's ``CpAsync`` both become
``cp.async.{cg,ca}.shared.global N B``, so ``--compare tvm`` compares the bytes per issue, not only the chain
(which is the same for the 4- and 8-byte ``.ca`` forms)."""

from cells import GMEM_SMEM_CASES, ldgsts_cell
from helpers import run

from tilemagic.export.instructions import Instr, instr_bytes, ours_instructions, summary_lines, tvm_instructions

# what TVM 0.27 prints for a warp-scope ldgsts of 8 bytes per issue, two issues per thread (T.unroll(2))
TVM_CA8 = '''
@T.prim_func
def impl():
    tid = T.thread_id_in_warp()
    for f in T.unroll(2):
        g_lin: T.int32 = f * 64 + tid * 2
        s_off: T.int32 = f * 64 + tid * 2
        S = T.Buffer((8, 16), scope="shared")
        s_ptr: T.let[T.handle] = T.cuda.func_call("tvm_builtin_pointer_offset", T.address_of(S[0, 0]), s_off)
        A = T.Buffer((8, 16))
        g_ptr: T.let[T.handle] = T.cuda.func_call("tvm_builtin_pointer_offset", T.address_of(A[0, 0]), g_lin)
        T.ptx.cp(T.cuda.cvta_generic_to_shared(s_ptr), g_ptr, 8, "async", "ca", "shared", "global", "", "", "")
'''


def test_tvm_cp_async_carries_its_cp_size():
    ins = tvm_instructions(TVM_CA8)
    assert ins == [Instr("cp.async.ca.shared.global", nbytes=8)] * 2
    assert summary_lines(ins) == ["cp.async.ca.shared.global 8 B ×2"]
    assert instr_bytes(ins[0]) == 8


def test_ours_cp_async_carries_its_bytes_and_counts_loop_trips():
    case = GMEM_SMEM_CASES[0]._replace(scope="thread", threads=1, rows=16, cols=32, dtype="float32", vec=4)
    res = run(ldgsts_cell(case), launch="off")  # a serial loop of 128 issues
    ours = ours_instructions(res.kernel)[6]
    assert summary_lines(ours) == ["cp.async.cg.shared.global 16 B ×128"]
    # a 4-byte and an 8-byte .ca issue differ although their chains are the same
    assert Instr("cp.async.ca.shared.global", nbytes=4).line() != Instr("cp.async.ca.shared.global", nbytes=8).line()
    assert instr_bytes(Instr("ld.global.v4.u32")) == 16 and instr_bytes(Instr("store")) is None
