"""A served model: where it runs, what one replica sustains, its demand and its price.

Replicas are placed on the listed pools in order (the first pool first, the next for
overflow). Models are served in the order listed: when capacity is short the first model
listed is served first.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator

from simulator.scenario.demand import Demand
from simulator.scenario.economics import Pricing
from simulator.scenario.types import Frozen, Positive


class ServedModel(Frozen):
    """One model served to users."""

    name: Annotated[str, Field(min_length=1, max_length=80)]
    pools: Annotated[list[str], Field(min_length=1)] = Field(
        description="Pools the replicas run on, in order of preference"
    )
    gpus_per_replica: Annotated[int, Field(ge=1, le=4096)] = 1
    capacity_rps: Positive = Field(
        description="Requests per second one replica sustains within the latency SLO"
    )
    demand: Demand
    pricing: Pricing | None = Field(default=None, description="Default: the scenario's pricing")

    @field_validator("pools", mode="before")
    @classmethod
    def _one_pool(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    def revenue_per_request(self, default: Pricing) -> float:
        """USD earned by one served request of mean length."""
        price = self.pricing or default
        return (
            self.demand.input_tokens * price.input_usd_per_1m
            + self.demand.output_tokens * price.output_usd_per_1m
        ) / 1e6
