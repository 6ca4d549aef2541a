"""Cash over paths, for ``summary.json``: each path's lowest month-end balance and when it ran
out (or would, past the horizon), summarised over the paths.

Every figure is a statistic of a per-path figure. The lowest balance is each path's own
lowest month-end cash; its month is the month *of the path at that quantile*, not a quantile
of months (the P10 of months and the P10 of balances are different paths). The runway is the
months from the start until a month ends with negative cash: counted within the horizon when
it happens there, else extrapolated past it at the burn of the last months
(:func:`simulator.economics.statements.cash_figures`), else none (cash not falling).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from simulator.economics.statements import BURN_MONTHS, cash_figures
from simulator.runs.intervals import wilson_interval
from simulator.runs.periods import LEVEL

QUANTILES = {"p10": 0.10, "p50": 0.50, "p90": 0.90}
#: Where a path's runway comes from (``runway[...]["basis"]``).
WITHIN_HORIZON, EXTRAPOLATED, NOT_BURNING = "within_horizon", "extrapolated", "not_burning"

Quantiles = Callable[[pd.Series], dict[str, float | None]]
Instants = Callable[[pd.Series], dict[str, Any]]


def cash_summary(pnl: pd.DataFrame, opening_usd: float, quantiles: Quantiles, instants: Instants,
                 start: pd.Timestamp | None = None, end: pd.Timestamp | None = None) -> dict[str, Any]:
    """The ``cash`` block of ``summary.json`` (empty without a cash balance); ``quantiles`` and
    ``instants`` are summary.py's P10/P50/P90 of values and of dates; ``start`` and ``end``
    the horizon's (a partial last month's burn counts for its part)."""
    if not len(pnl) or "cash_balance_usd" not in pnl:
        return {}
    cash = cash_figures(pnl, start, end)
    negative = cash["first_negative_month"].notna()
    at_quantile = lowest_balance_at_quantiles(cash)
    return {
        "opening_usd": opening_usd,
        "lowest_balance_usd": quantiles(cash["lowest_cash_usd"]),
        # The month of the path at that quantile of the lowest balance (not a quantile of months).
        "lowest_balance_month": {name: entry["month"] for name, entry in at_quantile.items()},
        "lowest_balance_at_quantile": at_quantile,
        "negative_probability": float(negative.mean()),
        "negative_probability_ci": [float(x) for x in wilson_interval(int(negative.sum()), len(cash), LEVEL)],
        "first_negative_month": {name: value for name, value in instants(cash["first_negative_month"]).items()
                                 if name in QUANTILES},
        "runway_months": {name: _number(np.quantile(cash["runway_months"].fillna(np.inf), p, method="inverted_cdf"))
                          for name, p in QUANTILES.items()},
        "runway_past_horizon_months": {
            name: _number(np.quantile(cash["runway_past_horizon_months"].fillna(np.inf), p, method="inverted_cdf"))
            for name, p in QUANTILES.items()},
        "cash_out_month_extrapolated": {name: value for name, value in instants(
            cash["cash_out_month_extrapolated"]).items() if name in QUANTILES},
        "burn_end_usd_per_month": quantiles(cash["burn_end_usd_per_month"]),
        "burn_months": BURN_MONTHS,
        "runway": runway_at_quantiles(cash),
    }


def lowest_balance_at_quantiles(cash: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """P10/P50/P90 over paths of each path's lowest month-end balance, as the path at that
    rank (the order statistic, ``inverted_cdf``): its balance, its month and its number."""
    order = np.lexsort((cash["path"].to_numpy(), cash["lowest_cash_usd"].to_numpy()))
    out = {}
    for name, p in QUANTILES.items():
        row = cash.iloc[order[_rank(len(order), p)]]
        out[name] = {"usd": float(row["lowest_cash_usd"]), "month": _month(row["lowest_cash_month"]),
                     "path": int(row["path"])}
    return out


def path_runway(cash: pd.DataFrame) -> pd.DataFrame:
    """Per path: months from the start until a month ends with negative cash (``inf``: cash
    not falling at the end), and where that comes from (within the horizon, extrapolated)."""
    within = cash["runway_months"].notna().to_numpy()
    past = cash["runway_past_horizon_months"].to_numpy(dtype=float)
    months = np.where(within, cash["runway_months"].to_numpy(dtype=float),
                      np.where(np.isfinite(past), cash["months"].to_numpy(dtype=float) + past, np.inf))
    basis = np.where(within, WITHIN_HORIZON, np.where(np.isfinite(past), EXTRAPOLATED, NOT_BURNING))
    return pd.DataFrame({"path": cash["path"].to_numpy(), "months": months, "basis": basis,
                         "past_horizon_months": np.where(within, np.nan, past),
                         "burn_end_usd_per_month": cash["burn_end_usd_per_month"].to_numpy(dtype=float),
                         "cash_end_usd": cash["cash_end_usd"].to_numpy(dtype=float),
                         "out_month": np.where(within, cash["first_negative_month"],
                                               cash["cash_out_month_extrapolated"])})


def runway_at_quantiles(cash: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """P10/P50/P90 over paths of the runway (months from the start; shorter is worse), each the
    path at that rank: its months (null: cash not falling), their basis, the months past the
    horizon when extrapolated (closing cash / burn), that burn and closing cash, and the month
    it runs out."""
    runway = path_runway(cash)
    order = np.lexsort((runway["path"].to_numpy(), runway["months"].to_numpy()))
    out = {}
    for name, p in QUANTILES.items():
        row = runway.iloc[order[_rank(len(order), p)]]
        out[name] = {"months": _number(row["months"]), "basis": str(row["basis"]),
                     "months_past_horizon": _number(row["past_horizon_months"]),
                     "burn_end_usd_per_month": _number(row["burn_end_usd_per_month"]),
                     "cash_end_usd": _number(row["cash_end_usd"]), "month": _month(row["out_month"]),
                     "path": int(row["path"])}
    return out


def _rank(n: int, p: float) -> int:
    """0-based rank of the ``inverted_cdf`` p-quantile of ``n`` sorted values."""
    return max(int(np.ceil(n * p - 1e-12)) - 1, 0)


def _month(value: Any) -> str | None:
    return None if value is None or pd.isna(value) else pd.Timestamp(value).isoformat()


def _number(value: Any) -> float | None:
    value = float(value)
    return None if np.isnan(value) or np.isinf(value) else value
