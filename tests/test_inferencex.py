"""Closed-loop serving against measured InferenceX points (shared/data/inferencex_trainval).

The Hopper Llama points were never fitted on (Hopper's constants come from the 13 vLLM H100 runs),
so the bars checked on them here are out of sample. The whole set and the fitted parts are scored by
``benchmarks/bench_inferencex.py``; the KV capacities are checked here against every logged run.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from simulator.serving import inferencex as ix

DATA = ix.default_data_dir()
# On CI the data must be there (a missing copy fails instead of skipping).
pytestmark = pytest.mark.skipif(not (DATA / "measured.csv").exists() and not os.environ.get("CI"),
                                reason="shared/data/inferencex_trainval not found beside the project")
POINTS = ix.load_points() if (DATA / "measured.csv").exists() or os.environ.get("CI") else []
LLMS = ix.load_llms() if POINTS else {}


def test_the_set_is_read_whole():
    assert len(POINTS) == 368
    assert {p.gpu for p in POINTS} == {"h100", "h200", "b200"}
    assert {(p.isl, p.osl) for p in POINTS} == {(1024, 1024), (1024, 8192), (8192, 1024)}
    assert sum(p.kv_tokens is not None for p in POINTS) == 143  # the gpt-oss runs whose logs were kept


def test_request_lengths_follow_the_clients_range():
    point = next(p for p in POINTS if p.label == "8k1k" and p.concurrency == 64)
    prompt, output = ix.point_lengths(point, np.random.default_rng(3))
    assert len(prompt) == len(output) == 640  # 10 prompts per user
    assert prompt.min() >= 6553 and prompt.max() <= 8192 and output.min() >= 819 and output.max() <= 1024
    # Uniform on [0.8 L, L]: mean 0.9 L (± 4 standard errors of 640 draws).
    assert abs(prompt.mean() - 0.9 * 8192) < 4 * (0.2 * 8192 / np.sqrt(12)) / np.sqrt(640)


def test_kv_capacity_matches_every_logged_run_within_10_percent():
    # In sample: the runtime reserve (4.45 GiB) is the median of the reserves that reproduce these
    # runs exactly (benchmarks/fit_inferencex.py, which also reports it leave-one-deployment-out).
    rows = []
    for point in {(p.deployment, p.label, p.kv_tokens): p for p in POINTS if p.kv_tokens}.values():
        model = ix.point_model(point, LLMS)
        rows.append(ix.kv_tokens(model) / point.kv_tokens - 1.0)
    assert len(rows) > 30
    assert max(abs(e) for e in rows) <= 0.10
    assert np.median(np.abs(rows)) <= 0.05


def test_gpt_oss_on_hopper_ran_a_16_bit_kv_cache():
    # Independent of the fitted reserve: on 8 × H200 each GPU has 90% of 143,771 MiB = 135.7 GB and
    # holds 1/8 of gpt-oss-120b's 65.2 GB of weights. The logged 13.25M tokens take, per GPU, 36
    # layers × K and V × 1 KV head × 64 × 2 bytes = 9,216 bytes each in 16 bits: 122.2 GB, leaving
    # 5.3 GB for activations and the runtime — plausible. In FP8 they would take 61.1 GB and leave
    # 66 GB unexplained.
    point = next(p for p in POINTS if p.model == "gpt-oss-120b" and p.gpu == "h200" and p.tp == 8
                 and p.label == "1k1k" and p.kv_tokens)
    budget = 0.9 * 143_771 * 2**20
    weights = LLMS["gpt-oss-120b"].weight_bytes(2.0) / 8
    assert weights == pytest.approx(8.156e9, rel=1e-3)
    left_16 = budget - weights - point.kv_tokens * 36 * 2 * 1 * 64 * 2
    left_8 = budget - weights - point.kv_tokens * 36 * 2 * 1 * 64 * 1
    assert 2e9 < left_16 < 8e9 and left_8 > 60e9
    assert point.kv_dtype == "bf16"  # so the regenerated deployment runs a 16-bit cache


@pytest.mark.slow
def test_hopper_llama_points_out_of_sample():
    # Llama-3.1-70B FP8 on H100 and H200, every TP, concurrency 4-64, every label: 84 points the
    # constants never saw. Bars: median |TPOT error| <= 15%, median |TTFT error| <= 30%.
    points = [p for p in POINTS if p.model.startswith("llama") and p.gpu in ("h100", "h200")]
    rows = [r for r in ix.compare(points, LLMS) if r["below_saturation"]]
    assert len(rows) >= 80
    tpot = np.median([abs(r["tpot_error"]) for r in rows])
    ttft = np.median([abs(r["ttft_error"]) for r in rows])
    assert tpot <= 0.15 and ttft <= 0.30, (tpot, ttft)
    for gpu in ("h100", "h200"):
        assert np.median([abs(r["tpot_error"]) for r in rows if r["gpu"] == gpu]) <= 0.25
