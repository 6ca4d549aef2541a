"""Rental rates, purchase prices and API prices over the months of one path
(:mod:`simulator.scenario.markets`), and the processes that put each month's into the step
clock (or the fleet) at the month's start."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import simpy

from simulator.path.streams import STREAM_MARKETS, path_generator, stream_key
from simulator.scenario.markets import ApiMarket, RentMarket


def monthly_rates(market: RentMarket | ApiMarket, first_rate: float, month_starts: list, rng: np.random.Generator) -> np.ndarray:
    """The rate per GPU-hour in each month (``month_starts``: timestamps, the horizon's first
    month first): a dated point's rate from the first month starting at or after it, or the
    process drawn from ``rng`` (its first month at ``first_rate``)."""
    n = len(month_starts)
    if market.process is None:
        rates = np.full(n, first_rate)
        for j, start in enumerate(month_starts):
            for point in market.points:
                if point.at <= start:
                    rates[j] = point.value
        return rates
    return rate_path(market.process, first_rate, n, rng)


def rate_path(process, first_rate: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` monthly rates of the mean-reverting log process with jumps (exact month to month)."""
    kappa, dt = process.reversion_per_year, 1.0 / 12.0
    a = math.exp(-kappa * dt)
    spread = process.volatility_per_year * math.sqrt((1.0 - a * a) / (2.0 * kappa))
    theta = math.log(process.long_run_usd)
    x = np.empty(n)
    x[0] = math.log(max(first_rate, 1e-12))
    for m in range(1, n):
        jumps = rng.poisson(process.jumps_per_year * dt)
        kick = rng.normal(process.jump_mean, process.jump_sd, jumps).sum() if jumps else 0.0
        x[m] = a * x[m - 1] + (1.0 - a) * theta + spread * rng.standard_normal() + kick
    return np.exp(x)


def rent_changes(env: simpy.Environment, fleet, pool: int, starts_s: np.ndarray, rates: np.ndarray):
    """From each month's start on, the pool is billed that month's rate (the first is set at 0)."""
    for start, rate in zip(starts_s[1:], rates[1:], strict=True):
        yield env.timeout(max(start - env.now, 0.0))
        fleet.set_rent(pool, rate / 3600.0)


def price_changes(env: simpy.Environment, fleet, pool: int, starts_s: np.ndarray, prices: np.ndarray):
    """From each month's start on, a GPU of the pool delivered is paid that month's price."""
    for start, price in zip(starts_s[1:], prices[1:], strict=True):
        yield env.timeout(max(start - env.now, 0.0))
        fleet.price_now[pool] = price


def api_changes(env: simpy.Environment, fleet, costs: np.ndarray, model: int, base: float, starts_s: np.ndarray,
                shares: np.ndarray):
    """From each month's start on, the model's API requests cost that month's share of its prices."""
    for start, share in zip(starts_s[1:], shares[1:], strict=True):
        yield env.timeout(max(start - env.now, 0.0))
        fleet.set_api_cost(costs, model, base * share)


def start_markets(env: simpy.Environment, fleet, clock, plan, seed: int, path: int) -> list:
    """Draw each moving pool's monthly rates (or purchase prices), and each moving API's price
    multiple, for this path, apply the first month's from the start (into the step clock's
    rent per GPU-second and API cost per request) and schedule the others; returns ``(index,
    kind, values)``: kind ``rent`` (a pool, USD per GPU-hour), ``purchase`` (a pool, USD per
    GPU) or ``api`` (a model, the multiple of its API prices)."""
    out: list = []
    if not (plan.rent_markets or plan.purchase_markets or plan.api_markets):
        return out
    rent_now = clock.cloud_usd_gpu_s
    fleet.cloud_rate = rent_now
    first = plan.horizon.start.to_period("M").start_time
    months = [max(first + pd.DateOffset(months=j), plan.horizon.start) for j in range(len(plan.month_starts_s))]
    for pool, market in plan.rent_markets:
        rng = path_generator(seed, path, STREAM_MARKETS, stream_key(market.pool))
        rates = monthly_rates(market, float(plan.cloud_usd_gpu_s[pool]) * 3600.0, months, rng)
        rent_now[pool] = rates[0] / 3600.0
        out.append((pool, "rent", rates))
        env.process(rent_changes(env, fleet, pool, plan.month_starts_s, rates))
    for pool, market in plan.purchase_markets:
        rng = path_generator(seed, path, STREAM_MARKETS, stream_key("purchase:" + market.pool))
        prices = monthly_rates(market, float(plan.price_usd[pool]), months, rng)
        fleet.price_now[pool] = prices[0]
        out.append((pool, "purchase", prices))
        env.process(price_changes(env, fleet, pool, plan.month_starts_s, prices))
    costs = clock.api_cost_per_request
    for model, market in plan.api_markets:
        rng = path_generator(seed, path, STREAM_MARKETS, stream_key("api:" + market.model))
        shares = monthly_rates(market, 1.0, months, rng)
        base = float(plan.api_cost_per_request[model])
        costs[model] = base * shares[0]
        out.append((model, "api", shares))
        env.process(api_changes(env, fleet, costs, model, base, plan.month_starts_s, shares))
    return out
