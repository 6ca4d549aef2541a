"""Expert parallelism worked by hand: a DeepSeek-V3-shaped MoE layer (hidden 7,168, 256 routed
experts, 8 per token, expert MLP width 2,048) on 8 GPUs of one NVLink domain and on 16 GPUs
over two, with the all-to-all time and the expert weights each GPU reads."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.serving.expert_parallel import (
    all_to_all,
    expected_imbalance,
    expert_weight_bytes_per_gpu,
    experts_read_per_gpu,
)

HIDDEN, EXPERTS, TOP_K, EXPERT_WIDTH = 7168, 256, 8, 2048
NVLINK, NETWORK = 450.0, 50.0  # GB/s per GPU and direction: H200 NVLink 900 GB/s both ways; a 400 Gb/s NIC


def test_all_to_all_inside_one_nvlink_domain():
    # 256 tokens in the iteration, 32 per GPU, 8 experts each: 256 token-expert pairs per GPU,
    # 7/8 of them remote = 224. Dispatch in FP8: 224 × 7,168 B = 1,605,632 B at 450 GB/s =
    # 3.568 µs; combine in BF16: 3,211,264 B, 7.136 µs; 10.704 µs for the layer.
    a2a = all_to_all(256, TOP_K, HIDDEN, 8, domain=8, link_gbps=NVLINK, scale_out_gbps=NETWORK)
    assert a2a.pairs_per_gpu == 256 and a2a.remote_pairs == 224 and a2a.scale_out_pairs == 0
    assert a2a.dispatch_bytes == 1_605_632 and a2a.combine_bytes == 3_211_264
    assert a2a.seconds == pytest.approx(1_605_632 / 450e9 + 3_211_264 / 450e9, rel=1e-12)
    assert a2a.seconds == pytest.approx(10.704e-6, rel=1e-3)


def test_all_to_all_across_two_domains_waits_for_the_network():
    # EP 16 over two 8-GPU nodes: 16 tokens per GPU, 128 pairs, 15/16 remote = 120; of the 15
    # other GPUs 8 are in the other node: 64 pairs cross the network, 56 stay on NVLink.
    # Dispatch: max(56 × 7,168 / 450e9, 64 × 7,168 / 50e9) = max(0.892, 9.175) µs; combine twice
    # that: 27.525 µs. Eight times more on the slower link than inside one node per pair.
    a2a = all_to_all(256, TOP_K, HIDDEN, 16, domain=8, link_gbps=NVLINK, scale_out_gbps=NETWORK,
                     latency_s=5e-6)
    assert a2a.pairs_per_gpu == 128 and a2a.remote_pairs == 120 and a2a.scale_out_pairs == 64
    network = 64 * HIDDEN / 50e9
    assert a2a.seconds == pytest.approx(network + 2 * network + 2 * 5e-6, rel=1e-12)
    assert a2a.seconds == pytest.approx(27.525e-6 + 10e-6, rel=1e-3)
    # One GPU needs no exchange.
    assert all_to_all(256, TOP_K, HIDDEN, 1, domain=8, link_gbps=NVLINK, scale_out_gbps=NETWORK).seconds == 0.0


def test_expert_weights_one_gpu_reads():
    # 4 tokens: each expert is hit with probability 1 − (248/256)^4 = 0.11926; a GPU of EP 8
    # holds 32 experts, so it reads 3.816 of them: 3 × 7,168 × 2,048 = 44,040,192 parameters
    # each, 168.1 MB in FP8 per layer. At 256 tokens nearly all 32 are hit (31.99).
    miss = 1.0
    for _ in range(4):
        miss *= 248 / 256
    assert experts_read_per_gpu(4, EXPERTS, TOP_K, 8) == pytest.approx(32 * (1 - miss), rel=1e-12)
    assert experts_read_per_gpu(4, EXPERTS, TOP_K, 8) == pytest.approx(3.816, rel=1e-3)
    expert_params = 3 * HIDDEN * EXPERT_WIDTH
    assert expert_params == 44_040_192
    read = expert_weight_bytes_per_gpu(4, EXPERTS, TOP_K, 8, expert_params, 1.0)
    assert read == pytest.approx(3.816 * 44_040_192, rel=1e-3)
    assert experts_read_per_gpu(256, EXPERTS, TOP_K, 8) == pytest.approx(31.99, abs=0.01)


def test_experts_read_match_random_routing():
    # Each token picks 8 distinct experts at random: the mean distinct experts hit on GPU 0
    # (experts 0..31) over 4,000 iterations of 16 tokens, against the formula.
    rng = np.random.default_rng(7)
    hits = []
    for _ in range(4000):
        chosen = np.array([rng.choice(EXPERTS, TOP_K, replace=False) for _ in range(16)])
        hits.append(len(np.unique(chosen[chosen < 32])))
    mean, sem = np.mean(hits), np.std(hits) / np.sqrt(len(hits))
    assert abs(mean - experts_read_per_gpu(16, EXPERTS, TOP_K, 8)) < 4 * sem


def test_the_stated_imbalance_bounds_random_routing_from_above_by_a_little():
    # λ = 256 × 8 / 8 = 256 pairs per GPU: 1 + sqrt(2 ln 8 / 256) = 1.1275. Random routing's
    # busiest GPU over 2,000 iterations sits a little below (the bound is for Poisson loads).
    assert expected_imbalance(256, TOP_K, 8) == pytest.approx(1 + np.sqrt(2 * np.log(8) / 256), rel=1e-12)
    rng = np.random.default_rng(3)
    ratios = []
    for _ in range(2000):
        experts = np.concatenate([rng.choice(EXPERTS, TOP_K, replace=False) for _ in range(256)])
        loads = np.bincount(experts // 32, minlength=8)
        ratios.append(loads.max() / loads.mean())
    measured = float(np.mean(ratios))
    assert 1.0 < measured < expected_imbalance(256, TOP_K, 8) < measured * 1.05
    assert expected_imbalance(256, TOP_K, 1) == 1.0
