"""Models that published serving measurements use and Fleetcast's catalog does not ship.

OPT (Zhang et al. 2022, arXiv 2205.01068; facebook/opt-13b and facebook/opt-66b config.json) and
BLOOM-176B (Le Scao et al. 2022; bigscience/bloom config.json) as
:class:`~simulator.serving.llm_catalog.LlmSpec`, for the benchmarks that rebuild DistServe and
Splitwise and for the A100 fit (``fit_ampere.py``).

Both use plain two-matrix MLPs, OPT's of width ``ffn`` and BLOOM's of width 4 × hidden.
``LlmSpec.intermediate`` is read as a *gated* MLP width (three matrices of hidden × intermediate),
so OPT's spec takes ``intermediate = ffn × 2 / 3``, which gives exactly its ``2 × hidden × ffn``
MLP weights per layer; Fleetcast's activation-memory estimate counts ``3 × intermediate / tp``
values per token, which is then OPT's fc1 output plus its activation. BLOOM's MLP is added to the
parameter count directly (its spec keeps no gated width).
"""

from __future__ import annotations

from simulator.serving.llm_catalog import LlmSpec

OPT_VOCAB, OPT_POSITIONS = 50272, 2050  # 2,048 positions + OPT's offset of 2
OPT_SHAPES = {  # layers, hidden, heads, FFN width
    "opt-13b": (40, 5120, 40, 20480),
    "opt-66b": (64, 9216, 72, 36864),
}


def opt(name: str) -> LlmSpec:
    """OPT-13B or OPT-66B from its published config (module docstring)."""
    layers, hidden, heads, ffn = OPT_SHAPES[name]
    head_dim = hidden // heads
    shape = dict(vocab=OPT_VOCAB, intermediate=ffn * 2 // 3, tied_embeddings=True)
    bare = LlmSpec(name, 0.0, 0.0, layers, hidden, heads, heads, head_dim, "", **shape)
    small = 4 * hidden + ffn + hidden + 2 * 2 * hidden  # per layer: QKV/O, fc1, fc2 biases; two layer norms
    total = (bare.attention_params + bare.dense_mlp_params + bare.embedding_params
             + OPT_POSITIONS * hidden + layers * small + 2 * hidden)
    source = (f"facebook/{name} config.json ({layers} layers, hidden {hidden}, {heads} heads, FFN {ffn}, vocab "
              f"{OPT_VOCAB}); Zhang et al. 2022, arXiv 2205.01068; 2-matrix MLP as a 2/3-width gated equivalent")
    return LlmSpec(name, total, total, layers, hidden, heads, heads, head_dim, source, **shape)


def opt_66b() -> LlmSpec:
    return opt("opt-66b")


def bloom_176b() -> LlmSpec:
    """BLOOM-176B from its published shapes (bigscience/bloom config.json; Le Scao et al. 2022)."""
    layers, hidden, heads, head_dim, vocab = 70, 14336, 112, 128, 250880
    shape = LlmSpec("bloom-176b", 0.0, 0.0, layers, hidden, heads, heads, head_dim, "", vocab=vocab,
                    tied_embeddings=True)
    mlp = 2.0 * hidden * 4 * hidden * layers  # two non-gated projections of width 4 x hidden
    params = shape.attention_params + shape.embedding_params + mlp
    return LlmSpec("bloom-176b", params, params, layers, hidden, heads, heads, head_dim,
                   "bigscience/bloom config.json (70 layers, hidden 14336, 112 heads, vocab 250880, "
                   "tied embeddings, 4x non-gated MLP); Le Scao et al. 2022", vocab=vocab, tied_embeddings=True)


PAPER_MODELS = {"opt-13b": lambda: opt("opt-13b"), "opt-66b": opt_66b, "bloom-176b": bloom_176b}
