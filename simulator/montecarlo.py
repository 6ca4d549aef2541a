"""Monte Carlo paths: seeds, executors, and the run as a whole.

Path ``i`` draws only from ``SeedSequence(seed, spawn_key=(i, ...))`` (see
:func:`simulator.engine.path_generator`), so results depend on the seed and the number of
paths, never on the executor or the number of workers. Paths run in this process when
``workers`` is 1 (or there is one path), else on a local process pool or any
``concurrent.futures`` executor (a Dask cluster's among them).

A scenario with uncertain inputs is compiled once per path, with that path's draws (from
its own ``STREAM_INPUTS`` stream, so they do not disturb any other draw of the path).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor
from typing import Any

from simulator.api import load_scenario
from simulator.compiled import CompiledScenario, compile_scenario
from simulator.engine import STREAM_INPUTS, path_generator, run_path
from simulator.results import PathTables, Results, path_tables
from simulator.scenario import Scenario, ScenarioError

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
            path and worker), a ``concurrent.futures.Executor`` to submit paths to, or a Dask
            ``distributed.Client`` (paths become Dask tasks, rerun if a worker dies).
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
    task = PathTask(scenario, plan)
    results = _run_paths(task, scenario.seed, scenario.paths, executor, workers, progress)
    return Results(scenario, results)


class PathTask:
    """What a worker needs to simulate any path of a run and tabulate it (picklable)."""

    def __init__(self, scenario: Scenario, plan: CompiledScenario) -> None:
        self.scenario = scenario
        self.plan = plan
        self.uncertain_data = scenario.model_dump(mode="json") if scenario.uncertain else None

    def __call__(self, seed: int, path: int) -> PathTables:
        if self.uncertain_data is None:
            return path_tables(run_path(self.plan, seed, path), self.scenario, self.plan)
        data, drawn = draw_inputs(self.uncertain_data, seed, path)
        try:
            scenario = load_scenario(data)
        except ScenarioError as exc:
            exc.message += (f" (drawn for path {path} from the field's distribution under 'uncertain'; "
                            "narrow it, or use a lognormal or triangular that stays in range)")
            exc.line = None
            raise
        plan = compile_scenario(scenario)
        result = run_path(plan, seed, path)
        result.inputs = drawn
        return path_tables(result, scenario, plan)


def draw_inputs(data: dict[str, Any], seed: int, path: int) -> tuple[dict[str, Any], dict[str, float]]:
    """The scenario data of one path, its uncertain fields drawn; and the values drawn."""
    from simulator.scenario import Scenario
    from simulator.scenario.loader import _set_path
    from simulator.scenario.uncertain import apply_draws

    uncertain = data["uncertain"]
    base = {key: value for key, value in data.items() if key != "uncertain"}
    rng = path_generator(seed, path, STREAM_INPUTS, 0)
    return apply_draws(base, uncertain, rng, Scenario, _set_path)


def _run_paths(
    task: PathTask,
    seed: int,
    n_paths: int,
    executor: str | Executor | None,
    workers: int | None,
    progress: ProgressCallback | None,
) -> list[PathTables]:
    if workers is None:
        workers = os.cpu_count() or 1
    if _is_dask_client(executor):
        return _collect_dask(executor, task, seed, n_paths, progress)
    if isinstance(executor, Executor):
        return _collect(executor, task, seed, n_paths, progress)
    if executor not in (None, "serial", "local"):
        raise ValueError(f"executor must be 'serial', 'local' or an Executor, got {executor!r}")
    if executor == "serial" or n_paths == 1 or workers <= 1:
        results = []
        for path in range(n_paths):
            results.append(task(seed, path))
            if progress:
                progress(path + 1, n_paths)
        return results
    with ProcessPoolExecutor(max_workers=min(workers, n_paths), initializer=_worker_signals) as pool:
        return _collect(pool, task, seed, n_paths, progress)


def _worker_signals() -> None:
    """Workers leave interrupts to the main process, which cleans up and stops them."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _is_dask_client(executor: object) -> bool:
    return type(executor).__module__.startswith("distributed") and hasattr(executor, "gather")


def _collect_dask(client: Any, task: PathTask, seed: int, n_paths: int,
                  progress: ProgressCallback | None) -> list[PathTables]:
    """Run paths as Dask tasks: the scheduler reruns a task whose worker died."""
    from distributed import as_completed

    futures = [client.submit(task, seed, path, pure=False, key=f"fleetcast-path-{path}-{id(task)}")
               for path in range(n_paths)]
    for done, _ in enumerate(as_completed(futures, loop=client.loop), start=1):
        if progress:
            progress(done, n_paths)
    return client.gather(futures)


def _collect(
    executor: Executor, task: PathTask, seed: int, n_paths: int, progress: ProgressCallback | None
) -> list[PathTables]:
    futures = [executor.submit(task, seed, path) for path in range(n_paths)]
    results = []
    for done, future in enumerate(futures, start=1):
        results.append(future.result())
        if progress:
            progress(done, n_paths)
    return results
