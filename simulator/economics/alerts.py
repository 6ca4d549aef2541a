"""Budgets and thresholds tried on the plan: which would fire, when, and how surely.

Each alert is evaluated on every month of every path's P&L. The summary gives, per alert,
the probability that it fires at least once (share of paths), the first month it fires
(P10/P50/P90 across paths, as for the first shortfall) and the mean number of months it
fires.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from simulator.scenario.economics import Alerts


def alert_breaches(pnl: pd.DataFrame, alerts: Alerts) -> dict[str, pd.Series]:
    """For each configured alert, a boolean Series over the P&L rows: breached that month."""
    compute_cost = pnl["cogs_usd"] + pnl["rnd_compute_usd"] - pnl["cogs_other_usd"]
    demand = pnl["demand_requests"].where(pnl["demand_requests"] > 0)
    checks: dict[str, tuple[float | None, pd.Series]] = {
        "monthly_compute_budget_usd": (alerts.monthly_compute_budget_usd, compute_cost),
        "max_utilization": (alerts.max_utilization, pnl["utilization"]),
        "min_utilization": (alerts.min_utilization, -pnl["utilization"]),
        "max_unserved_share": (alerts.max_unserved_share, (pnl["unserved_requests"] / demand).fillna(0.0)),
        "max_cost_per_1m_tokens_usd": (alerts.max_cost_per_1m_tokens_usd, pnl["cost_per_1m_tokens_usd"].fillna(0.0)),
    }
    out = {}
    for name, (threshold, values) in checks.items():
        if threshold is None:
            continue
        limit = -threshold if name == "min_utilization" else threshold
        out[name] = values > limit + 1e-12
    return out


def summarize_alerts(pnl: pd.DataFrame, alerts: Alerts, first_quantiles) -> list[dict[str, Any]]:
    """One entry per configured alert: threshold, probability, first month, months breached."""
    rows = []
    paths = pnl["path"].unique()
    for name, breached in alert_breaches(pnl, alerts).items():
        frame = pnl.assign(breached=breached)
        first = frame.loc[frame["breached"]].groupby("path")["month"].min().reindex(paths)
        counts = frame.groupby("path")["breached"].sum()
        rows.append({
            "alert": name,
            "threshold": getattr(alerts, name),
            "probability": float(first.notna().mean()),
            "first_month": first_quantiles(first),
            "months_breached_mean": float(counts.mean()),
        })
    return rows
