"""Inputs that move together: shared draws and rank correlations (a Gaussian copula).

Every uncertain input is drawn through a standard normal score ``z`` of its own: the value
is the input distribution's quantile at ``Φ(z)`` (for a lognormal, ``median · exp(σ z)``).
Two ways to tie inputs:

- **one draw for several fields**: give their distributions the same ``draw: NAME``. They
  share one ``z``, so each takes the same quantile of its own distribution (the P80 path of
  one is the P80 path of the other): a depreciation life of two pools, growth of one market.
- **a rank correlation**: ``correlations: [{inputs: [A, B], rank: 0.6}]``, where A and B
  name a field path or a draw. The normal scores are mixed by the Cholesky factor of the
  matrix of Pearson correlations ``r = 2 sin(π ρ / 6)``, which gives the Spearman rank
  correlation ``ρ`` between the inputs whatever their marginal distributions (Kruskal 1958).
  The matrix must be positive semi-definite: three inputs cannot be pairwise correlated at
  any values one likes.

Each input key (a field path, or ``draw:NAME``) draws its score from a stream of its own, so
adding, removing or fixing one input leaves every other input's draws where they were. Only
inputs named in a correlation are mixed; an override that fixes one of those keeps its key in
the scenario's ``fixed_inputs``, whose score is still drawn and mixed (and not used), so its
partners keep their draws too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Annotated

import numpy as np
from pydantic import Field, field_validator

from simulator.scenario.errors import ScenarioError
from simulator.scenario.types import Frozen


class Correlation(Frozen):
    """A rank (Spearman) correlation between two uncertain inputs."""

    inputs: Annotated[list[str], Field(min_length=2, max_length=2,
                                       description="Two field paths or draw names")]
    rank: Annotated[float, Field(ge=-1.0, le=1.0, description="Spearman rank correlation")]

    @field_validator("inputs")
    @classmethod
    def _distinct(cls, value: list[str]) -> list[str]:
        if value[0] == value[1]:
            raise ValueError(f"names {value[0]!r} twice; an input is fully correlated with itself")
        return value


def input_key(field: str, draw: str | None) -> str:
    """The stream key of an input: its shared draw's, else its own field path's."""
    return f"draw:{draw}" if draw else field


def pearson_of_rank(rank: float) -> float:
    """The normal-copula correlation whose Spearman rank correlation is ``rank``."""
    return 2.0 * math.sin(math.pi * rank / 6.0)


def copula_factor(correlations: Sequence[Correlation], keys: Mapping[str, str]
                  ) -> tuple[list[str], np.ndarray] | None:
    """The keys a copula mixes and the factor ``L`` with ``L Lᵀ`` their correlation matrix.

    ``keys`` maps every name a correlation may use (field paths and draw names) to its input
    key. Raises :class:`ScenarioError` for an unknown name, a pair given twice, or a matrix
    that is not positive semi-definite.
    """
    if not correlations:
        return None
    pairs: dict[tuple[str, str], float] = {}
    for index, entry in enumerate(correlations):
        named = []
        for slot, name in enumerate(entry.inputs):
            if name not in keys:
                known = ", ".join(sorted(keys)) or "none"
                raise ScenarioError(("correlations", index, "inputs", slot),
                                    f"{name!r} is not an uncertain input or a draw name; known: {known}")
            named.append(keys[name])
        if named[0] == named[1]:
            raise ScenarioError(("correlations", index, "inputs"),
                                f"{entry.inputs[0]!r} and {entry.inputs[1]!r} share one draw already")
        pair = (min(named), max(named))
        if pair in pairs:
            raise ScenarioError(("correlations", index, "inputs"), "this pair is correlated twice")
        pairs[pair] = pearson_of_rank(entry.rank)
    order = sorted({key for pair in pairs for key in pair})
    where = {key: i for i, key in enumerate(order)}
    matrix = np.eye(len(order))
    for (a, b), r in pairs.items():
        matrix[where[a], where[b]] = matrix[where[b], where[a]] = r
    eigen = np.linalg.eigvalsh(matrix)
    if eigen[0] < -1e-9:
        raise ScenarioError(("correlations",), "these rank correlations cannot hold together (the matrix is not "
                            f"positive semi-definite: smallest eigenvalue {eigen[0]:.3f}); weaken some of them")
    try:
        factor = np.linalg.cholesky(matrix)
    except np.linalg.LinAlgError:  # semi-definite: a symmetric square root instead
        values, vectors = np.linalg.eigh(matrix)
        factor = vectors * np.sqrt(np.clip(values, 0.0, None))
    return order, factor


def mix(scores: dict[str, float], factor: tuple[list[str], np.ndarray] | None) -> dict[str, float]:
    """The normal scores after the copula mixes the correlated keys (others unchanged)."""
    if factor is None:
        return scores
    order, matrix = factor
    mixed = matrix @ np.array([scores[key] for key in order])
    return {**scores, **dict(zip(order, (float(v) for v in mixed), strict=True))}
