"""Layout algebra (TIRx ``TileLayout``) and the layout factories.

* :mod:`.tile` -- :class:`Iter`, :class:`TileLayout` (apply, canonicalize, group,
  slice, spec text) after TVM TIRx ``tvm.tirx.layout`` (``apache-tvm 0.27.0.post1``).
* :mod:`.factories` -- ``row_major``, ``wg_local_layout``, ``tmem_datapath_layout``,
  ``tcgen05_atom_layout`` (sizes in elements).
* :mod:`.swizzle` -- ``ComposeLayout`` (a swizzle over a tile).

The hardware tables the layouts are checked against (thread axes, tcgen05) are in
:mod:`tilemagic.arch`.
"""

from . import factories, tile
from .factories import *  # noqa: F403
from .tile import *  # noqa: F403

__all__ = [*tile.__all__, *factories.__all__]
