"""Re-planning procurement against the open-loop plan, where the answer is known.

- With demand known (no noise, exponential growth, ``prior_sd: 0``), re-planning at the plan's
  review dates orders exactly what the open-loop plan orders: the same dates and counts.
- With a late regime change (after day 120 demand stops growing on 40% of the paths, keeps
  growing on the rest), re-planning buys fewer GPUs and commits less at the start, at the same
  risk per month, on the same paths.
- The forecast is a Bayesian linear regression of the log ratio of demand seen to the
  scenario's; its posterior equals weighted least squares with the prior as two pseudo
  observations (statsmodels' WLS, an independent implementation).
"""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
import statsmodels.api as sm
import yaml
from click.testing import CliRunner

import simulator
from simulator.cli import main
from simulator.decisions.order_planner import plan_orders
from simulator.decisions.replan_compare import compare_replan
from simulator.path.fleet.replan import log_ratio_forecast
from simulator.scenario.plan import PlanSettings
from tests.helpers import base_scenario, run


def _growing(duration: str, demand: dict, count: int = 8) -> dict:
    data = base_scenario(horizon={"start": "2026-01-01", "duration": duration, "step": "1h"})
    data["fleet"]["pools"][0].update(acquisition={"type": "owned", "price_usd": 30_000}, count=count)
    data["facility"] = {"usd_per_kw_month": 150.0}  # holding a GPU costs: the later order is the cheaper
    data["models"][0]["demand"] = {"input_tokens": 1000, "output_tokens": 200, **demand}
    return data


def _settings(paths: int) -> PlanSettings:
    return PlanSettings(orders=[{"pool": "a", "step": 4, "max": 400, "lead_time": "60d"}],
                        target={"probability": 0.1, "per": "month"}, paths=paths, review_every="30d")


def test_with_demand_known_replanning_orders_what_the_open_loop_plan_orders():
    data = _growing("300d", {"base_rps": 6.0, "noise": "none", "growth": {"kind": "exponential", "rate_per_month": 0.1}})
    outcome = plan_orders(simulator.load_scenario(data), _settings(2), workers=1)
    open_loop = [(o.at.strftime("%Y-%m-%d"), o.count) for o in outcome.scenario.fleet.pools[0].orders]
    # By hand: 8 GPUs serve 6·1.1^t up to t = ln(8/6)/ln 1.1 = 3.0 months (day 92); 12 up to
    # 7.3 months (day 221). Reviews every 30 days, 60 days of lead time: the orders land by
    # days 92 and 221, placed on the last review before days 32 and 161: days 30 and 150.
    assert open_loop == [("2026-01-31", 4), ("2026-05-31", 4)]
    data["fleet"]["pools"][0]["procurement"] = {"policy": "replan", "order_count": 4, "lead_time": "60d",
                                                "every": "30d", "prior_sd": 0}
    replanned = run(data, paths=1)
    orders = replanned.orders
    assert [(t.strftime("%Y-%m-%d"), int(n)) for t, n in zip(orders["ordered"], orders["count"], strict=True)] == open_loop
    assert (orders["delivered"] == orders["promised"]).all()
    assert replanned.summary["first_shortfall_time"]["probability"] == 0.0
    assert outcome.fresh.risk.max() == 0.0


def test_the_threshold_policy_counts_an_order_as_on_order_from_the_moment_it_is_placed():
    # 4 rps until day 30, then 20 rps, on 8 one-GPU replicas; reviews every 7 days over the next
    # 14. Day 21 sees 20 > 0.9 × 8 and orders 16 (30-day lead: day 51); from then 8 + 16 = 24
    # GPUs are installed or on order, 20 / 24 = 0.83 < 0.9: no second order. (An order used to
    # count as on order only from twice its placing time, so day 28 ordered 16 more.)
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "70d", "step": "1h"})
    del data["models"][0]["demand"]["base_rps"]
    data["models"][0]["demand"]["growth"] = {"kind": "piecewise", "extrapolate": "hold", "points": [
        {"at": "0d", "rps": 4}, {"at": "30d", "rps": 4}, {"at": "30d", "rps": 20}]}
    data["fleet"]["pools"][0]["procurement"] = {"order_count": 16, "lead_time": "30d", "review_every": "7d",
                                                "lookahead": "14d", "threshold": 0.9}
    orders = run(data, paths=1).orders
    assert [(t.strftime("%Y-%m-%d"), int(n)) for t, n in zip(orders["ordered"], orders["count"], strict=True)] == [
        ("2026-01-22", 16)]


@pytest.mark.slow
def test_after_a_late_regime_change_replanning_buys_less_at_the_same_risk():
    # 6 req/s rising to 12 by day 120; then on to 36 by day 330 (60% of paths, the scenario's
    # median), or flat at 12 (40%). 12 GPUs to start; orders of 4 with a 60-day lead time.
    choice = {"dist": "choice", "values": [12, 36], "weights": [0.4, 0.6]}
    data = _growing("330d", {"noise": "poisson", "growth": {"kind": "piecewise", "extrapolate": "hold", "points": [
        {"at": "0d", "rps": 6}, {"at": "120d", "rps": 12}, {"at": "330d", "rps": choice}]}}, count=12)
    scenario = simulator.load_scenario(data)
    outcome = plan_orders(scenario, _settings(60), workers=1)
    comparison = compare_replan(outcome, scenario, workers=1)
    open_loop, replan = (comparison.document["policies"][k] for k in ("open_loop", "replan"))
    # The open-loop plan buys for the growing paths on every path: 36 req/s (and the counting
    # noise) need 36 to 40 GPUs, 24 to 28 more than the 12 it has.
    assert 24 <= open_loop["gpus_ordered"]["mean"] <= 28 and open_loop["gpus_ordered"]["p10"] == open_loop["gpus_ordered"]["p90"]
    # Re-planning buys the same on growing paths, and on flat ones at least 8 fewer: once the
    # forecast has seen the slowdown it orders nothing more (what it ordered before stays);
    # it commits less at the start.
    drawn = comparison.results.inputs.set_index("path").iloc[:, 0]
    bought = comparison.results.orders.groupby("path")["count"].sum().reindex(drawn.index, fill_value=0)
    flat, growing = bought[drawn == 12], bought[drawn == 36]
    assert len(flat) >= 10 and len(growing) >= 10
    assert growing.min() >= open_loop["gpus_ordered"]["p50"] - 4
    assert flat.max() <= growing.min() - 8
    assert replan["gpus_ordered"]["mean"] < open_loop["gpus_ordered"]["mean"] - 3
    assert replan["committed_at_start_usd"] < open_loop["committed_at_start_usd"]
    # At the same risk: no month of re-planning's is above the target beyond its interval.
    for row in replan["risk_by_period"]:
        assert row["ci"][0] <= 0.1, row
    # The difference is per path, on the same futures: re-planning never buys more.
    assert comparison.document["difference"]["gpus_ordered"]["p90"] <= 0


def test_the_forecast_is_weighted_least_squares_with_the_prior_as_two_observations():
    rng = np.random.default_rng(7)
    days = 40
    ages = (np.arange(days) - days + 0.5) / 365.25
    prior = np.full(days, 5_000.0)
    seen = rng.poisson(prior * np.exp(0.1 + 0.8 * ages + rng.normal(0, 0.05, days)))
    ahead = np.array([0.1, 0.25, 0.5])
    s = 0.3
    mean, sd = log_ratio_forecast(seen.astype(float), prior, ages, ahead, s, poisson=True)
    # The reference: the same noise (the residual scatter of an OLS line beyond the counting
    # noise, plus the counting noise 1/n) as weights; the prior as observations 0 = level and
    # 0 = trend, each with variance s².
    y = np.log(seen / prior)
    x = sm.add_constant(ages)
    counting = 1.0 / seen
    ols = sm.OLS(y, x).fit()
    scatter = max(ols.ssr / (days - 2) - counting.mean(), 0.0)
    noise = scatter + counting
    augmented_x = np.vstack([x, [[1.0, 0.0], [0.0, 1.0]]])
    augmented_y = np.concatenate([y, [0.0, 0.0]])
    weights = 1.0 / np.concatenate([noise, [s**2, s**2]])
    wls = sm.WLS(augmented_y, augmented_x, weights=weights).fit()
    covariance = wls.normalized_cov_params  # (X'WX)^-1: the posterior covariance with known noise
    design = sm.add_constant(ahead)
    np.testing.assert_allclose(mean, design @ wls.params, rtol=1e-9)
    np.testing.assert_allclose(sd, np.sqrt(np.einsum("ij,jk,ik->i", design, covariance, design) + scatter), rtol=1e-9)
    # Without data: the prior alone, level and trend each of sd s.
    mean0, sd0 = log_ratio_forecast(np.zeros(0), np.zeros(0), np.zeros(0), ahead, s, poisson=False)
    np.testing.assert_allclose(mean0, 0.0)
    np.testing.assert_allclose(sd0, s * np.sqrt(1.0 + ahead**2))


def test_replanning_is_refused_with_a_target_that_is_not_a_probability():
    data = copy.deepcopy(base_scenario())
    data["fleet"]["pools"][0]["procurement"] = {"policy": "replan", "order_count": 4, "target": 1.5}
    with pytest.raises(simulator.ScenarioError, match=r"fleet\.pools\[0\]\.procurement\.target"):
        simulator.load_scenario(data)


def test_plan_compare_replan_writes_both_policies_into_plan_json_and_the_report(tmp_path):
    data = _growing("300d", {"base_rps": 6.0, "noise": "none", "growth": {"kind": "exponential", "rate_per_month": 0.1}})
    data["fleet"]["pools"][0]["procurement"] = {"policy": "replan", "order_count": 4, "every": "30d", "prior_sd": 0}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "plan"
    result = CliRunner().invoke(main, ["plan", str(tmp_path / "s.yaml"), "--order", "a:4:400", "--review-every", "30d",
                                       "--set", "fleet.pools[0].procurement.lead_time=60d", "--paths", "2",
                                       "--compare-replan", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "re-planning" in result.output
    document = json.loads((out / "plan.json").read_text())
    replan = document["replan"]
    # Demand known and prior_sd 0 on the pool's own replan policy: the same two orders of 4.
    assert replan["policies"]["open_loop"]["gpus_ordered"]["mean"] == 8.0
    assert replan["policies"]["replan"]["gpus_ordered"]["mean"] == 8.0
    assert replan["difference"]["gpus_ordered"] == {"mean": 0.0, "p10": 0.0, "p50": 0.0, "p90": 0.0}
    # Re-planning's first review orders nothing (8 GPUs last until day 92; it sees to day 90).
    assert replan["policies"]["replan"]["committed_at_start_usd"] == 0.0
    assert replan["policies"]["open_loop"]["committed_at_start_usd"] == 8 * 30_000
    assert 'id="plan-replan-table"' in (out / "report.html").read_text()


def test_a_pool_a_model_prefers_less_gets_only_what_its_preferred_pools_cannot_serve():
    # 10 req/s on 1 req/s replicas; its first choice, a rented pool of 4 GPUs, serves 4; the
    # re-planned pool "a" (second choice) needs ceil(10 × 0.999 − 4) = 6 GPUs: 2 orders of 4.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "20d", "step": "1h"})
    data["models"][0]["demand"]["base_rps"] = 10.0
    data["fleet"]["pools"][0].update(count=0, procurement={"policy": "replan", "order_count": 4, "every": "7d",
                                                           "prior_sd": 0})
    data["fleet"]["pools"].insert(0, {"name": "cloud", "gpu": "H100", "count": 4,
                                      "acquisition": {"type": "on_demand", "usd_per_gpu_hour": 2.0}})
    data["models"][0]["pools"] = ["cloud", "a"]
    result = run(data, paths=1)
    assert [(t.strftime("%Y-%m-%d"), int(n)) for t, n in zip(result.orders["ordered"], result.orders["count"],
                                                               strict=True)] == [("2026-01-01", 8)]
    assert result.summary["first_shortfall_time"]["probability"] == 0.0
