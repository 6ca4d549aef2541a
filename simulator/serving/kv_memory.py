"""KV-cache capacity as vLLM accounts for it: what is left of a GPU's memory budget for the cache.

vLLM profiles the engine at start-up and gives the KV cache what remains, per GPU, of
``gpu_memory_utilization × device memory`` (the driver's total, :func:`visible_memory_bytes`):

* **weights**: this GPU's share of them (:attr:`weight_bytes_per_gpu` of the iteration model:
  dense layers split over ``tp``, routed experts over ``ep`` or ``tp``, layers over ``pp``);
* **activation peak** of the profiling forward pass over ``max_num_batched_tokens`` tokens, plus the
  sampler's logits for ``max_num_seqs`` sequences (:func:`activation_peak_bytes`);
* **runtime reserve**: CUDA context, NCCL buffers, CUDA graphs, the allocator's fragmentation and
  kernel workspaces, one figure per GPU (:data:`RUNTIME_RESERVE_GIB`: the median of the reserves
  that reproduce exactly each of the 28 gpt-oss runs of the InferenceX set whose vLLM log gives its
  KV capacity, ``benchmarks/fit_inferencex.py``, which also reports the leave-one-deployment-out
  error).

The KV capacity in tokens is that memory over the bytes one token's cache takes on this GPU (its
KV heads for every layer of its stage; MLA's latent whole on every GPU), rounded down to whole
16-token blocks. It is per data-parallel rank (vLLM's ``GPU KV cache size``); a replica holds
``dp`` times that. Windowed layers are counted as full ones, as vLLM's figure counts them (its
hybrid allocator gives every layer group the same number of blocks).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

#: Memory not available to weights, activations or the KV cache, GiB per GPU (fitted: 4.45; module doc).
RUNTIME_RESERVE_GIB = 4.45
#: vLLM's default share of device memory the engine may use.
GPU_MEMORY_UTILIZATION = 0.90
#: vLLM's defaults the capacity is computed at unless given.
MAX_NUM_BATCHED_TOKENS = 8192
MAX_NUM_SEQS = 256
BLOCK_TOKENS = 16
_GIB = 2.0 ** 30


def visible_memory_bytes(gpu) -> float:
    """Device memory the driver reports: the catalog's ``memory_visible_gib``, else ``memory_gb``
    read as GiB less 0.5% (HBM is built in GiB; the driver keeps a little)."""
    visible = getattr(gpu, "memory_visible_gib", None)
    return (visible if visible else gpu.memory_gb * 0.995) * _GIB


def activation_peak_bytes(llm, tp: int, max_num_batched_tokens: int, max_num_seqs: int) -> float:
    """Peak activation memory of the profiling pass on one GPU.

    Per token at the widest point of a layer (16-bit): the hidden state and the residual, the
    gated MLP's two projections and their product on this GPU (``3 × width / tp``; for a MoE layer
    each token's ``top_k`` expert rows, ``3 × top_k × expert width / tp``: with experts split by
    ``tp`` each GPU computes a slice of every row, with expert parallelism over ``tp × dp`` GPUs
    each receives ``dp`` ranks' tokens for ``1 / (tp·dp)`` of the experts, the same per-GPU count),
    and the attention's Q, K and V heads on this GPU. Plus the sampler's FP32 logits and
    probabilities over the vocabulary for ``max_num_seqs`` sequences.
    """
    if llm.experts:
        width = max(llm.top_k * llm.expert_intermediate / tp,
                    (llm.intermediate or 0) / tp, llm.shared_expert_intermediate / tp)
    else:
        width = llm.intermediate / tp if llm.intermediate else 4.0 * llm.hidden / tp
    qkv = (llm.heads + 2 * llm.kv_heads) * llm.head_dim / tp
    per_token = 2.0 * (2 * llm.hidden + 3 * width + qkv)
    logits = 2 * 4.0 * max_num_seqs * (llm.vocab or 32000)
    return max_num_batched_tokens * per_token + logits


@dataclass(frozen=True)
class KvMemory:
    """One GPU's memory budget as vLLM splits it (bytes) and the KV capacity it leaves (tokens)."""

    visible_bytes: float
    gpu_memory_utilization: float
    weights_bytes: float
    activation_bytes: float
    reserve_bytes: float
    kv_bytes: float
    kv_bytes_per_token: float  # on this GPU
    kv_cache_tokens: int  # per data-parallel rank (vLLM's "GPU KV cache size")
    dp: int

    @property
    def replica_kv_tokens(self) -> int:
        return self.kv_cache_tokens * self.dp

    def as_dict(self) -> dict[str, float]:
        """Figures in GB (10^9 bytes) and tokens, for reports."""
        out = {key: (value / 1e9 if key.endswith("_bytes") and key != "kv_bytes_per_token" else value)
               for key, value in asdict(self).items()}
        return {key.replace("_bytes", "_gb") if key.endswith("_bytes") else key: value for key, value in out.items()}


def vllm_kv_memory(model, gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION,
                   max_num_batched_tokens: int = MAX_NUM_BATCHED_TOKENS, max_num_seqs: int = MAX_NUM_SEQS,
                   reserve_gib: float = RUNTIME_RESERVE_GIB, block_size: int = BLOCK_TOKENS) -> KvMemory:
    """The KV budget of one GPU of ``model``'s replica (an operator iteration model; module doc)."""
    if not 0 < gpu_memory_utilization <= 1:
        raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {gpu_memory_utilization}")
    par = model.parallelism
    visible = visible_memory_bytes(model.gpu)
    weights = model.weight_bytes_per_gpu
    activation = activation_peak_bytes(model.llm, par.tp, max_num_batched_tokens, max_num_seqs)
    reserve = reserve_gib * _GIB
    free = max(visible * gpu_memory_utilization - weights - activation - reserve, 0.0)
    per_token = model.kv_bytes_per_token_per_gpu
    blocks = int(free // (per_token * block_size))
    return KvMemory(visible, gpu_memory_utilization, weights, activation, reserve, free, per_token,
                    blocks * block_size, par.dp)
