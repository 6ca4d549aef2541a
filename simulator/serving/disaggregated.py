"""Prefill/decode disaggregation: prompts on prefill replicas, tokens on decode replicas.

A disaggregated *unit* is ``x`` prefill replicas and ``y`` decode replicas (each side with its
own GPU, layout and iteration model). A request is prefilled on a prefill replica (vLLM V1
scheduling of prompts only: token budget, chunking, prefix cache; its first token is sampled
there), its prompt's KV crosses the link to a decode replica, and it decodes there (continuous
batching of decodes only, admitted while their KV fits, speculative decoding where configured):

* ``TTFT = prefill queue + prefill + KV transfer`` (the first token reaches the user with the
  KV handed over);
* ``transfer = latency + prompt tokens × KV bytes per token / (link bandwidth per GPU × GPUs
  holding the request's KV on the prefill side)``: every GPU of a replica's tensor- and
  pipeline-parallel group sends its shard over its own link at once, NVLink within a scale-up
  domain, the scale-out network (RDMA) across;
* TPOT from the decode replica's batch.

The two sides form a tandem: the prefill side does not wait for the decode side (a finished
prompt's KV waits in prefill memory until a decode replica admits it; that memory is not
charged against the prefill replica), so the prefill side is simulated first and its
finishing times, plus the transfers, are the decode side's arrivals. Requests of one output
token leave at the prefill side. With one prefill replica, a token budget of one prompt and
a fixed prompt length, each prefill takes the same time ``D`` and the prefill side is an
M/D/1 queue: mean TTFT ``D + λD² / (2(1 − λD)) + transfer`` (DistServe, §3.1), for requests of two or more
output tokens (the others send no KV).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simulator.serving.iteration import IterationModel
from simulator.serving.kv_offload import HostKvTier
from simulator.serving.replica import ServingResult
from simulator.serving.speculative import SpeculativeDecoding
from simulator.serving.vllm import DEFAULT_MAX_BATCHED_TOKENS, simulate_vllm

NVLINK_LATENCY_S = 10e-6  # one NVLink transfer's setup (NCCL send/recv)
RDMA_LATENCY_S = 50e-6  # one RDMA read of a request's KV across nodes (NIXL / Mooncake transfer engine)


@dataclass(frozen=True)
class KvLink:
    """The link a request's KV crosses from its prefill replica to its decode replica."""

    bandwidth_gbps: float  # per sending GPU and direction, GB/s
    latency_s: float = RDMA_LATENCY_S
    kind: str = "rdma"

    def __post_init__(self) -> None:
        if not self.bandwidth_gbps > 0 or not self.latency_s >= 0:
            raise ValueError("a KV link needs bandwidth > 0 GB/s and latency >= 0 s")

    @classmethod
    def between(cls, prefill_gpu, decode_gpu, same_domain: bool) -> KvLink:
        """NVLink when both sides share a scale-up domain (same GPU type), else the scale-out network
        (the slower side's NIC); catalog figures (``link_gbps``, ``scale_out_gbps``)."""
        if same_domain and prefill_gpu.link_gbps:
            return cls(float(prefill_gpu.link_gbps), NVLINK_LATENCY_S, "nvlink")
        nics = [g.scale_out_gbps for g in (prefill_gpu, decode_gpu) if g.scale_out_gbps]
        return cls(float(min(nics)) if nics else 50.0, RDMA_LATENCY_S, "rdma")

    def seconds(self, prompt_tokens: np.ndarray, kv_bytes_per_token: float, senders: int) -> np.ndarray:
        return self.latency_s + prompt_tokens * kv_bytes_per_token / (self.bandwidth_gbps * 1e9 * max(senders, 1))


@dataclass(frozen=True)
class Side:
    """One side of a unit: its iteration model, replicas and engine settings."""

    model: IterationModel
    replicas: int = 1
    max_num_seqs: int = 256
    max_num_batched_tokens: int = DEFAULT_MAX_BATCHED_TOKENS
    kv_capacity_tokens: int | None = None
    policy: str = "least_outstanding"  # how its router spreads requests (prefix_affinity keeps a prefix home)

    @property
    def gpus(self) -> int:
        return int(getattr(self.model, "gpus", 1)) * self.replicas


@dataclass(frozen=True)
class Unit:
    """A disaggregated unit: the replica the fleet places (GPUs of both sides)."""

    prefill: Side
    decode: Side
    link: KvLink

    @property
    def gpus(self) -> int:
        return self.prefill.gpus + self.decode.gpus

    def key(self) -> list:
        """What a capacity derived on this unit depends on (for the capacity cache)."""
        return [[np.asarray(side.model.params).tolist(), getattr(side.model, "frontend_s", 0.0),
                 getattr(side.model, "kv_bytes_per_token", 0.0), getattr(side.model, "tp", 1),
                 getattr(side.model, "dp", 1), side.replicas, side.max_num_seqs, side.max_num_batched_tokens,
                 side.kv_capacity_tokens, side.policy] for side in (self.prefill, self.decode)] + [
            [self.link.bandwidth_gbps, self.link.latency_s, self.link.kind]]


@dataclass(frozen=True)
class DisaggregatedResult:
    """A disaggregated run: per-request times as one :class:`ServingResult` (the unit as one
    replica) and each side's own run."""

    result: ServingResult
    prefill: ServingResult
    decode: ServingResult | None
    transfer_s: np.ndarray
    kv_bytes: np.ndarray
    prefill_gpus: int
    decode_gpus: int
    link: KvLink
    extra: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """``fleetcast serving --json`` keys for the unit, and the split's own figures."""
        gpus = self.prefill_gpus + self.decode_gpus
        stats = self.result.summary(gpus_per_replica=gpus)
        duration = self.result.duration_s
        prompt = float(self.result.prompt_tokens.sum())
        out = float(self.result.output_tokens.sum())
        stats.update({
            "gpus": gpus,
            "prefill_gpus": self.prefill_gpus,
            "decode_gpus": self.decode_gpus,
            "prefill_replicas": self.prefill.replicas,
            "decode_replicas": self.decode.replicas if self.decode is not None else 0,
            "prefill_tokens_per_s_per_gpu": prompt / duration / self.prefill_gpus if duration > 0 else None,
            "decode_tokens_per_s_per_gpu": out / duration / self.decode_gpus if duration > 0 else None,
            "kv_link": self.link.kind,
            "kv_transfer_gbps": float(self.kv_bytes.sum()) / duration / 1e9 if duration > 0 else None,
            "kv_transfer_p50_s": float(np.percentile(self.transfer_s, 50)) if len(self.transfer_s) else None,
            "kv_transfer_p99_s": float(np.percentile(self.transfer_s, 99)) if len(self.transfer_s) else None,
        })
        if self.decode is not None and self.decode.verify_steps is not None:
            stats["tokens_per_step"] = self.decode.tokens_per_step
        return stats


def simulate_disaggregated(
    arrival_s: Any,
    prompt_tokens: Any,
    output_tokens: Any,
    prefill: Side,
    decode: Side,
    link: KvLink,
    prefix_caching: bool = True,
    prefix_id: Any = None,
    prefix_tokens: Any = None,
    prompt_id: Any = None,
    speculative: SpeculativeDecoding | None = None,
    draft: IterationModel | None = None,
    host_kv: HostKvTier | None = None,
    frontend_s: float | None = None,
    rng: np.random.Generator | None = None,
    kv_preemption: bool = True,
) -> DisaggregatedResult:
    """Serve requests on a disaggregated unit (module docstring).

    Args:
        arrival_s, prompt_tokens, output_tokens: per request, as :func:`simulate_vllm`.
        prefill, decode: the two sides (replicas behind a least-outstanding router each).
        link: the KV link between them.
        prefix_caching, prefix_id, prefix_tokens, prompt_id: the prefill side's prefix cache.
        speculative, draft, rng: speculative decoding on the decode side.
        host_kv: a host-memory KV tier on each replica of both sides (evicted prefix blocks on the
            prefill side; preempted requests' KV, with ``spill_preempted``, on either).
        frontend_s: per-request front-end latency (default the prefill model's).
    """
    prompt = np.asarray(prompt_tokens, dtype=np.int64)
    output = np.asarray(output_tokens, dtype=np.int64)
    arrival = np.asarray(arrival_s, dtype=np.float64)
    first_pass = simulate_vllm(arrival, prompt, np.ones_like(output), prefill.model,
                               max_num_seqs=prefill.max_num_seqs,
                               max_num_batched_tokens=prefill.max_num_batched_tokens,
                               kv_capacity_tokens=prefill.kv_capacity_tokens, prefix_caching=prefix_caching,
                               kv_preemption=kv_preemption, prefix_id=prefix_id, prefix_tokens=prefix_tokens,
                               prompt_id=prompt_id, replicas=prefill.replicas, policy=prefill.policy,
                               frontend_s=frontend_s, host_kv=host_kv)
    kv_per_token = float(getattr(prefill.model, "kv_bytes_per_token", 0.0))
    senders = int(getattr(prefill.model, "tp", 1)) * int(getattr(prefill.model, "pp", 1))
    more = output >= 2  # a request of one token leaves at the prefill side: no KV to send
    transfer = np.where(more, link.seconds(prompt, kv_per_token, senders), 0.0)
    ready = first_pass.first_token_s + transfer
    finish = ready.copy()
    second_pass = None
    if more.any():
        second_pass = simulate_vllm(ready[more], prompt[more], output[more], decode.model,
                                    max_num_seqs=decode.max_num_seqs,
                                    max_num_batched_tokens=decode.max_num_batched_tokens,
                                    kv_capacity_tokens=decode.kv_capacity_tokens, prefix_caching=False,
                                    kv_preemption=kv_preemption, replicas=decode.replicas, policy=decode.policy,
                                    frontend_s=0.0,
                                    speculative=speculative, draft=draft, kv_arrives=True, rng=rng,
                                    host_kv=host_kv)
        finish[more] = second_pass.finish_s
    preemptions = first_pass.preemptions.copy()
    steps = None
    if second_pass is not None:
        preemptions[more] += second_pass.preemptions
        if second_pass.verify_steps is not None:
            steps = np.zeros(len(prompt), dtype=np.int64)
            steps[more] = second_pass.verify_steps
    verified = None
    if steps is not None:
        verified = np.zeros(len(prompt), dtype=np.int64)
        verified[more] = second_pass.verified_tokens
    merged = ServingResult(arrival, prompt, output, first_pass.admit_s, ready, finish,
                           np.zeros(len(prompt), dtype=np.int64),
                           first_pass.iterations + (second_pass.iterations if second_pass is not None else 0), 1,
                           preemptions, first_pass.cached_tokens, first_pass.host_tokens, steps, verified)
    return DisaggregatedResult(merged, first_pass, second_pass, transfer, np.where(more, prompt * kv_per_token, 0.0),
                               prefill.gpus,
                               decode.gpus, link)
