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

import warnings
from collections.abc import Callable, Hashable, Mapping
from concurrent.futures import Executor
from typing import Any, TypeVar

from simulator.path.compiled import compile_scenario
from simulator.runs.executors import check_executor, local_workers, task_runner
from simulator.runs.limits import DEFAULT_KEEP_PATHS
from simulator.runs.montecarlo import FleetcastNote, PathTask, ProgressCallback, with_paths_and_seed
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
        with task_runner(tasks, executor, processes) as run:
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
