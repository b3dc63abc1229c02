"""Every cache of tilemagic, in one registry: :func:`clear_caches` empties them all.

A module that keeps state between cells registers a function that empties it, with a
line saying what it holds (``docs/architecture.md`` lists them).  The registry sits at the
bottom of the layers, so any stage may register; only modules that were imported have
registered, and a module that was never imported holds nothing to clear.
"""

from __future__ import annotations

from collections.abc import Callable

_REGISTRY: dict[str, tuple[Callable[[], object], str]] = {}


def register_cache(name: str, clear: Callable[[], object], what: str) -> None:
    """Register ``clear`` (called with no arguments) under ``name`` (``"module.cache"``); re-registering replaces."""
    _REGISTRY[name] = (clear, what)


def registered_caches() -> dict[str, str]:
    """``{name: what it holds}`` of the caches registered so far (modules imported so far)."""
    return {name: what for name, (_, what) in sorted(_REGISTRY.items())}


def clear_caches() -> list[str]:
    """Empty every registered cache (memory only; on-disk caches keep their files); return their names."""
    for clear, _ in _REGISTRY.values():
        clear()
    return sorted(_REGISTRY)
