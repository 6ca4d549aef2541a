"""A model from its Hugging Face ``config.json``: :func:`load_model_config` → :class:`LlmSpec`.

Families read (by ``model_type``; a multimodal wrapper's ``text_config`` is read in its place):
Llama, Mistral, Qwen2, Qwen3 (dense), Qwen2-MoE, Qwen3-MoE, Mixtral, DeepSeek-V2/V3 (and Kimi-K2,
which uses the DeepSeek-V3 architecture), gpt-oss, GLM-4.5+ (``glm4_moe``), MiniMax-M2 and Llama 4
(``llama4_text``: one shared expert beside the routed ones, MoE every ``interleave_moe_layer_step``
layers with ``intermediate_size_mlp`` dense MLPs between; its chunked local attention is read as
full attention).

What is read: layers, hidden size, attention and KV heads (GQA/MQA), ``head_dim`` (default
hidden / heads), vocabulary, ``tie_word_embeddings``; MLA (``kv_lora_rank``, ``q_lora_rank``,
``qk_nope_head_dim``, ``qk_rope_head_dim``, ``v_head_dim``: the KV cache holds one latent of
``kv_lora_rank + qk_rope_head_dim`` values per token and layer); routed experts
(``n_routed_experts`` / ``num_local_experts`` / ``num_experts``), ``num_experts_per_tok``, their
width (``moe_intermediate_size``, or ``intermediate_size`` for Mixtral, gpt-oss and MiniMax), shared
experts (``n_shared_experts`` × ``moe_intermediate_size``, or ``shared_expert_intermediate_size``),
dense-first layers (``first_k_dense_replace``; Qwen's ``mlp_only_layers``); windowed layers
(``layer_types`` entries ``sliding_attention`` with ``sliding_window``); gpt-oss attention biases
and sinks; ``quantization_config`` with ``quant_method: mxfp4`` (gpt-oss: routed experts stored in
4.25 bits per parameter, 4-bit values plus one 8-bit scale per 32); a compressed-tensors ``ignore``
list naming the language model's ``self_attn`` projections keeps attention 16-bit (``fp8_attention``).

Parameter counts come from the shapes. **Total**: every weight of the main model (embeddings,
attention, MLPs and experts, routers, norms, biases). **Active**: the parameters one token's forward
pass multiplies by: total minus the routed experts it does not use and minus the input embedding (a
table lookup, no FLOPs); the convention of the gpt-oss model card (5.1B active) and of DeepSeek-V3's
(36.6B active, "including 0.9B for the output head"). DeepSeek-V3's multi-token-prediction layer
(``num_nextn_predict_layers``: 14B more) is not counted: its published 671B is the main model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from simulator.serving.iteration import ServingConfigError
from simulator.serving.llm_catalog import LlmSpec

#: Routed experts stored as MXFP4: 4-bit values plus one 8-bit scale per block of 32.
MXFP4_BYTES_PER_PARAM = (4 + 8 / 32) / 8

_DENSE = {"llama", "mistral", "qwen2", "qwen3"}
_MOE = {"mixtral", "qwen2_moe", "qwen3_moe", "gpt_oss", "glm4_moe", "minimax_m2", "minimax", "llama4_text"}
_MLA = {"deepseek_v2", "deepseek_v3", "kimi_k2"}
FAMILIES = tuple(sorted(_DENSE | _MOE | _MLA))


class ModelConfigError(ServingConfigError):
    """A config.json that cannot be read: unknown ``model_type``, or a required key missing."""


class _Config:
    """Key access that names the file and the key when one is missing."""

    def __init__(self, data: Mapping[str, Any], where: str) -> None:
        self.data, self.where = data, where

    def need(self, key: str) -> Any:
        if key not in self.data or self.data[key] is None:
            raise ModelConfigError(f"{self.where}: missing required key {key!r}")
        return self.data[key]

    def get(self, key: str, default: Any = 0) -> Any:
        value = self.data.get(key)
        return default if value is None else value


def load_model_config(source: str | Path | Mapping[str, Any], name: str | None = None) -> LlmSpec:
    """The :class:`LlmSpec` of a Hugging Face ``config.json`` (a path, or its parsed mapping).

    Raises:
        ModelConfigError: the file cannot be read, its ``model_type`` is not a known family, or a
            key the family needs is missing; the message names the file and the key.
    """
    if isinstance(source, Mapping):
        data, where = dict(source), "config"
    else:
        where = str(source)
        try:
            data = json.loads(Path(source).read_text())
        except (OSError, ValueError) as exc:
            raise ModelConfigError(f"{where}: cannot read a JSON config ({exc})") from None
        if not isinstance(data, dict):
            raise ModelConfigError(f"{where}: a config.json holds one JSON object")
    if isinstance(data.get("text_config"), Mapping):  # multimodal wrapper: the language model's config
        outer = data
        data = {**data["text_config"]}
        data.setdefault("tie_word_embeddings", outer.get("tie_word_embeddings"))
        if outer.get("quantization_config") and "quantization_config" not in data:
            data["quantization_config"] = outer["quantization_config"]
        where += ": text_config"
    cfg = _Config(data, where)
    kind = cfg.need("model_type")
    if kind not in FAMILIES:
        raise ModelConfigError(f"{where}: unknown model_type {kind!r}; known: {', '.join(FAMILIES)}")
    label = name or data.get("_name_or_path") or kind
    if not name and not isinstance(source, Mapping):
        path = Path(source)
        label = path.parent.name if path.stem == "config" else path.stem
    return _spec(cfg, kind, str(label), where)


def _spec(cfg: _Config, kind: str, name: str, where: str) -> LlmSpec:
    layers, hidden = int(cfg.need("num_hidden_layers")), int(cfg.need("hidden_size"))
    heads, vocab = int(cfg.need("num_attention_heads")), int(cfg.need("vocab_size"))
    kv_heads = int(cfg.get("num_key_value_heads", heads))
    head_dim = int(cfg.get("head_dim", 0) or hidden // heads)
    tied = bool(cfg.get("tie_word_embeddings", False))
    shape: dict[str, Any] = {"vocab": vocab, "tied_embeddings": tied}
    extra = 2.0 * layers * hidden + hidden  # the two RMSNorms per layer and the final one

    # attention
    if kind in _MLA:
        kv_rank, rope = int(cfg.need("kv_lora_rank")), int(cfg.need("qk_rope_head_dim"))
        nope, v_dim = int(cfg.need("qk_nope_head_dim")), int(cfg.need("v_head_dim"))
        q_rank = int(cfg.get("q_lora_rank", 0))
        q = hidden * q_rank + q_rank * heads * (nope + rope) if q_rank else hidden * heads * (nope + rope)
        per_layer = q + hidden * (kv_rank + rope) + kv_rank * heads * (nope + v_dim) + heads * v_dim * hidden
        shape.update(attention_weights=float(layers * per_layer), kv_lora_rank=kv_rank, qk_rope_head_dim=rope)
        head_dim = (nope + rope + v_dim) // 2  # attention core: 2·heads·(qk dim + v dim) FLOPs per position
        extra += layers * (q_rank + kv_rank)  # the latents' norms
    elif cfg.get("attention_bias", False) or kind in ("qwen2", "qwen2_moe"):
        extra += layers * (heads + 2 * kv_heads) * head_dim  # Q, K, V biases
        if kind == "gpt_oss":
            extra += layers * (hidden + heads)  # O bias and one attention sink per head
    if kind in ("qwen3", "qwen3_moe", "glm4_moe", "minimax_m2") and cfg.get("use_qk_norm", kind != "glm4_moe"):
        extra += layers * 2 * head_dim  # per-head Q and K norms
    types = cfg.get("layer_types", [])
    windowed = sum(1 for t in types if t == "sliding_attention")
    if windowed:
        shape.update(windowed_layers=windowed, sliding_window=int(cfg.need("sliding_window")))

    # MLP and experts
    experts = int(cfg.get("n_routed_experts", 0) or cfg.get("num_local_experts", 0) or cfg.get("num_experts", 0))
    if kind in _DENSE or not experts:
        shape["intermediate"] = int(cfg.need("intermediate_size"))
    else:
        top_k = int(cfg.need("num_experts_per_tok"))
        if kind in ("mixtral", "gpt_oss", "minimax", "minimax_m2", "llama4_text"):
            width = int(cfg.need("intermediate_size"))
        else:
            width = int(cfg.need("moe_intermediate_size"))
        shared = int(cfg.get("shared_expert_intermediate_size", 0)) or int(cfg.get("n_shared_experts", 0)) * width
        dense_first = int(cfg.get("first_k_dense_replace", 0)) + len(cfg.get("mlp_only_layers", []))
        if kind == "llama4_text":  # one shared expert per MoE layer; MoE every `step` layers, dense between
            shared = width
            dense_first = layers - layers // int(cfg.get("interleave_moe_layer_step", 1) or 1)
        shape.update(experts=experts, top_k=top_k, expert_intermediate=width, shared_expert_intermediate=shared,
                     moe_layers=layers - dense_first)
        if dense_first:
            key = "intermediate_size_mlp" if kind == "llama4_text" else "intermediate_size"
            shape["intermediate"] = int(cfg.need(key))
        moe_layers = layers - dense_first
        extra += moe_layers * experts * hidden  # router
        if cfg.get("shared_expert_intermediate_size", 0):
            extra += moe_layers * hidden  # Qwen2-MoE's shared-expert gate
        if kind == "gpt_oss":
            extra += moe_layers * (experts + experts * (2 * width + hidden))  # router and expert biases
    quant = cfg.get("quantization_config", {}) or {}
    if isinstance(quant, Mapping) and quant.get("quant_method") == "mxfp4" and experts:
        shape["expert_bytes_per_param"] = MXFP4_BYTES_PER_PARAM
    ignored = quant.get("ignore", []) if isinstance(quant, Mapping) else []
    if any("self_attn" in str(name) and not str(name).startswith("vision") for name in ignored or []):
        shape["fp8_attention"] = False  # the checkpoint keeps the language model's attention 16-bit
    spec = LlmSpec(name, 0.0, 0.0, layers, hidden, heads, kv_heads, head_dim, f"config.json: {where}", **shape)
    routed = spec.experts * spec.expert_params
    total = spec.attention_params + spec.embedding_params + spec.dense_mlp_params + routed + extra
    unused = (spec.experts - spec.top_k) * spec.expert_params
    active = total - unused - (0.0 if tied else vocab * hidden)
    return LlmSpec(name, total, active, layers, hidden, heads, kv_heads, head_dim, spec.source, **shape)
