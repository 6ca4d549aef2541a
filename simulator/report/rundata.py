"""A run directory read back for reporting: summary, bands (each model's too), monthly P&L,
statements, unit economics, resolved scenario.

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
    #: Per (step, model, metric): each model's SLO attainment and unserved share over paths
    #: (``model_bands.parquet``; absent from runs of earlier versions).
    model_bands: pd.DataFrame | None = None
    #: ``plan.json`` of an order plan's run (``fleetcast plan``), else None.
    plan: dict[str, Any] | None = None

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
        model_bands = _optional(directory / "model_bands.parquet")
        comparison = None
        if (directory / "comparison.csv").is_file():
            # Variant names are text whatever they look like ("NA", "001").
            columns = pd.read_csv(directory / "comparison.csv", nrows=0).columns
            comparison = pd.read_csv(directory / "comparison.csv", dtype={"variant": str}, keep_default_na=False,
                                     na_values={column: [""] for column in columns if column != "variant"})
        scenario = yaml.safe_load(resolved) or {}
    except (OSError, ValueError, RecursionError, yaml.YAMLError) as exc:  # unreadable, or nested past reason
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise RunConfigurationError(f"{directory}: cannot read the run ({reason})") from None
    _check_shape(directory, summary, bands, pnl, scenario)
    bands["metric"] = bands["metric"].astype(str)
    if model_bands is not None:
        lacking = (_BAND_COLUMNS | {"model"}) - set(model_bands.columns)
        if lacking:
            raise RunConfigurationError(f"{directory}: not a run this version of Fleetcast reads "
                                        f"(model_bands.parquet lacks the columns {', '.join(sorted(lacking))})")
        model_bands = model_bands.astype({"model": str, "metric": str})
    if statements is None and len(pnl) and {"path", "month", "revenue_usd", "gross_margin_usd"} <= set(pnl.columns):
        statements = rolled_up(pnl)
    plan = None
    if (directory / "plan.json").is_file():
        try:
            plan = json.loads((directory / "plan.json").read_text())
        except (OSError, ValueError) as exc:
            raise RunConfigurationError(f"{directory}: cannot read plan.json ({exc})") from None
        if not (isinstance(plan, dict) and isinstance(plan.get("target"), dict) and isinstance(plan.get("orders"), list)):
            plan = None  # a capacity plan (fleetcast plan without orders) writes its own plan.json: not shown here
    return RunData(directory, summary, bands, pnl, resolved, scenario, comparison, statements, unit, model_bands,
                   plan)


#: What the reports read of a run's files (a file of another shape is refused, not half-read).
_SUMMARY_FIELDS = {"scenario": str, "paths": int, "start": str, "end": str, "totals": dict, "quantiles": dict}
_BAND_COLUMNS = {"metric", "time", "mean", "p5", "p10", "p50", "p90", "p95"}
_PNL_COLUMNS = {"path", "month"}


def _check_shape(directory: Path, summary: Any, bands: pd.DataFrame, pnl: pd.DataFrame, scenario: Any) -> None:
    problem = None
    if not isinstance(summary, dict):
        problem = f"summary.json holds a {type(summary).__name__}, not an object"
    else:
        wrong = [name for name, kind in _SUMMARY_FIELDS.items() if not isinstance(summary.get(name), kind)]
        if wrong:
            problem = f"summary.json lacks {', '.join(wrong)} or holds them in another form"
        elif not all(isinstance(value, dict) for value in summary["quantiles"].values()):
            problem = "summary.json's quantiles are not objects"
    if problem is None and not set(bands.columns) >= _BAND_COLUMNS:
        problem = f"bands.parquet lacks the columns {', '.join(sorted(_BAND_COLUMNS - set(bands.columns)))}"
    if problem is None and not set(pnl.columns) >= _PNL_COLUMNS:
        problem = f"pnl.parquet lacks the columns {', '.join(sorted(_PNL_COLUMNS - set(pnl.columns)))}"
    if problem is None and not isinstance(scenario, dict):
        problem = "scenario.resolved.yaml is not a scenario"
    if problem:
        raise RunConfigurationError(f"{directory}: not a run this version of Fleetcast reads ({problem})")


def _optional(path: Path) -> pd.DataFrame | None:
    return pd.read_parquet(path) if path.is_file() else None
