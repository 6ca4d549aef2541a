"""A plan's report: the orders it places, the risk per period it leaves, and the GPUs that
would wait for site power (from ``plan.json`` beside the planned fleet's run)."""

from __future__ import annotations

from typing import Any

from simulator.report.headline import money_text
from simulator.report.tables import _cell, _table


def _share(value: float | None) -> dict[str, Any]:
    return _cell(value, "share") if value is not None else _cell(None)


def plan_tables(plan: dict[str, Any] | None) -> dict[str, Any]:
    """The order table and the risk-per-period table (empty without a plan)."""
    if not plan:
        return {}
    orders = []
    for row in plan.get("orders", []):
        service = row.get("in_service", {})
        lands = service.get("p50") or (f"{service.get('from', '')} – {service.get('until', '')}")
        size = f"{row['mw']:g} MW" if row["tier"] == "power" else f"{row['count']:,}"
        orders.append([_cell(row["pool"]), _cell(row["tier"]), _cell(size), _cell(row["order_date"]),
                       _cell(lands), {"text": money_text(row["cost_usd"]), "negative": False},
                       {"text": money_text(row.get("market_value_at_end_usd", 0.0)), "negative": False}])
    periods = []
    for row in plan.get("periods", []):
        low, high = row["fresh_ci"]
        periods.append([_cell(row["period"]), _share(row["baseline"]), _share(row["planned"]), _share(row["fresh"]),
                        _cell(f"{low:.1%} – {high:.1%}"), _cell(row["status"])])
    out = {
        "plan_replan": _replan_table(plan.get("replan")),
        "plan_orders": _table(["Pool", "Tier", "GPUs", "Ordered", "In service (P50)", "Commitment",
                               "Worth at the end"], orders) if orders else None,
        "plan_periods": _table(["Period", "Risk now", "Risk planned", "Risk on fresh seeds", "Fresh 90% interval",
                                "Target"], periods) if periods else None,
    }
    return {name: table for name, table in out.items() if table is not None}


def _replan_table(replan: dict[str, Any] | None) -> dict[str, Any] | None:
    """The open-loop plan against re-planning on the same paths (``--compare-replan``)."""
    if not replan:
        return None
    rows = []
    for key, label in (("open_loop", "Open-loop plan"), ("replan", "Re-planning every " + replan["review_every"])):
        figures = replan["policies"][key]
        rows.append([_cell(label), _share(figures["risk_max"]), _cell(f"{figures['gpus_ordered']['mean']:,.1f}"),
                     {"text": money_text(figures["committed_at_start_usd"]), "negative": False},
                     {"text": money_text(figures["purchases_usd"]["mean"]), "negative": False},
                     {"text": money_text(figures["cost_usd"]["p50"]), "negative": False},
                     {"text": money_text(figures["lowest_cash_usd"]["p10"]), "negative": figures["lowest_cash_usd"]["p10"] < 0}])
    return _table(["Policy", "Worst period's risk", "GPUs bought (mean)", "Committed at the start",
                   "Purchases (mean)", "Cost P50", "Lowest cash P10"], rows)


def plan_summary(plan: dict[str, Any] | None) -> str | None:
    """One sentence: the target, whether it is met, what the orders commit, and power."""
    if not plan:
        return None
    target = plan["target"]
    cost = plan.get("cost", {})
    text = (f"Target: P(short) at most {target['probability']:.0%} per {target['per']}; "
            + ("met" if plan.get("target_met") else "not met in every period")
            + f". The orders commit {money_text(cost.get('orders_commit_usd', 0.0))}")
    resale = cost.get("market_value_at_end_usd")
    if resale:
        text += f", of which {money_text(resale)} would be recovered selling the GPUs at the horizon's end"
    blocked = plan.get("power_blocked_gpus_peak") or {}
    if blocked.get("p90"):
        text += (f". GPUs delivered but waiting for site power, at the worst moment: P50 {blocked['p50']:,.0f}, "
                 f"P90 {blocked['p90']:,.0f}")
    return text + "."
