"""vLLM V1 scheduling and the operator iteration model, against hand-computed schedules.

Every expected value below is worked out by hand in the comments (token budget, chunked
prefill, prefix-cache hits, preemption and recomputation), or from a closed form computed here
from the catalog's figures, independently of the engine's code path.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from simulator.cli import main
from simulator.scenario.catalog import BUILTIN_GPUS
from simulator.serving import LinearIterationModel
from simulator.serving.config import operator_model
from simulator.serving.llm_catalog import LLM_CATALOG
from simulator.serving.prefix import block_keys
from simulator.serving.vllm import simulate_vllm
from simulator.serving.vllm_engine import run_vllm

PER_ITERATION = LinearIterationModel(1.0, 0.0)  # every iteration takes 1 s
PER_TOKEN = LinearIterationModel(0.0, 1.0)  # an iteration takes 1 s per token it processes


def test_token_budget_schedule_by_hand():
    # Budget 16, three 10-token prompts of 3 output tokens at t=0, 1 s per token processed.
    # Step 1: A gets 10, B the 6 left -> 16 s. Step 2: A decodes (1), B finishes its prompt (4),
    # C is admitted with 10 of the 11 left -> 15 s, ends at 31: B and C emit their first token.
    # Step 3: three decodes -> 34, A's third token. Step 4: B and C decode -> 36.
    r = simulate_vllm([0, 0, 0], [10, 10, 10], [3, 3, 3], PER_TOKEN, max_num_seqs=8, max_num_batched_tokens=16)
    assert r.admit_s.tolist() == [0, 0, 16]
    assert r.first_token_s.tolist() == [16, 31, 31]
    assert r.finish_s.tolist() == [34, 36, 36]
    assert r.iterations == 4
    r = simulate_vllm([0, 0, 0], [10, 10, 10], [3, 3, 3], PER_ITERATION, max_num_seqs=8, max_num_batched_tokens=16)
    assert r.first_token_s.tolist() == [1, 2, 2] and r.finish_s.tolist() == [3, 4, 4]


def test_max_num_seqs_holds_requests_back():
    # Two seats: C waits until A and B leave at t=2 (2 output tokens, 1 s per iteration).
    r = simulate_vllm([0, 0, 0], [4, 4, 4], [2, 2, 2], PER_ITERATION, max_num_seqs=2, max_num_batched_tokens=64)
    assert r.admit_s.tolist() == [0, 0, 2] and r.finish_s.tolist() == [2, 2, 4]


@pytest.mark.parametrize(
    ("labels", "second_first_token"),
    [
        # Same whole prompt (40 tokens = 2 full blocks + 8): 32 tokens cached, 8 computed.
        (dict(prompt_id=[0, 0]), 108.0),
        # A shared 20-token system prompt: only its one full block (16 tokens) is shared.
        (dict(prefix_id=[3, 3], prefix_tokens=[20, 20]), 124.0),
        # Different prompts: nothing shared, 40 tokens computed.
        (dict(prompt_id=[0, 1]), 140.0),
    ],
)
def test_prefix_cache_hits_skip_prefill(labels, second_first_token):
    r = simulate_vllm([0, 100], [40, 40], [2, 2], PER_TOKEN, max_num_seqs=8, max_num_batched_tokens=64, **labels)
    assert r.first_token_s.tolist() == [40.0, second_first_token]
    off = simulate_vllm([0, 100], [40, 40], [2, 2], PER_TOKEN, max_num_seqs=8, max_num_batched_tokens=64,
                        prefix_caching=False, **labels)
    assert off.first_token_s.tolist() == [40.0, 140.0]


def test_a_fully_cached_prompt_still_computes_its_last_token():
    # 32 tokens = 2 full blocks; vLLM takes at most tokens - 1 from the cache, i.e. one block
    # (16 tokens), and recomputes the other 16.
    r = simulate_vllm([0, 100], [32, 32], [2, 2], PER_TOKEN, max_num_seqs=8, max_num_batched_tokens=64,
                      prompt_id=[7, 7])
    assert r.first_token_s.tolist() == [32.0, 116.0]


def test_cached_attention_context_still_costs_kv_reads():
    # With the operator model, a hit saves GEMM work but the chunk still attends over (and
    # reads) the cached tokens: the cached request's prefill costs more than a cold prompt of
    # the same uncached length.
    model = operator_model("llama-2-7b", "H100", frontend_s=0.0)
    hit = model.operator_seconds([(8, 32)])
    cold = model.operator_seconds([(8, 0)])
    assert hit["gemm_prefill"] == cold["gemm_prefill"]
    assert hit["attention_prefill"] > cold["attention_prefill"]


def test_lru_eviction_under_kv_pressure():
    # 4 blocks of 16 tokens, free queue [0 1 2 3]. A (prompt id 0, 32 tokens, 1 output) takes
    # blocks 0, 1, caches them and leaves at 32, freeing its last block first: queue [2 3 1 0].
    # B (id 1, 48 tokens) takes 2, 3 and 1 (evicting A's second block) and leaves at 40 + 48.
    # C repeats A's prompt: block 0 is still cached, 16 tokens hit, 16 computed -> 116.
    r = simulate_vllm([0, 40, 100], [32, 48, 32], [1, 1, 1], PER_TOKEN, max_num_seqs=8,
                      max_num_batched_tokens=64, kv_capacity_tokens=64, prompt_id=[0, 1, 0])
    assert r.first_token_s.tolist() == [32.0, 88.0, 116.0]


def test_preemption_recomputes_the_newest_request():
    # 4 blocks, two 16-token prompts of 40 outputs at t=0, 1 s per iteration. Each holds 2 blocks
    # by g = 16; at t=17 A needs a 3rd: B (newest) is preempted after 17 tokens. A then runs
    # alone and leaves at t=40; B recomputes 16 + 17 = 33 tokens in one step (-> 18th token at
    # 41) and needs 22 more: it leaves at 63. Its TTFT stays the first one, t=1.
    r = simulate_vllm([0, 0], [16, 16], [40, 40], PER_ITERATION, max_num_seqs=8, max_num_batched_tokens=512,
                      kv_capacity_tokens=64)
    assert r.first_token_s.tolist() == [1.0, 1.0]
    assert r.finish_s.tolist() == [40.0, 63.0]
    assert r.preemptions.tolist() == [0, 1]
    # Reservation instead: B waits for A's 4 blocks, admitted at 40, first token 41, leaves 80.
    r = simulate_vllm([0, 0], [16, 16], [40, 40], PER_ITERATION, max_num_seqs=8, max_num_batched_tokens=512,
                      kv_capacity_tokens=64, kv_preemption=False)
    assert r.first_token_s.tolist() == [1.0, 41.0] and r.finish_s.tolist() == [40.0, 80.0]
    assert r.preemptions.tolist() == [0, 0]


def test_frontend_latency_adds_to_ttft_and_e2e():
    r = simulate_vllm([0.0], [10], [2], PER_ITERATION, max_num_batched_tokens=64, frontend_s=0.25)
    assert r.ttft_s.tolist() == [1.25] and r.e2e_s.tolist() == [2.25]


def test_block_keys_share_prefix_then_prompt_blocks():
    start, count, keys, n_keys = block_keys(np.array([40, 40, 20]), np.array([0, 0, -1]), np.array([20, 20, 0]),
                                            np.array([5, 6, -1]))
    assert count.tolist() == [2, 2, 0]
    a, b = keys[start[0]:start[0] + 2], keys[start[1]:start[1] + 2]
    assert a[0] == b[0] and a[1] != b[1] and n_keys == 3


@pytest.mark.parametrize("seed", range(4))
def test_vllm_kernel_equals_its_python_function(seed):
    rng = np.random.default_rng(seed)
    n = 30
    arrival = np.sort(rng.exponential(0.5, n).cumsum())
    prompt = rng.integers(1, 60, n)
    output = rng.integers(1, 30, n)
    start, count, keys, n_keys = block_keys(prompt, rng.integers(-1, 2, n), rng.integers(0, 40, n),
                                            rng.integers(-1, 5, n))
    params = LinearIterationModel(0.01, 0.002).params
    outs = []
    for fn in (run_vllm, run_vllm.py_func):
        arrays = [np.full(n, np.nan) for _ in range(3)] + [np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)]
        iterations = fn(arrival, prompt, output, start, count, keys, n_keys, params, 6, 64, 12, 16,
                        bool(seed % 2), seed < 2, 1 + seed % 2, 1, *arrays)
        outs.append((iterations, arrays))
    assert outs[0][0] == outs[1][0]
    for a, b in zip(outs[0][1], outs[1][1], strict=True):
        np.testing.assert_array_equal(a, b)


def test_operator_decode_step_by_hand():
    # Batch-1 decode of Llama-2-7B (bf16, TP 1) at position 100: GEMM = max(FLOPs, weight read)
    # with weights = attention + MLP + lm_head (embedding lookups are not read whole); decode
    # attention reads 100 tokens of KV. Computed here from the catalog's shapes.
    model = operator_model("llama-2-7b", "H100")
    llm, gpu = LLM_CATALOG["llama-2-7b"], BUILTIN_GPUS["H100"]
    bandwidth = gpu["memory_tbps"] * 1e12 * model.memory_efficiency
    attn = 32 * 4096 * 128 * (2 * 32 + 2 * 32)
    mlp = 3 * 4096 * 11008 * 32
    weights = (attn + mlp + 32000 * 4096) * 2 / bandwidth
    flops = 2 * (attn + mlp) / (gpu["tflops_bf16"] * 1e12 * model.compute_efficiency)
    kv = 100 * 2 * 32 * 32 * 128 * 2 / bandwidth
    expected = model.overhead_s + 32 * model.layer_overhead_s + max(flops, weights) + kv
    assert sum(model.operator_seconds([], [100]).values()) == pytest.approx(expected, rel=1e-12)
    r = simulate_vllm([0.0], [99], [2], model, frontend_s=0.0)
    assert r.finish_s[0] - r.first_token_s[0] == pytest.approx(expected, rel=1e-12)
    assert llm.attention_params == attn


def test_moe_reads_the_experts_a_batch_activates():
    # Expected distinct experts for n tokens, top-1 of 16: 16·(1 − (15/16)^n); checked against
    # a Monte Carlo of uniform routing, then against the operator model's weight read.
    rng = np.random.default_rng(0)
    for n in (1, 4, 32):
        draws = [len(np.unique(rng.integers(0, 16, n))) for _ in range(4000)]
        assert np.mean(draws) == pytest.approx(16 * (1 - (15 / 16) ** n), rel=0.02)
    model = operator_model("llama-4-scout-17b-16e", "H100", tp=2, dtype="fp8")
    p = model.params
    one, many = model.operator_seconds([], [10]), model.operator_seconds([], [10] * 64)
    assert one["gemm_decode"] == pytest.approx(p[3] + p[4] * 1.0, rel=1e-12)
    assert many["gemm_decode"] == pytest.approx(max(p[2] * 64, p[3] + p[4] * 16 * (1 - (15 / 16) ** 64)), rel=1e-12)


def test_fp8_checkpoint_keeps_attention_and_embeddings_16_bit():
    scout = LLM_CATALOG["llama-4-scout-17b-16e"]
    model = operator_model("llama-4-scout-17b-16e", "H100", tp=2, dtype="fp8")
    linear = scout.dense_mlp_params + scout.experts * scout.expert_params
    other = scout.params - scout.attention_params - linear
    assert model.weight_bytes == pytest.approx(2 * scout.attention_params + linear + 2 * other)
    # Total weights are held: ~108 B parameters, ~100 GB in this mix, on 2 × 80 GB.
    assert 95e9 < model.weight_bytes < 115e9


# Vidur's H100 operator profiles (issue 13): one 512-token Llama-2-7B prefill ~14 ms; a batch-1
# Llama-2-70B TP4 decode step ~25 ms; a 512-token chunk plus 127 decodes on 7B ~35 ms.
@pytest.mark.parametrize(
    ("name", "tp", "chunks", "decodes", "reference_s"),
    [
        ("llama-2-7b", 1, [(512, 0)], [], 0.014),
        ("llama-2-70b", 4, [], [512], 0.025),
        ("llama-2-7b", 1, [(512, 0)], [512] * 127, 0.035),
    ],
)
def test_operator_times_within_25_percent_of_vidur(name, tp, chunks, decodes, reference_s):
    model = operator_model(name, "H100", tp=tp)
    total = sum(model.operator_seconds(chunks, decodes).values())
    assert total == pytest.approx(reference_s, rel=0.25)


def test_serving_json_adds_means_and_itl():
    result = CliRunner().invoke(main, ["serving", "--model", "llama-3.1-8b", "--gpu", "H100", "--input-len", "300",
                                       "--output-len", "50", "--num-requests", "200", "--rate", "5",
                                       "--shared-prefix-tokens", "100", "--distinct-prompts", "20", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    for key in ("ttft_mean_s", "e2e_mean_s", "e2e_p90_s", "itl_mean_s"):
        assert isinstance(report[key], float), key
    assert report["itl_mean_s"] == pytest.approx((report["e2e_mean_s"] - report["ttft_mean_s"]) / 49)


@pytest.mark.parametrize("flag", ["--chunk", "--max-batched-tokens"])
def test_a_budget_below_the_batch_exits_2_naming_the_flags(flag):
    result = CliRunner().invoke(main, ["serving", "--model", "llama-3.1-8b", "--gpu", "H100", "--max-batch", "64",
                                       flag, "32", "--input-len", "8", "--output-len", "8", "--num-requests", "2"])
    assert result.exit_code == 2
    assert f"{flag} (32) must be >= --max-batch (64)" in result.stderr


def test_trace_prefix_columns_are_read(tmp_path):
    from simulator.serving.trace import TraceError, read_trace

    trace = tmp_path / "t.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens,prefix_id,prefix_tokens\n"
                     "2023-11-16 18:15:46.00,374,44,7,100\n2023-11-16 18:15:47.00,200,3,,\n")
    loaded = read_trace(trace)
    assert loaded.prefix_id.tolist() == [7, -1] and loaded.prefix_tokens.tolist() == [100, 0]
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens,prefix_id,prefix_tokens\n"
                     "2023-11-16 18:15:46.00,374,44,x,100\n")
    with pytest.raises(TraceError, match="line 2: prefix_id and prefix_tokens must be whole numbers"):
        read_trace(trace)


def test_repeated_prompts_raise_capacity():
    # The same workload with 10 distinct 2,000-token prompts and a 500-token shared prefix:
    # cache hits skip most prefill, so the sustainable rate can only grow.
    from simulator.serving.capacity import Slo, capacity_curve
    from simulator.serving.trace import LengthMix

    model = operator_model("llama-3.1-8b", "H100")
    slo = Slo(ttft_s=0.5, tpot_s=0.05)
    cold = capacity_curve(model, LengthMix.fixed(2000, 50), slo, 64, requests=600, warmup=100, use_cache=False)
    mix = LengthMix(np.array([2000]), np.array([50]), "fixed", shared_prefix_tokens=500, distinct_prompts=10)
    warm = capacity_curve(model, mix, slo, 64, requests=600, warmup=100, use_cache=False)
    assert warm.capacity_rps > 1.2 * cold.capacity_rps


@pytest.mark.parametrize(("line", "words"), [
    ("      kv_preemption: yes\n", "models[0].serving.kv_preemption: expected a number or text, got true"),
    ("      prefix_caching: sometimes\n", "models[0].serving.prefix_caching"),
    ("      max_batched_tokens: 0\n", "models[0].serving.max_batched_tokens"),
])
def test_scenario_serving_options_are_checked(tmp_path, line, words):
    from pathlib import Path

    text = (Path(__file__).parents[1] / "scenarios" / "growth.yaml").read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text(text.replace("      max_batch: 128\n", "      max_batch: 128\n" + line, 1))
    result = CliRunner().invoke(main, ["validate", str(bad)])
    assert result.exit_code == 2, result.output
    assert words in result.stderr
