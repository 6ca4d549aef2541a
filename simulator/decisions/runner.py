"""Run a scenario the way the CLI does: its variants too, on the executor asked for, with
progress on stderr.

A Dask scheduler address runs the paths as tasks on that cluster (Dask reruns the task of
a worker that dies; :func:`simulator.runs.cluster.dask_executor`); otherwise paths run on a
local process pool.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from simulator.decisions.variants import VariantResults, variant_scenarios
from simulator.runs.adaptive import Precision, variant_precision
from simulator.runs.batch import simulate_all
from simulator.runs.cluster import dask_executor
from simulator.runs.limits import DEFAULT_KEEP_PATHS
from simulator.runs.montecarlo import simulate
from simulator.runs.results import Results
from simulator.scenario import Scenario


def run_scenario(
    scenario: Scenario,
    *,
    paths: int | None = None,
    seed: int | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    keep_paths: int | None = DEFAULT_KEEP_PATHS,
    show_progress: bool = True,
    precision: Precision | None = None,
) -> Results | VariantResults:
    """Simulate (every variant, when the scenario has some) with a progress bar on stderr.

    Variants run together on one executor (:func:`simulator.runs.batch.simulate_all`), with
    one bar over all their paths; with ``precision`` (``--paths auto``) the base runs first
    and finds the number of paths every variant then runs.
    """
    if scenario.variants and precision is None:
        variants = variant_scenarios(scenario)
        runs = simulate_points(variants, paths=paths, seed=seed, workers=workers, scheduler=scheduler,
                               keep_paths=keep_paths, show_progress=show_progress, summaries_only=False)
        return VariantResults(runs, scenario)
    if scenario.variants:
        runs: dict[str, Results] = {}
        for name, variant in variant_scenarios(scenario).items():
            # With --paths auto the base finds the number of paths, and every variant runs
            # that many: variants are compared on the same paths (common random numbers).
            auto = not runs
            n = paths if auto else next(iter(runs.values())).summary["paths"]
            runs[name] = run_scenario(variant, paths=n, seed=seed, workers=workers, scheduler=scheduler,
                                      keep_paths=keep_paths, show_progress=show_progress,
                                      precision=replace(precision, batches=[]) if auto else None)
            if not auto:
                runs[name].summary["paths_auto"] = variant_precision(runs[name], precision, next(iter(runs)))
        return VariantResults(runs, scenario)
    n_paths = precision.max_paths if precision is not None else paths or scenario.paths
    with (progress_bar("paths", n_paths, show_progress and n_paths >= 2) as progress,
          dask_executor(scheduler) if scheduler else contextlib.nullcontext() as executor):
        return simulate(
            scenario,
            paths=paths,
            seed=seed,
            executor=executor,
            workers=workers,
            keep_paths=keep_paths,
            precision=precision,
            progress=progress,
        )


def simulate_points(
    scenarios: dict[Any, Scenario],
    *,
    paths: int | None = None,
    seed: int | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    keep_paths: int | None = DEFAULT_KEEP_PATHS,
    show_progress: bool = True,
    summaries_only: bool = True,
) -> dict[Any, Any]:
    """Simulate named scenarios together on one executor, with one progress bar over all
    their paths: each one's summary (or, ``summaries_only=False``, its results)."""
    total = sum(paths or s.paths for s in scenarios.values())
    with (progress_bar(f"{len(scenarios)} runs, paths", total, show_progress and total >= 2) as progress,
          dask_executor(scheduler) if scheduler else contextlib.nullcontext() as executor):
        return simulate_all(scenarios, paths=paths, seed=seed, executor=executor, workers=workers,
                            progress=progress, keep_paths=keep_paths,
                            finish=(lambda key, results: results.summary) if summaries_only else None)


@contextlib.contextmanager
def progress_bar(description: str, total: int | None = None, show: bool = True) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr while the block runs (gone after it); yields the
    ``progress(done, total)`` callback to give a run."""
    progress = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        transient=True,
        disable=not show,
    )
    with progress:
        task = progress.add_task(description, total=total)
        yield lambda done, total: progress.update(task, completed=done, total=total)


@contextlib.contextmanager
def stage_progress_bar(show: bool = True) -> Iterator[Callable[[str, int, int], None]]:
    """One progress bar on stderr over a series of simulations: ``progress(stage, done,
    total)`` names the simulation running and counts its paths; each new stage starts the
    bar again and counts one more simulation. Where stderr is not a terminal (a log, CI), a bar
    would print nothing: each stage is one line there instead."""
    progress = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=True,
        disable=not show,
    )
    stages: list[str] = []
    with progress:
        task = progress.add_task("starting", total=None)

        def update(stage: str, done: int, total: int) -> None:
            if not stages or stages[-1] != stage:
                stages.append(stage)
                if show and not progress.console.is_terminal:
                    print(f"simulation {len(stages)}: {stage} ({total:,} paths)", file=sys.stderr, flush=True)
            progress.update(task, description=f"simulation {len(stages)}: {stage}", completed=done, total=total)

        yield update
