"""Plan the orders: what to buy, reserve or rent, how many and by when, for a per-period risk target.

The search, on ``n`` paths with common random numbers (every confirmation of the search uses the
same seed, so plans are compared on the same futures):

1. **Need.** Simulate the scenario as it stands and record, per path, model and day, the GPUs
   it lacked (:mod:`simulator.runs.need`).
2. **Need quantile.** For each target period, the per-day GPUs that cover enough paths: the
   smallest quantile level ``q`` whose per-day quantiles cover every day of the period on a
   share ``1 - a`` of the paths (joint coverage, found by bisection). When orders can slip, half
   the period's risk allowance goes to demand, the rest (what demand did not use) to delivery:
   deliveries are timed by the slip's quantile at that level.
3. **Cheapest schedule.** A mixed-integer program (:mod:`simulator.decisions.order_schedule`)
   chooses whole orders at review dates, reservations and monthly rentals covering that need
   at least cost, all commitments counted (so a late purchase is not free).
4. **Confirm and repair.** Simulate the planned fleet on other paths (the need was read on
   the first ones: confirming on them would flatter the plan), the same ones every round. Where
   a period's risk there is above the target, two repairs are confirmed and the better kept: a
   stricter quantile in that period (earlier deliveries, more cover), or exactly what the
   planned fleet still lacked there on the confirmation paths, covered at the target. The
   search stops when no period misses, when no repair buys risk reduction, when a schedule
   comes back that was already confirmed, or after ``max_rounds``; it returns the best plan
   found (least risk above the target).
5. **Fresh seeds.** The plan is simulated once more on new seeds and four times the paths: an
   independent check of the risk it states (with 90% intervals holding for all periods
   together), and the run directory written.

Periods the candidates cannot protect are named with the reason: nothing ordered from the start
arrives in time, the candidates' maxima or the budget fall short, or no candidate serves the
model that runs short.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd

from simulator.decisions.order_schedule import Candidate, Grid, Schedule, cheapest_schedule
from simulator.decisions.plan_outcome import LEVEL, PeriodRisk, PlanOutcome
from simulator.decisions.plan_reasons import unreachable_periods
from simulator.decisions.plan_setup import (
    apply_schedule,
    candidates_of,
    cash_room_by_month,
    period_starts,
    planning_grid,
    power_headroom,
    power_options,
    priced_by_markets,
)
from simulator.decisions.unit_need import unit_companions
from simulator.path.compiled import compile_scenario
from simulator.runs.montecarlo import simulate
from simulator.runs.results import Results
from simulator.scenario import Scenario, ScenarioError
from simulator.scenario.plan import PlanSettings, check_plan_orders

_Z = NormalDist().inv_cdf(0.5 + LEVEL / 2)  # two-sided 90%
StageProgress = Callable[[str, int, int], None]


def auto_paths(probability: float) -> int:
    """Paths that put the 90% half-width of a risk near the target at half the target, so a
    plan at the target is told from one at twice it (50 to 2,000)."""
    return int(min(2000, max(50, math.ceil(4 * _Z**2 * (1 - probability) / probability))))


def fresh_paths(n: int) -> int:
    """Paths of the fresh-seed check: four times the search's (so its figures carry half the
    Monte Carlo error of the ones they check), at most 10,000."""
    return min(4 * n, max(n, 10_000))


@dataclass
class Trial:
    """One schedule of the search: the need it covers, how deliveries are timed, and once
    confirmed, its plan and risk on the confirmation paths."""

    need_q: np.ndarray
    delivery: np.ndarray
    allowance: np.ndarray
    extra: np.ndarray  # need added by repairs
    schedule: Schedule | None = None
    planned: Scenario | None = None
    confirmation: Results | None = None
    risk: PeriodRisk | None = None

    def excess(self, target: float) -> float:
        return float(np.maximum(self.risk.risk - target, 0.0).sum())


def plan_orders(scenario: Scenario, settings: PlanSettings, *, seed: int | None = None,
                executor: object = None, workers: int | None = None,
                progress: StageProgress | None = None) -> PlanOutcome:
    """Find the cheapest order plan meeting ``settings.target`` (see the module docstring)."""
    if not settings.orders:
        raise ScenarioError(("plan", "orders"), "nothing to plan: give order candidates (--order POOL:STEP:MAX)")
    check_plan_orders(settings.orders, scenario.fleet.pools)
    base = without_procurement(scenario.model_copy(update={"variants": {}, "plan": settings}), settings)
    target = settings.target.probability
    n = auto_paths(target) if settings.paths == "auto" else int(settings.paths)
    seed = base.seed if seed is None else int(seed)
    grid, labels = planning_grid(base, settings.target.per, settings.review_every)
    # Lead times and slips default to the procurement policy the plan replaces.
    compiled = compile_scenario(base)
    candidates = candidates_of(scenario, compiled, settings.orders, grid.order_s)
    companions = unit_companions(compiled)
    count = [0]

    def run(planned: Scenario, stage: str, run_seed: int, need: bool = False, keep: int | None = 0,
            paths: int = n) -> Results:
        count[0] += 1
        report = (lambda done, total: progress(stage, done, total)) if progress else None
        return simulate(planned, paths=paths, seed=run_seed, executor=executor, workers=workers, progress=report,
                        keep_paths=keep, need=need, lean=need)  # the search's runs: risk, need and cash only

    baseline_run = run(base, "the fleet as it stands", seed, need=True, keep=min(n, 4))
    headroom = power_headroom(baseline_run, compile_scenario(base), grid, 1.0 - target)
    cash_room = cash_room_by_month(baseline_run, base, grid, settings)
    candidates = priced_by_markets(candidates, baseline_run, base, grid)
    upgrades = power_options(base)
    need = baseline_run.need
    baseline = PeriodRisk.of(period_shorts(baseline_run, settings.target.per, labels))
    rounds: list[dict[str, Any]] = []
    seen: set[str] = set()
    split = 0.5 if any(c.slip is not None for c in candidates) else 1.0

    def at_allowance(allowance: np.ndarray, extra: np.ndarray) -> Trial:
        need_q, demand_risk = covering_need(need, grid.period_of_slot, allowance * split)
        return Trial(need_q + extra, 1.0 - np.clip(allowance - demand_risk, 0.5 / n, 1.0), allowance, extra)

    def confirm(trial: Trial, label: str) -> Trial | None:
        trial.schedule = cheapest_schedule(candidates, grid, trial.need_q, trial.delivery, settings.budget_usd,
                                           power_headroom_kw=headroom, cash_room_usd=cash_room, power_options=upgrades,
                                           companions=companions)
        key = repr((sorted(trial.schedule.orders.items()), sorted(trial.schedule.power.items())))
        if key in seen:
            return None  # a plan already confirmed
        seen.add(key)
        trial.planned = apply_schedule(base, candidates, grid, trial.schedule)
        trial.confirmation = run(trial.planned, label, seed + 1, need=True)
        trial.risk = PeriodRisk.of(period_shorts(trial.confirmation, settings.target.per, labels))
        missed = trial.risk.risk > target + 1e-12
        rounds.append({"round": len(rounds) + 1, "repair": label, "orders": _dated(base, grid, candidates, trial.schedule),
                       "orders_cost_usd": trial.schedule.cost_usd, "risk_max": float(trial.risk.risk.max()),
                       "risk_above_target": trial.excess(target),
                       "periods_missed": [labels[i] for i in np.flatnonzero(missed)]})
        return trial

    best = confirm(at_allowance(np.full(len(labels), target), np.zeros_like(need[0], dtype=np.float64)),
                   "the need quantile")
    assert best is not None
    for _ in range(settings.max_rounds - 1):
        missed = best.risk.risk > target + 1e-12
        if not missed.any():
            break
        # Two repairs, both confirmed, the better kept: a stricter quantile in the missed periods
        # (earlier deliveries, more cover), or exactly what the planned fleet still lacks there
        # on the confirmation paths, covered at the target.
        stricter = np.where(missed, best.allowance * np.clip(target / np.maximum(best.risk.risk, 1e-12), 0.2, 0.8),
                            best.allowance)
        lacking, _ = covering_need(best.confirmation.need, grid.period_of_slot, np.where(missed, target, 1.0))
        tried = [confirm(at_allowance(np.maximum(stricter, 0.5 / n), best.extra), "a stricter quantile"),
                 confirm(Trial(best.need_q + lacking, best.delivery, best.allowance, best.extra + lacking),
                         "what the confirmation lacks")]
        better = [t for t in tried if t is not None and t.excess(target) < best.excess(target) - 1e-12]
        if not better:
            break  # no repair buys risk reduction
        best = min(better, key=lambda t: (t.excess(target), t.schedule.cost_usd))
    schedule, search, planned = best.schedule, best.risk, best.planned
    fresh_seed = seed + 1_000_003
    results = run(planned, "fresh seeds: checking the plan", fresh_seed, keep=20, paths=fresh_paths(n))
    fresh = PeriodRisk.of(period_shorts(results, settings.target.per, labels))
    outcome = PlanOutcome(
        scenario=planned, settings=settings, candidates=candidates, grid=grid, labels=labels,
        starts=period_starts(base, settings.target.per, labels), schedule=schedule, paths=n, seed=seed,
        fresh_seed=fresh_seed, baseline=baseline, search=search, fresh=fresh, results=results, unreachable=[],
        rounds=rounds, simulations=count[0], power_headroom_kw=headroom, cash_room_usd=cash_room,
        power_options=upgrades)
    outcome.unreachable = unreachable_periods(outcome, base, need)
    return outcome


def _dated(scenario: Scenario, grid: Grid, candidates: list[Candidate], schedule: Schedule) -> list[dict[str, Any]]:
    """A round's orders: pool, GPUs, and the order date (rentals: the month)."""
    out = []
    for c in candidates:
        for index, n in schedule.orders.get(c.pool, []):
            offset = grid.month_start_s[index] if c.kind == "on_demand" else grid.order_s[index]
            out.append({"pool": c.pool, "count": n * c.step,
                        "at": (scenario.horizon.start + pd.Timedelta(seconds=float(offset))).strftime("%Y-%m-%d")})
    for name, index in schedule.power.items():
        out.append({"power": name,
                    "at": (scenario.horizon.start + pd.Timedelta(seconds=float(grid.order_s[index]))).strftime("%Y-%m-%d")})
    return out


def without_procurement(scenario: Scenario, settings: PlanSettings) -> Scenario:
    """The planner's orders replace the procurement policy of the pools it orders for, and a
    burst pool it plans starts capped at its ``min_count`` (the plan sets its cap)."""
    planned = {candidate.pool for candidate in settings.orders}

    def planned_pool(pool):
        if pool.name not in planned:
            return pool
        update: dict[str, Any] = {"procurement": None}
        acquisition = pool.acquisition
        if acquisition.type == "on_demand" and acquisition.autoscale is not None:
            floor = acquisition.min_count or 0
            update["acquisition"] = acquisition.model_copy(
                update={"max_count": floor} if floor else {"autoscale": None, "max_count": None, "min_count": None})
            if not floor:
                update["count"] = 0
        return pool.model_copy(update=update)

    pools = [planned_pool(pool) for pool in scenario.fleet.pools]
    if all(new is old for new, old in zip(pools, scenario.fleet.pools, strict=True)):
        return scenario
    return scenario.model_copy(update={"fleet": scenario.fleet.model_copy(update={"pools": pools})})


def period_shorts(results: Results, per: str, labels: list[str]) -> np.ndarray:
    """``(paths, periods)`` bool: whether each path had a material shortfall in each period."""
    rows = results.period_paths
    months = rows[rows["period"] == "month"]
    short = months.pivot(index="path", columns="start", values="short").fillna(False).astype(bool)
    if per == "horizon":
        return short.any(axis=1).to_numpy()[:, None]
    code = {"month": "M", "quarter": "Q"}[per]
    keys = pd.DatetimeIndex(short.columns).to_period(code).astype(str)
    out = np.zeros((len(short), len(labels)), dtype=bool)
    index = {label: i for i, label in enumerate(labels)}
    for column, key in zip(short.columns, keys, strict=True):
        if key in index:
            out[:, index[key]] |= short[column].to_numpy()
    return out


def covering_need(need: np.ndarray, period_of_slot: np.ndarray, allowance: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Per model and slot, the GPUs to add so that a share ``1 - allowance[p]`` of the paths
    lack nothing on any day of period ``p``: per-day quantiles across paths at the smallest
    level that covers the period jointly (nothing where the allowance is 1). Also the share of
    paths each period leaves uncovered."""
    n_paths, n_models, n_slots = need.shape
    out = np.zeros((n_models, n_slots))
    left = np.zeros(len(allowance))
    for p, a in enumerate(allowance):
        slots = np.flatnonzero(period_of_slot == p)
        block = need[:, :, slots].astype(np.float64)
        if a >= 1.0 or not len(slots) or not block.any():
            continue
        lo, hi = 1.0 - a, 1.0
        share, level = _cover(block, lo)
        if share < 1.0 - a - 1e-12:
            for _ in range(40):
                mid = 0.5 * (lo + hi)
                if _cover(block, mid)[0] >= 1.0 - a - 1e-12:
                    hi = mid
                else:
                    lo = mid
            share, level = _cover(block, hi)
        out[:, slots] = level
        left[p] = 1.0 - share
    return out, left


def _cover(block: np.ndarray, q: float) -> tuple[float, np.ndarray]:
    """The per-day quantiles at ``q`` of ``block`` (paths, models, days), and the share of paths
    they cover on every day."""
    level = np.quantile(block, q, axis=0, method="inverted_cdf")
    return float((block <= level[None] + 1e-9).all(axis=(1, 2)).mean()), level


__all__ = ["PeriodRisk", "PlanOutcome", "auto_paths", "covering_need", "period_shorts", "plan_orders"]
