"""What ``fleetcast plan`` may order and the risk it must keep to: the ``plan:`` section.

An order candidate says "orders of ``step`` GPUs for this pool, placed on any review date":

- an **owned** pool's orders are purchases, delivered ``lead_time`` after the order plus a
  random ``slip``;
- a **reserved** pool's are new commitments of the pool's ``term`` at its price, starting
  ``lead_time`` after the order;
- an **on-demand** pool's are rentals by the calendar month, up to ``max`` GPUs at a time,
  in service ``lead_time`` (default: the pool's provisioning delay) after they are asked for.

Lead time and slip default to the pool's ``procurement`` policy, else to its last ``order``.
The target bounds P(material shortfall) in every calendar month, every quarter, or over the
whole horizon; ``budget_usd`` caps what the orders commit; ``cash_floor_usd`` keeps every
month-end cash balance above a floor: the fleet as it stands' cash at ``cash_quantile`` over
paths (facilities and equity included), less what the orders have paid by then.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from simulator.scenario.distributions import DurationDistribution, duration_distribution
from simulator.scenario.errors import ScenarioError
from simulator.scenario.suggest import unknown_name
from simulator.scenario.types import Duration, Frozen, NonNegative, PositiveDuration


class OrderCandidate(Frozen):
    """Orders the planner may place for one pool."""

    pool: str = Field(description="The pool the GPUs go to (owned, reserved or on-demand)")
    step: Annotated[int, Field(ge=1)] = Field(description="GPUs per order (a whole number of replicas, say)")
    max: Annotated[int, Field(ge=1)] = Field(
        description="Most GPUs ordered in all (owned, reserved), or held at once (on-demand)")
    lead_time: Duration | None = Field(
        default=None, description="From order to delivery (default: the pool's procurement or last order)")
    slip: DurationDistribution | None = Field(
        default=None, description="Random delay after the lead time (default: the pool's procurement or last order)")

    _shorthand = field_validator("slip", mode="before")(
        lambda cls, v: None if v is None else duration_distribution(v))

    @model_validator(mode="after")
    def _step_fits(self) -> OrderCandidate:
        if self.max < self.step:
            raise ValueError(f"'max' ({self.max}) is less than one 'step' ({self.step})")
        return self


class PlanTarget(Frozen):
    """P(material shortfall) at most ``probability`` in every period of kind ``per``."""

    probability: Annotated[float, Field(gt=0, lt=1)] = Field(
        default=0.1, description="Largest share (0–1) of paths allowed to run short in a period")
    per: Literal["month", "quarter", "horizon"] = Field(
        default="month", description="The period the target applies to: month, quarter or the whole horizon")


class PlanSettings(Frozen):
    """The planner's candidates, target and search settings."""

    orders: list[OrderCandidate] = Field(
        default_factory=list, description="What the planner may order: [{pool, step, max, …}] per pool")
    target: PlanTarget = Field(
        default_factory=PlanTarget, description="The risk to meet: probability of a material shortfall at most this per period")
    budget_usd: NonNegative | None = Field(default=None, description="Most the orders may commit, in USD")
    cash_floor_usd: float | None = Field(
        default=None, allow_inf_nan=False,
        description="Keep month-end cash at least this: the fleet as it stands' cash (at cash_quantile over "
        "paths) less what the orders pay by then")
    cash_quantile: Annotated[float, Field(gt=0, lt=1)] = Field(
        default=0.1, description="The path quantile of cash the floor is kept on (0.1: the P10 path)")
    review_every: PositiveDuration = Field(default=7 * 86400.0, description="Order dates: every this from the start")
    paths: Annotated[int, Field(ge=2, le=100_000)] | Literal["auto"] = Field(
        default="auto", description="Paths per simulation ('auto': enough to tell the target from twice it)")
    max_rounds: Annotated[int, Field(ge=1, le=20)] = Field(
        default=5, description="Confirm-and-repair rounds before the best plan found is returned")


def check_plan_orders(orders: list[OrderCandidate], pools: list, where: tuple = ("plan", "orders")) -> None:
    """Each candidate names a pool that can take orders, and no pool twice."""
    by_name = {pool.name: pool for pool in pools}
    seen: set[str] = set()
    for index, candidate in enumerate(orders):
        pool = by_name.get(candidate.pool)
        if pool is None:
            raise ScenarioError((*where, index, "pool"), unknown_name("pool", candidate.pool, list(by_name)))
        if candidate.pool in seen:
            raise ScenarioError((*where, index, "pool"), f"pool {candidate.pool!r} has two order candidates")
        seen.add(candidate.pool)
        kind = pool.acquisition.type
        if kind == "spot":
            raise ScenarioError((*where, index, "pool"),
                                f"{candidate.pool!r} is a spot pool: spot capacity cannot be ordered")
        if kind != "owned" and candidate.slip is not None:
            raise ScenarioError((*where, index, "slip"),
                                f"only purchases slip: a {kind.replace('_', '-')} pool's GPUs start on their date")


__all__ = ["OrderCandidate", "PlanSettings", "PlanTarget", "check_plan_orders"]
