"""Why a period of an order plan cannot meet its target: per model short, the first reason that
holds — nothing ordered at the start arrives in time, the site's power cap (and the upgrades
on offer), cash, the budget, the candidates' maxima — or, with no GPU missing, what more GPUs do
not remove (latency, slips, failures, demand within a day)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from simulator.decisions.order_schedule import Candidate, Grid
from simulator.decisions.plan_outcome import PlanOutcome
from simulator.scenario import Scenario


def unreachable_periods(outcome: PlanOutcome, base: Scenario, need: np.ndarray) -> list[dict[str, str]]:
    """Each period still above the target on the confirmation paths, and why (per model short)."""
    out = []
    models = [model.name for model in base.models]
    for p in np.flatnonzero(outcome.missed):
        slots = np.flatnonzero(outcome.grid.period_of_slot == p)
        reasons = [f"{models[m]}: {_why(outcome, base, m, slots)}" for m in range(len(models))
                   if need[:, m, slots].any()]
        if not reasons:
            reasons = [f"P(short) {outcome.search.risk[p]:.1%} with no GPUs missing: latency (SLO) shortfalls, "
                       "which more GPUs on these candidates do not remove"]
        out.append({"period": outcome.labels[p], "risk": round(float(outcome.search.risk[p]), 4),
                    "reason": "; ".join(reasons)})
    return out


def _why(outcome: PlanOutcome, base: Scenario, m: int, slots: np.ndarray) -> str:
    candidates, grid, schedule = outcome.candidates, outcome.grid, outcome.schedule
    serving = [c for c in candidates if c.eff[m] > 0]
    if not serving:
        return "no order candidate serves it"
    uncovered = schedule.uncovered[m, slots] > 1e-3
    if uncovered.any():
        start = grid.slot_start_s[slots[int(np.flatnonzero(uncovered)[0])]]
        level = 1.0 - outcome.settings.target.probability
        earliest, pool = min((c.lead_s + c.slip_quantile(level) if c.kind == "owned" else c.lead_s, c.pool)
                             for c in serving)
        if earliest > start + 1e-6:
            when = (base.horizon.start + pd.Timedelta(seconds=earliest)).strftime("%Y-%m-%d")
            return f"nothing ordered at the start can be in service before {when} ({pool})"
        room = outcome.power_headroom_kw
        slot = slots[int(np.flatnonzero(uncovered)[0])]
        powered = [c for c in serving if c.kind == "owned" and c.kw_per_gpu > 0]
        if room is not None and np.isfinite(room[slot]) and powered:
            planned_kw = sum(c.kw_per_gpu * schedule.gpus(c) for c in powered)
            added = sum(o.kw for o in outcome.power_options if o.name in schedule.power)
            if room[slot] + added - planned_kw < min(c.kw_per_gpu * c.step for c in powered):
                return (f"the site's power cap: {room[slot] + added:,.0f} kW free then for new GPUs"
                        + (f" (with {added:,.0f} kW of upgrades)" if added else "")
                        + f", {planned_kw:,.0f} kW of them planned" + _upgrade_note(outcome, base, start))
        cash = outcome.cash_room_usd
        if cash is not None:
            month = int(grid.month_of_slot[slot])
            if cash[month] < schedule.cost_usd + min(_one_order_usd(c, grid) for c in serving):
                floor = outcome.settings.cash_floor_usd
                when = (base.horizon.start + pd.Timedelta(seconds=float(grid.month_start_s[month]))).strftime("%Y-%m")
                return (f"cash: the orders it needs cannot be paid by {when} and keep cash above "
                        f"${floor:,.0f} (${max(cash[month], 0.0):,.0f} free then, P{round(100 * outcome.settings.cash_quantile)} path)")
        budget = outcome.settings.budget_usd
        if budget is not None and budget - schedule.cost_usd < min(_one_order_usd(c, grid) for c in serving):
            return f"the budget (${budget:,.0f}) is spent"
        return "the candidates' maximum is not enough (" + ", ".join(f"{c.pool}: {c.max:,} GPUs" for c in serving) + ")"
    return (f"P(short) {outcome.search.risk[outcome.grid.period_of_slot[slots[0]]]:.1%} after {len(outcome.rounds)} "
            "rounds: the rest comes from what more GPUs on these candidates do not remove (delivery slips, "
            "failures, demand within a day)")


def _upgrade_note(outcome: PlanOutcome, base: Scenario, start_s: float) -> str:
    """Why the upgrades on offer did not help: none, or none energized in time."""
    left = [o for o in outcome.power_options if o.name not in outcome.schedule.power]
    if not outcome.power_options:
        return "; no power upgrade on offer (power.upgrades)"
    late = [o for o in left if o.lead_s + o.slip_quantile(1.0 - outcome.settings.target.probability) > start_s]
    if left and len(late) == len(left):
        first = min(late, key=lambda o: o.lead_s)
        when = (base.horizon.start + pd.Timedelta(seconds=first.lead_s)).strftime("%Y-%m-%d")
        return f"; no upgrade left can be energized by then ({first.name}: {when} at the earliest)"
    return ""


def _one_order_usd(candidate: Candidate, grid: Grid) -> float:
    """About what one more order of the candidate commits (a purchase at its price, a
    reservation's first term, a month's rent)."""
    if candidate.kind == "owned":
        return candidate.step * float(np.max(candidate.price(grid.order_s + candidate.lead_s, grid)))
    if candidate.kind == "reserved":
        return candidate.step * candidate.usd_per_gpu_s * float(candidate.reserve_end_s[0] - candidate.lead_s)
    months = np.arange(len(grid.month_start_s))
    return candidate.step * float(np.min(candidate.rent(months) * (grid.month_end_s - grid.month_start_s)))


__all__ = ["unreachable_periods"]
