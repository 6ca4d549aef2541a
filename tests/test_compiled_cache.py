"""numba's cache folder is keyed by every compiled source, not by each function's own file."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from simulator import compiled_cache


def _copy_package(tmp_path):
    root = tmp_path / "simulator"
    shutil.copytree(compiled_cache.PACKAGE, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_a_change_to_a_callee_file_alone_changes_the_cache_folder(tmp_path):
    # The training loop inlines the step kernel's functions: numba, checking loop.py's own
    # file, would keep its stale machine code when only kernels.py changes.
    root = _copy_package(tmp_path)
    before = compiled_cache.source_key(root)
    assert compiled_cache.source_key(root) == before  # the same sources, the same folder
    kernels = root / "path" / "kernels.py"
    kernels.write_text(kernels.read_text() + "\n# an edit\n")
    edited = compiled_cache.source_key(root)
    assert edited != before
    app = root / "cli" / "app.py"  # nothing numba compiles: the compiled code stays valid
    app.write_text(app.read_text() + "\n# an edit\n")
    assert compiled_cache.source_key(root) == edited
    assert root / "path" / "training" / "loop.py" in compiled_cache.source_files(root)


def test_numba_caches_in_the_keyed_folder_also_in_worker_processes(tmp_path):
    env = {key: value for key, value in os.environ.items() if key not in ("NUMBA_CACHE_DIR", "FLEETCAST_NUMBA_KEY")}
    code = ("import simulator, numba, subprocess, sys; print(numba.config.CACHE_DIR); sys.stdout.flush(); "
            "subprocess.run([sys.executable, '-c', 'import simulator, numba; print(numba.config.CACHE_DIR)'])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    parent, child = done.stdout.split()
    key = compiled_cache.source_key()
    assert parent == child == str(compiled_cache.cache_directory(key, {}))
    assert parent.endswith(f"numba-{key}")
    # A folder the user chose holds the keyed one.
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "mine")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.stdout.split() == [str(tmp_path / "mine" / f"fleetcast-{key}")] * 2
