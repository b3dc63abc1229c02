"""SASS instruction classes: which class an opcode of ``nvdisasm``/``cuobjdump -sass`` output belongs to.

SASS is not documented instruction by instruction; the opcode names and what they do are those of the CUDA
Binary Utilities manual ("Instruction Set Reference": the Blackwell and Hopper instruction tables, CUDA 13.0),
with the Blackwell tensor-memory and bulk-copy opcodes as nvdisasm 13 prints them for ``sm_100a`` code
(``LDTM``/``STTM`` for ``tcgen05.ld``/``st``, ``UTCATOMSWS``/``UTC*`` for TMEM allocation and ``tcgen05`` control,
``UBLKCP``/``UTMALDG``/``UTMASTG`` for bulk and TMA copies, ``LDGSTS`` for ``cp.async``, ``LDSM``/``STSM`` for
``ldmatrix``/``stmatrix``).  The first matching row of :data:`CLASSES` names the class; an opcode no row
matches is ``other``.
"""

from __future__ import annotations

import re

__all__ = ["CLASSES", "CLASS_NAMES", "classify", "opcode"]

#: (class, opcodes) in matching order; an opcode matches by its mnemonic before the first ``.``.
CLASSES: tuple[tuple[str, frozenset[str]], ...] = (
    ("global ld", frozenset({"LDG"})),
    ("global st", frozenset({"STG", "ATOMG", "RED", "REDG"})),
    ("generic ld/st", frozenset({"LD", "ST", "ATOM"})),
    ("shared ld", frozenset({"LDS"})),
    ("shared st", frozenset({"STS", "ATOMS"})),
    ("ldmatrix/stmatrix", frozenset({"LDSM", "STSM"})),
    ("TMEM ld/st", frozenset({"LDTM", "STTM"})),
    ("tcgen05 other", frozenset({"UTCATOMSWS", "UTCBAR", "UTCHMMA", "UTCMMA", "UTCCP", "UTCSHIFT", "UTCQMMA",
                                 "UTCOMMA", "UTCIMMA"})),
    ("cp.async", frozenset({"LDGSTS", "LDGDEPBAR"})),
    ("bulk/TMA", frozenset({"UBLKCP", "UBLKRED", "UBLKPF", "UTMALDG", "UTMASTG", "UTMAPF", "UTMACCTL",
                            "UTMACMDFLUSH", "UTMAREDG"})),
    ("local (spill)", frozenset({"LDL", "STL"})),
    ("barrier/sync", frozenset({"BAR", "BARRIER", "SYNCS", "MEMBAR", "FENCE", "WARPSYNC", "DEPBAR", "ERRBAR",
                                "CCTL", "UCGABAR_ARV", "UCGABAR_WAIT", "NANOSLEEP"})),
    ("int/address", frozenset({"IADD3", "IADD", "IMAD", "IMUL", "LEA", "SHF", "SHL", "SHR", "LOP3", "LOP",
                               "ISETP", "IABS", "IMNMX", "VIMNMX", "MOV", "SEL", "PRMT", "S2R", "S2UR", "CS2R",
                               "UIADD3", "UIMAD", "ULEA", "UMOV", "ULOP3", "USHF", "USEL", "UISETP", "UPRMT",
                               "R2UR", "FLO", "POPC", "BREV", "BMSK", "SGXT", "IDP", "VOTE", "VOTEU", "ELECT",
                               "PLOP3", "UPLOP3", "P2R", "R2P", "SHFL", "UFLO", "UPOPC", "UBMSK", "USGXT",
                               "UVIRTCOUNT", "LDC", "LDCU", "ULDC"})),
    ("call", frozenset({"CALL", "RET"})),
    ("control", frozenset({"BRA", "JMP", "JMX", "BRX", "EXIT", "NOP", "BSSY", "BSYNC", "BREAK", "YIELD", "BPT",
                           "KILL", "WARPGROUP", "ACQBULK", "ACQSHMINIT"})),
)
#: Every class name, in table order, then ``other``.
CLASS_NAMES: tuple[str, ...] = tuple(c for c, _ in CLASSES) + ("other",)

_INSTR = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*)((?:\.[A-Za-z0-9_]+)*)")


def opcode(line: str) -> str | None:
    """The opcode with its modifiers (``LDS.U8``, ``STS.128``) of one disassembled instruction line, or None
    for anything else (labels, directives, ``//## File`` line comments)."""
    m = _INSTR.search(line)
    return m.group(1) + m.group(2) if m else None


def classify(op: str) -> str:
    """The class of an opcode (``"LDS.U8"`` -> ``"shared ld"``; the mnemonic before the first ``.`` decides)."""
    base = op.split(".", 1)[0]
    return next((name for name, ops in CLASSES if base in ops), "other")
