"""Refuse a run up front when it cannot fit, instead of running out of memory or disk.

The estimate follows where a run's bytes go (measured on this code with ``VmHWM``, see
``tests/test_resources.py``): a worker holds one path at a time — the engine's arrays and
the path's tables and digest, about ``1800 + 250·pools + 220·models`` bytes per step, and for a
kept path its pool and model tables too (``400·pools + 270·models + 100`` more); the main process holds
the kept paths' tables (concatenated once at the end, so twice), the band store while it is
small, and the pooled training waits. A 25% margin is added. Band stores above 256 MB go to
a temporary file (``paths × steps × 20 × 4`` bytes), which must fit on that disk.

The limit is the memory the system reports available (``MemAvailable``), or
``FLEETCAST_MEMORY_LIMIT`` (e.g. ``8GB``) when set.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from dataclasses import dataclass

from simulator.errors import RunConfigurationError
from simulator.runs.bands import BAND_COLUMNS, IN_MEMORY_BYTES
from simulator.scenario import Scenario

# An interpreter with NumPy, pandas, SimPy and the kernels loaded: ~230 MB measured for a pool
# worker; the main process, when it runs the paths itself, may also be compiling the kernels
# and the training loop (numba's cache is cold on a fresh install): ~500 MB more (the probe of
# tests/test_extremes.py: 1.00 GB cold, 0.78 GB warm, 60 days of minute steps).
WORKER_BASE_BYTES = 400e6
MAIN_BASE_BYTES = 800e6
MARGIN = 1.25
TIMESERIES_BYTES_PER_ROW = 41 * 8


@dataclass(frozen=True)
class RunEstimate:
    steps: int
    paths: int
    kept: int
    workers: int
    worker_bytes: float  # one worker process at its peak
    main_bytes: float
    disk_bytes: float  # temporary band store

    @property
    def memory_bytes(self) -> float:
        return self.main_bytes + self.workers * self.worker_bytes


def estimate_run(scenario: Scenario, paths: int, kept: int, workers: int) -> RunEstimate:
    """What a run of ``paths`` paths (``kept`` of them whole) on ``workers`` local worker
    processes (0: paths run in the main process or on a remote cluster) needs at its peak."""
    steps = scenario.horizon.n_steps
    pools, models = len(scenario.fleet.pools), max(1, len(scenario.models))
    per_step = 1800 + 250 * pools + 220 * models
    kept_per_step = 400 * pools + 270 * models + 100
    path_bytes = steps * (per_step + (kept_per_step if kept else 0)) * MARGIN
    worker = WORKER_BASE_BYTES + path_bytes
    kept_tables = kept * steps * (TIMESERIES_BYTES_PER_ROW + 200 * pools + 126 * models) * 2
    band_bytes = paths * steps * len(BAND_COLUMNS) * 4
    jobs_per_path = sum(stream.arrivals_per_hour for stream in scenario.training.streams) * scenario.horizon.length_s / 3600
    waits = paths * (jobs_per_path + len(scenario.training.jobs)) * 8
    main = MAIN_BASE_BYTES + (kept_tables + min(band_bytes, IN_MEMORY_BYTES) + waits) * MARGIN
    if workers == 0:  # the main process runs the paths itself
        main += path_bytes
    disk = band_bytes if band_bytes > IN_MEMORY_BYTES else 0.0
    return RunEstimate(steps, paths, kept, workers, worker, main, disk)


def memory_limit_bytes() -> float:
    text = os.environ.get("FLEETCAST_MEMORY_LIMIT")
    if text:
        return _parse_bytes(text)
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    return float("inf")


def _parse_bytes(text: str) -> float:
    units = {"TIB": 2.0**40, "GIB": 2.0**30, "MIB": 2.0**20, "KIB": 2.0**10, "TB": 1e12, "GB": 1e9, "MB": 1e6,
             "KB": 1e3, "T": 1e12, "G": 1e9, "M": 1e6, "K": 1e3, "B": 1.0, "": 1.0}
    value = text.strip().upper()
    for suffix, size in units.items():
        if value.endswith(suffix):
            try:
                number = float(value[: len(value) - len(suffix)])
            except ValueError:
                continue
            if math.isfinite(number) and number > 0:
                return number * size
            break
    raise RunConfigurationError(f"FLEETCAST_MEMORY_LIMIT={text!r}: expected a positive size such as 8GB or 512MB")


def _gb(value: float) -> str:
    return f"{value / 1e9:,.1f} GB"


def check_resources(scenario: Scenario, paths: int, kept: int, workers: int) -> RunEstimate:
    """The estimate of a run that fits, with as many of the ``workers`` local processes as
    fit (``estimate.workers``; 0: run the paths in this process); raise a one-line
    :class:`RunConfigurationError` with settings that would fit when even that does not."""
    limit = memory_limit_bytes()
    for fewer in (n for n in range(workers, -1, -1) if n != 1):  # one worker is never better than none
        estimate = estimate_run(scenario, paths, kept, fewer)
        if estimate.memory_bytes <= limit:
            break
    else:
        raise RunConfigurationError(
            f"this run needs about {_gb(estimate.memory_bytes)} of memory even in one process "
            f"({estimate.steps:,} steps, {estimate.kept} kept paths), more than the {_gb(limit)} available; "
            f"{_suggestion(scenario, paths, kept, limit)}")
    if estimate.disk_bytes:
        folder = tempfile.gettempdir()
        free = shutil.disk_usage(folder).free
        if estimate.disk_bytes > 0.9 * free:
            raise RunConfigurationError(
                f"the per-step bands of {paths:,} paths × {estimate.steps:,} steps need {_gb(estimate.disk_bytes)} "
                f"of temporary disk, more than the {_gb(free)} free in {folder}; set TMPDIR to a larger disk, "
                "or use fewer paths or a coarser step")
    return estimate


STEPS = (("1min", 60), ("5min", 300), ("15min", 900), ("30min", 1800), ("1h", 3600), ("2h", 7200),
         ("3h", 10800), ("4h", 14400), ("6h", 21600), ("12h", 43200), ("1d", 86400))


def _suggestion(scenario: Scenario, paths: int, kept: int, limit: float) -> str:
    """Settings that make the run fit in one process, with what each would need."""
    hints = []
    if kept and (need := estimate_run(scenario, paths, 0, 0).memory_bytes) <= limit:
        hints.append(f"--keep-paths 0 (about {_gb(need)})")
    horizon = scenario.horizon
    for text, step_s in STEPS:
        count = horizon.length_s / step_s
        if step_s <= horizon.step_s or abs(count - round(count)) > 1e-9 * max(1.0, count):
            continue  # the horizon must stay a whole number of steps
        coarser = scenario.model_copy(update={"horizon": horizon.model_copy(update={"step": float(step_s)})})
        if (need := estimate_run(coarser, paths, kept, 0).memory_bytes) <= limit:
            hints.append(f"a coarser step, --set horizon.step={text} (about {_gb(need)})")
            break
    if not hints:
        return "shorten the horizon, or use a coarser step with --keep-paths 0"
    return "try " + ", or ".join(hints)
