"""Raw path arrays to the tables of the public contract, built once at the end of a run.

``timeseries``: one row per (path, step), every pool and model added up.
``pools``: one row per (path, step, pool).  ``models``: one row per (path, step, model).

``cost_cloud_usd`` holds all rented compute: on-demand, reserved and spot GPUs and the
external API (each also given on its own), so the five contract components still add up to
``cost_usd``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from simulator.path import kernels as K
from simulator.path.compiled import CompiledScenario
from simulator.path.engine import PathResult
from simulator.path.pool_plan import KIND_ON_DEMAND, KIND_RESERVED, KIND_SPOT
from simulator.path.training.job_table import JobTable
from simulator.path.training.lateness import late_s, uninterrupted_wall_s

COST_COMPONENTS = (
    "cost_depreciation_usd",
    "cost_cloud_usd",
    "cost_energy_usd",
    "cost_facility_usd",
    "cost_other_usd",
)
RND_COLUMNS = {
    "rnd_depreciation_usd": K.POOL_RND_DEPRECIATION,
    "rnd_cloud_usd": K.POOL_RND_CLOUD,
    "rnd_energy_usd": K.POOL_RND_ENERGY,
    "rnd_facility_usd": K.POOL_RND_FACILITY,
}
_POOL_COLUMNS = {
    "gpus_installed": K.POOL_INSTALLED,
    "gpus_available": K.POOL_AVAILABLE,
    "gpus_inference": K.POOL_INFERENCE,
    "gpus_training": K.POOL_TRAINING,
    "gpus_idle": K.POOL_IDLE,
    "gpus_serving": K.POOL_SERVING,
    "gpus_busy": K.POOL_BUSY,
    "gpus_power_blocked": K.POOL_POWER_BLOCKED,
    "gpus_out_of_service": K.POOL_OUT_OF_SERVICE,
    "gpus_contracted": K.POOL_CONTRACTED,
    "cost_depreciation_usd": K.POOL_DEPRECIATION,
    "cost_cloud_usd": K.POOL_CLOUD,
    "cost_energy_usd": K.POOL_ENERGY,
    "cost_facility_usd": K.POOL_FACILITY,
    "energy_kwh": K.POOL_ENERGY_KWH,
    **RND_COLUMNS,
}
_MODEL_COLUMNS = {
    "demand_requests": K.MODEL_DEMAND,
    "served_requests": K.MODEL_SERVED,
    "unserved_requests": K.MODEL_UNSERVED,
    "replicas": K.MODEL_REPLICAS,
    "replicas_up": K.MODEL_REPLICAS_UP,
    "shortfall_gpus": K.MODEL_SHORTFALL_GPUS,
    "slo_met_requests": K.MODEL_SLO_MET,
    "revenue_usd": K.MODEL_REVENUE,
    "api_requests": K.MODEL_API_REQUESTS,
    "cost_api_usd": K.MODEL_API_COST,
    "gpus_held": K.MODEL_GPUS,
    "cogs_attributed_usd": K.MODEL_COGS,
}
_INTEGER_COLUMNS = (
    "gpus_installed", "gpus_available", "gpus_inference", "gpus_training", "gpus_idle", "gpus_failed",
    "gpus_out_of_service", "gpus_power_blocked", "replicas", "shortfall_gpus", "gpus_held", "gpus_serving",
    "replicas_up",
)
_TIERS = {"on_demand": KIND_ON_DEMAND, "reserved": KIND_RESERVED, "spot": KIND_SPOT}


def _ratio(numerator: np.ndarray, denominator: np.ndarray, empty: float) -> np.ndarray:
    out = np.full(numerator.shape, empty, dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


def _cast(table: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """GPU and replica counts as whole numbers. A step a fleet change falls inside holds their
    time-weighted means (:mod:`simulator.path.intra_step`): each is rounded, and the idle and
    failed GPUs are what the rounded counts leave, so that the counts still add up."""
    for name in _INTEGER_COLUMNS:
        if name in table:
            table[name] = np.rint(table[name]).astype(np.int64)
    if "gpus_idle" in table:
        table["gpus_idle"] = table["gpus_available"] - table["gpus_training"] - table["gpus_inference"]
    if "gpus_failed" in table:
        table["gpus_failed"] = table["gpus_installed"] - table["gpus_available"] - table["gpus_out_of_service"]
    return table


def _frame(table: dict[str, np.ndarray], key: str, names: Sequence[str], repeats: int) -> pd.DataFrame:
    """A long table with a categorical ``key`` column (pool or model) third."""
    codes = np.tile(np.arange(len(names), dtype=np.int32), repeats)
    labels = pd.Categorical.from_codes(codes, categories=list(names))
    items = list(_cast(table).items())
    return pd.DataFrame(dict([*items[:2], (key, labels), *items[2:]]), copy=False)


def timeseries_table(results: Sequence[PathResult], times: pd.DatetimeIndex, plan: CompiledScenario) -> pd.DataFrame:
    """One row per (path, step): the whole fleet and every model added up."""
    return pd.DataFrame(timeseries_columns(results, times, plan), copy=False)


def timeseries_columns(results: Sequence[PathResult], times: pd.DatetimeIndex, plan: CompiledScenario
                       ) -> dict[str, np.ndarray]:
    """The columns of :func:`timeseries_table`, as arrays by name (what a path's reductions
    read: a DataFrame costs more to build and to read a column from than they do)."""
    pool = np.concatenate([r.pool_out.sum(axis=1) for r in results]).T.copy().T  # column-major (rows, cols)
    model = np.concatenate([r.model_out.sum(axis=1) for r in results]).T.copy().T
    other = np.concatenate([r.other_out for r in results])
    n_steps = len(times)
    table: dict[str, np.ndarray] = {
        "path": np.repeat([r.path for r in results], n_steps).astype(np.int64),
        "time": np.tile(times.values, len(results)),
    }
    table["demand_requests"] = model[:, K.MODEL_DEMAND]
    table["unserved_requests"] = model[:, K.MODEL_UNSERVED]
    # Exactly demand − unserved, so that served + unserved == demand on every row.
    table["served_requests"] = table["demand_requests"] - table["unserved_requests"]
    for name in ("gpus_installed", "gpus_available", "gpus_inference", "gpus_training", "gpus_idle"):
        table[name] = pool[:, _POOL_COLUMNS[name]]
    table["utilization"] = _ratio(pool[:, K.POOL_BUSY], pool[:, K.POOL_AVAILABLE], 0.0)
    table["slo_attainment"] = _ratio(model[:, K.MODEL_SLO_MET], model[:, K.MODEL_DEMAND], 1.0)
    table["shortfall_gpus"] = model[:, K.MODEL_SHORTFALL_GPUS]
    api_cost = model[:, K.MODEL_API_COST]
    table["cost_depreciation_usd"] = pool[:, K.POOL_DEPRECIATION]
    table["cost_cloud_usd"] = pool[:, K.POOL_CLOUD] + api_cost
    table["cost_energy_usd"] = pool[:, K.POOL_ENERGY]
    table["cost_facility_usd"] = pool[:, K.POOL_FACILITY]
    table["cost_other_usd"] = other
    table["cost_usd"] = sum(table[name] for name in COST_COMPONENTS)
    rnd = {name: pool[:, column] for name, column in RND_COLUMNS.items()}
    table["rnd_compute_usd"] = sum(rnd.values())
    table["cogs_usd"] = table["cost_usd"] - table["rnd_compute_usd"]
    table["revenue_usd"] = model[:, K.MODEL_REVENUE]
    table["gross_margin_usd"] = table["revenue_usd"] - table["cogs_usd"]
    table["training_jobs_queued"] = np.concatenate([r.training_queued for r in results]).astype(np.int64)
    table["training_jobs_running"] = np.concatenate([r.training_running for r in results]).astype(np.int64)
    # Beyond the contract: where the money and the GPUs went.
    for tier, kind in _TIERS.items():
        table[f"cost_cloud_{tier}_usd"] = np.concatenate(
            [r.pool_out[:, plan.kind == kind, K.POOL_CLOUD].sum(axis=1) for r in results])
    table["cost_api_usd"] = api_cost
    table.update(rnd)
    table["capex_usd"] = np.concatenate([r.capex.sum(axis=1) for r in results])
    table["gpus_out_of_service"] = pool[:, K.POOL_OUT_OF_SERVICE]
    table["gpus_failed"] = table["gpus_installed"] - table["gpus_available"] - table["gpus_out_of_service"]
    table["gpus_power_blocked"] = pool[:, K.POOL_POWER_BLOCKED]
    table["api_requests"] = model[:, K.MODEL_API_REQUESTS]
    table["served_tokens"] = np.concatenate([r.served_tokens for r in results])
    table["subscribers"] = np.concatenate([r.subscribers.sum(axis=1) for r in results])
    table["energy_kwh"] = pool[:, K.POOL_ENERGY_KWH]
    table["replicas"] = model[:, K.MODEL_REPLICAS]
    table["replicas_up"] = model[:, K.MODEL_REPLICAS_UP]
    table["gpus_serving"] = pool[:, K.POOL_SERVING]
    table["gpus_contracted"] = pool[:, K.POOL_CONTRACTED]
    return _cast(table)


def pools_table(results: Sequence[PathResult], times: pd.DatetimeIndex, plan: CompiledScenario) -> pd.DataFrame:
    """One row per (path, step, pool)."""
    names = plan.pool_names
    n_steps, n_pools = len(times), len(names)
    stacked = np.concatenate([r.pool_out.reshape(n_steps * n_pools, K.N_POOL_COLS) for r in results]).T.copy()
    table: dict[str, np.ndarray] = {
        "path": np.repeat([r.path for r in results], n_steps * n_pools).astype(np.int64),
        "time": np.tile(np.repeat(times.values, n_pools), len(results)),
    }
    for name, column in _POOL_COLUMNS.items():
        table[name] = stacked[column]
    table["gpus_failed"] = table["gpus_installed"] - table["gpus_available"] - table["gpus_out_of_service"]
    table["utilization"] = _ratio(stacked[K.POOL_BUSY], stacked[K.POOL_AVAILABLE], 0.0)
    table["cost_usd"] = sum(table[name] for name in COST_COMPONENTS[:-1])
    table["rnd_compute_usd"] = sum(table[name] for name in RND_COLUMNS)
    table["capex_usd"] = np.concatenate([r.capex.reshape(-1) for r in results])
    return _frame(table, "pool", names, n_steps * len(results))


def models_table(results: Sequence[PathResult], times: pd.DatetimeIndex, plan: CompiledScenario) -> pd.DataFrame:
    """One row per (path, step, served model)."""
    names = plan.model_names
    n_steps, n_models = len(times), len(names)
    stacked = np.concatenate([r.model_out.reshape(n_steps * n_models, K.N_MODEL_COLS) for r in results]).T.copy()
    table: dict[str, np.ndarray] = {
        "path": np.repeat([r.path for r in results], n_steps * n_models).astype(np.int64),
        "time": np.tile(np.repeat(times.values, n_models), len(results)),
    }
    for name, column in _MODEL_COLUMNS.items():
        table[name] = stacked[column]
    table["slo_attainment"] = _ratio(stacked[K.MODEL_SLO_MET], stacked[K.MODEL_DEMAND], 1.0)
    table["subscribers"] = np.concatenate([r.subscribers.reshape(-1) for r in results])
    del table["slo_met_requests"]
    return _frame(table, "model", names, n_steps * len(results))


def jobs_table(results: Sequence[PathResult], start: pd.Timestamp, plan: CompiledScenario) -> pd.DataFrame:
    """One row per (path, training job); times null for a job that did not start or finish."""
    return jobs_frame([job_columns(result.path, result.jobs, plan) for result in results], start)


def jobs_frame(parts: Sequence[dict[str, np.ndarray]], start: pd.Timestamp) -> pd.DataFrame:
    """The jobs table of paths' :func:`job_columns`."""
    parts = [part for part in parts if len(part["job"])]
    columns = ["path", "job", "pool", "submit_s", "start_s", "end_s", "gpus", "priority", "wait_s",
               "preemptions", "interruptions", "work_s", "done_s", "held_gpu_s", "usd_per_day_late",
               "uninterrupted_wall_s"]
    if parts:
        frame = pd.DataFrame({name: np.concatenate([part[name] for part in parts]) for name in columns})
    else:
        frame = pd.DataFrame(columns=columns)
    wall = frame.pop("uninterrupted_wall_s").astype(float)
    late = late_s(frame["submit_s"].astype(float), frame["end_s"].astype(float), wall)
    frame["uninterrupted_end_time"] = start + pd.to_timedelta(frame["submit_s"].astype(float) + wall, unit="s")
    for name in ("submit", "start", "end"):
        frame[f"{name}_time"] = start + pd.to_timedelta(frame.pop(f"{name}_s").astype(float), unit="s")
    frame["useful_gpu_hours"] = frame["done_s"] * frame["gpus"] / 3600.0
    frame["held_gpu_hours"] = frame.pop("held_gpu_s") / 3600.0
    # What delays cost: GPU time held but not saved as work (lost segments, restarts, checkpoint
    # writes), days past the job's uninterrupted finish (submission + work + its checkpoint
    # writes: :mod:`simulator.path.training.lateness`) for a finished job, and their price.
    frame["lost_gpu_hours"] = frame["held_gpu_hours"] - frame["useful_gpu_hours"]
    frame["days_late"] = late / 86_400.0
    frame["delay_cost_usd"] = frame["days_late"] * frame.pop("usd_per_day_late")
    ordered = ["path", "job", "pool", "submit_time", "start_time", "end_time", "gpus", "wait_s", "preemptions",
               "interruptions", "priority", "work_s", "done_s", "useful_gpu_hours", "held_gpu_hours",
               "lost_gpu_hours", "days_late", "delay_cost_usd", "uninterrupted_end_time"]
    return frame[ordered]


def job_columns(path: int, jobs, plan: CompiledScenario) -> dict[str, np.ndarray]:
    """A path's jobs as columns, from a JobTable's arrays or from a list of Job records."""
    if isinstance(jobs, JobTable) and jobs.outcome:
        c, o = jobs.columns, jobs.outcome
        spec = {name: c[name] for name in ("gpus", "priority", "submit_s", "work_s", "checkpoint_s", "checkpoint_time_s")}
        pool = c["pool"]
        names = np.array(jobs.names, dtype=object)
        outcome = {name: o[name] for name in ("start_s", "end_s", "preemptions", "interruptions", "done_s")}
        held, running, since = o["held_gpu_s"], o["running"], o["running_since"]
    else:
        jobs = list(jobs)
        spec = {"gpus": np.array([j.gpus for j in jobs], dtype=np.int64),
                "priority": np.array([j.priority for j in jobs], dtype=np.int64),
                "submit_s": np.array([j.submit_s for j in jobs], dtype=float),
                "work_s": np.array([j.work_s for j in jobs], dtype=float),
                "checkpoint_s": np.array([j.checkpoint_s for j in jobs], dtype=float),
                "checkpoint_time_s": np.array([j.checkpoint_time_s for j in jobs], dtype=float)}
        pool = np.array([j.pool for j in jobs], dtype=np.int64)
        names = np.array([j.name for j in jobs], dtype=object)
        outcome = {"start_s": np.array([np.nan if j.start_s is None else j.start_s for j in jobs], dtype=float),
                   "end_s": np.array([np.nan if j.end_s is None else j.end_s for j in jobs], dtype=float),
                   "preemptions": np.array([j.preemptions for j in jobs], dtype=np.int64),
                   "interruptions": np.array([j.interruptions for j in jobs], dtype=np.int64),
                   "done_s": np.array([j.done_s for j in jobs], dtype=float)}
        held = np.array([j.held_gpu_s for j in jobs], dtype=float)
        running = np.array([j.running for j in jobs], dtype=bool)
        since = np.array([j.running_since for j in jobs], dtype=float)
    gpus = spec["gpus"]
    return {
        "path": np.full(len(names), path, dtype=np.int64), "job": names,
        "pool": np.asarray(plan.pool_names, dtype=object)[pool] if len(names) else np.array([], dtype=object),
        "submit_s": spec["submit_s"], "start_s": outcome["start_s"], "end_s": outcome["end_s"], "gpus": gpus,
        "priority": spec["priority"], "wait_s": outcome["start_s"] - spec["submit_s"],
        "preemptions": outcome["preemptions"], "interruptions": outcome["interruptions"], "work_s": spec["work_s"],
        "done_s": outcome["done_s"], "held_gpu_s": held + np.where(running, (plan.horizon_s - since) * gpus, 0.0),
        "uninterrupted_wall_s": uninterrupted_wall_s(spec["work_s"], spec["checkpoint_s"], spec["checkpoint_time_s"]),
        "usd_per_day_late": _price_per_day_late(names, plan),
    }


def _price_per_day_late(names: np.ndarray, plan: CompiledScenario) -> np.ndarray:
    """Each job's price of a day late: a named job's ``usd_per_day_late``, else 0."""
    prices = {spec.name: spec.usd_per_day_late for spec in plan.jobs if spec.named}
    return np.array([prices.get(name, 0.0) for name in names], dtype=float)
