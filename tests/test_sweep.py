"""`fleetcast sweep`: a grid of parameter values, one row of headline figures per point."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import simulator
from simulator.cli import main
from simulator.decisions.sweep import parse_parameters, sweep_points

LAUNCH = Path(__file__).parents[1] / "scenarios" / "launch.yaml"
SHORT = ["--set", "horizon.duration=60d", "--set", "training.streams=[]"]


def test_grid_and_zip_points():
    parameters = parse_parameters(["a.b=1,2", "c=x,y,z"])
    assert parameters == {"a.b": [1, 2], "c": ["x", "y", "z"]}
    assert len(sweep_points(parameters)) == 6
    assert sweep_points({"a": [1, 2], "b": [3, 4]}, zipped=True) == [{"a": 1, "b": 3}, {"a": 2, "b": 4}]
    with pytest.raises(simulator.ScenarioError, match="same number of values"):
        sweep_points(parameters, zipped=True)


def test_sweep_rows_equal_runs_of_each_point(tmp_path):
    out = tmp_path / "sweep"
    result = CliRunner().invoke(main, ["sweep", str(LAUNCH), "--param", "fleet.pools[0].count=128,256",
                                       "--param", "pricing.output_usd_per_1m=2,4", "--paths", "2", "--seed", "3",
                                       "--out", str(out), *SHORT])
    assert result.exit_code == 0, result.output
    table = pd.read_parquet(out / "sweep.parquet")
    assert len(table) == 4 and {"fleet.pools[0].count", "pricing.output_usd_per_1m"} <= set(table.columns)
    row = table[(table["fleet.pools[0].count"] == 128) & (table["pricing.output_usd_per_1m"] == 4)].iloc[0]
    direct = simulator.simulate(simulator.load_scenario(LAUNCH, {
        "horizon.duration": "60d", "training.streams": [], "fleet.pools[0].count": 128,
        "pricing.output_usd_per_1m": 4}), paths=2, seed=3, executor="serial").summary
    assert row["gross_margin_usd_p50"] == pytest.approx(direct["quantiles"]["gross_margin_usd"]["p50"], rel=1e-12)
    assert (out / "summary.json").exists() and (out / "sweep.csv").exists()


def test_sweep_over_a_field_that_does_not_exist_exits_2(tmp_path):
    result = CliRunner().invoke(main, ["sweep", str(LAUNCH), "--param", "fleet.pools[0].cuont=1,2",
                                       "--out", str(tmp_path / "s")])
    assert result.exit_code == 2
    assert "fleet.pools[0].cuont: unknown field (did you mean 'count'?)" in result.stderr
    assert not (tmp_path / "s").exists()


def test_unreadable_or_repeated_params_exit_2(tmp_path):
    for params in (["fleet.pools[0].count=[1"], ["fleet.pools[0].count=1", "fleet.pools[0].count=2"]):
        args = ["sweep", str(LAUNCH), "--out", str(tmp_path / "s")]
        for param in params:
            args += ["--param", param]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2 and "--param fleet.pools[0].count" in result.stderr


def test_a_sweep_over_unquoted_dates_runs_each_date(tmp_path):
    # YAML reads 2026-05-01 as a date, which JSON cannot write: it stays the date's ISO text.
    assert parse_parameters(["training.jobs[0].submit=2026-05-01,2026-05-10 12:00:00"]) == {
        "training.jobs[0].submit": ["2026-05-01", "2026-05-10T12:00:00"]}
    out = tmp_path / "sweep"
    result = CliRunner().invoke(main, ["sweep", str(LAUNCH), "--param", "training.jobs[0].submit=2026-03-05,2026-03-20",
                                       "--paths", "1", "--out", str(out), "-q", "--set", "horizon.duration=30d",
                                       "--set", "training.streams=[]"])
    assert result.exit_code == 0, result.output
    table = pd.read_parquet(out / "sweep.parquet")
    assert table["training.jobs[0].submit"].tolist() == ["2026-03-05", "2026-03-20"]


def test_the_sweep_table_names_its_fields_whole_and_shows_durations_in_days(tmp_path):
    # On an 80-column terminal the headers read "fleet.p…" and "trainin…", and a swept
    # duration was shown as typed; the table names each field in words, wraps rather than
    # cuts, and shows durations in days as the sensitivity table does.
    result = CliRunner().invoke(main, ["sweep", str(LAUNCH), "--param", "fleet.pools[0].count=256,320",
                                       "--param", "training.jobs[0].duration=36h,10d", "--paths", "1",
                                       "--out", str(tmp_path / "sweep"), "--set", "horizon.duration=14d",
                                       "--set", "training.streams=[]"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "…" not in result.stdout
    assert max(map(len, result.stdout.splitlines())) <= 80
    assert "1.5 days" in result.stdout and "10 days" in result.stdout
    header = result.stdout[: result.stdout.index("┡")]
    assert "count" in header and "duration" in header and "served" in header
