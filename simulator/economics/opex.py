"""Operating expenses by calendar month: each line's amount in every month of the horizon.

A line costs its level per calendar month, whatever the month's length, so February's
payroll is January's. A month the line (its ``start``/``end``) or the horizon covers in part
is prorated by the share of the month's time covered. The level is ``usd_per_month`` from the
line's start, replaced by each step from its date, and grows by ``growth_per_month`` every
calendar month after the month it was set in.
"""

from __future__ import annotations

from functools import lru_cache

import pandas as pd

from simulator.scenario.economics import OpexLine
from simulator.scenario.horizon import Horizon


def monthly_opex(lines: list[OpexLine], horizon: Horizon) -> pd.DataFrame:
    """USD per (calendar month, line): index the months' first days, one column per line.

    The table is shared by every path with the same lines and horizon (computed once per
    process): read it, do not change it."""
    return _monthly_opex(tuple(line.model_dump_json() for line in lines), horizon.start, horizon.end_time)


@lru_cache(maxsize=8)
def _monthly_opex(lines_json: tuple[str, ...], start: pd.Timestamp, end: pd.Timestamp) -> pd.DataFrame:
    lines = [OpexLine.model_validate_json(text) for text in lines_json]
    months = pd.period_range(start, end - pd.Timedelta(1, "ns"), freq="M")
    table = pd.DataFrame(index=pd.DatetimeIndex([m.start_time for m in months], name="month"))
    for line in lines:
        table[line.name] = [_month_amount(line, month, start, end) for month in months]
    return table


def _month_amount(line: OpexLine, month: pd.Period, horizon_start: pd.Timestamp,
                  horizon_end: pd.Timestamp) -> float:
    first, after = month.start_time, (month + 1).start_time
    lo = max(first, horizon_start, line.start if line.start is not None else first)
    hi = min(after, horizon_end, line.end if line.end is not None else after)
    if hi <= lo:
        return 0.0
    month_s = (after - first).total_seconds()
    # Pieces of [lo, hi) at one level each: the level changes at every step inside the month.
    cuts = [lo, *(step.at for step in line.steps if lo < step.at < hi), hi]
    return sum(_level(line, month, piece_start, horizon_start) * (piece_end - piece_start).total_seconds() / month_s
               for piece_start, piece_end in zip(cuts, cuts[1:], strict=False))


def _level(line: OpexLine, month: pd.Period, at: pd.Timestamp, horizon_start: pd.Timestamp) -> float:
    """The line's monthly level at ``at`` (inside ``month``)."""
    level, since = line.usd_per_month, line.start if line.start is not None else horizon_start
    for step in line.steps:
        if step.at <= at:
            level, since = step.usd_per_month, step.at
    grown = month.ordinal - since.to_period("M").ordinal
    return level * (1.0 + line.growth_per_month) ** max(grown, 0)
