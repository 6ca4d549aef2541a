"""Pools of GPUs: what a scenario owns or rents, and when that changes.

A pool is a set of identical GPUs acquired one way: ``owned`` (bought, depreciated
straight-line over a useful life) or ``on_demand`` (rented by the GPU-hour, paid while
held). Dated ``changes`` add or remove GPUs; an addition of owned GPUs is a purchase that
starts its own depreciation schedule.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from simulator.scenario.types import Frozen, NonNegative, When


class Owned(Frozen):
    """Bought GPUs: capex depreciated straight-line; energy and facility paid by us."""

    type: Literal["owned"] = "owned"
    price_usd: NonNegative | None = Field(
        default=None, description="Purchase price per GPU (default: the GPU catalog's)"
    )
    depreciation_years: Annotated[float, Field(gt=0, le=30)] = Field(
        default=5.0, description="Straight-line useful life in years of 365.25 days"
    )


class OnDemand(Frozen):
    """Rented GPUs: paid per GPU-hour while held; energy and facility are in the price."""

    type: Literal["on_demand"] = "on_demand"
    usd_per_gpu_hour: NonNegative | None = Field(
        default=None, description="Rental price per GPU-hour (default: the GPU catalog's)"
    )


Acquisition = Annotated[Owned | OnDemand, Field(discriminator="type")]


class CapacityChange(Frozen):
    """GPUs added to or removed from a pool at a date or an offset from the start."""

    at: When
    add: Annotated[int, Field(ge=1)] | None = None
    remove: Annotated[int, Field(ge=1)] | None = None

    @model_validator(mode="after")
    def _one_of(self) -> CapacityChange:
        if (self.add is None) == (self.remove is None):
            raise ValueError("give exactly one of 'add' and 'remove'")
        return self

    @property
    def delta(self) -> int:
        return self.add if self.add is not None else -(self.remove or 0)


class Pool(Frozen):
    """Identical GPUs acquired one way."""

    name: Annotated[str, Field(min_length=1, max_length=80)]
    gpu: str = Field(description="GPU type: a catalog name or one defined under 'gpus'")
    acquisition: Acquisition = Field(default_factory=Owned)
    count: Annotated[int, Field(ge=0, le=10_000_000)] = Field(description="GPUs at the start")
    changes: list[CapacityChange] = Field(default_factory=list)

    @property
    def owned(self) -> bool:
        return isinstance(self.acquisition, Owned)


class Fleet(Frozen):
    """All pools of the scenario."""

    pools: list[Pool] = Field(default_factory=list)
