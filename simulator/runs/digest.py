"""What one path sends back from the worker that ran it: small, whatever the horizon.

A :class:`PathDigest` holds the path's totals (one row of the summary), its monthly P&L,
its band series (float32, for the per-step quantiles), each model's requests and per-step
ratios (:mod:`simulator.runs.model_figures`), its training figures and the inputs drawn for
it; and, only for the paths a run keeps, its full tables (:class:`PathTables`).
The main process never needs more than that, so a run's memory grows with the kept paths,
not with all of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from simulator.economics.assets import pool_curves
from simulator.economics.books import BookTerms, PathAssets
from simulator.economics.contracts import contract_book, contract_steps
from simulator.economics.opex import monthly_opex
from simulator.economics.pnl import monthly_pnl
from simulator.economics.unit_economics import path_unit_economics
from simulator.path import kernels as K
from simulator.path.compiled import CompiledScenario
from simulator.path.engine import PathResult
from simulator.path.tables import (
    job_columns,
    jobs_frame,
    models_table,
    pools_table,
    timeseries_columns,
)
from simulator.path.training.lateness import late_s
from simulator.runs.bands import path_series
from simulator.runs.model_figures import path_model_series, path_model_sums
from simulator.runs.need import path_need
from simulator.runs.periods import path_periods
from simulator.runs.shortfall import short_steps
from simulator.runs.summary import COMMITMENT_AFTER_HORIZON, path_totals
from simulator.scenario import Scenario


@dataclass
class PathTables:
    """One path's full tables (kept paths only)."""

    timeseries: pd.DataFrame
    pools: pd.DataFrame
    models: pd.DataFrame
    jobs: pd.DataFrame


@dataclass
class TrainingDigest:
    """One path's training jobs, reduced to what the summary pools over paths."""

    jobs: int
    started: int
    completed: int
    preemptions: int
    interruptions: int
    useful_gpu_hours: float
    held_gpu_hours: float
    waits_s: np.ndarray
    wait_sum_s: float
    #: End time of each named job of the scenario (NaT: not finished within the horizon).
    completion: dict[str, pd.Timestamp] = field(default_factory=dict)
    #: Each named job's delay past its uninterrupted finish (submission + work + checkpoint
    #: writes: :mod:`simulator.path.training.lateness`; NaN: not finished) and its preemptions.
    named_late_s: dict[str, float] = field(default_factory=dict)
    named_preemptions: dict[str, int] = field(default_factory=dict)
    named_lost_gpu_hours: dict[str, float] = field(default_factory=dict)  # GPU time held, not saved as work
    named_usd_per_day_late: dict[str, float] = field(default_factory=dict)


@dataclass
class PathDigest:
    path: int
    totals: dict[str, Any]
    pnl: pd.DataFrame
    series: np.ndarray | None  # None: the worker wrote it into the run's band file itself
    training: TrainingDigest | None
    inputs: dict[str, float]
    periods: pd.DataFrame | None = None
    tables: PathTables | None = None
    unit: pd.DataFrame | None = None  # unit economics sums per (month, model)
    need: np.ndarray | None = None  # (models, slots): GPUs lacked per planning slot (the planner asks)
    #: Per served model (:mod:`simulator.runs.model_figures`): requests over the horizon
    #: (models, 4), and the per-step SLO attainment and unserved share (float32, models × 2, steps).
    model_sums: np.ndarray | None = None
    model_series: np.ndarray | None = None
    contracts: pd.DataFrame | None = None  # the contract book: per (contract, month)
    markets: pd.DataFrame | None = None  # rental rates where markets move: per (pool, month)
    orders: pd.DataFrame | None = None  # every order placed on the path (dated and by a policy)


def digest_path(result: PathResult, scenario: Scenario, plan: CompiledScenario, keep: bool,
                need: bool = False, lean: bool = False) -> PathDigest:
    """Tabulate one path and reduce it; the full tables travel only when ``keep``, the GPUs
    lacked per slot (:mod:`simulator.runs.need`) only when ``need``, the unit economics
    unless ``lean``."""
    times = scenario.horizon.times()
    timeseries = path_timeseries_columns(result, scenario, plan)
    jobs = job_columns(result.path, result.jobs, plan)
    totals = path_totals(timeseries, scenario.horizon.step_s).iloc[0].to_dict()
    totals[COMMITMENT_AFTER_HORIZON] = plan.reserved_after_horizon_usd()
    tables = None
    if keep:
        tables = PathTables(pd.DataFrame(timeseries, copy=False), pools_table([result], times, plan),
                            models_table([result], times, plan), jobs_frame([jobs], scenario.horizon.start))
    return PathDigest(
        path=result.path,
        totals=totals,
        pnl=monthly_pnl(timeseries, scenario.financing, scenario.horizon.step_s,
                        opex=monthly_opex(scenario.opex, scenario.horizon), taxes=scenario.taxes,
                        terms=book_terms(scenario, plan),
                        assets={result.path: path_assets(result, scenario)}),
        series=path_series(timeseries),
        training=training_digest(jobs, scenario.horizon.start, {job.name for job in scenario.training.jobs}),
        inputs=result.inputs,
        periods=path_periods(timeseries, scenario.horizon.step_s),
        tables=tables,
        unit=None if lean else path_unit_economics(result.path, _unit_arrays(result.model_out), times, scenario,
                                                   scenario.horizon.step_s),
        need=path_need(result.model_out, scenario.shortfall, scenario.horizon) if need else None,
        model_sums=path_model_sums(result.model_out),
        model_series=path_model_series(result.model_out),
        contracts=contract_book(result.path, result.contracts, result.pool_out[:, :, K.POOL_CONTRACTED],
                                scenario.horizon.step_s, times)
        if plan.contracts or plan.contract_pipelines else None,
        markets=market_frame(result, plan) if plan.rent_markets or plan.purchase_markets or plan.api_markets else None,
        orders=order_frame(result, plan) if result.asset_log.orders else None,
    )


ORDER_COLUMNS = ["path", "pool", "ordered", "count", "promised", "delivered", "usd"]


def order_frame(result: PathResult, plan: CompiledScenario) -> pd.DataFrame:
    """The path's orders: when each was placed, how many GPUs, when promised and delivered
    (NaT: not within the horizon), and what they cost (the pool's price; where it moves, the
    price of the month the order lands)."""
    start = plan.horizon.start
    prices = {index: values for index, kind, values in result.market_rates if kind == "purchase"}
    rows = []
    for ordered_s, promised_s, delivered_s, pool, count in result.asset_log.orders:
        price = float(plan.price_usd[int(pool)])
        if int(pool) in prices:  # paid at the price of the month it lands (promised, if not within the horizon)
            lands = delivered_s if np.isfinite(delivered_s) else promised_s
            month = int(np.clip(np.searchsorted(plan.month_starts_s, lands, side="right") - 1, 0,
                                len(prices[int(pool)]) - 1))
            price = float(prices[int(pool)][month])
        rows.append({"path": result.path, "pool": plan.pool_names[int(pool)],
                     "ordered": start + pd.Timedelta(seconds=float(ordered_s)), "count": int(count),
                     "promised": start + pd.Timedelta(seconds=float(promised_s)),
                     "delivered": start + pd.Timedelta(seconds=float(delivered_s)) if np.isfinite(delivered_s) else pd.NaT,
                     "usd": float(count) * price})
    return pd.DataFrame(rows, columns=ORDER_COLUMNS)


def market_frame(result: PathResult, plan: CompiledScenario) -> pd.DataFrame:
    """The path's rental rate (or purchase price) of each moving pool, and the price multiple of
    each moving API (``model``; ``pool`` null), in each calendar month."""
    start = plan.horizon.start
    months = [(start + pd.Timedelta(seconds=float(s))).to_period("M").start_time for s in plan.month_starts_s]
    rows = [{"path": result.path, "pool": plan.pool_names[index] if kind != "api" else None, "kind": kind,
             "month": month, "usd_per_gpu_hour": float(value) if kind == "rent" else np.nan,
             "usd_per_gpu": float(value) if kind == "purchase" else np.nan,
             "model": plan.model_names[index] if kind == "api" else None,
             "api_price_share": float(value) if kind == "api" else np.nan}
            for index, kind, values in result.market_rates for month, value in zip(months, values, strict=True)]
    return pd.DataFrame(rows, columns=["path", "pool", "kind", "month", "usd_per_gpu_hour", "usd_per_gpu", "model",
                                       "api_price_share"])


def book_terms(scenario: Scenario, plan: CompiledScenario) -> BookTerms:
    """The scenario's terms as the books read them (pools in the plan's order)."""
    pools = scenario.fleet.pools
    return BookTerms(
        financing=scenario.financing, taxes=scenario.taxes, horizon_start=scenario.horizon.start,
        horizon_s=plan.horizon_s, pool_names=tuple(pool.name for pool in pools),
        price_usd=np.asarray(plan.price_usd, dtype=np.float64), owned=np.asarray(plan.owned, dtype=bool),
        curves=pool_curves([pool.gpu for pool in pools], scenario.market_value),
        purchase_terms=[getattr(pool.acquisition, "purchase_terms", None) for pool in pools])


def _unit_arrays(model_out: np.ndarray) -> dict[str, np.ndarray]:
    columns = {"served_requests": K.MODEL_SERVED, "revenue_usd": K.MODEL_REVENUE, "cogs_usd": K.MODEL_COGS,
               "api_cost_usd": K.MODEL_API_COST, "gpus_held": K.MODEL_GPUS}
    return {name: model_out[:, :, column] for name, column in columns.items()}


def path_timeseries(result: PathResult, scenario: Scenario, plan: CompiledScenario) -> pd.DataFrame:
    """The path's ``timeseries`` table with its ``short`` column: the steps of a material
    shortfall (:mod:`simulator.runs.shortfall`)."""
    return pd.DataFrame(path_timeseries_columns(result, scenario, plan), copy=False)


def path_timeseries_columns(result: PathResult, scenario: Scenario, plan: CompiledScenario) -> dict[str, np.ndarray]:
    """The columns of :func:`path_timeseries`, as arrays by name; contracts' revenue (billing
    less SLA credits) is in ``revenue_usd`` and on its own in ``contract_revenue_usd``."""
    timeseries = timeseries_columns([result], scenario.horizon.times(), plan)
    timeseries["short"] = short_steps(result.model_out, scenario.shortfall, scenario.horizon.step_s)
    if plan.contracts or plan.contract_pipelines:  # every path has the column, a path with no contract too
        _, _, billing, credits = contract_steps(result.contracts, result.pool_out[:, :, K.POOL_CONTRACTED],
                                                scenario.horizon.step_s)
        contract = billing.sum(axis=0) - credits.sum(axis=0)
        timeseries["contract_revenue_usd"] = contract
        timeseries["revenue_usd"] = timeseries["revenue_usd"] + contract
        timeseries["gross_margin_usd"] = timeseries["revenue_usd"] - timeseries["cogs_usd"]
    return timeseries


def path_assets(result: PathResult, scenario: Scenario) -> PathAssets:
    """What the books need of one path beyond its timeseries: GPUs bought and sold, contracts."""
    billing = None
    if result.contracts:
        billing = contract_steps(result.contracts, result.pool_out[:, :, K.POOL_CONTRACTED],
                                 scenario.horizon.step_s)[2]
    return PathAssets(result.asset_log, result.capex, scenario.horizon.step_s, list(result.contracts), billing,
                      list(result.power_upgrades))


def training_digest(jobs: dict[str, np.ndarray], start: pd.Timestamp, named: set[str]) -> TrainingDigest | None:
    """A path's training figures from its :func:`~simulator.path.tables.job_columns` (sums
    as the jobs table's ``Series.sum`` gives them: NaN as 0, NumPy's pairwise sum)."""
    if not len(jobs["job"]):
        return None
    started, ended = ~np.isnan(jobs["start_s"]), ~np.isnan(jobs["end_s"])
    names, first = np.unique(jobs["job"], return_index=True)  # a name's first row, as drop_duplicates
    present = {name: row for name, row in zip(names, first, strict=True) if name in named}
    ends = start + pd.to_timedelta(jobs["end_s"][list(present.values())].astype(float), unit="s")
    end_of = dict(zip(present, ends, strict=True))
    waits = jobs["wait_s"][started]
    late = late_s(jobs["submit_s"], jobs["end_s"], jobs["uninterrupted_wall_s"])
    return TrainingDigest(
        jobs=len(jobs["job"]),
        started=int(started.sum()),
        completed=int(ended.sum()),
        preemptions=int(jobs["preemptions"].sum()),
        interruptions=int(jobs["interruptions"].sum()),
        useful_gpu_hours=float(np.nan_to_num(jobs["done_s"] * jobs["gpus"] / 3600.0, nan=0.0).sum()),
        held_gpu_hours=float(np.nan_to_num(jobs["held_gpu_s"] / 3600.0, nan=0.0).sum()),
        waits_s=np.asarray(waits, dtype=np.float64),
        wait_sum_s=math.fsum(waits),
        completion={name: end_of.get(name, pd.NaT) for name in sorted(named)},
        named_late_s={name: float(late[row]) for name, row in present.items()},
        named_preemptions={name: int(jobs["preemptions"][row]) for name, row in present.items()},
        named_lost_gpu_hours={name: float(jobs["held_gpu_s"][row] - jobs["done_s"][row] * jobs["gpus"][row]) / 3600.0
                              for name, row in present.items()},
        named_usd_per_day_late={name: float(jobs["usd_per_day_late"][row]) for name, row in present.items()},
    )
