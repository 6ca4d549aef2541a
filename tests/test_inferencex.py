"""Closed-loop serving against measured InferenceX points (shared/data/inferencex_trainval).

The Hopper Llama points were never fitted on (Hopper's constants come from the 13 vLLM H100 runs),
so the bars checked on them here are out of sample. The whole set and the fitted parts are scored by
``benchmarks/bench_inferencex.py``; the KV capacities are checked here against every logged run.
"""

from __future__ import annotations

import numpy as np
import pytest

from simulator.serving import inferencex as ix

POINTS = ix.load_points()
LLMS = ix.load_llms()


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
    rows = []
    for point in {(p.deployment, p.label, p.kv_tokens): p for p in POINTS if p.kv_tokens}.values():
        model = ix.point_model(point, LLMS)
        rows.append(ix.kv_tokens(model) / point.kv_tokens - 1.0)
    assert len(rows) > 30
    assert max(abs(e) for e in rows) <= 0.10
    assert np.median(np.abs(rows)) <= 0.05


def test_gpt_oss_on_hopper_ran_a_16_bit_kv_cache():
    # The logged capacity of gpt-oss-120b on 8 × H200 (13.25M tokens) is what a 16-bit cache holds
    # in the memory left; an FP8 cache would hold twice as many.
    point = next(p for p in POINTS if p.model == "gpt-oss-120b" and p.gpu == "h200" and p.tp == 8 and p.kv_tokens)
    assert point.kv_dtype == "bf16"
    bf16 = ix.kv_tokens(ix.point_model(point, LLMS))
    assert abs(bf16 / point.kv_tokens - 1) < 0.10
    fp8 = ix.OperatorIterationModel(ix.point_model(point, LLMS).gpu, LLMS[point.model], tp=8, dtype="bf16",
                                    kv_dtype="fp8")
    assert ix.kv_tokens(fp8) / point.kv_tokens > 1.8


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
