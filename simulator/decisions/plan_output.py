"""What an order plan tells its reader: each order and when it lands, what the plan commits, the
risk of every period before and after with its interval, and what cannot be met. ``plan.json``
holds it all; the run directory beside it is the plan simulated on fresh seeds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simulator.decisions.order_planner import PlanOutcome
from simulator.decisions.order_schedule import Candidate
from simulator.output import staged_directory
from simulator.units import format_duration

_TIER = {"owned": "buy", "reserved": "reserve", "on_demand": "rent", "burst": "burst", "power": "power"}


def order_rows(outcome: PlanOutcome) -> list[dict[str, Any]]:
    """One row per order (rentals: per run of months at one count), in time order."""
    rows = []
    grid, scenario = outcome.grid, outcome.scenario
    horizon_s = grid.horizon_s

    def day(offset_s: float) -> str:
        return (scenario.horizon.start + pd.Timedelta(seconds=float(offset_s))).strftime("%Y-%m-%d")

    for c in outcome.candidates:
        gpu = next(pool.gpu for pool in scenario.fleet.pools if pool.name == c.pool)
        base = {"pool": c.pool, "gpu": gpu, "tier": _TIER[c.kind]}
        chosen = outcome.schedule.orders.get(c.pool, [])
        if c.kind == "owned":
            for date, n in chosen:
                placed = grid.order_s[date]
                count = n * c.step
                lands = {f"p{q}": day(placed + c.lead_s + c.slip_quantile(q / 100)) for q in (10, 50, 90)}
                median = placed + c.lead_s + c.slip_quantile(0.5)
                life_left = 1.0 - max(horizon_s - median, 0.0) / c.life_s if median < horizon_s else 1.0
                held_s = max(horizon_s - median, 0.0)
                price = float(c.price(median, grid))  # its month's price, where prices move
                rows.append({**base, "count": count, "order_date": day(placed), "in_service": lands,
                             "cost_usd": count * (price + c.usd_per_gpu_s * held_s),
                             "value_left_usd": count * price * max(life_left, 0.0),
                             "market_value_at_end_usd": count * float(c.resale_usd(held_s, price))})
        elif c.kind == "reserved":
            for date, n in chosen:
                begin, end = grid.order_s[date] + c.lead_s, float(c.reserve_end_s[date])
                count = n * c.step
                rows.append({**base, "count": count, "order_date": day(grid.order_s[date]),
                             "in_service": {"from": day(begin), "until": day(end)},
                             "cost_usd": count * c.usd_per_gpu_s * (end - begin),
                             "value_left_usd": count * c.usd_per_gpu_s * max(end - max(begin, horizon_s), 0.0),
                             "market_value_at_end_usd": 0.0})
        elif c.kind == "burst":
            cap = sum(n for _, n in chosen) * c.step
            if cap:  # rented by the hour as the need asks, up to the cap: its expected rent, not a commitment
                rows.append({**base, "count": cap, "order_date": day(0.0),
                             "in_service": {"from": day(0.0), "until": day(horizon_s)},
                             "cost_usd": float(outcome.schedule.burst_usd.get(c.pool, 0.0)),
                             "value_left_usd": 0.0, "market_value_at_end_usd": 0.0})
        else:
            rows.extend(_rental_rows(c, outcome, base, day))
    for option in outcome.power_options:  # the site power upgrades ordered
        if option.name not in outcome.schedule.power:
            continue
        placed = grid.order_s[outcome.schedule.power[option.name]]
        used = outcome.schedule.power_usd[option.name]
        rows.append({"pool": option.name, "gpu": "site power", "tier": "power", "count": 0, "mw": option.kw / 1000.0,
                     "order_date": day(placed),
                     "in_service": {f"p{q}": day(placed + option.lead_s + option.slip_quantile(q / 100)) for q in (10, 50, 90)},
                     # committed: its price; worth at the end: its book value then (the planner counts the rest)
                     "cost_usd": option.cost_usd, "value_left_usd": option.cost_usd - used,
                     "market_value_at_end_usd": option.cost_usd - used})
    return sorted(rows, key=lambda row: (row["order_date"], row["pool"]))


def _rental_rows(c: Candidate, outcome: PlanOutcome, base: dict[str, Any], day) -> list[dict[str, Any]]:
    grid = outcome.grid
    held = dict(outcome.schedule.orders.get(c.pool, []))
    rows: list[dict[str, Any]] = []
    for month in range(len(grid.month_start_s)):
        count = held.get(month, 0) * c.step
        begin = max(grid.month_start_s[month], c.lead_s)
        cost = count * float(c.rent(month)) * max(grid.month_end_s[month] - begin, 0.0)
        if rows and rows[-1]["count"] == count and rows[-1]["_next"] == month:
            rows[-1].update(_next=month + 1, cost_usd=rows[-1]["cost_usd"] + cost)
            rows[-1]["in_service"]["until"] = day(grid.month_end_s[month])
        elif count:
            rows.append({**base, "count": count, "order_date": day(max(begin - c.lead_s, 0.0)),
                         "in_service": {"from": day(begin), "until": day(grid.month_end_s[month])},
                         "cost_usd": cost, "value_left_usd": 0.0, "market_value_at_end_usd": 0.0,
                         "_next": month + 1})
    for row in rows:
        del row["_next"]
    return rows


def period_rows(outcome: PlanOutcome) -> list[dict[str, Any]]:
    """Per target period: risk now, with the plan (search paths, stated interval), on fresh seeds."""
    target = outcome.settings.target.probability
    rows = []
    for p, label in enumerate(outcome.labels):
        planned, fresh = outcome.search, outcome.fresh
        status = "met" if planned.risk[p] <= target else (
            "within Monte Carlo error" if planned.lo[p] <= target else "missed")
        rows.append({
            "period": label, "start": outcome.starts[p].strftime("%Y-%m-%d"),
            "baseline": float(outcome.baseline.risk[p]),
            "planned": float(planned.risk[p]), "planned_ci": [float(planned.band_lo[p]), float(planned.band_hi[p])],
            "fresh": float(fresh.risk[p]), "fresh_ci": [float(fresh.band_lo[p]), float(fresh.band_hi[p])],
            "status": status,
        })
    return rows


def plan_document(outcome: PlanOutcome) -> dict[str, Any]:
    """The content of ``plan.json``."""
    orders = order_rows(outcome)
    periods = period_rows(outcome)
    worst = int(np.argmax(outcome.search.risk))
    settings = outcome.settings
    return {
        "target": {"probability": settings.target.probability, "per": settings.target.per},
        "budget_usd": settings.budget_usd,
        "target_met": outcome.target_met,
        "orders": orders,
        "cost": {
            "orders_commit_usd": float(sum(row["cost_usd"] for row in orders)),
            "value_left_at_end_usd": float(sum(row["value_left_usd"] for row in orders)),
            # What the owned GPUs ordered would fetch at the horizon's end (their market_value
            # curve; 0 without one): the planner's objective counts the commitment less this.
            "market_value_at_end_usd": float(sum(row.get("market_value_at_end_usd", 0.0) for row in orders)),
            "orders_net_of_resale_usd": float(sum(row["cost_usd"] - row.get("market_value_at_end_usd", 0.0)
                                                  for row in orders)),
            "horizon_cost_usd_p50": float(outcome.results.summary["quantiles"]["cost_usd"]["p50"]),
        },
        "most_at_risk": periods[worst] if len(periods) else None,
        "power_blocked_gpus_peak": _power_blocked(outcome),
        "periods": periods,
        "unreachable": outcome.unreachable,
        "candidates": [{"pool": c.pool, "tier": _TIER[c.kind], "step": c.step, "max": c.max,
                        "lead_time": format_duration(c.lead_s),
                        "slip": None if c.slip is None else c.slip.model_dump(mode="json")}
                       for c in outcome.candidates],
        "paths": outcome.paths,
        "fresh_paths": int(outcome.results.summary["paths"]),
        "seeds": {"need": outcome.seed, "confirm": outcome.seed + 1, "fresh": outcome.fresh_seed},
        "intervals": "Wilson, 90% for all periods together (Bonferroni)",
        "rounds": outcome.rounds,
        "simulations": outcome.simulations,
    }


def _power_blocked(outcome: PlanOutcome) -> dict[str, float] | None:
    """P50 and P90 over the kept fresh-seed paths of the most GPUs delivered but waiting for site
    power at once (None: no path kept)."""
    series = outcome.results.timeseries
    if not len(series) or "gpus_power_blocked" not in series:
        return None
    peaks = series.groupby("path")["gpus_power_blocked"].max()
    return {"p50": float(np.quantile(peaks, 0.5)), "p90": float(np.quantile(peaks, 0.9)),
            "paths": int(len(peaks))}


def save_order_plan(directory: str | Path, outcome: PlanOutcome, report: bool = True,
                    replan: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write the fresh-seed run of the plan with ``plan.json`` beside it, and its report (which
    shows the orders and the risk per period), atomically. ``replan``: the comparison with
    re-planning (:mod:`simulator.decisions.replan_compare`), kept under ``plan.json``'s ``replan``."""
    document = plan_document(outcome)
    if replan is not None:
        document["replan"] = replan
    with staged_directory(Path(directory)) as staging:
        outcome.results.write_files(staging, report=False)
        (staging / "plan.json").write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        if report:
            from simulator.report import render_report

            render_report(staging, variants=False)
    return document


__all__ = ["order_rows", "period_rows", "plan_document", "save_order_plan"]
