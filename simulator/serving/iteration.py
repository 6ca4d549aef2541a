"""Iteration-time models: how long one batched forward pass of a replica takes.

An iteration processes some prompt tokens (prefill) and one token for each decoding
request. Two models are provided, both reduced to a parameter vector that the numba
engine evaluates with :func:`simulator.serving.batching.iteration_seconds` (kept in the engine's
file, so that numba's on-disk cache is invalidated with it):

``LinearIterationModel(base_s, per_token_s)``
    ``base_s + per_token_s × (prompt tokens prefilled + requests decoding)`` — the closed-form
    special case used by the exactness and queueing-theory tests, and a way to use
    coefficients fitted to measurements.

``RooflineIterationModel(gpu, llm, tp, dtype, kv_dtype=dtype)``
    Prefill is compute-bound and decode memory-bound, so an iteration takes
    ``overhead + max(compute, memory) + all-reduce`` where
    ``compute = (2·N_active·tokens + 4·layers·heads·head_dim·Σcontext) / (TP·peak·compute_eff)``
    (matrix multiplies plus attention, ``Σcontext`` summing each processed token's position),
    ``memory = (weight bytes / TP + KV bytes read / TP) / (bandwidth·memory_eff)``, and the
    tensor-parallel all-reduce costs two ring all-reduces of the activations per layer.
    The efficiencies and the overhead default to values calibrated against TensorRT-LLM's
    published H200 throughputs (an earlier calibration).

The operator-class model that ``fleetcast serving`` and derived capacities use,
:class:`simulator.serving.operators.OperatorIterationModel`, extends the roofline one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.errors import InputError
from simulator.scenario.catalog import GpuSpec
from simulator.serving.batching import KIND_LINEAR, KIND_ROOFLINE
from simulator.serving.llm_catalog import LlmSpec

#: Bytes per value of each weight precision. ``fp4`` is NVFP4: 4-bit values plus one FP8 scale per
#: block of 16 (4.5 bits); MXFP4 checkpoints (gpt-oss experts) carry their own 4.25 bits
#: (:data:`simulator.serving.model_config.MXFP4_BYTES_PER_PARAM`).
_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "fp4": 4.5 / 8}
#: KV-cache precisions (no 4-bit KV cache in vLLM).
KV_DTYPES = ("bf16", "fp16", "fp8")

#: Calibrated defaults (see docs/serving/validation.md, "Serving fidelity").
COMPUTE_EFFICIENCY = 0.40
MEMORY_EFFICIENCY = 0.75
OVERHEAD_S = 0.002
#: NVLink (H100/H200/B200 class) per-direction bandwidth and per-call latency.
LINK_GBPS = 450.0
ALLREDUCE_LATENCY_S = 8e-6
#: Share of HBM usable for weights and KV cache (the rest: activations, CUDA graphs, fragmentation).
USABLE_MEMORY_FRACTION = 0.90


class ServingConfigError(InputError):
    """A serving configuration that cannot run (memory, parallelism, dtype)."""


@dataclass(frozen=True)
class LinearIterationModel:
    """``iteration time = base_s + per_token_s × (prompt tokens prefilled + requests decoding)``."""

    base_s: float
    per_token_s: float

    def __post_init__(self) -> None:
        if not (self.base_s >= 0 and self.per_token_s >= 0) or self.base_s + self.per_token_s <= 0:
            raise ValueError("base_s and per_token_s must be >= 0 and not both zero")

    @property
    def params(self) -> np.ndarray:
        return np.array([KIND_LINEAR, self.base_s, self.per_token_s, 0, 0, 0, 0, 0], dtype=np.float64)


@dataclass(frozen=True)
class RooflineIterationModel:
    """Iteration time from GPU and model specifications (see module docstring)."""

    gpu: GpuSpec
    llm: LlmSpec
    tp: int = 1
    dtype: str = "bf16"
    compute_efficiency: float = COMPUTE_EFFICIENCY
    memory_efficiency: float = MEMORY_EFFICIENCY
    overhead_s: float = OVERHEAD_S
    gpu_name: str = ""
    kv_dtype: str | None = None

    def __post_init__(self) -> None:
        if self.kv_dtype is None:
            object.__setattr__(self, "kv_dtype", "fp8" if self.dtype == "fp4" else self.dtype)
        if self.dtype not in _BYTES:
            raise ServingConfigError(f"dtype must be one of {', '.join(_BYTES)}, got {self.dtype!r}")
        if self.kv_dtype not in KV_DTYPES:
            raise ServingConfigError(f"kv_dtype must be one of {', '.join(KV_DTYPES)}, got {self.kv_dtype!r}")
        if self.tp < 1:
            raise ServingConfigError(f"tp must be >= 1, got {self.tp}")
        llm = self.llm
        if llm.heads % self.tp or (llm.kv_heads % self.tp and self.tp % llm.kv_heads):
            raise ServingConfigError(
                f"tp {self.tp} does not divide {llm.name}'s {llm.heads} attention heads "
                f"({llm.kv_heads} KV heads); choose a tp that divides {llm.heads}"
            )
        if self.dtype == "fp8" and self.gpu.tflops_fp8 is None:
            raise ServingConfigError(f"{self.gpu_name or 'this GPU'} has no FP8 support; use dtype bf16")
        if self.dtype == "fp4" and self.gpu.tflops_fp4 is None:
            raise ServingConfigError(f"{self.gpu_name or 'this GPU'} has no FP4 tensor cores (NVFP4 needs "
                                     "Blackwell); use dtype fp8")
        self._check_weights_fit()

    def _check_weights_fit(self) -> None:
        usable = self.gpu.memory_gb * USABLE_MEMORY_FRACTION
        needed = self.weight_bytes_per_gpu / 1e9
        if needed >= usable:
            gpus = self.gpus
            raise ServingConfigError(
                f"{self.llm.name} in {self.dtype} needs {needed:,.0f} GB of weights on each GPU of a replica "
                f"of {gpus} × {self.gpu_name or 'GPU'}, which has {usable:,.0f} GB usable "
                f"({self.gpu.memory_gb:g} GB × {USABLE_MEMORY_FRACTION:.0%}); "
                f"use more GPUs per replica (tp) or a smaller dtype"
            )

    @property
    def gpus(self) -> int:
        """GPUs of one replica."""
        return self.tp

    @property
    def weight_bytes_per_gpu(self) -> float:
        return self.weight_bytes / self.tp

    @property
    def bytes_per_value(self) -> float:
        return _BYTES[self.dtype]

    @property
    def weight_bytes(self) -> float:
        return self.llm.weight_bytes(self.bytes_per_value)

    @property
    def kv_bytes_per_token(self) -> float:
        return self.llm.kv_bytes_per_token(_BYTES[self.kv_dtype])

    @property
    def kv_copies(self) -> int:
        """Copies of each token's KV cache in the replica: TP for MLA (its one latent is not split
        over heads, so every GPU holds and reads all of it), else 1."""
        return self.tp if self.llm.kv_lora_rank else 1

    @property
    def kv_capacity_tokens(self) -> int:
        """Tokens of KV cache the replica holds: (TP × usable memory − weights) / KV bytes per token
        (× TP for MLA, whose latent every GPU holds whole). Windowed layers count as full ones here,
        as vLLM's reported KV capacity counts them."""
        free = self.tp * self.gpu.memory_gb * 1e9 * USABLE_MEMORY_FRACTION - self.weight_bytes
        if self.kv_copies > 1:
            return int(free // (self.kv_bytes_per_token * self.kv_copies))
        return int(free // self.kv_bytes_per_token)

    def kv_read_per_token(self, bandwidth: float) -> float:
        """Seconds per context token of decode KV reads on one GPU: the full-attention layers'
        share of the cache, split over TP (MLA: the whole latent on every GPU). Windowed layers
        read at most their window per request, which the per-token rate leaves out."""
        kv = self.kv_bytes_per_token
        if self.llm.windowed_layers:
            kv = kv * self.llm.full_attention_layers / self.llm.layers
        if self.kv_copies > 1:
            return kv / bandwidth
        return kv / self.tp / bandwidth

    @property
    def peak_flops(self) -> float:
        tflops = {"fp8": self.gpu.tflops_fp8, "fp4": self.gpu.tflops_fp4}.get(self.dtype) or self.gpu.tflops_bf16
        return float(tflops) * 1e12

    @property
    def params(self) -> np.ndarray:
        llm, tp = self.llm, self.tp
        flops_rate = tp * self.peak_flops * self.compute_efficiency
        bandwidth = self.gpu.memory_tbps * 1e12 * self.memory_efficiency
        per_token_compute = 2.0 * llm.active_params / flops_rate
        per_context_compute = 4.0 * llm.layers * llm.heads * llm.head_dim / flops_rate
        weight_read = self.weight_bytes / tp / bandwidth
        kv_read_per_token = self.kv_read_per_token(bandwidth)
        if tp > 1:
            ring = 2.0 * (tp - 1) / tp
            allreduce_fixed = 2 * llm.layers * ALLREDUCE_LATENCY_S
            allreduce_per_token = 2 * llm.layers * ring * llm.hidden * 2.0 / (LINK_GBPS * 1e9)
        else:
            allreduce_fixed = allreduce_per_token = 0.0
        return np.array(
            [KIND_ROOFLINE, self.overhead_s, per_token_compute, per_context_compute,
             weight_read, kv_read_per_token, allreduce_fixed, allreduce_per_token],
            dtype=np.float64,
        )


IterationModel = LinearIterationModel | RooflineIterationModel
