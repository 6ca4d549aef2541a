"""Where paths run: in this process, on a local process pool, on a given
``concurrent.futures.Executor``, or on a Dask cluster; for one run or many at once.

:func:`task_runner` takes tasks by key (each a picklable ``task(seed, path)``) and yields a
function that runs ``(key, seed, path)`` items and yields ``(key, result)`` as they finish.
A local pool starts once and receives every task once per worker, when the worker starts;
a given Executor receives the task with each item; on Dask each item is a task, which the
scheduler reruns if its worker dies. A run that stops early (an error, an interrupt) cancels
what is still queued.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from typing import Any

from simulator.errors import RunFailedError

Task = Callable[[int, int], Any]
Work = Iterable[tuple[Hashable, int, int]]


def is_dask_client(executor: object) -> bool:
    return type(executor).__module__.startswith("distributed") and hasattr(executor, "gather")


def check_executor(executor: object) -> None:
    if not (is_dask_client(executor) or isinstance(executor, Executor) or executor in (None, "serial", "local")):
        raise ValueError(f"executor must be 'serial', 'local' or an Executor, got {executor!r}")


def local_workers(executor: object, workers: int | None, n_paths: int) -> int:
    """Worker processes of a local pool (0: the paths run in this process, or elsewhere)."""
    if executor not in (None, "local"):
        return 0
    workers = workers if workers is not None else (os.cpu_count() or 1)
    return 0 if workers <= 1 or n_paths == 1 else min(workers, n_paths)


@contextlib.contextmanager
def task_runner(tasks: Mapping[Hashable, Task], executor: str | Executor | None,
                processes: int) -> Iterator[Callable[[Work], Iterator[tuple[Hashable, Any]]]]:
    """A function that runs (key, seed, path) items and yields (key, result) as they finish,
    on one set of workers for as many calls as asked: on a Dask cluster, on a given
    Executor, else on a local pool of ``processes`` (0: here)."""
    if is_dask_client(executor):
        yield lambda work: _collect_dask(executor, tasks, work)
    elif isinstance(executor, Executor):
        yield lambda work: _collect(executor, work, lambda key, seed, path: (_call_task, tasks[key], seed, path))
    elif processes == 0:
        with _long_lived_objects_frozen():
            yield lambda work: ((key, tasks[key](seed, path)) for key, seed, path in work)
    else:
        with (_long_lived_objects_frozen(),
              ProcessPoolExecutor(max_workers=processes, initializer=_start_worker, initargs=(dict(tasks),)) as pool):
            yield lambda work: _collect(pool, work, lambda key, seed, path: (_call_installed, key, seed, path))


@contextlib.contextmanager
def _long_lived_objects_frozen() -> Iterator[None]:
    """The objects alive when the paths start (modules, the scenario, the compiled plan) are
    left out of Python's cyclic garbage collection while they run (``gc.freeze``): its full
    collections no longer walk them, in this process or in workers forked from it, where
    walking them also copied their pages (copy-on-write): 2 workers ran 3-7% more paths a
    second (launch.yaml, 400 paths). A freeze already in force (the caller's) is left alone."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _collect(executor: Executor, work: Work, call: Callable[[Hashable, int, int], tuple]
             ) -> Iterator[tuple[Hashable, Any]]:
    pending = {executor.submit(*call(key, seed, path)): key for key, seed, path in work}
    try:
        for future in as_completed(list(pending)):
            key = pending.pop(future)  # as_completed lets go of it too: its result is freed once used
            yield key, future.result()
    finally:
        for future in pending:
            future.cancel()


def _collect_dask(client: Any, tasks: Mapping[Hashable, Task], work: Work) -> Iterator[tuple[Hashable, Any]]:
    """Each item as a Dask task; each result is released on the cluster as soon as it is here."""
    from distributed import as_completed as dask_completed

    numbers = {key: number for number, key in enumerate(tasks)}
    pending = {}
    for key, seed, path in work:
        future = client.submit(tasks[key], seed, path, pure=False,
                               key=f"fleetcast-run{numbers[key]}-path-{path}-{id(tasks[key])}")
        pending[future.key] = (key, future)
    finished = dask_completed([future for _, future in pending.values()], loop=client.loop)
    try:
        for future in finished:
            key, _ = pending.pop(future.key)
            result = _dask_result(future)
            future.release()
            del future
            yield key, result
    except Exception as exc:
        if client.status == "running" and type(exc).__name__ not in _CONNECTION_LOST:
            raise
        raise RunFailedError(f"lost the connection to the Dask scheduler at {client.scheduler.address} "
                             f"({type(exc).__name__})") from None
    finally:  # a failed or interrupted run leaves nothing queued on the cluster
        if pending and client.status == "running":
            with contextlib.suppress(Exception):
                client.cancel([future for _, future in pending.values()])
        finished.clear()


#: What a Dask client raises once its scheduler is gone (stopped, killed, unreachable).
_CONNECTION_LOST = {"FutureCancelledError", "CancelledError", "CommClosedError"}


def _dask_result(future: Any) -> Any:
    """A finished Dask task's result; a task whose workers kept dying fails the run plainly."""
    try:
        return future.result()
    except Exception as exc:
        if type(exc).__name__ != "KilledWorker":
            raise
        raise RunFailedError(f"the Dask workers running a path died too often ({exc}); the cluster's "
                             "distributed.scheduler.allowed-failures sets how often a task may be "
                             "retried") from None


_INSTALLED: dict[Hashable, Task] = {}


def _start_worker(tasks: dict[Hashable, Task]) -> None:
    """Workers leave interrupts to the main process, which cleans up and stops them."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _INSTALLED.clear()
    _INSTALLED.update(tasks)


def _call_installed(key: Hashable, seed: int, path: int) -> Any:
    return _INSTALLED[key](seed, path)


def _call_task(task: Task, seed: int, path: int) -> Any:
    return task(seed, path)
