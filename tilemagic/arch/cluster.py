"""Thread-block clusters (PTX ISA 9.0 §10.16 ``%cluster_ctarank``, §9.7.13.3 ``barrier.cluster``, §11.7
``.reqnctapercluster``; CUDA C++ Programming Guide, "Thread Block Clusters").

A cluster is a group of CTAs launched together on one GPC; each CTA can map the shared memory of the others
(distributed shared memory, ``mapa``), TMA multicast writes one box into several of them, and
``barrier.cluster`` synchronises all their threads.  tilemagic's clusters are one-dimensional (x).
"""

from __future__ import annotations

#: the thread coordinate that numbers the CTAs of a cluster (``%cluster_ctarank``; TIRx ``cta_id_in_cluster``)
CTA_RANK = "cta_rank"
#: the largest portable cluster size (CTAs).  Larger clusters (up to 16 on sm_90) need the function attribute
#: ``cudaFuncAttributeNonPortableClusterSizeAllowed`` and are not portable across GPUs.
MAX_PORTABLE_CLUSTER = 8
#: bits of a TMA multicast ``ctaMask`` (PTX ISA 9.0 §9.7.9.25.5.2: a 16-bit mask, bit i = cluster rank i)
CTA_MASK_BITS = 16
#: the first architecture with clusters, DSMEM, TMA multicast and ``barrier.cluster``
MIN_SM = 90
#: ``cp.async.bulk`` (the non-tensor bulk copy, dsmem): the size is a multiple of 16 bytes and both shared
#: addresses are 16-byte aligned (PTX ISA 9.0 §9.7.9.25.4.1)
BULK_ALIGN = 16
