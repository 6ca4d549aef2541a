"""A named figure of one path, for the variance-based sensitivity of any figure.

A figure is ``NAME`` or ``NAME:PERIOD``; PERIOD is a year (``2027``), a quarter (``2027Q2``)
or a month (``2027-03``), default the whole horizon. Names:

- ``short``: 1 if some step of the period is short (a material shortfall,
  :mod:`simulator.scenario.shortfall`), else 0: its mean over paths is P(short);
- ``lowest_cash``: the lowest month-end cash balance in the period;
- ``worst_dscr``: the lowest monthly DSCR in the period (months without debt service skipped);
- ``breach``: 1 if a debt covenant fails in some month of the period, else 0;
- any column of ``pnl.parquet``: a statement balance (cash, debt, equity, DSCR, LTV …) at the
  period's last month; any other column (revenue, net income, cash flows …) summed over the
  period.

Without a period, ``gross_margin_usd``, ``shortfall_hours`` and ``unserved_share`` are the
path's horizon totals, as the default outputs are.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from simulator.economics.statements import LINES
from simulator.scenario import ScenarioError

SPECIAL = ("short", "lowest_cash", "worst_dscr", "breach")
TOTALS = ("gross_margin_usd", "shortfall_hours", "unserved_share")
_PERIOD = re.compile(r"^(\d{4})(?:(Q[1-4])|-(\d{2}))?$")
_AT_END = {column for column, _, kind in LINES if kind in ("balance", "multiple")}
#: Columns of pnl.parquet besides the statement lines (opex_*, debt_* and ltv_* come by name).
PNL_COLUMNS = frozenset({column for column, _, _ in LINES} | {
    "cogs_api_usd", "rnd_depreciation_usd", "rnd_cloud_usd", "rnd_energy_usd", "rnd_facility_usd",
    "operating_result_usd", "net_result_usd", "cumulative_cash_usd", "scheduled_principal_usd", "served_tokens",
    "subscriber_months", "demand_requests", "unserved_requests"})
_PREFIXES = ("opex_", "debt_", "ltv_")


@dataclass(frozen=True)
class Figure:
    """A parsed figure: its name, and its period as [start, end) timestamps (None: the horizon)."""

    text: str
    name: str
    start: pd.Timestamp | None = None
    end: pd.Timestamp | None = None

    @property
    def from_totals(self) -> bool:
        return self.start is None and self.name in TOTALS


def parse_figure(text: str, horizon_start: pd.Timestamp, horizon_end: pd.Timestamp) -> Figure:
    """``text`` as a figure, its period checked against the horizon (ScenarioError: exit 2)."""
    name, _, period = text.partition(":")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise ScenarioError(("--figure",), f"{text!r} is not a figure: NAME or NAME:PERIOD (e.g. short:2027, "
                            "lowest_cash, net_income_usd:2028)")
    if not period:
        return Figure(text, name)
    match = _PERIOD.match(period)
    if not match:
        raise ScenarioError(("--figure",), f"{text!r}: the period is a year (2027), a quarter (2027Q2) or a month "
                            "(2027-03)")
    year, quarter, month = match.groups()
    freq = "Q" if quarter else "M" if month else "Y"
    try:
        span = pd.Period(period if not month else f"{year}-{month}", freq=freq)
    except ValueError:
        raise ScenarioError(("--figure",), f"{text!r}: the period is not a date (a month is 01 to 12)") from None
    start, end = span.start_time, (span + 1).start_time
    if end <= horizon_start or start >= horizon_end:
        raise ScenarioError(("--figure",), f"{text!r}: the period is outside the horizon "
                            f"({horizon_start:%Y-%m-%d} to {horizon_end:%Y-%m-%d})")
    return Figure(text, name, start, end)


def check_figure(figure: Figure) -> None:
    """A figure names something a path has (a facility's or opex line's column by its prefix)."""
    if figure.name in SPECIAL or figure.from_totals or figure.name in PNL_COLUMNS \
            or figure.name.startswith(_PREFIXES):
        return
    known = ", ".join([*SPECIAL, *TOTALS])
    raise ScenarioError(("--figure",), f"unknown figure {figure.name!r}: one of {known}, or a column of pnl.parquet")


def figure_value(figure: Figure, timeseries: pd.DataFrame, pnl: pd.DataFrame, totals: dict) -> float:
    """The figure on one path (its timeseries with ``short``, its monthly P&L, its totals)."""
    if figure.from_totals:
        return float(totals["gross_margin_usd"] if figure.name == "gross_margin_usd" else
                     totals["shortfall_hours"] if figure.name == "shortfall_hours" else 1.0 - totals["share_served"])
    if figure.name == "short":
        times = pd.DatetimeIndex(timeseries["time"])
        inside = _inside(times, figure)
        return float(np.asarray(timeseries["short"], dtype=bool)[inside].any())
    months = pd.DatetimeIndex(pnl["month"])
    rows = pnl[_inside(months, figure)]
    if not len(rows):
        return math.nan
    if figure.name == "lowest_cash":
        return float(rows["cash_balance_usd"].min())
    if figure.name == "worst_dscr":
        values = rows["dscr"].to_numpy(np.float64)
        return float(np.nanmin(values)) if np.isfinite(values).any() else math.nan
    if figure.name == "breach":
        return float((rows["covenant_breach"] > 0).any())
    if figure.name in _AT_END:
        return float(rows[figure.name].iloc[-1])
    return float(rows[figure.name].sum())


def _inside(times: pd.DatetimeIndex, figure: Figure) -> np.ndarray:
    if figure.start is None:
        return np.ones(len(times), dtype=bool)
    return np.asarray((times >= figure.start) & (times < figure.end))
