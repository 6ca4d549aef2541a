"""Wall time of replaying the shipped Azure conversation trace on one replica.

    .venv/bin/python benchmarks/bench_trace_replay.py [--json PATH]

Llama-3.1-70B on 4 × H100 (FP8 and BF16), max batch 256, the hour of production traffic
in ``azure-conv`` (19,366 requests): reading the trace, and the engine after a JIT warm-up
(median of 5). No reference implementation here: the same engine's agreement with the
per-request SimPy model is ``bench_serving.py``'s; this one checks the "under a second"
target of a full-hour replay.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from simulator.serving import simulate_replica
from simulator.serving.config import roofline_model
from simulator.serving.trace import read_trace


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    started = time.perf_counter()
    trace = read_trace("azure-conv")
    read_s = time.perf_counter() - started
    figures = {"requests": len(trace.arrival_s), "read_trace_s": read_s}
    for dtype in ("fp8", "bf16"):
        model = roofline_model("llama-3.1-70b", "H100", tp=4, dtype=dtype)
        simulate_replica(trace.arrival_s[:50], trace.prompt_tokens[:50], trace.output_tokens[:50], model)
        runs = []
        for _ in range(5):
            start = time.perf_counter()
            result = simulate_replica(trace.arrival_s, trace.prompt_tokens, trace.output_tokens, model, max_batch=256)
            runs.append(time.perf_counter() - start)
        summary = result.summary(gpus_per_replica=4)
        figures[dtype] = {"engine_s": statistics.median(runs), "iterations": result.iterations,
                          "ttft_p90_s": summary["ttft_p90_s"], "tpot_p99_s": summary["tpot_p99_s"]}
        print(f"llama-3.1-70b 4xH100 {dtype}: {len(trace.arrival_s):,} requests replayed in "
              f"{figures[dtype]['engine_s'] * 1000:.1f} ms (median of 5; {result.iterations:,} iterations); "
              f"TTFT p90 {summary['ttft_p90_s']:.3f} s, TPOT p99 {summary['tpot_p99_s'] * 1000:.1f} ms")
    print(f"reading the trace: {read_s * 1000:.0f} ms")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
