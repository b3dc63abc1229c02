"""The mbarrier object (PTX ISA 9.0 §9.7.13.15.1): an opaque 64-bit object in shared memory, 8-byte aligned,
with an expected arrival count in [1, 2**20 - 1] and a transaction count (tx-count) in
[-(2**20 - 1), 2**20 - 1]."""

from __future__ import annotations

#: size and alignment of an mbarrier object in shared memory, bytes
MBAR_BYTES = 8
#: the largest expected arrival count (``mbarrier.init``'s count)
MBAR_MAX_COUNT = (1 << 20) - 1
#: the largest tx-count (so the largest ``expect_tx`` of one arrive)
MBAR_MAX_TX = (1 << 20) - 1
