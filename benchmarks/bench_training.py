"""Scheduling 10,000 training jobs over a year on one path, against two references.

    .venv/bin/python benchmarks/bench_training.py [--jobs 10000] [--gpus 1024] [--json PATH]

A dedicated 1,024-GPU pool receives a Poisson stream of about ``--jobs`` jobs over a year
(sizes 1–64 GPUs, lognormal durations, offered load about 0.85). Timed: one path of the
engine with its compiled training loop (``run_path``), with FIFO and with EASY backfill,
median of several runs; and the same path with training as SimPy processes (one per job, a
timeout per checkpoint segment: the engine before the compiled loop), whose schedule must
be the same to the bit. A third reference: a minimal FIFO gang scheduler written as a plain
event loop (a heap of job ends) on the same jobs; its start times must equal the engine's.
Target: at most 0.05 s per path.
"""

from __future__ import annotations

import argparse
import heapq
import json
import statistics
import time
from pathlib import Path

import numpy as np

import simulator
from simulator.path.compiled import compile_scenario
from simulator.path.engine import run_path


def scenario(jobs: int, gpus: int, policy: str) -> simulator.Scenario:
    mean_gpus = float(np.mean([1, 2, 4, 8, 16, 64]))
    mean_h = 0.85 * gpus * 8766 / (jobs * mean_gpus)  # offered load about 0.85
    return simulator.load_scenario({
        "name": "bench-training",
        "horizon": {"start": "2026-01-01", "duration": "365d", "step": "1h"},
        "fleet": {"pools": [{"name": "train", "gpu": "H100", "count": gpus,
                             "training": {"mode": "dedicated", "partition_gpus": gpus}}]},
        "training": {"policy": policy, "streams": [{
            "name": "jobs", "pool": "train", "arrivals_per_hour": jobs / 8760,
            "gpus": {"choices": [1, 2, 4, 8, 16, 64]},
            "duration": {"dist": "lognormal", "median": f"{mean_h * 0.6:.4f}h", "p90": f"{mean_h * 2:.4f}h"}}]},
    })


def reference_fifo(submit: np.ndarray, gpus: np.ndarray, work: np.ndarray, capacity: int) -> np.ndarray:
    """Strict FIFO gang scheduling: the head starts when enough GPUs are free."""
    starts = np.full(len(submit), np.nan)
    ends: list[tuple[float, int]] = []
    free, now = capacity, 0.0
    for i in range(len(submit)):
        now = max(now, submit[i])
        while ends and ends[0][0] <= now:
            free += heapq.heappop(ends)[1]
        while free < gpus[i]:
            end, released = heapq.heappop(ends)
            now = max(now, end)
            free += released
            while ends and ends[0][0] <= now:
                free += heapq.heappop(ends)[1]
        starts[i] = now
        free -= gpus[i]
        heapq.heappush(ends, (now + work[i], int(gpus[i])))
    return starts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--gpus", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    figures = {}
    for policy in ("fifo", "easy_backfill"):
        plan = compile_scenario(scenario(args.jobs, args.gpus, policy))
        timed = {}
        for loop in ("compiled", "simpy"):
            run_path(plan, 1, 0, training_loop=loop)  # JIT warm-up
            runs = []
            for _ in range(args.repeats if loop == "compiled" else max(2, args.repeats // 2)):
                started = time.perf_counter()
                result = run_path(plan, 1, 0, training_loop=loop)
                runs.append(time.perf_counter() - started)
            timed[loop] = (statistics.median(runs), list(result.jobs))
        jobs = timed["compiled"][1]
        same = [(j.start_s, j.end_s, j.done_s) for j in jobs] == [(j.start_s, j.end_s, j.done_s)
                                                                 for j in timed["simpy"][1]]
        entry = {"jobs": len(jobs), "engine_s": timed["compiled"][0], "simpy_loop_s": timed["simpy"][0],
                 "speedup_over_simpy_loop": timed["simpy"][0] / timed["compiled"][0],
                 "same_schedule_as_simpy_loop": same, "started": sum(job.start_s is not None for job in jobs)}
        if policy == "fifo":
            submit = np.array([job.submit_s for job in jobs])
            gpus = np.array([job.gpus for job in jobs])
            work = np.array([job.work_s for job in jobs])
            started = time.perf_counter()
            reference = reference_fifo(submit, gpus, work, args.gpus)
            entry["reference_s"] = time.perf_counter() - started
            engine = np.array([np.nan if job.start_s is None else job.start_s for job in jobs])
            within = ~np.isnan(engine)
            entry["max_start_difference_s"] = float(np.abs(engine[within] - reference[within]).max())
        figures[policy] = entry
        waits = [job.start_s - job.submit_s for job in jobs if job.start_s is not None]
        print(f"{policy:>14}: {entry['jobs']:,} jobs, {entry['started']:,} started, mean wait "
              f"{np.mean(waits) / 3600:.2f} h; one path {entry['engine_s']:.3f} s (median of {args.repeats}), "
              f"SimPy loop {entry['simpy_loop_s']:.3f} s ({entry['speedup_over_simpy_loop']:.1f}x), same schedule: "
              f"{same}" + (f"; reference FIFO loop {entry['reference_s']:.3f} s, start times differ by at most "
                           f"{entry['max_start_difference_s']:.2g} s" if policy == "fifo" else ""))
    ok = all(f["engine_s"] <= 0.05 and f["same_schedule_as_simpy_loop"] for f in figures.values())
    print("target (<= 0.05 s per path, the SimPy loop's schedule):", "met" if ok else "MISSED")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
