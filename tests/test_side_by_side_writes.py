"""A scenario's runs write their files side by side (forked processes), and the kept paths'
tables are written from each path's frame: the same files as one process writing them in
turn from the whole tables, errors raised with their type, interrupts leave no process."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import simulator
from simulator.decisions.variants import simulate_variants
from simulator.errors import InputError
from simulator.runs.forked import fork_is_safe, run_side_by_side
from simulator.runs.path_frames import PathFrames

LAUNCH = Path(__file__).resolve().parents[1] / "scenarios" / "launch.yaml"


def _digests(directory: Path) -> dict[str, str]:
    """Every file of a run directory by relative path: its bytes' digest (the workbook and the
    report carry the time they were written, so their content is compared elsewhere)."""
    out = {}
    for path in sorted(directory.rglob("*")):
        if path.is_file() and path.suffix not in (".xlsx", ".html", ".png"):
            out[str(path.relative_to(directory))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


@pytest.fixture(scope="module")
def launch_variants():
    scenario = simulator.load_scenario(LAUNCH, {"horizon.duration": "30d", "paths": 3})
    return simulate_variants(scenario, executor="serial")


@pytest.mark.skipif(not fork_is_safe(), reason="forks only on Linux with one thread")
def test_runs_written_side_by_side_are_the_files_one_process_writes(launch_variants, tmp_path):
    launch_variants.save(tmp_path / "apart", report=True, processes=2)
    launch_variants.save(tmp_path / "alone", report=True, processes=1)
    apart, alone = _digests(tmp_path / "apart"), _digests(tmp_path / "alone")
    assert set(apart) == set(alone) and len(apart) > 30
    assert apart == alone
    for run in ("", "variants/rent-headroom-only/", "variants/buy-more-early/"):
        for name in ("report.html", "statements.xlsx", "plots/demand_capacity.png"):
            assert (tmp_path / "apart" / run / name).stat().st_size > 1000


def test_kept_tables_written_per_path_read_back_as_the_concatenated_table(tmp_path):
    rng = np.random.default_rng(3)
    frames = [pd.DataFrame({
        "path": np.full(50, path), "time": pd.date_range("2026-01-01", periods=50, freq="h"),
        "pool": pd.Categorical.from_codes(rng.integers(0, 2, 50), categories=["a", "b"]),
        "gpus": rng.integers(0, 9, 50), "cost_usd": rng.random(50),
        "job": pd.array([f"j{i}" for i in range(50)], dtype="str"),
    }) for path in range(4)]
    whole = pd.concat(frames, ignore_index=True)
    parts = PathFrames(frames)
    assert len(parts) == 200
    parts.to_parquet(tmp_path / "parts.parquet")
    whole.to_parquet(tmp_path / "whole.parquet", index=False)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "parts.parquet"), whole)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "parts.parquet"), pd.read_parquet(tmp_path / "whole.parquet"))
    pd.testing.assert_frame_equal(parts.frame(), whole)
    assert parts.frame() is parts.frame()  # put together once


def test_a_variant_runs_tables_are_the_concatenation_of_its_paths(launch_variants):
    base = launch_variants.results["base"]
    assert base.timeseries["path"].tolist() == sorted(base.timeseries["path"].tolist())
    assert set(base.timeseries["path"]) == {0, 1, 2}
    assert len(base.pools) == 2 * len(base.timeseries)


def _fails() -> None:
    raise InputError("fleet.pools[0].count: the child's own message")


@pytest.mark.skipif(not fork_is_safe(), reason="forks only on Linux with one thread")
def test_an_error_in_a_child_is_raised_here_with_its_type_and_message():
    with pytest.raises(InputError, match="the child's own message"):
        run_side_by_side([_fails, lambda: None, lambda: None], processes=2)
    assert multiprocessing.active_children() == []


@pytest.mark.skipif(not fork_is_safe(), reason="forks only on Linux with one thread")
def test_an_interrupt_here_stops_the_children_before_it_goes_on(tmp_path):
    marker = tmp_path / "late"

    def slow() -> None:
        time.sleep(30)
        marker.write_text("written after the interrupt")

    def interrupted() -> None:
        raise KeyboardInterrupt

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_side_by_side([slow, slow, interrupted], processes=2)
    assert multiprocessing.active_children() == []
    assert time.monotonic() - started < 20  # the children were stopped, not waited for
    assert not marker.exists()


@pytest.mark.skipif(not fork_is_safe(), reason="forks only on Linux with one thread")
def test_calls_run_in_children_and_here_side_by_side():
    pids = multiprocessing.get_context("fork").Queue()
    run_side_by_side([lambda: pids.put(os.getpid()) for _ in range(4)], processes=2)
    seen = [pids.get(timeout=10) for _ in range(4)]
    assert os.getpid() in seen and len(set(seen)) >= 2


def test_with_another_thread_running_the_calls_run_here_in_turn():
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, daemon=True)
    thread.start()
    try:
        assert not fork_is_safe()
        order: list[int] = []
        run_side_by_side([lambda i=i: order.append(i) for i in range(3)], processes=2)
        assert order == [0, 1, 2]  # appended in this process, one after another
    finally:
        stop.set()
        thread.join()
