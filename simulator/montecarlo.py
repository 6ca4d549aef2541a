"""Monte Carlo paths: seeds, executors, and the run as a whole.

Path ``i`` draws only from ``SeedSequence(seed, spawn_key=(i, ...))`` (see
:func:`simulator.engine.path_generator`), so results depend on the seed and the number of
paths, never on the executor or the number of workers. Paths run in this process when
``workers`` is 1 (or there is one path), else on a local process pool.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor
from typing import Any

from simulator.api import load_scenario
from simulator.compiled import CompiledScenario, compile_scenario
from simulator.engine import PathResult, run_path
from simulator.results import Results
from simulator.scenario import Scenario

ProgressCallback = Callable[[int, int], None]


def simulate(
    scenario: Scenario | str | os.PathLike[str] | dict[str, Any],
    paths: int | None = None,
    seed: int | None = None,
    executor: str | Executor | None = None,
    workers: int | None = None,
    progress: ProgressCallback | None = None,
) -> Results:
    """Simulate a scenario over Monte Carlo paths.

    Args:
        scenario: a Scenario, or anything :func:`simulator.load_scenario` accepts.
        paths: number of paths (default: the scenario's ``paths``).
        seed: root seed (default: the scenario's ``seed``).
        executor: ``"serial"``, ``"local"`` (a process pool, the default when more than one
            path and worker), or a ``concurrent.futures.Executor`` to submit paths to.
        workers: processes of the local pool (default: the CPU count).
        progress: called as ``progress(done, total)`` after each path.
    """
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    update: dict[str, int] = {}
    if paths is not None:
        update["paths"] = int(paths)
    if seed is not None:
        update["seed"] = int(seed)
    if update:
        scenario = load_scenario(scenario, update)
    plan = compile_scenario(scenario)
    results = _run_paths(plan, scenario.seed, scenario.paths, executor, workers, progress)
    return Results(scenario, results, plan)


def _run_paths(
    plan: CompiledScenario,
    seed: int,
    n_paths: int,
    executor: str | Executor | None,
    workers: int | None,
    progress: ProgressCallback | None,
) -> list[PathResult]:
    if workers is None:
        workers = os.cpu_count() or 1
    if isinstance(executor, Executor):
        return _collect(executor, plan, seed, n_paths, progress)
    if executor not in (None, "serial", "local"):
        raise ValueError(f"executor must be 'serial', 'local' or an Executor, got {executor!r}")
    if executor == "serial" or n_paths == 1 or workers <= 1:
        results = []
        for path in range(n_paths):
            results.append(run_path(plan, seed, path))
            if progress:
                progress(path + 1, n_paths)
        return results
    with ProcessPoolExecutor(max_workers=min(workers, n_paths)) as pool:
        return _collect(pool, plan, seed, n_paths, progress)


def _collect(
    executor: Executor, plan: CompiledScenario, seed: int, n_paths: int, progress: ProgressCallback | None
) -> list[PathResult]:
    futures = [executor.submit(run_path, plan, seed, path) for path in range(n_paths)]
    results = []
    for done, future in enumerate(futures, start=1):
        results.append(future.result())
        if progress:
            progress(done, n_paths)
    return results
