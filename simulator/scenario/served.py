"""A served model: where it runs, what one replica sustains there, its demand and its price.

Replicas are placed on the listed pools in order (the first pool first, the next for
overflow). A replica's shape (GPUs, capacity, SLO curve) belongs to a (model, pool) pair: the
model-level fields are the default for every pool, ``replicas: {POOL: {...}}`` overrides them
for one pool, and a ``serving`` block is derived on each pool's own GPU. Models are served in
the order listed: when capacity is short the first model listed is served first.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    create_model,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic.fields import FieldInfo

from simulator.scenario.demand import Demand
from simulator.scenario.economics import ExternalApi, Pricing, Subscription
from simulator.scenario.serving_features import DisaggregationSpec, KvOffloadSpec, SpeculativeSpec
from simulator.scenario.serving_policy import ServingPolicy
from simulator.scenario.types import Frozen, Positive, PositiveSeconds


class SloSpec(Frozen):
    """Latency targets a replica must meet: percentile bounds on TTFT and TPOT."""

    ttft_s: PositiveSeconds = Field(
        default=2.0, description="Time to first token target, s (or a duration, e.g. 800ms)")
    ttft_percentile: Annotated[float, Field(gt=0, le=100)] = Field(
        default=90.0, description="Percentile of requests that must meet the TTFT target, 0–100")
    tpot_s: PositiveSeconds = Field(
        default=0.2, description="Time per output token target, s (or a duration, e.g. 50ms)")
    tpot_percentile: Annotated[float, Field(gt=0, le=100)] = Field(
        default=99.0, description="Percentile of requests that must meet the TPOT target, 0–100")


class ServingSpec(Frozen):
    """How a replica is built; Fleetcast derives its capacity with the request-level engine."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True, validate_by_name=True,
                              validate_by_alias=True, serialize_by_alias=True, protected_namespaces=())

    model: str | None = Field(default=None, description="LLM name from the catalog, e.g. llama-3.1-70b")
    model_config_file: str | None = Field(
        default=None, alias="model_config",
        description="A Hugging Face config.json (relative to the scenario file) the model is read from "
        "instead of the catalog; give model or model_config, not both",
    )
    gpu: str | None = Field(default=None, description="Each pool's own GPU; naming another is an error")
    tp: Annotated[int, Field(ge=1, le=64)] = Field(default=1, description="Tensor-parallel GPUs per rank")
    dp: Annotated[int, Field(ge=1, le=512)] = Field(
        default=1, description="Data-parallel attention ranks per replica, each with its own requests and KV cache")
    pp: Annotated[int, Field(ge=1, le=64)] = Field(default=1, description="Pipeline stages per replica")
    ep: Annotated[int, Field(ge=1, le=4096)] = Field(
        default=1, description="Expert-parallel GPUs for MoE layers: 1 (experts split by tp) or tp × dp")
    dtype: Literal["bf16", "fp16", "fp8", "fp4"] = Field(
        default="bf16", description="Weight precision (fp4: NVFP4 on Blackwell)")
    gpu_memory_utilization: Annotated[float, Field(gt=0, le=1)] = Field(
        default=0.9, description="vLLM's share of device memory for weights, activations and the KV cache")
    kv_dtype: Literal["bf16", "fp16", "fp8"] | None = Field(default=None, description="Default: dtype (fp8 under fp4)")
    max_batch: Annotated[int, Field(ge=1, le=4096)] = Field(
        default=256, description="Most requests running at once (vLLM max_num_seqs), per data-parallel rank")
    prefill_chunk_tokens: Annotated[int, Field(ge=1)] | None = Field(
        default=None, description="Older name of max_batched_tokens: the token budget per iteration")
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
    slo: SloSpec = Field(default_factory=SloSpec,
        description="Latency targets: TTFT and TPOT, each at a percentile")
    lengths: str = Field(
        default="fixed",
        description="Request-length mix: 'fixed' (the demand's mean tokens), 'azure-conv', or a trace CSV "
        "(its requests in order, with its prefix_id/prefix_tokens columns)",
    )
    routing: Literal["least_loaded", "prefix_affinity"] = Field(
        default="prefix_affinity", description="How the router spreads requests over replicas: the fewest "
        "outstanding, or a prefix's requests to its home replica while its load is within 1.25x the mean"
    )
    router_replicas: Annotated[int, Field(ge=1, le=64)] = Field(
        default=1, description="Replicas probed together behind one router (capacity is theirs per replica)"
    )
    probe_requests: Annotated[int, Field(ge=200, le=1_000_000)] = Field(
        default=4000, description="Requests served at each probe rate of the capacity search (after 500 of warm-up)")
    seed: Annotated[int, Field(ge=0)] = Field(
        default=0, description="Seed of the probe's random draws (arrival gaps, prompt ids)")
    speculative: SpeculativeSpec | None = Field(default=None, description="Speculative decoding")
    kv_offload: KvOffloadSpec | None = Field(default=None, description="A host-memory KV tier per replica")
    disaggregation: DisaggregationSpec | None = Field(
        default=None, description="Prefill/decode disaggregation: the replica becomes a unit of prefill and "
        "decode replicas")

    def side_layout(self, side: str) -> tuple[int, int, int]:
        """``(tp, dp, ep)`` of a disaggregated unit's ``prefill`` or ``decode`` replicas."""
        assert self.disaggregation is not None
        own = getattr(self.disaggregation, side)
        return (own.tp or self.tp, own.dp or self.dp, own.ep or self.ep)

    def side_gpus(self, side: str) -> int:
        """GPUs of every ``prefill`` or ``decode`` replica of a disaggregated unit."""
        tp, dp, _ = self.side_layout(side)
        return getattr(self.disaggregation, side).replicas * tp * dp

    @property
    def gpus(self) -> int:
        """GPUs of one replica: ``tp × dp × pp``; of a disaggregated unit, every replica of the sides on
        the listed pool (both, unless a side runs on a pool of its own)."""
        if self.disaggregation is None:
            return self.tp * self.dp * self.pp
        return sum(self.side_gpus(side) for side in ("prefill", "decode") if side != self.disaggregation.elsewhere)

    @model_validator(mode="after")
    def _one_model(self) -> ServingSpec:
        if (self.model is None) == (self.model_config_file is None):
            raise ValueError("give exactly one of 'model' (a catalog name) and 'model_config' (a config.json)")
        if self.tp * self.dp * self.pp > 4096:
            raise ValueError(f"tp × dp × pp is {self.tp * self.dp * self.pp:,}; a replica holds at most 4,096 GPUs")
        if self.disaggregation is not None:
            if self.router_replicas > 1:
                raise ValueError("a disaggregated unit is probed alone, its sides behind their own routers; leave "
                                 "router_replicas at 1 (set each side's replicas)")
            if self.pp > 1:
                raise ValueError("a disaggregated unit's sides take tp, dp and ep; leave pp at 1")
            total = self.side_gpus("prefill") + self.side_gpus("decode")
            if total > 4096:
                raise ValueError(f"the disaggregated unit holds {total:,} GPUs; at most 4,096")
        return self

    @model_serializer(mode="wrap")
    def _without_unset_source(self, handler: Any) -> dict[str, Any]:
        data = handler(self)  # the source not given is left out, so resolved files read as before
        for key in ("model", "model_config"):
            if data.get(key) is None:
                data.pop(key, None)
        return data


def _optional(info: FieldInfo) -> Any:
    """A field's type, its constraints kept, that may also be left out (None)."""
    kind = Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
    return kind | None


ServingOverride = create_model(
    "ServingOverride",
    __base__=Frozen,
    __doc__="A pool's changes to the model's serving block: the fields given replace the model's.",
    **{name: (_optional(info), Field(default=None, description=info.description))
       for name, info in ServingSpec.model_fields.items()},
)


def merged_serving(base: ServingSpec | None, override: BaseModel | None) -> ServingSpec | None:
    """A pool's serving block over the model's: the fields the pool's block gives win."""
    changes = {} if override is None else {k: v for k, v in override if v is not None}
    if base is None:
        return ServingSpec.model_validate(changes) if changes else None
    return base.model_copy(update=changes)


class SloCurve(Frozen):
    """Share of requests meeting the SLO against per-replica load (rate / capacity)."""

    load: Annotated[list[Annotated[float, Field(ge=0, le=1)]], Field(min_length=1)] = Field(
        description="Load per replica (rate / capacity, 0–1), increasing")
    attainment: Annotated[list[Annotated[float, Field(ge=0, le=1)]], Field(min_length=1)] = Field(
        description="Share (0–1) of requests meeting the SLO at each load")

    @model_validator(mode="after")
    def _aligned(self) -> SloCurve:
        if len(self.load) != len(self.attainment):
            raise ValueError("'load' and 'attainment' must have the same length")
        if any(b <= a for a, b in zip(self.load, self.load[1:], strict=False)):
            raise ValueError("'load' must increase")
        return self


class ReplicaShape(Frozen):
    """How a model's replicas look on one pool; unset fields come from the model's own."""

    gpus_per_replica: Annotated[int, Field(ge=1, le=4096)] | None = Field(
        default=None, description="Default: this pool's serving tp × dp × pp, else the model's gpus_per_replica"
    )
    capacity_rps: Positive | None = Field(
        default=None, description="Requests per second one replica on this pool sustains within the SLO"
    )
    serving: ServingOverride | None = Field(  # type: ignore[valid-type]
        default=None, description="Fields of the model's serving block that differ on this pool (tp, dtype, …)"
    )
    slo_curve: SloCurve | None = Field(
        default=None, description="Share of requests meeting the SLO against load on this pool (default: derived or the model's)")
    derived_on: str | None = Field(
        default=None, description="The GPU this pool's capacity and curve were derived on (filled in)"
    )
    derived_workload: str | None = Field(
        default=None, description="What the derivation served: requests, prefix labels, replicas and routing "
        "(filled in)"
    )
    serving_policy: ServingPolicy | None = Field(
        default=None, description="This model's policy on this pool (default: the pool's serving_policy)")
    companion_pool: str | None = Field(
        default=None, description="A disaggregated unit's other pool: the side that runs there (filled in)")
    companion_gpus: Annotated[int, Field(ge=1, le=4096)] | None = Field(
        default=None, description="GPUs a unit holds on its companion pool (filled in)")


#: What a derivation writes into a pool's entry; read back, it is derived again.
DERIVED_FIELDS = ("gpus_per_replica", "capacity_rps", "slo_curve", "derived_on", "derived_workload",
                  "companion_pool", "companion_gpus")


def forget_derived(data: dict[str, Any]) -> None:
    """Drop, in a scenario mapping, the values a derivation wrote (entries with ``derived_on``),
    so that they are derived again from the scenario as it now stands: a resolved file whose
    pool GPU, serving block or lengths were changed (by hand, ``--set``, a variant or a draw)
    never keeps a capacity derived for other inputs. An entry without ``derived_on`` is the
    user's own and is kept."""
    for model in data.get("models") or []:
        replicas = model.get("replicas") if isinstance(model, dict) else None
        if not isinstance(replicas, dict):
            continue
        for shape in replicas.values():
            if isinstance(shape, dict) and shape.get("derived_on") is not None:
                for name in DERIVED_FIELDS:
                    shape.pop(name, None)


class ServedModel(Frozen):
    """One model served to users."""

    name: Annotated[str, Field(min_length=1, max_length=80)] = Field(
        description="Unique name of the served model")
    pools: list[str] = Field(
        default_factory=list, description="Pools the replicas run on, in order of preference"
    )
    gpus_per_replica: Annotated[int, Field(ge=1, le=4096)] | None = Field(
        default=None, description="Default: serving's tp × dp × pp when serving is given, else 1"
    )
    capacity_rps: Positive | None = Field(
        default=None,
        description="Requests per second one replica sustains within the latency SLO "
        "(derived from 'serving' when not given)",
    )
    serving: ServingSpec | None = Field(
        default=None, description="Derive a replica's capacity and SLO curve with the request-level engine (instead of capacity_rps)")
    slo_curve: SloCurve | None = Field(
        default=None, description="SLO attainment against load (derived from 'serving')"
    )
    replicas: dict[str, ReplicaShape] = Field(
        default_factory=dict,
        description="Per pool: how a replica looks there, over the model-level fields "
        "(derived entries, one per pool, appear in scenario.resolved.yaml)",
    )
    demand: Demand = Field(
        description="The demand for this model: base rate, growth, seasonality, noise, tokens per request")
    pricing: Pricing | None = Field(default=None, description="Default: the scenario's pricing")
    subscription: Subscription | None = Field(
        default=None, description="Revenue per subscriber on top of tokens: {usd_per_month, requests_per_day}")
    api: ExternalApi | None = Field(default=None, description="A third-party API tier")
    preempt_after: list[str] | Literal["rented"] | None = Field(
        default=None, description="Pools to use before preempting training in its 'preempt' pools: a list of "
        "its pools, or 'rented' (every on-demand, reserved or spot pool it lists); default: none, the pools "
        "in order of preference, jobs' GPUs included")

    @model_validator(mode="before")
    @classmethod
    def _replica_size(cls, data: Any) -> Any:
        # Without a serving block a replica is one GPU unless said; with one it is tp × dp × pp,
        # left unset so that a variant changing serving.tp changes the replica too.
        if isinstance(data, dict) and "gpus_per_replica" not in data and data.get("serving") is None:
            data = {**data, "gpus_per_replica": 1}
        return data

    @property
    def replica_gpus(self) -> int:
        """GPUs of a replica at the model level: ``gpus_per_replica``, else serving's tp × dp × pp, else 1."""
        if self.gpus_per_replica is not None:
            return self.gpus_per_replica
        return self.serving.gpus if self.serving is not None else 1

    @property
    def api_only(self) -> bool:
        return self.api is not None and self.api.mode == "all"

    @model_validator(mode="after")
    def _capacity_source(self) -> ServedModel:
        if self.api_only:
            return self
        if not self.pools:
            raise ValueError("list the 'pools' the replicas run on (or serve it all by 'api: {mode: all}')")
        for pool in self.pools:
            shape = self.replicas.get(pool)
            if self.capacity_rps is None and self.serving is None and (
                    shape is None or (shape.capacity_rps is None and shape.serving is None)):
                raise ValueError("give 'capacity_rps' (requests/s per replica) or 'serving' to derive it"
                                 + (f" (pool {pool!r} has neither)" if self.replicas else ""))
        return self

    def _layout_gpus(self, override: BaseModel) -> int:
        """tp × dp × pp of a pool's serving block over the model's (each field: the pool's, the
        model's, else 1), without validating the merged block (checked with its field path later);
        a disaggregated unit's GPUs when either block disaggregates."""
        if override.disaggregation is not None or (self.serving is not None and self.serving.disaggregation):
            changes = {k: v for k, v in override if v is not None}
            merged = (self.serving.model_copy(update=changes) if self.serving is not None
                      else ServingSpec.model_construct(**changes))
            return merged.gpus
        gpus = 1
        for key in ("tp", "dp", "pp"):
            value = getattr(override, key)
            if value is None:
                value = getattr(self.serving, key) if self.serving is not None else 1
            gpus *= value
        return gpus

    def serving_on(self, pool: str) -> ServingSpec | None:
        """The serving block that applies on ``pool``: the pool's fields over the model's."""
        shape = self.replicas.get(pool)
        return merged_serving(self.serving, shape.serving if shape else None)

    def shape_on(self, pool: str) -> ReplicaShape:
        """The replica on ``pool``: each of GPUs, capacity and curve (once derived) from the
        pool's entry where it gives it, else from the model's fields."""
        shape = self.replicas.get(pool) or ReplicaShape()
        companion = self._companion_on(pool, shape)
        gpus = shape.gpus_per_replica
        if gpus is None:
            own = shape.serving is not None and any(getattr(shape.serving, k) is not None
                                                    for k in ("tp", "dp", "pp", "disaggregation"))
            gpus = self._layout_gpus(shape.serving) if own else self.replica_gpus
        return ReplicaShape(
            gpus_per_replica=gpus,
            capacity_rps=shape.capacity_rps if shape.capacity_rps is not None else self.capacity_rps,
            slo_curve=shape.slo_curve if shape.slo_curve is not None else self.slo_curve,
            derived_on=shape.derived_on,
            serving_policy=shape.serving_policy,
            companion_pool=companion[0],
            companion_gpus=companion[1],
        )

    def _companion_on(self, pool: str, shape: ReplicaShape) -> tuple[str | None, int | None]:
        """A unit's other pool and its GPUs there: as derived, else from the serving block (a unit
        whose capacity is given still holds its other side's GPUs)."""
        if shape.companion_pool is not None:
            return shape.companion_pool, shape.companion_gpus
        spec = self.unit_serving_on(pool)
        side = spec.disaggregation.elsewhere if spec is not None else None
        if side is None:
            return None, None
        return getattr(spec.disaggregation, side).pool, spec.side_gpus(side)

    def unit_serving_on(self, pool: str) -> ServingSpec | None:
        """The serving block on ``pool`` when it disaggregates; None otherwise, or when the merged block
        is not valid (its own error is raised, with its field path, when its capacity is derived)."""
        own = self.replicas.get(pool)
        own_serving = own.serving if own is not None else None
        if (own_serving is None or own_serving.disaggregation is None) and (
                self.serving is None or self.serving.disaggregation is None):
            return None
        try:
            spec = self.serving_on(pool)
        except ValueError:
            return None
        return spec if spec is not None and spec.disaggregation is not None else None

    @model_validator(mode="after")
    def _burst_pools_listed(self) -> ServedModel:
        if isinstance(self.preempt_after, list):
            for name in self.preempt_after:
                if name not in self.pools:
                    raise ValueError(f"preempt_after names {name!r}, which is not among its pools {self.pools}")
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
