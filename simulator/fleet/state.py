"""GPUs per pool, by state, and the depreciation schedules of owned GPUs.

Every purchase of owned GPUs (the initial count, and each dated addition) is a *cohort*
that depreciates straight-line at ``price / life`` per second until its life ends; a SimPy
process marks its end, and the fully depreciated GPUs stay installed. Removals retire the
oldest GPUs first, depreciated or not, and stop their depreciation (they are taken as sold
at net book value).

Before any count or rate changes, ``before_change`` is called: that is how the step clock
integrates the interval that ends at this event with the fleet as it was during it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import simpy

from simulator.compiled import CompiledScenario


@dataclass
class Cohort:
    """Owned GPUs bought at one time, depreciating together."""

    count: int
    usd_per_gpu_s: float
    depreciating: bool = True


class FleetState:
    """Counts of GPUs per pool and their cost rates, changed only through its methods."""

    def __init__(
        self, env: simpy.Environment, plan: CompiledScenario, before_change: Callable[[], None]
    ) -> None:
        self.env = env
        self.plan = plan
        self._before_change = before_change
        n = len(plan.pool_names)
        self.installed = np.zeros(n, dtype=np.int64)
        self.available = np.zeros(n, dtype=np.int64)
        self.training = np.zeros(n, dtype=np.int64)
        self.depreciation_usd_s = np.zeros(n, dtype=np.float64)
        self._cohorts: list[deque[Cohort]] = [deque() for _ in range(n)]
        for pool, count in enumerate(plan.initial_count):
            if count:
                self.add(pool, int(count))

    def add(self, pool: int, count: int) -> None:
        """Install ``count`` new GPUs in ``pool`` now."""
        self._before_change()
        self.installed[pool] += count
        self.available[pool] += count
        if self.plan.owned[pool] and self.plan.price_usd[pool] > 0:
            life = float(self.plan.life_s[pool])
            cohort = Cohort(count, float(self.plan.price_usd[pool]) / life)
            self._cohorts[pool].append(cohort)
            self._recompute_depreciation(pool)
            self.env.process(self._depreciate(pool, cohort, life))

    def remove(self, pool: int, count: int) -> None:
        """Retire ``count`` GPUs of ``pool`` now, oldest first."""
        self._before_change()
        count = min(count, int(self.installed[pool]))
        self.installed[pool] -= count
        self.available[pool] -= count
        left = count
        cohorts = self._cohorts[pool]
        while left > 0 and cohorts:
            oldest = cohorts[0]
            taken = min(left, oldest.count)
            oldest.count -= taken
            left -= taken
            if oldest.count == 0:
                cohorts.popleft()
        self._recompute_depreciation(pool)

    def _depreciate(self, pool: int, cohort: Cohort, life: float):
        yield self.env.timeout(life)
        if cohort.count > 0:
            self._before_change()
            cohort.depreciating = False
            self._recompute_depreciation(pool)

    def _recompute_depreciation(self, pool: int) -> None:
        self.depreciation_usd_s[pool] = sum(
            c.count * c.usd_per_gpu_s for c in self._cohorts[pool] if c.depreciating
        )
