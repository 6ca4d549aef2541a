"""Contracts as the engine runs them: GPUs held for a customer, term by term.

Each contract (and each one a pipeline brings) is a process: at its start it holds its GPUs
on its pool (:meth:`FleetState.hold_for_contract`: the step kernel keeps them from serving and
training), at its term's end it releases them and, with its renewal probability, starts
another term; a default, drawn as a constant hazard, ends it early. Every term is logged
(:class:`~simulator.economics.contracts.ContractTerm`) for the contract book. Draws come from
the path's contracts stream, a generator per contract keyed by its name.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import simpy

from simulator.economics.contracts import ContractTerm
from simulator.path.fleet.state import FleetState
from simulator.path.streams import STREAM_CONTRACTS, path_generator, stream_key
from simulator.units import SECONDS_PER_YEAR

SECONDS_PER_MONTH = SECONDS_PER_YEAR / 12.0


def term_end_s(horizon_start: pd.Timestamp, start_s: float, term) -> float:
    """The end of a term starting ``start_s`` after the horizon's start (calendar months kept)."""
    start = horizon_start + pd.Timedelta(seconds=start_s)
    return (term.end_from(start) - horizon_start).total_seconds()


def contract_process(env: simpy.Environment, fleet: FleetState, horizon_start: pd.Timestamp, horizon_s: float,
                     pool: int, name: str, gpus: int, start_s: float, price: float, terms,
                     rng: np.random.Generator, log: list, pending: list | None = None):
    """Hold a contract's GPUs term after term until it ends, defaults, or the horizon ends.
    ``pending``: (pool, start s, GPUs) of contracts signed and not started yet (a pipeline reads it)."""
    if pending is not None and start_s > env.now:
        pending.append((pool, start_s, gpus))
    hazard = -math.log1p(-terms.default_probability_per_year) / SECONDS_PER_YEAR
    while start_s < horizon_s:
        end_s = term_end_s(horizon_start, start_s, terms.term)
        default_s = start_s + rng.exponential(1.0 / hazard) if hazard > 0 else math.inf
        renew = rng.random() < terms.renewal_probability  # drawn for every term, used at its end
        stop_s = min(end_s, default_s)
        if stop_s <= 0:  # this term ended before the horizon
            if default_s < end_s or not renew:
                return
            start_s = end_s
            continue
        yield env.timeout(max(start_s - env.now, 0.0))
        log.append(ContractTerm(name, pool, gpus, start_s, end_s, stop_s, price, terms.take_or_pay, terms.usage,
                                terms.prepaid_share, terms.sla_credit_usd_per_gpu_hour, default_s < end_s))
        fleet.hold_for_contract(pool, gpus, terms.usage)
        if stop_s >= horizon_s:
            return
        yield env.timeout(stop_s - env.now)
        fleet.hold_for_contract(pool, -gpus, terms.usage)
        if default_s < end_s or not renew:
            return
        start_s = end_s


def pipeline_process(env: simpy.Environment, fleet: FleetState, horizon_start: pd.Timestamp, horizon_s: float,
                     pool: int, pipeline, rng: np.random.Generator, log: list, pending: list):
    """Offers arrive as a Poisson process over the horizon; one is signed (and then runs as a
    contract) when the pool's GPUs not sold yet cover it: those installed or delivered and
    waiting for power, less those held for contracts and those signed to start later. The
    others are declined."""
    mean_gap = SECONDS_PER_MONTH / pipeline.arrivals_per_month
    offers = 0
    while True:
        yield env.timeout(rng.exponential(mean_gap))
        if env.now >= horizon_s:
            return
        offers += 1
        gpus = int(round(rng.uniform(pipeline.gpus.low, pipeline.gpus.high)))
        price = float(rng.uniform(pipeline.usd_per_gpu_hour.low, pipeline.usd_per_gpu_hour.high))
        waiting = sum(n for p, start, n in pending if p == pool and start > env.now)  # signed, not started
        unsold = int(fleet.installed[pool] + fleet.blocked[pool] - fleet.contracted[pool]) - waiting
        if gpus <= 0 or gpus > unsold:
            continue
        env.process(contract_process(env, fleet, horizon_start, horizon_s, pool, f"{pipeline.name}#{offers}", gpus,
                                     env.now + pipeline.lead_time, price, pipeline, rng, log, pending))


def start_contracts(env: simpy.Environment, fleet: FleetState, plan, seed: int, path: int, horizon_s: float) -> list:
    """Start every contract's and pipeline's process on this path; returns the log their terms
    are written to."""
    log: list = []
    pending: list = []  # contracts signed and not started: a pipeline does not sell their GPUs again
    start = plan.horizon.start
    for pool, contract in plan.contracts:
        offset = (contract.start - start).total_seconds()
        if offset > 0:
            pending.append((pool, offset, contract.gpus))
        env.process(contract_process(env, fleet, start, horizon_s, pool, contract.name, contract.gpus, offset,
                                     contract.usd_per_gpu_hour, contract,
                                     path_generator(seed, path, STREAM_CONTRACTS, stream_key(contract.name)), log))
    for pool, pipeline in plan.contract_pipelines:
        env.process(pipeline_process(env, fleet, start, horizon_s, pool, pipeline,
                                     path_generator(seed, path, STREAM_CONTRACTS, stream_key(pipeline.name)), log,
                                     pending))
    return log
