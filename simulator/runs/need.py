"""How many more GPUs each model needed, slot by slot, for one path to have no material shortfall.

A step where a model leaves more than ``min_unserved_share`` of its demand unserved needs the
GPUs of its missing replicas (``MODEL_SHORTFALL_GPUS``, counted in the shape of the model's
first-choice pool). A shortfall counts only in an episode lasting ``min_duration`` (k steps),
so for one model what must be added is the morphological opening of that series: the largest
number that stays missing over k consecutive steps, for every step such a window covers.
Adding it clears every episode that model makes material on its own. An episode material only
because several models are short one after another (the definition counts a step short when
any model is) needs every GPU missing in it. The planner reads the need per *slot*: a
calendar day (UTC) of step starts, so a slot never straddles a day or a month, the largest over
the slot's steps.

Steps short only on latency (``min_slo_attainment``) have no missing replicas to count: the
planner's confirmation by simulation sees them.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import pandas as pd

from simulator.path import kernels as K
from simulator.runs.shortfall import short_steps
from simulator.scenario.horizon import Horizon
from simulator.scenario.shortfall import Shortfall


@lru_cache(maxsize=16)
def _firsts(start: pd.Timestamp, n_steps: int, step_s: float) -> np.ndarray:
    days = (pd.DatetimeIndex(start + pd.to_timedelta(np.arange(n_steps) * step_s, unit="s"))
            .normalize().asi8)
    return np.flatnonzero(np.concatenate(([True], days[1:] != days[:-1]))) if n_steps else np.zeros(0, np.int64)


def slot_firsts(horizon: Horizon) -> np.ndarray:
    """Index of the first step of each slot: each calendar day (UTC) the steps start in."""
    return _firsts(horizon.start, horizon.n_steps, horizon.step_s)


def path_need(model_out: np.ndarray, settings: Shortfall, horizon: Horizon) -> np.ndarray:
    """``(models, slots)`` float32: the GPUs each model lacked in each slot (0: none)."""
    step_s = horizon.step_s
    demand = model_out[:, :, K.MODEL_DEMAND]
    unserved = model_out[:, :, K.MODEL_UNSERVED]
    short = (unserved > settings.min_unserved_share * demand) & (demand > 0)
    missing = np.where(short, model_out[:, :, K.MODEL_SHORTFALL_GPUS], 0.0).T  # (models, steps)
    k = max(1, math.ceil(settings.min_duration / step_s - 1e-9))
    if k > 1:
        alone = opening(missing, k)
        together = short_steps(model_out, settings, step_s) & (alone.sum(axis=0) == 0)
        missing = np.where(together[None, :], missing, alone)
    firsts = slot_firsts(horizon)
    if not missing.shape[1]:
        return np.zeros((missing.shape[0], 0), dtype=np.float32)
    return np.maximum.reduceat(missing, firsts, axis=1).astype(np.float32)


def opening(series: np.ndarray, k: int) -> np.ndarray:
    """Per row: at each step, the largest over the k-step windows covering it of the window's
    smallest value (0 where no whole window covers the step)."""
    n = series.shape[1]
    if n < k:
        return np.zeros_like(series)
    windows = np.lib.stride_tricks.sliding_window_view(series, k, axis=1).min(axis=2)  # (rows, n - k + 1)
    padded = np.concatenate([np.zeros((series.shape[0], k - 1)), windows, np.zeros((series.shape[0], k - 1))],
                            axis=1)
    return np.lib.stride_tricks.sliding_window_view(padded, k, axis=1).max(axis=2)[:, :n]


__all__ = ["opening", "path_need", "slot_firsts"]
