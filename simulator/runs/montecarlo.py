"""Monte Carlo paths: seeds, executors, and the run as a whole.

Path ``i`` draws only from ``SeedSequence(seed, spawn_key=(i, ...))`` (see
:func:`simulator.path.streams.path_generator`), so results depend on the seed and the number of
paths, never on the executor or the number of workers. Paths run in this process when
``workers`` is 1 (or there is one path), else on a local process pool or any
``concurrent.futures`` executor (a Dask cluster's among them).

A scenario with uncertain inputs is compiled once per path, with that path's draws (each
input from its own ``STREAM_INPUTS`` stream keyed by its field path, so they disturb neither
each other nor any other draw of the path).
"""

from __future__ import annotations

import contextlib
import os
import signal
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from typing import Any

from simulator.errors import RunFailedError
from simulator.path.compiled import CompiledScenario, compile_scenario
from simulator.path.engine import run_path
from simulator.path.streams import STREAM_INPUTS, path_generator, stream_key
from simulator.runs.adaptive import Precision, next_total, parse_targets, status
from simulator.runs.digest import PathDigest, digest_path
from simulator.runs.limits import DEFAULT_KEEP_PATHS
from simulator.runs.resources import check_resources, estimate_run, memory_limit_bytes
from simulator.runs.results import Results, RunAggregator, kept_count
from simulator.scenario import Scenario, ScenarioError
from simulator.serving.resolve import load_scenario

ProgressCallback = Callable[[int, int], None]


class FleetcastNote(UserWarning):
    """Something a user should know about a run that still goes ahead (the CLI prints it)."""


def simulate(
    scenario: Scenario | str | os.PathLike[str] | dict[str, Any],
    paths: int | str | None = None,
    seed: int | None = None,
    executor: str | Executor | None = None,
    workers: int | None = None,
    progress: ProgressCallback | None = None,
    keep_paths: int | None = DEFAULT_KEEP_PATHS,
    precision: Precision | None = None,
    need: bool = False,
) -> Results:
    """Simulate a scenario over Monte Carlo paths.

    Args:
        scenario: a Scenario, or anything :func:`simulator.load_scenario` accepts.
        paths: number of paths (default: the scenario's ``paths``), or ``"auto"``: add paths
            in batches until ``precision`` is met (:mod:`simulator.runs.adaptive`).
        seed: root seed (default: the scenario's ``seed``).
        executor: ``"serial"``, ``"local"`` (a process pool, the default when more than one
            path and worker), a ``concurrent.futures.Executor`` to submit paths to, or a Dask
            ``distributed.Client`` (paths become Dask tasks, rerun if a worker dies).
        workers: processes of the local pool (default: the CPU count).
        progress: called as ``progress(done, total)`` after each path.
        keep_paths: how many paths (the first ones) keep their full series in
            ``timeseries``, ``pools``, ``models`` and ``jobs``; ``None`` keeps all. Bands,
            P&L, inputs and the summary always cover every path.
        precision: the targets of an auto run (default: :data:`~simulator.runs.adaptive.
            DEFAULT_TARGETS`, up to 5,000 paths); giving it makes the run auto.
        need: also gather each path's GPUs lacked per model and day (``Results.need``,
            :mod:`simulator.runs.need`), as the planner does.
    """
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    if paths == "auto" and precision is None:
        precision = Precision(parse_targets(None))
    if precision is not None:
        paths = min(max(precision.first, scenario.paths), precision.max_paths)
    scenario = with_paths_and_seed(scenario, paths, seed)
    check_executor(executor)
    most = precision.max_paths if precision is not None else scenario.paths
    kept = kept_count(most, keep_paths)
    local = local_workers(executor, workers, most)
    processes = check_resources(scenario, most, kept, local).workers
    if processes < local:
        warnings.warn(FleetcastNote(
            f"running on {processes or 1} process{'es' if processes > 1 else ''} instead of {local}: {local} would "
            f"need about {estimate_run(scenario, most, kept, local).memory_bytes / 1e9:,.1f} GB, more "
            f"than the {memory_limit_bytes() / 1e9:,.1f} GB available"), stacklevel=2)
    plan = compile_scenario(scenario)
    task = PathTask(scenario, plan, kept, need)
    aggregator = RunAggregator(scenario, scenario.paths, keep_paths)
    auto: dict[str, Any] | None = None
    try:
        with path_runner(task, scenario.seed, executor, processes) as run:
            done, total = 0, scenario.paths
            while True:
                for digest in run(range(done, total)):
                    aggregator.add(digest)
                    done += 1
                    if progress:
                        progress(done, total)
                if precision is None:
                    break
                state = status(aggregator.path_totals(), precision.targets)
                precision.batches.append(total)
                met = all(entry["met"] for entry in state.values())
                auto = {"met": met, "max_paths": precision.max_paths, "batches": list(precision.batches),
                        "targets": state}
                if met or total >= precision.max_paths:
                    break
                more = next_total(total, state, precision.max_paths) - total
                aggregator.extend(more, keep_paths)
                total += more
    except BaseException:
        aggregator.close()
        raise
    if auto is not None:
        aggregator.scenario = scenario.model_copy(update={"paths": aggregator.n_paths})
    results = aggregator.finish()
    if auto is not None:
        results.summary["paths_auto"] = auto
    return results


def with_paths_and_seed(scenario: Scenario, paths: int | None, seed: int | None) -> Scenario:
    """The scenario with its number of paths and root seed replaced where given."""
    update: dict[str, int] = {}
    if paths is not None:
        update["paths"] = int(paths)
    if seed is not None:
        update["seed"] = int(seed)
    return load_scenario(scenario, update) if update else scenario


def check_executor(executor: object) -> None:
    if not (is_dask_client(executor) or isinstance(executor, Executor) or executor in (None, "serial", "local")):
        raise ValueError(f"executor must be 'serial', 'local' or an Executor, got {executor!r}")


def local_workers(executor: object, workers: int | None, n_paths: int) -> int:
    """Worker processes of a local pool (0: the paths run in this process, or elsewhere)."""
    if executor not in (None, "local"):
        return 0
    workers = workers if workers is not None else (os.cpu_count() or 1)
    return 0 if workers <= 1 or n_paths == 1 else min(workers, n_paths)


class PathTask:
    """What a worker needs to simulate any path of a run and reduce it (picklable); paths
    below ``keep`` send their full tables back too."""

    def __init__(self, scenario: Scenario, plan: CompiledScenario, keep: int = 0, need: bool = False) -> None:
        self.scenario = scenario
        self.plan = plan
        self.keep = keep
        self.need = need
        self.uncertain_data = scenario.model_dump(mode="json") if scenario.uncertain else None

    def __call__(self, seed: int, path: int) -> PathDigest:
        if self.uncertain_data is None:
            return digest_path(run_path(self.plan, seed, path), self.scenario, self.plan, path < self.keep,
                               self.need)
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
        return digest_path(result, scenario, plan, path < self.keep, self.need)


def draw_inputs(data: dict[str, Any], seed: int, path: int) -> tuple[dict[str, Any], dict[str, float]]:
    """The scenario data of one path, its uncertain fields drawn; and the values drawn.

    Each input key (a field path, or a draw several fields share) takes its normal score from
    its own stream ``(path, STREAM_INPUTS, crc32(key))``; correlated keys are then mixed.
    """
    from simulator.scenario import Scenario
    from simulator.scenario.correlation import Correlation, copula_factor, mix
    from simulator.scenario.uncertain import apply_draws, copula_keys

    uncertain = data["uncertain"]
    base = {key: value for key, value in data.items() if key not in ("uncertain", "correlations", "fixed_inputs")}
    keys = copula_keys(uncertain, data.get("fixed_inputs") or [])
    scores = {key: float(path_generator(seed, path, STREAM_INPUTS, stream_key(key)).standard_normal())
              for key in sorted(set(keys.values()))}
    correlations = [Correlation.model_validate(entry) for entry in data.get("correlations") or ()]
    scores = mix(scores, copula_factor(correlations, keys))
    return apply_draws(base, uncertain, scores, Scenario)


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
    with path_runner(task, seed, executor, processes) as run:
        yield from _counted(run(range(n_paths)), n_paths, progress)


@contextlib.contextmanager
def path_runner(task: Callable[[int, int], Any], seed: int, executor: str | Executor | None,
                processes: int) -> Iterator[Callable[[range], Iterator[Any]]]:
    """A function that runs a range of paths and yields their results as they finish, on one
    set of workers for as many ranges as asked (a local pool starts once)."""
    if is_dask_client(executor):
        yield lambda paths: _collect_dask(executor, task, seed, paths)
    elif isinstance(executor, Executor):
        yield lambda paths: _collect(executor, task, seed, paths, _call_task)
    elif processes == 0:
        yield lambda paths: (task(seed, path) for path in paths)
    else:
        # The task travels once to each worker (not once per path).
        with ProcessPoolExecutor(max_workers=processes, initializer=_start_worker, initargs=(task,)) as pool:
            yield lambda paths: _collect(pool, None, seed, paths, _call_installed)


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


def is_dask_client(executor: object) -> bool:
    return type(executor).__module__.startswith("distributed") and hasattr(executor, "gather")


def _collect_dask(client: Any, task: PathTask, seed: int, paths: range) -> Iterator[PathDigest]:
    """Run paths as Dask tasks (the scheduler reruns a task whose worker died); each result is
    released on the cluster as soon as it is here."""
    from distributed import as_completed as dask_completed

    pending = {}
    for path in paths:
        future = client.submit(task, seed, path, pure=False, key=f"fleetcast-path-{path}-{id(task)}")
        pending[future.key] = future
    finished = dask_completed(list(pending.values()), loop=client.loop)
    try:
        for future in finished:
            del pending[future.key]
            digest = dask_digest(future)
            future.release()
            del future
            yield digest
    finally:  # a failed or interrupted run leaves nothing queued on the cluster
        if pending:
            client.cancel(list(pending.values()))
        finished.clear()


def dask_digest(future: Any) -> Any:
    """A finished Dask task's result; a task whose workers kept dying fails the run plainly."""
    try:
        return future.result()
    except Exception as exc:
        if type(exc).__name__ != "KilledWorker":
            raise
        raise RunFailedError(f"the Dask workers running a path died too often ({exc}); the cluster's "
                             "distributed.scheduler.allowed-failures sets how often a task may be "
                             "retried") from None


def _collect(executor: Executor, task: PathTask | None, seed: int, paths: range,
             call: Callable[..., PathDigest]) -> Iterator[PathDigest]:
    pending = {executor.submit(call, task, seed, path) for path in paths}
    try:
        for future in as_completed(pending):
            pending.discard(future)  # as_completed lets go of it too: its digest is freed once used
            yield future.result()
    finally:
        for future in pending:
            future.cancel()
