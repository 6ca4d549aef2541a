"""What an order plan search returns: the plan, how it was found, the risk per period it leaves
(with Wilson intervals) and the run that confirms it on fresh seeds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from simulator.decisions.order_schedule import Candidate, Grid, Schedule
from simulator.runs.intervals import wilson_interval
from simulator.runs.results import Results
from simulator.scenario import Scenario
from simulator.scenario.plan import PlanSettings

LEVEL = 0.9


@dataclass
class PeriodRisk:
    """Share of paths with a material shortfall in each target period, with Wilson intervals:
    ``lo``/``hi`` at 90% for each period alone, ``band_lo``/``band_hi`` at 90% for all periods
    together (Bonferroni: each at 1 - 0.1 / periods), the interval the plan states."""

    risk: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    band_lo: np.ndarray
    band_hi: np.ndarray

    @classmethod
    def of(cls, short: np.ndarray) -> PeriodRisk:
        n, periods = short.shape
        counts = short.sum(axis=0)
        alone = np.array([wilson_interval(int(k), n, LEVEL) for k in counts]).reshape(-1, 2)
        together = np.array([wilson_interval(int(k), n, 1 - (1 - LEVEL) / periods) for k in counts]).reshape(-1, 2)
        return cls(counts / n, alone[:, 0], alone[:, 1], together[:, 0], together[:, 1])


@dataclass
class PlanOutcome:
    """The plan, how it was found, and the run that confirms it on fresh seeds."""

    scenario: Scenario  # the planned scenario
    settings: PlanSettings
    candidates: list[Candidate]
    grid: Grid
    labels: list[str]
    starts: list[pd.Timestamp]
    schedule: Schedule
    paths: int
    seed: int
    fresh_seed: int
    baseline: PeriodRisk
    search: PeriodRisk
    fresh: PeriodRisk
    results: Results
    unreachable: list[dict[str, str]]
    rounds: list[dict[str, Any]] = field(default_factory=list)
    simulations: int = 0
    power_headroom_kw: np.ndarray | None = None  # per slot: site power the fleet as it stands leaves free
    cash_room_usd: np.ndarray | None = None  # per month: what orders may have paid by its end (cash floor)
    power_options: list = field(default_factory=list)  # site power upgrades on offer (PowerOption)

    @property
    def missed(self) -> np.ndarray:
        """Periods whose risk on the confirmation paths is above the target."""
        return self.search.risk > self.settings.target.probability + 1e-12

    @property
    def target_met(self) -> bool:
        return not self.missed.any()


__all__ = ["LEVEL", "PeriodRisk", "PlanOutcome"]
