"""Dispatch and lowering: typed program -> dispatched ops -> IR kernel.

Importing the package registers the ``copy`` and ``copy_async`` variants (an import side
effect, as TVM TIRx's ``tile_primitive`` packages do).
"""

from . import copy, copy_async  # noqa: F401
