"""Prefill first (vLLM V0's scheduler): the engine against hand counts and a plain-Python reference.

The reference below is written from the policy as stated (``simulator.serving.vllm_engine``'s
docstring), not from the engine: one replica, a linear iteration model, no prefix cache and a KV
cache that never runs short. At each boundary the replica admits waiting requests first come first
served while fewer than ``max_num_seqs`` run and their whole prompts fit the token budget; if it
admitted any, the iteration prefills only them (``base + per_token × Σ prompts``), every running
request waiting; otherwise every running request decodes one token (``base + per_token ×
requests``). A prefill's end emits the request's first token; a request leaves after its last.
"""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from simulator.serving.iteration import LinearIterationModel
from simulator.serving.vllm import simulate_vllm

BASE, PER_TOKEN = 0.01, 0.001


def reference_prefill_first(arrival, prompt, output, base, per_token, max_seqs, budget):
    """First-token and finish times under prefill-first scheduling (module docstring)."""
    n = len(arrival)
    first, finish = np.full(n, np.nan), np.full(n, np.nan)
    emitted = np.zeros(n, dtype=int)
    waiting: deque[int] = deque()
    running: list[int] = []
    t, i = 0.0, 0
    while i < n or waiting or running:
        while i < n and arrival[i] <= t:
            waiting.append(i)
            i += 1
        if not waiting and not running:
            t = arrival[i]
            continue
        admitted, tokens = [], 0
        while waiting and len(running) + len(admitted) < max_seqs and tokens + prompt[waiting[0]] <= budget:
            tokens += prompt[waiting[0]]
            admitted.append(waiting.popleft())
        if admitted:
            t += base + per_token * tokens
            for r in admitted:
                first[r] = t
                emitted[r] = 1
            running.extend(admitted)
        else:
            t += base + per_token * len(running)
            for r in running:
                emitted[r] += 1
        for r in [r for r in running if emitted[r] == output[r]]:
            finish[r] = t
            running.remove(r)
    return first, finish


def engine(arrival, prompt, output, max_seqs=256, budget=65536, **kw):
    return simulate_vllm(arrival, prompt, output, LinearIterationModel(BASE, PER_TOKEN), max_num_seqs=max_seqs,
                         max_num_batched_tokens=budget, prefix_caching=False, prefill_first=True, **kw)


def test_a_prefill_stalls_the_running_decode_by_hand():
    """A (100 tokens, 3 out) at 0, B (200, 2) at 0.05. A's prefill ends at 0.11; B's prefill runs
    alone, A's decode waiting: 0.11 + 0.21 = 0.32; both decode: 0.332 (B done); A: 0.343. Chunked
    (V1) scheduling instead mixes B's prompt with A's decode: 0.11 + 0.211 = 0.321, then 0.333."""
    result = engine([0.0, 0.05], [100, 200], [3, 2])
    np.testing.assert_allclose(result.first_token_s, [0.11, 0.32], rtol=0, atol=1e-12)
    np.testing.assert_allclose(result.finish_s, [0.343, 0.332], rtol=0, atol=1e-12)
    assert result.iterations == 4
    v1 = simulate_vllm([0.0, 0.05], [100, 200], [3, 2], LinearIterationModel(BASE, PER_TOKEN), prefix_caching=False)
    np.testing.assert_allclose(v1.first_token_s, [0.11, 0.321], rtol=0, atol=1e-12)
    np.testing.assert_allclose(v1.finish_s, [0.333, 0.333], rtol=0, atol=1e-12)


def test_waiting_prompts_are_batched_whole_up_to_the_budget_by_hand():
    """Three 100-token prompts at 0, budget 250: two are prefilled together (0.21), the third
    alone next, the first two waiting (0.32), then all three decode once (0.333)."""
    result = engine([0.0, 0.0, 0.0], [100, 100, 100], [2, 2, 2], budget=250)
    np.testing.assert_allclose(result.first_token_s, [0.21, 0.21, 0.32], rtol=0, atol=1e-12)
    np.testing.assert_allclose(result.finish_s, [0.333] * 3, rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed, max_seqs, budget", [(1, 256, 65536), (2, 6, 4096), (3, 3, 1500)])
def test_engine_matches_the_reference_request_by_request(seed, max_seqs, budget):
    rng = np.random.default_rng(seed)
    n = 600
    prompt = rng.integers(1, 1000, n)
    output = rng.integers(1, 60, n)
    arrival = np.cumsum(rng.exponential(0.25, n))
    arrival[rng.integers(0, n, 40)] = arrival[rng.integers(0, n, 40)]  # some equal times
    arrival.sort()
    result = engine(arrival, prompt, output, max_seqs=max_seqs, budget=budget)
    first, finish = reference_prefill_first(arrival, prompt, output, BASE, PER_TOKEN, max_seqs, budget)
    np.testing.assert_allclose(result.first_token_s, first, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(result.finish_s, finish, rtol=1e-12, atol=1e-9)
    # the reference's queue is busy: prefills do stall decodes here
    assert np.nanmax(result.tpot_s) > BASE + PER_TOKEN * max_seqs


def test_kv_short_preempts_and_still_serves_every_request():
    """A KV cache of 1,024 tokens for requests of up to 700: decodes that run out of blocks preempt
    the newest request, which is prefilled again (prompt and tokens so far); every token is served."""
    rng = np.random.default_rng(4)
    n = 300
    prompt, output = rng.integers(100, 500, n), rng.integers(2, 200, n)
    arrival = np.cumsum(rng.exponential(0.05, n))
    result = engine(arrival, prompt, output, kv_capacity_tokens=1024, budget=1024)
    assert result.preemptions.sum() > 0
    assert np.isfinite(result.finish_s).all() and (result.finish_s > result.first_token_s).all()
    assert (result.first_token_s >= arrival).all()


def test_the_budget_must_hold_every_request():
    with pytest.raises(ValueError, match=r"max_num_batched_tokens \(512\) to hold every request's prompt \+ output "
                                         r"\(700 tokens\)"):
        engine([0.0], [600], [100], budget=512)
