"""KV-cache offload to host memory: a second tier for prefix blocks and preempted requests.

A replica may hold ``capacity_tokens`` of KV in host (CPU) memory, reached over each GPU's link of
``bandwidth_gbps`` (GB/s, host to GPU; PCIe 5.0 ×16 moves about 50 GB/s in each direction, a
Grace–Hopper C2C link 450); a request's KV is sharded over its replica's tensor- and
pipeline-parallel GPUs, which load their shards at once. Prefix blocks evicted from the GPU are copied there (least recently
used first out when it is full); a prompt whose next blocks are found there loads them,
``tokens × KV bytes per token / (bandwidth × GPUs)`` seconds added to the iteration that admits it,
instead of computing them. With ``spill_preempted`` a request preempted for lack of GPU blocks
writes its computed KV there (when it fits beside what other preempted requests hold) and loads
it back on readmission instead of being recomputed. The engine's rules are in
:mod:`simulator.serving.kv_blocks` and :mod:`simulator.serving.vllm_engine`.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.serving.prefix import BLOCK_TOKENS

PCIE5_GBPS = 50.0  # PCIe 5.0 x16, one direction, achievable (64 GB/s raw)


@dataclass(frozen=True)
class HostKvTier:
    """A replica's host-memory KV tier (module docstring)."""

    capacity_tokens: int
    bandwidth_gbps: float = PCIE5_GBPS
    spill_preempted: bool = False

    def __post_init__(self) -> None:
        if self.capacity_tokens < 0:
            raise ValueError(f"host KV capacity must be >= 0 tokens, got {self.capacity_tokens}")
        if not self.bandwidth_gbps > 0:
            raise ValueError(f"host KV bandwidth must be > 0 GB/s, got {self.bandwidth_gbps}")

    def blocks(self, block_size: int = BLOCK_TOKENS) -> int:
        return self.capacity_tokens // block_size

    def load_s_per_token(self, kv_bytes_per_token: float, gpus: int = 1) -> float:
        """Seconds to bring one token's KV (all layers) from host memory over the links of the
        ``gpus`` GPUs holding it (a replica's tensor- and pipeline-parallel group), at once."""
        return kv_bytes_per_token / (self.bandwidth_gbps * 1e9 * max(gpus, 1))
