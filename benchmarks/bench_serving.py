"""Serving engine versus the per-request SimPy model: speed ratio on one replica.

    .venv/bin/python benchmarks/bench_serving.py [--requests 100000] [--max-batch 64]
        [--utilisation 0.85] [--seed 7] [--repeats 5] [--simpy-repeats 3]
        [--kv-capacity TOKENS] [--chunk TOKENS] [--no-reference] [--json PATH]

Times ``simulator.serving.simulate_replica`` (numba; median of several runs after a JIT
warm-up) and ``serving_simpy.simpy_replica`` (benchmarks/serving_simpy.py: one SimPy process
per request, one replica process running iterations; median of a few runs) on the same seeded
workload (``tests.serving_reference.make_workload``: Poisson arrivals, prompts 1..4000, outputs
1..1000, linear iteration model ``0.01 s + 2e-5 s/token``), plus one run of the plain-Python
reference loop (tests/serving_reference.py) for scale; checks that every request's latencies
agree (max abs difference) and prints a small table. It also times the vLLM V1 scheduling
policy (``simulator.serving.vllm.simulate_vllm``: token budget = the chunk or 8192, prefix
caching on, KV preemption) on the same workload and model, reported against the same SimPy
time (a speed figure only: its schedule differs from the contract semantics SimPy models).
It also times a closed loop of ``--max-batch`` users (``simulate_router(..., users=N)``, what
``fleetcast serving --concurrency`` runs) over the same request lengths.
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
sys.path.insert(0, str(ROOT))

from serving_simpy import simpy_replica  # noqa: E402

from simulator.serving import LinearIterationModel, simulate_replica, simulate_router  # noqa: E402
from simulator.serving.vllm import DEFAULT_MAX_BATCHED_TOKENS, simulate_vllm  # noqa: E402
from tests.serving_reference import OUTPUT_KEYS, make_workload, reference_replica  # noqa: E402

BASE_S, PER_TOKEN_S = 0.01, 2e-5
TOL_S = 1e-9


def _timed(fn, *args, **kwargs):
    start = time.perf_counter()
    value = fn(*args, **kwargs)
    return time.perf_counter() - start, value


def max_abs_diff(a: dict, b: dict) -> dict[str, float]:
    """Per output key, the largest |a - b| over requests (inf if NaNs fall differently)."""
    out = {}
    for key in OUTPUT_KEYS:
        x, y = np.asarray(a[key], dtype=float), np.asarray(b[key], dtype=float)
        if x.shape != y.shape or not np.array_equal(np.isnan(x), np.isnan(y)):
            out[key] = float("inf")
        else:
            d = np.abs(x - y)[~np.isnan(x)]
            out[key] = float(d.max()) if d.size else 0.0
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--max-batch", type=int, default=64)
    parser.add_argument("--utilisation", type=float, default=0.85,
                        help="arrival rate as a fraction of the rough full-batch capacity")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--kv-capacity", type=int, default=None, help="KV tokens (default: unlimited)")
    parser.add_argument("--chunk", type=int, default=None, help="prefill chunk budget (default: none)")
    parser.add_argument("--repeats", type=int, default=5, help="engine runs (median)")
    parser.add_argument("--simpy-repeats", type=int, default=3, help="SimPy runs (median)")
    parser.add_argument("--no-reference", action="store_true", help="skip the plain-Python loop")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(argv)

    arrival, prompt, output = make_workload(
        args.requests, args.seed, args.utilisation, args.max_batch, BASE_S, PER_TOKEN_S
    )
    opts = dict(max_batch=args.max_batch, kv_capacity_tokens=args.kv_capacity,
                prefill_chunk_tokens=args.chunk)
    model = LinearIterationModel(base_s=BASE_S, per_token_s=PER_TOKEN_S)

    # JIT warm-up (the kernels may be cached on disk; load them once here).
    simulate_replica(arrival[:200], prompt[:200], output[:200], model, **opts)

    engine_runs = [
        _timed(simulate_replica, arrival, prompt, output, model, **opts)[0]
        for _ in range(max(1, args.repeats))
    ]
    engine_s = statistics.median(engine_runs)
    r = simulate_replica(arrival, prompt, output, model, **opts)
    engine = {k: np.asarray(getattr(r, k), dtype=float) for k in OUTPUT_KEYS}

    vllm_opts = dict(max_num_seqs=args.max_batch, kv_capacity_tokens=args.kv_capacity,
                     max_num_batched_tokens=args.chunk or DEFAULT_MAX_BATCHED_TOKENS)
    simulate_vllm(arrival[:200], prompt[:200], output[:200], model, **vllm_opts)
    vllm_runs = [_timed(simulate_vllm, arrival, prompt, output, model, **vllm_opts)[0]
                 for _ in range(max(1, args.repeats))]
    vllm_s = statistics.median(vllm_runs)

    # Closed loop (fleetcast serving --concurrency): the same requests, max_batch users, no arrivals given.
    closed_runs = [_timed(simulate_router, None, prompt, output, model,
                          users=args.max_batch, **opts)[0] for _ in range(max(1, args.repeats))]
    closed_s = statistics.median(closed_runs)

    simpy_runs = []
    for _ in range(max(1, args.simpy_repeats)):
        elapsed, simpy_res = _timed(simpy_replica, arrival, prompt, output, BASE_S, PER_TOKEN_S, **opts)
        simpy_runs.append(elapsed)
    simpy_s = statistics.median(simpy_runs)
    diff_simpy = max_abs_diff(engine, simpy_res)
    agree = max(diff_simpy.values()) <= TOL_S

    reference_s = diff_reference = None
    if not args.no_reference:
        reference_s, ref = _timed(reference_replica, arrival, prompt, output, BASE_S, PER_TOKEN_S, **opts)
        diff_reference = max_abs_diff(engine, ref)
        agree = agree and max(diff_reference.values()) <= TOL_S

    iterations_hint = int(output.sum())
    figures = {
        "requests": args.requests,
        "max_batch": args.max_batch,
        "kv_capacity_tokens": args.kv_capacity,
        "prefill_chunk_tokens": args.chunk,
        "utilisation": args.utilisation,
        "seed": args.seed,
        "base_s": BASE_S,
        "per_token_s": PER_TOKEN_S,
        "simulated_span_s": float(np.nanmax(engine["finish_s"]) - arrival[0]),
        "output_tokens": iterations_hint,
        "mean_ttft_s": float(np.mean(engine["ttft_s"])),
        "p99_ttft_s": float(np.quantile(engine["ttft_s"], 0.99)),
        "mean_queue_s": float(np.mean(engine["queue_s"])),
        "engine_s": engine_s,
        "engine_runs_s": engine_runs,
        "simpy_s": simpy_s,
        "simpy_runs_s": simpy_runs,
        "ratio_simpy_over_engine": simpy_s / engine_s,
        "vllm_engine_s": vllm_s,
        "ratio_simpy_over_vllm_engine": simpy_s / vllm_s,
        "closed_loop_engine_s": closed_s,
        "reference_s": reference_s,
        "ratio_reference_over_engine": None if reference_s is None else reference_s / engine_s,
        "max_abs_diff_engine_vs_simpy_s": diff_simpy,
        "max_abs_diff_engine_vs_reference_s": diff_reference,
        "tolerance_s": TOL_S,
        "agree": agree,
    }

    rows = [
        (f"engine simulate_replica (median of {len(engine_runs)})", f"{engine_s:10.4f} s"),
        (f"SimPy per-request model (median of {len(simpy_runs)})", f"{simpy_s:10.3f} s"),
        ("ratio SimPy / engine", f"{simpy_s / engine_s:10.1f} x"),
        (f"engine, vLLM V1 policy (median of {len(vllm_runs)})", f"{vllm_s:10.4f} s"),
        ("ratio SimPy / vLLM-policy engine", f"{simpy_s / vllm_s:10.1f} x"),
        (f"engine, closed loop of {args.max_batch} users (median)", f"{closed_s:10.4f} s"),
    ]
    if reference_s is not None:
        rows += [
            ("plain-Python reference loop (1 run)", f"{reference_s:10.3f} s"),
            ("ratio reference / engine", f"{reference_s / engine_s:10.1f} x"),
        ]
    print(
        f"{args.requests:,} requests, max_batch {args.max_batch}, kv {args.kv_capacity}, "
        f"chunk {args.chunk}, utilisation {args.utilisation}, seed {args.seed}: "
        f"{iterations_hint:,} output tokens over {figures['simulated_span_s']:,.0f} simulated s, "
        f"mean TTFT {figures['mean_ttft_s']:.3f} s (p99 {figures['p99_ttft_s']:.3f} s)"
    )
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")
    print(f"  max abs diff engine vs SimPy:     ttft {diff_simpy['ttft_s']:.3g} s, "
          f"e2e {diff_simpy['e2e_s']:.3g} s, all outputs {max(diff_simpy.values()):.3g} s")
    if diff_reference is not None:
        print(f"  max abs diff engine vs reference: ttft {diff_reference['ttft_s']:.3g} s, "
              f"e2e {diff_reference['e2e_s']:.3g} s, all outputs {max(diff_reference.values()):.3g} s")
    print(("outputs agree" if agree else "outputs DISAGREE") + f" (tolerance {TOL_S:g} s)")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
