"""Sweeps: the same scenario over a grid (or a list) of parameter values.

``fleetcast sweep SCENARIO --param fleet.pools[0].count=256,384,512 --param
pricing.output_usd_per_1m=2,3`` runs every combination (``--zip`` pairs the lists instead),
each point with the same seed and paths (common random numbers across points), and writes
one row per point with its parameter values and headline figures.
"""

from __future__ import annotations

import datetime
import itertools
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from simulator.output import staged_directory
from simulator.report.headline import headline_figures
from simulator.scenario import Scenario, ScenarioError
from simulator.serving.resolve import load_scenario


def parse_parameters(specs: Sequence[str]) -> dict[str, list[Any]]:
    """``["a.b=1,2,3", ...]`` -> ``{"a.b": [1, 2, 3]}`` (values are YAML scalars)."""
    out: dict[str, list[Any]] = {}
    for spec in specs:
        key, sep, text = spec.partition("=")
        if not sep or not key.strip() or not text.strip():
            raise ScenarioError((), f"--param expects FIELD=VALUE[,VALUE...], got {spec!r}")
        if key.strip() in out:
            raise ScenarioError((), f"--param {key.strip()} is given twice; list all its values in one --param")
        try:
            out[key.strip()] = [_plain(yaml.safe_load(value)) for value in text.split(",")]
        except (yaml.YAMLError, ValueError) as exc:
            raise ScenarioError((), f"--param {key.strip()}: cannot read the values {text!r} "
                                f"({str(exc).splitlines()[0]})") from None
        except RecursionError:
            raise ScenarioError((), f"--param {key.strip()}: values nested too deeply") from None
    return out


def _plain(value: Any) -> Any:
    """A value as JSON and the scenario read it: an unquoted date (YAML makes it a ``date``)
    becomes its ISO text, which the scenario reads as that date."""
    return value.isoformat() if isinstance(value, datetime.date) else value


def sweep_points(parameters: dict[str, list[Any]], zipped: bool = False) -> list[dict[str, Any]]:
    """Every combination of the values (or the values paired in order with ``zipped``)."""
    keys = list(parameters)
    if zipped:
        lengths = {len(values) for values in parameters.values()}
        if len(lengths) > 1:
            raise ScenarioError((), "--zip needs the same number of values for every --param")
        rows = zip(*parameters.values(), strict=True)
    else:
        rows = itertools.product(*parameters.values())
    return [dict(zip(keys, row, strict=True)) for row in rows]


def run_sweep(source: str | Path | Scenario, points: list[dict[str, Any]],
              simulate_point: Callable[[Scenario], Any] | None = None, overrides: Sequence[str] = (), *,
              simulate_points: Callable[[dict[int, Scenario]], dict[int, dict[str, Any]]] | None = None,
              accept: Sequence[str] = ()) -> pd.DataFrame:
    """Validate every point first (so a bad one fails before any work), then simulate them:
    one at a time (``simulate_point(scenario)`` returns results) or all together
    (``simulate_points({index: scenario})`` returns each summary, as
    :func:`simulator.runs.batch.simulate_all` on one executor). ``accept`` confirms the values
    plausibility checks flag, as ``--accept`` does."""
    if (simulate_point is None) == (simulate_points is None):
        raise TypeError("give simulate_point or simulate_points")
    scenarios = []
    for point in points:
        try:
            scenarios.append(load_scenario(source, [*overrides, *(f"{k}={json.dumps(v)}" for k, v in point.items())],
                                           accept=accept))
        except ScenarioError as exc:
            exc.message = f"{exc.message} (sweep point {point})"
            raise
    if simulate_points is not None:
        summaries = simulate_points(dict(enumerate(scenarios)))
    else:
        summaries = {index: simulate_point(scenario).summary for index, scenario in enumerate(scenarios)}
    table = headline_figures(summaries).reset_index(drop=True)
    parameters = pd.DataFrame(points)
    return pd.concat([parameters, table], axis=1)


def save_sweep(directory: Path, table: pd.DataFrame, scenario: Scenario, parameters: dict[str, list[Any]]) -> None:
    """``sweep.parquet``, ``sweep.csv`` and ``summary.json``, written atomically."""
    from simulator.scenario import dump_scenario

    with staged_directory(directory) as staging:
        table.to_parquet(staging / "sweep.parquet", index=False)
        table.to_csv(staging / "sweep.csv", index=False)
        (staging / "scenario.resolved.yaml").write_text(dump_scenario(scenario), encoding="utf-8")
        summary = {"scenario": scenario.name, "points": len(table), "parameters": parameters,
                   "rows": json.loads(table.to_json(orient="records"))}
        (staging / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
