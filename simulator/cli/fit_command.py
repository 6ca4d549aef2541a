"""``fleetcast fit-demand``: fit growth (and seasonality) to a traffic history, print the block."""

from __future__ import annotations

from pathlib import Path

import click

from simulator.cli.app import console, main


@main.command("fit-demand")
@click.argument("history", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--start", help="Date the forecast starts (the horizon's start; default: the end of the history's "
              "last period).")
def fit_demand(history: Path, start: str | None) -> None:
    """Fit growth to HISTORY (CSV: date, rps or requests) and print the demand block it gives."""
    import yaml

    from simulator.scenario import ScenarioError
    from simulator.scenario.history import fit_history, read_history
    from simulator.units import parse_timestamp

    try:
        fit = fit_history(read_history(history))
    except ValueError as exc:
        raise ScenarioError(("history",), str(exc)) from None
    # By default the forecast starts where the history's last period ends.
    try:
        begins = parse_timestamp(start) if start else fit.next_start()
    except (ValueError, TypeError):
        raise ScenarioError(("--start",), f"{start!r} is not a date") from None
    console.print(f"{fit.points} points, {fit.first:%Y-%m-%d} to {fit.last:%Y-%m-%d}: {fit.kind} growth", highlight=False)
    if fit.kind == "exponential":
        low, high = fit.rate_interval
        console.print(f"  growth {fit.rate_per_month:.2%} a month ± {fit.rate_se:.2%} (standard error); "
                      f"90% interval {low:.2%} to {high:.2%}", highlight=False)
        console.print(f"  R² {fit.r_squared:.3f} on ln(rps), residual sd {fit.residual_sd:.3f}", highlight=False)
    else:
        console.print(f"  ceiling {fit.ceiling_rps:,.1f} req/s, rate {fit.rate_per_month:.2%} a month while far "
                      f"from it; residual sd {fit.residual_sd:.3f} of ln(rps)", highlight=False)
    for note in fit.notes:
        console.print(f"  {note}", highlight=False)
    block = fit.demand_block(begins)
    try:
        spread = fit.uncertain()
    except ValueError as exc:
        raise ScenarioError(("history",), str(exc)) from None
    if spread is not None:
        block["growth"]["rate_per_month"] = spread
    rounded = yaml.safe_load(yaml.safe_dump(_round(block)))
    console.print(f"demand block for a horizon starting {begins:%Y-%m-%d} (or give `history: {history.name}`):",
                  highlight=False)
    console.print(yaml.safe_dump({"demand": rounded}, sort_keys=False).rstrip(), highlight=False, markup=False)


def _round(value):
    if isinstance(value, dict):
        return {key: _round(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_round(inner) for inner in value]
    return round(float(value), 6) if isinstance(value, float) or hasattr(value, "dtype") else value
