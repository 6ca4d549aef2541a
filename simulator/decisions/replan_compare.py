"""The open-loop plan against re-planning on the same paths: what waiting to see demand is worth.

The open-loop plan (:func:`~simulator.decisions.order_planner.plan_orders`) commits today to
every order it lists. Re-planning places the purchases as the path unfolds instead: each owned
candidate's pool gets the ``replan`` procurement policy (:mod:`simulator.path.fleet.replan`)
with the candidate's step, maximum, lead time and slip, the plan's review dates and risk
target, and the forecast settings the pool's own ``procurement`` gives when it is a ``replan``
policy (else the defaults, with ``prior_sd`` read from the spread of the plan's own paths:
:func:`prior_sd_of`). Rentals, reservations, a burst pool's cap and the power upgrades
stay as the plan has them: what is re-planned is the purchases. The policy reads the need of
the models whose first choice is the pool (as the threshold policy does).

Both are simulated on the plan's fresh seeds and paths (common random numbers: path ``i`` sees
the same demand, failures and slips under both), and compared on the risk of each period,
the GPUs ordered per path, the money (capex, cost, lowest cash, net income: P10/P50/P90, and
of the paired difference per path) and what each commits before the first review (the
open-loop plan: all of its orders, decided today; re-planning: what its first review, at the
start, orders).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from simulator.decisions.order_planner import (
    PeriodRisk,
    PlanOutcome,
    StageProgress,
    period_shorts,
    without_procurement,
)
from simulator.decisions.order_schedule import Schedule
from simulator.decisions.plan_setup import apply_schedule
from simulator.runs.montecarlo import simulate
from simulator.runs.results import Results
from simulator.scenario import Scenario
from simulator.scenario.procurement import Procurement
from simulator.units import Seconds, format_duration


@dataclass
class ReplanComparison:
    scenario: Scenario  # the re-planning scenario
    results: Results
    risk: PeriodRisk
    document: dict[str, Any]


def replanning_scenario(outcome: PlanOutcome, original: Scenario) -> Scenario:
    """The plan with its purchases replaced by the ``replan`` policy on each owned candidate's pool."""
    settings = outcome.settings
    base = without_procurement(original.model_copy(update={"variants": {}, "plan": settings}), settings)
    kept = Schedule({pool: ([] if any(c.pool == pool and c.kind == "owned" for c in outcome.candidates) else orders)
                     for pool, orders in outcome.schedule.orders.items()},
                    outcome.schedule.cost_usd, outcome.schedule.uncovered, outcome.schedule.status,
                    outcome.schedule.burst_usd, outcome.schedule.power, outcome.schedule.power_usd)
    planned = apply_schedule(base, outcome.candidates, outcome.grid, kept)
    own = {pool.name: pool.procurement for pool in original.fleet.pools}
    pools = []
    for pool in planned.fleet.pools:
        candidate = next((c for c in outcome.candidates if c.pool == pool.name and c.kind == "owned"), None)
        if candidate is None:
            pools.append(pool)
            continue
        given = own.get(pool.name)
        forecast = ({"horizon": Seconds(given.horizon), "history": Seconds(given.history), "prior_sd": given.prior_sd}
                    if given is not None and given.policy == "replan" else {"prior_sd": prior_sd_of(outcome.results)})
        policy = Procurement.model_validate({
            "policy": "replan", "order_count": candidate.step, "max_orders": candidate.max // candidate.step,
            "lead_time": Seconds(candidate.lead_s), "slip": candidate.slip, "review_every": Seconds(settings.review_every),
            "target": settings.target.probability, **forecast})
        pools.append(pool.model_copy(update={"procurement": policy}))
    return planned.model_copy(update={"fleet": planned.fleet.model_copy(update={"pools": pools})})


def prior_sd_of(results: Results) -> float:
    """The scenario's own uncertainty about demand, as the forecast's prior: over the kept paths,
    the standard deviation of the log of each path's requests in its first whole month (the level)
    and of its growth from then to its last month per year (the trend), the larger of the two
    (0 when demand is known; 0.25 when too few paths are kept to tell)."""
    series = results.timeseries
    if not len(series) or series["path"].nunique() < 5:
        return 0.25
    monthly = series.groupby(["path", series["time"].dt.to_period("M")])["demand_requests"].sum().unstack()
    monthly = monthly.iloc[:, 1:-1] if monthly.shape[1] > 3 else monthly  # whole months
    first, last = monthly.iloc[:, 0], monthly.iloc[:, -1]
    usable = (first > 0) & (last > 0)
    if usable.sum() < 5:
        return 0.25
    years = max((monthly.shape[1] - 1) / 12.0, 1.0 / 12.0)
    level = float(np.std(np.log(first[usable]), ddof=1))
    trend = float(np.std(np.log(last[usable] / first[usable]), ddof=1)) / years if monthly.shape[1] > 1 else 0.0
    return float(min(max(level, trend), 5.0))


def compare_replan(outcome: PlanOutcome, original: Scenario, *, executor: object = None, workers: int | None = None,
                   progress: StageProgress | None = None) -> ReplanComparison:
    """Simulate re-planning on the plan's fresh paths and set it against the open-loop plan."""
    scenario = replanning_scenario(outcome, original)
    paths = int(outcome.results.summary["paths"])
    report = (lambda done, total: progress("re-planning on the same paths", done, total)) if progress else None
    results = simulate(scenario, paths=paths, seed=outcome.fresh_seed, executor=executor, workers=workers,
                       progress=report, keep_paths=0)
    per = outcome.settings.target.per
    risk = PeriodRisk.of(period_shorts(results, per, outcome.labels))
    owned = [c.pool for c in outcome.candidates if c.kind == "owned"]
    policies = {
        "open_loop": _figures(outcome.results, outcome.fresh, outcome.labels, owned, paths, decided_today=True),
        "replan": _figures(results, risk, outcome.labels, owned, paths, decided_today=False),
    }
    document = {
        "paths": paths, "seed": outcome.fresh_seed,
        "replanned_pools": owned,
        "forecast": {pool.name: {"prior_sd": pool.procurement.prior_sd, "history": format_duration(pool.procurement.history)}
                     for pool in scenario.fleet.pools if pool.name in owned},
        "review_every": format_duration(outcome.settings.review_every),
        "target": outcome.settings.target.probability,
        "policies": policies,
        "difference": _paired(outcome.results, results, owned, paths),
        "note": "the same paths (common random numbers); the open-loop plan commits all its orders at the start, "
                "re-planning only what its first review orders",
    }
    return ReplanComparison(scenario, results, risk, document)


def _gpus_ordered(results: Results, pools: list[str], paths: int) -> tuple[np.ndarray, np.ndarray]:
    """Per path: GPUs ordered for ``pools`` over the horizon, and their cost at the pools' price."""
    orders = results.orders
    gpus, usd = np.zeros(paths), np.zeros(paths)
    if len(orders):
        mine = orders[orders["pool"].isin(pools) & (orders["ordered"] >= results.scenario.horizon.start)]
        by_path = mine.groupby("path")[["count", "usd"]].sum()
        gpus[by_path.index.to_numpy()] = by_path["count"].to_numpy()
        usd[by_path.index.to_numpy()] = by_path["usd"].to_numpy()
    return gpus, usd


def _quantiles(values: np.ndarray) -> dict[str, float]:
    return {"mean": float(np.mean(values)), **{f"p{q}": float(np.quantile(values, q / 100)) for q in (10, 50, 90)}}


def _per_path(results: Results, column: str, how: str) -> np.ndarray:
    """Per path, in path order: a P&L column summed over the months, or its least month
    (``cost_usd``: COGS and R&D compute, the fleet's whole cost)."""
    pnl = results.pnl.sort_values(["path", "month"])
    if column == "cost_usd":
        pnl = pnl.assign(cost_usd=pnl["cogs_usd"] + pnl["rnd_compute_usd"])
    grouped = pnl.groupby("path")[column]
    return (grouped.sum() if how == "sum" else grouped.min()).to_numpy()


def _figures(results: Results, risk: PeriodRisk, labels: list[str], pools: list[str], paths: int,
             decided_today: bool) -> dict[str, Any]:
    """One policy's figures; ``decided_today``: all its purchases are committed at the start (the
    open-loop plan), else only those ordered at the start (re-planning's first review)."""
    gpus, usd = _gpus_ordered(results, pools, paths)
    if decided_today:
        at_start = float(np.mean(usd))
    else:
        orders = results.orders
        start = results.scenario.horizon.start
        first = orders[orders["pool"].isin(pools) & (orders["ordered"] == start)] if len(orders) else orders
        at_start = float(first["usd"].sum() / paths) if len(first) else 0.0
    quantiles = results.summary["quantiles"]
    return {
        "risk_by_period": [{"period": label, "risk": float(risk.risk[p]), "ci": [float(risk.band_lo[p]), float(risk.band_hi[p])]}
                           for p, label in enumerate(labels)],
        "risk_max": float(risk.risk.max()),
        "gpus_ordered": _quantiles(gpus),
        "purchases_usd": _quantiles(usd),
        "committed_at_start_usd": at_start,
        "cost_usd": {k: float(quantiles["cost_usd"][k]) for k in ("p10", "p50", "p90")},
        "lowest_cash_usd": _quantiles(_per_path(results, "cash_balance_usd", "min")),
        "net_income_usd": _quantiles(_per_path(results, "net_income_usd", "sum")),
    }


def _paired(open_loop: Results, replan: Results, pools: list[str], paths: int) -> dict[str, Any]:
    """Re-planning less the open-loop plan, path by path (the same futures)."""
    gpus_a, usd_a = _gpus_ordered(open_loop, pools, paths)
    gpus_b, usd_b = _gpus_ordered(replan, pools, paths)
    out = {"gpus_ordered": _quantiles(gpus_b - gpus_a), "purchases_usd": _quantiles(usd_b - usd_a)}
    for name, column, how in (("cost_usd", "cost_usd", "sum"), ("net_income_usd", "net_income_usd", "sum"),
                              ("lowest_cash_usd", "cash_balance_usd", "min")):
        if column == "cost_usd" or (column in open_loop.pnl and column in replan.pnl):
            out[name] = _quantiles(_per_path(replan, column, how) - _per_path(open_loop, column, how))
    return out


__all__ = ["ReplanComparison", "compare_replan", "replanning_scenario"]
