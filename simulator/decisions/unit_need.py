"""A model's need when its replica is a disaggregated unit across two pools.

The planner counts a model's need in GPUs of its first-choice replica. A unit across two pools
(:mod:`simulator.scenario.serving_features`) needs GPUs of both: its need is split in the unit's
proportions, the listed pool's share covered by the pools the model lists, the rest by the unit's
other pool (:func:`~simulator.decisions.order_schedule.cheapest_schedule`), and what stays uncovered
is added back per model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from simulator.path.compiled import CompiledScenario


def unit_companions(compiled: CompiledScenario) -> dict[int, tuple[float, str]]:
    """Per model whose first-choice replica is a disaggregated unit across two pools: the share of
    its need (counted in the unit's GPUs, both sides) that is GPUs of its listed pool, and the
    unit's other pool (:func:`~simulator.decisions.order_schedule.cheapest_schedule`)."""
    out = {}
    for m in range(len(compiled.model_names)):
        pool, gpus = int(compiled.companion[m, 0, 0]), int(compiled.companion[m, 0, 1])
        if pool >= 0:
            listed = int(compiled.gpus_per_replica[m, 0])
            out[m] = (listed / (listed + gpus), compiled.pool_names[pool])
    return out


def split_for_companions(need: np.ndarray, candidates: list,
                         companions: dict[int, tuple[float, str]]) -> tuple[np.ndarray, np.ndarray]:
    """The need with a row more per model whose unit spans two pools (its companion side), and each
    candidate's ``eff`` over those rows: 1 for the companion pool's own GPUs, else 0 (``candidates``:
    the planner's :class:`~simulator.decisions.order_schedule.Candidate` list)."""
    eff = np.array([c.eff for c in candidates], dtype=np.float64).reshape(len(candidates), need.shape[0])
    if not companions:
        return need, eff
    need = need.astype(np.float64).copy()
    extra_need, extra_eff = [], []
    for m, (share, pool) in sorted(companions.items()):
        extra_need.append(need[m] * (1.0 - share))
        need[m] = need[m] * share
        extra_eff.append([1.0 if c.pool == pool else 0.0 for c in candidates])
    return np.vstack([need, *extra_need]), np.hstack([eff, np.array(extra_eff).T])


def fold_companions(uncovered: np.ndarray, n_given: int, companions: dict[int, tuple[float, str]]) -> np.ndarray:
    """The need left uncovered per model again: a unit's companion row added back to its model."""
    folded = uncovered[:n_given].copy()
    for row, m in enumerate(sorted(companions)):
        folded[m] += uncovered[n_given + row]
    return folded
