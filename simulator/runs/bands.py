"""Per-step risk bands over all paths, in bounded memory.

Each path hands in its series of the :data:`BAND_COLUMNS` (float32, one row per column). A
:class:`BandStore` keeps them in memory while they are small and otherwise in a temporary
file (written with ``pwrite``, so the pages stay out of the process's resident memory).
When every path is in, :meth:`BandStore.bands` reads the store back one block of steps and
one column at a time and computes the exact quantiles of each step across paths (NumPy's
default, linear interpolation, as for the summary's quantiles) and the mean.

Memory: at most ``block_bytes`` of path values (plus their float64 copy) at a time, however
many paths; the disk holds ``paths × steps × columns × 4`` bytes (about 7.0 GB for 10,000
hourly path-years), removed when the store is closed. Values are stored as float32: a band
is exact for the stored values, within 6·10⁻⁸ relative of the float64 series.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

#: Series whose per-step spread is kept for every path (the fan charts of the report).
BAND_COLUMNS = (
    "demand_requests",
    "served_requests",
    "unserved_requests",
    "gpus_installed",
    "gpus_available",
    "gpus_inference",
    "gpus_training",
    "gpus_idle",
    "utilization",
    "slo_attainment",
    "shortfall_gpus",
    "short",
    "gpus_needed",
    "cost_usd",
    "cogs_usd",
    "rnd_compute_usd",
    "revenue_usd",
    "gross_margin_usd",
    "training_jobs_queued",
    "training_jobs_running",
)
BAND_QUANTILES = {"p5": 0.05, "p10": 0.10, "p50": 0.50, "p90": 0.90, "p95": 0.95}
#: Stores up to this size stay in memory.
IN_MEMORY_BYTES = 256 * 2**20


def path_series(timeseries: pd.DataFrame | Mapping[str, np.ndarray]) -> np.ndarray:
    """One path's band series: float32, shape (columns, steps). ``gpus_needed`` is the GPUs
    serving inference plus the shortfall: what demand asked for; ``short`` is 1 in a step of
    material shortfall (its mean over paths is the probability of being short then)."""
    needed = np.asarray(timeseries["gpus_inference"]) + np.asarray(timeseries["shortfall_gpus"])
    by_step = np.stack([np.asarray(needed if name == "gpus_needed" else timeseries[name], dtype=np.float32)
                        for name in BAND_COLUMNS], axis=1)
    return by_step.T  # laid out step by step, as the store keeps it (the worker transposes, not the main process)


def linear_quantiles(values: np.ndarray, quantiles: list[float]) -> np.ndarray:
    """Quantiles along axis 0 by linear interpolation (NumPy's default method), from one sort
    of the float32 values (for ten order statistics a sort beats ``np.partition``, which
    re-selects per statistic, and converting the block to float64 first); shape
    (len(quantiles), columns), float64."""
    n = values.shape[0]
    positions = np.asarray(quantiles) * (n - 1)
    below = np.floor(positions).astype(np.int64)
    above = np.minimum(below + 1, n - 1)
    selected = np.sort(values, axis=0)
    low = selected[below].astype(np.float64)
    high = selected[above].astype(np.float64)
    weight = (positions - below)[:, None]
    # NumPy's lerp: from the nearer end, so that equal neighbours give exactly that value.
    out = np.where(weight < 0.5, low + (high - low) * weight, high - (high - low) * (1 - weight))
    out[:, np.isnan(selected[-1])] = np.nan  # sorting puts NaN last; numpy's quantile of them is NaN
    return out


class BandFile:
    """The file of an on-disk :class:`BandStore` and its layout, without the store: what a
    worker process on the same machine needs to write its paths' series there itself
    (picklable; it opens the file on first use), so that they do not cross a pipe to the
    main process (about 0.7 MB a path-year) and the store only marks them in."""

    def __init__(self, file: Path, n_paths: int, n_steps: int, n_columns: int, block_steps: int) -> None:
        self.file, self.n_paths, self.n_steps = Path(file), n_paths, n_steps
        self.n_columns, self.block_steps = n_columns, block_steps
        self._fd: int | None = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_fd": None}

    @property
    def n_blocks(self) -> int:
        return -(-self.n_steps // self.block_steps)

    def block_region(self, block: int) -> int:
        """Byte offset of a block's region (every region has the full block's size)."""
        return block * self.n_paths * self.block_steps * self.n_columns * 4

    def write(self, path: int, series: np.ndarray, fd: int | None = None) -> None:
        """Write one path's series (``(columns, steps)``) into its slice of every block."""
        if series.shape != (self.n_columns, self.n_steps):
            raise ValueError(f"path {path}: band series of shape {series.shape}, expected "
                             f"{(self.n_columns, self.n_steps)}")
        if fd is None:
            if self._fd is None:
                self._fd = os.open(self.file, os.O_WRONLY)
            fd = self._fd
        by_step = np.ascontiguousarray(series.T, dtype=np.float32)  # (steps, metrics)
        slot = path * self.block_steps * self.n_columns * 4
        for block in range(self.n_blocks):
            data = by_step[block * self.block_steps:(block + 1) * self.block_steps].tobytes()
            written = os.pwrite(fd, data, self.block_region(block) + slot)
            if written != len(data):
                raise OSError(f"short write to the band store ({written} of {len(data)} bytes)")


class BandStore:
    """The band series of ``n_paths`` paths, added in any order, read back by step blocks
    (the :data:`BAND_COLUMNS`, or the ``columns`` given: each model's, say).

    On disk the file is laid out by blocks of steps: block *b* holds every path's values of
    steps ``[b·k, (b+1)·k)`` (path-major, then step, then metric), with ``k`` chosen so that a
    block is about ``block_bytes``. Adding a path writes its slice of each block (while the
    workers simulate, so it costs the run nothing); computing the bands reads each block in
    one call.
    """

    def __init__(self, n_paths: int, n_steps: int, *, spill_dir: str | os.PathLike[str] | None = None,
                 in_memory_bytes: int | None = None, block_bytes: int = 32 * 2**20,
                 columns: Sequence[str] = BAND_COLUMNS) -> None:
        in_memory_bytes = IN_MEMORY_BYTES if in_memory_bytes is None else in_memory_bytes
        self.columns = tuple(columns)
        self.n_paths, self.n_steps, self.n_columns = n_paths, n_steps, len(self.columns)
        self.block_steps = max(1, min(n_steps, block_bytes // max(1, 4 * n_paths * self.n_columns)))
        self.added = np.zeros(n_paths, dtype=bool)
        self._memory: np.ndarray | None = None
        self._folder: Path | None = None
        self._fd: int | None = None
        self._file: BandFile | None = None
        if n_paths * n_steps * self.n_columns * 4 <= in_memory_bytes:
            self._memory = np.zeros((n_paths, n_steps, self.n_columns), dtype=np.float32)
        else:
            self._folder = Path(tempfile.mkdtemp(prefix="fleetcast-bands-", dir=spill_dir))
            self._file = BandFile(self._folder / "series.f32", n_paths, n_steps, self.n_columns, self.block_steps)
            self._fd = os.open(self._file.file, os.O_RDWR | os.O_CREAT, 0o600)
            os.ftruncate(self._fd, self._file.block_region(self._file.n_blocks))

    @property
    def on_disk(self) -> bool:
        return self._fd is not None


    def add(self, path: int, series: np.ndarray) -> None:
        if self._file is not None:
            self._file.write(path, series, self._fd)
        elif series.shape != (self.n_columns, self.n_steps):
            raise ValueError(f"path {path}: band series of shape {series.shape}, expected "
                             f"{(self.n_columns, self.n_steps)}")
        else:
            self._memory[path] = series.T
        self.added[path] = True

    def shared_file(self) -> BandFile | None:
        """The store's file, for workers that write their paths there (None in memory)."""
        return self._file

    def mark_written(self, path: int) -> None:
        """Path ``path`` was written into :meth:`shared_file` by the worker that ran it."""
        if self._file is None:
            raise RuntimeError("a band store in memory has no file to write paths into")
        self.added[path] = True

    def bands(self, times: pd.DatetimeIndex) -> pd.DataFrame:
        """One row per (step, column): ``time, metric, mean, p5, p10, p50, p90, p95``."""
        return combined_bands([self], times)

    def check_complete(self) -> None:
        if not self.added.all():
            missing = np.flatnonzero(~self.added)
            raise RuntimeError(f"band store is missing {len(missing)} paths (first: {missing[0]})")

    def read_steps(self, start: int, stop: int) -> np.ndarray:
        """Every path's values of steps ``[start, stop)``: (paths, stop − start, metrics)."""
        first, last = start // self.block_steps, (stop - 1) // self.block_steps
        parts = []
        for block in range(first, last + 1):
            base = block * self.block_steps
            values = self._read(block, min(self.block_steps, self.n_steps - base))
            parts.append(values[:, max(start, base) - base:min(stop, base + self.block_steps) - base])
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)

    def _read(self, block: int, length: int) -> np.ndarray:
        """Every path's values of one block of steps: (paths, length, metrics)."""
        start = block * self.block_steps
        if self._memory is not None:
            return self._memory[:, start:start + length]
        buffer = np.empty((self.n_paths, self.block_steps, self.n_columns), dtype=np.float32)
        view = memoryview(buffer).cast("B")
        done, offset = 0, self._file.block_region(block)
        while done < len(view):  # one call, unless the kernel returns less
            read = os.preadv(self._fd, [view[done:]], offset + done)
            if read <= 0:
                raise OSError(f"short read from the band store ({done} of {len(view)} bytes)")
            done += read
        return buffer[:, :length]

    def close(self) -> None:
        self._memory = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None

    def __enter__(self) -> BandStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


def combined_bands(stores: list[BandStore], times: pd.DatetimeIndex, block_bytes: int = 32 * 2**20) -> pd.DataFrame:
    """The bands over the paths of several stores (a run that added paths in batches, all of
    the same columns): one row per (step, column), ``time, metric, mean, p5, p10, p50, p90, p95``."""
    for store in stores:
        store.check_complete()
    columns = stores[0].columns
    n_paths, n_steps, n_columns = sum(s.n_paths for s in stores), stores[0].n_steps, len(columns)
    span = stores[0].block_steps if len(stores) == 1 else max(1, min(n_steps, block_bytes // (4 * n_paths * n_columns)))
    out = np.empty((len(BAND_QUANTILES) + 1, n_steps, n_columns))

    def block(start: int) -> None:
        stop = min(n_steps, start + span)
        parts = [store.read_steps(start, stop) for store in stores]
        values = (parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)).reshape(n_paths, -1)
        out[0, start:stop] = values.mean(axis=0, dtype=np.float64).reshape(stop - start, -1)
        out[1:, start:stop] = linear_quantiles(values, list(BAND_QUANTILES.values())).reshape(
            len(BAND_QUANTILES), stop - start, -1)

    # Blocks on every core: reading, sorting and averaging let go of the GIL, and each block
    # writes its own steps of ``out`` (the same figures whatever the order).
    starts = range(0, n_steps, span)
    threads = min(os.cpu_count() or 1, len(starts))
    if threads > 1:
        with ThreadPoolExecutor(threads, thread_name_prefix="fleetcast-bands") as pool:
            list(pool.map(block, starts))
    else:
        for start in starts:
            block(start)
    frame = pd.DataFrame({
        "time": np.repeat(times.values, n_columns),
        "metric": pd.Categorical.from_codes(np.tile(np.arange(n_columns), n_steps), categories=list(columns)),
    })
    for index, name in enumerate(("mean", *BAND_QUANTILES)):
        frame[name] = out[index].reshape(-1)
    return frame
