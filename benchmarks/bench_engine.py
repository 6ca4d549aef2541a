"""Engine versus the per-step SimPy reference: speed ratio on one path of a year at 1-minute steps.

    .venv/bin/python benchmarks/bench_engine.py [--scenario scenarios/launch.yaml]
        [--duration 365d] [--step 1min] [--seed 7] [--repeats 5] [--json PATH]

Times ``run_path(plan, seed, 0)`` (the engine: demand draws, SimPy events, numba kernel;
median of several runs after a JIT warm-up), the whole ``simulator.simulate(..., paths=1, executor="serial")``
(compile, run, build the tables), and ``reference_run`` (benchmarks/reference_loop.py: one
SimPy tick per step in plain Python) on the same demand draws; checks that the engine's
arrays equal the reference's and prints a small table.

:func:`compare` (reference dict vs. a ``PathResult``) is shared with
``tests/test_reference_agreement.py``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from reference_loop import reference_run  # noqa: E402

import simulator  # noqa: E402
from simulator.path import kernels as K  # noqa: E402
from simulator.path.compiled import compile_scenario  # noqa: E402
from simulator.path.engine import draw_demand, run_path  # noqa: E402

#: reference key -> (engine array, column or the columns it adds up)
COMPARED = {
    "pool_installed": ("pool", K.POOL_INSTALLED),
    "pool_available": ("pool", K.POOL_AVAILABLE),
    "pool_training": ("pool", K.POOL_TRAINING),
    "pool_inference": ("pool", K.POOL_INFERENCE),
    "pool_idle": ("pool", K.POOL_IDLE),
    "pool_busy": ("pool", K.POOL_BUSY),
    "pool_depreciation": ("pool", K.POOL_DEPRECIATION),
    "pool_cloud": ("pool", K.POOL_CLOUD),
    "pool_energy": ("pool", K.POOL_ENERGY),
    "pool_energy_kwh": ("pool", K.POOL_ENERGY_KWH),
    "pool_facility": ("pool", K.POOL_FACILITY),
    "pool_rnd": ("pool", (K.POOL_RND_DEPRECIATION, K.POOL_RND_CLOUD, K.POOL_RND_ENERGY, K.POOL_RND_FACILITY)),
    "model_demand": ("model", K.MODEL_DEMAND),
    "model_served": ("model", K.MODEL_SERVED),
    "model_unserved": ("model", K.MODEL_UNSERVED),
    "model_replicas": ("model", K.MODEL_REPLICAS),
    "model_shortfall_gpus": ("model", K.MODEL_SHORTFALL_GPUS),
    "model_revenue": ("model", K.MODEL_REVENUE),
    "other": ("other", None),
}
RTOL, ATOL = 1e-9, 1e-6


def engine_array(result, key: str) -> np.ndarray:
    kind, column = COMPARED[key]
    if kind == "pool":
        if isinstance(column, tuple):
            return result.pool_out[:, :, list(column)].sum(axis=2)
        return result.pool_out[:, :, column]
    if kind == "model":
        return result.model_out[:, :, column]
    return result.other_out


def compare(ref: dict, result, rtol: float = RTOL, atol: float = ATOL) -> list[str]:
    """One line per compared array where the engine and the reference differ (empty: agree)."""
    problems = []
    for key in COMPARED:
        ours, theirs = ref[key], engine_array(result, key)
        if ours.shape != theirs.shape:
            problems.append(f"{key}: shape {theirs.shape} (engine) vs {ours.shape} (reference)")
            continue
        bad = ~np.isclose(theirs, ours, rtol=rtol, atol=atol)
        if bad.any():
            where = np.argwhere(bad)
            first = tuple(int(i) for i in where[0])
            problems.append(
                f"{key}: {len(where)} of {bad.size} values differ; first at {first}: "
                f"engine {theirs[first]!r} vs reference {ours[first]!r}; "
                f"steps {int(where[0][0])}..{int(where[-1][0])}"
            )
    return problems


def _timed(fn, *args, **kwargs):
    start = time.perf_counter()
    value = fn(*args, **kwargs)
    return time.perf_counter() - start, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default=str(ROOT / "scenarios" / "launch.yaml"))
    parser.add_argument("--duration", default="365d")
    parser.add_argument("--step", default="1min")
    parser.add_argument("--seed", type=int, default=None, help="default: the scenario's seed")
    parser.add_argument("--repeats", type=int, default=5, help="engine runs (median)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(argv)

    # The reference models inference only: the scenario's training jobs are left out.
    overrides = {"horizon.duration": args.duration, "horizon.step": args.step, "paths": 1,
                 "training.jobs": [], "training.streams": []}
    scenario = simulator.load_scenario(args.scenario, overrides)
    seed = scenario.seed if args.seed is None else args.seed

    # JIT warm-up on a short horizon (the kernel is cached on disk, but load it once here).
    warm = simulator.load_scenario(args.scenario, {"horizon.duration": "2d", "horizon.step": "1h", "training.streams": []})
    run_path(compile_scenario(warm), seed, 0)

    compile_s, plan = _timed(compile_scenario, scenario)
    engine_runs = [_timed(run_path, plan, seed, 0)[0] for _ in range(max(1, args.repeats))]
    engine_s = statistics.median(engine_runs)
    result = run_path(plan, seed, 0)
    full_runs = [
        _timed(simulator.simulate, scenario, paths=1, seed=seed, executor="serial")[0]
        for _ in range(max(1, min(args.repeats, 3)))
    ]
    full_s = statistics.median(full_runs)

    demand_runs = [_timed(draw_demand, plan, seed, 0)[0] for _ in range(max(1, args.repeats))]
    demand_s = statistics.median(demand_runs)
    demand = draw_demand(plan, seed, 0)
    reference_s, ref = _timed(reference_run, scenario, demand)
    problems = compare(ref, result)

    figures = {
        "scenario": str(args.scenario),
        "duration": args.duration,
        "step": args.step,
        "n_steps": plan.n_steps,
        "n_pools": len(plan.pool_names),
        "n_models": len(plan.model_names),
        "seed": seed,
        "compile_s": compile_s,
        "engine_s": engine_s,
        "engine_runs_s": engine_runs,
        "engine_draw_demand_s": demand_s,
        "engine_plus_tables_s": full_s,
        "reference_s": reference_s,
        "ratio_reference_over_engine": reference_s / engine_s,
        "ratio_reference_over_engine_plus_tables": reference_s / full_s,
        "agree": not problems,
        "disagreements": problems,
    }
    rows = [
        (f"engine run_path (median of {len(engine_runs)})", f"{engine_s:10.3f} s"),
        ("  of which draw_demand", f"{demand_s:10.3f} s"),
        ("engine + tables (simulate)", f"{full_s:10.3f} s"),
        ("reference loop (SimPy tick/step)", f"{reference_s:10.3f} s"),
        ("ratio reference / engine", f"{reference_s / engine_s:10.1f} x"),
        ("ratio reference / engine+tables", f"{reference_s / full_s:10.1f} x"),
    ]
    print(
        f"{Path(args.scenario).name}: {args.duration} at {args.step} = {plan.n_steps:,} steps, "
        f"{len(plan.pool_names)} pools, {len(plan.model_names)} models, seed {seed}"
    )
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")
    if problems:
        print("outputs DISAGREE:")
        for line in problems:
            print("  " + line)
    else:
        print(f"outputs agree (rtol {RTOL:g}, atol {ATOL:g}) on {len(COMPARED)} arrays")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
