"""CUDA code generation (native tcgen05 or emulated TMEM)."""
