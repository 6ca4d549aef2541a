"""Which steps of a path run short, by the scenario's definition of a material shortfall.

See :class:`simulator.scenario.shortfall.Shortfall`: a step is short when some model leaves
more than ``min_unserved_share`` of its demand unserved, or (when set) serves fewer than
``min_slo_attainment`` of its requests within its SLO; a run of consecutive short steps
counts only when it lasts ``min_duration`` (one step at least).
"""

from __future__ import annotations

import math

import numpy as np

from simulator.path import kernels as K
from simulator.scenario.shortfall import Shortfall


def short_steps(model_out: np.ndarray, settings: Shortfall, step_s: float) -> np.ndarray:
    """Boolean per step from a path's model array ``(steps, models, columns)``."""
    demand = model_out[:, :, K.MODEL_DEMAND]
    unserved = model_out[:, :, K.MODEL_UNSERVED]
    short = unserved > settings.min_unserved_share * demand
    if settings.min_slo_attainment is not None:
        short |= model_out[:, :, K.MODEL_SLO_MET] < settings.min_slo_attainment * demand
    short &= demand > 0
    return episodes_at_least(short.any(axis=1), max(1, math.ceil(settings.min_duration / step_s - 1e-9)))


def episodes_at_least(short: np.ndarray, min_steps: int) -> np.ndarray:
    """``short`` with every run of consecutive True shorter than ``min_steps`` cleared."""
    if min_steps <= 1 or not short.any():
        return short
    edges = np.diff(np.concatenate(([0], short.astype(np.int8), [0])))
    starts, stops = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    keep = np.zeros(len(short) + 1, dtype=np.int64)
    for start, stop in zip(starts, stops, strict=True):
        if stop - start >= min_steps:
            keep[start] += 1
            keep[stop] -= 1
    return np.cumsum(keep[:-1]) > 0
