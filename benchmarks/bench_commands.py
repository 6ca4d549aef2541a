"""Whole commands as a user types them, after ``make install`` (warm numba cache).

    .venv/bin/python benchmarks/bench_commands.py [--repeats 3] [--json PATH]

Timed as subprocesses, median of ``--repeats``, each writing to a temporary folder:

- ``fleetcast run scenarios/launch.yaml``: what ``make run`` runs (20 paths of the base and
  its two variants, 18 months hourly, tables, workbooks and reports). Target 10 s on 2 cores.
- ``fleetcast run scenarios/launch.yaml --paths 1 --no-report``. Target 3 s.

The reference in the same run is the first command with ``--workers 1``: every path in
one worker process and the runs' files written one after another, as a single core would;
its ratio is what the two cores bring. A third figure calibrates the machine: the time
Python takes to import the libraries every command loads (numpy, pandas, pydantic, numba).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FLEETCAST = Path(sys.executable).with_name("fleetcast")
LAUNCH = ROOT / "scenarios" / "launch.yaml"


def _timed(command: list[str], repeats: int) -> float:
    runs = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as folder:
            started = time.perf_counter()
            subprocess.run([*command, "--out", str(Path(folder) / "run"), "--quiet"], check=True, cwd=ROOT)
            runs.append(time.perf_counter() - started)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    run = [str(FLEETCAST), "run", str(LAUNCH)]
    _timed([*run, "--paths", "1", "--no-report"], 1)  # caches warm
    out = {
        "make_run_s": _timed(run, args.repeats),
        "one_path_no_report_s": _timed([*run, "--paths", "1", "--no-report"], args.repeats),
        "make_run_one_worker_s": _timed([*run, "--workers", "1"], args.repeats),
    }
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import numpy, pandas, pydantic, numba"], check=True)
    out["import_libraries_s"] = time.perf_counter() - started
    out["two_cores_speedup"] = out["make_run_one_worker_s"] / out["make_run_s"]
    print(f"make run (fleetcast run scenarios/launch.yaml): {out['make_run_s']:.1f} s (target 10 s); with "
          f"--workers 1: {out['make_run_one_worker_s']:.1f} s ({out['two_cores_speedup']:.2f}x); --paths 1 "
          f"--no-report: {out['one_path_no_report_s']:.2f} s (target 3 s); importing numpy, pandas, pydantic and "
          f"numba alone: {out['import_libraries_s']:.2f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
