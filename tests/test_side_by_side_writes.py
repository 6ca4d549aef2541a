"""A scenario's runs write their files side by side (forked processes), and the kept paths'
tables are written from each path's frame: the same files as one process writing them in
turn from the whole tables, errors raised with their type, interrupts leave no process."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import simulator
from simulator.decisions.variants import simulate_variants
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


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks only on Linux")
def test_runs_written_side_by_side_are_the_files_one_process_writes(tmp_path):
    out = _in_a_fresh_interpreter(f"""
        import json
        import simulator
        from simulator.decisions.variants import simulate_variants
        from simulator.runs.forked import fork_is_safe
        scenario = simulator.load_scenario({str(LAUNCH)!r}, {{"horizon.duration": "30d", "paths": 3}})
        runs = simulate_variants(scenario, executor="serial")
        safe = fork_is_safe()
        runs.save({str(tmp_path / "apart")!r}, report=True, processes=2)
        runs.save({str(tmp_path / "alone")!r}, report=True, processes=1)
        print(json.dumps({{"safe": safe}}))
    """)
    assert out["safe"]
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


def _in_a_fresh_interpreter(code: str) -> dict:
    """Run ``code`` in a new Python with one thread (this test process may hold threads that
    earlier tests left, which rightly keep it from forking) and return the JSON it prints."""
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                            timeout=120, cwd=Path(__file__).resolve().parents[1])
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks only on Linux")
def test_an_error_in_a_child_is_raised_here_with_its_type_and_message():
    out = _in_a_fresh_interpreter("""
        import json, multiprocessing, os
        from simulator.errors import InputError
        from simulator.runs.forked import fork_is_safe, run_side_by_side
        me = os.getpid()
        def fails():
            if os.getpid() != me:  # only in a child
                raise InputError("fleet.pools[0].count: the child's own message")
        safe = fork_is_safe()
        try:
            run_side_by_side([fails, lambda: None, lambda: None], processes=2)
            raised = None
        except InputError as exc:
            raised = str(exc)
        print(json.dumps({"safe": safe, "raised": raised, "left": len(multiprocessing.active_children())}))
    """)
    assert out == {"safe": True, "raised": "fleet.pools[0].count: the child's own message", "left": 0}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks only on Linux")
def test_an_interrupt_here_stops_the_children_before_it_goes_on(tmp_path):
    out = _in_a_fresh_interpreter(f"""
        import json, multiprocessing, time
        from pathlib import Path
        from simulator.runs.forked import run_side_by_side
        marker = Path({str(tmp_path / "late")!r})
        def slow():
            time.sleep(30)
            marker.write_text("written after the interrupt")
        def interrupted():
            time.sleep(0.5)  # the children are running
            raise KeyboardInterrupt
        started = time.monotonic()
        try:
            run_side_by_side([slow, slow, interrupted], processes=2)
        except KeyboardInterrupt:
            pass
        print(json.dumps({{"seconds": time.monotonic() - started, "left": len(multiprocessing.active_children())}}))
    """)
    assert out["left"] == 0
    assert out["seconds"] < 20  # the children were stopped, not waited for
    time.sleep(0.2)
    assert not (tmp_path / "late").exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks only on Linux")
def test_calls_run_in_children_and_here_side_by_side():
    out = _in_a_fresh_interpreter("""
        import json, multiprocessing, os
        from simulator.runs.forked import run_side_by_side
        pids = multiprocessing.get_context("fork").Queue()
        run_side_by_side([lambda: pids.put(os.getpid()) for _ in range(4)], processes=2)
        print(json.dumps({"me": os.getpid(), "seen": [pids.get(timeout=10) for _ in range(4)]}))
    """)
    assert out["me"] in out["seen"] and len(set(out["seen"])) >= 2


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


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks only on Linux")
def test_a_stopped_child_runs_its_cleanups_and_prints_nothing(tmp_path):
    # A child stopped while it streams a workbook must remove openpyxl's temporary files (left
    # otherwise: a forked child never exits normally) and must not print a traceback (raising
    # SystemExit from the signal handler could land in a weakref finalizer, which printed one).
    code = f"""
        import json, os, sys, time, weakref
        from pathlib import Path
        from simulator.runs.forked import at_child_stop, run_side_by_side
        folder = Path({str(tmp_path)!r})
        at_child_stop(lambda: (folder / f"cleaned-{{os.getpid()}}").write_text("x"))
        class Thing:
            pass
        def busy():  # finalizers run all the time, as in pandas and matplotlib
            end = time.monotonic() + 30
            while time.monotonic() < end:
                thing = Thing()
                weakref.finalize(thing, lambda: None)
                del thing
        def interrupted():
            time.sleep(0.5)
            raise KeyboardInterrupt
        try:
            run_side_by_side([busy, busy, interrupted], processes=2)
        except KeyboardInterrupt:
            pass
        print(json.dumps({{"cleaned": len(list(folder.glob("cleaned-*")))}}))
    """
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                            timeout=120, cwd=Path(__file__).resolve().parents[1])
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {"cleaned": 2}
