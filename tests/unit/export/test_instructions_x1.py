"""TVM-side instruction extraction for one-register tcgen05 transfers (``.x1``): TVM passes the 1-word view
itself (``local_32b``) or a scalar register view (``T.decl_scalar(...).view("uint32")[0]``) instead of a
subscripted word; the register must still be read, and the address found by PTX operand order."""

from tilemagic.export.instructions import tvm_instructions

ST_VIEW = '''
@T.prim_func
def impl():
    a = T.Buffer((64, 4), "float16", scope="local")
    local_storage = T.decl_buffer((2,), "float16", data=a.data, scope="local")
    local_32b = local_storage.view("uint32")
    for slab in range(1):
        T.ptx.tcgen05(T.cuda.get_tmem_addr(T.uint32(0), (1 + slab) * 16, 3), local_32b, "st", "sync", "aligned", "16x64b", "x1", "", "b32", "")
'''

LD_SCALAR = '''
@T.prim_func
def impl():
    a = T.Buffer((64, 2), scope="local")
    local_storage = T.decl_scalar(T.float32, data=a.data, elem_offset=0, scope="local")
    local_32b = local_storage.view("uint32")
    T.ptx.tcgen05(local_32b[0], T.uint32(32), "ld", "sync", "aligned", "32x32b", "x1", "", "b32", "")
'''


def test_one_register_view_store():
    (ins,) = tvm_instructions(ST_VIEW)
    assert ins.chain == "tcgen05.st.sync.aligned.16x64b.x1.b32"
    assert (ins.row, ins.col, ins.regs) == (16, 3, (("a", 0),))


def test_one_scalar_register_load():
    (ins,) = tvm_instructions(LD_SCALAR)
    assert ins.chain == "tcgen05.ld.sync.aligned.32x32b.x1.b32"
    assert (ins.row, ins.col, ins.regs) == (0, 32, (("a", 0),))
