"""A served model: where it runs, what one replica sustains, its demand and its price.

Replicas are placed on the listed pools in order (the first pool first, the next for
overflow). Models are served in the order listed: when capacity is short the first model
listed is served first.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from simulator.scenario.demand import Demand
from simulator.scenario.economics import ExternalApi, Pricing, Subscription
from simulator.scenario.types import Frozen, Positive


class SloSpec(Frozen):
    """Latency targets a replica must meet: percentile bounds on TTFT and TPOT."""

    ttft_s: Positive = 2.0
    ttft_percentile: Annotated[float, Field(gt=0, le=100)] = 90.0
    tpot_s: Positive = 0.2
    tpot_percentile: Annotated[float, Field(gt=0, le=100)] = 99.0


class ServingSpec(Frozen):
    """How a replica is built; Fleetcast derives its capacity with the request-level engine."""

    model: str = Field(description="LLM name from the catalog, e.g. llama-3.1-70b")
    gpu: str | None = Field(default=None, description="Default: the GPU of the model's first pool")
    tp: Annotated[int, Field(ge=1, le=64)] = 1
    dtype: Literal["bf16", "fp16", "fp8"] = "bf16"
    kv_dtype: Literal["bf16", "fp16", "fp8"] | None = Field(default=None, description="Default: dtype")
    max_batch: Annotated[int, Field(ge=1, le=4096)] = 256
    prefill_chunk_tokens: Annotated[int, Field(ge=1)] | None = None
    max_batched_tokens: Annotated[int, Field(ge=1)] | None = Field(
        default=None, description="vLLM max_num_batched_tokens per iteration (default prefill_chunk_tokens or 8192)"
    )
    prefix_caching: Literal["enabled", "disabled"] = Field(
        default="enabled", description="Reuse cached prompt blocks (vLLM prefix caching)"
    )
    kv_preemption: Literal["enabled", "disabled"] = Field(
        default="enabled", description="Allocate KV blocks as generated and preempt when full (disabled: reserve)"
    )
    shared_prefix_tokens: Annotated[int, Field(ge=0)] = Field(default=0, description="System prompt shared by all requests")
    distinct_prompts: Annotated[int, Field(ge=0)] = Field(default=0, description="Requests repeat this many prompts (0: all distinct)")
    slo: SloSpec = Field(default_factory=SloSpec)
    lengths: str = Field(
        default="fixed",
        description="Request-length mix: 'fixed' (the demand's mean tokens), 'azure-conv', or a trace CSV",
    )
    probe_requests: Annotated[int, Field(ge=200, le=1_000_000)] = 4000
    seed: Annotated[int, Field(ge=0)] = 0


class SloCurve(Frozen):
    """Share of requests meeting the SLO against per-replica load (rate / capacity)."""

    load: Annotated[list[Annotated[float, Field(ge=0, le=1)]], Field(min_length=1)]
    attainment: Annotated[list[Annotated[float, Field(ge=0, le=1)]], Field(min_length=1)]

    @model_validator(mode="after")
    def _aligned(self) -> SloCurve:
        if len(self.load) != len(self.attainment):
            raise ValueError("'load' and 'attainment' must have the same length")
        if any(b <= a for a, b in zip(self.load, self.load[1:], strict=False)):
            raise ValueError("'load' must increase")
        return self


class ServedModel(Frozen):
    """One model served to users."""

    name: Annotated[str, Field(min_length=1, max_length=80)]
    pools: list[str] = Field(
        default_factory=list, description="Pools the replicas run on, in order of preference"
    )
    gpus_per_replica: Annotated[int, Field(ge=1, le=4096)] = Field(
        default=1, description="Default: serving.tp when serving is given, else 1"
    )
    capacity_rps: Positive | None = Field(
        default=None,
        description="Requests per second one replica sustains within the latency SLO "
        "(derived from 'serving' when not given)",
    )
    serving: ServingSpec | None = None
    slo_curve: SloCurve | None = Field(
        default=None, description="SLO attainment against load (derived from 'serving')"
    )
    demand: Demand
    pricing: Pricing | None = Field(default=None, description="Default: the scenario's pricing")
    subscription: Subscription | None = None
    api: ExternalApi | None = Field(default=None, description="A third-party API tier")

    @model_validator(mode="before")
    @classmethod
    def _replica_size(cls, data: Any) -> Any:
        if isinstance(data, dict) and "gpus_per_replica" not in data:
            serving = data.get("serving")
            if isinstance(serving, dict) and isinstance(serving.get("tp", 1), int):
                data = {**data, "gpus_per_replica": serving.get("tp", 1)}
        return data

    @property
    def api_only(self) -> bool:
        return self.api is not None and self.api.mode == "all"

    @model_validator(mode="after")
    def _capacity_source(self) -> ServedModel:
        if self.api_only:
            return self
        if not self.pools:
            raise ValueError("list the 'pools' the replicas run on (or serve it all by 'api: {mode: all}')")
        if self.capacity_rps is None and self.serving is None:
            raise ValueError("give 'capacity_rps' (requests/s per replica) or 'serving' to derive it")
        return self

    @field_validator("pools", mode="before")
    @classmethod
    def _one_pool(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    def revenue_per_request(self, default: Pricing) -> float:
        """USD earned by one served request of mean length at the starting prices."""
        price = self.pricing or default
        return (
            self.demand.input_tokens * price.input_usd_per_1m
            + self.demand.output_tokens * price.output_usd_per_1m
        ) / 1e6

    @property
    def api_cost_per_request(self) -> float:
        """USD the external API charges for one request of mean length."""
        if self.api is None:
            return 0.0
        return (
            self.demand.input_tokens * self.api.input_usd_per_1m
            + self.demand.output_tokens * self.api.output_usd_per_1m
        ) / 1e6
