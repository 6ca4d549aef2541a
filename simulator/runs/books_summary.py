"""The books and the covenants over paths, for ``summary.json``: what a comparison by money reads
(capex, net income, cash, debt, equity, the fleet at book and at market) and how likely a
covenant breach is per quarter."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from simulator.runs.intervals import wilson_interval
from simulator.runs.periods import LEVEL

#: P10/P50/P90 of a series (summary.py's rule: finite values, null when none).
Quantiles = Callable[[pd.Series], dict[str, float | None]]


#: The books over the horizon, per path: flows summed, balances at the last month.
_BOOK_FLOWS = ("capex_usd", "gpu_payments_usd", "net_income_usd", "loan_drawn_usd", "equity_raised_usd")
_BOOK_BALANCES = {"cash_end_usd": "cash_balance_usd", "debt_end_usd": "debt_balance_usd",
                  "equity_end_usd": "total_equity_usd", "ppe_net_end_usd": "ppe_net_usd",
                  "fleet_market_value_end_usd": "fleet_market_value_usd"}


def books_summary(pnl: pd.DataFrame, quantiles: Quantiles) -> dict[str, Any]:
    """P10/P50/P90 over paths of capex, GPU payments, net income, loans drawn and equity raised
    over the horizon, and of cash, debt, equity and the fleet at book and at market at its end:
    what a comparison of options by money reads."""
    if not len(pnl) or "cash_balance_usd" not in pnl:
        return {}
    ordered = pnl.sort_values(["path", "month"])
    grouped = ordered.groupby("path")
    out = {name: quantiles(grouped[name].sum()) for name in _BOOK_FLOWS if name in ordered}
    last = grouped.tail(1).set_index("path")
    out.update({name: quantiles(last[column]) for name, column in _BOOK_BALANCES.items() if column in last})
    return out


def covenant_summary(pnl: pd.DataFrame, quantiles: Quantiles, level: float = LEVEL) -> dict[str, Any]:
    """Per quarter, the share of paths with a covenant breach in some month of it, with its
    Wilson interval; over the horizon, the same, and the worst month's DSCR and highest LTVs."""
    if not len(pnl) or "covenant_breach" not in pnl:
        return {}
    frame = pnl.assign(quarter=pnl["month"].dt.to_period("Q").dt.start_time)
    by_quarter = frame.groupby(["quarter", "path"])["covenant_breach"].max().unstack("path")
    paths = by_quarter.shape[1]
    quarters = []
    for quarter, row in by_quarter.iterrows():
        breached = int((row > 0).sum())
        quarters.append({"quarter": pd.Timestamp(quarter).strftime("%Y-%m-%d"), "probability": breached / paths,
                         "probability_ci": [float(x) for x in wilson_interval(breached, paths, level)]})
    any_path = frame.groupby("path")["covenant_breach"].max() > 0
    worst_dscr = frame.groupby("path")["dscr"].min()
    out = {"breach_by_quarter": quarters, "breach_probability": float(any_path.mean()),
           "breach_probability_ci": [float(x) for x in wilson_interval(int(any_path.sum()), len(any_path), level)],
           "worst_dscr": quantiles(worst_dscr.dropna()) if worst_dscr.notna().any() else None}
    for column in [c for c in pnl.columns if c.startswith("ltv_")]:
        highest = frame.groupby("path")[column].max().replace(np.inf, np.nan)
        out[f"highest_{column}"] = quantiles(highest.dropna()) if highest.notna().any() else None
    return out
