"""COGS and R&D compute, worked by hand: a pool no model lists exists for training.

Two days, hourly steps, no noise. Three pools:

* ``serve``: 4 owned H100s ($20,000, 4 years) serving model ``m`` at 2 req/s on 1-GPU replicas
  of 1 req/s: 2 GPUs busy, 2 idle, all of it COGS (the idle ones are capacity held for inference);
* ``lab``: 8 owned H100s ($30,000, 5 years) that no model lists; a 6-GPU job holds 6 of them
  from hour 2 to hour 14 (12 h): every dollar is R&D, busy and idle GPUs alike;
* ``rent-lab``: 4 H100s rented on demand at $2/GPU-hour, no model, no job: all R&D.

Rates: an H100 is 0.7 kW TDP × 1.8 (server) × 1.3 (PUE) = 1.638 kW at the meter; busy draws
75% (1.2285 kW), idle 30% (0.4914 kW); $0.10/kWh. Facility: 0.7 × 1.8 = 1.26 kW per owned GPU
at $150/kW-month, a month being 30.4375 days (730.5 h): $189 / 730.5 per GPU-hour.
Depreciation per GPU-hour: 30,000 / (5 × 8,766 h) for ``lab``, 20,000 / (4 × 8,766 h) for ``serve``.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import base_scenario, run

HOURS = 48
FACILITY_GPU_H = 0.7 * 1.8 * 150 / 730.5  # $0.2587 per owned GPU-hour
BUSY_KW, IDLE_KW = 0.7 * 1.8 * 1.3 * 0.75, 0.7 * 1.8 * 1.3 * 0.3  # 1.2285 and 0.4914 kW
USD_KWH = 0.10

# lab: 8 × 48 = 384 GPU-hours, of which 6 × 12 = 72 training and 312 idle.
LAB_DEPRECIATION = 8 * HOURS * 30_000 / (5 * 8766)  # 11,520,000 / 43,830 = $262.83
LAB_FACILITY = 8 * HOURS * FACILITY_GPU_H  # 384 × 0.25873 = $99.35
LAB_ENERGY = (72 * BUSY_KW + 312 * IDLE_KW) * USD_KWH  # (88.452 + 153.3168) kWh × 0.10 = $24.18
LAB = LAB_DEPRECIATION + LAB_FACILITY + LAB_ENERGY  # $386.36
# The part of it that is idle GPUs (312 of the 384 GPU-hours): COGS under the old rule.
LAB_IDLE = 312 * 30_000 / (5 * 8766) + 312 * FACILITY_GPU_H + 312 * IDLE_KW * USD_KWH  # 213.55 + 80.72 + 15.33 = $309.60
RENT_LAB = 4 * HOURS * 2.0  # $384, all idle
# serve: 4 × 48 GPU-hours; 2 GPUs busy, 2 idle throughout.
SERVE = (4 * HOURS * 20_000 / (4 * 8766) + 4 * HOURS * FACILITY_GPU_H
         + 2 * HOURS * (BUSY_KW + IDLE_KW) * USD_KWH)  # 109.51 + 49.68 + 16.51 = $175.70
REVENUE = 2 * 3600 * HOURS * 1000 * 1.0 / 1e6  # 345,600 requests × $0.001 = $345.60


def _scenario(probe: bool = False) -> dict:
    """The three pools; with ``probe``, a model without demand lists ``lab`` and ``rent-lab``,
    so they serve a model and the rule for serving pools (the old rule for every pool) applies."""
    data = base_scenario(horizon={"start": "2026-01-01", "duration": f"{HOURS}h", "step": "1h"})
    data["fleet"]["pools"] = [
        {"name": "serve", "gpu": "H100", "count": 4,
         "acquisition": {"type": "owned", "price_usd": 20_000, "depreciation_years": 4}},
        {"name": "lab", "gpu": "H100", "count": 8,
         "acquisition": {"type": "owned", "price_usd": 30_000, "depreciation_years": 5}},
        {"name": "rent-lab", "gpu": "H100", "count": 4, "acquisition": {"type": "on_demand", "usd_per_gpu_hour": 2.0}},
    ]
    data["models"][0].update(pools=["serve"])
    data["models"][0]["demand"]["base_rps"] = 2.0
    if probe:
        data["models"].append({"name": "probe", "pools": ["lab", "rent-lab"], "gpus_per_replica": 1, "capacity_rps": 1.0,
                               "demand": {"base_rps": 0.0, "noise": "none"}})
    data["pricing"] = {"input_usd_per_1m": 1.0, "output_usd_per_1m": 0.0}
    data["energy"] = {"usd_per_kwh": USD_KWH, "pue": 1.3, "draw_fraction": 0.75, "idle_draw_fraction": 0.3,
                      "server_power_factor": 1.8}
    data["facility"] = {"usd_per_kw_month": 150.0}
    data["training"] = {"jobs": [{"name": "j", "pool": "lab", "gpus": 6, "duration": "12h", "submit": "2h"}]}
    return data


@pytest.fixture(scope="module")
def results():
    return run(_scenario()), run(_scenario(probe=True))


def test_every_dollar_of_a_training_only_pool_is_rnd(results):
    result, _ = results
    pools = result.pools
    lab, rent, serve = (pools[pools["pool"] == name].reset_index(drop=True) for name in ("lab", "rent-lab", "serve"))
    # The job holds 6 lab GPUs in hours 2..13 and none otherwise.
    assert lab["gpus_training"].tolist() == [0] * 2 + [6] * 12 + [0] * 34
    assert (lab["gpus_idle"] + lab["gpus_training"] == 8).all()
    assert lab["cost_depreciation_usd"].sum() == pytest.approx(LAB_DEPRECIATION, rel=1e-12)
    assert lab["cost_facility_usd"].sum() == pytest.approx(LAB_FACILITY, rel=1e-12)
    assert lab["cost_energy_usd"].sum() == pytest.approx(LAB_ENERGY, rel=1e-12)
    # R&D on every row, busy hours and idle hours alike, component by component.
    for name in ("depreciation", "cloud", "energy", "facility"):
        np.testing.assert_allclose(lab[f"rnd_{name}_usd"], lab[f"cost_{name}_usd"], rtol=1e-12)
        np.testing.assert_allclose(rent[f"rnd_{name}_usd"], rent[f"cost_{name}_usd"], rtol=1e-12)
    assert lab["rnd_compute_usd"].sum() == pytest.approx(LAB, rel=1e-12)  # $386.36
    assert rent["rnd_compute_usd"].sum() == pytest.approx(RENT_LAB, rel=1e-12)  # $384.00
    # The serving pool's idle GPUs are capacity held for inference: COGS, no R&D.
    assert (serve["gpus_idle"] == 2).all() and (serve["rnd_compute_usd"] == 0).all()
    assert serve["cost_usd"].sum() == pytest.approx(SERVE, rel=1e-12)  # $175.70


def test_cost_is_cogs_plus_rnd_and_the_pnl_books_them(results):
    result, _ = results
    ts, pnl = result.timeseries, result.pnl
    np.testing.assert_allclose(ts["cost_usd"], ts["cogs_usd"] + ts["rnd_compute_usd"], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ts["gross_margin_usd"], ts["revenue_usd"] - ts["cogs_usd"], rtol=1e-12, atol=1e-12)
    assert len(pnl) == 1  # two days of January
    month = pnl.iloc[0]
    assert month["revenue_usd"] == pytest.approx(REVENUE, rel=1e-12)  # $345.60
    assert month["cogs_usd"] == pytest.approx(SERVE, rel=1e-12)  # $175.70: the serving pool only
    assert month["rnd_compute_usd"] == pytest.approx(LAB + RENT_LAB, rel=1e-12)  # $770.36
    assert month["rnd_cloud_usd"] == pytest.approx(RENT_LAB, rel=1e-12) and month["cogs_cloud_usd"] == 0
    assert month["gross_margin_usd"] == pytest.approx(REVENUE - SERVE, rel=1e-12)  # $169.90
    assert month["operating_result_usd"] == pytest.approx(REVENUE - SERVE - LAB - RENT_LAB, rel=1e-12)  # −$600.46


def test_gross_margin_moves_by_exactly_the_idle_cost_of_the_training_pools(results):
    # With the probe model listing them, lab and rent-lab serve a model: their idle GPUs are
    # capacity held for inference (COGS), as every pool's were before the rule. Only the 72
    # training GPU-hours of lab stay R&D: 72 × (depreciation + facility) + 72 × 1.2285 kWh × $0.10.
    result, probed = results
    old, new = probed.pnl.iloc[0], result.pnl.iloc[0]
    lab_training = 72 * 30_000 / (5 * 8766) + 72 * FACILITY_GPU_H + 72 * BUSY_KW * USD_KWH  # 49.28 + 18.63 + 8.85
    assert old["rnd_compute_usd"] == pytest.approx(lab_training, rel=1e-12)  # $76.76
    assert LAB_IDLE + lab_training == pytest.approx(LAB, rel=1e-12)
    # Same fleet, same job, same cost; only where it is booked changes.
    assert old["cogs_usd"] + old["rnd_compute_usd"] == pytest.approx(new["cogs_usd"] + new["rnd_compute_usd"], rel=1e-12)
    # $309.60 of idle lab GPUs + $384 of idle rented ones = $693.60 leave COGS.
    assert new["gross_margin_usd"] - old["gross_margin_usd"] == pytest.approx(LAB_IDLE + RENT_LAB, rel=1e-9)
    assert old["operating_result_usd"] == pytest.approx(new["operating_result_usd"], rel=1e-12)
