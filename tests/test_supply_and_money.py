"""Supply and money, one mechanism at a time, with the arithmetic written out."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import simulator
from simulator.cli import main
from tests.helpers import base_scenario, run

YEAR_S = 365.25 * 86400
H100_SITE_KW = 0.7 * 1.8 * 1.3  # TDP × default server power factor × default PUE


def _installed(result, pool=None):
    frame = result.timeseries if pool is None else result.pools[result.pools["pool"] == pool]
    return frame["gpus_installed"].to_numpy()


def test_an_order_lands_after_its_lead_time_and_slip_at_the_exact_step():
    # Ordered 2026-01-02 00:00, lead time 3 days, slip fixed at 12 h: in service from
    # 2026-01-05 12:00, i.e. step 4*24 + 12 = 108 of an hourly horizon; paid on delivery.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "10d", "step": "1h"})
    pool = data["fleet"]["pools"][0]
    pool["acquisition"] = {"type": "owned", "price_usd": 25_000}
    pool["orders"] = [{"at": "2026-01-02", "count": 16, "lead_time": "3d", "slip": "12h"}]
    ts = run(data).timeseries
    installed = ts["gpus_installed"].to_numpy()
    assert (installed[:108] == 8).all() and (installed[108:] == 24).all()
    capex = ts["capex_usd"].to_numpy()
    assert capex[0] == 8 * 25_000 and capex[108] == 16 * 25_000
    assert capex.sum() == 24 * 25_000


def test_reserved_capacity_is_paid_while_idle_for_its_term():
    # 8 GPUs reserved at $2/GPU-h from day 5 for 10 days, no demand: $2 × 8 × 240 h = $3,840.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "20d", "step": "1h"})
    data["fleet"]["pools"][0]["acquisition"] = {"type": "reserved", "usd_per_gpu_hour": 2.0, "term": "10d", "start": "5d"}
    data["models"][0]["demand"]["base_rps"] = 0.0
    result = run(data)
    ts = result.timeseries
    assert ts["cost_cloud_usd"].sum() == pytest.approx(3840.0, abs=1e-9)
    assert ts["cost_cloud_reserved_usd"].sum() == pytest.approx(3840.0, abs=1e-9)
    installed = ts["gpus_installed"].to_numpy()
    assert (installed[:120] == 0).all() and (installed[120:360] == 8).all() and (installed[360:] == 0).all()
    assert (ts["utilization"] == 0).all()


def test_depreciation_cash_and_financing_agree_with_a_worked_example():
    # 10 GPUs at $30,000 delivered at the start, 5-year life; half the capex borrowed at 12% a
    # year, repaid monthly over one year. January has 31 days.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "90d", "step": "1h"})
    data["fleet"]["pools"][0].update(count=10, acquisition={"type": "owned", "price_usd": 30_000, "depreciation_years": 5})
    data["models"][0]["demand"]["base_rps"] = 0.0
    data["financing"] = {"share_of_capex": 0.5, "rate_per_year": 0.12, "term_years": 1}
    pnl = run(data).pnl
    jan, feb, mar = (pnl.iloc[i] for i in range(3))
    assert round(jan["cogs_depreciation_usd"], 2) == round(300_000 / (5 * 365.25) * 31, 2) == 5092.40
    assert round(feb["cogs_depreciation_usd"], 2) == round(300_000 / (5 * 365.25) * 28, 2)
    # Loan: $150,000 at 1% a month over 12 months: payment = 150000 × 0.01 / (1 − 1.01^−12) = $13,327.32.
    assert jan["loan_drawn_usd"] == 150_000 and jan["capex_usd"] == 300_000
    assert jan["interest_usd"] == 0 and jan["loan_repaid_usd"] == 0
    assert round(feb["interest_usd"], 2) == 1500.00
    assert round(feb["loan_repaid_usd"], 2) == round(13_327.32 - 1500.00, 2) == 11_827.32
    assert round(mar["interest_usd"], 2) == round((150_000 - 11_827.3237) * 0.01, 2) == 1381.73
    # Cash: −300,000 + 150,000 in January (no revenue, no cash costs); then −13,327.32 a month.
    assert round(jan["cash_flow_usd"], 2) == -150_000.00
    assert round(feb["cash_flow_usd"], 2) == -13_327.32
    payment = 150_000 * 0.01 / (1 - 1.01**-12)
    assert round(mar["cumulative_cash_usd"], 2) == round(-150_000 - 2 * payment, 2)
    # Depreciation is not cash, but it is in the operating result; interest is below it.
    assert round(feb["net_result_usd"], 2) == round(-feb["cogs_depreciation_usd"] - 1500.00, 2)


def test_a_power_cap_blocks_exactly_the_deliveries_that_do_not_fit():
    # A 0.1 MW site holds floor(100 / 1.638) = 61 H100s. 40 at the start; 32 delivered on day 2:
    # 21 fit, 11 wait. The cap rises to 0.2 MW on day 4 and the 11 are installed then.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "6d", "step": "1h"})
    data["fleet"]["pools"][0].update(count=40, acquisition={"type": "owned", "price_usd": 1000},
                                     changes=[{"at": "2d", "add": 32}])
    data["power"] = {"caps": [{"at": "2026-01-01", "mw": 0.1}, {"at": "4d", "mw": 0.2}]}
    assert int(100 / H100_SITE_KW) == 61
    ts = run(data).timeseries
    installed, blocked = ts["gpus_installed"].to_numpy(), ts["gpus_power_blocked"].to_numpy()
    assert (installed[:48] == 40).all() and (blocked[:48] == 0).all()
    assert (installed[48:96] == 61).all() and (blocked[48:96] == 11).all()
    assert (installed[96:] == 72).all() and (blocked[96:] == 0).all()
    assert ts["capex_usd"].to_numpy()[48] == 32 * 1000  # paid on delivery, blocked or not
    # Depreciation only for GPUs in service: 40, then 61, then 72 GPUs at $1000 / 5 y.
    rate = 1000 / (5 * YEAR_S) * 3600
    dep = ts["cost_depreciation_usd"].to_numpy()
    assert dep[:48] == pytest.approx(40 * rate) and dep[48:96] == pytest.approx(61 * rate)
    assert dep[96:] == pytest.approx(72 * rate)


def test_power_cap_below_the_initial_fleet_is_refused(tmp_path):
    data = base_scenario()
    data["fleet"]["pools"][0]["count"] = 100
    data["power"] = {"caps": [{"at": "2026-01-01", "mw": 0.1}]}
    with pytest.raises(simulator.ScenarioError, match=r"power\.caps\[0\]\.mw: 0.1 MW is below the initial owned fleet's 0.164 MW"):
        simulator.load_scenario(data)


def test_the_autoscaler_follows_a_demand_step_with_its_delay_and_cooldown():
    # One on-demand pool: base 2 GPUs, at most 20, target utilization 0.5, provisioning 2 h,
    # cooldown 3 h, deciding every hour on the demand of the step it decides for. 1 GPU serves
    # 1 req/s. Demand is 1 req/s (3,600 per step), 5 req/s (18,000) in steps 24-47, then 1 again.
    # t = 24 h: ceil(18,000 / (3,600 x 0.5)) = 10 wanted -> ask 8, in service at 26 h (step 26);
    # steps 24 and 25 lose 18,000 - 7,200 each (the old autoscaler, deciding on the step just
    # integrated, asked an hour later and lost three steps).
    # t = 48 h (cooldown over at 27 h; 10 wanted until then): ceil(3,600 / 1,800) = 2 -> release 8.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "3d", "step": "1h"})
    data["fleet"]["pools"][0].update(count=2, acquisition={
        "type": "on_demand", "usd_per_gpu_hour": 1.0, "max_count": 20, "provisioning_delay": "2h",
        "autoscale": {"target_utilization": 0.5, "cooldown": "3h"}})
    data["models"][0]["demand"] = {"noise": "none", "growth": {"kind": "piecewise", "extrapolate": "hold", "points": [
        {"at": "0h", "rps": 1}, {"at": "24h", "rps": 1}, {"at": "1441min", "rps": 5},
        {"at": "48h", "rps": 5}, {"at": "2881min", "rps": 1}]}}
    ts = run(data).timeseries
    installed = ts["gpus_installed"].to_numpy()
    assert installed.tolist() == [2] * 26 + [10] * 22 + [2] * 24
    unserved = ts["unserved_requests"].to_numpy()
    assert unserved[24:26].tolist() == [10_800, 10_800]
    assert (unserved[:24] == 0).all() and (unserved[26:] == 0).all()
    assert ts["cost_cloud_on_demand_usd"].sum() == pytest.approx(2 * 72 + 8 * 22)


def test_owned_gpus_retire_at_end_of_life():
    # retire_years 0.01 = 87.66 h: the GPUs serve 0.66 of step 87 (8 x 0.66 = 5.26 on average,
    # shown as 5) and are gone from step 88: the 4 req/s of demand are served for 87.66 h.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "5d", "step": "1h"})
    data["fleet"]["pools"][0]["acquisition"] = {"type": "owned", "price_usd": 100, "retire_years": 0.01}
    ts = run(data).timeseries
    installed = ts["gpus_installed"].to_numpy()
    assert (installed[:87] == 8).all() and installed[87] == 5 and (installed[88:] == 0).all()
    retire_s = 0.01 * 365.25 * 86400
    assert ts["served_requests"].sum() == pytest.approx(4.0 * retire_s, rel=1e-12)


def test_api_overflow_takes_what_self_hosting_cannot_within_its_rate_limit():
    # 8 GPUs serve 8 req/s of 10 req/s; the API takes 1 req/s (its limit); 1 req/s goes unserved.
    data = base_scenario()
    model = data["models"][0]
    model["demand"]["base_rps"] = 10.0
    model["api"] = {"mode": "overflow", "input_usd_per_1m": 1.0, "output_usd_per_1m": 5.0, "rate_limit_rps": 1.0}
    result = run(data)
    ts = result.timeseries
    day = 86400
    assert ts["served_requests"].sum() == pytest.approx(9 * day)
    assert ts["unserved_requests"].sum() == pytest.approx(1 * day)
    assert ts["api_requests"].sum() == pytest.approx(1 * day)
    # An API request of 1000 + 200 tokens costs 0.001 + 0.001 = $0.002.
    assert ts["cost_api_usd"].sum() == pytest.approx(0.002 * day)
    assert ts["cost_cloud_usd"].sum() == pytest.approx(0.002 * day)
    assert (ts["shortfall_gpus"] == 1).all()


def test_owned_rented_and_api_give_three_pnls_whose_differences_are_derived_by_hand():
    # The same 4 req/s for 30 days (10,368,000 requests of 1000 in + 200 out tokens), sold at
    # $2 in / $6 out per 1M: revenue = 10,368,000 × (0.002 + 0.0012) = $33,177.60 in all three.
    # Owned: 8 H100 at $20,000 over 5 y: 8 × 20000 / (5 × 365.25) × 30 = $2,628.34 depreciation;
    #        energy 8 × 0.7 kW × 0.75 × 1.8 × 1.3 × 720 h × $0.10 = $707.62 (draw 0.75 busy and idle);
    #        facility 8 × 0.7 × 1.8 kW × $150 × (30 / 30.4375) = $1,490.24.
    # Rented: 8 × $2.50 × 720 h = $14,400.
    # API:    10,368,000 × (1000 × 0.5 + 200 × 1.5) / 1e6 = $8,294.40.
    horizon = {"start": "2026-01-01", "duration": "30d", "step": "1h"}
    pricing = {"input_usd_per_1m": 2.0, "output_usd_per_1m": 6.0}
    common = dict(horizon=horizon, pricing=pricing, energy={"usd_per_kwh": 0.10}, facility={"usd_per_kw_month": 150})
    owned = base_scenario(**common)
    owned["fleet"]["pools"][0]["acquisition"] = {"type": "owned", "price_usd": 20_000}
    rented = base_scenario(**common)
    rented["fleet"]["pools"][0]["acquisition"] = {"type": "on_demand", "usd_per_gpu_hour": 2.5}
    api = base_scenario(**common)
    api["fleet"]["pools"] = []
    api["models"][0].update(pools=[], api={"mode": "all", "input_usd_per_1m": 0.5, "output_usd_per_1m": 1.5})
    pnls = {name: run(data).pnl.sum(numeric_only=True) for name, data in
            (("owned", owned), ("rented", rented), ("api", api))}
    for pnl in pnls.values():
        assert pnl["revenue_usd"] == pytest.approx(33_177.60, abs=1e-6)
    assert pnls["owned"]["cogs_depreciation_usd"] == pytest.approx(8 * 20_000 / (5 * 365.25) * 30, rel=1e-12)
    assert pnls["owned"]["cogs_energy_usd"] == pytest.approx(8 * 0.7 * 0.75 * 1.8 * 1.3 * 720 * 0.10, rel=1e-12)
    assert pnls["owned"]["cogs_facility_usd"] == pytest.approx(8 * 0.7 * 1.8 * 150 * 30 / 30.4375, rel=1e-12)
    assert pnls["rented"]["cogs_usd"] == pytest.approx(14_400.0, rel=1e-12)
    assert pnls["api"]["cogs_usd"] == pytest.approx(8_294.40, rel=1e-12)
    owned_cogs = 8 * 20_000 / (5 * 365.25) * 30 + 8 * 0.7 * 0.75 * 1.8 * 1.3 * 720 * 0.10 + 8 * 0.7 * 1.8 * 150 * 30 / 30.4375
    # Differences of gross margin are differences of COGS.
    assert pnls["owned"]["gross_margin_usd"] - pnls["rented"]["gross_margin_usd"] == pytest.approx(14_400 - owned_cogs, rel=1e-9)
    assert pnls["api"]["gross_margin_usd"] - pnls["rented"]["gross_margin_usd"] == pytest.approx(14_400 - 8_294.40, rel=1e-9)
    # Cash differs from the P&L only by the purchase: owned pays $160,000 on day one.
    assert pnls["owned"]["capex_usd"] == 160_000 and pnls["rented"]["capex_usd"] == 0
    assert pnls["owned"]["cash_flow_usd"] == pytest.approx(
        33_177.60 - (owned_cogs - 8 * 20_000 / (5 * 365.25) * 30) - 160_000, rel=1e-9)


def test_token_prices_decline_year_over_year():
    # 30% a year: a step t years in (at its midpoint) earns (1 − 0.3)^t of the starting price.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "2y", "step": "1mo"},
                         pricing={"input_usd_per_1m": 1.0, "output_usd_per_1m": 5.0, "decline_per_year": 0.3})
    revenue = run(data).timeseries["revenue_usd"].to_numpy()
    requests = 4.0 * 365.25 / 12 * 86400
    expected = requests * 0.002 * 0.7 ** ((np.arange(24) + 0.5) / 12)
    np.testing.assert_allclose(revenue, expected, rtol=1e-12)


def test_subscribers_pay_monthly_and_drive_demand():
    # 4 req/s from subscribers sending 20 requests a day = 17,280 subscribers at $20 a month
    # of 730.5 h (30.4375 days); "2mo" from 2026-01-01 is January + February, 59 days =
    # 1,416 h: 17,280 * 20 * 1,416 / 730.5 (it was 17,280 * 20 * 2 with two fixed months).
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "2mo", "step": "1h"})
    data["models"][0]["subscription"] = {"usd_per_month": 20, "requests_per_day": 20}
    result = run(data)
    assert result.timeseries["revenue_usd"].sum() == pytest.approx(17_280 * 20 * 1416 / 730.5, rel=1e-12)
    assert result.timeseries["subscribers"].to_numpy() == pytest.approx(17_280)
    # 8 on-demand-free owned GPUs at price 0: COGS is zero here, so cost per subscriber is 0.
    assert result.summary["quantiles"]["cost_per_subscriber_month_usd"]["p50"] == pytest.approx(0.0)


def test_alerts_report_breaches_with_their_first_month_and_probability():
    # 8 on-demand GPUs at $1/h: $5,952 in January (31 d), $5,376 in February (28 d). A $5,500
    # budget is breached in January only; a 60% utilization ceiling is never breached (4 of 8
    # GPUs busy is 50%); a 60% floor is breached in both months.
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "59d", "step": "1h"})
    data["fleet"]["pools"][0]["acquisition"] = {"type": "on_demand", "usd_per_gpu_hour": 1.0}
    data["alerts"] = {"monthly_compute_budget_usd": 5500, "max_utilization": 0.6, "min_utilization": 0.6}
    summary = run(data, paths=3).summary
    alerts = {entry["alert"]: entry for entry in summary["alerts"]}
    budget = alerts["monthly_compute_budget_usd"]
    assert budget["probability"] == 1.0 and budget["months_breached_mean"] == 1.0
    assert budget["first_month"]["p50"].startswith("2026-01-01")
    assert alerts["max_utilization"]["probability"] == 0.0 and alerts["max_utilization"]["first_month"]["p50"] is None
    assert alerts["min_utilization"]["months_breached_mean"] == 2.0


def test_identical_variants_give_identical_results_and_share_random_numbers(tmp_path):
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "20d", "step": "1h"})
    data["models"][0]["demand"].update(noise="poisson", base_rps=7.0)
    data["fleet"]["pools"][0]["failures"] = {"rate_per_gpu_hour": 0.01, "repair": "5h"}
    data["variants"] = {"same": {"fleet.pools[0].count": 8}, "twin": {"fleet.pools[0].count": 8},
                        "bigger": {"fleet.pools[0].count": 12}}
    scenario = simulator.load_scenario(data)
    from simulator.decisions.variants import simulate_variants

    runs = simulate_variants(scenario, paths=3, executor="serial").results
    pd.testing.assert_frame_equal(runs["same"].timeseries, runs["twin"].timeseries)
    pd.testing.assert_frame_equal(runs["base"].timeseries, runs["same"].timeseries)
    # A different plan sees the same demand draws (common random numbers).
    np.testing.assert_array_equal(runs["bigger"].timeseries["demand_requests"], runs["base"].timeseries["demand_requests"])
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["run", str(_write(tmp_path, data)), "--out", str(out), "--paths", "2", "-q"])
    assert result.exit_code == 0, result.output
    assert (out / "variants" / "bigger" / "summary.json").exists() and (out / "comparison.csv").exists()
    comparison = pd.read_csv(out / "comparison.csv", index_col=0)
    assert list(comparison.index) == ["base", "same", "twin", "bigger"]


def _write(tmp_path, data):
    import yaml

    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize(
    ("edit", "path", "words"),
    [
        (lambda d: d["fleet"]["pools"][0].update(acquisition={"type": "on_demand", "usd_per_gpu_hour": -2}),
         "fleet.pools[0].acquisition.usd_per_gpu_hour", "greater than or equal to 0"),
        (lambda d: d.update(pricing={"input_usd_per_1m": -1}), "pricing.input_usd_per_1m", "greater than or equal to 0"),
        (lambda d: d["fleet"]["pools"][0].update(acquisition={"type": "spot", "usd_per_gpu_hour": 1, "preemption_rate_per_gpu_hour": -1}),
         "fleet.pools[0].acquisition.preemption_rate_per_gpu_hour", "greater than or equal to 0"),
        (lambda d: d["fleet"]["pools"][0].update(acquisition={"type": "on_demand", "autoscale": {}}),
         "fleet.pools[0].acquisition.max_count", "required with autoscale"),
        (lambda d: d["fleet"]["pools"][0].update(acquisition={"type": "on_demand"}, orders=[{"at": "1d", "count": 4}]),
         "fleet.pools[0].orders", "apply to owned pools"),
        (lambda d: d["fleet"]["pools"][0].update(failures={"repair": {"dist": "lognormal", "median": "4h", "p90": "1h"}}),
         "fleet.pools[0].failures.repair", "0 < median < p90"),
        (lambda d: d.update(variants={"big": {"fleet.pools[0].count": -3}}), "variants.big.fleet.pools[0].count",
         "greater than or equal to 0"),
        (lambda d: d.update(variants={"typo": {"fleet.pools[0].cuont": 3}}), "variants.typo.fleet.pools[0].cuont",
         "did you mean 'count'"),
        (lambda d: d.update(financing={"share_of_capex": 1.5}), "financing.share_of_capex", "less than or equal to 1"),
        # Statements: opex lines, taxes, the loan cap.
        (lambda d: d.update(opex=[{"name": "a", "usd_per_month": 1}, {"name": "a", "usd_per_month": 2}]),
         "opex[1].name", "duplicate opex line"),
        (lambda d: d.update(opex=[{"name": "Payroll!", "usd_per_month": 1}]), "opex[0].name", "pattern"),
        (lambda d: d.update(opex=[{"name": "p", "usd_per_month": 1, "start": "2026-02-01", "end": "2026-01-01"}]),
         "opex[0]", "end is not after start"),
        (lambda d: d.update(financing={"cap_usd": -1}), "financing.cap_usd", "greater than or equal to 0"),
        (lambda d: d.update(taxes={"rate": 1.5}), "taxes.rate", "less than 1"),
    ],
)
def test_bad_supply_and_money_input_names_the_field(edit, path, words):
    data = base_scenario()
    edit(data)
    with pytest.raises(simulator.ScenarioError) as caught:
        simulator.load_scenario(data)
    assert caught.value.path == path, str(caught.value)
    assert words in str(caught.value)
