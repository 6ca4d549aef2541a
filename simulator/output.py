"""Write a run directory atomically: all of it or none of it, and an earlier one whole.

Files are written into a hidden sibling directory, which is then renamed into place; an
earlier run at the same path is first moved aside and deleted only after the new one is in
place. A failure or an interrupt (an exception, Ctrl-C, SIGTERM turned into an exception
by the CLI) removes the temporary directory and puts the earlier run back.

A directory that exists but does not look like a Fleetcast run (no ``summary.json``) is
never replaced: ``--out ~`` must not delete a home directory.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

RUN_MARKER = "summary.json"


class OutputError(ValueError):
    """The output directory cannot be used."""


def check_output_directory(directory: Path) -> None:
    """Raise :class:`OutputError` when writing ``directory`` would destroy other files."""
    if directory.exists() and not directory.is_dir():
        raise OutputError(f"--out {directory}: exists and is not a directory")
    if directory.is_dir() and any(directory.iterdir()) and not (directory / RUN_MARKER).exists():
        raise OutputError(
            f"--out {directory}: exists and is not a Fleetcast run directory "
            f"(no {RUN_MARKER}); refusing to replace it"
        )


def write_run_directory(
    directory: Path,
    *,
    tables: Mapping[str, pd.DataFrame],
    summary: Mapping[str, Any],
    resolved_yaml: str,
    extra_files: Mapping[str, bytes] | None = None,
) -> Path:
    """Write tables (Parquet), ``summary.json`` and ``scenario.resolved.yaml`` atomically."""
    directory = Path(directory)
    check_output_directory(directory)
    parent = directory.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.partial-", dir=parent))
    aside: Path | None = None
    try:
        for name, frame in tables.items():
            frame.to_parquet(staging / name, index=False)
        (staging / "scenario.resolved.yaml").write_text(resolved_yaml, encoding="utf-8")
        for name, payload in (extra_files or {}).items():
            target = staging / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(payload)
        # The marker goes last: a directory with summary.json is complete.
        text = json.dumps(summary, indent=2, allow_nan=False)
        (staging / RUN_MARKER).write_text(text + "\n", encoding="utf-8")
        os.chmod(staging, 0o755)
        if directory.exists():
            aside = Path(tempfile.mkdtemp(prefix=f".{directory.name}.previous-", dir=parent))
            os.rename(directory, aside / "run")
        os.rename(staging, directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        if aside is not None and (aside / "run").exists() and not directory.exists():
            os.rename(aside / "run", directory)
        if aside is not None:
            shutil.rmtree(aside, ignore_errors=True)
        raise
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)
    return directory
