"""Latency and service per served model: never pooled across models by request count.

Pooled over models, SLO attainment is weighted by requests, so a high-volume small model
hides a low-volume large model's misses. So each model gets its own figures:

- per path, over the horizon: ``slo_attainment`` = requests served within the SLO ÷ requests
  served (the external API's included), and ``unserved_share`` = requests unserved ÷ demand;
  ``summary.json`` gives their P10/P50/P90 over paths under ``models`` (a path that served
  none of the model's requests has no attainment, one with no demand no unserved share:
  each is left out of that quantile, and ``paths_served`` says how many paths it covers),
  and each pooled over every path (``slo_attainment_pooled``: Σ within the SLO ÷ Σ served;
  ``unserved_share_pooled``: Σ unserved ÷ Σ demand);
- per step, the same two ratios (1 where nothing was served, 0 where nothing was asked),
  whose per-step quantiles over every path are ``model_bands.parquet``: one row per (step,
  model, metric), ``time, model, metric, mean, p5, p10, p50, p90, p95``.

Each path's worker reduces its model array to both (:func:`path_model_sums`,
:func:`path_model_series`), so the figures cover every path whether or not its tables are
kept; the series go into a band store of their own (:class:`~simulator.runs.bands.BandStore`,
with these columns), beside the run's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from simulator.path import kernels as K
from simulator.runs.bands import BandStore, combined_bands
from simulator.runs.summary import _quantiles

#: Per-step ratios of each model, in this order per model in a path's series.
MODEL_METRICS = ("slo_attainment", "unserved_share")
#: A path's sums per model, in this order: demand, served, unserved, served within the SLO.
_SUMS = (K.MODEL_DEMAND, K.MODEL_SERVED, K.MODEL_UNSERVED, K.MODEL_SLO_MET)


def path_model_sums(model_out: np.ndarray) -> np.ndarray:
    """A path's requests per model over the horizon from its ``(steps, models, columns)``
    array: ``(models, 4)``, demand, served, unserved and served within the SLO."""
    return np.stack([model_out[:, :, column].sum(axis=0) for column in _SUMS], axis=1).astype(np.float64)


def _ratio(numerator: np.ndarray, denominator: np.ndarray, empty: float) -> np.ndarray:
    out = np.full(np.shape(numerator), empty, dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=np.asarray(denominator) > 0)
    return out


def path_model_series(model_out: np.ndarray) -> np.ndarray:
    """A path's per-step ratios of every model: float32, ``(models × 2, steps)``, each
    model's :data:`MODEL_METRICS` in turn."""
    served = model_out[:, :, K.MODEL_SERVED]
    attainment = np.minimum(_ratio(model_out[:, :, K.MODEL_SLO_MET], served, 1.0), 1.0)
    unserved = _ratio(model_out[:, :, K.MODEL_UNSERVED], model_out[:, :, K.MODEL_DEMAND], 0.0)
    return np.stack([attainment.T, unserved.T], axis=1).reshape(-1, model_out.shape[0]).astype(np.float32)


def band_columns(names: Sequence[str]) -> list[str]:
    """The band store's column labels: one per (model, metric), by model index (names may
    hold any character, so they are mapped back by position, never parsed)."""
    return [f"{m}:{metric}" for m in range(len(names)) for metric in MODEL_METRICS]


def model_store(names: Sequence[str], n_paths: int, n_steps: int, spill_dir: str | None) -> BandStore | None:
    """A band store for the models' series (None for a scenario that serves no model)."""
    if not names:
        return None
    return BandStore(n_paths, n_steps, spill_dir=spill_dir, columns=band_columns(names))


def model_bands(stores: list[BandStore], times: pd.DatetimeIndex, names: Sequence[str]) -> pd.DataFrame:
    """The per-step quantiles over paths of every model's ratios: one row per (step, model,
    metric), ``time, model, metric, mean, p5, p10, p50, p90, p95``."""
    if not names or not stores:
        return pd.DataFrame()
    frame = combined_bands(stores, times)
    codes = frame["metric"].cat.codes.to_numpy()
    model = pd.Categorical.from_codes(codes // len(MODEL_METRICS), categories=list(names))
    metric = pd.Categorical.from_codes(codes % len(MODEL_METRICS), categories=list(MODEL_METRICS))
    return pd.concat([frame[["time"]], pd.DataFrame({"model": model, "metric": metric}),
                      frame.drop(columns=["time", "metric"])], axis=1)


def model_summary(names: Sequence[str], sums: dict[int, np.ndarray]) -> dict[str, Any]:
    """``summary.json``'s ``models``: per model, P10/P50/P90 over paths of its SLO attainment
    (of the requests served) and unserved share (of demand); ``sums`` maps each path to its
    :func:`path_model_sums`."""
    if not names or not sums:
        return {}
    stacked = np.stack([sums[path] for path in sorted(sums)])  # (paths, models, 4)
    demand, served, unserved, within = (stacked[:, :, i] for i in range(4))
    with np.errstate(all="ignore"):
        attainment = np.where(served > 0, np.minimum(within / served, 1.0), np.nan)
        share = np.where(demand > 0, unserved / demand, np.nan)
    totals = stacked.sum(axis=0)  # (models, 4): every path's requests
    return {name: {"slo_attainment": _quantiles(pd.Series(attainment[:, m])),
                   "unserved_share": _quantiles(pd.Series(share[:, m])),
                   "paths_served": int((served[:, m] > 0).sum()),
                   "slo_attainment_pooled": _pooled(min(totals[m, 3], totals[m, 1]), totals[m, 1]),
                   "unserved_share_pooled": _pooled(totals[m, 2], totals[m, 0])}
            for m, name in enumerate(names)}


def _pooled(numerator: float, denominator: float) -> float | None:
    """A ratio of sums over every path (null when nothing was asked or served)."""
    return float(numerator / denominator) if denominator > 0 else None
