"""CPU backend: NumPy SIMT interpreter of the IR and the TMEM model."""

from .interpreter import Simulator, simulate  # noqa: F401
