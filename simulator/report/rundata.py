"""A run directory read back for reporting: summary, bands, monthly P&L, statements, unit
economics, resolved scenario.

The report is rendered from the files of a run, never from objects in memory, so that
``fleetcast report DIR`` re-renders exactly what ``fleetcast run`` rendered.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from simulator.economics.statements import statements as rolled_up
from simulator.errors import RunConfigurationError
from simulator.units import parse_duration

REQUIRED = ("summary.json", "bands.parquet", "pnl.parquet", "scenario.resolved.yaml")


@dataclass
class RunData:
    directory: Path
    summary: dict[str, Any]
    bands: pd.DataFrame
    pnl: pd.DataFrame
    resolved_yaml: str
    scenario: dict[str, Any]
    comparison: pd.DataFrame | None
    #: By month, quarter and year (``statements.parquet``; rolled up from the P&L when absent).
    statements: pd.DataFrame | None = None
    #: Per (month, model) and per model over the horizon (``unit_economics.parquet``).
    unit_economics: pd.DataFrame | None = None

    @property
    def name(self) -> str:
        """The scenario's name, and the variant's for a run of a scenario with variants."""
        variant = self.summary.get("variant")
        return f"{self.scenario_name} · {variant}" if variant else self.scenario_name

    @property
    def scenario_name(self) -> str:
        return str(self.summary.get("scenario", self.directory.name))

    def band(self, metric: str) -> pd.DataFrame:
        """One metric's band: ``time, mean, p5, p10, p50, p90, p95`` by step."""
        rows = self.bands[self.bands["metric"] == metric]
        return rows.drop(columns="metric").reset_index(drop=True)

    @property
    def step_s(self) -> float:
        """The run's step, in seconds (from the summary's ``step``, else the bands' times)."""
        step = self.summary.get("step")
        if step:
            return parse_duration(step)
        times = self.bands["time"].drop_duplicates()
        return (times.iloc[1] - times.iloc[0]).total_seconds() if len(times) > 1 else 1.0

    @property
    def has_training(self) -> bool:
        return self.summary.get("training") is not None

    def variant_directories(self) -> dict[str, Path]:
        folder = self.directory / "variants"
        if not folder.is_dir():
            return {}
        return {child.name: child for child in sorted(folder.iterdir()) if (child / "summary.json").is_file()}


def load_run(directory: str | Path) -> RunData:
    """Read a run directory; a missing or foreign directory is a one-line input error."""
    directory = Path(directory)
    if not directory.is_dir():
        raise RunConfigurationError(f"{directory}: no such run directory")
    missing = [name for name in REQUIRED if not (directory / name).is_file()]
    if missing:
        raise RunConfigurationError(
            f"{directory}: not a Fleetcast run directory of this version (missing {', '.join(missing)}); "
            "run `fleetcast run` to make one")
    try:
        summary = json.loads((directory / "summary.json").read_text())
        resolved = (directory / "scenario.resolved.yaml").read_text()
        bands = pd.read_parquet(directory / "bands.parquet")
        pnl = pd.read_parquet(directory / "pnl.parquet")
        statements = _optional(directory / "statements.parquet")
        unit = _optional(directory / "unit_economics.parquet")
    except (OSError, ValueError) as exc:
        raise RunConfigurationError(f"{directory}: cannot read the run ({exc})") from None
    bands["metric"] = bands["metric"].astype(str)
    comparison = None
    if (directory / "comparison.csv").is_file():
        # Variant names are text whatever they look like ("NA", "001").
        columns = pd.read_csv(directory / "comparison.csv", nrows=0).columns
        comparison = pd.read_csv(directory / "comparison.csv", dtype={"variant": str}, keep_default_na=False,
                                 na_values={column: [""] for column in columns if column != "variant"})
    scenario = yaml.safe_load(resolved) or {}
    if statements is None and len(pnl) and {"path", "month", "revenue_usd", "gross_margin_usd"} <= set(pnl.columns):
        statements = rolled_up(pnl)
    return RunData(directory, summary, bands, pnl, resolved, scenario, comparison, statements, unit)


def _optional(path: Path) -> pd.DataFrame | None:
    return pd.read_parquet(path) if path.is_file() else None
