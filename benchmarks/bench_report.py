"""Report rendering time for the default scenario (``launch.yaml`` as shipped: 20 paths, 18
months hourly, two variants).

    .venv/bin/python benchmarks/bench_report.py [--repeat 3] [--json PATH]

Runs the scenario once without a report, then times ``render_report`` on the run directory:
the top report alone (the target: under 3 s) and with its two variants' reports, median of
``--repeat``. The reference is the same run's simulation time, reported as a ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import simulator
from simulator.report import render_report

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    from simulator.decisions.runner import run_scenario

    scenario = simulator.load_scenario(ROOT / "scenarios" / "launch.yaml")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "launch"
        start = time.perf_counter()
        results = run_scenario(scenario, show_progress=False)
        simulate_s = time.perf_counter() - start
        results.save(out, report=False)
        render_report(out, variants=False)  # imports and caches warm
        top, whole = [], []
        for _ in range(args.repeat):
            start = time.perf_counter()
            render_report(out, variants=False)
            top.append(time.perf_counter() - start)
            start = time.perf_counter()
            render_report(out)
            whole.append(time.perf_counter() - start)
        size = (out / "report.html").stat().st_size
    figures = {
        "report_s": statistics.median(top),
        "report_with_variants_s": statistics.median(whole),
        "simulate_s": simulate_s,
        "report_over_simulate": statistics.median(top) / simulate_s,
        "report_html_bytes": size,
    }
    print("launch.yaml as shipped (20 paths, 18 months hourly, 2 variants):")
    print(f"  report.html + plots/      {figures['report_s']:.2f} s (target < 3 s), {size / 1e6:.2f} MB")
    print(f"  with the variants' too    {figures['report_with_variants_s']:.2f} s")
    print(f"  simulating the 3 runs     {simulate_s:.2f} s  (report/simulate {figures['report_over_simulate']:.2f})")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
