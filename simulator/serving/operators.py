"""Iteration time per operator class: each kind of GPU work at its own roofline, summed.

One forward pass of a replica (vLLM flattens every scheduled token into one batch) runs:

* **GEMMs** (QKV/O projections, MLP or experts) over all ``n`` tokens of the iteration, prompt
  chunks and decodes alike: ``max(FLOPs / (TP·peak·gemm_eff), weight bytes read / (TP·HBM·mem_eff))``.
  FLOPs are ``2 × active parameters`` per token, each tensor class at its own precision's peak;
  the bytes are every dense weight plus the routed experts the batch activates — for ``E``
  experts with top-``k`` routing, ``n`` tokens touch ``E·(1 − (1 − k/E)^n)`` distinct experts in
  expectation (uniform, independent routing).
* **Prefill attention** over each chunk's causal context (cached prefix tokens are not recomputed
  but are attended to and read): ``max(4·layers·heads·head_dim·Σposition / (TP·peak_bf16·attn_eff),
  KV bytes read / (TP·HBM·mem_eff))``.
* **Decode attention**, one query per decoding request over its whole context, the same roofline.
  KV bytes per context token are the full-attention layers' (windowed layers read at most their
  window, which :meth:`operator_seconds` adds and the engine's per-token rate leaves out); with
  MLA every GPU reads the whole latent (``kv_lora_rank + qk_rope_head_dim`` per layer), not 1/TP.
* **Communication**: with TP > 1, two ring all-reduces of the activations per layer,
  ``2·layers·(latency + 2·(TP−1)/TP · n·hidden·2 bytes / link bandwidth)``; with expert
  parallelism an all-to-all dispatch and combine per MoE layer; with pipeline stages the hand-offs
  between them (:mod:`simulator.serving.parallelism`, which also says how ``dp``, ``ep`` and ``pp``
  divide the work above: attention, dense layers and KV reads over ``tp × dp``, routed experts
  over ``ep`` with the busiest GPU's imbalance).
* **Fixed overhead**: per iteration (CPU scheduling, sampling, graph launch) plus per layer
  (the floor of a layer's dozen small kernels at small batch): ``overhead_s + layers·layer_overhead_s``.

Precision is per tensor: with ``dtype="fp8"`` (or ``"fp4"``, NVFP4 on Blackwell: 4-bit values and
an FP8 scale per 16, multiplied on the FP4 tensor cores) the MLP/expert linears (and the attention
projections unless the checkpoint keeps them 16-bit, :attr:`LlmSpec.fp8_attention`) are FP8 (FP4);
embeddings, lm_head and the attention core stay BF16. A checkpoint's own 4-bit experts (gpt-oss's
MXFP4, :attr:`LlmSpec.expert_bytes_per_param`) are read at 4.25 bits and multiplied at the dtype's
peak (16-bit on Hopper). The weights held in memory are the total
parameters at those precisions. A per-request ``frontend_s`` (HTTP and API server) is added to
each request's TTFT and E2E by the engines.

The efficiencies, the overhead and the front-end latency default to the GPU generation's entry
of :data:`simulator.scenario.catalog.GENERATION_EFFICIENCY` (fitted to vLLM on H100 by
``benchmarks/fit_serving.py``). :meth:`OperatorIterationModel.operator_seconds` gives the
per-operator split of one iteration, in Python, for inspection and tests.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.scenario.catalog import GENERATION_EFFICIENCY, HOPPER_EFFICIENCY
from simulator.serving.batching import KIND_OPERATOR
from simulator.serving.iteration import _BYTES, RooflineIterationModel, ServingConfigError
from simulator.serving.kv_memory import (
    GPU_MEMORY_UTILIZATION,
    KvMemory,
    visible_memory_bytes,
    vllm_kv_memory,
)
from simulator.serving.parallelism import (
    Communication,
    Parallelism,
    communication,
    default_imbalance,
)

_DEFAULT_LINK_GBPS = 450.0
_DEFAULT_ALLREDUCE_US = 8.0


def _default(gpu, key: str) -> float:
    return GENERATION_EFFICIENCY.get(getattr(gpu, "generation", "hopper"), HOPPER_EFFICIENCY)[key]


@dataclass(frozen=True)
class OperatorIterationModel(RooflineIterationModel):
    """Iteration time summed over operator classes (see module docstring).

    Efficiencies left as ``None`` take the GPU generation's calibrated values. ``dp``, ``pp`` and
    ``ep`` lay the replica out over ``tp × dp × pp`` GPUs (:mod:`simulator.serving.parallelism`);
    ``ep_imbalance`` replaces the expected expert-load imbalance. ``gpu_memory_utilization`` is
    vLLM's share of device memory the KV capacity is computed from (:mod:`simulator.serving.kv_memory`).
    """

    compute_efficiency: float | None = None  # GEMM share of peak
    memory_efficiency: float | None = None
    overhead_s: float | None = None
    attention_efficiency: float | None = None
    frontend_s: float | None = None
    allreduce_latency_s: float | None = None  # default: the GPU's allreduce_latency_us
    layer_overhead_s: float | None = None
    widened_expert_efficiency: float | None = None  # GEMM share of peak for a checkpoint's 4-bit experts
    link_efficiency: float | None = None  # achieved share of the link's bandwidth in TP all-reduces
    dp: int = 1
    pp: int = 1
    ep: int = 1
    ep_imbalance: float | None = None
    gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION

    def __post_init__(self) -> None:
        for key, name in (("compute_efficiency", "gemm_efficiency"), ("memory_efficiency", "memory_efficiency"),
                          ("overhead_s", "overhead_s"), ("attention_efficiency", "attention_efficiency"),
                          ("frontend_s", "frontend_s"), ("layer_overhead_s", "layer_overhead_s")):
            if getattr(self, key) is None:
                object.__setattr__(self, key, _default(self.gpu, name))
        table = GENERATION_EFFICIENCY.get(getattr(self.gpu, "generation", "hopper"), HOPPER_EFFICIENCY)
        if self.widened_expert_efficiency is None:
            object.__setattr__(self, "widened_expert_efficiency",
                               table.get("widened_expert_efficiency", self.compute_efficiency))
        if self.link_efficiency is None:
            object.__setattr__(self, "link_efficiency", table.get("link_efficiency", 1.0))
        try:
            par = Parallelism(self.tp, self.dp, self.pp, self.ep)
        except ValueError as exc:
            raise ServingConfigError(str(exc)) from None
        if par.ep > 1 and not self.llm.experts:
            raise ServingConfigError(f"ep {par.ep}: {self.llm.name} has no routed experts to spread")
        if self.pp > self.llm.layers:
            raise ServingConfigError(f"pp {self.pp} exceeds {self.llm.name}'s {self.llm.layers} layers")
        if self.ep > 1 and self.ep > self.llm.experts * 2:
            raise ServingConfigError(f"ep {self.ep} exceeds twice {self.llm.name}'s {self.llm.experts} experts "
                                     "(one routed expert and one redundant copy per GPU at most)")
        if self.ep_imbalance is not None and self.ep_imbalance < 1:
            raise ServingConfigError(f"ep_imbalance must be >= 1, got {self.ep_imbalance}")
        if not 0 < self.gpu_memory_utilization <= 1:
            raise ServingConfigError(f"gpu_memory_utilization must be in (0, 1], got {self.gpu_memory_utilization}")
        super().__post_init__()
        memory = self.kv_memory()
        if memory.kv_cache_tokens < 16:
            raise ServingConfigError(
                f"{self.llm.name} in {self.dtype} leaves no KV cache on a replica of {self.gpus} × "
                f"{self.gpu_name or 'GPU'} ({self.parallelism.describe()}): of {memory.visible_bytes / 1e9:,.0f} GB × "
                f"{self.gpu_memory_utilization:.0%} per GPU, weights take {memory.weights_bytes / 1e9:,.1f} GB, "
                f"activations {memory.activation_bytes / 1e9:,.1f} GB and the runtime {memory.reserve_bytes / 1e9:,.1f} "
                "GB; use more GPUs per replica (tp, ep, pp) or a smaller dtype")

    def _check_weights_fit(self) -> None:
        usable = visible_memory_bytes(self.gpu) * self.gpu_memory_utilization
        needed = self.weight_bytes_per_gpu
        if needed >= usable:
            raise ServingConfigError(
                f"{self.llm.name} in {self.dtype} needs {needed / 1e9:,.0f} GB of weights on each GPU of a "
                f"replica of {self.gpus} × {self.gpu_name or 'GPU'} ({self.parallelism.describe()}), which has "
                f"{usable / 1e9:,.0f} GB usable ({self.gpu_memory_utilization:.0%} of "
                f"{visible_memory_bytes(self.gpu) / 1e9:,.0f} GB); use more GPUs per replica (tp, ep, pp) "
                "or a smaller dtype"
            )

    @property
    def parallelism(self) -> Parallelism:
        return Parallelism(self.tp, self.dp, self.pp, self.ep)

    @property
    def gpus(self) -> int:
        """GPUs of one replica: ``tp × dp × pp``."""
        return self.tp * self.dp * self.pp

    @property
    def imbalance(self) -> float:
        """Busiest expert GPU's load over the mean (1 without expert parallelism)."""
        if self.ep_imbalance is not None:
            return float(self.ep_imbalance)
        return default_imbalance(self.parallelism, self.llm.top_k)

    # -- tensor classes and their precisions -------------------------------------------------
    def _linear_bytes(self) -> float:
        return _BYTES[self.dtype]

    def _attention_proj_bytes(self) -> float:
        return _BYTES[self.dtype] if self.llm.fp8_attention else max(_BYTES[self.dtype], 2.0)

    def _expert_bytes(self) -> float:
        """Routed experts' bytes per parameter: the checkpoint's own (gpt-oss MXFP4) or the dtype's."""
        return self.llm.expert_bytes_per_param or self._linear_bytes()

    def _peak(self, bytes_per_value: float) -> float:
        """Tensor-core peak for weights of ``bytes_per_value``: FP4 (NVFP4 on Blackwell) for 4-bit
        weights of the ``fp4`` dtype, FP8 for 8-bit ones, else BF16 (a checkpoint's own 4-bit
        experts, like gpt-oss's MXFP4 on Hopper, are widened to 16 bits to multiply)."""
        gpu = self.gpu
        if bytes_per_value == _BYTES["fp4"] and self.dtype == "fp4" and gpu.tflops_fp4:
            return float(gpu.tflops_fp4) * 1e12
        if bytes_per_value == 1.0 and gpu.tflops_fp8:
            return float(gpu.tflops_fp8) * 1e12
        return float(gpu.tflops_bf16) * 1e12

    @property
    def routed_expert_bytes(self) -> float:
        llm = self.llm
        return llm.experts * llm.expert_params * self._expert_bytes()

    @property
    def weight_bytes(self) -> float:
        """Bytes of weights held: each tensor class at its precision (embeddings 16-bit)."""
        llm = self.llm
        linear = llm.dense_mlp_params + llm.experts * llm.expert_params
        other = max(llm.params - llm.attention_params - linear, 0.0)
        held = (llm.attention_params * self._attention_proj_bytes() + linear * self._linear_bytes()
                + other * max(_BYTES[self.dtype], 2.0))
        if llm.expert_bytes_per_param:
            held += llm.experts * llm.expert_params * (llm.expert_bytes_per_param - self._linear_bytes())
        return held

    @property
    def weight_bytes_per_gpu(self) -> float:
        """One GPU's weights: the dense part over ``tp``, routed experts over ``ep`` (or ``tp``), all
        over ``pp`` stages. When ``ep`` does not divide the experts, each GPU holds ``ceil(E / ep)``
        expert slots, the slots beyond ``E`` holding redundant copies of the busiest experts (as
        DeepSeek's EP144 decode holds 256 + 32 on 144 GPUs)."""
        routed = held = self.routed_expert_bytes
        par = self.parallelism
        if par.ep > 1 and self.llm.experts % par.ep:
            held = routed * -(-self.llm.experts // par.ep) * par.ep / self.llm.experts
        return ((self.weight_bytes - routed) / par.tp + held / par.expert_shards) / par.pp

    @property
    def kv_bytes_per_token_per_gpu(self) -> float:
        """KV bytes one token of a request holds on one GPU of its rank: its share of the KV heads
        (a head is replicated when ``tp`` exceeds them), MLA's latent whole, over ``pp`` stages."""
        kv = self.kv_bytes_per_token
        if not self.llm.kv_lora_rank:
            kv /= min(self.tp, self.llm.kv_heads)
        return kv / self.pp

    def kv_memory(self, **engine) -> KvMemory:
        """vLLM's memory budget of one GPU (engine: ``max_num_batched_tokens``, ``max_num_seqs``)."""
        return vllm_kv_memory(self, self.gpu_memory_utilization, **engine)

    @property
    def kv_capacity_tokens(self) -> int:
        """KV tokens the whole replica holds (every DP rank's), at vLLM's default engine settings."""
        return self.kv_memory().replica_kv_tokens

    def kv_read_per_token(self, bandwidth: float) -> float:
        """Seconds per context token of KV reads on one GPU, the iteration's requests spread over
        the ``dp`` ranks: the full-attention layers' share of this GPU's cache (module docstring)."""
        kv = self.kv_bytes_per_token  # every stage's layers, the stages running in turn
        if self.llm.windowed_layers:
            kv = kv * self.llm.full_attention_layers / self.llm.layers
        if not self.llm.kv_lora_rank:
            kv /= min(self.tp, self.llm.kv_heads)
        return kv / self.dp / bandwidth

    def communication(self) -> Communication:
        llm, gpu = self.llm, self.gpu
        latency = self.allreduce_latency_s
        if latency is None:
            latency = (gpu.allreduce_latency_us if gpu.allreduce_latency_us is not None
                       else _DEFAULT_ALLREDUCE_US) * 1e-6
        return communication(self.parallelism, layers=llm.layers, moe_layers=llm.routed_layers, hidden=llm.hidden,
                             top_k=llm.top_k, link_gbps=gpu.link_gbps or _DEFAULT_LINK_GBPS,
                             allreduce_latency_s=latency, scale_up_domain=gpu.scale_up_domain,
                             scale_out_gbps=gpu.scale_out_gbps, allreduce_efficiency=self.link_efficiency)

    @property
    def params(self) -> np.ndarray:
        llm, par = self.llm, self.parallelism
        gemm_eff, mem_eff, attn_eff = self.compute_efficiency, self.memory_efficiency, self.attention_efficiency
        bandwidth = self.gpu.memory_tbps * 1e12 * mem_eff
        imbalance = self.imbalance
        b_attn, b_lin, b_exp = self._attention_proj_bytes(), self._linear_bytes(), self._expert_bytes()
        dense_flops = llm.attention_params / self._peak(b_attn) + llm.dense_mlp_params / self._peak(b_lin)
        expert_flops = llm.top_k * llm.expert_params / self._peak(b_lin)
        if llm.expert_bytes_per_param and llm.expert_bytes_per_param < b_lin and self.dtype != "fp4":
            # the checkpoint's 4-bit experts widened to multiply at the dtype's precision
            expert_flops *= gemm_eff / self.widened_expert_efficiency
        gemm_per_token = 2.0 * (dense_flops + expert_flops * imbalance) / (par.tp * par.dp * gemm_eff)
        lm_head = llm.vocab * llm.hidden * max(_BYTES[self.dtype], 2.0)
        dense_read = (llm.attention_params * b_attn + llm.dense_mlp_params * b_lin + lm_head) / par.tp / bandwidth
        expert_read = llm.expert_params * b_exp / par.expert_shards / bandwidth  # distinct experts: no imbalance
        attention_per_position = 4.0 * llm.layers * llm.heads * llm.head_dim / (
            par.tp * par.dp * self.gpu.tflops_bf16 * 1e12 * attn_eff)
        kv_read_per_token = self.kv_read_per_token(bandwidth)
        comm = self.communication()
        return np.array(
            [KIND_OPERATOR, self.overhead_s + llm.layers * self.layer_overhead_s, gemm_per_token, dense_read,
             expert_read, float(llm.experts), float(llm.top_k), attention_per_position, kv_read_per_token,
             comm.fixed_s, comm.per_token_s],
            dtype=np.float64,
        )

    def operator_seconds(self, chunks: list[tuple[int, int]] = (), decode_contexts: list[int] = ()) -> dict[str, float]:
        """Per-operator time of one iteration.

        Args:
            chunks: ``(tokens, context_before)`` per prompt chunk (context_before counts cached
                and earlier-chunk tokens).
            decode_contexts: for each decoding request, the position of the token it processes
                (its context including that token).
        """
        p = self.params
        prefill = sum(s for s, _ in chunks)
        tokens = prefill + len(decode_contexts)
        experts = p[5] * (1.0 - (1.0 - p[6] / p[5]) ** tokens) if p[5] > 0 else 0.0
        compute = p[2] * tokens
        prefill_share = prefill / tokens if tokens else 0.0
        gemm = max(compute, p[3] + p[4] * experts) if tokens else 0.0
        positions = sum(s * c + s * (s + 1) / 2.0 for s, c in chunks)
        prefill_kv = sum(c + s for s, c in chunks)
        decode_kv = float(sum(decode_contexts))
        decode_read = p[8] * decode_kv
        if self.llm.windowed_layers:  # windowed layers read at most their window (not in the engine's p[8])
            window = self.llm.sliding_window
            per_layer = self.kv_bytes_per_token / self.llm.layers / min(self.tp, self.llm.kv_heads) / self.dp
            bandwidth = self.gpu.memory_tbps * 1e12 * self.memory_efficiency
            decode_read += sum(min(c, window) for c in decode_contexts) * self.llm.windowed_layers * per_layer / bandwidth
        return {
            "gemm_prefill": gemm * prefill_share,
            "gemm_decode": gemm * (1.0 - prefill_share),
            "attention_prefill": max(p[7] * positions, p[8] * prefill_kv),
            "attention_decode": max(p[7] * decode_kv, decode_read),
            "allreduce": p[9] + p[10] * tokens if tokens else 0.0,
            "overhead": p[1],
        }
