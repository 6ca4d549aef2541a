"""KV offload to a host-memory tier, on cases counted by hand.

One replica, one request at a time (``max_num_seqs=1``), a GPU cache of 4 blocks of 16 tokens.
A and C share a 32-token prefix (2 blocks), B has its own; each prompt is 48 tokens and each
request owes 2 output tokens (so it holds 4 blocks: 48 prompt tokens and the first output's KV).

* A (t = 0) computes its prompt in blocks 0, 1, 2 (prefix keys in 0 and 1) and grows into 3; it
  frees them last block first: the free queue is 3, 2, 1, 0.
* B (t = 10) takes 3, 2, 1 (evicting A's second prefix block, key a1) and then 0 (evicting a0):
  a1 then a0 go to the host tier.
* C (t = 20) finds nothing of its prefix on the GPU; in the host tier it finds a0 and a1 (32
  tokens) when the tier holds 2 blocks, only a0 (16 tokens: a0 evicted a1, the least recently
  used) when it holds 1, and nothing without a tier. It loads what it found at
  ``bytes per token / bandwidth`` per token and computes the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from simulator.serving import LinearIterationModel
from simulator.serving.kv_offload import HostKvTier
from simulator.serving.vllm import simulate_vllm

BASE_S, PER_TOKEN_S = 0.01, 1e-3
KV_BYTES = 2e6  # per token
GBPS = 10.0


@dataclass(frozen=True)
class _ModelWithKv(LinearIterationModel):
    kv_bytes_per_token: float = KV_BYTES


def _run(host):
    return simulate_vllm([0.0, 10.0, 20.0], [48, 48, 48], [2, 2, 2], _ModelWithKv(BASE_S, PER_TOKEN_S),
                         max_num_seqs=1, kv_capacity_tokens=64, prefix_id=[0, 1, 0], prefix_tokens=[32, 32, 32],
                         frontend_s=0.0, host_kv=host)


@pytest.mark.parametrize(("blocks", "loaded"), [(None, 0), (2, 32), (1, 16)])
def test_a_prefix_evicted_from_the_gpu_is_loaded_from_host_memory(blocks, loaded):
    host = HostKvTier(capacity_tokens=16 * blocks, bandwidth_gbps=GBPS) if blocks else None
    run = _run(host)
    assert run.cached_tokens.tolist() == [0, 0, 0]  # nothing of C's prefix stayed on the GPU
    if host is not None:
        assert run.host_tokens.tolist() == [0, 0, loaded]
    computed = 48 - loaded
    transfer = loaded * KV_BYTES / (GBPS * 1e9)  # 32 tokens: 6.4 ms
    assert run.ttft_s[2] == pytest.approx(BASE_S + PER_TOKEN_S * computed + transfer, rel=1e-12)
    assert run.ttft_s[1] == pytest.approx(BASE_S + PER_TOKEN_S * 48, rel=1e-12)


def test_a_preempted_request_spilled_to_host_is_reloaded_not_recomputed():
    """Two requests of 32 prompt tokens (2 blocks each) at t = 0 on a GPU of 5 blocks (80 tokens);
    each needs a third block for its output: the second is preempted when the first grows.
    Spilled, it comes back with its KV and computes only what is left; recomputed, it computes
    its prompt and first token again.

    Both prefill together (0.01 + 0.064 = 0.074 s); the first then decodes alone, 11 tokens at
    0.011 s (finish 0.195), while the second waits for 3 free blocks. At 0.195 the second comes
    back: spilled, it loads 32 tokens (6.4 ms) in its first decode step (0.0174 s) and decodes 10
    more (0.3224); recomputed, it prefills 33 tokens (0.043 s) and decodes 10 more (0.348)."""
    def serve(host):
        return simulate_vllm([0.0, 0.0], [32, 32], [12, 12], _ModelWithKv(BASE_S, PER_TOKEN_S),
                             kv_capacity_tokens=80, frontend_s=0.0, prefix_caching=False, host_kv=host)

    recompute = serve(None)
    spill = serve(HostKvTier(capacity_tokens=1600, bandwidth_gbps=GBPS, spill_preempted=True))
    no_room = serve(HostKvTier(capacity_tokens=16, bandwidth_gbps=GBPS, spill_preempted=True))
    assert recompute.preemptions.tolist() == spill.preemptions.tolist() == [0, 1]
    np.testing.assert_array_equal(no_room.finish_s, recompute.finish_s)  # no room: recomputed as before
    np.testing.assert_allclose(recompute.finish_s, [0.195, 0.348], rtol=1e-12)
    np.testing.assert_allclose(spill.finish_s, [0.195, 0.195 + 0.011 + 32 * KV_BYTES / (GBPS * 1e9) + 10 * 0.011],
                               rtol=1e-12)


def test_a_spilled_request_takes_the_prefix_blocks_still_on_the_gpu():
    """With loading free, reloading a spilled request is never slower than recomputing it: its
    prompt's prefix blocks still cached on the GPU are shared, not loaded again into new blocks
    (which, under the memory pressure that preempted it, kept it waiting at the queue's head)."""
    @dataclass(frozen=True)
    class Free(LinearIterationModel):
        kv_bytes_per_token: float = 1.0

    kw = dict(kv_capacity_tokens=176, frontend_s=0.0, prefix_id=[0, 1, 1], prefix_tokens=[31, 48, 50])
    args = ([0.0, 0.0123, 0.0438], [31, 52, 50], [36, 71, 75], Free(0.01, 1e-3))
    recompute = simulate_vllm(*args, **kw)
    spill = simulate_vllm(*args, host_kv=HostKvTier(10**6, 1e6, spill_preempted=True), **kw)
    assert recompute.preemptions.tolist() == spill.preemptions.tolist() == [0, 0, 2]
    assert (spill.finish_s <= recompute.finish_s + 1e-12).all()
