"""A serving block's deployment features: speculative decoding, KV offload, P/D disaggregation.

``serving: {speculative: {...}, kv_offload: {...}, disaggregation: {...}}`` — each optional;
the request-level engine derives the replica's (or unit's) capacity with them
(:mod:`simulator.serving.speculative`, :mod:`simulator.serving.kv_offload`,
:mod:`simulator.serving.disaggregated`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from simulator.scenario.types import Frozen, Positive

Share = Annotated[float, Field(ge=0, le=1)]


class SpeculativeSpec(Frozen):
    """Speculative decoding: ``k`` draft tokens per step, verified by the model in one pass."""

    k: Annotated[int, Field(ge=1, le=32)] = Field(description="Draft tokens proposed per step")
    acceptance: Share | Annotated[list[Share], Field(min_length=1, max_length=32)] = Field(
        default=0.7, description="Probability a draft is accepted given the earlier ones were: one rate, or one "
        "per draft position (EAGLE on MT-bench: about 0.75 at the first position, 0.65 by the fourth)")
    accepted_distribution: Annotated[list[Share], Field(min_length=2, max_length=33)] | None = Field(
        default=None, description="Instead of acceptance: probabilities of 0 … k drafts accepted in a step")
    draft: str = Field(
        default="eagle", description="eagle or mtp (a one-layer draft head with the LM head), ngram (prompt "
        "lookup, free), or a catalog model name (a separate draft model on the same GPUs)")
    draft_share: Share | None = Field(
        default=None, description="A draft head's pass as a share of the model's (default: one layer and the "
        "LM head over the model's per-token weights)")

    @field_validator("draft")
    @classmethod
    def _draft(cls, value: str) -> str:
        if value == "draft_model":
            raise ValueError("name the draft model itself (a catalog name such as llama-3.2-1b)")
        return value

    @model_validator(mode="after")
    def _shapes(self) -> SpeculativeSpec:
        if isinstance(self.acceptance, list) and len(self.acceptance) not in (1, self.k):
            raise ValueError(f"give one acceptance rate or one per draft position ({self.k}), "
                             f"not {len(self.acceptance)}")
        if self.accepted_distribution is not None:
            if len(self.accepted_distribution) != self.k + 1:
                raise ValueError(f"accepted_distribution needs k + 1 = {self.k + 1} probabilities (0 … {self.k} "
                                 "drafts accepted)")
            if abs(sum(self.accepted_distribution) - 1.0) > 1e-6:
                raise ValueError(f"accepted_distribution must sum to 1, not {sum(self.accepted_distribution):g}")
        return self


class KvOffloadSpec(Frozen):
    """A host-memory KV tier per replica: evicted prefix blocks, and preempted requests' KV."""

    host_tokens: Annotated[int, Field(ge=16, le=10**10)] = Field(description="KV tokens the tier holds per replica")
    bandwidth_gbps: Positive = Field(
        default=50.0, description="Host-to-GPU bandwidth per GPU, GB/s (PCIe 5.0 x16: about 50); a request's KV "
        "loads over the links of the GPUs holding it at once")
    spill_preempted: Literal["enabled", "disabled"] = Field(
        default="disabled", description="A preempted request writes its KV to the tier and reloads it instead of "
        "recomputing")


class DisaggregatedSide(Frozen):
    """One side of a disaggregated unit: its replicas and their layout (unset: the serving block's)."""

    replicas: Annotated[int, Field(ge=1, le=64)] = Field(default=1, description="Replicas of this side per unit")
    pool: Annotated[str, Field(min_length=1, max_length=80)] | None = Field(
        default=None, description="A pool of the fleet this side runs on, on that pool's GPU (one side at most); "
        "the other side runs on the pool the model lists. Default: both sides on the listed pool")
    tp: Annotated[int, Field(ge=1, le=64)] | None = Field(
        default=None, description="Tensor-parallel GPUs of this side's replicas (default: the block's tp)")
    dp: Annotated[int, Field(ge=1, le=512)] | None = Field(
        default=None, description="Data-parallel attention ranks of this side's replicas (default: the block's dp)")
    ep: Annotated[int, Field(ge=1, le=4096)] | None = Field(
        default=None, description="Expert-parallel GPUs of this side (1 or tp × dp; default: the block's ep)")
    max_batch: Annotated[int, Field(ge=1, le=4096)] | None = Field(
        default=None, description="Most requests running per data-parallel rank (default: the block's max_batch)")
    max_batched_tokens: Annotated[int, Field(ge=1)] | None = Field(
        default=None, description="Token budget per iteration (default: the block's)")


class DisaggregationSpec(Frozen):
    """Prefill/decode disaggregation: a unit of prefill and decode replicas, the KV of each request
    sent from one to the other; the unit is the replica the fleet places, on the pool the model
    lists or, when a side names its own pool, on both pools at once (a companion pool)."""

    prefill: DisaggregatedSide = Field(default_factory=DisaggregatedSide,
        description="The prefill side: replicas per unit and their layout")
    decode: DisaggregatedSide = Field(default_factory=DisaggregatedSide,
        description="The decode side: replicas per unit and their layout")
    kv_link: Literal["nvlink", "rdma"] | None = Field(
        default=None, description="The KV link: NVLink when the unit fits one scale-up domain (default), else "
        "the scale-out network (RDMA)")

    @model_validator(mode="after")
    def _one_side_elsewhere(self) -> DisaggregationSpec:
        if self.prefill.pool is not None and self.decode.pool is not None:
            raise ValueError("name a pool for one side at most: the other side runs on the pool the model lists")
        return self

    @property
    def elsewhere(self) -> str | None:
        """The side (``prefill`` or ``decode``) that runs on a pool of its own, if any."""
        return "prefill" if self.prefill.pool is not None else "decode" if self.decode.pool is not None else None
