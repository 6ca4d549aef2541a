"""How more GPUs arrive: dated orders, and the policies that place orders as a path unfolds.

- ``Order``: GPUs ordered on a date, arriving ``lead_time`` later plus a random ``slip``.
- ``Procurement`` with ``policy: threshold`` (the default): every ``review_every``, order
  ``order_count`` GPUs when the peak GPUs the models preferring the pool need over the
  ``lookahead`` (from the scenario's expected demand) pass ``threshold`` × the GPUs installed,
  waiting for power and on order.
- ``policy: replan``: every ``every`` (``review_every``), forecast the demand from what this
  path has seen so far, with the uncertainty of the fit, and order in whole ``order_count``
  steps what the forecast's ``1 − target`` quantile needs in the window no later review can
  still deliver (:mod:`simulator.path.fleet.replan`). This is the closed-loop policy a team
  that re-plans monthly runs; ``fleetcast plan --compare-replan`` sets it against the
  open-loop plan on the same paths.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AliasChoices, Field, field_validator

from simulator.scenario.distributions import DurationDistribution, duration_distribution
from simulator.scenario.types import Duration, Frozen, PositiveDuration, When

#: The most GPUs one count may hold: ten million, far above any fleet, refused by name above.
MAX_GPUS = 10_000_000
GpuCount = Annotated[int, Field(ge=1, le=MAX_GPUS)]
_DAY = 86400.0


class Order(Frozen):
    """GPUs ordered on a date; they arrive ``lead_time`` later, plus a random ``slip``."""

    at: When = Field(
        description="Date (ISO, UTC) or offset from the start the order is placed (may be before the horizon)")
    count: GpuCount = Field(description="GPUs ordered")
    lead_time: Duration = Field(
        default=0.0, description="From the order to the promised delivery (e.g. 120d)")
    slip: DurationDistribution | None = Field(
        default=None, description="A random delay on top of the lead time, drawn per path (a duration distribution)")

    _shorthand = field_validator("slip", mode="before")(lambda cls, v: duration_distribution(v))


class Procurement(Frozen):
    """A policy that orders more GPUs for a pool as the path unfolds (see the module docstring)."""

    policy: Literal["threshold", "replan"] = Field(
        default="threshold",
        description="threshold: order when projected utilization passes `threshold`; replan: forecast from the "
                    "demand seen so far and order what the target needs")
    lookahead: Duration = Field(default=8 * 7 * _DAY, description="threshold: how far ahead the need is read")
    threshold: Annotated[float, Field(gt=0, le=2)] = Field(
        default=0.8, description="threshold: projected need over supply that triggers an order")
    order_count: GpuCount = Field(description="GPUs per order (replan: orders are whole multiples of it)")
    lead_time: Duration = Field(
        default=0.0, description="From each order to its promised delivery (e.g. 120d)")
    slip: DurationDistribution | None = Field(
        default=None, description="A random delay on top of the lead time, drawn per order (a duration distribution)")
    review_every: PositiveDuration = Field(
        default=7 * _DAY, validation_alias=AliasChoices("review_every", "every"),
        description="Time between reviews (`every` is the same field)")
    max_orders: Annotated[int, Field(ge=1)] | None = Field(
        default=None, description="At most this many orders (replan: this many order_count steps) in all")
    target: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] = Field(
        default=0.1, description="replan: the risk of a shortfall allowed at each date ahead: orders cover the "
                                 "forecast's 1 - target quantile (and the slip's at 1 - target/2)")
    horizon: PositiveDuration = Field(
        default=365.25 * _DAY, description="replan: the furthest ahead a review orders for")
    history: PositiveDuration = Field(
        default=90 * _DAY, description="replan: the past demand the forecast is fitted on")
    prior_sd: Annotated[float, Field(ge=0, le=5, allow_inf_nan=False)] = Field(
        default=0.25,
        description="replan: before data, the standard deviation of the log of demand over the scenario's "
                    "(level now, and trend per year)")

    _shorthand = field_validator("slip", mode="before")(lambda cls, v: duration_distribution(v))


__all__ = ["MAX_GPUS", "GpuCount", "Order", "Procurement"]
