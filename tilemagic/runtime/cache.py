"""Compiled-kernel cache on disk: NVRTC output (cubin or PTX) by CUDA source, options and arch.

Re-running an unchanged cell must not compile again.  Two layers do that:

* in memory, in the launch worker: :func:`tilemagic.runtime.compile.compile_cupy`
  keeps the loaded kernel of every source it compiled (for the life of the worker);
* on disk, here: the compiler's output, so a *restarted* worker (after a timeout, a
  crash, a sticky CUDA error, or a new notebook kernel) loads the binary instead of
  running NVRTC again.

The key (:func:`binary_key`) is a sha256 over the CUDA source as compiled, the
compiler options (including ``-arch``), the device's compute capability and the
compiler's identity (NVRTC and CuPy versions): anything that changes the binary
changes the key.  One file per key, ``<key>.cubin`` (an ELF image) or ``<key>.ptx``,
written to a temporary name and renamed (atomic on POSIX and Windows), so readers
never see a partial file and concurrent writers of one key are harmless.  A file
that fails to load is deleted and the kernel compiled again.  The directory is
pruned to :data:`MAX_DISK_BYTES`, oldest first.

Where: :func:`default_cache_dir` — ``$TILEMAGIC_CACHE_DIR`` when set (``off``
disables the disk layer), else the platform's user cache directory
(``$XDG_CACHE_HOME/tilemagic/kernels``, ``~/.cache/tilemagic/kernels``;
``~/Library/Caches/tilemagic/kernels`` on macOS; ``%LOCALAPPDATA%\\tilemagic\\Cache\\kernels``
on Windows).  Never inside the repository tilemagic runs from: such a directory is
refused (:func:`cache_dir_problem`) and the disk layer is off.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable, Sequence

#: Environment variable naming the cache directory (``off``, ``0``, ``none`` or empty: no disk cache).
ENV_DIR = "TILEMAGIC_CACHE_DIR"
#: Bytes the cache directory may hold before the oldest files are removed.
MAX_DISK_BYTES = 512 << 20
#: Bumped when the file layout or the key changes.
FORMAT = 1

_OFF = ("", "0", "off", "none", "false", "no")
_ELF = b"\x7fELF"


def default_cache_dir() -> Path | None:
    """The disk cache directory, or None when ``$TILEMAGIC_CACHE_DIR`` turns it off.

    See the module docstring for the order; the directory is not created here.
    """
    env = os.environ.get(ENV_DIR)
    if env is not None:
        if env.strip().lower() in _OFF:
            return None
        return Path(env).expanduser()
    home = Path.home()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or home / "AppData" / "Local")
        return base / "tilemagic" / "Cache" / "kernels"
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "tilemagic" / "kernels"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else home / ".cache"
    return base / "tilemagic" / "kernels"


def _repo_root() -> Path | None:
    """The source checkout tilemagic is imported from (a directory with ``.git`` above the package), if any."""
    here = Path(__file__).resolve().parent.parent  # .../tilemagic
    for parent in here.parents:
        if (parent / ".git").exists():
            return parent
    return None


def cache_dir_problem(directory: Path) -> str | None:
    """Why ``directory`` may not hold the cache (inside the tilemagic checkout), or None."""
    root = _repo_root()
    if root is None:
        return None
    try:
        Path(directory).resolve().relative_to(root)
    except ValueError:
        return None
    return f"{directory} is inside the tilemagic repository ({root}); the kernel cache never goes there"


def binary_key(text: str, options: Sequence[str], arch: str, compiler: str, device: str = "") -> str:
    """sha256 (hex) naming one compiler output.

    Parameters
    ----------
    text : str
        The CUDA source exactly as handed to the compiler.
    options : sequence of str
        Every compiler option (``-arch``, ``-std`` ...), in order.
    arch : str
        The target (``sm_100a``).
    compiler : str
        Compiler identity, e.g. ``"nvrtc 13.0 cupy 14.2.0"``: a new compiler gives new keys.
    device : str
        The device's compute capability (a cubin is specific to it).
    """
    h = hashlib.sha256()
    for part in (f"tilemagic-kernel-cache/{FORMAT}", text, "\x1f".join(options), arch, compiler, device):
        h.update(part.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()


@dataclass
class CacheStats:
    """Counts of :meth:`DiskCache.fetch` outcomes: ``hits`` (a file loaded), ``misses`` (compiled),
    ``bad`` (a file that failed to load, removed), ``writes`` and ``write_errors``."""

    hits: int = 0
    misses: int = 0
    bad: int = 0
    writes: int = 0
    write_errors: int = 0


@dataclass
class Fetched:
    """What :meth:`DiskCache.fetch` did: ``source`` is ``"disk"`` (loaded from ``path``) or
    ``"compiled"``; ``path`` is the cache file (None when the disk layer is off or the write failed)."""

    value: object
    source: str
    path: Path | None = None
    note: str = ""


@dataclass
class DiskCache:
    """The disk layer: compiler outputs by :func:`binary_key`.

    Parameters
    ----------
    directory : Path or None
        None disables the disk layer (every fetch compiles).  Default:
        :func:`default_cache_dir`.  A directory inside the tilemagic repository is refused
        (``disabled`` says why).
    max_bytes : int
        Size the directory is pruned to after a write (oldest files first).
    """

    directory: Path | None = field(default_factory=default_cache_dir)
    max_bytes: int = MAX_DISK_BYTES
    stats: CacheStats = field(default_factory=CacheStats)
    disabled: str = ""

    def __post_init__(self):
        if self.directory is not None:
            self.directory = Path(self.directory)
            problem = cache_dir_problem(self.directory)
            if problem:
                self.disabled, self.directory = problem, None
        elif not self.disabled:
            self.disabled = f"${ENV_DIR} turns the disk cache off"

    def path_for(self, key: str, binary: bytes = b"") -> Path | None:
        """Where the output for ``key`` lives (``.cubin`` for an ELF image, else ``.ptx``)."""
        if self.directory is None:
            return None
        return self.directory / f"{key}{'.cubin' if binary.startswith(_ELF) else '.ptx'}"

    def lookup(self, key: str) -> Path | None:
        """The existing file of ``key``, or None."""
        if self.directory is None:
            return None
        for ext in (".cubin", ".ptx"):
            p = self.directory / f"{key}{ext}"
            if p.is_file() and p.stat().st_size > 0:
                return p
        return None

    def store(self, key: str, binary: bytes) -> Path | None:
        """Write ``binary`` for ``key`` (temp file + rename); None when the disk layer is off or the write failed."""
        path = self.path_for(key, binary)
        if path is None:
            return None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=path.suffix, dir=path.parent)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(binary)
                os.replace(tmp, path)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
        except OSError:
            self.stats.write_errors += 1
            return None
        self.stats.writes += 1
        self.prune()
        return path

    def prune(self) -> int:
        """Remove the oldest cache files until the directory holds at most ``max_bytes``; returns files removed."""
        if self.directory is None:
            return 0
        try:
            files = [(p.stat().st_mtime, p.stat().st_size, p) for p in self.directory.iterdir()
                     if p.is_file() and p.suffix in (".cubin", ".ptx") and not p.name.startswith(".tmp-")]
        except OSError:
            return 0
        total = sum(size for _, size, _ in files)
        removed = 0
        for _, size, p in sorted(files, key=lambda t: t[0]):
            if total <= self.max_bytes:
                break
            try:
                p.unlink()
            except OSError:
                continue
            total -= size
            removed += 1
        return removed

    def fetch(self, key: str, compile_fn: Callable[[], bytes], load_fn: Callable[[Path, bytes], object]) -> Fetched:
        """Load the output of ``key`` from disk, else compile, store and load it.

        Parameters
        ----------
        compile_fn : callable () -> bytes
            Produces the binary (NVRTC); its exceptions (a compile error) propagate.
        load_fn : callable (path or None, bytes) -> object
            Loads a binary; given the cache file when there is one (its bytes are then
            ``b""`` on a disk hit), else the bytes.  A load that raises on a disk hit
            removes the file and compiles again; on a fresh binary it propagates.
        """
        path = self.lookup(key)
        if path is not None:
            try:
                value = load_fn(path, b"")
            except Exception as exc:  # noqa: BLE001 -- a truncated/corrupt/foreign file: compile again
                self.stats.bad += 1
                try:
                    path.unlink()
                except OSError:
                    pass
                note = f"removed a cache file that did not load ({type(exc).__name__})"
            else:
                self.stats.hits += 1
                return Fetched(value, "disk", path)
        else:
            note = ""
        binary = compile_fn()
        self.stats.misses += 1
        path = self.store(key, binary)
        return Fetched(load_fn(path, binary) if path is not None else load_fn(None, binary), "compiled", path, note)

    def clear(self) -> int:
        """Delete every cache file; returns how many."""
        if self.directory is None or not self.directory.is_dir():
            return 0
        n = 0
        for p in self.directory.iterdir():
            if p.is_file() and p.suffix in (".cubin", ".ptx"):
                try:
                    p.unlink()
                    n += 1
                except OSError:
                    pass
        return n
