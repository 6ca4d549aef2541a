"""The shipped launch scenario with its training, one year hourly: one path and many paths.

    .venv/bin/python benchmarks/bench_launch.py [--paths 200] [--repeats 5] [--json PATH]

One path: ``run_path`` with the compiled training loop against the same path with training
as SimPy processes (one process per job, a timeout per checkpoint segment: the engine as it
was before the compiled loop, kept as the reference), median of several runs after a warm-up.
Every array of the two must be equal, and every job's outcome. Target: 10x against the
engine as the issue measured it (``ISSUE_PATH_S``, recorded then on this machine: 0.89 s),
which the results keep beside the same-run ratio.

Many paths: ``simulate`` of ``--paths`` paths serially and on 2 local workers (variants off),
alternated for ``--rounds`` rounds, paths per second, the speed-up of 2 workers over 1 and the time 10,000 paths would take at
that rate; peak memory of the main process and of the largest worker. Targets: 10,000 paths
in under 300 s on 2 workers; 2 workers at least 1.8x one.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import time
from pathlib import Path

import numpy as np

import simulator
from simulator.path.compiled import compile_scenario
from simulator.path.engine import run_path

ROOT = Path(__file__).resolve().parents[1]
#: One path of this benchmark with the engine before the compiled loop, as measured when the
#: work began (training as SimPy processes, pandas digests): the issue's reference figure.
ISSUE_PATH_S = 0.89


def _peak_bytes() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))


def one_path(scenario: simulator.Scenario, repeats: int) -> dict:
    plan = compile_scenario(scenario)
    timed = {}
    for loop in ("compiled", "simpy"):
        run_path(plan, 1, 0, training_loop=loop)  # JIT warm-up
        runs = []
        for r in range(repeats):
            started = time.perf_counter()
            result = run_path(plan, 1, r, training_loop=loop)
            runs.append(time.perf_counter() - started)
        timed[loop] = (statistics.median(runs), result)
    ours, theirs = timed["compiled"][1], timed["simpy"][1]
    same = all(np.array_equal(getattr(ours, name), getattr(theirs, name))
               for name in ("pool_out", "model_out", "training_queued", "training_running"))
    same &= [(j.name, j.start_s, j.end_s, j.done_s, j.preemptions, j.interruptions) for j in ours.jobs] == [
        (j.name, j.start_s, j.end_s, j.done_s, j.preemptions, j.interruptions) for j in theirs.jobs]
    return {"jobs": len(ours.jobs), "compiled_s": timed["compiled"][0], "simpy_loop_s": timed["simpy"][0],
            "speedup": timed["simpy"][0] / timed["compiled"][0], "same_results": bool(same),
            "issue_reference_s": ISSUE_PATH_S, "speedup_over_issue_reference": ISSUE_PATH_S / timed["compiled"][0]}


def many_paths(scenario: simulator.Scenario, paths: int, rounds: int) -> dict:
    """Serial and 2 workers, alternated for ``rounds`` rounds (this machine's speed drifts
    with its neighbours' load: each round's ratio compares runs made side by side in time);
    medians over the rounds."""
    simulator.simulate(scenario, paths=2, executor="serial")  # caches warm
    out: dict = {"paths": paths, "rounds": rounds}
    times: dict[str, list[float]] = {"serial": [], "local_2": []}
    for _ in range(rounds):
        for label, kwargs in (("serial", {"executor": "serial"}), ("local_2", {"executor": "local", "workers": 2})):
            started = time.perf_counter()
            simulator.simulate(scenario, paths=paths, **kwargs)
            times[label].append(time.perf_counter() - started)
    for label, runs in times.items():
        out[f"{label}_s"] = statistics.median(runs)
        out[f"{label}_paths_per_s"] = paths / out[f"{label}_s"]
    out["speedup_2_workers"] = statistics.median(s / p for s, p in zip(times["serial"], times["local_2"], strict=True))
    out["speedups_by_round"] = [s / p for s, p in zip(times["serial"], times["local_2"], strict=True)]
    out["ten_thousand_paths_on_2_workers_s"] = 10_000 / out["local_2_paths_per_s"]
    out["main_peak_bytes"] = _peak_bytes()
    out["largest_worker_peak_bytes"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    scenario = simulator.load_scenario(ROOT / "scenarios" / "launch.yaml", {"horizon.duration": "365d", "variants": {}})
    path = one_path(scenario, args.repeats)
    print(f"one path ({path['jobs']:,} jobs): compiled loop {path['compiled_s']:.3f} s, SimPy loop "
          f"{path['simpy_loop_s']:.3f} s: {path['speedup']:.1f}x; {path['speedup_over_issue_reference']:.1f}x the "
          f"issue's {ISSUE_PATH_S} s (target 10x); same results: {path['same_results']}")
    many = many_paths(scenario, args.paths, args.rounds)
    print(f"{args.paths} paths, {args.rounds} rounds: serial {many['serial_paths_per_s']:.1f} paths/s, 2 workers "
          f"{many['local_2_paths_per_s']:.1f} paths/s ({many['speedup_2_workers']:.2f}x, median of the rounds' ratios; target 1.8x); 10,000 paths "
          f"would take {many['ten_thousand_paths_on_2_workers_s']:.0f} s on 2 workers (target 300 s); peak memory "
          f"main {many['main_peak_bytes'] / 1e9:.2f} GB, largest worker {many['largest_worker_peak_bytes'] / 1e9:.2f} GB")
    if args.json:
        Path(args.json).write_text(json.dumps({"one_path": path, "many_paths": many}, indent=2) + "\n")


if __name__ == "__main__":
    main()
