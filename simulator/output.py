"""Write a run directory atomically: all of it or none of it, and an earlier one whole.

Files are written into a hidden sibling directory, which is then renamed into place; an
earlier run at the same path is first moved aside and deleted only after the new one is in
place. A failure or an interrupt (an exception, Ctrl-C, SIGTERM turned into an exception
by the CLI) removes the temporary directory and puts the earlier run back.

A directory that exists but does not look like a Fleetcast run (no ``summary.json``) is
never replaced: ``--out ~`` must not delete a home directory.

The moment of putting outputs in place is marked (:func:`committing`, :func:`committed`) so
that a caller turning signals into exceptions can hold an interrupt there: once the new run
is in place the command has succeeded, and "interrupted, nothing was written" would be false.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from simulator.errors import InputError

RUN_MARKER = "summary.json"


class OutputError(InputError):
    """The output directory cannot be used."""


class _CommitState:
    """Where the current command's outputs are: being put in place, or in place."""

    committing = False
    committed = False


def committing() -> bool:
    """True from just before outputs are renamed into place until that is done or undone."""
    return _CommitState.committing


def committed() -> bool:
    """True once a command's outputs are in place (until :func:`reset_commit_state`)."""
    return _CommitState.committed


def reset_commit_state() -> None:
    """Forget an earlier command's commit (a process that runs several commands)."""
    _CommitState.committing = _CommitState.committed = False


@contextlib.contextmanager
def _commit() -> Iterator[None]:
    _CommitState.committing = True
    try:
        yield
        _CommitState.committed = True
    finally:
        _CommitState.committing = False


#: Beside ``scenario``, one of these is in every summary.json Fleetcast writes (a run or plan,
#: a sweep, a one-at-a-time or a variance sensitivity).
_SUMMARY_KEYS = {"paths", "points", "inputs", "method"}


def is_fleetcast_output(directory: Path) -> bool:
    """Whether ``directory``'s ``summary.json`` is one Fleetcast wrote: a JSON object naming
    its scenario (a run, a sweep, a sensitivity, a plan) or its comparison."""
    try:
        summary = json.loads((Path(directory) / RUN_MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(summary, dict) and ("comparison" in summary or "scenario" in summary and bool(
        _SUMMARY_KEYS & set(summary)))


def check_output_directory(directory: Path, inputs: Iterable[Path] = ()) -> None:
    """Raise :class:`OutputError` when writing ``directory`` would destroy other files,
    among them ``inputs`` (the scenario being run) when they lie inside it."""
    directory = Path(directory)
    if directory.is_symlink() and not directory.exists():
        raise OutputError(f"--out {directory}: is a symbolic link to nothing")
    if directory.exists() and not directory.is_dir():
        raise OutputError(f"--out {directory}: exists and is not a directory")
    if directory.is_dir() and any(directory.iterdir()) and not is_fleetcast_output(directory):
        raise OutputError(
            f"--out {directory}: exists and is not a Fleetcast run directory "
            f"(no {RUN_MARKER} that Fleetcast wrote); refusing to replace it"
        )
    if directory.is_dir():
        inside = [path for path in inputs if directory.resolve() in Path(path).resolve().parents]
        if inside:
            raise OutputError(f"--out {directory}: holds {inside[0]}, which this command reads and the new "
                              "output would replace; write elsewhere or move it out")
    # The nearest folder that exists must take a new directory (checked before any work).
    ancestor = directory.resolve().parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    try:
        Path(tempfile.mkdtemp(prefix=".fleetcast-write-check-", dir=ancestor)).rmdir()
    except OSError as exc:
        raise OutputError(f"--out {directory}: cannot write in {ancestor} ({exc.strerror or exc})") from None


@contextlib.contextmanager
def staged_directory(directory: Path) -> Iterator[Path]:
    """Yield an empty staging directory that replaces ``directory`` whole when the block ends.

    Write the files into the staging directory, ``summary.json`` last (a directory with it
    is complete). On any exception, including KeyboardInterrupt, nothing changes.
    """
    directory = Path(directory)
    check_output_directory(directory)
    parent = directory.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.partial-", dir=parent))
    aside: Path | None = None
    try:
        yield staging
        with _commit():
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


def write_run_files(
    target: Path,
    *,
    tables: Mapping[str, Any],
    summary: Mapping[str, Any],
    resolved_yaml: str,
    extra_files: Mapping[str, bytes] | None = None,
) -> None:
    """Write tables (Parquet: a DataFrame, or anything with its ``to_parquet(path, index=False)``),
    ``scenario.resolved.yaml``, extra files, then ``summary.json``."""
    target.mkdir(parents=True, exist_ok=True)
    for name, frame in tables.items():
        frame.to_parquet(target / name, index=False)
    (target / "scenario.resolved.yaml").write_text(resolved_yaml, encoding="utf-8")
    for name, payload in (extra_files or {}).items():
        path = target / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(payload)
    text = json.dumps(summary, indent=2, allow_nan=False)
    (target / RUN_MARKER).write_text(text + "\n", encoding="utf-8")


def write_text_atomically(path: Path, text: str) -> None:
    """Write a file whole or not at all (a temporary sibling renamed over it)."""
    path = Path(path)
    if path.is_dir():
        raise OutputError(f"--out {path}: is a directory")
    if path.is_symlink() or path.exists() and not path.is_file():  # /dev/null, a pipe, a link
        raise OutputError(f"--out {path}: exists and is not a regular file (a device, a pipe or a link); "
                          "refusing to replace it")
    parent = path.resolve().parent
    if not parent.is_dir():
        raise OutputError(f"--out {path}: no folder {parent}")
    handle = tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=parent, prefix=f".{path.name}.", delete=False)  # noqa: SIM115
    try:
        with handle:
            handle.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(handle.name, 0o666 & ~umask)  # as a plain open() would have made it
        with _commit():
            os.replace(handle.name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(handle.name)
        raise
