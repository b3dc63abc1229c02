"""Hardware facts, each stated once (after CUTLASS CuTe DSL's ``cute/arch/``: one module per unit).

* :mod:`.threads` -- thread axes (``laneid`` ... ``tx``), execution scopes and their sizes;
* :mod:`.ptx` -- PTX vector ``ld``/``st`` forms, the targets whose ptxas accepts tcgen05;
* :mod:`.tcgen05` -- Tensor Memory: shapes, legal ``.num``, the per-thread (thread, register) ->
  (lane, column) mapping, allocation, and the emulation's status messages;
* :mod:`.ldmatrix` -- the warp-level ``ldmatrix``/``stmatrix`` ``.m8n8.b16`` fragment;
* :mod:`.limits` -- per-CTA resource limits of a target.

The layout algebra, the lowering, the printer, the code generator, the simulator and the
pictures read these tables; ``arch`` imports nothing from tilemagic (so any stage may use it).
"""
