"""Capacity sold by the GPU-hour: held before serving, billed, credited when short, renewed,
defaulted, and signed from a pipeline — by hand and against the laws that drive them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.helpers import base_scenario, run

HOURS = 24.0


def _case(gpus: int, **contract) -> dict:
    data = base_scenario(pricing={"input_usd_per_1m": 0.0, "output_usd_per_1m": 1.0})
    data["contracts"] = [{"name": "acme", "pool": "a", "gpus": gpus, "start": "2026-01-01", "term": "12mo",
                          "usd_per_gpu_hour": 2.0, **contract}]
    return data


def test_contracted_gpus_are_held_before_serving_and_billed_by_hand():
    # 8 GPUs at 1 req/s each; 5 are sold: serving keeps 3 req/s of the 4 asked. The day bills
    # 5 × 24 × $2 = $240 of contract revenue; tokens bring 3 × 86,400 × 200 / 1e6 × $1.
    results = run(_case(5), paths=1)
    ts = results.timeseries
    assert np.allclose(ts["gpus_contracted"], 5) and np.allclose(ts["gpus_inference"], 3)
    assert ts["unserved_requests"].sum() == pytest.approx(1.0 * 86_400)
    assert ts["contract_revenue_usd"].sum() == pytest.approx(5 * HOURS * 2.0)
    assert ts["revenue_usd"].sum() == pytest.approx(5 * HOURS * 2.0 + 3 * 86_400 * 200 / 1e6)
    book = results.contract_book
    assert book["gpu_hours_contracted"].sum() == pytest.approx(5 * HOURS)
    assert book["revenue_usd"].sum() == pytest.approx(240.0)


def test_a_contract_larger_than_the_pool_is_credited_for_what_is_missing():
    # 10 GPUs sold, 8 there: 8 delivered, 2 × 24 GPU-hours credited at $3; nothing left to serve.
    results = run(_case(10, sla_credit_usd_per_gpu_hour=3.0), paths=1)
    book = results.contract_book
    assert book["gpu_hours_delivered"].sum() == pytest.approx(8 * HOURS)
    assert book["sla_credits_usd"].sum() == pytest.approx(2 * HOURS * 3.0)
    assert results.timeseries["contract_revenue_usd"].sum() == pytest.approx(8 * HOURS * 2.0 - 2 * HOURS * 3.0)
    assert results.timeseries["served_requests"].sum() == 0.0
    assert results.summary["contracts"]["acme"]["delivered_share"] == pytest.approx(0.8)


def test_take_or_pay_bills_the_committed_share_when_usage_is_lower():
    # The customer uses 40% of its GPUs but pays for 70% of them: $2 × 0.7 per GPU-hour.
    results = run(_case(4, take_or_pay=0.7, usage=0.4), paths=1)
    assert results.contract_book["billing_usd"].sum() == pytest.approx(4 * HOURS * 2.0 * 0.7)


def test_renewals_follow_their_probability():
    # One-month terms renewed with probability 1/2 over three months: terms begun per path
    # 1 + 1/2 + 1/4 = 1.75 on average (variance 0.6875), over 200 paths.
    data = _case(2, term="1mo", renewal_probability=0.5)
    data["horizon"] = {"start": "2026-01-01", "duration": "84d", "step": "7d"}  # terms begin Jan 1, Feb 1, Mar 1
    results = run(data, paths=200)
    mean = results.summary["contracts"]["acme"]["terms_started_mean"]
    assert mean == pytest.approx(1.75, abs=4 * math.sqrt(0.6875 / 200))


def test_defaults_follow_their_yearly_probability():
    # A one-year term with a 30% yearly default probability, over the 364 days of 52 weekly
    # steps: a default on 1 − 0.7^(364/365.25) = 29.9% of paths; the Wilson interval of 300
    # paths holds it.
    data = _case(2, default_probability_per_year=0.3, prepaid_share=0.5)
    data["horizon"] = {"start": "2026-01-01", "duration": "364d", "step": "7d"}
    results = run(data, paths=300)
    entry = results.summary["contracts"]["acme"]
    low, high = entry["default_probability_ci"]
    p = 1 - 0.7 ** (364 / 365.25)
    assert low <= p <= high and abs(entry["default_probability"] - p) < 4 * math.sqrt(p * (1 - p) / 300)
    # A defaulted contract's unused prepayment is kept: other income, and nothing stays deferred.
    pnl = results.pnl
    defaulted = set(results.contract_book.loc[results.contract_book["defaulted"], "path"])
    last = pnl[pnl["month"] == pnl["month"].max()].set_index("path")
    assert all(last.loc[p, "deferred_revenue_usd"] == pytest.approx(0.0, abs=1e-6) for p in defaulted)
    assert pnl[pnl["path"].isin(defaulted)]["other_income_usd"].sum() > 0


def test_a_pipeline_signs_contracts_at_its_rate():
    # Two arrivals a month over 119 days: 7.8 contracts per path on average (Poisson), 150 paths.
    data = base_scenario()
    data["horizon"] = {"start": "2026-01-01", "duration": "119d", "step": "7d"}
    data["fleet"]["pools"][0]["count"] = 10_000
    data["contract_pipeline"] = [{"name": "inbound", "pool": "a", "arrivals_per_month": 2.0, "term": "1mo",
                                  "gpus": {"low": 8, "high": 16}, "usd_per_gpu_hour": {"low": 1.5, "high": 2.5}}]
    results = run(data, paths=150)
    entry = results.summary["contracts"]["inbound"]
    expected = 2.0 * 119 / 30.4375  # the horizon's 119 days, in months of 30.4375 days
    assert entry["terms_started_mean"] == pytest.approx(expected, abs=4 * math.sqrt(expected / 150))
    book = results.contract_book
    rate = book["billing_usd"].sum() / book["gpu_hours_delivered"].sum()
    assert 1.5 < rate < 2.5 and abs(rate - 2.0) < 0.1  # prices uniform on [1.5, 2.5]


def test_a_pipeline_does_not_sell_gpus_a_signed_contract_will_take():
    # 8 GPUs, all signed from March 1; offers of 8 GPUs arrive from January: none fits before
    # March (the signed contract's GPUs are not for sale) nor after (all held).
    data = _case(8)
    data["contracts"][0]["start"] = "2026-03-01"
    data["horizon"] = {"start": "2026-01-01", "duration": "119d", "step": "7d"}
    data["contract_pipeline"] = [{"name": "offers", "pool": "a", "arrivals_per_month": 4.0, "term": "1mo",
                                  "gpus": {"low": 8, "high": 8}, "usd_per_gpu_hour": {"low": 3, "high": 3}}]
    results = run(data, paths=5)
    assert "offers" not in results.summary["contracts"]
    assert results.pools["gpus_contracted"].max() <= 8
