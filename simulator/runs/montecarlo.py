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
import dataclasses
import os
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from typing import Any

from simulator.path.compiled import CompiledScenario, compile_scenario
from simulator.path.engine import run_path
from simulator.path.streams import STREAM_INPUTS, path_generator, stream_key
from simulator.runs.adaptive import Precision, next_total, parse_targets, status
from simulator.runs.bands import BandFile
from simulator.runs.digest import PathDigest, digest_path
from simulator.runs.executors import check_executor, local_workers, task_runner
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
    lean: bool = False,
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
        lean: skip the per-model unit economics (``unit_economics`` empty): the planner's search
            runs read the risk, the need and the cash, not them.
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
    task = PathTask(scenario, plan, kept, need, lean)
    aggregator = RunAggregator(scenario, scenario.paths, keep_paths)
    if processes and precision is None:  # a local pool: its workers write the band file themselves
        task.band_file = aggregator.stores[0][1].shared_file()
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


class PathTask:
    """What a worker needs to simulate any path of a run and reduce it (picklable); paths
    below ``keep`` send their full tables back too."""

    def __init__(self, scenario: Scenario, plan: CompiledScenario, keep: int = 0, need: bool = False,
                 lean: bool = False) -> None:
        self.scenario = scenario
        self.plan = plan
        self.keep = keep
        self.need = need
        self.lean = lean
        self.uncertain_data = scenario.model_dump(mode="json") if scenario.uncertain else None
        #: Set when the paths run in processes of this machine and the run's band store is a
        #: file: each path's band series is written there, not sent back.
        self.band_file: BandFile | None = None

    def __call__(self, seed: int, path: int) -> PathDigest:
        digest = self._digest(seed, path)
        if self.band_file is not None:
            self.band_file.write(path, digest.series)
            digest.series = None
        return digest

    def _digest(self, seed: int, path: int) -> PathDigest:
        if self.uncertain_data is None:
            return digest_path(run_path(self.plan, seed, path), self.scenario, self.plan, path < self.keep,
                               self.need, self.lean)
        data, drawn = draw_inputs(self.uncertain_data, seed, path)
        try:
            scenario = load_scenario(data)
        except ScenarioError as exc:
            exc.message += (f" (drawn for path {path} from the field's distribution under 'uncertain'; "
                            "narrow it, or use a lognormal or triangular that stays in range)")
            exc.line = None
            raise
        # A re-planning policy forecasts from the scenario as written, not from this path's draws.
        plan = dataclasses.replace(compile_scenario(scenario), prior_demand=self.plan.expected_demand)
        result = run_path(plan, seed, path)
        result.inputs = drawn
        return digest_path(result, scenario, plan, path < self.keep, self.need, self.lean)


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
    with task_runner({0: task}, executor, processes) as run:
        yield lambda paths: (result for _, result in run((0, seed, path) for path in paths))


def _counted(digests: Iterator[PathDigest], n_paths: int, progress: ProgressCallback | None) -> Iterator[PathDigest]:
    for done, digest in enumerate(digests, start=1):
        yield digest
        if progress:
            progress(done, n_paths)
