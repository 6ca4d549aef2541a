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
* **All-reduce**: with TP > 1, two ring all-reduces of the activations per layer,
  ``2·layers·(latency + 2·(TP−1)/TP · n·hidden·2 bytes / link bandwidth)``.
* **Fixed overhead**: per iteration (CPU scheduling, sampling, graph launch) plus per layer
  (the floor of a layer's dozen small kernels at small batch): ``overhead_s + layers·layer_overhead_s``.

Precision is per tensor: with ``dtype="fp8"`` the MLP/expert linears (and the attention
projections unless the checkpoint keeps them 16-bit, :attr:`LlmSpec.fp8_attention`) are FP8;
embeddings, lm_head and the attention core stay BF16. The weights held in memory are the total
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
from simulator.serving.iteration import _BYTES, RooflineIterationModel

_DEFAULT_LINK_GBPS = 450.0
_DEFAULT_ALLREDUCE_US = 8.0


def _default(gpu, key: str) -> float:
    return GENERATION_EFFICIENCY.get(getattr(gpu, "generation", "hopper"), HOPPER_EFFICIENCY)[key]


@dataclass(frozen=True)
class OperatorIterationModel(RooflineIterationModel):
    """Iteration time summed over operator classes (see module docstring).

    Efficiencies left as ``None`` take the GPU generation's calibrated values.
    """

    compute_efficiency: float | None = None  # GEMM share of peak
    memory_efficiency: float | None = None
    overhead_s: float | None = None
    attention_efficiency: float | None = None
    frontend_s: float | None = None
    allreduce_latency_s: float | None = None  # default: the GPU's allreduce_latency_us
    layer_overhead_s: float | None = None

    def __post_init__(self) -> None:
        for key, name in (("compute_efficiency", "gemm_efficiency"), ("memory_efficiency", "memory_efficiency"),
                          ("overhead_s", "overhead_s"), ("attention_efficiency", "attention_efficiency"),
                          ("frontend_s", "frontend_s"), ("layer_overhead_s", "layer_overhead_s")):
            if getattr(self, key) is None:
                object.__setattr__(self, key, _default(self.gpu, name))
        super().__post_init__()

    # -- tensor classes and their precisions -------------------------------------------------
    def _linear_bytes(self) -> float:
        return _BYTES[self.dtype]

    def _attention_proj_bytes(self) -> float:
        return _BYTES[self.dtype] if self.llm.fp8_attention else max(_BYTES[self.dtype], 2.0)

    def _expert_bytes(self) -> float:
        """Routed experts' bytes per parameter: the checkpoint's own (gpt-oss MXFP4) or the dtype's."""
        return self.llm.expert_bytes_per_param or self._linear_bytes()

    def _peak(self, bytes_per_value: float) -> float:
        tflops = self.gpu.tflops_fp8 if bytes_per_value == 1.0 and self.gpu.tflops_fp8 else self.gpu.tflops_bf16
        return float(tflops) * 1e12

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
    def params(self) -> np.ndarray:
        llm, tp = self.llm, self.tp
        gemm_eff, mem_eff, attn_eff = self.compute_efficiency, self.memory_efficiency, self.attention_efficiency
        bandwidth = self.gpu.memory_tbps * 1e12 * mem_eff
        b_attn, b_lin = self._attention_proj_bytes(), self._linear_bytes()
        mlp_per_token = llm.dense_mlp_params + llm.top_k * llm.expert_params
        gemm_per_token = 2.0 * (llm.attention_params / self._peak(b_attn) + mlp_per_token / self._peak(b_lin))
        gemm_per_token /= tp * gemm_eff
        lm_head = llm.vocab * llm.hidden * max(_BYTES[self.dtype], 2.0)
        dense_read = (llm.attention_params * b_attn + llm.dense_mlp_params * b_lin + lm_head) / tp / bandwidth
        expert_read = llm.expert_params * self._expert_bytes() / tp / bandwidth
        attention_per_position = 4.0 * llm.layers * llm.heads * llm.head_dim / (tp * self.gpu.tflops_bf16 * 1e12 * attn_eff)
        kv_read_per_token = self.kv_read_per_token(bandwidth)
        if tp > 1:
            link = (self.gpu.link_gbps or _DEFAULT_LINK_GBPS) * 1e9
            latency = self.allreduce_latency_s
            if latency is None:
                latency = (self.gpu.allreduce_latency_us if self.gpu.allreduce_latency_us is not None
                           else _DEFAULT_ALLREDUCE_US) * 1e-6
            allreduce_fixed = 2 * llm.layers * latency
            allreduce_per_token = 2 * llm.layers * 2.0 * (tp - 1) / tp * llm.hidden * 2.0 / link
        else:
            allreduce_fixed = allreduce_per_token = 0.0
        return np.array(
            [KIND_OPERATOR, self.overhead_s + llm.layers * self.layer_overhead_s, gemm_per_token, dense_read, expert_read, float(llm.experts),
             float(llm.top_k), attention_per_position, kv_read_per_token, allreduce_fixed, allreduce_per_token],
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
            per_layer = self.kv_bytes_per_token / self.llm.layers / self.tp
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
