"""Re-planning procurement: at each review, forecast from the demand this path has seen, and
order what the target needs given the lead time.

The forecast is the scenario's own demand curve (its *prior*: the expected requests of the
scenario as written, at the medians of uncertain inputs), corrected by what the path has shown.
Per model, the log of the ratio of the requests seen to the prior's, day by day over the
``history`` window, is fitted by a straight line in time — its level now and its trend —
by Bayesian linear regression with a normal prior of ``prior_sd`` on both (the level, and the
trend per year) and the residual scatter as the noise (plus the Poisson counting noise of a
day's requests where the model's demand has it). The prediction at a date ahead is normal in
the log ratio, its variance the fit's (level, trend, growing with the distance ahead) plus the
day-to-day scatter. The review covers the forecast's ``1 − target`` quantile, and, where counts
are Poisson, each step's count above it at ``1 − target / steps`` (the normal approximation;
any step of the window may be the one that peaks).

Which needs a review must cover: those from ``lead_time`` ahead (nothing ordered now arrives
sooner) to ``lead_time + every`` ahead plus the slip's ``1 − target/2`` quantile (later ones the
next review can still meet), no further than ``horizon``. The GPUs a model needs at a step are
the pool's replicas for the forecast requests (less the share of demand the scenario's shortfall
rule lets go unserved, and at the serving policy's headroom), in the pool's GPUs; the review
orders the peak need over the window less the GPUs installed, waiting for power and on
order, in whole ``order_count`` steps, up to ``max_orders`` steps in all. A model that prefers
other pools to this one needs here only what those cannot serve: their working GPUs, those
waiting for power and those on order promised by the window's start, in whole replicas (a pool
shared by several models is counted whole for each: an approximation).

With demand known (no noise, every path the scenario's curve) and ``prior_sd: 0``, the
forecast is the curve itself, and the orders are those the open-loop planner places with the
same review dates, lead time and step (``tests/test_replan.py``).
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import simpy

from simulator.path.compiled import CompiledScenario
from simulator.path.fleet.procurement import dated_order, delivery_delay
from simulator.path.fleet.state import FleetState
from simulator.scenario.serving_policy import SPREAD_HEADROOM

_YEAR_S = 365.25 * 86400.0


def log_ratio_forecast(seen: np.ndarray, prior: np.ndarray, ages_years: np.ndarray, ahead_years: np.ndarray,
                       prior_sd: float, poisson: bool) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation of the log of demand over the prior at ``ahead_years`` (from
    now), fitted on days with requests ``seen`` against the prior's ``prior`` at ``ages_years``
    (negative: in the past). See the module docstring."""
    use = (prior > 0) & np.isfinite(prior)
    if prior_sd <= 0.0:
        return np.zeros(len(ahead_years)), np.zeros(len(ahead_years))
    x = np.column_stack([np.ones(use.sum()), ages_years[use]])
    y = np.log(np.maximum(seen[use], 0.5) / prior[use])
    counting = 1.0 / np.maximum(seen[use], 1.0) if poisson else np.zeros(len(y))
    scatter = 0.0
    if len(y) >= 4:  # the day-to-day scatter left by a least-squares line, beyond the counting noise
        coef, *_ = np.linalg.lstsq(x, y, rcond=None)
        residual = y - x @ coef
        scatter = max(float(residual @ residual) / (len(y) - 2) - float(counting.mean()), 0.0)
    noise = np.maximum(scatter + counting, 1e-12)
    precision = np.diag([prior_sd ** -2.0, prior_sd ** -2.0]) + (x.T / noise) @ x
    covariance = np.linalg.inv(precision)
    mean = covariance @ ((x.T / noise) @ y)
    ahead = np.column_stack([np.ones(len(ahead_years)), ahead_years])
    fit_var = np.einsum("ij,jk,ik->i", ahead, covariance, ahead)
    return ahead @ mean, np.sqrt(fit_var + scatter)


def replan_policy(env: simpy.Environment, fleet: FleetState, plan: CompiledScenario, pool: int,
                  rng: np.random.Generator, on_order: np.ndarray, orders_log: list, seen: np.ndarray):
    """Review the pool every ``every`` and order what the forecast's target quantile needs."""
    policy = plan.pools[pool].procurement
    prior = plan.prior_demand if plan.prior_demand is not None else plan.expected_demand
    step_s, n_steps = plan.step_s, plan.n_steps
    # The models that list the pool, and where: its slot in each one's preferences, and the GPUs a
    # replica holds on the pool (a disaggregated unit's companion side, when the pool is its companion).
    slots, gpus_here = {}, {}
    for m in range(len(plan.model_names)):
        listed = np.flatnonzero(plan.preferences[m] == pool)
        companion = np.flatnonzero(plan.companion[m, :, 0] == pool)
        if len(listed):
            slots[m], gpus_here[m] = int(listed[0]), int(plan.gpus_per_replica[m, listed[0]])
        elif len(companion):
            slots[m], gpus_here[m] = int(companion[0]), int(plan.companion[m, companion[0], 1])
    models = [m for m, j in slots.items() if plan.capacity_per_step[m, j] > 0]

    def per_replica(m: int, j: int) -> float:
        return plan.capacity_per_step[m, j] * (1.0 - plan.headroom[m, j] if plan.spread[m, j] == SPREAD_HEADROOM else 1.0)

    keep = 1.0 - plan.min_unserved_share
    z_demand = NormalDist().inv_cdf(1.0 - policy.target)
    slip_q = 0.0 if policy.slip is None else max(float(policy.slip.quantile(1.0 - policy.target / 2)), 0.0)
    per_day = max(1, int(round(86400.0 / step_s)))
    placed = 0
    while policy.max_orders is None or placed < policy.max_orders:
        k = int(env.now // step_s + 1e-9)
        if k >= n_steps or not models:
            return
        first = plan.step_at_or_after(env.now + policy.lead_time)
        last = min(plan.step_at_or_after(env.now + policy.lead_time + policy.review_every + slip_q),
                   plan.step_at_or_after(env.now + policy.horizon), n_steps)
        if first < last:
            window = np.arange(first, last)
            ahead = (window * step_s - env.now) / _YEAR_S
            need = np.zeros(len(window))
            for m in models:
                mean, sd = _forecast(seen[:k, m], prior[:, m], k, per_day, step_s, ahead, policy,
                                     plan.noise[m] == "poisson")
                requests = prior[window, m] * np.exp(mean + z_demand * sd)
                if plan.noise[m] == "poisson":  # each step's count around it: any step of the window may peak
                    requests = requests + NormalDist().inv_cdf(1.0 - policy.target / len(window)) * np.sqrt(requests)
                j = slots[m]
                before = _served_before(fleet, plan, m, j, per_replica, window[0] * step_s)
                need += np.ceil(np.maximum(requests * keep - before, 0.0) / per_replica(m, j) - 1e-9) * gpus_here[m]
            supply = float(fleet.installed[pool] + fleet.blocked[pool] + on_order[pool])
            lacking = float(need.max()) - supply
            if lacking > 0:
                steps = math.ceil(lacking / policy.order_count - 1e-9)
                if policy.max_orders is not None:
                    steps = min(steps, policy.max_orders - placed)
                count = steps * policy.order_count
                delay = delivery_delay(policy.lead_time, policy.slip, rng)
                orders_log.append((env.now, pool, count, env.now + delay))
                env.process(dated_order(env, fleet, pool, env.now, count, delay, on_order, lead_s=policy.lead_time))
                placed += steps
        yield env.timeout(policy.review_every)


def _served_before(fleet: FleetState, plan: CompiledScenario, m: int, j: int, per_replica, by_s: float) -> float:
    """Requests per step the model's pools preferred to slot ``j`` can serve by ``by_s``: their
    working GPUs, those waiting for power, and those on order promised by then, in whole
    replicas (each pool counted whole for this model: pools shared by models are not split)."""
    served = 0.0
    promised = np.zeros(len(plan.pool_names))
    for _at, promise, delivered, pool, count in fleet.log.orders:
        if not np.isfinite(delivered) and promise <= by_s:
            promised[int(pool)] += count
    for i in range(j):
        pool = int(plan.preferences[m, i])
        gpus = float(fleet.available[pool] + fleet.blocked[pool] + promised[pool])
        served += np.floor(gpus / plan.gpus_per_replica[m, i] + 1e-9) * per_replica(m, i)
    return served


def _forecast(seen: np.ndarray, prior: np.ndarray, k: int, per_day: int, step_s: float, ahead: np.ndarray,
              policy, poisson: bool) -> tuple[np.ndarray, np.ndarray]:
    """The log-ratio forecast at ``ahead`` (years) from the whole days of history before step ``k``."""
    days = min(int(policy.history // (per_day * step_s)) if per_day > 1 else int(policy.history // step_s),
               k // per_day)
    if days <= 0:
        return log_ratio_forecast(np.zeros(0), np.zeros(0), np.zeros(0), ahead, policy.prior_sd, poisson)
    start = k - days * per_day
    seen_days = seen[start:k].reshape(days, per_day).sum(axis=1)
    prior_days = prior[start:k].reshape(days, per_day).sum(axis=1)
    ages = ((start + (np.arange(days) + 0.5) * per_day) * step_s - k * step_s) / _YEAR_S
    return log_ratio_forecast(seen_days, prior_days, ages, ahead, policy.prior_sd, poisson)


__all__ = ["log_ratio_forecast", "replan_policy"]
