"""Demand forecast from the traffic a user has: ``demand.history``.

``history: file.csv`` or a block (:class:`~simulator.scenario.forecast_spec.HistorySpec`) names a
CSV with a ``date`` column and ``rps`` (requests per second at that date) or ``requests``
(requests in the period from that date to the next), read by
:mod:`simulator.scenario.history_read`. When the scenario loads, :func:`expand_histories` fits
the forecast (:mod:`simulator.scenario.history_forecast`) and replaces the history by the fields
it gives: ``base_rps``, ``growth``, ``seasonality`` and ``forecast``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulator.scenario.history_read import DateReading, load_history


def read_history(path: Path, reading: DateReading | None = None) -> pd.Series:
    """Requests per second by date, from a history CSV (:func:`~simulator.scenario.history_read.load_history`)."""
    return load_history(path, reading).rps


def expand_histories(data: dict[str, Any], base_dir: Path) -> None:
    """Replace each model's ``demand.history`` by the fields its forecast gives (in place):
    ``base_rps``, ``growth``, ``seasonality`` and ``forecast``
    (:mod:`simulator.scenario.history_forecast`)."""
    from pydantic import ValidationError

    from simulator.scenario.errors import ScenarioError
    from simulator.scenario.forecast_spec import HistorySpec
    from simulator.scenario.forecasting.summary import summary_lines
    from simulator.scenario.history_forecast import history_forecast

    models = data.get("models")
    horizon = data.get("horizon")
    if not isinstance(models, list) or not isinstance(horizon, dict):
        return
    for index, model in enumerate(models):
        demand = model.get("demand") if isinstance(model, dict) else None
        if not isinstance(demand, dict) or demand.get("history") is None:
            continue
        loc = ("models", index, "demand", "history")
        taken = [name for name in ("base_rps", "growth", "forecast") if name in demand]
        if taken:
            raise ScenarioError(loc, f"the history's fit gives {' and '.join(taken)}; give one or the other")
        raw = demand["history"]
        raw = {"file": raw} if isinstance(raw, str) else raw
        regime = raw.get("regime") if isinstance(raw, dict) else None
        uncertain_regime = isinstance(regime, dict) and any(isinstance(v, dict) for v in regime.values())
        checked = raw
        if uncertain_regime:  # its distributions go on as written, drawn per path like any uncertain input;
            placeholder = {"after_months": 1.0, "rate_per_month": 0.0, "probability": 0.5}  # the rest is checked here
            checked = {**raw, "regime": {key: placeholder.get(key, value) if isinstance(value, dict) else value
                                         for key, value in regime.items()}}
        try:
            spec = HistorySpec.model_validate(checked)
        except ValidationError:  # the schema names the field and its line when the scenario is validated
            demand["history"] = checked
            continue
        try:
            fitted = history_forecast(spec, base_dir)
            start = _forecast_start(horizon.get("start"), demand.get("start"))
            block = fitted.demand_fields(start, _horizon_end(horizon, start))
            summary = fitted.summary(backtest=True)
        except ValueError as exc:
            raise ScenarioError(loc, str(exc)) from None
        if uncertain_regime:
            block["forecast"]["regime"] = {**spec.regime.model_dump(), **regime}
        block["forecast"]["notes"] = [f"{spec.file}: {fitted.history.notes[0]}", *fitted.history.notes[1:],
                                      *summary_lines(summary)]
        if "seasonality" in demand:
            block.pop("seasonality", None)
        demand.pop("history")
        demand.update(_plain_numbers(block))


def _horizon_end(horizon: dict[str, Any], start: pd.Timestamp) -> pd.Timestamp:
    """The horizon's end as the scenario gives it (five years from ``start`` when unreadable: the
    schema then refuses the horizon with its line)."""
    from simulator.units import parse_duration, parse_timestamp

    try:
        if horizon.get("end") is not None:
            return max(parse_timestamp(horizon["end"]), start)
        return parse_timestamp(horizon.get("start")) + pd.Timedelta(seconds=parse_duration(horizon.get("duration")))
    except (ValueError, TypeError):
        return start + pd.DateOffset(years=5)


def _forecast_start(horizon_start: Any, demand_start: Any) -> pd.Timestamp:
    """Where ``base_rps`` is read off the fit: the demand's start when it is a date or an
    offset from the horizon's, else (none, or after a training job) the horizon's start."""
    from simulator.units import parse_duration, parse_timestamp

    try:
        start = parse_timestamp(horizon_start)
    except (ValueError, TypeError):
        raise ValueError(f"the horizon's start {horizon_start!r} is not a date") from None
    if demand_start is None or isinstance(demand_start, dict):
        return start
    try:
        return parse_timestamp(demand_start)
    except (ValueError, TypeError):
        pass
    try:
        return start + pd.Timedelta(seconds=parse_duration(demand_start))
    except (ValueError, TypeError):
        raise ValueError(f"the demand's start {demand_start!r} is neither a date nor a duration") from None


def _plain_numbers(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _plain_numbers(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_plain_numbers(inner) for inner in value]
    return float(value) if isinstance(value, np.floating) else value
