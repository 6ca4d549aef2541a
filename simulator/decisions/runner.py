"""Run a scenario the way the CLI does: its variants too, on the executor asked for, with
progress on stderr.

A Dask scheduler address runs the paths as tasks on that cluster (Dask reruns the task of
a worker that dies; :func:`simulator.runs.cluster.dask_executor`); otherwise paths run on a
local process pool.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import replace

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from simulator.decisions.variants import VariantResults, variant_scenarios
from simulator.runs.adaptive import Precision
from simulator.runs.cluster import dask_executor
from simulator.runs.montecarlo import simulate
from simulator.runs.results import DEFAULT_KEEP_PATHS, Results
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
    """Simulate (every variant, when the scenario has some) with a progress bar on stderr."""
    if scenario.variants:
        return VariantResults({
            name: run_scenario(variant, paths=paths, seed=seed, workers=workers, scheduler=scheduler,
                               keep_paths=keep_paths, show_progress=show_progress,
                               precision=None if precision is None else replace(precision, batches=[]))
            for name, variant in variant_scenarios(scenario).items()
        }, scenario)
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
