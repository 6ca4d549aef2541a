"""Speculative decoding: draft tokens proposed cheaply, verified by the target model in one pass.

Each step a decoding sequence proposes ``k`` draft tokens and the target verifies them with its
last sampled token in one pass over ``k + 1`` tokens. The drafts are accepted up to the first
rejection; the step emits the accepted drafts and one token of the target's own (the correction
at the first rejection, or the bonus token when all ``k`` are accepted). With ``a`` the drafts
accepted, a step emits ``a + 1`` tokens.

Acceptance is given either per position, as the probability that draft ``j`` is accepted given
drafts ``1 … j − 1`` were (one number: the same at every position), or as the distribution of
``a`` over ``0 … k``. With one rate ``α`` at every position, ``P(a ≥ j) = α^j`` and the expected
tokens per step are ``Σ_{j=0..k} α^j = (1 − α^(k+1)) / (1 − α)`` (Leviathan et al. 2023, eq. 1).

A step costs the target's pass over ``k + 1`` tokens per sequence (they read the sequence's KV
once: at small batch the pass costs about what one token's does, which is where the speed-up
comes from; as the batch grows the pass turns compute-bound and the speed-up falls toward
``tokens per step / (k + 1)`` of the compute-bound rate) plus ``k`` passes of the draft:

* ``eagle`` / ``mtp``: a draft head of about one decoder layer and the LM head (EAGLE; DeepSeek-V3's
  multi-token-prediction module): the target's iteration cost scaled by the share of its
  per-token weights one layer and the LM head hold (``draft_share`` overrides it);
* ``ngram``: prompt lookup, free on the GPU;
* ``draft_model``: a smaller model of the catalog (``draft_model``) on the same GPUs and layout.

Acceptance draws come from the Generator passed in, one per request and step, laid out per
request so a request's acceptances do not depend on what it is batched with.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulator.serving.batching import KIND_LINEAR, KIND_OPERATOR, KIND_ROOFLINE

METHODS = ("eagle", "mtp", "ngram", "draft_model")
# Time terms of each iteration-model kind's parameter vector (the rest are counts).
_TIME_TERMS = {KIND_LINEAR: (1, 2), KIND_ROOFLINE: (1, 2, 3, 4, 5, 6, 7), KIND_OPERATOR: (1, 2, 3, 4, 7, 8, 9, 10)}


@dataclass(frozen=True)
class SpeculativeDecoding:
    """Speculative decoding with ``k`` draft tokens per step (module docstring)."""

    k: int
    acceptance: float | tuple[float, ...] = 0.7
    distribution: tuple[float, ...] | None = None
    method: str = "eagle"
    draft_model: str | None = None
    draft_share: float | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.k <= 32:
            raise ValueError(f"speculative k must be between 1 and 32 draft tokens, got {self.k}")
        if self.method not in METHODS:
            raise ValueError(f"speculative method must be one of {', '.join(METHODS)}, got {self.method!r}")
        if (self.method == "draft_model") != (self.draft_model is not None):
            raise ValueError("give draft_model exactly when the method is draft_model")
        if self.draft_share is not None and not 0 <= self.draft_share <= 1:
            raise ValueError(f"draft_share must be in [0, 1], got {self.draft_share}")
        if self.distribution is not None:
            p = np.asarray(self.distribution, dtype=float)
            if len(p) != self.k + 1 or (p < 0).any() or not np.isclose(p.sum(), 1.0, atol=1e-6):
                raise ValueError(f"the accepted-drafts distribution needs k + 1 = {self.k + 1} probabilities "
                                 f"of 0 … {self.k} accepted, summing to 1")
            return
        rates = self.acceptance if isinstance(self.acceptance, tuple) else (self.acceptance,)
        if not rates or any(not 0 <= a <= 1 for a in rates):
            raise ValueError("acceptance rates must be in [0, 1]")
        if len(rates) > 1 and len(rates) != self.k:
            raise ValueError(f"give one acceptance rate, or one per draft position ({self.k}), not {len(rates)}")

    def accepted_distribution(self) -> np.ndarray:
        """``P(a = j)`` for ``j = 0 … k`` drafts accepted in a step."""
        if self.distribution is not None:
            p = np.asarray(self.distribution, dtype=float)
            return p / p.sum()
        rates = self.acceptance if isinstance(self.acceptance, tuple) else (self.acceptance,) * self.k
        at_least = np.concatenate([[1.0], np.cumprod(rates)])  # P(a ≥ j), j = 0 … k
        return at_least - np.concatenate([at_least[1:], [0.0]])

    @property
    def tokens_per_step(self) -> float:
        """Expected tokens a step emits: ``1 + E[a]`` (``(1 − α^(k+1)) / (1 − α)`` at one rate α)."""
        return float(np.dot(np.arange(self.k + 1) + 1, self.accepted_distribution()))

    def draws(self, output_tokens: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Drafts accepted per (request, step), laid out per request: ``(accepted, draw_start)``.

        A request of ``O`` output tokens takes at most ``O − 1`` steps after its first token.
        """
        output = np.asarray(output_tokens, dtype=np.int64)
        steps = np.maximum(output - 1, 0)
        start = np.zeros(len(output), dtype=np.int64)
        if len(output):
            start[1:] = np.cumsum(steps)[:-1]
        total = max(int(steps.sum()), 1)
        # Inverse CDF: a ≥ j + 1 exactly when u ≥ P(a ≤ j).
        cdf = np.cumsum(self.accepted_distribution())[:-1]
        u = rng.random(total)
        accepted = np.zeros(total, dtype=np.int64)
        for bound in cdf:
            accepted += u >= bound
        return accepted, start

    def draft_params(self, target, draft=None) -> np.ndarray:
        """The parameter vector of one draft pass: free (``ngram``), the draft model's own
        (``draft``, an iteration model), or the target's time terms scaled by the draft share."""
        if self.method == "ngram":
            return np.zeros(3)
        if self.method == "draft_model":
            if draft is None:
                raise ValueError("a draft_model needs its iteration model")
            return np.asarray(draft.params, dtype=np.float64)
        params = np.array(target.params, dtype=np.float64)
        share = self.draft_share if self.draft_share is not None else draft_head_share(getattr(target, "llm", None))
        for index in _TIME_TERMS[float(params[0])]:
            params[index] *= share
        return params


def draft_head_share(llm) -> float:
    """Share of a target's per-token weights that a one-layer draft head with the LM head holds
    (EAGLE, MTP): ``(active parameters / layers + vocabulary × hidden) / active parameters``.
    Without an architecture: 1/32 (one layer of a 32-layer model)."""
    if llm is None:
        return 1.0 / 32.0
    head = llm.vocab * llm.hidden
    return min(1.0, (llm.active_params / llm.layers + head) / llm.active_params)
