"""Serving at a fixed concurrency (closed loop): hand-computed times, Little's law, a reference loop, CLI."""

from __future__ import annotations

import json
from collections import deque

import numpy as np
import pytest
from click.testing import CliRunner

from simulator.cli import main
from simulator.serving import LinearIterationModel
from simulator.serving.concurrency import CURVE_KEYS, serve_at_concurrency, serve_closed_loop

BASE, PER_TOKEN = 0.01, 0.001
MODEL = LinearIterationModel(BASE, PER_TOKEN)
ENGINES = (
    {"scheduler": "whole_prompt"},
    {"scheduler": "vllm", "max_batched_tokens": 100_000, "prefix_caching": False, "kv_preemption": False},
)


@pytest.mark.parametrize("options", ENGINES, ids=["whole_prompt", "vllm"])
@pytest.mark.parametrize("users", [1, 4])
def test_lockstep_times_by_hand(users, options):
    # N users, prompt I, output O: every wave is one prefill iteration of N·I tokens (base + N·I·per_token)
    # followed by O − 1 decode iterations of N tokens each (base + N·per_token); the next wave is
    # sent at the instant the previous one finishes.
    prompt_len, output_len, waves = 4, 3, 3
    n = users * waves
    result = serve_closed_loop(users, [prompt_len] * n, [output_len] * n, MODEL, **options)
    prefill = BASE + PER_TOKEN * users * prompt_len
    decode = BASE + PER_TOKEN * users
    ttft = prefill
    e2e = prefill + (output_len - 1) * decode
    if users == 1:  # 0.014 s prefill, two decodes of 0.011 s
        assert (ttft, e2e) == pytest.approx((0.014, 0.036))
    else:  # 0.026 s prefill, two decodes of 0.014 s
        assert (ttft, e2e) == pytest.approx((0.026, 0.054))
    wave = np.repeat(np.arange(waves), users)
    np.testing.assert_allclose(result.arrival_s, wave * e2e, atol=1e-12)
    np.testing.assert_allclose(result.ttft_s, ttft, atol=1e-12)
    np.testing.assert_allclose(result.e2e_s, e2e, atol=1e-12)
    np.testing.assert_allclose(result.finish_s, (wave + 1) * e2e, atol=1e-12)
    row = serve_at_concurrency(users, [prompt_len] * n, [output_len] * n, MODEL, **options)
    assert row["concurrency"] == users and row["requests"] == n
    assert row["throughput_req_s"] == pytest.approx(users / e2e)
    assert row["output_tokens_per_s_per_user"] == pytest.approx(1 / decode)  # 1 / TPOT
    assert row["e2e_tokens_per_s_per_user"] == pytest.approx(output_len / e2e)


def reference_closed_loop(users, prompt, output, max_batch):
    """Plain-Python closed loop over the contract semantics and the linear iteration model."""
    n = len(prompt)
    arrival = np.full(n, np.nan)
    first, finish = np.full(n, np.nan), np.full(n, np.nan)
    arrival[:users] = 0.0
    waiting = deque(range(min(users, n)))
    next_send, running, generated, t = min(users, n), [], [0] * n, 0.0
    while waiting or running:
        new = []
        while waiting and len(running) + len(new) < max_batch:
            new.append(waiting.popleft())
        t += BASE + PER_TOKEN * (sum(int(prompt[i]) for i in new) + len(running))
        for i in running:
            generated[i] += 1
        for i in new:
            generated[i] = 1
            first[i] = t
        running += new
        for i in [i for i in running if generated[i] == output[i]]:
            running.remove(i)
            finish[i] = t
            if next_send < n:  # the user whose request finished sends the next one now
                arrival[next_send] = t
                waiting.append(next_send)
                next_send += 1
    return arrival, first, finish


@pytest.mark.parametrize("options", ENGINES, ids=["whole_prompt", "vllm"])
def test_agrees_with_reference_loop(options):
    rng = np.random.default_rng(28)
    n, users, max_batch = 60, 7, 3  # max_batch < users: some requests wait
    prompt = rng.integers(1, 50, n)
    output = rng.integers(1, 12, n)
    arrival, first, finish = reference_closed_loop(users, prompt, output, max_batch)
    result = serve_closed_loop(users, prompt, output, MODEL, max_batch=max_batch, **options)
    np.testing.assert_allclose(result.arrival_s, arrival, atol=1e-9)
    np.testing.assert_allclose(result.first_token_s, first, atol=1e-9)
    np.testing.assert_allclose(result.finish_s, finish, atol=1e-9)
    assert (result.queue_s > 0).any()  # the batch limit made some wait


@pytest.mark.parametrize("scheduler", ["whole_prompt", "vllm"])
def test_littles_law(scheduler):
    rng = np.random.default_rng(5)
    n, users = 3000, 16
    prompt, output = rng.integers(1, 200, n), rng.integers(1, 60, n)
    result = serve_closed_loop(users, prompt, output, MODEL, scheduler=scheduler, max_batch=64)
    # Exactly N requests are outstanding from 0 until the last send, fewer after: the sum of E2E
    # (the integral of requests outstanding) lies between N × last send and N × duration.
    total = result.e2e_s.sum()
    assert users * result.arrival_s.max() - 1e-9 <= total <= users * result.duration_s + 1e-9
    little = result.summary()["throughput_req_s"] * result.e2e_s.mean()
    assert little == pytest.approx(users, rel=0.02)  # only the drain at the end departs from N


def test_open_loop_unchanged_by_closed_loop_support():
    from simulator.serving import simulate_replica
    arrival = [0.0, 0.0, 0.05]
    result = simulate_replica(arrival, [4, 4, 4], [3, 3, 3], MODEL)
    # Two at t=0: prefill 0.018, decodes 0.012 → finish 0.042; third arrives at 0.05 alone: 0.036.
    np.testing.assert_allclose(result.finish_s, [0.042, 0.042, 0.086], atol=1e-12)


def _cli(*args):
    return CliRunner().invoke(main, ["serving", "--model", "llama-3.1-8b", "--gpu", "H100", *args],
                              catch_exceptions=False)


def test_cli_sweep_table_and_json():
    args = ["--input-len", "64", "--output-len", "16", "--concurrency", "1,4,16,64"]
    table = _cli(*args)
    assert table.exit_code == 0, table.output
    rows = [line for line in table.output.splitlines() if line.startswith("│")]
    assert [row.split("│")[1].strip() for row in rows] == ["1", "4", "16", "64"]
    result = _cli(*args, "--json", "--batching", "vllm")
    assert result.exit_code == 0, result.output
    curve = json.loads(result.output)
    assert isinstance(curve, list) and len(curve) == 4
    for users, row in zip([1, 4, 16, 64], curve, strict=True):
        assert set(CURVE_KEYS) <= set(row)
        assert row["concurrency"] == users and row["requests"] == 10 * users
    per_user = [row["output_tokens_per_s_per_user"] for row in curve]
    per_gpu = [row["output_tokens_per_s_per_gpu"] for row in curve]
    assert per_user == sorted(per_user, reverse=True) and per_gpu == sorted(per_gpu)


def test_cli_concurrency_excludes_rate():
    result = _cli("--input-len", "64", "--output-len", "16", "--concurrency", "4", "--rate", "2")
    assert result.exit_code == 2
    error = [line for line in result.output.splitlines() if "--concurrency" in line and "--rate" in line]
    assert len(error) == 1
    bad = _cli("--input-len", "64", "--output-len", "16", "--concurrency", "4,x")
    assert bad.exit_code == 2 and "--concurrency" in bad.output


def test_front_end_latency_is_in_every_cycle():
    from simulator.serving import simulate_vllm
    # One user, a 5 ms front end: each request takes 0.005 + 0.014 + 2 × 0.011 = 0.041 s, and the
    # next one is sent when the previous one's last token reaches the user.
    result = simulate_vllm(None, [4] * 3, [3] * 3, MODEL, prefix_caching=False, frontend_s=0.005, users=1)
    np.testing.assert_allclose(result.arrival_s, [0.0, 0.041, 0.082], atol=1e-12)
    np.testing.assert_allclose(result.ttft_s, 0.019, atol=1e-12)
    np.testing.assert_allclose(result.e2e_s, 0.041, atol=1e-12)
