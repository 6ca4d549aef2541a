"""Where Fleetcast keeps what it can recompute: one folder per user, never the installed package.

Two caches live under the *cache root*:

- ``numba-<key>/``: the machine code numba compiles for the kernels (see
  :mod:`simulator.compiled_cache`; ``<key>`` hashes the compiled sources, so an upgrade starts a
  fresh folder);
- ``capacity/``: the serving capacity curves a replica derives (one JSON file per hash of
  every input, :mod:`simulator.serving.capacity`).

The root is ``$FLEETCAST_CACHE_DIR`` when set, else the platform's user cache folder
(``platformdirs.user_cache_dir("fleetcast")``: ``~/.cache/fleetcast`` on Linux,
``~/Library/Caches/fleetcast`` on macOS, ``%LOCALAPPDATA%\\fleetcast\\Cache`` on Windows).
Both caches may be deleted at any time (``fleetcast cache --clear``); the next run rebuilds
what it needs. A compiled folder not used for :data:`UNUSED_DAYS` days (an older version's) is
removed when another version starts.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import platformdirs

#: The variable that moves every cache (set it for a read-only home, a shared machine, CI).
ROOT_VARIABLE = "FLEETCAST_CACHE_DIR"
#: A compiled-kernel folder unused this long is removed when another one is in use.
UNUSED_DAYS = 30


def cache_root(environ: dict[str, str] | os._Environ = os.environ) -> Path:
    """The folder holding both caches (see the module's documentation)."""
    given = environ.get(ROOT_VARIABLE)
    return Path(given) if given else Path(platformdirs.user_cache_dir("fleetcast", appauthor=False))


def capacity_cache(environ: dict[str, str] | os._Environ = os.environ) -> Path:
    """The folder of cached serving capacity curves."""
    return cache_root(environ) / "capacity"


def compiled_cache(key: str, environ: dict[str, str] | os._Environ = os.environ) -> Path:
    """The folder of the kernels compiled from the sources hashed to ``key``."""
    return cache_root(environ) / f"numba-{key}"


def mark_used(directory: Path, now: float | None = None) -> None:
    """Record that ``directory`` (a compiled-kernel folder) is in use, and remove siblings
    unused for :data:`UNUSED_DAYS` days. Never fails a run: a folder that cannot be created or
    touched (read-only, raced by another process) is left as it is."""
    now = time.time() if now is None else now
    try:
        directory.mkdir(parents=True, exist_ok=True)
        os.utime(directory, (now, now))
    except OSError:
        return
    for sibling in directory.parent.glob("numba-*"):
        try:
            if sibling != directory and now - sibling.stat().st_mtime > UNUSED_DAYS * 86400:
                shutil.rmtree(sibling, ignore_errors=True)
        except OSError:
            continue


@dataclass(frozen=True)
class CacheFolder:
    """One cache folder and what it holds."""

    path: Path
    what: str
    files: int
    bytes: int


def _size(path: Path) -> tuple[int, int]:
    files = [entry for entry in path.rglob("*") if entry.is_file()] if path.is_dir() else []
    return len(files), sum(entry.stat().st_size for entry in files)


def cache_folders(environ: dict[str, str] | os._Environ = os.environ) -> list[CacheFolder]:
    """The cache folders under the root that exist, with their file counts and sizes."""
    root = cache_root(environ)
    folders = sorted(root.glob("numba-*")) if root.is_dir() else []
    chosen = environ.get("NUMBA_CACHE_DIR")  # the keyed folder in use, where the user moved numba's cache
    if chosen and Path(chosen).name.startswith(("fleetcast-", "numba-")) and Path(chosen).is_dir() \
            and Path(chosen).parent != root:
        folders.append(Path(chosen))
    found = [CacheFolder(path, "compiled kernels", *_size(path)) for path in folders]
    capacity = capacity_cache(environ)
    if capacity.is_dir():
        found.append(CacheFolder(capacity, "serving capacity curves", *_size(capacity)))
    return found


def clear_caches(environ: dict[str, str] | os._Environ = os.environ) -> list[CacheFolder]:
    """Delete every cache folder under the root; return what was deleted."""
    folders = cache_folders(environ)
    for folder in folders:
        shutil.rmtree(folder.path, ignore_errors=True)
    return folders
