"""A model from its Hugging Face config.json: shapes, parameter counts, KV bytes, capacity.

The configs in ``tests/data/model_configs/`` are the published files, byte for byte (sources in
its README.md). Parameter counts are checked against each model's published totals, KV bytes
against sums written out by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

import simulator
from simulator.cli import main
from simulator.serving import LLM_CATALOG, ModelConfigError, load_model_config
from simulator.serving.capacity import Slo, capacity_curve
from simulator.serving.config import operator_model
from simulator.serving.kv_memory import RUNTIME_RESERVE_GIB
from simulator.serving.trace import LengthMix
from tests.helpers import base_scenario

CONFIGS = Path(__file__).parent / "data" / "model_configs"
DSV3, GPT_OSS, LLAMA_70B = CONFIGS / "deepseek-v3.json", CONFIGS / "gpt-oss-120b.json", CONFIGS / "llama-3.1-70b-instruct.json"


def within(value: float, published: float, tolerance: float = 0.02) -> bool:
    return abs(value / published - 1.0) <= tolerance


# -- parameter counts against the published totals --------------------------------------------

def test_deepseek_v3_counts_671b_total_37b_active():
    # 671B is the main model (61 layers); the MTP layer's 14B more are not counted. DeepSeek's own
    # README_WEIGHTS.md gives the active count as 36.6B (the lm_head's 0.9B included).
    spec = load_model_config(DSV3)
    assert within(spec.params, 671e9) and within(spec.active_params, 37e9)
    assert within(spec.active_params, 36.6e9, 0.005)
    assert (spec.experts, spec.top_k, spec.moe_layers, spec.expert_intermediate) == (256, 8, 58, 2048)
    assert spec.shared_expert_intermediate == 2048 and spec.intermediate == 18432


def test_gpt_oss_120b_counts_117b_total_5_1b_active():
    spec = load_model_config(GPT_OSS)
    assert within(spec.params, 117e9) and within(spec.active_params, 5.1e9)
    assert within(spec.params, 116.83e9, 0.001)  # the model card's 116.83B
    assert (spec.experts, spec.top_k, spec.windowed_layers, spec.sliding_window) == (128, 4, 18, 128)
    assert spec.expert_bytes_per_param == (4 + 8 / 32) / 8  # MXFP4: 4 bits + an 8-bit scale per 32


def test_llama_3_1_70b_dense_counts_70_6b():
    spec = load_model_config(LLAMA_70B)
    assert within(spec.params, 70.6e9, 0.005)
    catalog = LLM_CATALOG["llama-3.1-70b"]
    shapes = ("layers", "hidden", "heads", "kv_heads", "head_dim", "vocab", "intermediate", "experts")
    assert all(getattr(spec, key) == getattr(catalog, key) for key in shapes)
    assert spec.kv_bytes_per_token(2.0) == catalog.kv_bytes_per_token(2.0) == 2 * 80 * 8 * 128 * 2


@pytest.mark.parametrize(("file", "published", "catalog"), [
    ("llama-2-7b-hf.json", 6.74e9, "llama-2-7b"),  # Touvron et al. 2023: 6.74B
    ("qwen2.5-7b-instruct.json", 7.61e9, "qwen2.5-7b"),  # Qwen2.5 card: 7.61B (Q/K/V biases counted)
    ("mistral-nemo-instruct-2407.json", 12.2e9, "mistral-nemo-2407"),  # card: 12.2B; head_dim 128 ≠ 5120/32
])
def test_dense_configs_match_published_totals_and_catalog_shapes(file, published, catalog):
    spec = load_model_config(CONFIGS / file)
    assert within(spec.params, published, 0.005)
    entry = LLM_CATALOG[catalog]
    assert entry.kv_bytes_per_token(2.0) == spec.kv_bytes_per_token(2.0)
    assert (spec.heads, spec.kv_heads, spec.head_dim, spec.vocab) == (entry.heads, entry.kv_heads, entry.head_dim,
                                                                      entry.vocab)


def test_qwen3_moe_and_dense_from_their_configs():
    # Qwen counts the input embedding among "activated" parameters (gpt-oss and DeepSeek do not):
    # 3.04B + 0.31B embedding = 3.35B against the card's 3.3B.
    moe = load_model_config(CONFIGS / "qwen3-30b-a3b.json")
    assert within(moe.params, 30.5e9) and within(moe.active_params + moe.vocab * moe.hidden, 3.3e9)
    assert (moe.experts, moe.top_k, moe.expert_intermediate, moe.shared_expert_intermediate) == (128, 8, 768, 0)
    dense = load_model_config(CONFIGS / "qwen3-32b.json")
    assert within(dense.params, 32.8e9)


def test_llama_4_scout_from_its_checkpoint_config():
    # The RedHatAI FP8-dynamic checkpoint vLLM served in the H100 runs: a multimodal wrapper whose
    # text_config is Llama 4 (16 experts, top-1, one shared expert). Meta's card: 109B total, 17B
    # active (the input embedding counted, 1.03B here). The checkpoint's compressed-tensors `ignore`
    # list keeps the language model's attention projections 16-bit.
    spec = load_model_config(CONFIGS / "llama-4-scout-17b-16e-instruct-fp8-dynamic.json")
    assert within(spec.params, 109e9) and within(spec.active_params + spec.vocab * spec.hidden, 17e9)
    assert (spec.experts, spec.top_k, spec.moe_layers) == (16, 1, 48)
    assert spec.expert_intermediate == spec.shared_expert_intermediate == 8192
    assert spec.fp8_attention is False
    catalog = LLM_CATALOG["llama-4-scout-17b-16e"]
    assert spec.kv_bytes_per_token(1.0) == catalog.kv_bytes_per_token(1.0) == 2 * 48 * 8 * 128
    assert abs(spec.params - catalog.params) < 1e6  # the catalog's hand count, within the norms


def test_llama_4_maverick_interleaves_moe_and_dense_layers():
    # Maverick (published shapes): MoE on every second layer (interleave_moe_layer_step 2), dense
    # MLPs of intermediate_size_mlp between. Meta's card: 400B total, 17B active.
    maverick = {"model_type": "llama4_text", "num_hidden_layers": 48, "hidden_size": 5120,
                "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 8192,
                "intermediate_size_mlp": 16384, "num_local_experts": 128, "num_experts_per_tok": 1,
                "vocab_size": 202048, "interleave_moe_layer_step": 2, "tie_word_embeddings": False}
    spec = load_model_config(maverick)
    assert (spec.moe_layers, spec.intermediate) == (24, 16384)
    assert within(spec.params, 400e9) and within(spec.active_params + spec.vocab * spec.hidden, 17e9)


# Kimi-K2 and Qwen3-235B-A22B: their config.json could not be obtained byte for byte, so these
# two read the published shapes as a mapping (the loader's dict input).
KIMI_K2 = {"model_type": "kimi_k2", "num_hidden_layers": 61, "hidden_size": 7168, "num_attention_heads": 64,
           "num_key_value_heads": 64, "intermediate_size": 18432, "vocab_size": 163840, "n_routed_experts": 384,
           "n_shared_experts": 1, "num_experts_per_tok": 8, "moe_intermediate_size": 2048,
           "first_k_dense_replace": 1, "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_nope_head_dim": 128,
           "qk_rope_head_dim": 64, "v_head_dim": 128, "tie_word_embeddings": False}
QWEN3_235B = {"model_type": "qwen3_moe", "num_hidden_layers": 94, "hidden_size": 4096, "num_attention_heads": 64,
              "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 12288, "moe_intermediate_size": 1536,
              "num_experts": 128, "num_experts_per_tok": 8, "vocab_size": 151936, "tie_word_embeddings": False}


def test_kimi_k2_and_qwen3_235b_from_their_shapes():
    kimi = load_model_config(KIMI_K2)  # Kimi K2 report: 1.04T total ("1T"), 32B activated
    assert within(kimi.params, 1.04e12) and within(kimi.active_params, 32e9)
    qwen = load_model_config({"text_config": QWEN3_235B, "model_type": "qwen3_vl_moe"})  # a wrapper's text_config
    assert within(qwen.params, 235e9) and within(qwen.active_params + qwen.vocab * qwen.hidden, 22e9)


# -- KV cache bytes by hand -------------------------------------------------------------------

def test_mla_holds_one_latent_per_layer():
    spec = load_model_config(DSV3)
    assert spec.kv_bytes_per_token(2.0) == 61 * (512 + 64) * 2  # 70,272 bytes, not 2 × 128 heads
    assert spec.kv_bytes_for_context(1000, 1.0) == 1000 * 61 * (512 + 64)


def test_windowed_layers_hold_at_most_the_window():
    spec = load_model_config(GPT_OSS)
    per_layer_token = 2 * 8 * 64 * 2  # K and V × 8 KV heads × head dim 64 × bf16
    assert spec.kv_bytes_per_token(2.0) == 36 * per_layer_token
    for n in (1, 100, 128, 129, 1000, 100_000):
        assert spec.kv_bytes_for_context(n, 2.0) == per_layer_token * (18 * n + 18 * min(n, 128))
    assert spec.kv_bytes_for_context(1000, 2.0) == 41_582_592


def test_catalog_models_keep_their_kv_bytes():
    for spec in LLM_CATALOG.values():
        full = 2.0 * spec.layers * spec.kv_heads * spec.head_dim * 2.0
        assert spec.kv_bytes_per_token(2.0) == full and spec.kv_bytes_for_context(777, 2.0) == 777 * full


# -- the operator model reads them ------------------------------------------------------------

def test_mla_decode_reads_the_whole_latent_on_every_gpu():
    spec = load_model_config(DSV3)
    model = operator_model(spec.name, "H200", tp=8, dtype="fp8", llms={spec.name: spec})
    bandwidth = model.gpu.memory_tbps * 1e12 * model.memory_efficiency
    assert model.params[8] == pytest.approx(61 * 576 * 1.0 / bandwidth, rel=1e-12)  # not / TP
    # vLLM's budget on one GPU: 90% of nvidia-smi's 143,771 MiB, less this GPU's weights, the
    # profiling pass's activations and the runtime reserve. Activations by hand: 8,192 tokens ×
    # 2 bytes × (2 × hidden 7168 + 3 × widest MLP slice max(8 × 2048 / 8, 18432 / 8) = 2304 + Q/K/V
    # heads (128 + 2 × 128) × 160 / 8 = 7680) = 473,956,352, plus FP32 logits and probabilities for
    # 256 sequences over 129,280 tokens = 264,765,440.
    activation = 8192 * 2 * (2 * 7168 + 3 * 2304 + 7680) + 2 * 4 * 256 * 129_280
    assert activation == 738_721_792
    free = 0.90 * 143_771 * 2**20 - model.weight_bytes / 8 - activation - RUNTIME_RESERVE_GIB * 2**30
    per_token = 61 * 576 * 1.0  # each GPU holds the whole latent (FP8)
    assert model.kv_capacity_tokens == int(free // (per_token * 16)) * 16


def test_windowed_decode_reads_at_most_the_window():
    spec = load_model_config(GPT_OSS)
    model = operator_model(spec.name, "H100", tp=1, dtype="bf16", llms={spec.name: spec})
    bandwidth = model.gpu.memory_tbps * 1e12 * model.memory_efficiency
    per_layer_token = 2 * 8 * 64 * 2
    assert model.params[8] == pytest.approx(18 * per_layer_token / bandwidth, rel=1e-12)  # full layers only
    contexts = [1000, 50]
    read = per_layer_token * (18 * 1050 + 18 * (128 + 50)) / bandwidth
    split = model.operator_seconds(decode_contexts=contexts)
    assert split["attention_decode"] == pytest.approx(max(model.params[7] * 1050, read), rel=1e-12)


def test_mxfp4_experts_take_4_25_bits():
    spec = load_model_config(GPT_OSS)
    model = operator_model(spec.name, "H100", tp=1, dtype="bf16", llms={spec.name: spec})
    routed = spec.experts * spec.expert_params
    assert model.weight_bytes == pytest.approx(routed * 0.53125 + (spec.params - routed) * 2.0, rel=1e-12)
    assert within(model.weight_bytes, 60.8 * 2**30, 0.03)  # the model card's 60.8 GiB checkpoint
    bandwidth = model.gpu.memory_tbps * 1e12 * model.memory_efficiency
    assert model.params[4] == pytest.approx(spec.expert_params * 0.53125 / bandwidth, rel=1e-12)


# -- errors -------------------------------------------------------------------------------------

def test_unknown_model_type_and_missing_key_name_file_and_key(tmp_path):
    data = json.loads(GPT_OSS.read_text())
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**data, "model_type": "rwkv"}))
    with pytest.raises(ModelConfigError, match=r"bad\.json: unknown model_type 'rwkv'"):
        load_model_config(bad)
    del data["hidden_size"]
    bad.write_text(json.dumps(data))
    with pytest.raises(ModelConfigError, match=r"bad\.json: missing required key 'hidden_size'"):
        load_model_config(bad)


# -- a scenario's model from a config.json ------------------------------------------------------

SERVING = {"tp": 1, "max_batch": 64, "probe_requests": 200, "slo": {"ttft_s": 1.0, "tpot_s": 0.1}}


def scenario_with(config: str) -> dict:
    data = base_scenario()
    model = data["models"][0]
    model.pop("capacity_rps")
    model.pop("gpus_per_replica")
    model["demand"].update(input_tokens=512, output_tokens=128)
    model["serving"] = {"model_config": config, **SERVING}
    return data


def test_scenario_derives_capacity_from_a_shipped_config(tmp_path):
    loaded = simulator.load_scenario(scenario_with("data/model_configs/gpt-oss-120b.json"),
                                     base_dir=Path(__file__).parent)
    replica = loaded.models[0].replicas["a"]
    spec = load_model_config(GPT_OSS)
    iteration = operator_model(spec.name, "H100", tp=1, llms={spec.name: spec})
    curve = capacity_curve(iteration, LengthMix.fixed(512, 128), Slo(1.0, 90.0, 0.1, 99.0), 64, requests=200)
    assert replica.derived_on == "H100" and replica.capacity_rps > 0
    assert np.isclose(replica.capacity_rps, round(curve.capacity_rps, 6))
    assert yaml.safe_load(simulator.scenario.dump_scenario(loaded))["models"][0]["serving"]["model_config"] \
        == "data/model_configs/gpt-oss-120b.json"


def test_scenario_with_a_bad_config_exits_2_naming_the_field(tmp_path):
    (tmp_path / "bad.json").write_text(json.dumps({"model_type": "rwkv"}))
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario_with("bad.json")))
    result = CliRunner().invoke(main, ["validate", str(path)])
    message = result.stderr.strip()
    assert result.exit_code == 2 and "\n" not in message and "Traceback" not in message
    assert message.startswith("error: models[0].serving.model_config: ") and "unknown model_type 'rwkv'" in message
    both = scenario_with("bad.json")
    both["models"][0]["serving"]["model"] = "llama-2-7b"
    path.write_text(yaml.safe_dump(both))
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 2 and "exactly one of 'model'" in result.stderr
