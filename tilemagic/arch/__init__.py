"""Hardware facts, each stated once (after CUTLASS CuTe DSL's ``cute/arch/``: one module per unit): thread
axes and scopes (:mod:`.threads`), PTX vector forms (:mod:`.ptx`), Tensor Memory (:mod:`.tcgen05`), the
``ldmatrix`` fragment (:mod:`.ldmatrix`), target limits (:mod:`.limits`).  Imports nothing from tilemagic."""
