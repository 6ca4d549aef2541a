"""Latency per model: each model's SLO attainment and unserved share, never pooled by requests.

Two models on pools of their own, hourly steps over 2 days (172,800 s), no noise:

- ``small:8b`` (a colon in the name on purpose): 100 req/s on 20 one-GPU replicas of 10 req/s
  each (10 needed), a flat SLO curve at 1: every request within the SLO.
- ``large-405b``: 1 req/s on a pool of 8 GPUs, 4 GPUs a replica of 1 req/s (2 fit), a flat
  SLO curve at 0.5: half of its requests within the SLO, at any load.

By hand, over the horizon:

    small  17,280,000 requests served, 17,280,000 within SLO: attainment 1, unserved 0
    large     172,800 requests served,     86,400 within SLO: attainment 0.5, unserved 0
    pooled by requests (summary totals, unchanged): (17,280,000 + 86,400) / 17,452,800
                                                  = 100.5 / 101 = 0.9950495

The large model's 50% hides at 99.5% once pooled: the per-model figures show it.
"""

from __future__ import annotations

import copy
import json
import re

import numpy as np
import pandas as pd
import pytest

import simulator
from simulator.report.model_latency import latency_finding, model_latency_table
from tests.helpers import base_scenario, run

SMALL, LARGE = "small:8b", "large-405b"
HOURS = 48
POOLED = 100.5 / 101


def two_models(large_rps=1.0) -> dict:
    data = base_scenario(horizon={"start": "2026-01-01", "duration": "2d", "step": "1h"})
    data["fleet"]["pools"] = [
        {"name": "small-pool", "gpu": "H100", "acquisition": {"type": "owned", "price_usd": 0}, "count": 20},
        {"name": "large-pool", "gpu": "H100", "acquisition": {"type": "owned", "price_usd": 0}, "count": 8},
    ]
    template = data["models"][0]
    small = copy.deepcopy(template) | {"name": SMALL, "pools": ["small-pool"], "capacity_rps": 10.0,
                                       "gpus_per_replica": 1, "slo_curve": {"load": [0, 1], "attainment": [1, 1]}}
    small["demand"]["base_rps"] = 100.0
    large = copy.deepcopy(template) | {"name": LARGE, "pools": ["large-pool"], "capacity_rps": 1.0,
                                       "gpus_per_replica": 4, "slo_curve": {"load": [0, 1], "attainment": [0.5, 0.5]}}
    large["demand"]["base_rps"] = large_rps
    data["models"] = [small, large]
    return data


@pytest.fixture(scope="module")
def fixed():
    return run(two_models(), paths=3)


def _band(results, model, metric):
    bands = results.model_bands
    return bands[(bands["model"] == model) & (bands["metric"] == metric)].reset_index(drop=True)


def test_each_model_gets_its_own_attainment(fixed):
    models = fixed.summary["models"]
    assert list(models) == [SMALL, LARGE]
    for name, attainment in ((SMALL, 1.0), (LARGE, 0.5)):
        assert models[name]["slo_attainment"] == {"p10": attainment, "p50": attainment, "p90": attainment}
        assert models[name]["unserved_share"] == {"p10": 0.0, "p50": 0.0, "p90": 0.0}
        assert models[name]["paths_served"] == 3
    # The pooled figure is what it was: weighted by requests, 100.5 / 101.
    assert fixed.summary["totals"]["slo_attainment"] == pytest.approx(POOLED, rel=1e-12)
    assert fixed.summary["quantiles"]["slo_attainment"]["p50"] == pytest.approx(POOLED, rel=1e-12)
    np.testing.assert_allclose(fixed.timeseries["slo_attainment"], POOLED, rtol=1e-12)
    # The models table (kept paths) agrees by hand: 360,000 and 3,600 requests an hour.
    per_model = fixed.models.groupby("model", observed=True)[["served_requests", "slo_attainment"]].mean()
    assert per_model.loc[SMALL, "served_requests"] == 360_000 and per_model.loc[LARGE, "served_requests"] == 3_600


def test_per_step_bands_per_model(fixed):
    bands = fixed.model_bands
    assert len(bands) == HOURS * 2 * 2  # steps × models × (attainment, unserved share)
    assert list(bands.columns) == ["time", "model", "metric", "mean", "p5", "p10", "p50", "p90", "p95"]
    for model, attainment in ((SMALL, 1.0), (LARGE, 0.5)):
        band = _band(fixed, model, "slo_attainment")
        assert len(band) == HOURS
        for column in ("mean", "p5", "p10", "p50", "p90", "p95"):
            np.testing.assert_array_equal(band[column], attainment)
        assert (_band(fixed, model, "unserved_share")[["p10", "p50", "p90"]] == 0.0).all().all()


def test_spread_over_paths_on_every_route():
    # The large model's demand is 1 or 4 req/s by path. At 4, its 2 replicas serve 2 req/s:
    # half unserved; what is served still meets the SLO half the time. So per path by hand:
    # attainment 0.5 always; unserved share 0 (1 req/s) or 0.5 (4 req/s).
    data = two_models(large_rps={"dist": "choice", "values": [1.0, 4.0]})
    full = run(data, paths=12, seed=5)
    drawn = full.inputs.set_index("path")["models[1].demand.base_rps"].sort_index().to_numpy()
    assert set(drawn) == {1.0, 4.0}  # both on these 12 paths
    share = np.where(drawn == 4.0, 0.5, 0.0)
    large = full.summary["models"][LARGE]
    assert large["slo_attainment"] == {"p10": 0.5, "p50": 0.5, "p90": 0.5}
    for name, q in (("p10", 0.1), ("p50", 0.5), ("p90", 0.9)):
        assert large["unserved_share"][name] == pytest.approx(np.quantile(share, q), abs=1e-12)
    assert full.summary["models"][SMALL]["slo_attainment"]["p50"] == 1.0
    # Pooled over paths: every path's requests summed, so the 4 req/s paths weigh 4 times as much.
    assert large["slo_attainment_pooled"] == pytest.approx(0.5, rel=1e-12)
    assert large["unserved_share_pooled"] == pytest.approx(np.maximum(drawn - 2.0, 0).sum() / drawn.sum(), rel=1e-9)
    # Per step: the same spread at every step.
    unserved = _band(full, LARGE, "unserved_share")
    for name, q in (("p10", 0.1), ("p50", 0.5), ("p90", 0.9)):
        np.testing.assert_allclose(unserved[name], np.quantile(share, q), atol=1e-7)
    np.testing.assert_allclose(unserved["mean"], share.mean(), atol=1e-7)
    # The pooled attainment over demand, path by path: (100 + 0.5 × served) / (100 + demand).
    pooled = (100.0 + 0.5 * np.minimum(drawn, 2.0)) / (100.0 + drawn)
    per_path = pd.DataFrame(full.summary["per_path"]).set_index("path").sort_index()["slo_attainment"]
    np.testing.assert_allclose(per_path.to_numpy(), pooled, rtol=1e-12)
    # Keeping no path's tables, or running on a process pool (whose workers write the run's
    # band file themselves), gives the same per-model figures and bands.
    streamed = run(data, paths=12, seed=5, keep_paths=0)
    pooled_run = simulator.simulate(simulator.load_scenario(data), paths=12, seed=5, executor="local", workers=2,
                                    keep_paths=1)
    for other in (streamed, pooled_run):
        assert other.summary["models"] == full.summary["models"]
        pd.testing.assert_frame_equal(other.model_bands, full.model_bands)
    assert len(streamed.models) == 0


def _cells(table: str, first: str) -> list[str]:
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", table):
        cells = [re.sub(r"<[^>]+>", "", cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row)]
        if cells and cells[0] == first:
            return cells
    raise AssertionError(f"no row {first!r}")


def test_the_report_lists_every_model(fixed, tmp_path):
    out = fixed.save(tmp_path / "run")
    assert json.loads((out / "summary.json").read_text())["models"] == fixed.summary["models"]
    assert (out / "model_bands.parquet").is_file() and (out / "plots" / "shortfall_slo.png").is_file()
    html = (out / "report.html").read_text()
    start = html.index('id="model-latency-table"')
    table = html[start:html.index("</table>", start)]
    assert _cells(table, SMALL) == [SMALL, "100.00%", "100.00% – 100.00%", "0.00%", "0.00% – 0.00%"]
    assert _cells(table, LARGE) == [LARGE, "50.00%", "50.00% – 50.00%", "0.00%", "0.00% – 0.00%"]
    assert "Latency per model" in html
    # The card names the model served worst, however small its volume.
    assert "SLO attainment, lowest model" in html and f"{LARGE}: pooled 50.00%" in html
    assert "per model, the share of its served requests within its SLO" in html  # the chart's caption
    # A run directory of an earlier version (no model_bands.parquet) still renders, pooled.
    (out / "model_bands.parquet").unlink()
    simulator.report.render_report(out)
    html = (out / "report.html").read_text()
    assert "the share of requests served within the SLO." in html


@pytest.mark.slow
def test_the_report_renders_its_model_table_in_chromium(fixed, tmp_path):
    from tests import browser

    out = fixed.save(tmp_path / "run")
    page = browser.load(out / "report.html")
    assert page.console == [] and page.body_attribute("data-rendered") == "true"
    # headline, by year, latency per model, the yearly, quarterly and monthly statements, unit
    # economics, assumptions: one more than a run of one model has
    assert page.body_attribute("data-tables") == page.body_attribute("data-expected-tables") == "8"
    assert 'id="model-latency-table"' in page.dom


def test_one_model_has_a_card_and_no_table():
    summary = {"models": {"chat": {"slo_attainment": {"p10": 0.9, "p50": 0.95, "p90": 0.99},
                                   "unserved_share": {"p10": 0.0, "p50": 0.01, "p90": 0.02}, "paths_served": 5}}}
    assert model_latency_table(summary) is None
    assert latency_finding(summary) == {
        "label": "SLO attainment", "value": "P50 95.00% of requests served",
        "note": "P10 90.00% – P90 99.00% over paths; 1.00% of its demand unserved (P50)"}  # (an earlier run)
    summary["models"]["chat"].update(slo_attainment_pooled=0.93, unserved_share_pooled=0.015)
    assert latency_finding(summary) == {
        "label": "SLO attainment", "value": "pooled 93.00% of requests served",
        "note": "within the SLO of its requests served, pooled over paths; per path P10 90.00% · P50 95.00% · "
                "P90 99.00%; 1.50% of its demand unserved (pooled)"}
    assert latency_finding({}) is None
