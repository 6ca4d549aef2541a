"""Peak memory of a large Monte Carlo run: 10,000 paths of the default scenario, one year
at hourly steps, on 2 local workers.

    .venv/bin/python benchmarks/bench_memory.py [--paths 10000] [--workers 2] [--json PATH]

Runs ``fleetcast run scenarios/launch.yaml --set horizon.duration=365d --set variants={}``
(the base plan only: each of the scenario's variants would run as many paths again) in a
child process (default ``--keep-paths``) and samples the resident memory of its whole process tree (the
main process and its workers, from ``/proc``) every 0.2 s. Reports the peak of the sum, the
peak of the main process, the wall time and paths/s, and checks the run directory: bands
over every path, the kept paths' series, a summary of every path. Target: peak < 2 GB.

The reference here is the memory the run would need without streaming aggregation: every
path's tables held in the main process (measured per path on a few paths, times the paths).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
OVERRIDES = ["--set", "horizon.duration=365d", "--set", "variants={}"]


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _children(pid: int) -> list[int]:
    out = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                out += [int(child) for child in handle.read().split()]
    except OSError:
        pass
    return out


def _tree(pid: int) -> list[int]:
    pids, frontier = [pid], [pid]
    while frontier:
        frontier = [child for parent in frontier for child in _children(parent)]
        pids += frontier
    return pids


class TreeMemory(threading.Thread):
    """Samples the summed RSS of a process and its descendants."""

    def __init__(self, pid: int, every_s: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.pid, self.every_s = pid, every_s
        self.peak_total = self.peak_main = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            pids = _tree(self.pid)
            self.peak_total = max(self.peak_total, sum(_rss_bytes(p) for p in pids))
            self.peak_main = max(self.peak_main, _rss_bytes(self.pid))
            self.stopped.wait(self.every_s)


def _tables_per_path_bytes() -> float:
    """What one path's full tables take in memory (the reference without streaming)."""
    import simulator

    scenario = simulator.load_scenario(ROOT / "scenarios" / "launch.yaml", {"horizon.duration": "365d", "variants": {}})
    results = simulator.simulate(scenario, paths=4, executor="serial", keep_paths=None)
    frames = (results.timeseries, results.pools, results.models, results.jobs)
    return sum(frame.memory_usage(deep=True).sum() for frame in frames) / 4


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    fleetcast = str(Path(sys.executable).with_name("fleetcast"))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        command = [fleetcast, "run", str(ROOT / "scenarios" / "launch.yaml"), *OVERRIDES, "--paths", str(args.paths),
                   "--workers", str(args.workers), "--out", str(out), "-q"]
        start = time.perf_counter()
        child = subprocess.Popen(command)
        sampler = TreeMemory(child.pid)
        sampler.start()
        code = child.wait()
        elapsed = time.perf_counter() - start
        sampler.stopped.set()
        sampler.join()
        if code:
            raise SystemExit(f"fleetcast run exited {code}")
        summary = json.loads((out / "summary.json").read_text())
        bands = pd.read_parquet(out / "bands.parquet")
        kept = pd.read_parquet(out / "timeseries.parquet", columns=["path"])
        assert summary["paths"] == args.paths and len(summary["per_path"]) == args.paths
        assert bands["time"].nunique() == summary["steps"]
        assert kept["path"].nunique() == summary["kept_paths"]
        disk = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    reference = _tables_per_path_bytes() * args.paths
    figures = {
        "paths": args.paths,
        "workers": args.workers,
        "steps": summary["steps"],
        "kept_paths": summary["kept_paths"],
        "wall_s": elapsed,
        "paths_per_s": args.paths / elapsed,
        "peak_rss_total_gb": sampler.peak_total / 1e9,
        "peak_rss_main_gb": sampler.peak_main / 1e9,
        "run_directory_gb": disk / 1e9,
        "without_streaming_tables_gb": reference / 1e9,
    }
    print(f"{args.paths:,} paths of launch.yaml, one year hourly, {args.workers} workers:")
    print(f"  wall time {elapsed:,.0f} s ({figures['paths_per_s']:.1f} paths/s)")
    print(f"  peak memory {figures['peak_rss_total_gb']:.2f} GB for the whole process tree "
          f"(main process {figures['peak_rss_main_gb']:.2f} GB); target < 2 GB")
    print(f"  holding every path's tables instead would take {figures['without_streaming_tables_gb']:.1f} GB")
    print(f"  run directory {figures['run_directory_gb']:.2f} GB")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
