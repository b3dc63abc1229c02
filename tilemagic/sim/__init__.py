"""CPU backend: NumPy SIMT interpreter of the IR, the TMEM model and the happens-before tracker."""

from .hb import ClusterReceipt, HBReport, Hazard, SyncEvent, Tracker  # noqa: F401
from .interpreter import Simulator, simulate  # noqa: F401
