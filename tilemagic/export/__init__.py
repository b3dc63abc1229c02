"""Exports of a ``%%tilecopy`` program to other tools, and the differential comparison with TVM.

* :mod:`.tvmscript` -- the equivalent TVM TIRx program as TVMScript text (``--export tvmscript``,
  :meth:`~tilemagic.result.TileCopyResult.tvmscript`).
* :mod:`.instructions` -- one normalised instruction list per op, from tilemagic's IR and from the
  TVMScript TVM prints for a dispatched op (no TVM import needed).
* :mod:`.tvm_compare` -- ``--compare tvm``: TVM's ``LowerTIRx`` (and CUDA codegen) on the export,
  beside tilemagic's own lowering.  ``apache-tvm`` is imported only inside its functions.
"""

from .tvmscript import TvmScriptExport, export_tvmscript, tvmscript_from_source

__all__ = ["TvmScriptExport", "export_tvmscript", "tvmscript_from_source"]
