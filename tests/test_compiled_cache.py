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


def _cache_dirs_seen(env):
    code = ("import simulator, numba, subprocess, sys; print(numba.config.CACHE_DIR); sys.stdout.flush(); "
            "subprocess.run([sys.executable, '-c', 'import simulator, numba; print(numba.config.CACHE_DIR)'])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def _clean_env(**extra):
    unset = ("NUMBA_CACHE_DIR", "FLEETCAST_NUMBA_KEY", "FLEETCAST_CACHE_DIR", "XDG_CACHE_HOME")
    env = {key: value for key, value in os.environ.items() if key not in unset}
    env.update(extra)
    return env


def test_numba_caches_in_the_keyed_folder_also_in_worker_processes(tmp_path):
    key = compiled_cache.source_key()
    # The user's cache folder by default (platformdirs: ~/.cache/fleetcast on Linux) ...
    home = tmp_path / "home"
    assert _cache_dirs_seen(_clean_env(HOME=str(home))) == [str(home / ".cache" / "fleetcast" / f"numba-{key}")] * 2
    assert (home / ".cache" / "fleetcast" / f"numba-{key}").is_dir()
    # ... the folder FLEETCAST_CACHE_DIR names when set ...
    root = tmp_path / "root"
    assert _cache_dirs_seen(_clean_env(FLEETCAST_CACHE_DIR=str(root))) == [str(root / f"numba-{key}")] * 2
    # ... and a folder the user chose for numba holds the keyed one.
    mine = tmp_path / "mine"
    seen = _cache_dirs_seen(_clean_env(FLEETCAST_CACHE_DIR=str(root), NUMBA_CACHE_DIR=str(mine)))
    assert seen == [str(mine / f"fleetcast-{key}")] * 2
    # Never inside the installed package.
    assert not list((compiled_cache.PACKAGE / "__pycache__").glob("numba-*"))


def test_the_capacity_cache_follows_the_same_root(tmp_path):
    from simulator import cache_dirs

    assert cache_dirs.capacity_cache({"FLEETCAST_CACHE_DIR": str(tmp_path)}) == tmp_path / "capacity"
    assert cache_dirs.compiled_cache("abc", {"FLEETCAST_CACHE_DIR": str(tmp_path)}) == tmp_path / "numba-abc"


def test_a_compiled_folder_unused_for_30_days_is_removed_when_another_is_used(tmp_path):
    from simulator import cache_dirs

    now = 1_800_000_000.0
    old, recent, other = tmp_path / "numba-old", tmp_path / "numba-recent", tmp_path / "capacity"
    for folder, age_days in ((old, 31), (recent, 29), (other, 400)):
        folder.mkdir()
        (folder / "f").write_text("x")
        os.utime(folder, (now - age_days * 86400, now - age_days * 86400))
    cache_dirs.mark_used(tmp_path / "numba-current", now)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["capacity", "numba-current", "numba-recent"]
    assert (tmp_path / "numba-current").stat().st_mtime == now


def test_the_cache_command_lists_and_clears(tmp_path):
    root = tmp_path / "root"
    (root / "capacity").mkdir(parents=True)
    (root / "capacity" / "curve.json").write_text("{}" * 500)
    env = _clean_env(FLEETCAST_CACHE_DIR=str(root))
    shown = subprocess.run([sys.executable, "-m", "simulator", "cache"], capture_output=True, text=True,
                           env=env, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert f"cache root: {root}" in shown.stdout
    assert "capacity" in shown.stdout and "1 files" in shown.stdout
    cleared = subprocess.run([sys.executable, "-m", "simulator", "cache", "--clear"], capture_output=True,
                             text=True, env=env, timeout=120)
    assert cleared.returncode == 0, cleared.stderr
    assert not (root / "capacity").exists() and not list(root.glob("numba-*"))
