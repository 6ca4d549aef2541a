"""Many runs on one executor against one run after another: a sweep and a sensitivity study.

    .venv/bin/python benchmarks/bench_points.py [--paths 200] [--horizon 24mo] [--json PATH]

Sweep: ``growth.yaml`` at 12 points (owned H100s x price per token, 4 x 3), ``--paths``
paths each. Sensitivity: the investor's case (``growth.yaml`` with growth, price per token
and lead time uncertain, as in ``notebooks/investor.ipynb``), one-at-a-time: 7 runs.

Reference: each run on its own local pool of 2 workers, one after another (what ``fleetcast
sweep`` and ``sensitivity`` did before). Ours: every run's paths on one pool of 2 workers
(:func:`simulator.runs.batch.simulate_all`). Both must give identical summaries. Reported:
wall time of each and the speed-up.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import simulator
from simulator.decisions.sensitivity import sensitivity_table
from simulator.decisions.sweep import run_sweep, sweep_points
from simulator.runs.batch import simulate_all

ROOT = Path(__file__).resolve().parents[1]
GROWTH = ROOT / "scenarios" / "growth.yaml"
INVESTOR = {
    "models[0].demand.growth.rate_per_month": {"dist": "lognormal", "median": 0.12, "p90": 0.2},
    "models[0].pricing.output_usd_per_1m": {"dist": "triangular", "low": 2.5, "mode": 4.0, "high": 4.5},
    "fleet.pools[0].orders[0].lead_time": {"dist": "uniform", "low": "90d", "high": "200d"},
}


def _compare(label: str, one_by_one, together) -> dict:
    started = time.perf_counter()
    reference = one_by_one()
    reference_s = time.perf_counter() - started
    started = time.perf_counter()
    ours = together()
    ours_s = time.perf_counter() - started
    same = reference.equals(ours)
    print(f"{label}: one after another {reference_s:.1f} s, on one executor {ours_s:.1f} s: "
          f"{reference_s / ours_s:.2f}x; same table: {same}", flush=True)
    return {"one_after_another_s": reference_s, "one_executor_s": ours_s, "speedup": reference_s / ours_s,
            "same_results": bool(same)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", type=int, default=200)
    parser.add_argument("--horizon", default="24mo")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    settings = [f"horizon.duration={json.dumps(args.horizon)}", "variants={}", f"paths={args.paths}"]
    simulator.simulate(simulator.load_scenario(GROWTH, {"horizon.duration": "7d", "variants": {}}),
                       paths=2, executor="serial")  # caches warm

    def alone(point):
        return simulator.simulate(point, executor="local", workers=2)

    def together(points):
        return simulate_all(points, executor="local", workers=2, finish=lambda key, results: results.summary)

    grid = sweep_points({"fleet.pools[0].count": [256, 320, 384, 448],
                         "models[0].pricing.output_usd_per_1m": [3.0, 4.0, 5.0]})
    out = {"paths": args.paths, "horizon": args.horizon, "points": len(grid)}
    out["sweep"] = _compare(f"sweep, {len(grid)} points x {args.paths} paths",
                            lambda: run_sweep(GROWTH, grid, alone, settings),
                            lambda: run_sweep(GROWTH, grid, overrides=settings, simulate_points=together))
    investor = simulator.load_scenario(GROWTH, {"horizon.duration": args.horizon, "paths": args.paths,
                                                "variants": {}, **INVESTOR})
    out["sensitivity"] = _compare(f"sensitivity, 7 runs x {args.paths} paths",
                                  lambda: sensitivity_table(investor, alone),
                                  lambda: sensitivity_table(investor, simulate_points=together))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
