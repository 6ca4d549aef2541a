"""Built-in LLM architectures: what the iteration-time models need to know about a model.

Figures are from each model's published configuration (``config.json`` on the model hub:
layers, hidden size, attention and key-value heads, head dimension, MLP width, vocabulary,
experts) and its paper or card (parameter counts). The five architectures of the vLLM H100
calibration runs (``shared/data/vllm_h100_trainval/model_configs``) are derived from those
files; their parameter counts are computed from the shapes.

For a mixture-of-experts model, ``active_params`` is the parameter count used per token (the
shared parts plus ``top_k`` routed experts), which sets the FLOPs; all parameters are held in
memory, but an iteration reads only the experts its tokens activate (see
:mod:`simulator.serving.operators`).

Precision is per tensor class: ``fp8_attention`` says whether an FP8 checkpoint of the model
quantizes the attention projections too (TensorRT-LLM's FP8 does; RedHatAI's FP8-dynamic
Llama-4-Scout keeps attention, router and lm_head in BF16). Embeddings and lm_head always stay
16-bit.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LlmSpec:
    """Architecture of a decoder-only transformer."""

    name: str
    params: float  # total parameters
    active_params: float  # parameters used per token (= params for dense models)
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    source: str
    vocab: int = 0  # 0: unknown (the MLP then takes every parameter not in attention)
    intermediate: int = 0  # dense MLP width (gated: 3 matrices)
    experts: int = 0  # routed experts per MoE layer (0: dense)
    top_k: int = 0
    expert_intermediate: int = 0
    shared_expert_intermediate: int = 0
    fp8_attention: bool = True
    # Architectures read from a config.json (simulator.serving.model_config); the defaults keep
    # every catalog model exactly as it was.
    kv_lora_rank: int = 0  # MLA: the KV cache holds kv_lora_rank + qk_rope_head_dim per token and layer
    qk_rope_head_dim: int = 0
    sliding_window: int = 0  # windowed layers hold (and attention reads) at most this many tokens
    windowed_layers: int = 0
    tied_embeddings: bool = False
    moe_layers: int = 0  # layers with routed experts (0: all layers of a MoE model); the rest are dense
    attention_weights: float = 0.0  # attention projection parameters when not Q/K/V/O of GQA (MLA)
    expert_bytes_per_param: float = 0.0  # checkpoint's expert precision (MXFP4: 0.53125); 0: the dtype's

    def kv_bytes_per_token(self, bytes_per_value: float) -> float:
        """Bytes of KV cache one token holds in every layer (full attention).

        2 (K and V) × layers × KV heads × head dim; with MLA, one latent of
        ``kv_lora_rank + qk_rope_head_dim`` values per layer.
        """
        if self.kv_lora_rank:
            return float(self.layers * (self.kv_lora_rank + self.qk_rope_head_dim)) * bytes_per_value
        return 2.0 * self.layers * self.kv_heads * self.head_dim * bytes_per_value

    def kv_bytes_for_context(self, tokens: int, bytes_per_value: float) -> float:
        """Bytes of KV cache a request of ``tokens`` context tokens holds: full-attention layers
        × tokens + windowed layers × min(tokens, sliding_window)."""
        per_layer = self.kv_bytes_per_token(bytes_per_value) / self.layers
        full = self.layers - self.windowed_layers
        return per_layer * (full * tokens + self.windowed_layers * min(tokens, self.sliding_window))

    @property
    def full_attention_layers(self) -> int:
        return self.layers - self.windowed_layers

    def weight_bytes(self, bytes_per_param: float) -> float:
        if not self.expert_bytes_per_param:
            return self.params * bytes_per_param
        routed = self.experts * self.expert_params
        return (self.params - routed) * bytes_per_param + routed * self.expert_bytes_per_param

    @property
    def attention_params(self) -> float:
        """Q, K, V and O projections over all layers (MLA: its low-rank projections)."""
        if self.attention_weights:
            return self.attention_weights
        return float(self.layers * self.hidden * self.head_dim * (2 * self.heads + 2 * self.kv_heads))

    @property
    def embedding_params(self) -> float:
        """Input embedding and lm_head: 2 × vocabulary × hidden (1 × when tied)."""
        return (1.0 if self.tied_embeddings else 2.0) * self.vocab * self.hidden

    @property
    def routed_layers(self) -> int:
        return (self.moe_layers or self.layers) if self.experts else 0

    @property
    def expert_params(self) -> float:
        """One routed expert's parameters summed over all layers (gated MLP: 3 matrices)."""
        return 3.0 * self.hidden * self.expert_intermediate * self.routed_layers if self.experts else 0.0

    @property
    def dense_mlp_params(self) -> float:
        """MLP parameters every token uses: the dense MLP, or a MoE model's shared expert (and its
        dense layers' MLPs)."""
        if self.experts:
            dense_layers = self.layers - self.routed_layers
            return 3.0 * self.hidden * (self.shared_expert_intermediate * self.routed_layers
                                        + self.intermediate * dense_layers)
        if self.intermediate:
            return 3.0 * self.hidden * self.intermediate * self.layers
        return max(self.params - self.attention_params - self.embedding_params, 0.0)


def _spec(name: str, params: float, layers: int, hidden: int, heads: int, kv_heads: int,
          head_dim: int = 128, active: float | None = None, source: str = "", **shape) -> LlmSpec:
    return LlmSpec(name, params, active or params, layers, hidden, heads, kv_heads, head_dim, source, **shape)


def _from_shapes(name: str, layers: int, hidden: int, heads: int, kv_heads: int, vocab: int,
                 intermediate: int = 0, head_dim: int = 128, experts: int = 0, top_k: int = 0,
                 expert_intermediate: int = 0, shared_expert_intermediate: int = 0,
                 fp8_attention: bool = True, source: str = "") -> LlmSpec:
    """A spec whose parameter counts are computed from its config.json shapes."""
    spec = LlmSpec(name, 0.0, 0.0, layers, hidden, heads, kv_heads, head_dim, source, vocab, intermediate,
                   experts, top_k, expert_intermediate, shared_expert_intermediate, fp8_attention)
    router = float(layers * hidden * experts)
    shared = spec.attention_params + spec.embedding_params + spec.dense_mlp_params + router
    total = shared + experts * spec.expert_params
    active = shared + top_k * spec.expert_params
    return LlmSpec(name, total, active, layers, hidden, heads, kv_heads, head_dim, source, vocab, intermediate,
                   experts, top_k, expert_intermediate, shared_expert_intermediate, fp8_attention)


_CALIBRATION = "config.json in shared/data/vllm_h100_trainval/model_configs (from inference-sim/inference-sim)"

LLM_CATALOG: dict[str, LlmSpec] = {
    spec.name: spec
    for spec in (
        _spec("llama-2-7b", 6.74e9, 32, 4096, 32, 32, vocab=32000, intermediate=11008,
              source="meta-llama/Llama-2-7b-hf config; Touvron et al. 2023"),
        _spec("llama-2-13b", 13.0e9, 40, 5120, 40, 40, vocab=32000, intermediate=13824,
              source="meta-llama/Llama-2-13b-hf config; Touvron et al. 2023"),
        _spec("llama-2-70b", 69.0e9, 80, 8192, 64, 8, vocab=32000, intermediate=28672,
              source="meta-llama/Llama-2-70b-hf config; Touvron et al. 2023"),
        _spec("llama-3.1-8b", 8.03e9, 32, 4096, 32, 8, vocab=128256, intermediate=14336,
              source="meta-llama/Llama-3.1-8B config; Llama 3 herd paper 2024"),
        _spec("llama-3.1-70b", 70.6e9, 80, 8192, 64, 8, vocab=128256, intermediate=28672,
              source="meta-llama/Llama-3.1-70B config; Llama 3 herd paper 2024"),
        _spec("llama-3.1-405b", 405.9e9, 126, 16384, 128, 8, vocab=128256, intermediate=53248,
              source="meta-llama/Llama-3.1-405B config; Llama 3 herd paper 2024"),
        _spec("mixtral-8x7b", 46.7e9, 32, 4096, 32, 8, active=12.9e9, vocab=32000, experts=8, top_k=2,
              expert_intermediate=14336, source="mistralai/Mixtral-8x7B-v0.1 config; Jiang et al. 2024"),
        _spec("mistral-7b", 7.24e9, 32, 4096, 32, 8, vocab=32000, intermediate=14336,
              source="mistralai/Mistral-7B-v0.1 config; Jiang et al. 2023"),
        _spec("qwen2.5-72b", 72.7e9, 80, 8192, 64, 8, vocab=152064, intermediate=29568,
              source="Qwen/Qwen2.5-72B config; Qwen2.5 report 2024"),
        _from_shapes("llama-4-scout-17b-16e", 48, 5120, 40, 8, 202048, experts=16, top_k=1,
                     expert_intermediate=8192, shared_expert_intermediate=8192, fp8_attention=False,
                     source="RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic text_config; " + _CALIBRATION),
        _from_shapes("mistral-nemo-2407", 40, 5120, 32, 8, 131072, 14336,
                     source="mistralai/Mistral-Nemo-Instruct-2407; " + _CALIBRATION),
        _from_shapes("qwen2.5-7b", 28, 3584, 28, 4, 152064, 18944,
                     source="Qwen/Qwen2.5-7B-Instruct; " + _CALIBRATION),
        _from_shapes("yi-34b", 60, 7168, 56, 8, 64000, 20480, source="01-ai/Yi-34B; " + _CALIBRATION),
    )
}


def find_llm(name: str, extra: dict[str, LlmSpec] | None = None) -> LlmSpec | None:
    """A model by name, case-insensitively, from ``extra`` then the built-in catalog."""
    folded = name.strip().casefold()
    for table in (extra or {}, LLM_CATALOG):
        for key, spec in table.items():
            if key.casefold() == folded:
                return spec
    return None
