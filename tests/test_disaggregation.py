"""Prefill/decode disaggregation against closed forms and hand-computed cases.

DistServe (§3.1): one prefill instance serving one prompt at a time, each taking the same time
``D``, under Poisson arrivals at rate λ is an M/D/1 queue, so the mean TTFT is
``D + λD² / (2(1 − λD))``; disaggregated, the KV transfer is added. The transfer time is read
off the link by hand; the decode side's batch is checked on a case small enough to count.
"""

from __future__ import annotations

import numpy as np
import pytest

from simulator.serving import LinearIterationModel
from simulator.serving.config import operator_model, resolve_gpu
from simulator.serving.disaggregated import KvLink, Side, simulate_disaggregated
from simulator.serving.vllm import simulate_vllm

BASE_S, PER_TOKEN_S = 0.005, 2e-5
PROMPT = 512
D = BASE_S + PER_TOKEN_S * PROMPT  # one prompt's prefill: 15.24 ms


@pytest.mark.parametrize("rho", [0.3, 0.6, 0.8])
def test_one_prefill_replica_is_an_m_d_1_queue(rho):
    model = LinearIterationModel(BASE_S, PER_TOKEN_S)
    rate = rho / D
    n = 120_000
    arrival = np.cumsum(np.random.default_rng(11).exponential(1 / rate, n))
    link = KvLink(bandwidth_gbps=50.0, latency_s=2e-4)
    run = simulate_disaggregated(arrival, np.full(n, PROMPT), np.full(n, 4),
                                 Side(model, 1, max_num_batched_tokens=PROMPT, kv_capacity_tokens=10**7),
                                 Side(model, 1, kv_capacity_tokens=10**7), link, prefix_caching=False)
    expected = D + rate * D * D / (2 * (1 - rate * D)) + 2e-4
    warm = 2_000
    assert run.result.ttft_s[warm:].mean() == pytest.approx(expected, rel=0.02)


def test_kv_transfer_is_latency_plus_prompt_bytes_over_the_senders_links():
    h100 = resolve_gpu("H100")[1]
    prefill = operator_model("llama-3.1-70b", "H100", tp=4, dtype="fp8")
    decode = operator_model("llama-3.1-70b", "H100", tp=4, dtype="fp8")
    rdma = KvLink.between(h100, h100, same_domain=False)
    # 80 layers × 8 KV heads × 128 × 2 (K, V) × 1 byte (FP8 KV) = 163,840 bytes per token.
    assert prefill.kv_bytes_per_token == 163_840
    assert (rdma.kind, rdma.bandwidth_gbps) == ("rdma", 50.0)
    run = simulate_disaggregated([0.0], [2000], [3], Side(prefill), Side(decode), rdma, prefix_caching=False)
    # 2,000 × 163,840 B over 4 GPUs' 50 GB/s NICs = 1.6384 ms, plus 50 µs.
    assert run.transfer_s[0] == pytest.approx(50e-6 + 2000 * 163_840 / (4 * 50e9), rel=1e-12)
    # TTFT = front end + prefill + transfer: the prefill side alone, plus the transfer.
    alone = simulate_vllm([0.0], [2000], [1], prefill)
    assert run.result.ttft_s[0] == pytest.approx(alone.ttft_s[0] + run.transfer_s[0], rel=1e-12)
    nvlink = KvLink.between(h100, h100, same_domain=True)
    assert (nvlink.kind, nvlink.bandwidth_gbps, nvlink.latency_s) == ("nvlink", 450.0, 10e-6)


def test_decode_side_batches_arriving_kv_and_emits_one_token_per_iteration():
    """Two requests, prefill 10 + 1e-3 × tokens per iteration on its own replica, decode 1 + 1e-3 × batch."""
    prefill = Side(LinearIterationModel(10.0, 1e-3), 1, max_num_batched_tokens=100, kv_capacity_tokens=10**6)
    decode = Side(LinearIterationModel(1.0, 1e-3), 1, kv_capacity_tokens=10**6)
    link = KvLink(bandwidth_gbps=1.0, latency_s=0.5)
    run = simulate_disaggregated([0.0, 0.0], [100, 100], [4, 2], prefill, decode, link, prefix_caching=False,
                                 frontend_s=0.0)
    # Prefill: one prompt per iteration (budget 100): first at 10.1, second at 20.2; +0.5 s link.
    np.testing.assert_allclose(run.result.first_token_s, [10.6, 20.7])
    # Decode (its first token came with the KV): request 0 alone from 10.6 emits tokens 2, 3, 4
    # one iteration of 1.001 s each and leaves at 13.603; request 1 alone from 20.7 emits its
    # second token at 21.701.
    np.testing.assert_allclose(run.result.finish_s, [10.6 + 3 * 1.001, 20.7 + 1.001])
    assert run.summary()["decode_replicas"] == 1


def test_requests_of_one_token_leave_at_the_prefill_side():
    model = LinearIterationModel(0.01, 1e-4)
    run = simulate_disaggregated([0.0, 0.0], [50, 50], [1, 3], Side(model, kv_capacity_tokens=10**6),
                                 Side(model, kv_capacity_tokens=10**6), KvLink(10.0, 0.0), prefix_caching=False,
                                 frontend_s=0.0)
    assert run.result.finish_s[0] == run.result.first_token_s[0]
    assert len(run.decode.arrival_s) == 1
    # No KV crosses the link for it: its TTFT is the prefill side's alone, and no bytes are counted.
    assert run.transfer_s[0] == 0.0 and run.kv_bytes[0] == 0.0
    assert run.result.first_token_s[0] == run.prefill.first_token_s[0]


def test_decode_side_is_limited_by_its_kv_cache():
    """A decode replica that holds one request's KV at a time serves them one after the other."""
    prefill = Side(LinearIterationModel(0.001, 0.0), 1, kv_capacity_tokens=10**6)
    decode = Side(LinearIterationModel(1.0, 0.0), 1, kv_capacity_tokens=48)
    run = simulate_disaggregated([0.0, 0.0, 0.0], [20, 20, 20], [10, 10, 10], prefill, decode, KvLink(1e3, 0.0),
                                 prefix_caching=False, frontend_s=0.0, kv_preemption=False)
    # Each needs 30 tokens (2 blocks of 16) of the 3 blocks: one at a time, 9 decode iterations each.
    starts = np.sort(run.result.finish_s - 9.0)
    assert np.all(np.diff(starts) >= 9.0 - 1e-9)
