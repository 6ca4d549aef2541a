"""The books balance, on generated scenarios (Hypothesis): with facilities, equity, deposits,
late credits, sales at market, GPUs in service before the horizon, contracts (signed before
or during the horizon, prepaid, renewed, defaulted, from a pipeline) and both tax bases.

Per path and month: assets = liabilities + equity to the cent; the cash balance moves by the
month's net cash flow; net income = EBT − tax. Without resale curves, the GPUs' book value the
ledger carries (cost less the P&L's depreciation, less sales) equals each cohort's own
straight-line value summed (:mod:`simulator.economics.assets`), a second reckoning of the same
fleet from the engine's log.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import base_scenario, run

CENT = 0.01


@st.composite
def books_scenarios(draw):
    months = draw(st.integers(3, 14))
    pools = []
    for p in range(draw(st.integers(1, 3))):
        owned = p == 0 or draw(st.booleans())
        pool = {"name": f"p{p}", "gpu": draw(st.sampled_from(["H100", "B200", "a100-80gb"])),
                "count": draw(st.integers(0, 40))}
        if owned:
            price = draw(st.floats(0, 60_000))
            acquisition = {"type": "owned", "price_usd": price, "depreciation_years": draw(st.floats(0.2, 6))}
            in_service = pool["count"] and draw(st.booleans())
            if in_service:
                acquisition["in_service_since"] = f"{draw(st.integers(2019, 2025))}-0{draw(st.integers(1, 9))}-01"
                if acquisition["in_service_since"] >= "2024" and acquisition["depreciation_years"] > 2.5 \
                        and draw(st.booleans()):
                    acquisition["book_value_usd"] = draw(st.floats(0, 1)) * price * pool["count"]
            elif draw(st.booleans()):
                acquisition["retire_years"] = draw(st.floats(0.1, 3))
            if draw(st.booleans()):
                acquisition["purchase_terms"] = {
                    "deposit_share": draw(st.floats(0, 0.5)),
                    "deposit_before_delivery": f"{draw(st.integers(0, 200))}d",
                    "late_credit_usd_per_gpu_day": draw(st.floats(0, 100))}
            pool["orders"] = [{"at": f"{draw(st.integers(-60, months * 30))}d", "count": draw(st.integers(1, 64)),
                               "lead_time": f"{draw(st.integers(61, 200))}d",
                               "slip": {"dist": "exponential", "mean": f"{draw(st.integers(1, 40))}d"}}
                              for _ in range(draw(st.integers(0, 2)))]
            if pool["count"] and "retire_years" not in acquisition and draw(st.booleans()):
                pool["changes"] = [{"at": f"{draw(st.integers(1, months * 30))}d",
                                    "remove": draw(st.integers(1, pool["count"]))}]
        else:
            acquisition = {"type": "on_demand", "usd_per_gpu_hour": draw(st.floats(0, 5))}
        pool["acquisition"] = acquisition
        pools.append(pool)
    data = base_scenario(pricing={"input_usd_per_1m": 0.0, "output_usd_per_1m": draw(st.floats(0, 40))})
    data["horizon"] = {"start": "2026-01-01", "duration": f"{months}mo", "step": "1d"}
    data["fleet"]["pools"] = pools
    data["models"][0]["pools"] = [pool["name"] for pool in pools]
    data["models"][0]["demand"]["base_rps"] = draw(st.floats(0.5, 40))
    data["opex"] = [{"name": "payroll", "usd_per_month": draw(st.floats(0, 2e6))}]
    data["taxes"] = {"rate": draw(st.floats(0, 0.4)), "basis": draw(st.sampled_from(["monthly", "yearly"])),
                     "payment_month": draw(st.integers(1, 12))}
    owned = [pool["name"] for pool in pools if pool["acquisition"]["type"] == "owned"]
    facilities = []
    if draw(st.booleans()):
        facilities.append({"name": "term", "kind": "term_loan", "opening_balance_usd": draw(st.floats(0, 5e7)),
                           "rate_per_year": draw(st.floats(0, 0.2)), "term_months": draw(st.integers(1, 60)),
                           "amortization": draw(st.sampled_from(["annuity", "straight", "bullet"])),
                           "covenants": {"min_dscr": 1.2, "max_ltv": 0.8}})
    if draw(st.booleans()):
        facilities.append({"name": "gpus", "kind": "delayed_draw", "share_of_capex": draw(st.floats(0.05, 1)),
                           "pools": owned[:1], "limit_usd": draw(st.floats(1e5, 1e8)),
                           "base_rate": [{"at": "2026-01-01", "rate_per_year": 0.04},
                                         {"at": "2026-06-01", "rate_per_year": draw(st.floats(0, 0.1))}],
                           "spread_per_year": 0.03, "interest_only_months": draw(st.integers(0, 6)),
                           "term_months": draw(st.integers(1, 48)), "commitment_fee_per_year": 0.005,
                           "upfront_fee_share": 0.01})
    if draw(st.booleans()):
        facilities.append({"name": "rcf", "kind": "revolver", "limit_usd": draw(st.floats(0, 2e7)),
                           "cash_floor_usd": draw(st.floats(0, 5e6)), "rate_per_year": 0.12,
                           "commitment_fee_per_year": 0.004})
    data["financing"] = {"opening_cash_usd": draw(st.floats(-1e6, 5e7)), "facilities": facilities,
                         "share_of_capex": draw(st.sampled_from([0.0, 0.5])), "cap_usd": 3e6,
                         "equity": [{"at": f"2026-0{draw(st.integers(1, 9))}-15", "amount_usd": 1e7}]
                         if draw(st.booleans()) else []}
    held = [pool for pool in pools if pool["acquisition"]["type"] == "owned"]
    if held and draw(st.booleans()):
        data["contracts"] = [{"name": "c", "pool": held[0]["name"], "gpus": draw(st.integers(1, 30)),
                              "start": f"2025-{draw(st.integers(6, 12)):02d}-01",
                              "term": f"{draw(st.integers(1, 12))}mo", "usd_per_gpu_hour": draw(st.floats(0, 4)),
                              "prepaid_share": draw(st.floats(0, 1)), "renewal_probability": draw(st.floats(0, 1)),
                              "default_probability_per_year": draw(st.floats(0, 0.9)),
                              "sla_credit_usd_per_gpu_hour": draw(st.floats(0, 5)),
                              "take_or_pay": draw(st.floats(0, 1)), "usage": draw(st.floats(0, 1))}]
        if draw(st.booleans()):
            data["contract_pipeline"] = [{"name": "p", "pool": held[0]["name"], "arrivals_per_month": 1.0,
                                          "term": "2mo", "gpus": {"low": 1, "high": 8},
                                          "usd_per_gpu_hour": {"low": 1, "high": 3}, "prepaid_share": 0.3,
                                          "default_probability_per_year": 0.5}]
    if draw(st.booleans()):
        data["market_value"] = {"H100": {"decay_per_year": draw(st.floats(0, 0.6))},
                                "B200": {"points": [{"age": "0d", "share": 1.0}, {"age": "730d", "share": 0.5}]}}
    return data


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(books_scenarios())
def test_the_books_balance_every_month_of_every_path(data):
    pnl = run(data, paths=2).pnl
    scale = max(1.0, float(pnl["total_assets_usd"].abs().max()))
    tolerance = max(CENT, 1e-12 * scale)  # a cent; past ~10^10 dollars, float64's own precision
    assert np.all(np.abs(pnl["total_assets_usd"] - pnl["total_liabilities_usd"] - pnl["total_equity_usd"]) <= tolerance)
    assert np.all(np.abs(pnl["balance_check_usd"]) <= tolerance)
    for _, path in pnl.groupby("path"):
        cash = path["cash_balance_usd"].to_numpy()
        moved = np.diff(cash, prepend=data["financing"]["opening_cash_usd"])
        assert np.allclose(moved, path["cash_flow_usd"].to_numpy(), atol=tolerance, rtol=0)
    assert np.allclose(pnl["net_income_usd"], pnl["ebt_usd"] - pnl["tax_usd"], atol=tolerance, rtol=0)
    assert (pnl["loan_drawn_usd"] >= 0).all()  # a month of credits above payments draws nothing
    if "market_value" not in data:
        assert np.allclose(pnl["fleet_market_value_usd"], pnl["ppe_net_usd"], atol=max(1.0, 1e-9 * scale), rtol=0)
