"""PTX forms of the vector moves, and the sizes ``cp.async`` takes.

``ld``/``st`` move 1, 2, 4, 8 or 16 bytes per thread as one instruction (PTX ISA 9.0, data
movement instructions ``ld`` and ``st``: ``.u8``, ``.u16``, ``.u32``, ``.v2.u32``, ``.v4.u32``),
naturally aligned.  The register side is words of 16 bits (inline-asm constraint ``h``) or
32 bits (``r``).  Adding a form here is enough: the vectorised variants try it (widest first),
the printer and the code generator render it.
"""

from __future__ import annotations

#: Bytes per thread -> (PTX type suffix, register words, inline-asm constraint), widest first.
VEC_FORMS: dict[int, tuple[str, int, str]] = {
    16: ("v4.u32", 4, "r"), 8: ("v2.u32", 2, "r"), 4: ("u32", 1, "r"), 2: ("u16", 1, "h"), 1: ("u8", 1, "h"),
}
VEC_BYTES: tuple[int, ...] = tuple(VEC_FORMS)
#: Bytes per thread -> PTX type suffix (``16`` -> ``"v4.u32"``).
PTX_FORM: dict[int, str] = {n: f for n, (f, _, _) in VEC_FORMS.items()}

#: Bytes one ``cp.async.{ca,cg}.shared.global`` copies per thread, widest first (PTX ISA 9.0 §9.7.9.25.3.1:
#: ``cp-size`` 4, 8 or 16, naturally aligned; ``.cg`` only with 16, which :class:`tilemagic.ir.nodes.CpAsync`
#: spells).  ptxas 13.0 rejects ``cp-size`` 2 and ``.cg`` with 4 or 8.
CP_ASYNC_BYTES: tuple[int, ...] = (16, 8, 4)
#: ``cp.async`` needs ``sm_80`` or newer (PTX ISA 9.0 §9.7.9.25.3.1, "Target ISA notes").
CP_ASYNC_MIN_SM = 80


def word_bytes(nbytes: int) -> int:
    """Bytes of one register word of an ``nbytes`` vector move (4 for ``.v4.u32``, 2 for ``.u16``)."""
    _, words, _ = VEC_FORMS[nbytes]
    return nbytes // words
