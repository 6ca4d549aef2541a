"""From a scenario to the planner's terms and back: order candidates priced from the compiled
scenario, the planning grid (days, review dates, calendar months, target periods), and the
scenario with a schedule's orders written into it.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import numpy as np
import pandas as pd
from pydantic import ValidationError

from simulator.decisions.order_schedule import Candidate, Grid, PowerOption, Schedule
from simulator.path.compiled import CompiledScenario
from simulator.runs.need import slot_firsts
from simulator.scenario import Scenario, ScenarioError
from simulator.scenario.fleet import Order
from simulator.scenario.plan import OrderCandidate, PlanSettings, check_plan_orders
from simulator.serving.resolve import load_scenario
from simulator.units import SECONDS_PER_YEAR, Seconds, format_duration, format_timestamp

#: The most GPUs one --order may add (more than any fleet; past it, money overflows a float).
MAX_ORDER_GPUS = 10_000_000

_PERIOD_CODES = {"month": "M", "quarter": "Q"}


def candidates_of(scenario: Scenario, compiled: CompiledScenario, orders: list[OrderCandidate],
                  order_s: np.ndarray) -> list[Candidate]:
    """Each order candidate with its lead time, slip, price, and the share of each model's
    need one of its GPUs covers (its replicas' capacity per GPU over the model's first pool's)."""
    names = [pool.name for pool in scenario.fleet.pools]
    out = []
    for spec in orders:
        i = names.index(spec.pool)
        pool = scenario.fleet.pools[i]
        acquisition = pool.acquisition
        default_from = pool.procurement or (pool.orders[-1] if pool.orders else None)
        lead = spec.lead_time if spec.lead_time is not None else (
            default_from.lead_time if default_from is not None else
            getattr(acquisition, "provisioning_delay", 0.0))
        slip = spec.slip if spec.slip is not None else (
            default_from.slip if default_from is not None and acquisition.type == "owned" else None)
        eff = np.zeros(len(compiled.model_names))
        for m in range(len(compiled.model_names)):
            prefs = list(compiled.preferences[m])
            if i in prefs and compiled.capacity_per_step[m, 0] > 0:
                j = prefs.index(i)
                per_gpu = compiled.capacity_per_step[m, j] / compiled.gpus_per_replica[m, j]
                eff[m] = per_gpu / (compiled.capacity_per_step[m, 0] / compiled.gpus_per_replica[m, 0])
        hold = (compiled.facility_usd_gpu_s[i] + compiled.busy_kw[i] * compiled.usd_per_kwh / 3600.0
                if acquisition.type == "owned" else compiled.cloud_usd_gpu_s[i])
        reserve_end = None
        if acquisition.type == "reserved":
            horizon = scenario.horizon
            begins = [horizon.start + pd.Timedelta(seconds=float(s) + lead) for s in order_s]
            reserve_end = np.array([(acquisition.term.end_from(b) - horizon.start).total_seconds() for b in begins])
        kind = "burst" if acquisition.type == "on_demand" and acquisition.autoscale is not None else acquisition.type
        out.append(Candidate(
            pool=spec.pool, kind=kind, step=spec.step, max=spec.max, lead_s=float(lead), slip=slip,
            eff=eff, price_usd=float(compiled.price_usd[i]) if acquisition.type == "owned" else 0.0,
            usd_per_gpu_s=float(hold), reserve_end_s=reserve_end, life_s=float(compiled.life_s[i]),
            market=scenario.market_value.get(pool.gpu) if acquisition.type == "owned" else None,
            acquisition=acquisition if kind == "burst" else None, start_count=int(pool.count),
            kw_per_gpu=float(compiled.pools[i].site_kw_per_gpu) if acquisition.type == "owned" else 0.0))
    return out


def priced_by_markets(candidates: list[Candidate], results, scenario: Scenario, grid: Grid) -> list[Candidate]:
    """The candidates whose pool's market moves (``markets.rent``, ``markets.purchase``), priced
    month by month at the mean over the need run's paths of the rates and prices drawn (the
    same streams every later run draws: common random numbers)."""
    rates = results.market_rates
    if not len(rates):
        return candidates
    months = pd.DatetimeIndex([at(scenario, s).to_period("M").start_time for s in grid.month_start_s])
    out = []
    for candidate in candidates:
        mine = rates[rates["pool"] == candidate.pool]
        if candidate.kind in ("on_demand", "burst") and (mine["kind"] == "rent").any():
            mean = mine[mine["kind"] == "rent"].groupby("month")["usd_per_gpu_hour"].mean()
            by_month = mean.reindex(months).ffill().bfill().to_numpy(dtype=np.float64) / 3600.0
            candidate = dataclasses.replace(candidate, rent_by_month=by_month)
        elif candidate.kind == "owned" and (mine["kind"] == "purchase").any():
            mean = mine[mine["kind"] == "purchase"].groupby("month")["usd_per_gpu"].mean()
            candidate = dataclasses.replace(candidate, price_by_month=mean.reindex(months).ffill().bfill().to_numpy(
                dtype=np.float64))
        out.append(candidate)
    return out


def power_options(scenario: Scenario) -> list[PowerOption]:
    """The site power upgrades on offer (``power.upgrades`` not ordered), in the planner's terms."""
    return [PowerOption(name=u.name, kw=u.mw * 1000.0, cost_usd=u.cost_usd, lead_s=float(u.lead_time), slip=u.slip,
                        life_s=u.depreciation_years * SECONDS_PER_YEAR)
            for u in scenario.power.upgrades if u.at is None]


def plan_settings(scenario: Scenario, orders: tuple[str, ...] = (), **given: Any) -> PlanSettings:
    """The scenario's ``plan:`` section with the command line's choices over it: ``--order
    POOL:STEP:MAX`` candidates replace its list (keeping the lead time and slip it gives a
    pool), and each option given (target probability, per, budget_usd, review_every, paths)
    replaces its field."""
    settings = scenario.plan or PlanSettings()
    data = settings.model_dump()
    if orders:
        known = {candidate.pool: candidate for candidate in settings.orders}
        parsed = []
        for text in orders:
            try:
                pool, step, most = (part.strip() for part in text.rsplit(":", 2))
                step_n, most_n = int(step), int(most)
            except ValueError:
                raise ScenarioError((), f"--order expects POOL:STEP:MAX, e.g. h100:64:512, got {text!r}") from None
            if step_n < 1 or most_n < step_n or most_n > MAX_ORDER_GPUS:
                raise ScenarioError((), f"--order {text!r}: need 1 <= STEP <= MAX <= {MAX_ORDER_GPUS:,}")
            earlier = known.get(pool)
            parsed.append({"pool": pool, "step": step_n, "max": most_n,
                           "lead_time": format_duration(earlier.lead_time)
                           if earlier is not None and earlier.lead_time is not None else None,
                           "slip": earlier.slip.model_dump() if earlier and earlier.slip else None})
        data["orders"] = parsed
    target = given.pop("target", None)
    if target is not None:
        data["target"]["probability"] = target
    per = given.pop("per", None)
    if per is not None:
        data["target"]["per"] = per
    data.update({key: value for key, value in given.items() if value is not None})
    try:
        out = PlanSettings.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        fields = [part for part in error["loc"] if isinstance(part, int) or part.isidentifier()]
        raise ScenarioError(("plan", *fields), error["msg"]) from None
    try:
        check_plan_orders(out.orders, scenario.fleet.pools)
    except ScenarioError as exc:
        if not orders:
            raise
        raise ScenarioError((), f"--order {orders[exc.loc[2]]!r}: {exc.message}") from None
    return out


def review_dates(scenario: Scenario, review_s: float) -> np.ndarray:
    """Order dates in seconds from the start: every ``review_s``."""
    return np.arange(0.0, scenario.horizon.length_s, review_s)


def planning_grid(scenario: Scenario, per: str, review_s: float) -> tuple[Grid, list[str]]:
    """The grid of the schedule, and the label of each target period."""
    horizon = scenario.horizon
    firsts = slot_firsts(horizon)
    n_slots = len(firsts)
    starts = firsts * horizon.step_s
    ends = np.append(starts[1:], horizon.length_s)
    stamps = pd.DatetimeIndex(horizon.start + pd.to_timedelta(starts, unit="s"))
    months = stamps.to_period("M")
    month_labels = months.unique()
    month_of_slot = month_labels.get_indexer(months)
    month_start = np.maximum([(p.start_time - horizon.start).total_seconds() for p in month_labels], 0.0)
    month_end = np.minimum([((p + 1).start_time - horizon.start).total_seconds() for p in month_labels],
                           horizon.length_s)
    if per == "horizon":
        period_of_slot, labels = np.zeros(n_slots, dtype=np.int64), ["horizon"]
    else:
        periods = stamps.to_period(_PERIOD_CODES[per])
        unique = periods.unique()
        period_of_slot, labels = unique.get_indexer(periods), [str(p) for p in unique]
    grid = Grid(slot_start_s=starts, slot_end_s=ends, period_of_slot=np.asarray(period_of_slot, dtype=np.int64),
                month_of_slot=np.asarray(month_of_slot, dtype=np.int64), month_start_s=np.asarray(month_start),
                month_end_s=np.asarray(month_end), order_s=review_dates(scenario, review_s),
                horizon_s=horizon.length_s)
    return grid, labels


def period_starts(scenario: Scenario, per: str, labels: list[str]) -> list[pd.Timestamp]:
    """Start of each target period inside the horizon (the horizon's start for ``horizon``)."""
    if per == "horizon":
        return [scenario.horizon.start]
    return [max(pd.Period(label, freq=_PERIOD_CODES[per]).start_time, scenario.horizon.start) for label in labels]


def at(scenario: Scenario, offset_s: float) -> pd.Timestamp:
    return scenario.horizon.start + pd.Timedelta(seconds=float(offset_s))


def apply_schedule(scenario: Scenario, candidates: list[Candidate], grid: Grid, schedule: Schedule) -> Scenario:
    """The scenario with the schedule's orders in it: owned purchases as pool ``orders``,
    reservations as new reserved pools (the pool's GPU, price, term and failures, without its
    training settings, listed after it wherever it is listed), rentals as dated ``changes`` of
    the on-demand pool, a burst pool's cap as its autoscaler's ``max_count``."""
    data = scenario.model_dump(mode="json")
    data["variants"] = {}
    pools = data["fleet"]["pools"]
    by_name = {pool["name"]: pool for pool in pools}
    for candidate in candidates:
        chosen = schedule.orders.get(candidate.pool, [])
        pool = by_name[candidate.pool]
        if candidate.kind == "owned":
            for date, n in chosen:
                order = Order(at=at(scenario, grid.order_s[date]), count=n * candidate.step,
                              lead_time=Seconds(candidate.lead_s), slip=candidate.slip)
                pool.setdefault("orders", []).append(order.model_dump(mode="json", exclude_none=True))
        elif candidate.kind == "burst":  # its own autoscaler, renting up to the planned cap
            own = candidate.acquisition
            cap = max(sum(n for _, n in chosen) * candidate.step, int(own.min_count or 0))
            if cap:
                pool["acquisition"] = {**own.model_dump(mode="json"), "max_count": cap}
                pool["count"] = min(candidate.start_count, cap)
            else:  # not used: no autoscaler (one may not be capped below a node), nothing rented
                pool["acquisition"].update(autoscale=None, max_count=None, min_count=None)
                pool["count"] = 0
        elif candidate.kind == "reserved":
            for k, (date, n) in enumerate(chosen):
                _add_reservation(data, pool, f"{candidate.pool}+{k + 1}", n * candidate.step,
                                 at(scenario, grid.order_s[date] + candidate.lead_s))
        else:
            _add_rentals(scenario, pool, candidate, grid, chosen)
    for upgrade in data.get("power", {}).get("upgrades", []):  # the upgrades ordered: dated
        if upgrade["name"] in schedule.power and upgrade.get("at") is None:
            upgrade["at"] = format_timestamp(at(scenario, grid.order_s[schedule.power[upgrade["name"]]]))
    return load_scenario(data, base_dir=scenario.source_dir)


def _add_reservation(data: dict[str, Any], pool: dict[str, Any], name: str, count: int, start: pd.Timestamp) -> None:
    new = copy.deepcopy(pool)
    new.update(name=name, count=count, changes=[], orders=[])
    new.pop("procurement", None)
    new.pop("training", None)  # a training partition is the base pool's, not each reservation's
    new["acquisition"]["start"] = format_timestamp(start)
    data["fleet"]["pools"].append(new)
    for model in data.get("models", []):
        if pool["name"] in model["pools"]:
            model["pools"].insert(model["pools"].index(pool["name"]) + 1, name)
            if pool["name"] in (model.get("replicas") or {}):
                model["replicas"][name] = copy.deepcopy(model["replicas"][pool["name"]])


def _add_rentals(scenario: Scenario, pool: dict[str, Any], candidate: Candidate, grid: Grid,
                 chosen: list[tuple[int, int]]) -> None:
    held = np.zeros(len(grid.month_start_s) + 1, dtype=np.int64)
    for month, n in chosen:
        held[month] = n * candidate.step
    before = 0
    for month in range(len(held)):
        if held[month] == before:
            continue
        when = max(grid.month_start_s[month], candidate.lead_s) if month < len(grid.month_start_s) else None
        if when is None or when >= grid.horizon_s:
            break
        delta = int(held[month] - before)
        change = {"at": format_timestamp(at(scenario, when)), ("add" if delta > 0 else "remove"): abs(delta)}
        pool.setdefault("changes", []).append(change)
        before = int(held[month])


__all__ = ["apply_schedule", "at", "candidates_of", "period_starts", "planning_grid", "review_dates"]


def power_headroom(results, compiled: CompiledScenario, grid: Grid, level: float = 0.9) -> np.ndarray | None:
    """Per planning slot, the site power (kW) the fleet as it stands leaves under the cap: the cap
    (with the upgrades already ordered from their lead time plus the slip's ``level`` quantile)
    less the owned GPUs installed or waiting for power, the least over the slot's steps, the most
    over the kept paths (None: no cap)."""
    if not compiled.power_caps:
        return None
    step_s, n = compiled.step_s, compiled.n_steps
    times = np.arange(n) * step_s
    cap = np.full(n, np.inf)
    for at_s, kw in compiled.power_caps:
        cap[times >= at_s - 1e-9] = kw
    for _name, at_s, lead_s, slip, kw, _cost, _life in compiled.power_upgrades:
        energized = at_s + lead_s + (0.0 if slip is None else float(slip.quantile(level)))
        cap[times >= energized - 1e-9] += kw
    pools = results.pools
    kw_of = {name: compiled.pools[i].site_kw_per_gpu for i, name in enumerate(compiled.pool_names)}
    load = (pools["gpus_installed"] + pools["gpus_power_blocked"]) * pools["pool"].astype(str).map(kw_of)
    per_step = load.groupby([pools["path"], pools["time"]]).sum().groupby(level=0).apply(lambda s: s.to_numpy())
    used = np.max(np.stack(list(per_step)), axis=0) if len(per_step) else np.zeros(n)
    free = cap - used[:n]
    slot = np.searchsorted(grid.slot_start_s, times, side="right") - 1
    out = np.full(len(grid.slot_start_s), np.inf)
    np.minimum.at(out, np.clip(slot, 0, len(out) - 1), free)
    return out


def cash_room_by_month(results, scenario: Scenario, grid: Grid, settings: PlanSettings) -> np.ndarray | None:
    """Per calendar month of the grid: the fleet as it stands' month-end cash at the settings'
    path quantile, less the floor (None without a floor)."""
    if settings.cash_floor_usd is None:
        return None
    pnl = results.pnl
    cash = pnl.groupby("month")["cash_balance_usd"].quantile(settings.cash_quantile)
    months = pd.DatetimeIndex([(scenario.horizon.start + pd.Timedelta(seconds=float(s))).to_period("M").start_time
                               for s in grid.month_start_s])
    by_month = cash.reindex(months).ffill().bfill().to_numpy(dtype=np.float64)
    # Paying by month k lowers every later balance too: the room by k is the least ahead of it.
    room = np.minimum.accumulate((by_month - settings.cash_floor_usd)[::-1])[::-1]
    return room
