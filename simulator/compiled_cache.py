"""Where numba keeps the compiled kernels: a folder keyed by every compiled source.

numba checks a cached function against its own file only. The training loop
(``path/training/loop.py``) inlines functions of the step kernel (``path/kernels.py``), so a
change of ``kernels.py`` alone (an upgrade, a ``git pull``) would leave the loop's cached
machine code as it was: wrong results, or a crash. The cache folder is therefore named after a
hash of every source whose functions numba compiles; any change of one starts a fresh folder.

:func:`configure` runs when :mod:`simulator` is imported, before numba is: it sets
``NUMBA_CACHE_DIR`` (inherited by worker processes) to

- ``<cache root>/numba-<key>``, the cache root being ``$FLEETCAST_CACHE_DIR`` or the user's
  cache folder (:mod:`simulator.cache_dirs`): never inside the installed package, so an install
  in a read-only place, or one shared by several users, runs;
- ``$NUMBA_CACHE_DIR/fleetcast-<key>`` when the user set ``NUMBA_CACHE_DIR``.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from simulator import cache_dirs

PACKAGE = Path(__file__).resolve().parent

#: The sources numba compiles, and those they call (relative to the package; folders whole).
COMPILED_SOURCES = ("group_sums.py", "path", "serving/batching.py", "serving/kv_blocks.py", "serving/routing.py",
                    "serving/vllm_engine.py", "serving/vllm_layout.py", "serving/vllm_scheduling.py")

#: Set beside ``NUMBA_CACHE_DIR`` so that a worker process, which inherits both, keeps the folder.
_KEY_VARIABLE = "FLEETCAST_NUMBA_KEY"


def source_files(root: Path = PACKAGE) -> list[Path]:
    files: list[Path] = []
    for name in COMPILED_SOURCES:
        entry = root / name
        files.extend(sorted(entry.rglob("*.py")) if entry.is_dir() else [entry])
    return files


def source_key(root: Path = PACKAGE) -> str:
    """A hash of the compiled sources' paths and contents (16 hex digits)."""
    digest = hashlib.sha256()
    for file in source_files(root):
        digest.update(file.relative_to(root).as_posix().encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def cache_directory(key: str, environ: dict[str, str] | os._Environ = os.environ) -> Path:
    """The folder for ``key``, as described in the module's documentation."""
    given = environ.get("NUMBA_CACHE_DIR")
    if given and environ.get(_KEY_VARIABLE) == key:  # set by this module in a parent process
        return Path(given)
    if given:
        return Path(given) / f"fleetcast-{key}"
    return cache_dirs.compiled_cache(key, environ)


def configure() -> Path:
    """Point numba's cache at the folder of the current sources; return it."""
    key = source_key()
    chosen_by_this_module = os.environ.get(_KEY_VARIABLE) == key
    directory = cache_directory(key)
    if not os.environ.get("NUMBA_CACHE_DIR") and not chosen_by_this_module:
        cache_dirs.mark_used(directory)
    os.environ["NUMBA_CACHE_DIR"] = str(directory)
    os.environ[_KEY_VARIABLE] = key
    numba = sys.modules.get("numba")
    if numba is not None:  # imported before simulator: its configuration is already read
        numba.config.CACHE_DIR = str(directory)
    return directory
