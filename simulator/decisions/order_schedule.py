"""The cheapest order schedule that covers a need, as a small mixed-integer program (HiGHS).

Given, for each model and planning slot (a day), the GPUs that must be added to it (``need``,
counted in the shape of the model's first-choice pool), and order candidates (owned
purchases, reserved commitments, on-demand rentals), choose whole orders:

- ``x[c, d]``: orders of ``step`` GPUs placed on review date ``d`` (owned, reserved);
- ``x[c, mo]``: ``step``-GPU rentals held through calendar month ``mo`` (on-demand);
- ``y[c, m, t]`` ≥ 0: candidate ``c``'s GPUs given to model ``m`` in slot ``t`` (a pool may
  serve several models; one of its GPUs counts ``eff[c, m]`` GPUs of the model's need);
- ``s[m, t]`` ≥ 0: need left uncovered;
- for an autoscaled on-demand pool (a *burst* candidate), ``x[c]``: its cap in ``step``-GPU
  units, free; its ``y`` are paid, the rent of each GPU-slot given (the autoscaler rents what
  the need asks for, by the hour: a daily slot is charged whole, an upper bound).

An owned order placed at ``d`` is in service from ``d + lead + slip quantile`` (the quantile
at the risk the slot's period allows for delivery); a reservation from ``d + lead`` to the end
of its term; a rental in its month (from ``lead`` in the first). Subject to

    Σ_c eff[c, m] · y[c, m, t] + s[m, t] ≥ need[m, t]            every model and slot with a need
    Σ_m y[c, m, t] ≤ step_c · Σ (orders of c in service at t)   every candidate and slot
    Σ_d x[c, d] ≤ max_c / step_c  (owned, reserved);  x[c, mo] ≤ max_c / step_c  (rentals)
    Σ cost · x ≤ budget                                           when a budget is given
    Σ kW_c · step_c · (owned orders of c in service at t) ≤ headroom[t] + Σ kW_u · (upgrades in at t)
    Σ_d u[j, d] ≤ 1                                               each power upgrade on offer

where ``u[j, d]`` (binary) orders power upgrade ``j`` on review date ``d``: energized ``lead +
slip quantile`` later, it raises the headroom of every later slot; it costs what it is used up
within the horizon (its price × the share of its life then past: the plant stays on the books
at its remaining value, as a GPU counts its value at the end);

the program is solved twice: first for the least uncovered need (``Σ s``: zero when the need
can be met), then for the least cost keeping that coverage. So the result is the exact optimum
of the model; what cannot be covered (orders too late, candidates at their maximum, the budget)
is left in ``s`` and reported. The cost of an order is all it commits, in the horizon or after:
an owned GPU's price less what it would fetch at the horizon's end (its ``market_value`` curve
at its age then: a GPU bought late is mostly still worth its price; without a curve, nothing)
and its facility and energy while installed; a reservation's whole term; a rental's month.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix

from simulator.decisions.unit_need import fold_companions, split_for_companions

_EPS = 1e-6


def slip_quantile(slip, q: float) -> float:
    """A delivery's slip at quantile ``q`` (0 without one)."""
    return 0.0 if slip is None else float(slip.quantile(q))


@dataclass(frozen=True)
class Candidate:
    """One pool the planner may order for (see :mod:`simulator.scenario.plan`)."""

    pool: str
    kind: str  # "owned" | "reserved" | "on_demand" | "burst" (an autoscaled on-demand pool)
    step: int
    max: int
    lead_s: float
    slip: object | None  # a DurationDistribution, owned only
    eff: np.ndarray  # (models,): GPUs of each model's need one GPU of the pool covers (0: it does not serve it)
    price_usd: float  # owned: purchase price per GPU
    usd_per_gpu_s: float  # owned: facility and energy while installed; rented, reserved: the rent
    reserve_end_s: np.ndarray | None = None  # reserved: end of a term starting at each review date + lead
    life_s: float = np.inf  # owned: straight-line depreciation life
    market: object | None = None  # owned: the GPU's resale curve (a MarketValue; None: worth nothing at the end)
    acquisition: object | None = None  # burst: the pool's own terms (its autoscaler), restored with the planned cap
    start_count: int = 0  # burst: the pool's own starting count
    kw_per_gpu: float = 0.0  # owned: site power per GPU (TDP × server factor × PUE), against the power cap
    #: Where the pool's market moves (``markets``): the mean over the need run's paths of its
    #: rent per GPU-second (rented) or price per GPU (owned) in each calendar month of the grid.
    rent_by_month: np.ndarray | None = None
    price_by_month: np.ndarray | None = None

    def slip_quantile(self, q: float) -> float:
        return slip_quantile(self.slip, q)

    def rent(self, months: np.ndarray) -> np.ndarray:
        """Rent per GPU-second in each of ``months`` (indices into the grid's months)."""
        months = np.asarray(months, dtype=np.int64)
        return self.rent_by_month[months] if self.rent_by_month is not None else np.full(months.shape, self.usd_per_gpu_s)

    def price(self, at_s: np.ndarray | float, grid: Grid) -> np.ndarray:
        """Purchase price per GPU of one delivered at ``at_s`` (its month's, where prices move)."""
        at = np.asarray(at_s, dtype=np.float64)
        if self.price_by_month is None:
            return np.full(at.shape, self.price_usd)
        month = np.clip(np.searchsorted(grid.month_start_s, at, side="right") - 1, 0, len(self.price_by_month) - 1)
        return self.price_by_month[month]

    def resale_usd(self, age_s: np.ndarray | float, price: np.ndarray | float | None = None) -> np.ndarray:
        """What one owned GPU of this age (bought at ``price``, default the pool's) would fetch at
        the horizon's end (0 without a curve)."""
        age = np.asarray(age_s, dtype=np.float64)
        paid = self.price_usd if price is None else price
        return paid * self.market.share(age) if self.market is not None else np.zeros_like(age)


@dataclass(frozen=True)
class PowerOption:
    """A site power upgrade on offer (``power.upgrades`` without ``at``)."""

    name: str
    kw: float
    cost_usd: float
    lead_s: float
    slip: object | None
    life_s: float

    def slip_quantile(self, q: float) -> float:
        return slip_quantile(self.slip, q)


@dataclass(frozen=True)
class Grid:
    """Where the schedule lives: planning slots, review dates, calendar months."""

    slot_start_s: np.ndarray  # (slots,)
    slot_end_s: np.ndarray
    period_of_slot: np.ndarray  # int (slots,): index of the slot's target period
    month_of_slot: np.ndarray  # int (slots,): index of the slot's calendar month
    month_start_s: np.ndarray  # (months,)
    month_end_s: np.ndarray
    order_s: np.ndarray  # (dates,): review dates, seconds from the start
    horizon_s: float


@dataclass
class Schedule:
    """The orders chosen: per candidate, ``(date or month index, orders)`` pairs."""

    orders: dict[str, list[tuple[int, int]]]
    cost_usd: float
    uncovered: np.ndarray  # (models, slots): need left uncovered
    status: str
    burst_usd: dict[str, float] = field(default_factory=dict)  # a burst pool's expected rent, by pool
    power: dict[str, int] = field(default_factory=dict)  # power upgrades ordered: name -> review date index
    power_usd: dict[str, float] = field(default_factory=dict)  # what each counts in the cost (used up in the horizon)

    def gpus(self, candidate: Candidate) -> int:
        return sum(n for _, n in self.orders.get(candidate.pool, [])) * candidate.step


def in_service(candidate: Candidate, grid: Grid, slots: np.ndarray, delivery_level: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The candidate's order variables: their index (review date or month), their cost per
    order, and a boolean (variables, slots) of when each is in service, for ``slots``."""
    starts, ends = grid.slot_start_s[slots], grid.slot_end_s[slots]
    if candidate.kind == "burst":  # one variable: its cap (GPUs in steps), free; the GPU-slots used are paid
        return np.zeros(1, dtype=np.int64), np.zeros(1), np.ones((1, len(slots)), dtype=bool)
    if candidate.kind == "on_demand":
        months = np.arange(len(grid.month_start_s))
        begin = np.maximum(grid.month_start_s, candidate.lead_s)
        hours = np.maximum(grid.month_end_s - begin, 0.0)
        cost = candidate.step * candidate.rent(months) * hours
        serving = (grid.month_of_slot[slots][None, :] == months[:, None]) & (starts[None, :] >= begin[:, None] - _EPS)
        return months, cost, serving
    dates = np.arange(len(grid.order_s))
    if candidate.kind == "reserved":
        begin = grid.order_s + candidate.lead_s
        cost = candidate.step * candidate.usd_per_gpu_s * (candidate.reserve_end_s - begin)
        serving = (begin[:, None] <= starts[None, :] + _EPS) & (candidate.reserve_end_s[:, None] >= ends[None, :] - _EPS)
        return dates, cost, serving
    slip = np.array([candidate.slip_quantile(q) for q in delivery_level])[grid.period_of_slot[slots]]
    arrival = grid.order_s[:, None] + candidate.lead_s + slip[None, :]
    serving = arrival <= starts[None, :] + _EPS
    median = grid.order_s + candidate.lead_s + candidate.slip_quantile(0.5)
    held_s = np.maximum(grid.horizon_s - median, 0.0)
    price = candidate.price(median, grid)
    cost = candidate.step * (price - candidate.resale_usd(held_s, price) + candidate.usd_per_gpu_s * held_s)
    # Orders that serve the same slots: only the latest is worth placing (it costs the least),
    # unless prices move (a later month's may be dearer).
    count = serving.sum(axis=1)
    keep = (count > 0) & ((count > np.append(count[1:], -1)) | (candidate.price_by_month is not None))
    return dates[keep], cost[keep], serving[keep]


def cheapest_schedule(candidates: list[Candidate], grid: Grid, need: np.ndarray, delivery_level: np.ndarray,
                      budget_usd: float | None = None, time_limit_s: float = 60.0,
                      power_headroom_kw: np.ndarray | None = None, cash_room_usd: np.ndarray | None = None,
                      power_options: list[PowerOption] | None = None,
                      companions: dict[int, tuple[float, str]] | None = None) -> Schedule:
    """The cheapest whole-order schedule covering ``need`` ``(models, slots)`` as far as it can
    be covered (see the module docstring). ``delivery_level[p]``: the slip quantile that
    times deliveries for slots of period ``p``. ``power_headroom_kw`` (per slot): the site power
    the fleet as it stands leaves free; owned orders in service in a slot must fit it.
    ``cash_room_usd`` (per calendar month): what the orders may have paid by each month's end
    (:func:`payments_by_month`). ``companions[m] = (share, pool)``: model ``m``'s first-choice
    replica is a disaggregated unit across two pools; the share ``share`` of its need is GPUs of
    the pools it lists, the rest GPUs of ``pool``, each covered by its own pools' orders (a unit
    needs both sides)."""
    n_given = need.shape[0]
    need, eff = split_for_companions(need, candidates, companions or {})
    n_models, _ = need.shape
    slots = np.flatnonzero((need > _EPS).any(axis=0))
    uncovered = np.zeros_like(need, dtype=np.float64)
    empty = {c.pool: [] for c in candidates}
    if not len(slots):
        return Schedule(empty, 0.0, uncovered, "nothing needed")
    needing = [m for m in range(n_models) if (need[m, slots] > _EPS).any()]
    n_t = len(slots)
    columns: list[tuple[str, int, object]] = []  # (kind of variable, candidate index, payload)
    costs, upper, integral = [], [], []
    rows, cols, vals, lower_b, upper_b = [], [], [], [], []
    n_rows = 0

    def add_var(kind, c, payload, cost, ub, integer):
        columns.append((kind, c, payload))
        costs.append(cost)
        upper.append(ub)
        integral.append(1 if integer else 0)
        return len(columns) - 1

    order_vars: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    for c, candidate in enumerate(candidates):
        index, cost, serving = in_service(candidate, grid, slots, delivery_level)
        most = candidate.max // candidate.step
        ids = np.array([add_var("order", c, int(i), float(k), most, True) for i, k in zip(index, cost, strict=True)],
                       dtype=np.int64)
        order_vars.append((ids, index, cost, serving))
    upgrade_vars = []  # (option, variable ids, review date index, in at each slot (variables, slots))
    if power_headroom_kw is not None:
        for j, option in enumerate(power_options or []):
            slip = np.array([option.slip_quantile(q) for q in delivery_level])[grid.period_of_slot[slots]]
            energized = grid.order_s[:, None] + option.lead_s + slip[None, :]
            serving = energized <= grid.slot_start_s[slots][None, :] + _EPS
            median = grid.order_s + option.lead_s + option.slip_quantile(0.5)
            used = option.cost_usd * np.clip((grid.horizon_s - median) / option.life_s, 0.0, 1.0)
            dates = np.flatnonzero(serving.any(axis=1))
            ids = np.array([add_var("power", j, int(d), float(used[d]), 1, True) for d in dates], dtype=np.int64)
            upgrade_vars.append((option, ids, dates, serving[dates]))
    y = {}
    slot_s = grid.slot_end_s[slots] - grid.slot_start_s[slots]
    for c, candidate in enumerate(candidates):
        # A burst pool rents only the GPU-slots it gives (the autoscaler follows the need): each costs
        # its rent over the slot; other candidates' GPUs are paid by their orders.
        rent = candidate.rent(grid.month_of_slot[slots]) * slot_s if candidate.kind == "burst" else np.zeros(n_t)
        for m in needing:
            if eff[c, m] > 0:
                y[c, m] = np.array([add_var("y", c, (m, t), float(rent[t]), np.inf, False) for t in range(n_t)],
                                   dtype=np.int64)
    slack = {m: np.array([add_var("slack", -1, (m, t), 0.0, np.inf, False) for t in range(n_t)], dtype=np.int64)
             for m in needing}
    # Coverage of each model's need.
    for m in needing:
        for t in range(n_t):
            if need[m, slots[t]] <= _EPS:
                continue
            for c in range(len(candidates)):
                if (c, m) in y:
                    rows.append(n_rows), cols.append(y[c, m][t]), vals.append(float(eff[c, m]))
            rows.append(n_rows), cols.append(slack[m][t]), vals.append(1.0)
            lower_b.append(float(need[m, slots[t]])), upper_b.append(np.inf)
            n_rows += 1
    # Each candidate gives no more than its orders in service.
    for c, candidate in enumerate(candidates):
        ids, _, _, serving = order_vars[c]
        givers = [y[c, m] for m in needing if (c, m) in y]
        if not givers:
            continue
        for t in range(n_t):
            for given in givers:
                rows.append(n_rows), cols.append(given[t]), vals.append(1.0)
            active = ids[serving[:, t]]
            rows.extend([n_rows] * len(active)), cols.extend(active.tolist())
            vals.extend([-float(candidate.step)] * len(active))
            lower_b.append(-np.inf), upper_b.append(0.0)
            n_rows += 1
    # Owned and reserved: at most max GPUs ordered in all.
    for c, candidate in enumerate(candidates):
        ids = order_vars[c][0]
        if candidate.kind != "on_demand" and len(ids):
            rows.extend([n_rows] * len(ids)), cols.extend(ids.tolist()), vals.extend([1.0] * len(ids))
            lower_b.append(-np.inf), upper_b.append(float(candidate.max // candidate.step))
            n_rows += 1
    # Owned orders in service fit the site's power left free (where a cap is set).
    if power_headroom_kw is not None:
        powered = [(c, candidate) for c, candidate in enumerate(candidates) if candidate.kw_per_gpu > 0]
        for t in range(n_t):
            room = float(power_headroom_kw[slots[t]])
            if not np.isfinite(room) or not powered:
                continue
            for c, candidate in powered:
                ids, _, _, serving = order_vars[c]
                active = ids[serving[:, t]]
                rows.extend([n_rows] * len(active)), cols.extend(active.tolist())
                vals.extend([candidate.kw_per_gpu * candidate.step] * len(active))
            for option, ids, _, serving in upgrade_vars:  # an upgrade energized by then adds its power
                active = ids[serving[:, t]]
                rows.extend([n_rows] * len(active)), cols.extend(active.tolist())
                vals.extend([-option.kw] * len(active))
            lower_b.append(-np.inf), upper_b.append(max(room, 0.0))
            n_rows += 1
    for _, ids, _, _ in upgrade_vars:  # each upgrade ordered once at most
        if len(ids):
            rows.extend([n_rows] * len(ids)), cols.extend(ids.tolist()), vals.extend([1.0] * len(ids))
            lower_b.append(-np.inf), upper_b.append(1.0)
            n_rows += 1
    # What the orders have paid by each month's end stays within the cash room.
    if cash_room_usd is not None:
        paid = payments_by_month(candidates, grid, slots, columns, order_vars, y)
        for option, ids, dates, _ in upgrade_vars:  # an upgrade is paid in full when energized (its median)
            for var, d in zip(ids, dates, strict=True):
                energized = grid.order_s[d] + option.lead_s + option.slip_quantile(0.5)
                paid[var] = np.where(energized < grid.month_end_s, option.cost_usd, 0.0)
        for k in range(len(grid.month_start_s)):
            room = float(cash_room_usd[k])
            if not np.isfinite(room):
                continue
            spent_by = np.flatnonzero(paid[:, k] > 0)
            rows.extend([n_rows] * len(spent_by)), cols.extend(spent_by.tolist()), vals.extend(paid[spent_by, k].tolist())
            lower_b.append(-np.inf), upper_b.append(max(room, 0.0))
            n_rows += 1
    cost_vec = np.array(costs)
    if budget_usd is not None:
        spend = np.flatnonzero(cost_vec)
        rows.extend([n_rows] * len(spend)), cols.extend(spend.tolist()), vals.extend(cost_vec[spend].tolist())
        lower_b.append(-np.inf), upper_b.append(float(budget_usd))
        n_rows += 1
    n_vars = len(columns)
    matrix = coo_matrix((vals, (rows, cols)), shape=(n_rows, n_vars)).tocsr()
    constraints = [LinearConstraint(matrix, np.array(lower_b), np.array(upper_b))]
    bounds = Bounds(np.zeros(n_vars), np.array(upper, dtype=np.float64))
    is_slack = np.array([kind == "slack" for kind, _, _ in columns])
    options = {"time_limit": time_limit_s, "mip_rel_gap": 1e-7}
    first = milp(is_slack.astype(np.float64), constraints=constraints, bounds=bounds, integrality=integral,
                 options=options)
    if first.x is None:
        raise RuntimeError(f"the order schedule could not be solved: {first.message}")
    least = float(first.fun)
    keep_coverage = LinearConstraint(is_slack.astype(np.float64)[None, :], -np.inf, least + _EPS * (1 + least))
    second = milp(cost_vec, constraints=[*constraints, keep_coverage], bounds=bounds, integrality=integral,
                  options=options)
    result = second if second.x is not None else first
    x = np.round(result.x[:len(columns)]).astype(np.int64)
    chosen = {c.pool: [] for c in candidates}
    for position, (kind, c, payload) in enumerate(columns):
        if kind == "order" and x[position] > 0:
            chosen[candidates[c].pool].append((payload, int(x[position])))
        elif kind == "slack":
            m, t = payload
            uncovered[m, slots[t]] = max(0.0, float(result.x[position]))
    spent = float(sum(cost_vec[i] * x[i] for i, (kind, _, _) in enumerate(columns) if kind == "order"))
    power, power_usd = {}, {}
    for position, (kind, j, d) in enumerate(columns):
        if kind == "power" and x[position] > 0:
            power[power_options[j].name], power_usd[power_options[j].name] = d, float(cost_vec[position])
    burst = {candidates[c].pool: 0.0 for c in range(len(candidates)) if candidates[c].kind == "burst"}
    for position, (kind, c, _) in enumerate(columns):
        if kind == "y" and candidates[c].kind == "burst":
            burst[candidates[c].pool] += float(cost_vec[position] * max(result.x[position], 0.0))
    for c, candidate in enumerate(candidates):  # a burst pool's cap: the most it gives in a slot (its cap is free)
        if candidate.kind == "burst":
            given = sum((np.maximum(result.x[y[c, m]], 0.0) for m in needing if (c, m) in y), np.zeros(n_t))
            orders = int(np.ceil(float(given.max(initial=0.0)) / candidate.step - _EPS))
            chosen[candidate.pool] = [(0, orders)] if orders > 0 else []
    return Schedule({pool: sorted(v) for pool, v in chosen.items()}, spent + sum(burst.values()) + sum(power_usd.values()),
                    fold_companions(uncovered, n_given, companions or {}), result.message, burst, power, power_usd)


def payments_by_month(candidates: list[Candidate], grid: Grid, slots: np.ndarray, columns: list, order_vars: list,
                      y: dict) -> np.ndarray:
    """(variables, months): what one unit of each variable has paid by each calendar month's
    end. A purchase is paid in full when it lands (the median slip; energy and facility are
    left out), a reservation's rent and a rental's month as they run, a burst pool's GPU-days
    as they are given."""
    n_months = len(grid.month_start_s)
    out = np.zeros((len(columns), n_months))
    ends = grid.month_end_s
    for c, candidate in enumerate(candidates):
        ids, index, _, _ = order_vars[c]
        for var, i in zip(ids, index, strict=True):
            if candidate.kind == "owned":
                lands = grid.order_s[i] + candidate.lead_s + candidate.slip_quantile(0.5)
                out[var] = np.where(lands < ends, candidate.step * float(candidate.price(lands, grid)), 0.0)
            elif candidate.kind == "reserved":
                begin, end = grid.order_s[i] + candidate.lead_s, float(candidate.reserve_end_s[i])
                out[var] = candidate.step * candidate.usd_per_gpu_s * np.clip(np.minimum(ends, end) - begin, 0.0, None)
            elif candidate.kind == "on_demand":
                begin = max(grid.month_start_s[i], candidate.lead_s)
                month_rent = candidate.step * float(candidate.rent(i)) * max(grid.month_end_s[i] - begin, 0.0)
                out[var] = np.where(np.arange(n_months) >= i, month_rent, 0.0)
    slot_month = grid.month_of_slot[slots]
    for (c, _m), variables in y.items():
        if candidates[c].kind != "burst":
            continue
        rent = candidates[c].rent(slot_month) * (grid.slot_end_s[slots] - grid.slot_start_s[slots])
        for t, var in enumerate(variables):
            out[var] = np.where(np.arange(n_months) >= slot_month[t], rent[t], 0.0)
    return out


__all__ = ["Candidate", "Grid", "PowerOption", "Schedule", "cheapest_schedule", "in_service", "payments_by_month"]
