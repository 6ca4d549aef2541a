"""Sim-to-real: the engine against 13 measured vLLM v0.15.1 runs on H100.

Regenerates each run's workload exactly as its client did (``simulator.serving.calibration``:
100-prompt pool of 10 groups × 10 with a shared system prompt per group, request k of a stage
on prompt k mod 100, ``int(rate × duration)`` exponential gaps rescaled to the stage, stages
sequential with the drain and a 1 s pause, ``ignore_eos`` output lengths, measured prompt
lengths where given), serves it with vLLM V1 scheduling (the run's TP, ``max_num_seqs``,
``max_num_batched_tokens``, KV tokens, prefix caching on) and the operator iteration model with
the catalog's fitted constants, and prints and writes the signed error
``simulated / measured − 1`` per experiment and metric (stage ``all``; the per-stage rows are in
the JSON), with the median and worst |error| of each metric.

Run: ``.venv/bin/python benchmarks/bench_sim_to_real.py [--seed S] [--json PATH]``; writes
``benchmarks/results/sim_to_real.json`` by default. Seeded and deterministic.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from simulator.serving.calibration import METRICS, compare, headline, load_experiments

RESULTS = Path(__file__).parent / "results" / "sim_to_real.json"


def table(rows: list[dict]) -> str:
    """Signed errors (percent), one line per experiment, stage ``all``."""
    by_run: dict[str, dict[str, float]] = {}
    for row in rows:
        if row["stage"] == "all":
            by_run.setdefault(row["experiment"], {})[row["metric"]] = row["error"]
    lines = [f"{'experiment':44s}" + "".join(f"{m:>10s}" for m in METRICS)]
    for name, errors in by_run.items():
        cells = "".join(f"{errors[m] * 100:+9.1f}%" if m in errors else f"{'—':>10s}" for m in METRICS)
        lines.append(f"{name:44s}{cells}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="PATH", default=str(RESULTS), help="where to write the figures")
    args = parser.parse_args()
    rows = compare(load_experiments(), seed=args.seed)
    summary = headline(rows)
    print(table(rows))
    print()
    for key, value in summary.items():
        print(f"{key:32s} {value:8.3f}")
    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"seed": args.seed, "summary": summary, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
