"""`fleetcast sensitivity`: one input at a time at its P10 and P90, the others at medians."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from simulator.cli import main
from tests.helpers import base_scenario


def test_margin_swing_of_a_price_equals_the_revenue_difference_by_hand(tmp_path):
    # 4 req/s for a day = 345,600 requests of 200 output tokens. The output price is uniform on
    # [1, 3] $/1M: P10 = 1.2, P90 = 2.8, so revenue (and gross margin) swing by
    # 345,600 × 200 × (2.8 − 1.2) / 1e6 = $110.592. The GPU count (triangular 6–8–10) at its P10
    # (6 + sqrt(0.1 × 4 × 2) = 6.89 -> 7 GPUs) leaves 4 req/s served: no margin swing (price 0).
    data = base_scenario(pricing={"input_usd_per_1m": 0.0, "output_usd_per_1m": {"dist": "uniform", "low": 1, "high": 3}})
    data["fleet"]["pools"][0]["count"] = {"dist": "triangular", "low": 6, "mode": 8, "high": 10}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "sens"
    result = CliRunner().invoke(main, ["sensitivity", str(path), "--out", str(out), "--paths", "1", "-q"])
    assert result.exit_code == 0, result.output
    table = pd.read_parquet(out / "sensitivity.parquet").set_index("input")
    price = table.loc["pricing.output_usd_per_1m"]
    assert price["input_p10"] == pytest.approx(1.2) and price["input_p90"] == pytest.approx(2.8)
    assert price["gross_margin_usd_swing"] == pytest.approx(345_600 * 200 * 1.6 / 1e6, rel=1e-12)
    count = table.loc["fleet.pools[0].count"]
    assert count["input_p10"] == 7 and count["gross_margin_usd_swing"] == pytest.approx(0.0)
    assert list(table.index)[0] == "pricing.output_usd_per_1m"  # largest swing first
    assert (out / "tornado.png").stat().st_size > 1000


def test_sensitivity_without_uncertain_inputs_exits_2(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(base_scenario(), sort_keys=False))
    result = CliRunner().invoke(main, ["sensitivity", str(path), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "no uncertain inputs" in result.stderr


def test_an_uncertain_per_pool_capacity_swings_the_margin_by_hand(tmp_path):
    # Pool a: 8 GPUs at 1 req/s each; pool b: 4 GPUs whose per-pool capacity is uniform on
    # [1, 3] req/s (P10 1.2, P90 2.8). Demand 16 req/s for a day at $1 per 1M output tokens
    # (200 each): at P10 a and b serve 8 + 4.8 = 12.8 req/s, at P90 all 16; the margin swings
    # by 3.2 × 86,400 × 200 / 1e6 = $55.296 (GPUs cost nothing). This input used to crash the
    # one-at-a-time run: its field path runs through the model's per-pool mapping.
    data = base_scenario(pricing={"input_usd_per_1m": 0.0, "output_usd_per_1m": 1.0})
    data["fleet"]["pools"].append({"name": "b", "gpu": "H100", "count": 4,
                                   "acquisition": {"type": "on_demand", "usd_per_gpu_hour": 0.0}})
    model = data["models"][0]
    model["pools"] = ["a", "b"]
    model["demand"]["base_rps"] = 16.0
    model["replicas"] = {"b": {"capacity_rps": {"dist": "uniform", "low": 1, "high": 3}}}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "sens"
    result = CliRunner().invoke(main, ["sensitivity", str(path), "--out", str(out), "--paths", "1", "-q"])
    assert result.exit_code == 0, result.output
    row = pd.read_parquet(out / "sensitivity.parquet").set_index("input").loc["models[0].replicas.b.capacity_rps"]
    assert row["input_p10"] == pytest.approx(1.2) and row["input_p90"] == pytest.approx(2.8)
    assert row["gross_margin_usd_swing"] == pytest.approx(3.2 * 86_400 * 200 / 1e6, rel=1e-9)
