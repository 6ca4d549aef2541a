"""GPUs per pool, by state, and the purchases behind them.

Counts per pool: ``installed`` (in service), ``failed`` (installed but down: failures and
spot preemptions, advanced by the step kernel, see :mod:`simulator.path.fleet.outages`),
``out_of_service`` (installed but taken out of service by a dated change, e.g. RMA: still
depreciating, paying facility and site power, and, on a reserved pool, rent, but serving
nothing, drawing no energy and failing no further), ``blocked`` (delivered owned GPUs waiting
for site power), ``training`` (held by training jobs).
``available = installed − failed − out_of_service``.

Every purchase of owned GPUs (the initial count, each dated addition or order) is a
*cohort*: it is paid on delivery (capex, recorded at the delivery step), depreciates
straight-line at ``price / life`` from the moment it is placed in service until its life
ends (the GPUs stay installed after that), and retires at end of life when the pool says so.
The starting GPUs of a pool already in service before the horizon (``in_service_since``,
``book_value_usd``) are not paid; they depreciate the rest of their life (their book value
spread evenly over it) and retire ``retire_years`` after they entered service.
Removals retire the oldest GPUs first, working ones before failed ones before those out of
service, and stop their depreciation (they are sold: the books value the sale at market, see
:mod:`simulator.economics.assets`). Taking GPUs out of service changes no cohort: they keep
depreciating.

The :class:`AssetLog` records what the books need and the step arrays do not: each owned
delivery (an *asset*: when, how many, its cost and age), each part of it installed (a
*piece*: its depreciation rate and end), each sale (how many of which piece, at what net
book value), and each order (placed, promised, delivered) for its payment terms.

Before any count or rate changes, ``before_change`` is called: that is how the step clock
integrates the interval ending at this event with the fleet as it was during it; after a
change of the fleet (not of training's holdings) ``after_change`` is, so that a step the
change falls inside mixes the two fleets by time (:mod:`simulator.path.intra_step`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import simpy

from simulator.economics.assets import AssetLog
from simulator.path.compiled import CompiledScenario
from simulator.path.pool_plan import KIND_SPOT
from simulator.scenario.fleet import StartingCohort


@dataclass
class Cohort:
    """Owned GPUs bought at one time, depreciating together."""

    count: int
    usd_per_gpu_s: float
    depreciating: bool = True
    piece: int = -1  # its row of AssetLog.pieces
    ends_s: float = 0.0  # when its depreciation ends


class FleetState:
    """Counts of GPUs per pool and their cost rates, changed only through its methods."""

    def __init__(
        self, env: simpy.Environment, plan: CompiledScenario, before_change: Callable[[], None],
        after_change: Callable[[], None] = lambda: None,
    ) -> None:
        self.env = env
        self.plan = plan
        self._before_change = before_change
        self._after_change = after_change
        n = len(plan.pool_names)
        self.installed = np.zeros(n, dtype=np.int64)
        self.failed = np.zeros(n, dtype=np.int64)
        self.out_of_service = np.zeros(n, dtype=np.int64)
        self.is_spot = plan.kind == KIND_SPOT
        self.blocked = np.zeros(n, dtype=np.int64)
        self.training = np.zeros(n, dtype=np.int64)
        self.training_floor = np.zeros(n, dtype=np.int64)  # GPUs kept from inference (dedicated)
        self.contracted = np.zeros(n, dtype=np.int64)  # GPUs sold on contracts, held for the customers
        self.contract_busy = np.zeros(n, dtype=np.float64)  # their busy GPU-equivalents (× usage)
        self.cloud_rate = plan.cloud_usd_gpu_s.copy()  # the engine hands it the step clock's, where rents move
        self.price_now = plan.price_usd.astype(np.float64).copy()  # purchase price per GPU this month
        self.depreciation_usd_s = np.zeros(n, dtype=np.float64)
        self.capex = np.zeros((plan.n_steps, n), dtype=np.float64)
        self.power_cap_kw = np.inf  # in force: the dated cap plus the upgrades energized
        self.power_added_kw = 0.0  # upgrades energized so far
        self._cohorts: list[deque[Cohort]] = [deque() for _ in range(n)]
        self.log = AssetLog()
        self._waiting_power: list[deque[int]] = [deque() for _ in range(n)]
        self.outage_down = np.zeros((0, 1), dtype=np.int64)  # set by the engine: channels' CH_DOWN view
        self.outage_pool = np.zeros(0, dtype=np.int64)

    # -- queries ---------------------------------------------------------------------------
    @property
    def available(self) -> np.ndarray:
        return self.installed - self.failed - self.out_of_service

    def site_kw(self) -> float:
        return float(sum(self.installed[p] * self.plan.pools[p].site_kw_per_gpu for p in range(len(self.installed))))

    # -- supply ----------------------------------------------------------------------------
    def deliver(self, pool: int, count: int, paid: bool = True, starting: StartingCohort | None = None,
                order: int | None = None) -> None:
        """GPUs arrive now: owned ones are paid, then installed as far as site power allows.

        ``starting``: these are the pool's starting GPUs, paid (or not, when already in service
        before the horizon) and depreciated on the terms it gives. ``order``: the row of
        ``log.orders`` this delivery fills.
        """
        self._before_change()
        if order is not None:
            self.log.orders[order][2] = self.env.now
        if self.plan.owned[pool]:
            price = float(self.price_now[pool])
            bought = paid and (starting is None or starting.paid)
            if bought:
                self._record_capex(pool, count * price)
            if starting is None or starting.paid:
                book = cost = price
                age = 0.0
            else:  # in service before the horizon: its book value now, its cost at least that
                book = starting.usd_per_gpu_s * max(starting.depreciation_end_s, 0.0)
                cost, age = max(price, book), starting.age_s
            self.log.assets.append((pool, count, self.env.now, age, cost, book, bought))
            self._waiting_power[pool].append([count, starting, len(self.log.assets) - 1])
            self.blocked[pool] += count
            self._install_waiting()
        else:
            self._install(pool, count)
        self._after_change()

    def remove(self, pool: int, count: int) -> None:
        """Retire ``count`` GPUs of ``pool`` now: oldest first, working before failed before out of service."""
        self._before_change()
        count = min(count, int(self.installed[pool]))
        working = int(self.installed[pool] - self.failed[pool] - self.out_of_service[pool])
        failed = min(max(0, count - working), int(self.failed[pool]))
        self._retire_failed(pool, failed)
        self.out_of_service[pool] -= max(0, count - working - failed)
        self.installed[pool] -= count
        left = count
        cohorts = self._cohorts[pool]
        while left > 0 and cohorts:
            oldest = cohorts[0]
            taken = min(left, oldest.count)
            oldest.count -= taken
            left -= taken
            book = oldest.usd_per_gpu_s * max(oldest.ends_s - self.env.now, 0.0) if oldest.depreciating else 0.0
            self.log.sales.append((self.env.now, oldest.piece, taken, book))
            if oldest.count == 0:
                cohorts.popleft()
        self._recompute(pool)
        self._install_waiting()
        self._after_change()

    def take_out_of_service(self, pool: int, count: int) -> int:
        """Take ``count`` GPUs of ``pool`` out of service now, working ones before failed ones
        (a failed GPU sent away leaves its outage channel); returns how many were taken."""
        self._before_change()
        working = int(self.installed[pool] - self.failed[pool] - self.out_of_service[pool])
        count = max(0, min(count, working + int(self.failed[pool])))
        self._retire_failed(pool, max(0, count - working))
        self.out_of_service[pool] += count
        self._after_change()
        return count

    def return_to_service(self, pool: int, count: int) -> None:
        """Return up to ``count`` GPUs of ``pool`` that are out of service (the rest were removed)."""
        self._before_change()
        self.out_of_service[pool] -= min(count, int(self.out_of_service[pool]))
        self._after_change()

    def set_training(self, pool: int, gpus: int) -> None:
        """Training jobs hold ``gpus`` GPUs of ``pool`` from now on."""
        self._before_change()
        self.training[pool] = gpus

    def set_training_floor(self, pool: int, gpus: int) -> None:
        """From now on ``gpus`` GPUs of ``pool`` are kept from inference for training."""
        self._before_change()
        self.training_floor[pool] = gpus

    def set_rent(self, pool: int, usd_per_gpu_s: float) -> None:
        """From now on the pool's GPUs rent at this rate (``cloud_rate``: the step clock's array)."""
        self._before_change()
        self.cloud_rate[pool] = usd_per_gpu_s
        self._after_change()

    def set_api_cost(self, costs, model: int, usd_per_request: float) -> None:
        """From now on the model's external API charges this per request (``costs``: the step
        clock's array)."""
        self._before_change()
        costs[model] = usd_per_request
        self._after_change()

    def hold_for_contract(self, pool: int, gpus: int, usage: float) -> None:
        """From now on ``gpus`` more GPUs of ``pool`` are held for a contract (fewer: released)."""
        self._before_change()
        self.contracted[pool] += gpus
        self.contract_busy[pool] = max(self.contract_busy[pool] + gpus * usage, 0.0)
        if self.contracted[pool] == 0:
            self.contract_busy[pool] = 0.0
        self._after_change()

    def set_power_cap(self, kw: float) -> None:
        """A new dated site power cap from now on (the upgrades energized stay on top of it);
        waiting deliveries are installed if they fit."""
        self._before_change()
        self.power_cap_kw = kw + self.power_added_kw
        self._install_waiting()
        self._after_change()

    def add_power(self, kw: float) -> None:
        """A power upgrade energized now: ``kw`` more on top of any cap, now and later."""
        self._before_change()
        self.power_added_kw += kw
        self.power_cap_kw += kw
        self._install_waiting()
        self._after_change()

    # -- internals -------------------------------------------------------------------------
    def _install_waiting(self) -> None:
        """Install waiting owned deliveries, first come first served, while power allows."""
        headroom = self.power_cap_kw - self.site_kw()
        for pool, queue in enumerate(self._waiting_power):
            kw = self.plan.pools[pool].site_kw_per_gpu
            while queue:
                waiting, starting, asset = queue[0]
                if kw <= 0 or headroom == np.inf:
                    fits = waiting
                else:
                    fits = min(waiting, max(0, int(np.floor(headroom / kw + 1e-9))))
                if fits <= 0:
                    break
                headroom -= fits * kw
                queue[0][0] -= fits
                if queue[0][0] == 0:
                    queue.popleft()
                self.blocked[pool] -= fits
                self._install(pool, fits, starting, asset)

    def _install(self, pool: int, count: int, starting: StartingCohort | None = None, asset: int = -1) -> None:
        self.installed[pool] += count
        plan = self.plan
        if starting is None:  # bought now: a whole life of depreciation, retired retire_s from now
            life = float(plan.life_s[pool])
            price = self.log.assets[asset][4] if asset >= 0 else float(plan.price_usd[pool])  # paid on delivery
            per_gpu_s, depreciate_for, retire_after = price / life, life, plan.pools[pool].retire_s
        else:  # the starting GPUs: what is left of their life, counted from when they entered service
            per_gpu_s = starting.usd_per_gpu_s
            depreciate_for = starting.depreciation_end_s - self.env.now
            retire_after = max(0.0, starting.retire_at_s - self.env.now)
        if plan.owned[pool]:
            # Every owned cohort is tracked (one worth nothing too): removals take the oldest
            # first, and a sale is logged against the piece it comes from.
            depreciating = per_gpu_s > 0 and depreciate_for > 0
            ends = self.env.now + max(depreciate_for, 0.0)
            self.log.pieces.append((asset, count, self.env.now, per_gpu_s if depreciating else 0.0, ends))
            cohort = Cohort(count, per_gpu_s, depreciating=depreciating, piece=len(self.log.pieces) - 1, ends_s=ends)
            self._cohorts[pool].append(cohort)
            if cohort.depreciating:
                self.env.process(self._depreciate(pool, cohort, depreciate_for))
            if np.isfinite(retire_after):
                self.env.process(self._retire(pool, cohort, retire_after))
        self._recompute(pool)

    def _record_capex(self, pool: int, usd: float) -> None:
        step = int(self.env.now // self.plan.step_s)
        if 0 <= step < self.plan.n_steps:
            self.capex[step, pool] += usd

    def _depreciate(self, pool: int, cohort: Cohort, life: float):
        yield self.env.timeout(life)
        if cohort.count > 0:
            self._before_change()
            cohort.depreciating = False
            self._recompute(pool)
            self._after_change()

    def _retire(self, pool: int, cohort: Cohort, after: float):
        yield self.env.timeout(after)
        if cohort.count > 0:
            # Removals take the oldest first; a cohort at end of life is the oldest left
            # unless dated removals reordered things, which only matters for depreciation.
            self.remove(pool, cohort.count)

    def _retire_failed(self, pool: int, count: int) -> None:
        """Failed GPUs leave (removed, or out of service): their outage channels forget them too."""
        self.failed[pool] -= count
        for channel in np.flatnonzero(self.outage_pool == pool):
            taken = min(count, int(self.outage_down[channel]))
            self.outage_down[channel] -= taken
            count -= taken

    def _recompute(self, pool: int) -> None:
        self.depreciation_usd_s[pool] = sum(
            c.count * c.usd_per_gpu_s for c in self._cohorts[pool] if c.depreciating
        )
