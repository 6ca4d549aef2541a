"""What a run returns: the tables, the bands, the summary, and how to save them.

Paths arrive from the workers in any order as :class:`~simulator.runs.digest.PathDigest`; a
:class:`RunAggregator` folds each one in as it arrives and keeps only what the run's output
needs: every path's totals, monthly P&L and inputs (small), the band series of every path
(in a :class:`~simulator.runs.bands.BandStore`, on disk when large) and its models' (in a
store of their own), each path's requests per model, the pooled training waits
(in a temporary file), and the full tables of the first ``keep_paths`` paths. Everything is
put in path order at the end, so results do not depend on the order in which paths finish.

``Results.timeseries``, ``.pools``, ``.models`` and ``.jobs`` hold the kept paths (one row
per path and step, per pool, per model, per job); ``.pnl`` and ``.inputs`` every path;
``.bands`` the per-step quantiles over every path, ``.model_bands`` those of each model's
SLO attainment and unserved share; ``.summary`` the dict written to
``summary.json``. ``Results.save(dir)`` writes the run directory atomically.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulator.economics.statements import statements
from simulator.economics.unit_economics import (
    input_cost_shares,
    unit_economics,
    unit_economics_json,
)
from simulator.output import staged_directory, write_run_files
from simulator.runs.bands import BandStore, combined_bands
from simulator.runs.contract_summary import contract_summary
from simulator.runs.digest import PathDigest, TrainingDigest
from simulator.runs.model_figures import model_bands, model_store, model_summary
from simulator.runs.path_frames import PathFrames
from simulator.runs.periods import summarize_periods
from simulator.runs.summary import (
    input_quantiles,
    input_rank_correlations,
    summarize,
    training_summary,
)
from simulator.runs.workbook import workbook_bytes
from simulator.scenario import Scenario, dump_scenario

_PNL_CHUNK = 256
#: A kept table: one frame, or the kept paths' frames (:class:`PathFrames`).
Table = pd.DataFrame | PathFrames


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
        self.spill_dir = spill_dir
        #: One band store per batch of paths: (first path, store).
        self.stores = [(0, BandStore(n_paths, scenario.horizon.n_steps, spill_dir=spill_dir))]
        #: Each model's per-step ratios, one store per batch of paths, beside ``stores``
        #: (:mod:`simulator.runs.model_figures`); and each path's requests per model.
        self.model_names = [model.name for model in scenario.models]
        self.model_stores = [model_store(self.model_names, n_paths, scenario.horizon.n_steps, spill_dir)]
        self.model_sums: dict[int, np.ndarray] = {}
        self.totals: dict[int, dict[str, Any]] = {}
        self.inputs: dict[int, dict[str, float]] = {}
        self.training: dict[int, TrainingDigest] = {}
        self.kept: dict[int, Any] = {}
        self.need: dict[int, np.ndarray] = {}
        self._period_rows: list[pd.DataFrame] = []
        self._period_pending: list[pd.DataFrame] = []
        self._pnl_chunks: list[pd.DataFrame] = []
        self._pnl_pending: list[pd.DataFrame] = []
        self._unit = _Frames()
        self._contracts = _Frames()
        self._markets = _Frames()
        self._orders = _Frames()
        self._waits = tempfile.TemporaryFile(dir=spill_dir)  # noqa: SIM115 - closed by close()
        self._n_waits = 0

    def add(self, digest: PathDigest) -> None:
        path = digest.path
        if path in self.totals:
            raise ValueError(f"path {path} was added twice")
        batch = next(i for i in reversed(range(len(self.stores))) if path >= self.stores[i][0])
        first, store = self.stores[batch]
        if path - first >= store.n_paths:
            raise ValueError(f"path {path} is beyond the {self.n_paths} paths of the run")
        if digest.series is None:  # written into the store's file by the worker (PathTask.band_file)
            store.mark_written(path - first)
        else:
            store.add(path - first, digest.series)
        models = self.model_stores[batch]
        if models is not None and digest.model_series is not None:
            models.add(path - first, digest.model_series)
        if digest.model_sums is not None:
            self.model_sums[path] = digest.model_sums
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
        if digest.need is not None:
            self.need[path] = digest.need
        if digest.periods is not None:
            self._period_pending.append(digest.periods)
            if len(self._period_pending) >= _PNL_CHUNK:  # few frames, not one per path
                self._period_rows.append(pd.concat(self._period_pending, ignore_index=True))
                self._period_pending = []
        if digest.unit is not None:
            self._unit.add(digest.unit)
        if digest.contracts is not None:
            self._contracts.add(digest.contracts)
        if digest.markets is not None:
            self._markets.add(digest.markets)
        if digest.orders is not None:
            self._orders.add(digest.orders)
        self._pnl_pending.append(digest.pnl)
        if len(self._pnl_pending) >= _PNL_CHUNK:
            self._pnl_chunks.append(pd.concat(self._pnl_pending, ignore_index=True))
            self._pnl_pending = []

    def extend(self, n_more: int, keep_paths: int | None) -> None:
        """Make room for ``n_more`` paths after the ones asked for so far (numbered on)."""
        self.stores.append((self.n_paths, BandStore(n_more, self.scenario.horizon.n_steps, spill_dir=self.spill_dir)))
        self.model_stores.append(model_store(self.model_names, n_more, self.scenario.horizon.n_steps, self.spill_dir))
        self.n_paths += n_more
        self.keep = kept_count(self.n_paths, keep_paths)

    def path_totals(self) -> pd.DataFrame:
        """The totals of the paths in so far, one row per path (path order)."""
        totals = pd.DataFrame.from_dict(self.totals, orient="index").sort_index()
        totals.index.name = "path"
        return totals

    def finish(self) -> Results:
        """The run's results (path order); the aggregator's temporary files are removed."""
        if len(self.totals) != self.n_paths:
            raise RuntimeError(f"{self.n_paths - len(self.totals)} of {self.n_paths} paths never arrived")
        try:
            scenario = self.scenario
            bands = combined_bands([store for _, store in self.stores], scenario.horizon.times())
            pnl = _concat(self._pnl_chunks + self._pnl_pending)
            pnl = pnl.sort_values(["path", "month"], kind="stable", ignore_index=True)
            totals = self.path_totals()
            self._waits.seek(0)
            waits = np.fromfile(self._waits, dtype=np.float64, count=self._n_waits)
            period_paths = _concat(self._period_rows + self._period_pending).sort_values(
                ["path", "period", "start"], kind="stable", ignore_index=True)
            periods = summarize_periods(period_paths)
            summary = summarize(scenario, totals, pnl, training_summary(self.training, waits), periods)
            del waits
            per_path_unit = self._unit.frame()
            if len(per_path_unit):  # in path order: sums must not depend on which path finished first
                per_path_unit = per_path_unit.sort_values(["path", "month"], kind="stable", ignore_index=True)
            unit = unit_economics(per_path_unit, pnl, input_cost_shares(scenario))
            summary["unit_economics"] = unit_economics_json(unit)
            inputs = pd.DataFrame([{"path": path, **self.inputs[path]} for path in sorted(self.inputs)],
                                  columns=["path", *sorted(scenario.uncertain)])
            if scenario.uncertain:
                summary["inputs"] = input_quantiles(inputs)
                summary["inputs_rank_correlation"] = input_rank_correlations(inputs)
                for entry in summary["per_path"]:
                    drawn = self.inputs[entry["path"]]
                    entry["inputs"] = {key: float(drawn[key]) for key in scenario.uncertain}
            book = self._contracts.frame()
            if len(book):  # in path order, as the P&L
                book = book.sort_values(["path", "contract", "month"], kind="stable", ignore_index=True)
                summary["contracts"] = contract_summary(book, self.n_paths)
            summary["kept_paths"] = self.keep
            summary["models"] = model_summary(self.model_names, self.model_sums)
            stores = [store for store in self.model_stores if store is not None]
            per_model = model_bands(stores, scenario.horizon.times(), self.model_names)
            kept = [self.kept[path] for path in sorted(self.kept)]
            results = Results(
                scenario,
                timeseries=PathFrames([t.timeseries for t in kept]),
                pools=PathFrames([t.pools for t in kept]),
                models=PathFrames([t.models for t in kept]),
                jobs=PathFrames([t.jobs for t in kept]),
                pnl=pnl,
                statements=statements(pnl),
                unit_economics=unit,
                periods=periods,
                period_paths=period_paths,
                inputs=inputs,
                bands=bands,
                summary=summary,
                model_bands=per_model,
            )
            results.contract_book = book
            rates = self._markets.frame()
            if len(rates):
                results.market_rates = rates.sort_values(["path", "kind", "pool", "model", "month"], kind="stable", ignore_index=True)
            orders = self._orders.frame()
            if len(orders):
                results.orders = orders.sort_values(["path", "ordered", "pool"], kind="stable", ignore_index=True)
            if self.need:
                results.need = np.stack([self.need[path] for path in sorted(self.need)])
            return results
        finally:
            self.close()

    def close(self) -> None:
        for _, store in self.stores:
            store.close()
        for store in self.model_stores:
            if store is not None:
                store.close()
        self._waits.close()


class _Frames:
    """Small per-path frames, concatenated in chunks as they arrive (few frames, not one per path)."""

    def __init__(self) -> None:
        self.chunks: list[pd.DataFrame] = []
        self.pending: list[pd.DataFrame] = []

    def add(self, frame: pd.DataFrame) -> None:
        self.pending.append(frame)
        if len(self.pending) >= _PNL_CHUNK:
            self.chunks.append(pd.concat(self.pending, ignore_index=True))
            self.pending = []

    def frame(self) -> pd.DataFrame:
        return _concat(self.chunks + self.pending)


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    if not frames:
        return pd.DataFrame()
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)


class _KeptTable:
    """A kept-paths table of :class:`Results` (``timeseries``, ``pools``, ``models``, ``jobs``):
    read, it is one DataFrame (put together from the paths' frames on first read); set, it
    replaces what the run held."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, results: Results | None, owner: type | None = None) -> Any:
        return self if results is None else results._table(self.name)

    def __set__(self, results: Results, frame: pd.DataFrame) -> None:
        results._tables[self.name] = frame


class Results:
    """Tables, bands and summary of a simulated scenario."""

    timeseries = _KeptTable()
    pools = _KeptTable()
    models = _KeptTable()
    jobs = _KeptTable()

    def __init__(self, scenario: Scenario, *, timeseries: Table, pools: Table,
                 models: Table, jobs: Table, pnl: pd.DataFrame, inputs: pd.DataFrame,
                 bands: pd.DataFrame, summary: dict[str, Any], periods: pd.DataFrame | None = None,
                 period_paths: pd.DataFrame | None = None, statements: pd.DataFrame | None = None,
                 unit_economics: pd.DataFrame | None = None, model_bands: pd.DataFrame | None = None) -> None:
        self.scenario = scenario
        #: Kept paths: one row per (path, step), (path, step, pool), (path, step, model), (path,
        #: job); held as each path's frames until first read (see the properties below).
        self._tables: dict[str, Table] = {"timeseries": timeseries, "pools": pools, "models": models, "jobs": jobs}
        #: Every path: monthly P&L; uncertain inputs drawn (one row per path).
        self.pnl = pnl
        #: Over every path: the statements by month, quarter and year (one row per period and
        #: line: mean, P10/P50/P90) and unit economics per model and month.
        self.statements = statements if statements is not None else pd.DataFrame()
        self.unit_economics = unit_economics if unit_economics is not None else pd.DataFrame()
        self.inputs = inputs
        #: Every path: one row per calendar (year, quarter, month) period and path
        #: (``period_paths``) and their summary with intervals, one row per period (``periods``).
        self.periods = periods if periods is not None else pd.DataFrame()
        self.period_paths = period_paths if period_paths is not None else pd.DataFrame()
        #: Every path: per-step mean and quantiles, one row per (time, metric).
        self.bands = bands
        #: Every path: per-step quantiles of each model's SLO attainment and unserved share,
        #: one row per (time, model, metric) (:mod:`simulator.runs.model_figures`).
        self.model_bands = model_bands if model_bands is not None else pd.DataFrame()
        self.summary = summary
        #: Every path's contract book: one row per (path, contract, month) (empty without contracts).
        self.contract_book = pd.DataFrame()
        #: Every path's rental rate per month of each pool whose market moves (``markets.rent``).
        self.market_rates = pd.DataFrame()
        #: Every path's orders (dated and placed by a procurement policy): path, pool, ordered,
        #: count, promised, delivered (NaT: after the horizon), usd (at the pool's price).
        self.orders = pd.DataFrame()
        #: Asked for (``simulate(need=True)``): GPUs each path lacked, ``(paths, models, slots)``.
        self.need: np.ndarray | None = None

    def _table(self, name: str) -> pd.DataFrame:
        table = self._tables[name]
        return table.frame() if isinstance(table, PathFrames) else table

    @property
    def kept_paths(self) -> int:
        return int(self.summary["kept_paths"])

    def save(self, directory: str | Path, report: bool = True, processes: int | None = None) -> Path:
        """Write the run directory (with its report unless ``report`` is False) atomically; an
        earlier one at that path is replaced whole. (``processes`` is there for the signature
        :class:`~simulator.decisions.variants.VariantResults` shares: one run is one piece.)"""
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
        if len(self.statements):
            tables["statements.parquet"] = self.statements
        if len(self.unit_economics):
            tables["unit_economics.parquet"] = self.unit_economics
        if len(self.periods):
            tables["periods.parquet"] = self.periods
        if len(self.model_bands):
            tables["model_bands.parquet"] = self.model_bands
        if self.kept_paths:  # the kept paths' tables are written as they are held (path_frames)
            tables |= {f"{name}.parquet": self._tables[name] for name in ("timeseries", "pools", "models")}
        if len(self._tables["jobs"]):
            tables["jobs.parquet"] = self._tables["jobs"]
        if len(self.inputs):
            tables["inputs.parquet"] = self.inputs
        if len(self.contract_book):
            tables["contracts.parquet"] = self.contract_book
        if len(self.market_rates):
            tables["markets.parquet"] = self.market_rates
        if len(self.orders):
            tables["orders.parquet"] = self.orders
        resolved = dump_scenario(scenario or self.scenario)
        extra = {"pnl.csv": self.pnl.to_csv(index=False).encode("utf-8"),
                 "statements.xlsx": workbook_bytes(self, resolved)}
        write_run_files(target, tables=tables, summary=self.summary, resolved_yaml=resolved, extra_files=extra)
        if report:
            from simulator.report import render_report

            render_report(target, variants=False)

    def __repr__(self) -> str:
        return (f"Results(scenario={self.scenario.name!r}, paths={self.summary['paths']}, "
                f"kept_paths={self.kept_paths}, steps={self.summary['steps']})")
