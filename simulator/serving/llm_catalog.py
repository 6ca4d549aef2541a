"""Built-in LLM architectures: what the roofline needs to know about a model.

Figures are from each model's published configuration (``config.json`` on the model hub:
layers, hidden size, attention and key-value heads, head dimension, vocabulary) and its
paper or card (parameter counts). For a mixture-of-experts model, ``active_params`` is the
parameter count used per token (two of eight experts for Mixtral), which sets the FLOPs;
all parameters are held in memory and, at the batch sizes served, read every iteration.
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

    def kv_bytes_per_token(self, bytes_per_value: float) -> float:
        """Bytes of KV cache one token holds: 2 (K and V) × layers × KV heads × head dim."""
        return 2.0 * self.layers * self.kv_heads * self.head_dim * bytes_per_value

    def weight_bytes(self, bytes_per_param: float) -> float:
        return self.params * bytes_per_param


def _spec(name: str, params: float, layers: int, hidden: int, heads: int, kv_heads: int,
          head_dim: int = 128, active: float | None = None, source: str = "") -> LlmSpec:
    return LlmSpec(name, params, active or params, layers, hidden, heads, kv_heads, head_dim, source)


LLM_CATALOG: dict[str, LlmSpec] = {
    spec.name: spec
    for spec in (
        _spec("llama-2-7b", 6.74e9, 32, 4096, 32, 32, source="meta-llama/Llama-2-7b-hf config; Touvron et al. 2023"),
        _spec("llama-2-13b", 13.0e9, 40, 5120, 40, 40, source="meta-llama/Llama-2-13b-hf config; Touvron et al. 2023"),
        _spec("llama-2-70b", 69.0e9, 80, 8192, 64, 8, source="meta-llama/Llama-2-70b-hf config; Touvron et al. 2023"),
        _spec("llama-3.1-8b", 8.03e9, 32, 4096, 32, 8, source="meta-llama/Llama-3.1-8B config; Llama 3 herd paper 2024"),
        _spec("llama-3.1-70b", 70.6e9, 80, 8192, 64, 8, source="meta-llama/Llama-3.1-70B config; Llama 3 herd paper 2024"),
        _spec("llama-3.1-405b", 405.9e9, 126, 16384, 128, 8, source="meta-llama/Llama-3.1-405B config; Llama 3 herd paper 2024"),
        _spec("mixtral-8x7b", 46.7e9, 32, 4096, 32, 8, active=12.9e9, source="mistralai/Mixtral-8x7B-v0.1 config; Jiang et al. 2024"),
        _spec("mistral-7b", 7.24e9, 32, 4096, 32, 8, source="mistralai/Mistral-7B-v0.1 config; Jiang et al. 2023"),
        _spec("qwen2.5-72b", 72.7e9, 80, 8192, 64, 8, source="Qwen/Qwen2.5-72B config; Qwen2.5 report 2024"),
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
