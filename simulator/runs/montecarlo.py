"""Monte Carlo paths: seeds, executors, and the run as a whole.

Path ``i`` draws only from ``SeedSequence(seed, spawn_key=(i, ...))`` (see
:func:`simulator.path.streams.path_generator`), so results depend on the seed and the number of
paths, never on the executor or the number of workers. Paths run in this process when
``workers`` is 1 (or there is one path), else on a local process pool or any
``concurrent.futures`` executor (a Dask cluster's among them).

A scenario with uncertain inputs is compiled once per path, with that path's draws (from
its own ``STREAM_INPUTS`` stream, so they do not disturb any other draw of the path).
"""

from __future__ import annotations

import os
import signal
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from typing import Any

from simulator.errors import RunFailedError
from simulator.path.compiled import CompiledScenario, compile_scenario
from simulator.path.engine import run_path
from simulator.path.streams import STREAM_INPUTS, path_generator
from simulator.runs.digest import PathDigest, digest_path
from simulator.runs.resources import check_resources, estimate_run, memory_limit_bytes
from simulator.runs.results import DEFAULT_KEEP_PATHS, Results, RunAggregator, kept_count
from simulator.scenario import Scenario, ScenarioError
from simulator.serving.resolve import load_scenario

ProgressCallback = Callable[[int, int], None]


class FleetcastNote(UserWarning):
    """Something a user should know about a run that still goes ahead (the CLI prints it)."""


def simulate(
    scenario: Scenario | str | os.PathLike[str] | dict[str, Any],
    paths: int | None = None,
    seed: int | None = None,
    executor: str | Executor | None = None,
    workers: int | None = None,
    progress: ProgressCallback | None = None,
    keep_paths: int | None = DEFAULT_KEEP_PATHS,
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
        keep_paths: how many paths (the first ones) keep their full series in
            ``timeseries``, ``pools``, ``models`` and ``jobs``; ``None`` keeps all. Bands,
            P&L, inputs and the summary always cover every path.
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
    if not (_is_dask_client(executor) or isinstance(executor, Executor) or executor in (None, "serial", "local")):
        raise ValueError(f"executor must be 'serial', 'local' or an Executor, got {executor!r}")
    kept = kept_count(scenario.paths, keep_paths)
    local = _local_workers(executor, workers, scenario.paths)
    processes = check_resources(scenario, scenario.paths, kept, local).workers
    if processes < local:
        warnings.warn(FleetcastNote(
            f"running on {processes or 1} process{'es' if processes > 1 else ''} instead of {local}: {local} would "
            f"need about {estimate_run(scenario, scenario.paths, kept, local).memory_bytes / 1e9:,.1f} GB, more "
            f"than the {memory_limit_bytes() / 1e9:,.1f} GB available"), stacklevel=2)
    plan = compile_scenario(scenario)
    task = PathTask(scenario, plan, kept)
    aggregator = RunAggregator(scenario, scenario.paths, keep_paths)
    try:
        for digest in _run_paths(task, scenario.seed, scenario.paths, executor, processes, progress):
            aggregator.add(digest)
    except BaseException:
        aggregator.close()
        raise
    return aggregator.finish()


def _local_workers(executor: object, workers: int | None, n_paths: int) -> int:
    """Worker processes of a local pool (0: the paths run in this process, or elsewhere)."""
    if executor not in (None, "local"):
        return 0
    workers = workers if workers is not None else (os.cpu_count() or 1)
    return 0 if workers <= 1 or n_paths == 1 else min(workers, n_paths)


class PathTask:
    """What a worker needs to simulate any path of a run and reduce it (picklable); paths
    below ``keep`` send their full tables back too."""

    def __init__(self, scenario: Scenario, plan: CompiledScenario, keep: int = 0) -> None:
        self.scenario = scenario
        self.plan = plan
        self.keep = keep
        self.uncertain_data = scenario.model_dump(mode="json") if scenario.uncertain else None

    def __call__(self, seed: int, path: int) -> PathDigest:
        if self.uncertain_data is None:
            return digest_path(run_path(self.plan, seed, path), self.scenario, self.plan, path < self.keep)
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
        return digest_path(result, scenario, plan, path < self.keep)


def draw_inputs(data: dict[str, Any], seed: int, path: int) -> tuple[dict[str, Any], dict[str, float]]:
    """The scenario data of one path, its uncertain fields drawn; and the values drawn."""
    from simulator.scenario import Scenario
    from simulator.scenario.uncertain import apply_draws

    uncertain = data["uncertain"]
    base = {key: value for key, value in data.items() if key != "uncertain"}
    rng = path_generator(seed, path, STREAM_INPUTS, 0)
    return apply_draws(base, uncertain, rng, Scenario)


def _run_paths(
    task: PathTask,
    seed: int,
    n_paths: int,
    executor: str | Executor | None,
    processes: int,
    progress: ProgressCallback | None,
) -> Iterator[PathDigest]:
    """Each path's digest, in the order paths finish (each one is let go once yielded): on a
    Dask cluster, on a given Executor, else on a local pool of ``processes`` (0: here)."""
    if _is_dask_client(executor):
        yield from _counted(_collect_dask(executor, task, seed, n_paths), n_paths, progress)
    elif isinstance(executor, Executor):
        yield from _counted(_collect(executor, task, seed, n_paths, _call_task), n_paths, progress)
    elif processes == 0:
        yield from _counted((task(seed, path) for path in range(n_paths)), n_paths, progress)
    else:
        # The task travels once to each worker (not once per path).
        with ProcessPoolExecutor(max_workers=processes, initializer=_start_worker, initargs=(task,)) as pool:
            yield from _counted(_collect(pool, None, seed, n_paths, _call_installed), n_paths, progress)


def _counted(digests: Iterator[PathDigest], n_paths: int, progress: ProgressCallback | None) -> Iterator[PathDigest]:
    for done, digest in enumerate(digests, start=1):
        yield digest
        if progress:
            progress(done, n_paths)


_INSTALLED: PathTask | None = None


def _start_worker(task: PathTask) -> None:
    """Workers leave interrupts to the main process, which cleans up and stops them."""
    global _INSTALLED
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _INSTALLED = task


def _call_installed(_: None, seed: int, path: int) -> PathDigest:
    return _INSTALLED(seed, path)


def _call_task(task: PathTask, seed: int, path: int) -> PathDigest:
    return task(seed, path)


def _is_dask_client(executor: object) -> bool:
    return type(executor).__module__.startswith("distributed") and hasattr(executor, "gather")


def _collect_dask(client: Any, task: PathTask, seed: int, n_paths: int) -> Iterator[PathDigest]:
    """Run paths as Dask tasks (the scheduler reruns a task whose worker died); each result is
    released on the cluster as soon as it is here."""
    from distributed import as_completed as dask_completed

    pending = {}
    for path in range(n_paths):
        future = client.submit(task, seed, path, pure=False, key=f"fleetcast-path-{path}-{id(task)}")
        pending[future.key] = future
    finished = dask_completed(list(pending.values()), loop=client.loop)
    try:
        for future in finished:
            del pending[future.key]
            try:
                digest = future.result()
            except Exception as exc:
                if type(exc).__name__ != "KilledWorker":
                    raise
                raise RunFailedError(f"the Dask workers running a path died too often ({exc}); the cluster's "
                                     "distributed.scheduler.allowed-failures sets how often a task may be "
                                     "retried") from None
            future.release()
            del future
            yield digest
    finally:  # a failed or interrupted run leaves nothing queued on the cluster
        if pending:
            client.cancel(list(pending.values()))
        finished.clear()


def _collect(executor: Executor, task: PathTask | None, seed: int, n_paths: int,
             call: Callable[..., PathDigest]) -> Iterator[PathDigest]:
    pending = {executor.submit(call, task, seed, path) for path in range(n_paths)}
    try:
        for future in as_completed(pending):
            pending.discard(future)  # as_completed lets go of it too: its digest is freed once used
            yield future.result()
    finally:
        for future in pending:
            future.cancel()
