"""What a run returns: the tables, the bands, the summary, and how to save them.

Paths arrive from the workers in any order as :class:`~simulator.runs.digest.PathDigest`; a
:class:`RunAggregator` folds each one in as it arrives and keeps only what the run's output
needs: every path's totals, monthly P&L and inputs (small), the band series of every path
(in a :class:`~simulator.runs.bands.BandStore`, on disk when large), the pooled training waits
(in a temporary file), and the full tables of the first ``keep_paths`` paths. Everything is
put in path order at the end, so results do not depend on the order in which paths finish.

``Results.timeseries``, ``.pools``, ``.models`` and ``.jobs`` hold the kept paths (one row
per path and step, per pool, per model, per job); ``.pnl`` and ``.inputs`` every path;
``.bands`` the per-step quantiles over every path; ``.summary`` the dict written to
``summary.json``. ``Results.save(dir)`` writes the run directory atomically.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulator.output import staged_directory, write_run_files
from simulator.runs.bands import BandStore
from simulator.runs.digest import PathDigest, TrainingDigest
from simulator.runs.summary import input_quantiles, summarize, training_summary
from simulator.scenario import Scenario, dump_scenario

#: Paths whose full series a run keeps unless told otherwise (``--keep-paths``).
DEFAULT_KEEP_PATHS = 20
_PNL_CHUNK = 256


def kept_count(n_paths: int, keep_paths: int | None) -> int:
    """How many paths (the first ones) a run keeps in full; ``None`` keeps all."""
    return n_paths if keep_paths is None else max(0, min(int(keep_paths), n_paths))


class RunAggregator:
    """Folds path digests into the results of a run, in bounded memory."""

    def __init__(self, scenario: Scenario, n_paths: int, keep_paths: int | None,
                 spill_dir: str | None = None) -> None:
        self.scenario = scenario
        self.n_paths = n_paths
        self.keep = kept_count(n_paths, keep_paths)
        self.store = BandStore(n_paths, scenario.horizon.n_steps, spill_dir=spill_dir)
        self.totals: dict[int, dict[str, Any]] = {}
        self.inputs: dict[int, dict[str, float]] = {}
        self.training: dict[int, TrainingDigest] = {}
        self.kept: dict[int, Any] = {}
        self._pnl_chunks: list[pd.DataFrame] = []
        self._pnl_pending: list[pd.DataFrame] = []
        self._waits = tempfile.TemporaryFile(dir=spill_dir)  # noqa: SIM115 - closed by close()
        self._n_waits = 0

    def add(self, digest: PathDigest) -> None:
        path = digest.path
        if path in self.totals:
            raise ValueError(f"path {path} was added twice")
        self.store.add(path, digest.series)
        self.totals[path] = digest.totals
        if digest.inputs:
            self.inputs[path] = digest.inputs
        if digest.training is not None:
            self._waits.write(digest.training.waits_s.tobytes())
            self._n_waits += len(digest.training.waits_s)
            digest.training.waits_s = np.empty(0)
            self.training[path] = digest.training
        if digest.tables is not None:
            self.kept[path] = digest.tables
        self._pnl_pending.append(digest.pnl)
        if len(self._pnl_pending) >= _PNL_CHUNK:
            self._pnl_chunks.append(pd.concat(self._pnl_pending, ignore_index=True))
            self._pnl_pending = []

    def finish(self) -> Results:
        """The run's results (path order); the aggregator's temporary files are removed."""
        if len(self.totals) != self.n_paths:
            raise RuntimeError(f"{self.n_paths - len(self.totals)} of {self.n_paths} paths never arrived")
        try:
            scenario = self.scenario
            bands = self.store.bands(scenario.horizon.times())
            pnl = _concat(self._pnl_chunks + self._pnl_pending)
            pnl = pnl.sort_values(["path", "month"], kind="stable", ignore_index=True)
            totals = pd.DataFrame.from_dict(self.totals, orient="index").sort_index()
            totals.index.name = "path"
            self._waits.seek(0)
            waits = np.fromfile(self._waits, dtype=np.float64, count=self._n_waits)
            summary = summarize(scenario, totals, pnl, training_summary(self.training, waits))
            del waits
            inputs = pd.DataFrame([{"path": path, **self.inputs[path]} for path in sorted(self.inputs)],
                                  columns=["path", *sorted(scenario.uncertain)])
            if scenario.uncertain:
                summary["inputs"] = input_quantiles(inputs)
                for entry in summary["per_path"]:
                    drawn = self.inputs[entry["path"]]
                    entry["inputs"] = {key: float(drawn[key]) for key in scenario.uncertain}
            summary["kept_paths"] = self.keep
            kept = [self.kept[path] for path in sorted(self.kept)]
            return Results(
                scenario,
                timeseries=_concat([t.timeseries for t in kept]),
                pools=_concat([t.pools for t in kept]),
                models=_concat([t.models for t in kept]),
                jobs=_concat([t.jobs for t in kept]),
                pnl=pnl,
                inputs=inputs,
                bands=bands,
                summary=summary,
            )
        finally:
            self.close()

    def close(self) -> None:
        self.store.close()
        self._waits.close()


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    if not frames:
        return pd.DataFrame()
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)


class Results:
    """Tables, bands and summary of a simulated scenario."""

    def __init__(self, scenario: Scenario, *, timeseries: pd.DataFrame, pools: pd.DataFrame,
                 models: pd.DataFrame, jobs: pd.DataFrame, pnl: pd.DataFrame, inputs: pd.DataFrame,
                 bands: pd.DataFrame, summary: dict[str, Any]) -> None:
        self.scenario = scenario
        #: Kept paths: one row per (path, step), (path, step, pool), (path, step, model), (path, job).
        self.timeseries = timeseries
        self.pools = pools
        self.models = models
        self.jobs = jobs
        #: Every path: monthly P&L; uncertain inputs drawn (one row per path).
        self.pnl = pnl
        self.inputs = inputs
        #: Every path: per-step mean and quantiles, one row per (time, metric).
        self.bands = bands
        self.summary = summary

    @property
    def kept_paths(self) -> int:
        return int(self.summary["kept_paths"])

    def save(self, directory: str | Path, report: bool = True) -> Path:
        """Write the run directory (with its report unless ``report`` is False) atomically; an
        earlier one at that path is replaced whole."""
        with staged_directory(Path(directory)) as staging:
            self.write_files(staging, report=report)
        return Path(directory)

    def write_files(self, target: Path, scenario: Scenario | None = None, report: bool = True) -> None:
        """Write this run's files into ``target`` (not atomic on its own; see :meth:`save`),
        and its report (``report.html``, ``plots/``) unless ``report`` is False.

        ``scenario`` replaces the one written as ``scenario.resolved.yaml`` (a variant run
        writes the scenario with all its variants at the top).
        """
        tables = {"bands.parquet": self.bands, "pnl.parquet": self.pnl}
        if self.kept_paths:
            tables |= {"timeseries.parquet": self.timeseries, "pools.parquet": self.pools,
                       "models.parquet": self.models}
        if len(self.jobs):
            tables["jobs.parquet"] = self.jobs
        if len(self.inputs):
            tables["inputs.parquet"] = self.inputs
        resolved = dump_scenario(scenario or self.scenario)
        write_run_files(target, tables=tables, summary=self.summary, resolved_yaml=resolved)
        if report:
            from simulator.report import render_report

            render_report(target, variants=False)

    def __repr__(self) -> str:
        return (f"Results(scenario={self.scenario.name!r}, paths={self.summary['paths']}, "
                f"kept_paths={self.kept_paths}, steps={self.summary['steps']})")
