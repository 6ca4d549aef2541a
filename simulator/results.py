"""What a run returns: the tables, the summary, and how to save them.

``Results.timeseries`` (one row per path and step), ``Results.pools`` (per pool),
``Results.models`` (per served model) and ``Results.summary`` (the dict written to
``summary.json``). ``Results.save(dir)`` writes the run directory atomically.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from simulator.compiled import CompiledScenario
from simulator.economics.pnl import monthly_pnl
from simulator.engine import PathResult
from simulator.output import staged_directory, write_run_files
from simulator.scenario import Scenario, dump_scenario
from simulator.summary import input_quantiles, summarize
from simulator.tables import jobs_table, models_table, pools_table, timeseries_table


@dataclass
class PathTables:
    """One path's tables, built where the path ran (a worker), so that the main process only
    concatenates them."""

    path: int
    timeseries: pd.DataFrame
    pools: pd.DataFrame
    models: pd.DataFrame
    jobs: pd.DataFrame
    pnl: pd.DataFrame
    inputs: dict[str, float]


def path_tables(result: PathResult, scenario: Scenario, plan: CompiledScenario) -> PathTables:
    """Turn one path's raw arrays into its tables."""
    times = scenario.horizon.times()
    timeseries = timeseries_table([result], times, plan)
    return PathTables(
        result.path,
        timeseries,
        pools_table([result], times, plan),
        models_table([result], times, plan),
        jobs_table([result], scenario.horizon.start, plan),
        monthly_pnl(timeseries, scenario.financing, scenario.horizon.step_s),
        result.inputs,
    )


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)


class Results:
    """Tables and summary of a simulated scenario."""

    def __init__(self, scenario: Scenario, paths: Sequence[PathTables]) -> None:
        ordered = sorted(paths, key=lambda tables: tables.path)
        self.scenario = scenario
        self.timeseries: pd.DataFrame = _concat([t.timeseries for t in ordered])
        self.pools: pd.DataFrame = _concat([t.pools for t in ordered])
        self.models: pd.DataFrame = _concat([t.models for t in ordered])
        self.jobs: pd.DataFrame = _concat([t.jobs for t in ordered])
        self.pnl: pd.DataFrame = _concat([t.pnl for t in ordered])
        #: Uncertain inputs drawn per path: one row per path, one column per field path.
        self.inputs: pd.DataFrame = pd.DataFrame(
            [{"path": t.path, **t.inputs} for t in ordered if t.inputs], columns=["path", *sorted(scenario.uncertain)]
        )
        self.summary: dict[str, Any] = summarize(scenario, self.timeseries, self.pnl, self.jobs)
        if scenario.uncertain:
            self.summary["inputs"] = input_quantiles(self.inputs)
            for entry, (_, row) in zip(self.summary["per_path"], self.inputs.iterrows(), strict=True):
                entry["inputs"] = {key: float(row[key]) for key in scenario.uncertain}

    def save(self, directory: str | Path) -> Path:
        """Write the run directory atomically; an earlier one at that path is replaced whole."""
        with staged_directory(Path(directory)) as staging:
            self.write_files(staging)
        return Path(directory)

    def write_files(self, target: Path, scenario: Scenario | None = None) -> None:
        """Write this run's files into ``target`` (not atomic on its own; see :meth:`save`).

        ``scenario`` replaces the one written as ``scenario.resolved.yaml`` (a variant run
        writes the scenario with all its variants at the top).
        """
        tables = {
            "timeseries.parquet": self.timeseries,
            "pools.parquet": self.pools,
            "models.parquet": self.models,
            "pnl.parquet": self.pnl,
        }
        if len(self.jobs):
            tables["jobs.parquet"] = self.jobs
        if len(self.inputs):
            tables["inputs.parquet"] = self.inputs
        resolved = dump_scenario(scenario or self.scenario)
        write_run_files(target, tables=tables, summary=self.summary, resolved_yaml=resolved)

    def __repr__(self) -> str:
        return f"Results(scenario={self.scenario.name!r}, paths={self.summary['paths']}, steps={self.summary['steps']})"
