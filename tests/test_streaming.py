"""Streaming aggregation: bands, summaries and kept paths computed without holding every path.

The bands are checked against quantiles computed directly from the full time series (pandas
groupby, another code path); a run that keeps few paths must give the same summary, P&L and
bands as one that keeps them all; a band store spilled to disk gives the same bands as one
held in memory.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import simulator
from simulator.cli import main
from simulator.runs.bands import BAND_COLUMNS, BAND_QUANTILES, BandStore
from tests.helpers import base_scenario, run


def _scenario() -> dict:
    data = base_scenario(
        horizon={"start": "2026-01-01", "duration": "20d", "step": "1h"},
        training={"jobs": [{"name": "tune", "pool": "a", "gpus": 4, "duration": "2d", "submit": "2026-01-03"}]},
    )
    data["fleet"]["pools"][0].update(count=24, failures={"rate_per_gpu_hour": 2e-3, "repair": "6h"},
                                     training={"mode": "leftover"})
    data["models"][0]["demand"].update(base_rps=14.0, noise="poisson",
                                       growth={"kind": "exponential", "rate_per_month": 0.5})
    data["pricing"] = {"input_usd_per_1m": 1.0, "output_usd_per_1m": 4.0}
    data["fleet"]["pools"][0]["acquisition"]["price_usd"] = 30000
    return data


@pytest.fixture(scope="module")
def full():
    return run(_scenario(), paths=9, keep_paths=None)


def test_bands_are_the_quantiles_of_the_full_series_at_every_step(full):
    ts = full.timeseries
    for metric in ("demand_requests", "gpus_available", "utilization", "gross_margin_usd", "shortfall_gpus"):
        values = ts[["time", metric]].assign(v=ts[metric].astype(np.float32).astype(np.float64))
        grouped = values.groupby("time")["v"]
        band = full.bands[full.bands["metric"] == metric].set_index("time")
        for name, q in BAND_QUANTILES.items():
            expected = grouped.quantile(q)
            np.testing.assert_allclose(band[name].to_numpy(), expected.to_numpy(), rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(band["mean"].to_numpy(), grouped.mean().to_numpy(), rtol=1e-12, atol=1e-9)
    assert len(full.bands) == full.summary["steps"] * len(BAND_COLUMNS)


def test_keeping_few_paths_changes_nothing_but_the_kept_tables(full):
    few = run(_scenario(), paths=9, keep_paths=2)
    assert few.kept_paths == 2 and full.kept_paths == 9
    assert sorted(few.timeseries["path"].unique()) == [0, 1]
    assert sorted(few.jobs["path"].unique()) == [0, 1]
    pd.testing.assert_frame_equal(few.timeseries, full.timeseries[full.timeseries["path"] < 2].reset_index(drop=True))
    pd.testing.assert_frame_equal(few.bands, full.bands)
    pd.testing.assert_frame_equal(few.pnl, full.pnl)
    assert {k: v for k, v in few.summary.items() if k != "kept_paths"} == \
        {k: v for k, v in full.summary.items() if k != "kept_paths"}


def test_pooled_training_figures_match_the_jobs_table(full):
    jobs = full.jobs
    waits = jobs["wait_s"].dropna()
    training = full.summary["training"]
    assert training["jobs"] == len(jobs)
    assert training["wait_s"]["mean"] == pytest.approx(waits.mean(), rel=1e-12)
    assert training["wait_s"]["p90"] == pytest.approx(np.percentile(waits, 90), rel=1e-12)
    assert training["jobs_completed_share"] == pytest.approx(jobs["end_time"].notna().mean())


def test_a_band_store_on_disk_gives_the_bands_of_one_in_memory():
    rng = np.random.default_rng(3)
    n_paths, n_steps = 37, 101
    times = pd.date_range("2026-01-01", periods=n_steps, freq="h")
    series = rng.lognormal(size=(n_paths, len(BAND_COLUMNS), n_steps)).astype(np.float32)
    order = rng.permutation(n_paths)  # paths arrive in any order
    with BandStore(n_paths, n_steps) as memory, \
            BandStore(n_paths, n_steps, in_memory_bytes=0, block_bytes=4 * n_paths * 7) as disk:
        assert not memory.on_disk and disk.on_disk
        for path in order:
            memory.add(path, series[path])
            disk.add(path, series[path])
        in_memory, on_disk = memory.bands(times), disk.bands(times)
    pd.testing.assert_frame_equal(in_memory, on_disk)
    expected = np.quantile(series[:, 3, 50].astype(np.float64), 0.9)
    row = in_memory[(in_memory["metric"] == BAND_COLUMNS[3]) & (in_memory["time"] == times[50])]
    assert row["p90"].item() == pytest.approx(expected, rel=1e-15)


def test_a_band_store_refuses_to_answer_before_every_path_is_in():
    with BandStore(3, 5) as store:
        store.add(0, np.zeros((len(BAND_COLUMNS), 5), dtype=np.float32))
        with pytest.raises(RuntimeError, match="missing 2 paths"):
            store.bands(pd.date_range("2026-01-01", periods=5, freq="h"))


def test_bands_and_summary_are_identical_on_a_process_pool(full):
    scenario = simulator.load_scenario(_scenario())
    pooled = simulator.simulate(scenario, paths=9, executor="local", workers=2, keep_paths=3)
    pd.testing.assert_frame_equal(pooled.bands, full.bands)
    assert {k: v for k, v in pooled.summary.items() if k != "kept_paths"} == \
        {k: v for k, v in full.summary.items() if k != "kept_paths"}


def test_cli_keep_paths(tmp_path):
    path = tmp_path / "s.yaml"
    import yaml

    path.write_text(yaml.safe_dump(_scenario()))
    runner = CliRunner()
    out = tmp_path / "run"
    result = runner.invoke(main, ["run", str(path), "--out", str(out), "--paths", "4", "--keep-paths", "1",
                                  "--workers", "1"])
    assert result.exit_code == 0, result.output
    assert "kept for paths 0–0 of 4" in result.output
    assert pd.read_parquet(out / "timeseries.parquet")["path"].unique().tolist() == [0]
    assert pd.read_parquet(out / "pnl.parquet")["path"].nunique() == 4
    bands = pd.read_parquet(out / "bands.parquet")
    assert set(bands["metric"].astype(str)) == set(BAND_COLUMNS)
    assert json.loads((out / "summary.json").read_text())["kept_paths"] == 1

    none = tmp_path / "none"
    result = runner.invoke(main, ["run", str(path), "--out", str(none), "--paths", "2", "--keep-paths", "0", "-q"])
    assert result.exit_code == 0, result.output
    assert not (none / "timeseries.parquet").exists() and (none / "bands.parquet").exists()

    result = runner.invoke(main, ["run", str(path), "--out", str(tmp_path / "bad"), "--keep-paths", "some"])
    assert result.exit_code == 2 and "expected a number of paths or 'all'" in result.output
    assert not (tmp_path / "bad").exists()


@pytest.mark.parametrize("n_paths", [1, 2, 3, 10, 101, 1000])
def test_band_quantiles_equal_numpys_linear_quantiles_exactly(n_paths):
    from simulator.runs.bands import linear_quantiles

    values = np.random.default_rng(n_paths).lognormal(size=(n_paths, 40)).astype(np.float32)
    values[:, :5] = 3.0  # ties
    q = list(BAND_QUANTILES.values())
    np.testing.assert_array_equal(linear_quantiles(values, q), np.quantile(values.astype(np.float64), q, axis=0))


def test_workers_write_their_band_series_into_the_store_file_themselves(full, monkeypatch):
    """A run whose band store is a file, on a local pool: each worker writes its paths' series
    there and sends none back (the main process only marks them in); bands and summary are
    those of the serial run, which adds every series itself."""
    import simulator.runs.bands as bands

    monkeypatch.setattr(bands, "IN_MEMORY_BYTES", 0)  # every store spills to a file
    marked: list[int] = []
    mark_written = BandStore.mark_written
    monkeypatch.setattr(BandStore, "mark_written", lambda store, path: (marked.append(path), mark_written(store, path)))
    scenario = simulator.load_scenario(_scenario())
    pooled = simulator.simulate(scenario, paths=9, executor="local", workers=2, keep_paths=3)
    assert sorted(marked) == list(range(9))  # no series crossed the pipe
    pd.testing.assert_frame_equal(pooled.bands, full.bands)
    assert {k: v for k, v in pooled.summary.items() if k != "kept_paths"} == \
        {k: v for k, v in full.summary.items() if k != "kept_paths"}
    serial = simulator.simulate(scenario, paths=9, executor="serial", keep_paths=3)
    assert not marked[9:]  # the serial run adds its series itself
    pd.testing.assert_frame_equal(serial.bands, full.bands)


def test_a_band_file_travels_to_a_worker_without_its_descriptor(tmp_path):
    import pickle

    with BandStore(4, 10, in_memory_bytes=0, spill_dir=tmp_path) as store:
        file = store.shared_file()
        file.write(2, np.ones((len(BAND_COLUMNS), 10), dtype=np.float32))  # opens its own descriptor
        copy = pickle.loads(pickle.dumps(file))
        assert copy._fd is None and copy.file == file.file
        with pytest.raises(ValueError, match="expected"):
            copy.write(0, np.ones((3, 10), dtype=np.float32))
    with BandStore(4, 10) as memory, pytest.raises(RuntimeError, match="in memory"):
        assert memory.shared_file() is None
        memory.mark_written(0)
