"""Many runs on one executor: the variants of a scenario, the points of a sweep or of a
sensitivity study, with one count of paths over all of them.

:func:`simulate_all` submits every path of every run to the same workers, so a local pool
starts once (each worker loads the compiled kernels once and receives every run's task once,
not once per path), no worker idles while the last paths of one run finish before the next
run starts, and each run is finished (its tables reduced, its summary written) in this
process while the workers go on with the next. Each run's results are those
:func:`~simulator.runs.montecarlo.simulate` gives it alone: path ``i`` of a run draws from
that run's seed only, and digests are folded in path order whatever order they arrive in.
"""

from __future__ import annotations

import contextlib
import signal
import warnings
from collections.abc import Callable, Hashable, Iterator, Mapping
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from typing import Any, TypeVar

from simulator.path.compiled import compile_scenario
from simulator.runs.digest import PathDigest
from simulator.runs.limits import DEFAULT_KEEP_PATHS
from simulator.runs.montecarlo import (
    FleetcastNote,
    PathTask,
    ProgressCallback,
    check_executor,
    is_dask_client,
    local_workers,
    with_paths_and_seed,
)
from simulator.runs.resources import check_resources
from simulator.runs.results import Results, RunAggregator, kept_count
from simulator.scenario import Scenario

Key = TypeVar("Key", bound=Hashable)


def simulate_all(
    scenarios: Mapping[Key, Scenario],
    paths: int | None = None,
    seed: int | None = None,
    executor: str | Executor | None = None,
    workers: int | None = None,
    progress: ProgressCallback | None = None,
    keep_paths: int | None = DEFAULT_KEEP_PATHS,
    finish: Callable[[Key, Results], Any] | None = None,
) -> dict[Key, Any]:
    """Simulate every scenario of ``scenarios`` (resolved, without variants) on one executor.

    ``paths`` and ``seed`` apply to every run when given (else each scenario's own);
    ``executor``, ``workers`` and ``keep_paths`` are those of
    :func:`~simulator.runs.montecarlo.simulate`. ``progress(done, total)`` counts the paths
    of all runs. ``finish(key, results)``, when given, is called as each run completes and
    what it returns is kept instead of the results (a sweep keeps only the summary, so the
    runs' tables are let go as soon as each is done). Returns the runs by key, in the order
    of ``scenarios``.
    """
    check_executor(executor)
    runs = {key: with_paths_and_seed(scenario, paths, seed) for key, scenario in scenarios.items()}
    total = sum(scenario.paths for scenario in runs.values())
    # One path per run is simulated here, as simulate does (a pool would cost more to start).
    local = local_workers(executor, workers, total if any(s.paths > 1 for s in runs.values()) else 1)
    processes = min((check_resources(s, s.paths, kept_count(s.paths, keep_paths), local).workers
                     for s in runs.values()), default=0)
    if processes < local:
        warnings.warn(FleetcastNote(
            f"running on {processes or 1} process{'es' if processes > 1 else ''} instead of {local}: the "
            "memory available does not fit more"), stacklevel=2)
    tasks = {key: PathTask(s, compile_scenario(s), kept_count(s.paths, keep_paths)) for key, s in runs.items()}
    # A run's aggregator (its band store, its spill file) is made when its first path is in:
    # paths are submitted run by run, so only the runs in flight hold one.
    aggregators: dict[Key, RunAggregator] = {}
    left = {key: s.paths for key, s in runs.items()}
    out: dict[Key, Any] = {}
    work = [(key, runs[key].seed, path) for key in runs for path in range(runs[key].paths)]
    try:
        with _runner(tasks, executor, processes) as run:
            for done, (key, digest) in enumerate(run(work), start=1):
                if key not in aggregators:
                    aggregators[key] = RunAggregator(runs[key], runs[key].paths, keep_paths)
                aggregators[key].add(digest)
                left[key] -= 1
                if not left[key]:
                    results = aggregators.pop(key).finish()
                    out[key] = finish(key, results) if finish else results
                if progress:
                    progress(done, total)
    except BaseException:
        for aggregator in aggregators.values():
            aggregator.close()
        raise
    return {key: out[key] for key in runs}


Work = list[tuple[Hashable, int, int]]


@contextlib.contextmanager
def _runner(tasks: Mapping[Hashable, PathTask], executor: str | Executor | None,
            processes: int) -> Iterator[Callable[[Work], Iterator[tuple[Hashable, PathDigest]]]]:
    """A function that runs (run, seed, path) items and yields (run, digest) as they finish."""
    if is_dask_client(executor):
        yield lambda work: _collect_dask(executor, tasks, work)
    elif isinstance(executor, Executor):
        yield lambda work: _collect(executor, work, lambda key, seed, path: (_call_task, tasks[key], seed, path))
    elif processes == 0:
        yield lambda work: ((key, tasks[key](seed, path)) for key, seed, path in work)
    else:
        # Every run's task travels once to each worker, when it starts.
        with ProcessPoolExecutor(max_workers=processes, initializer=_start_worker, initargs=(dict(tasks),)) as pool:
            yield lambda work: _collect(pool, work, lambda key, seed, path: (_call_installed, key, seed, path))


def _collect(executor: Executor, work: Work, call: Callable[[Hashable, int, int], tuple]
             ) -> Iterator[tuple[Hashable, PathDigest]]:
    pending = {executor.submit(*call(key, seed, path)): key for key, seed, path in work}
    try:
        for future in as_completed(list(pending)):
            key = pending.pop(future)
            yield key, future.result()
    finally:
        for future in pending:
            future.cancel()


def _collect_dask(client: Any, tasks: Mapping[Hashable, PathTask], work: Work
                  ) -> Iterator[tuple[Hashable, PathDigest]]:
    from distributed import as_completed as dask_completed

    from simulator.runs.montecarlo import dask_digest

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
            digest = dask_digest(future)
            future.release()
            del future
            yield key, digest
    finally:
        if pending:
            client.cancel([future for _, future in pending.values()])
        finished.clear()


_INSTALLED: dict[Hashable, PathTask] = {}


def _start_worker(tasks: dict[Hashable, PathTask]) -> None:
    """Workers leave interrupts to the main process, which cleans up and stops them."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _INSTALLED.clear()
    _INSTALLED.update(tasks)


def _call_installed(key: Hashable, seed: int, path: int) -> PathDigest:
    return _INSTALLED[key](seed, path)


def _call_task(task: PathTask, seed: int, path: int) -> PathDigest:
    return task(seed, path)
