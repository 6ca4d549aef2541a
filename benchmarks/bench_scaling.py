"""Monte Carlo throughput: paths per second on 1 and 2 local workers, and on Dask.

    .venv/bin/python benchmarks/bench_scaling.py [--paths 200] [--json PATH]

Runs the default scenario over one year at hourly steps (training streams off, so a path
costs the same everywhere) serially, on a local process pool of 2 workers, and on a Dask
LocalCluster of 2 single-threaded worker processes on loopback. Reports paths/s, the speed-up
of 2 workers over 1 (target ≥ 1.7× on 2 cores) and Dask's overhead per path against the
local pool. All three must give identical time series.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pandas as pd

import simulator

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", type=int, default=200)
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    scenario = simulator.load_scenario(ROOT / "scenarios" / "launch.yaml",
                                       {"horizon.duration": "365d", "training.streams": []})
    simulator.simulate(scenario, paths=2, executor="serial")  # JIT and caches warm

    def timed(**kwargs):
        start = time.perf_counter()
        result = simulator.simulate(scenario, paths=args.paths, **kwargs)
        return time.perf_counter() - start, result

    serial_s, serial = timed(executor="serial")
    local_s, local = timed(executor="local", workers=2)
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=":0", silence_logs=50) as cluster, Client(cluster) as client:
        client.run(lambda: None)
        simulator.simulate(scenario, paths=2, executor=client)  # warm the workers
        dask_s, dask = timed(executor=client)
    for other in (local, dask):
        pd.testing.assert_frame_equal(serial.timeseries, other.timeseries)
        pd.testing.assert_frame_equal(serial.bands, other.bands)
        assert serial.summary == other.summary
    figures = {
        "paths": args.paths,
        "serial_paths_per_s": args.paths / serial_s,
        "local2_paths_per_s": args.paths / local_s,
        "dask2_paths_per_s": args.paths / dask_s,
        "speedup_2_workers": serial_s / local_s,
        "dask_overhead_per_path_s": (dask_s - local_s) / args.paths,
    }
    print(f"{args.paths} paths of launch.yaml, one year hourly:")
    print(f"  1 worker (serial)   {figures['serial_paths_per_s']:6.1f} paths/s")
    print(f"  2 local workers     {figures['local2_paths_per_s']:6.1f} paths/s   speed-up {figures['speedup_2_workers']:.2f}x")
    print(f"  Dask, 2 workers     {figures['dask2_paths_per_s']:6.1f} paths/s   overhead {figures['dask_overhead_per_path_s'] * 1000:+.1f} ms/path")
    print("  identical kept time series, bands and summary on all three")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
