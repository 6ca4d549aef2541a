"""``fleetcast fit-demand``: fit a forecast to a traffic history, say how far to trust it, print the block."""

from __future__ import annotations

from pathlib import Path

import click

from simulator.cli.app import console, main


@main.command("fit-demand")
@click.argument("history", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--start", help="Date the forecast starts (the horizon's start; default: the end of the history's "
              "last period).")
@click.option("--dayfirst/--monthfirst", default=None, help="How to read dates that are not ISO 8601 "
              "(05/01/2026: 5 January with --dayfirst).")
@click.option("--date-format", help="strftime pattern of the dates, e.g. %d/%m/%Y.")
@click.option("--widen", type=click.FloatRange(0.1, 10), default=1.0, show_default=True,
              help="Multiply the band's width in ln(rate).")
@click.option("--no-change", is_flag=True, help="Do not look for a change of growth in the history.")
@click.option("--backtest", is_flag=True, help="Hold out the last periods from 5 rolling origins, refit, and "
              "report the coverage of the 50% and 90% bands and the error of the median.")
@click.option("--holdout", type=click.IntRange(1, 1000), help="Periods held out per origin (default: 28 days, "
              "8 weeks or 3 months).")
def fit_demand(history: Path, start: str | None, dayfirst: bool | None, date_format: str | None, widen: float,
               no_change: bool, backtest: bool, holdout: int | None) -> None:
    """Fit a forecast to HISTORY (CSV: date, rps or requests) and print the demand block it gives."""
    import pandas as pd
    import yaml
    from pydantic import ValidationError

    from simulator.scenario import ScenarioError
    from simulator.scenario.forecast_spec import HistorySpec
    from simulator.scenario.forecasting.summary import summary_lines
    from simulator.scenario.history_forecast import history_forecast
    from simulator.units import parse_timestamp

    try:
        order = None if dayfirst is None else "day_first" if dayfirst else "month_first"
        spec = HistorySpec(file=str(history), date_order=order, date_format=date_format, widen=widen,
                           change="off" if no_change else "detect")
    except ValidationError as exc:
        raise ScenarioError(("--date-format",), exc.errors()[0]["msg"].removeprefix("Value error, ")) from None
    try:
        fitted = history_forecast(spec, Path("."))
        summary = fitted.summary(backtest=backtest, holdout=holdout)
    except ValueError as exc:
        raise ScenarioError(("history",), str(exc)) from None
    try:
        begins = parse_timestamp(start) if start else fitted.fit.origin
    except (ValueError, TypeError):
        raise ScenarioError(("--start",), f"{start!r} is not a date") from None
    for line in fitted.history.notes:
        console.print(line, highlight=False, markup=False)
    for line in summary_lines(summary):
        console.print(f"  {line}", highlight=False, markup=False, soft_wrap=True)
    block = fitted.demand_fields(begins, begins + pd.DateOffset(years=1))
    rounded = yaml.safe_load(yaml.safe_dump(_round(block), sort_keys=False))
    reading = {key: value for key, value in (("date_order", spec.date_order), ("date_format", spec.date_format))
               if value is not None}
    given = (f"history: {{file: {history}, " + ", ".join(f"{k}: {v}" for k, v in reading.items()) + "}"
             if reading else f"history: {history}")
    console.print(f"demand block for a horizon starting {begins:%Y-%m-%d} (or give `{given}`, the path relative to "
                  "the scenario):", highlight=False, markup=False, soft_wrap=True)
    console.print(yaml.safe_dump({"demand": rounded}, sort_keys=False).rstrip(), highlight=False, markup=False)


def _round(value):
    if isinstance(value, dict):
        return {key: _round(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_round(inner) for inner in value]
    if isinstance(value, float) or hasattr(value, "dtype"):
        return float(f"{float(value):.6g}")
    return value

