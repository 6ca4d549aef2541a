"""Site power for owned GPUs: dated caps, and upgrades that raise them.

Owned GPUs draw TDP × server power factor × PUE each; deliveries that do not fit the cap in
force wait, reported as power-blocked GPUs, until a higher cap, an upgrade or a retirement
makes room. Rented GPUs draw on their provider's power.

An upgrade adds ``mw`` to whatever cap is in force from the day it is energized: ``lead_time``
after it is ordered (``at``), plus a draw of ``slip`` (its own random stream, common across
variants). It costs ``cost_usd``, paid when energized, capitalised and depreciated straight-line
over ``depreciation_years``. An upgrade without ``at`` is not ordered: it is an option the order
planner may take (``fleetcast plan``), ordering it on a review date when the GPUs it lets in
pay for it.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator

from simulator.scenario.distributions import DurationDistribution, duration_distribution
from simulator.scenario.types import Duration, Frozen, NonNegative, When


class PowerCap(Frozen):
    """From ``at`` on, the site draws at most ``mw`` megawatts (until the next cap)."""

    at: When = Field(description="Date (ISO, UTC) or offset from the start from which the cap applies")
    mw: Annotated[float, Field(ge=0, allow_inf_nan=False)] = Field(
        description="Most IT power the owned GPUs may draw (× server factor × PUE), MW")


class PowerUpgrade(Frozen):
    """More site power: ``mw`` more from ``lead_time`` (plus ``slip``) after it is ordered ``at``."""

    name: Annotated[str, Field(min_length=1, max_length=80)] = Field(
        description="Name of the upgrade (its slip has a random stream of its own)")
    mw: Annotated[float, Field(gt=0, le=10_000, allow_inf_nan=False)] = Field(
        description="Power added on top of the cap in force, MW")
    cost_usd: NonNegative = Field(description="Paid when energized; capitalised and depreciated")
    lead_time: Duration = Field(default=0.0, description="From the order to the power being there")
    slip: DurationDistribution | None = Field(default=None, description="A random delay on top of the lead time")
    at: When | None = Field(default=None, description="When it is ordered (none: an option for the order planner)")
    depreciation_years: Annotated[float, Field(gt=0, le=50)] = Field(
        default=20.0, description="Straight-line life of the electrical plant (substation, switchgear, cooling)")

    _shorthand = field_validator("slip", mode="before")(lambda cls, v: duration_distribution(v))


class Power(Frozen):
    """The site's power caps over time and the upgrades ordered or on offer."""

    caps: list[PowerCap] = Field(default_factory=list, description="Site power caps from dates: [{at, mw}]")
    upgrades: list[PowerUpgrade] = Field(
        default_factory=list, description="More site power that can be ordered: [{name, mw, cost_usd, lead_time, slip, at}]")


__all__ = ["Power", "PowerCap", "PowerUpgrade"]
