"""Speculative decoding: accepted tokens per step against the closed form, and its speed-up.

With acceptance α at every position and ``k`` drafts, a step emits ``(1 − α^(k+1)) / (1 − α)``
tokens on average (Leviathan et al. 2023): the engine's tokens per verification step must
match it over enough steps. The speed-up comes from verifying ``k + 1`` tokens for about the
cost of one while decoding is memory-bound, so it must fall as the batch grows.
"""

from __future__ import annotations

import numpy as np
import pytest

from simulator.serving import LinearIterationModel
from simulator.serving.config import operator_model
from simulator.serving.speculative import SpeculativeDecoding, draft_head_share
from simulator.serving.vllm import simulate_vllm


@pytest.mark.parametrize(("k", "alpha"), [(1, 0.6), (3, 0.8), (5, 0.7)])
def test_tokens_per_step_follow_the_closed_form(k, alpha):
    spec = SpeculativeDecoding(k=k, acceptance=alpha)
    expected = (1 - alpha ** (k + 1)) / (1 - alpha)
    assert spec.tokens_per_step == pytest.approx(expected, rel=1e-12)
    n, out = 64, 4001
    run = simulate_vllm(np.zeros(n), np.full(n, 64), np.full(n, out), LinearIterationModel(0.01, 1e-4),
                        speculative=spec, rng=np.random.default_rng(5), kv_capacity_tokens=10**7)
    # ≈ 64 × 4000 / 2.95 ≈ 87k steps: the standard error of the mean is ≈ 0.3%; the last step of
    # each request (fewer drafts) moves it by < 0.05%.
    assert run.tokens_per_step == pytest.approx(expected, rel=0.01)


def test_a_distribution_of_accepted_drafts_is_taken_as_given():
    spec = SpeculativeDecoding(k=2, distribution=(0.2, 0.3, 0.5))
    assert spec.tokens_per_step == pytest.approx(1 * 0.2 + 2 * 0.3 + 3 * 0.5)
    per_position = SpeculativeDecoding(k=3, acceptance=(0.9, 0.5, 0.5))
    np.testing.assert_allclose(per_position.accepted_distribution(), [0.1, 0.45, 0.225, 0.225])


def test_a_verification_step_costs_its_tokens_and_emits_the_accepted_ones():
    """Every draft accepted (α = 1), k = 3: a request of 9 output tokens takes its first token in
    the prefill, then steps of 4 tokens (4, 4): 3 iterations. Each verification processes 4 tokens
    per sequence: 0.01 + 1e-3 × 4 s, plus the n-gram draft (free)."""
    spec = SpeculativeDecoding(k=3, acceptance=1.0, method="ngram")
    run = simulate_vllm([0.0], [10], [9], LinearIterationModel(0.01, 1e-3), speculative=spec, frontend_s=0.0,
                        kv_capacity_tokens=10**6)
    assert run.first_token_s[0] == pytest.approx(0.01 + 1e-3 * 10)
    assert run.finish_s[0] == pytest.approx(0.02 + 2 * (0.01 + 1e-3 * 4))
    assert run.verify_steps[0] == 2
    # Four tokens owed at the last step take 3 drafts; a request owing 2 takes 1 draft.
    short = simulate_vllm([0.0], [10], [3], LinearIterationModel(0.01, 1e-3), speculative=spec, frontend_s=0.0,
                          kv_capacity_tokens=10**6)
    assert short.finish_s[0] == pytest.approx(0.02 + (0.01 + 1e-3 * 2))


def test_the_speed_up_falls_toward_one_as_the_batch_grows():
    model = operator_model("llama-3.1-8b", "H100")
    spec = SpeculativeDecoding(k=3, acceptance=0.75)
    speedups = []
    for batch in (1, 8, 32, 128):
        plain = simulate_vllm(np.zeros(batch), np.full(batch, 256), np.full(batch, 513), model)
        fast = simulate_vllm(np.zeros(batch), np.full(batch, 256), np.full(batch, 513), model, speculative=spec,
                             rng=np.random.default_rng(2))
        speedups.append(plain.duration_s / fast.duration_s)
    assert all(a > b for a, b in zip(speedups, speedups[1:], strict=False))
    assert speedups[0] > 1.8 and speedups[-1] < 1.5


def test_draft_head_share_is_one_layer_and_the_lm_head():
    model = operator_model("llama-3.1-8b", "H100")
    llm = model.llm
    assert draft_head_share(llm) == pytest.approx((llm.active_params / 32 + 128_256 * 4096) / llm.active_params)
    eagle = SpeculativeDecoding(k=2).draft_params(model)
    np.testing.assert_allclose(eagle[[2, 3]], model.params[[2, 3]] * draft_head_share(llm))
    assert eagle[5] == model.params[5]  # counts are not scaled


@pytest.mark.parametrize("bad", [dict(k=0), dict(k=2, acceptance=1.5), dict(k=2, acceptance=(0.5, 0.5, 0.5)),
                                 dict(k=2, distribution=(0.5, 0.5)), dict(k=2, method="draft_model"),
                                 dict(k=2, method="magic")])
def test_bad_settings_are_refused(bad):
    with pytest.raises(ValueError):
        SpeculativeDecoding(**bad)


def test_a_request_arriving_with_its_kv_decodes_its_first_step_without_drafts():
    """k = 3, every draft accepted, 9 tokens owed after the first (which came with the KV): a plain
    step (1 token, 0.011 s), then verifications of 4 tokens (0.014 s) and of 3 (2 drafts: 0.013 s)."""
    spec = SpeculativeDecoding(k=3, acceptance=1.0, method="ngram")
    run = simulate_vllm([0.0], [10], [9], LinearIterationModel(0.01, 1e-3), speculative=spec, frontend_s=0.0,
                        kv_arrives=True, kv_capacity_tokens=10**6)
    assert run.finish_s[0] == pytest.approx(0.011 + 0.014 + 0.013)
    assert (run.verify_steps[0], run.verified_tokens[0]) == (2, 7)
    assert run.tokens_per_step == pytest.approx(3.5)


def test_a_requests_acceptances_do_not_depend_on_when_it_arrives():
    """The same three requests given in another order of arrival keep their own draws."""
    spec = SpeculativeDecoding(k=2, acceptance=0.6, method="ngram")
    model = LinearIterationModel(0.01, 1e-3)
    a = simulate_vllm([0.0, 100.0, 200.0], [10, 20, 30], [50, 60, 70], model, speculative=spec,
                      rng=np.random.default_rng(3), kv_capacity_tokens=10**6)
    b = simulate_vllm([200.0, 100.0, 0.0], [10, 20, 30], [50, 60, 70], model, speculative=spec,
                      rng=np.random.default_rng(3), kv_capacity_tokens=10**6)
    np.testing.assert_array_equal(a.verify_steps, b.verify_steps)
    np.testing.assert_allclose(a.e2e_s, b.e2e_s)
