"""Run a scenario the way the CLI does: choose the executor, show progress, return Results.

A Dask scheduler address runs the paths as tasks on that cluster (Dask reruns the task of
a worker that dies); otherwise paths run on a local process pool.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import Any

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from simulator.errors import RunConfigurationError
from simulator.montecarlo import simulate
from simulator.results import DEFAULT_KEEP_PATHS, Results
from simulator.scenario import Scenario
from simulator.variants import VariantResults, variant_scenarios


@contextlib.contextmanager
def dask_executor(address: str, timeout_s: float = 10.0) -> Iterator[Any]:
    """A client of the Dask cluster at ``address``; raise a clear error if unreachable."""
    from distributed import Client

    _check_reachable(address, min(timeout_s, 5.0))
    # Something listening that is not a Dask scheduler never completes the handshake, whatever
    # Client's own timeout says: connect in a daemon thread and give up after ``timeout_s``.
    outcome: list = []

    def connect() -> None:
        try:
            outcome.append(Client(address, timeout=timeout_s, set_as_default=False))
        except Exception as exc:  # noqa: BLE001 - reported below as one line
            outcome.append(exc)

    worker = threading.Thread(target=connect, daemon=True)
    worker.start()
    worker.join(timeout_s + 2.0)
    if not outcome:
        raise RunConfigurationError(f"--scheduler {address}: no Dask scheduler answered within {timeout_s:g} s")
    if isinstance(outcome[0], Exception):
        raise RunConfigurationError(f"--scheduler {address}: cannot connect ({outcome[0]})") from None
    client = outcome[0]
    try:
        yield client
    finally:
        client.close()


def _check_reachable(address: str, timeout_s: float) -> None:
    """Fail fast, with one line, when nothing listens at ``[tcp://]host:port``."""
    rest = address.split("://", 1)[1] if "://" in address else address
    host, sep, port = rest.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise RunConfigurationError(f"--scheduler {address}: expected an address such as tcp://10.0.0.5:8786")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise RunConfigurationError(f"--scheduler {address}: cannot connect ({exc.strerror or exc})") from None


def run_scenario(
    scenario: Scenario,
    *,
    paths: int | None = None,
    seed: int | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    keep_paths: int | None = DEFAULT_KEEP_PATHS,
    show_progress: bool = True,
) -> Results | VariantResults:
    """Simulate (every variant, when the scenario has some) with a progress bar on stderr."""
    if scenario.variants:
        return VariantResults({
            name: run_scenario(variant, paths=paths, seed=seed, workers=workers, scheduler=scheduler,
                               keep_paths=keep_paths, show_progress=show_progress)
            for name, variant in variant_scenarios(scenario).items()
        }, scenario)
    n_paths = paths or scenario.paths
    progress = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        transient=True,
        disable=not show_progress or n_paths < 2,
    )
    with progress, (dask_executor(scheduler) if scheduler else contextlib.nullcontext()) as executor:
        task = progress.add_task("paths", total=n_paths)
        return simulate(
            scenario,
            paths=paths,
            seed=seed,
            executor=executor,
            workers=workers,
            keep_paths=keep_paths,
            progress=lambda done, total: progress.update(task, completed=done),
        )
