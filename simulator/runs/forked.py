"""Independent pieces of work that only read what this process holds, side by side on the
machine's cores: the files and report of each run of a scenario with variants.

:func:`run_side_by_side` runs zero-argument callables, this process taking one and forked
children the others (a forked child sees this process's memory as it is, so nothing is
pickled: a run's tables of hundreds of megabytes are read in place). A child's error is
raised here with its type and message; an error or an interrupt here stops the children
before it goes on, so nothing writes once the caller's ``except`` runs (a staged directory
is then removed whole).

Children are forked only where that is safe: on Linux, and while this process runs no other
thread (a Dask client's, say: a fork copies only the calling thread, so a lock another
thread held would stay locked in the child). Elsewhere the calls run here one after another,
with the same results.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from multiprocessing.connection import wait

from simulator.errors import RunFailedError


def fork_is_safe() -> bool:
    """Whether children may be forked now (Linux, and no thread but this one)."""
    return sys.platform.startswith("linux") and threading.active_count() == 1


def run_side_by_side(calls: Sequence[Callable[[], object]], processes: int | None = None) -> None:
    """Run every call: up to ``processes`` children (default: the CPU count) while this
    process runs one call after another too (three equal calls on two cores take one and a
    half calls' time, not two); return when all are done, or raise the first error."""
    processes = processes or os.cpu_count() or 1
    if processes <= 1 or len(calls) <= 1 or not fork_is_safe():
        for call in calls:
            call()
        return
    import multiprocessing

    context = multiprocessing.get_context("fork")
    pending = list(calls)
    children: dict[int, tuple] = {}  # sentinel -> (process, reading end)
    try:
        while pending or children:
            while pending and len(children) < processes and len(pending) > 1:
                _flush_std_streams()  # a child must not write this process's buffered output again
                reader, writer = context.Pipe(duplex=False)
                child = context.Process(target=_child, args=(pending.pop(0), writer), daemon=True)
                child.start()
                writer.close()
                children[child.sentinel] = (child, reader)
            if pending:  # this process's share: the last call left
                pending.pop(0)()
                continue
            for sentinel in wait(list(children)):
                child, reader = children.pop(sentinel)
                error = _received(reader)
                reader.close()
                child.join()
                if error is not None:
                    raise error
                if child.exitcode != 0:
                    raise RunFailedError(f"a process writing the run's files stopped (exit code {child.exitcode})")
    except BaseException:
        for child, _ in children.values():
            child.terminate()
        for child, reader in children.values():
            child.join()
            reader.close()
        raise


def _received(reader) -> BaseException | None:  # noqa: ANN001 - a multiprocessing Connection
    """The error a finished child sent, if any (a child that ended well closed its end)."""
    try:
        return reader.recv() if reader.poll() else None
    except (EOFError, OSError):
        return None


def _stop(signum: int, frame: object) -> None:
    for cleanup in _CLEANUPS:
        with contextlib.suppress(Exception):
            cleanup()
    os._exit(128 + signum)


def _flush_std_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


#: What a child stopped by its parent must still do before it exits (remove temporary files
#: outside the staged directory, which the parent removes whole).
_CLEANUPS: list[Callable[[], object]] = []


def at_child_stop(cleanup: Callable[[], object]) -> Callable[[], object]:
    """Register ``cleanup`` to run when the parent stops a forked child (a decorator)."""
    _CLEANUPS.append(cleanup)
    return cleanup


def _child(call: Callable[[], object], writer) -> None:  # noqa: ANN001 - a multiprocessing Connection
    """In the forked child: interrupts are the parent's to handle; the parent stops a child
    with SIGTERM, which runs the registered cleanups and exits at once (raising there could
    land in a finalizer, where Python prints a traceback instead of stopping)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _stop)
    try:
        call()
    except BaseException as exc:  # noqa: BLE001 - sent to the parent, which raises it
        try:
            writer.send(exc)
        except Exception:  # noqa: BLE001 - one that does not pickle (or a parent gone: nothing to tell)
            with contextlib.suppress(Exception):
                writer.send(RuntimeError(f"{type(exc).__name__}: {exc}"))
        with contextlib.suppress(Exception):
            writer.close()
        os._exit(1)
    with contextlib.suppress(OSError):
        writer.close()
