"""A fresh, non-editable install in a read-only site directory runs ``fleetcast run``: every
cache goes to the user's cache folder, nothing is written inside the installed package."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

from tests.helpers import base_scenario

ROOT = Path(__file__).resolve().parents[1]


def _files(folder: Path) -> dict[str, int]:
    return {str(path.relative_to(folder)): path.stat().st_size for path in folder.rglob("*") if path.is_file()}


def _read_only(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


@pytest.mark.slow
def test_an_install_in_a_read_only_site_directory_runs(tmp_path):
    # The project's files as a source distribution holds them, built into a wheel and installed
    # (not editable) into a new virtual environment; the dependencies come from this one's.
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "simulator", source / "simulator", ignore=shutil.ignore_patterns("__pycache__"))
    venv = tmp_path / "venv"
    subprocess.run([sys.base_prefix + "/bin/python3", "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    (purelib / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    installed = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
                                "--no-deps", "--no-build-isolation", "--no-index", str(source)],
                               capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stderr[-2000:]
    package = purelib / "simulator"
    assert (package / "__init__.py").is_file() and not (purelib / "__editable__.fleetcast-0.1.0.pth").exists()
    _read_only(venv)
    before = _files(venv)

    scenario = tmp_path / "small.yaml"
    scenario.write_text(yaml.safe_dump(base_scenario(paths=2)))
    home = tmp_path / "home"
    unset = ("FLEETCAST_CACHE_DIR", "NUMBA_CACHE_DIR", "FLEETCAST_NUMBA_KEY", "XDG_CACHE_HOME", "PYTHONPATH")
    env = {key: value for key, value in os.environ.items() if key not in unset} | {"HOME": str(home)}
    done = subprocess.run([str(venv / "bin" / "fleetcast"), "run", str(scenario), "--out", str(tmp_path / "out"),
                           "--no-report", "-q"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "out" / "summary.json").is_file()
    # Nothing written inside the installed environment (root ignores the read-only bits, so this
    # is checked, not assumed); the compiled kernels are in the user's cache folder.
    assert _files(venv) == before
    compiled = list((home / ".cache" / "fleetcast").glob("numba-*/**/*.nbi"))
    assert compiled, "numba cached nothing in the user's cache folder"
    for path in [venv, *venv.rglob("*")]:  # let pytest remove the folder
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
