"""Raw path arrays to the tables of the public contract, built once at the end of a run.

``timeseries``: one row per (path, step), every pool and model added up.
``pools``: one row per (path, step, pool).  ``models``: one row per (path, step, model).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from simulator import kernels as K
from simulator.engine import PathResult

COST_COMPONENTS = (
    "cost_depreciation_usd",
    "cost_cloud_usd",
    "cost_energy_usd",
    "cost_facility_usd",
    "cost_other_usd",
)

_POOL_COLUMNS = {
    "gpus_installed": K.POOL_INSTALLED,
    "gpus_available": K.POOL_AVAILABLE,
    "gpus_inference": K.POOL_INFERENCE,
    "gpus_training": K.POOL_TRAINING,
    "gpus_idle": K.POOL_IDLE,
    "gpus_busy": K.POOL_BUSY,
    "cost_depreciation_usd": K.POOL_DEPRECIATION,
    "cost_cloud_usd": K.POOL_CLOUD,
    "cost_energy_usd": K.POOL_ENERGY,
    "cost_facility_usd": K.POOL_FACILITY,
    "rnd_compute_usd": K.POOL_RND,
    "energy_kwh": K.POOL_ENERGY_KWH,
}
_MODEL_COLUMNS = {
    "demand_requests": K.MODEL_DEMAND,
    "served_requests": K.MODEL_SERVED,
    "unserved_requests": K.MODEL_UNSERVED,
    "replicas": K.MODEL_REPLICAS,
    "shortfall_gpus": K.MODEL_SHORTFALL_GPUS,
    "slo_met_requests": K.MODEL_SLO_MET,
    "revenue_usd": K.MODEL_REVENUE,
}
_INTEGER_COLUMNS = ("gpus_installed", "gpus_available", "gpus_inference", "gpus_training", "gpus_idle", "replicas", "shortfall_gpus")


def _ratio(numerator: np.ndarray, denominator: np.ndarray, empty: float) -> np.ndarray:
    out = np.full(numerator.shape, empty, dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


def _cast(table: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    for name in _INTEGER_COLUMNS:
        if name in table:
            table[name] = np.rint(table[name]).astype(np.int64)
    return table


def _frame(table: dict[str, np.ndarray], key: str, names: Sequence[str], repeats: int) -> pd.DataFrame:
    """A long table with a categorical ``key`` column (pool or model) third."""
    codes = np.tile(np.arange(len(names), dtype=np.int32), repeats)
    labels = pd.Categorical.from_codes(codes, categories=list(names))
    items = list(_cast(table).items())
    return pd.DataFrame(dict([*items[:2], (key, labels), *items[2:]]), copy=False)


def timeseries_table(results: Sequence[PathResult], times: pd.DatetimeIndex) -> pd.DataFrame:
    """One row per (path, step): the whole fleet and every model added up."""
    pool = np.concatenate([r.pool_out.sum(axis=1) for r in results])  # (rows, cols)
    model = np.concatenate([r.model_out.sum(axis=1) for r in results])
    other = np.concatenate([r.other_out for r in results])
    n_steps = len(times)
    table: dict[str, np.ndarray] = {
        "path": np.repeat([r.path for r in results], n_steps).astype(np.int64),
        "time": np.tile(times.values, len(results)),
    }
    for name in ("demand_requests", "served_requests", "unserved_requests"):
        table[name] = model[:, _MODEL_COLUMNS[name]]
    for name in ("gpus_installed", "gpus_available", "gpus_inference", "gpus_training", "gpus_idle"):
        table[name] = pool[:, _POOL_COLUMNS[name]]
    table["utilization"] = _ratio(pool[:, K.POOL_BUSY], pool[:, K.POOL_AVAILABLE], 0.0)
    table["slo_attainment"] = _ratio(model[:, K.MODEL_SLO_MET], model[:, K.MODEL_DEMAND], 1.0)
    table["shortfall_gpus"] = model[:, K.MODEL_SHORTFALL_GPUS]
    for name in COST_COMPONENTS[:-1]:
        table[name] = pool[:, _POOL_COLUMNS[name]]
    table["cost_other_usd"] = other
    table["cost_usd"] = sum(table[name] for name in COST_COMPONENTS)
    table["rnd_compute_usd"] = pool[:, K.POOL_RND]
    table["cogs_usd"] = table["cost_usd"] - table["rnd_compute_usd"]
    table["revenue_usd"] = model[:, K.MODEL_REVENUE]
    table["gross_margin_usd"] = table["revenue_usd"] - table["cogs_usd"]
    table["energy_kwh"] = pool[:, K.POOL_ENERGY_KWH]
    table["replicas"] = model[:, K.MODEL_REPLICAS]
    rows = len(table["path"])
    table["training_jobs_queued"] = np.zeros(rows, dtype=np.int64)
    table["training_jobs_running"] = np.zeros(rows, dtype=np.int64)
    return pd.DataFrame(_cast(table), copy=False)


def pools_table(
    results: Sequence[PathResult], times: pd.DatetimeIndex, names: Sequence[str]
) -> pd.DataFrame:
    """One row per (path, step, pool)."""
    n_steps, n_pools = len(times), len(names)
    stacked = np.concatenate([r.pool_out.reshape(n_steps * n_pools, -1) for r in results])
    table: dict[str, np.ndarray] = {
        "path": np.repeat([r.path for r in results], n_steps * n_pools).astype(np.int64),
        "time": np.tile(np.repeat(times.values, n_pools), len(results)),
    }
    for name, column in _POOL_COLUMNS.items():
        table[name] = stacked[:, column]
    table["utilization"] = _ratio(stacked[:, K.POOL_BUSY], stacked[:, K.POOL_AVAILABLE], 0.0)
    table["cost_usd"] = sum(table[name] for name in COST_COMPONENTS[:-1])
    return _frame(table, "pool", names, n_steps * len(results))


def models_table(
    results: Sequence[PathResult], times: pd.DatetimeIndex, names: Sequence[str]
) -> pd.DataFrame:
    """One row per (path, step, served model)."""
    n_steps, n_models = len(times), len(names)
    stacked = np.concatenate([r.model_out.reshape(n_steps * n_models, -1) for r in results])
    table: dict[str, np.ndarray] = {
        "path": np.repeat([r.path for r in results], n_steps * n_models).astype(np.int64),
        "time": np.tile(np.repeat(times.values, n_models), len(results)),
    }
    for name, column in _MODEL_COLUMNS.items():
        table[name] = stacked[:, column]
    table["slo_attainment"] = _ratio(
        stacked[:, K.MODEL_SLO_MET], stacked[:, K.MODEL_DEMAND], 1.0
    )
    del table["slo_met_requests"]
    return _frame(table, "model", names, n_steps * len(results))
