"""Replicas laid out over tp × dp × pp GPUs with experts over ep, NVFP4 weights, and the KV
capacity vLLM's memory accounting leaves: every figure below is worked by hand from the model's
shapes and the catalog's datasheet numbers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from simulator.cli import main
from simulator.serving import load_model_config
from simulator.serving.config import operator_model
from simulator.serving.iteration import ServingConfigError
from simulator.serving.kv_memory import RUNTIME_RESERVE_GIB
from simulator.serving.vllm import simulate_vllm

CONFIGS = Path(__file__).parent / "data" / "model_configs"
DSV3 = load_model_config(CONFIGS / "deepseek-v3.json")
LLAMA = load_model_config(CONFIGS / "llama-3.1-70b-instruct.json")
LLMS = {DSV3.name: DSV3, LLAMA.name: LLAMA}
# One DeepSeek-V3 routed expert over its 58 MoE layers: 3 matrices of 7,168 × 2,048.
EXPERT = 3 * 7168 * 2048 * 58


def model(name, gpu, **layout):
    return operator_model(name, gpu, llms=LLMS, **layout)


def test_expert_parallel_divides_the_experts_and_keeps_the_dense_part_whole():
    tp1 = model("deepseek-v3", "B200", tp=1, dp=8, ep=8, dtype="fp8")
    assert EXPERT == 2_554_331_136 and tp1.routed_expert_bytes == 256 * EXPERT * 1.0
    dense = tp1.weight_bytes - 256 * EXPERT
    assert tp1.weight_bytes_per_gpu == pytest.approx(dense + 256 * EXPERT / 8, rel=1e-12)
    assert tp1.gpus == 8
    tp8 = model("deepseek-v3", "B200", tp=8, dtype="fp8")  # the same 8 GPUs, experts split by TP
    assert tp8.weight_bytes_per_gpu == pytest.approx(tp8.weight_bytes / 8, rel=1e-12)


def test_ep_that_does_not_divide_the_experts_holds_redundant_slots():
    """DeepSeek's decode EP144: 256 experts on 144 GPUs, two slots each (32 redundant copies)."""
    m = model("deepseek-v3", "H100", tp=1, dp=144, ep=144, dtype="fp8")
    dense = m.weight_bytes - 256 * EXPERT
    assert m.weight_bytes_per_gpu == pytest.approx(dense + 2 * EXPERT, rel=1e-12)
    with pytest.raises(ServingConfigError, match="exceeds twice"):
        model("deepseek-v3", "H100", tp=1, dp=520, ep=520, dtype="fp8")


def test_expert_parallel_all_to_all_per_token_and_layer():
    # EP 8 inside one HGX B200 (900 GB/s per direction): a token's 8 expert pairs start spread over
    # the 8 GPUs, 1 per GPU per token, 7/8 of it remote: FP8 dispatch 7/8 × 7,168 B and BF16
    # combine 7/8 × 14,336 B at 900 GB/s, in each of the 58 MoE layers; no TP all-reduce (tp 1).
    # (Blackwell's fitted link efficiency is the all-reduce's, not the all-to-all's.)
    m = model("deepseek-v3", "B200", tp=1, dp=8, ep=8, dtype="fp8")
    per_token = 58 * (7 / 8 * 7168 * 1 / 900e9 + 7 / 8 * 7168 * 2 / 900e9)
    assert m.params[10] == pytest.approx(per_token, rel=1e-12)
    latency = m.allreduce_latency_s if m.allreduce_latency_s is not None else m.gpu.allreduce_latency_us * 1e-6
    assert m.params[9] == pytest.approx(58 * 2 * latency, rel=1e-12)  # one latency per dispatch and combine


def test_all_to_all_beyond_the_nvlink_domain_goes_at_the_network_speed():
    # EP 16 = TP 1 × DP 16 over two HGX boxes: of a GPU's remote pairs (15/16), the 8 GPUs of the
    # other box take 8/15: a token's share crossing the 50 GB/s NICs is 1/2 of its pair, the 7/16
    # on NVLink go in parallel; the network is slower, so it sets the time.
    m = model("deepseek-v3", "B200", tp=1, dp=16, ep=16, dtype="fp8")
    pairs = 8 / 16  # a token's pairs per GPU
    across = pairs * 15 / 16 * 8 / 15
    per_token = 58 * (across * 7168 * 1 / 50e9 + across * 7168 * 2 / 50e9)
    assert m.params[10] == pytest.approx(per_token, rel=1e-12)


def test_data_parallel_attention_spreads_attention_and_kv_reads_over_the_ranks():
    one = model("deepseek-v3", "H200", tp=8, dtype="fp8")
    wide = model("deepseek-v3", "H200", tp=1, dp=8, ep=8, dtype="fp8")
    # Attention FLOPs per position over tp × dp = 8 GPUs either way; the MLA latent is whole on
    # every GPU, so with TP 8 each GPU reads all of it, with DP 8 each rank reads its own requests'.
    assert wide.params[7] == pytest.approx(one.params[7], rel=1e-12)
    assert wide.params[8] == pytest.approx(one.params[8] / 8, rel=1e-12)
    # KV per GPU for one token: 61 layers × (512 + 64) × 1 byte either way; DP 8 holds 8 ranks' worth.
    assert one.kv_bytes_per_token_per_gpu == wide.kv_bytes_per_token_per_gpu == 61 * 576


def test_tensor_parallel_inside_expert_parallel_all_reduces_only_outside_the_moe_layers():
    # TP 2 × DP 4, EP 8: attention all-reduces in all 61 layers, the 3 dense MLPs too, the 58 MoE
    # layers none (their combine returns each token whole): 2 × 61 − 58 = 64 all-reduces, each of a
    # rank's T / 4 tokens: 2 (tp − 1) / tp × 7,168 × 2 bytes at 900 GB/s × the fitted share.
    m = model("deepseek-v3", "B200", tp=2, dp=4, ep=8, dtype="fp8")
    comm = m.communication()
    assert comm.allreduce_per_token_s == pytest.approx(
        64 * 2 * 1 / 2 * 7168 * 2 / (900e9 * m.link_efficiency) / 4, rel=1e-12)
    assert comm.allreduce_fixed_s == pytest.approx(64 * m.gpu.allreduce_latency_us * 1e-6, rel=1e-12)


def test_pipeline_hand_offs_between_boxes_go_at_the_network_speed():
    # TP 4 × PP 4 on HGX H200 (8 per box): stages 1-2 in box A, 3-4 in box B; of the 3 hand-offs
    # one crosses the boxes (50 GB/s NICs, plus 10 µs), two stay on NVLink (450 GB/s). Each moves a
    # token's 8,192 × 2 bytes over the 4 GPUs of a stage.
    m = model("llama-3.1-70b-instruct", "H200", tp=4, pp=4, dtype="fp8")
    comm = m.communication()
    latency = m.gpu.allreduce_latency_us * 1e-6
    assert comm.pipeline_fixed_s == pytest.approx(3 * latency + 10e-6, rel=1e-12)
    assert comm.pipeline_per_token_s == pytest.approx((2 / 450e9 + 1 / 50e9) * 8192 * 2 / 4, rel=1e-12)


def test_layouts_that_cannot_run_are_refused():
    with pytest.raises(ServingConfigError, match="ep must be 1 or tp × dp"):
        model("deepseek-v3", "B200", tp=2, dp=2, ep=2, dtype="fp8")
    with pytest.raises(ServingConfigError, match="no routed experts"):
        model("llama-3.1-70b-instruct", "H100", tp=2, dp=2, ep=4, dtype="fp8")
    with pytest.raises(ServingConfigError, match="no FP4 tensor cores"):
        model("llama-3.1-70b-instruct", "H100", tp=2, dtype="fp4")
    with pytest.raises(ServingConfigError, match="of weights on each GPU"):
        model("deepseek-v3", "H200", tp=4, dtype="fp8")  # 671 GB over 4 GPUs of 141
    # 70.6B parameters in FP8 fit one H100's 90% of 85.5 GB, but the activations and the runtime
    # reserve leave nothing for the KV cache.
    with pytest.raises(ServingConfigError, match="leaves no KV cache"):
        model("llama-3.1-70b-instruct", "H100", tp=1, dtype="fp8")
    with pytest.raises(ServingConfigError, match="gpu_memory_utilization"):
        model("llama-3.1-70b-instruct", "H100", tp=4, dtype="fp8", gpu_memory_utilization=1.2)


def test_nvfp4_weights_and_fp4_tensor_cores():
    fp4 = model("llama-3.1-70b-instruct", "B200", tp=1, dtype="fp4")
    fp8 = model("llama-3.1-70b-instruct", "B200", tp=1, dtype="fp8")
    linear = LLAMA.attention_params + LLAMA.dense_mlp_params
    # NVFP4: 4.5 bits per weight (an FP8 scale per 16 values); embeddings and lm_head stay 16-bit.
    assert fp4.weight_bytes - fp8.weight_bytes == pytest.approx(linear * (4.5 / 8 - 1.0), rel=1e-12)
    # The GEMMs run at the FP4 peak (9 PFLOPS dense on B200) where FP8 runs at 4.5.
    assert fp4.params[2] == pytest.approx(2.0 * linear / (9000e12 * fp4.compute_efficiency), rel=1e-12)
    assert fp8.params[2] == pytest.approx(2 * fp4.params[2], rel=1e-12)
    # Decode reads the weights: 4.5 bits instead of 8.
    assert fp4.params[3] < fp8.params[3]


def test_kv_capacity_as_vllm_accounts_for_it_by_hand():
    # Llama-3.1-70B FP8 on 4 × H100, FP8 KV cache. One GPU: 90% of 81,559 MiB; its weights are a
    # quarter of the replica's; activations of the 8,192-token profiling pass: 2 bytes × (2 ×
    # 8,192 hidden + 3 × 28,672 / 4 MLP + (64 + 2 × 8) × 128 / 4 heads) per token, plus FP32 logits
    # and probabilities of 256 sequences over 128,256 tokens; less the runtime reserve.
    m = model("llama-3.1-70b-instruct", "H100", tp=4, dtype="fp8", kv_dtype="fp8")
    activation = 8192 * 2 * (2 * 8192 + 3 * 7168 + 80 * 32) + 8 * 256 * 128_256
    free = 0.9 * 81_559 * 2**20 - m.weight_bytes / 4 - activation - RUNTIME_RESERVE_GIB * 2**30
    per_token = 80 * 2 * 2 * 128 * 1.0  # 80 layers, K and V, 2 of the 8 KV heads, FP8
    memory = m.kv_memory()
    assert memory.activation_bytes == activation
    assert memory.kv_cache_tokens == int(free // (per_token * 16)) * 16
    # More of the device for vLLM, more KV cache: 5% of 81,559 MiB more.
    roomier = model("llama-3.1-70b-instruct", "H100", tp=4, dtype="fp8", kv_dtype="fp8", gpu_memory_utilization=0.95)
    extra = 0.05 * 81_559 * 2**20 / per_token
    assert roomier.kv_memory().kv_cache_tokens - memory.kv_cache_tokens == pytest.approx(extra, abs=16)


def test_pipeline_stages_serve_as_engines_each_passing_every_stage():
    # PP 2: two requests at once go to the two stages' engines and decode side by side; each
    # iteration runs every layer (the stages in turn) plus one hand-off. One request alone on PP 2
    # takes the PP 1 time plus the hand-offs.
    pp1 = model("llama-3.1-70b-instruct", "H200", tp=2, dtype="fp8")
    pp2 = model("llama-3.1-70b-instruct", "H200", tp=2, pp=2, dtype="fp8")
    assert pp2.gpus == 4 and pp2.weight_bytes_per_gpu == pytest.approx(pp1.weight_bytes_per_gpu / 2, rel=1e-12)
    hand_off_fixed = pp2.params[9] - pp1.params[9]
    assert hand_off_fixed == pytest.approx(pp2.gpu.allreduce_latency_us * 1e-6, rel=1e-12)
    alone1 = simulate_vllm(np.zeros(1), [500], [20], pp1, prefix_caching=False)
    alone2 = simulate_vllm(np.zeros(1), [500], [20], pp2, prefix_caching=False)
    two2 = simulate_vllm(np.zeros(2), [500, 500], [20, 20], pp2, prefix_caching=False)
    np.testing.assert_allclose(two2.finish_s, alone2.finish_s[0], rtol=1e-12)  # side by side, no batching
    assert alone2.finish_s[0] > alone1.finish_s[0]  # the hand-offs


def test_a_request_must_fit_one_data_parallel_rank():
    # TP 2 × DP 4 pools the 4 ranks' caches in one engine, but a request lives on one rank.
    m = model("llama-3.1-70b-instruct", "H100", tp=2, dp=4, dtype="fp8")
    rank = m.kv_memory().kv_cache_tokens
    assert m.kv_capacity_tokens == 4 * rank
    with pytest.raises(ServingConfigError, match="each data-parallel rank of a replica holds"):
        simulate_vllm(np.zeros(1), [rank + 1000], [8], m, prefix_caching=False)


def test_serving_cli_reads_a_config_and_reports_kv_cache_tokens(tmp_path):
    args = ["serving", "--model-config", str(CONFIGS / "deepseek-v3.json"), "--gpu", "B200", "--tp", "1",
            "--dp", "8", "--ep", "8", "--dtype", "fp4", "--kv-dtype", "fp8", "--batching", "vllm",
            "--input-len", "512", "--output-len", "32", "--num-requests", "40", "--json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    expected = operator_model("deepseek-v3", "B200", tp=1, dp=8, ep=8, dtype="fp4", kv_dtype="fp8", llms=LLMS)
    memory = expected.kv_memory(max_num_batched_tokens=8192, max_num_seqs=256)
    assert report["kv_cache_tokens"] == memory.kv_cache_tokens  # per DP rank, vLLM's figure
    assert report["kv_capacity_tokens"] == 8 * memory.kv_cache_tokens
    assert report["gpus_per_replica"] == 8 and report["dp"] == 8 and report["ep"] == 8
    assert report["output_tokens_per_s_per_gpu"] == pytest.approx(report["output_tokens_per_s"] / 8)


@pytest.mark.parametrize(("args", "words"), [
    (["--model", "llama-3.1-70b", "--model-config", "x.json"], "exactly one of --model"),
    (["--model-config", "missing/config.json"], "missing/config.json: cannot read"),
    (["--model", "llama-3.1-70b", "--tp", "4", "--pp", "2"], "--dp and --pp apply to --batching vllm"),
    (["--model", "llama-3.1-70b", "--tp", "2", "--dp", "2"], "--dp and --pp apply to --batching vllm"),
])
def test_serving_cli_refuses_bad_model_sources(args, words):
    result = CliRunner().invoke(main, ["serving", *args, "--gpu", "H100", "--input-len", "8", "--output-len", "8",
                                       "--num-requests", "2"])
    assert result.exit_code == 2
    assert words in result.output and "Traceback" not in result.output


@pytest.mark.slow
def test_moe_scenario_derives_a_replica_on_each_pool():
    # scenarios/moe.yaml: DeepSeek-V3 from its config.json, NVFP4 with EP 8 on B200 and FP8 with
    # EP 8 on H200: each pool gets its own 8-GPU replica and capacity, B200's the larger (FP4
    # tensor cores, 8 TB/s against 4.8).
    from simulator.serving.resolve import load_scenario

    scenario = load_scenario(Path(__file__).parents[1] / "scenarios" / "moe.yaml")
    model = scenario.models[0]
    b200, h200 = model.replicas["b200"], model.replicas["h200"]
    assert b200.gpus_per_replica == h200.gpus_per_replica == 8
    assert b200.derived_on == "B200" and h200.derived_on == "H200"
    assert b200.capacity_rps > h200.capacity_rps > 1.0
    assert model.serving_on("b200").dtype == "fp4" and model.serving_on("h200").dtype == "fp8"
