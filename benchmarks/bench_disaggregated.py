"""Disaggregated serving with speculative decoding versus its per-request SimPy model: speed ratio.

    .venv/bin/python benchmarks/bench_disaggregated.py [--requests 4000] [--utilisation 0.6]
        [--seed 7] [--repeats 7] [--simpy-repeats 3] [--aggregated-requests 100000]
        [--aggregated-simpy-repeats 3] [--no-aggregated] [--baseline-tree DIR] [--json PATH]

Times ``simulator.serving.disaggregated.simulate_disaggregated`` (two vLLM-policy engines in
tandem; median of several runs after a warm-up call that loads or compiles the kernels) and
``disaggregated_simpy.simpy_disaggregated`` (benchmarks/disaggregated_simpy.py: one SimPy
process per request, one process per replica; median of a few runs) on the same seeded workload:
lengths and Poisson arrivals of ``tests.serving_reference.make_workload`` (prompts 1..4000,
outputs 1..1000; the rate is ``--utilisation`` of that function's capacity estimate for two
replicas of batch 64), 2 prefill replicas (token budget 2048, chunked prefill) and 2 decode
replicas (budget 8192), both linear iteration models ``0.01 s + 2e-5 s/token``, a KV link of
50 GB/s and 50 µs at 160 kB of KV per token, prefix caching off, speculative decoding on the
decode side with k = 3, α = 0.7 and the n-gram method (free drafts). The engine's times are
its own draws; the SimPy model is given the engine's acceptance draws.

Before timing, the SimPy model must reproduce the engine request by request (prefill admission,
prefill end, TTFT, finish, verification steps, replicas, iteration counts; times within
1e-9 s) on small random workloads that exercise chunking, small budgets limiting the drafts,
``max_num_seqs``, exact ties of simultaneous events, the EAGLE draft cost and both KV modes,
and on the first 600 requests of the timed workload. The script asserts it.

It also times the aggregated vLLM-policy engine (``simulate_vllm``) the way
``benchmarks/bench_serving.py`` does (100,000 requests of ``make_workload`` at utilisation 0.85,
one replica, ``max_num_seqs`` 64, budget 8192, prefix caching on; against the SimPy model of the
contract semantics, ``serving_simpy.simpy_replica``, on the same workload: a speed figure only,
the schedules differ), so a change of the aggregated engine's speed shows beside the documentation's
figure (0.12 s, 33×). ``--baseline-tree DIR`` (another checkout, e.g. ``git archive <commit> | tar
-x -C DIR``) also times that tree's ``simulate_vllm`` on the same workload in a subprocess,
checking that its outputs are identical: an A/B on this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from disaggregated_simpy import simpy_disaggregated  # noqa: E402
from serving_simpy import simpy_replica  # noqa: E402

from simulator.serving import LinearIterationModel  # noqa: E402
from simulator.serving.disaggregated import KvLink, Side, simulate_disaggregated  # noqa: E402
from simulator.serving.speculative import SpeculativeDecoding  # noqa: E402
from simulator.serving.vllm import DEFAULT_MAX_BATCHED_TOKENS, simulate_vllm  # noqa: E402
from tests.serving_reference import make_workload  # noqa: E402

BASE_S, PER_TOKEN_S = 0.01, 2e-5
KV_BYTES_PER_TOKEN = 163_840.0  # llama-3.1-70b, FP8 KV
LINK_GBPS, LINK_LATENCY_S = 50.0, 50e-6
PREFILL_BUDGET, DECODE_BUDGET = 2048, DEFAULT_MAX_BATCHED_TOKENS
K, ALPHA = 3, 0.7
TOL_S = 1e-9
README_AGGREGATED = {"vllm_engine_s": 0.12, "simpy_s": 4.0, "ratio": 33.0}  # docs/performance.md


@dataclass(frozen=True)
class LinearKvModel(LinearIterationModel):
    """A linear iteration model with the KV size and tensor parallelism the KV transfer reads."""

    kv_bytes_per_token: float = 0.0
    tp: int = 1


@dataclass(frozen=True)
class RecordedSpeculation(SpeculativeDecoding):
    """Speculative decoding that keeps the acceptance draws the engine takes (``log``)."""

    log: list = field(default_factory=list, compare=False, repr=False)

    def draws(self, output_tokens, rng):
        accepted, draw_start = super().draws(output_tokens, rng)
        self.log.append((accepted, draw_start))
        return accepted, draw_start


def _timed(fn, *args, **kwargs):
    start = time.perf_counter()
    value = fn(*args, **kwargs)
    return time.perf_counter() - start, value


def run_engine(arrival, prompt, output, cfg: dict, spec: SpeculativeDecoding | None, seed: int):
    """``simulate_disaggregated`` on one configuration (keys as :func:`run_simpy`'s)."""
    prefill_model = LinearKvModel(cfg["prefill_base_s"], cfg["prefill_per_token_s"], cfg["kv_bytes_per_token"],
                                  cfg["senders"])
    decode_model = LinearIterationModel(cfg["decode_base_s"], cfg["decode_per_token_s"])
    return simulate_disaggregated(
        arrival, prompt, output,
        Side(prefill_model, cfg["prefill_replicas"], cfg["prefill_max_num_seqs"],
             cfg["prefill_max_num_batched_tokens"]),
        Side(decode_model, cfg["decode_replicas"], cfg["decode_max_num_seqs"], cfg["decode_max_num_batched_tokens"]),
        KvLink(cfg["link_bandwidth_gbps"], cfg["link_latency_s"]), prefix_caching=False, speculative=spec,
        rng=np.random.default_rng(seed), kv_preemption=cfg.get("kv_preemption", True))


def run_simpy(arrival, prompt, output, cfg: dict, spec: SpeculativeDecoding | None, draws):
    """``simpy_disaggregated`` on the same configuration, with the engine's draws ``(accepted, draw_start)``."""
    draft = (0.0, 0.0)
    if spec is not None:
        params = spec.draft_params(LinearIterationModel(cfg["decode_base_s"], cfg["decode_per_token_s"]))
        draft = (float(params[1]), float(params[2]))
    accepted, draw_start = draws if draws is not None else (None, None)
    return simpy_disaggregated(
        arrival, prompt, output,
        prefill_base_s=cfg["prefill_base_s"], prefill_per_token_s=cfg["prefill_per_token_s"],
        decode_base_s=cfg["decode_base_s"], decode_per_token_s=cfg["decode_per_token_s"],
        prefill_replicas=cfg["prefill_replicas"], decode_replicas=cfg["decode_replicas"],
        prefill_max_num_seqs=cfg["prefill_max_num_seqs"],
        prefill_max_num_batched_tokens=cfg["prefill_max_num_batched_tokens"],
        decode_max_num_seqs=cfg["decode_max_num_seqs"],
        decode_max_num_batched_tokens=cfg["decode_max_num_batched_tokens"],
        link_latency_s=cfg["link_latency_s"], link_bandwidth_gbps=cfg["link_bandwidth_gbps"],
        kv_bytes_per_token=cfg["kv_bytes_per_token"], senders=cfg["senders"],
        k=spec.k if spec is not None else 0, accepted=accepted, draw_start=draw_start,
        draft_base_s=draft[0], draft_per_token_s=draft[1])


def compare(arrival, prompt, output, cfg: dict, k: int, seed: int, **spec_kwargs) -> dict:
    """Run both on one configuration; return the largest differences (asserting exact agreement)."""
    spec = RecordedSpeculation(k=k, **spec_kwargs) if k else None
    run = run_engine(arrival, prompt, output, cfg, spec, seed)
    draws = spec.log[-1] if spec is not None and spec.log else None
    ref = run_simpy(arrival, prompt, output, cfg, spec, draws)
    res, more = run.result, output >= 2
    diffs = {}
    for name, ours, theirs in (("admit_s", res.admit_s, ref["admit_s"]),
                               ("prefill_done_s", run.prefill.first_token_s, ref["prefill_done_s"]),
                               ("first_token_s", res.first_token_s, ref["first_token_s"]),
                               ("ttft_s", res.ttft_s, ref["ttft_s"]),
                               ("finish_s", res.finish_s, ref["finish_s"]),
                               ("e2e_s", res.e2e_s, ref["e2e_s"])):
        assert not np.isnan(theirs).any(), f"{name}: SimPy left requests unfinished"
        diffs[name] = float(np.max(np.abs(ours - theirs), initial=0.0))
    assert max(diffs.values()) <= TOL_S, f"engine and SimPy disagree: {diffs} on {cfg}"
    assert np.array_equal(run.prefill.replica, ref["prefill_replica"]), "prefill routing differs"
    if run.decode is not None:
        assert np.array_equal(run.decode.replica, ref["decode_replica"][more]), "decode routing differs"
        assert run.decode.preemptions.sum() == 0 and run.prefill.preemptions.sum() == 0
    if spec is not None:
        steps = res.verify_steps if res.verify_steps is not None else np.zeros(len(prompt), dtype=np.int64)
        assert np.array_equal(steps, ref["verify_steps"]), "verification steps differ"
    assert res.iterations == ref["iterations"], f"iterations: engine {res.iterations}, SimPy {ref['iterations']}"
    return diffs


def bench_config(replicas: int = 2) -> dict:
    return dict(prefill_base_s=BASE_S, prefill_per_token_s=PER_TOKEN_S, decode_base_s=BASE_S,
                decode_per_token_s=PER_TOKEN_S, prefill_replicas=replicas, decode_replicas=replicas,
                prefill_max_num_seqs=256, prefill_max_num_batched_tokens=PREFILL_BUDGET,
                decode_max_num_seqs=256, decode_max_num_batched_tokens=DECODE_BUDGET,
                link_latency_s=LINK_LATENCY_S, link_bandwidth_gbps=LINK_GBPS,
                kv_bytes_per_token=KV_BYTES_PER_TOKEN, senders=1)


def check_workloads(count: int = 8, n: int = 250) -> list[dict]:
    """Small random workloads and configurations; every one must agree exactly (asserted)."""
    checked = []
    for seed in range(count):
        rng = np.random.default_rng(1000 + seed)
        ties = seed % 3 == 0  # binary-exact times on a grid: many simultaneous events
        prompt = np.clip(np.where(rng.random(n) < 0.5, rng.geometric(1 / 40, n),
                                  np.round(rng.lognormal(np.log(120), 0.9, n))), 1, 600).astype(np.int64)
        output = np.clip(np.where(rng.random(n) < 0.3, rng.integers(1, 4, n),
                                  rng.geometric(1 / 30, n)), 1, 200).astype(np.int64)
        gap = rng.exponential(rng.uniform(0.002, 0.03), n)
        if ties:
            gap = np.floor(gap * 64) / 64  # many requests at once, on a 1/64 s grid
        cfg = dict(prefill_base_s=0.125 if ties else float(rng.uniform(0.002, 0.02)),
                   prefill_per_token_s=2.0 ** -12 if ties else float(rng.uniform(1e-5, 1e-4)),
                   decode_base_s=0.0625 if ties else float(rng.uniform(0.002, 0.02)),
                   decode_per_token_s=2.0 ** -10 if ties else float(rng.uniform(1e-5, 1e-3)),
                   prefill_replicas=int(rng.integers(1, 4)), decode_replicas=int(rng.integers(1, 4)),
                   prefill_max_num_seqs=int(rng.choice([2, 4, 16, 256])),
                   prefill_max_num_batched_tokens=int(rng.choice([16, 64, 300, 8192])),
                   decode_max_num_seqs=int(rng.choice([2, 5, 16, 256])),
                   decode_max_num_batched_tokens=int(rng.choice([3, 7, 24, 8192])),
                   link_latency_s=0.0 if ties else float(rng.choice([0.0, 5e-5])),
                   link_bandwidth_gbps=float(rng.choice([1.0, 50.0])),
                   kv_bytes_per_token=0.0 if ties else float(rng.choice([0.0, 1e5, 3.2e5])),
                   senders=int(rng.choice([1, 2])), kv_preemption=bool(seed % 2))
        k = int(rng.integers(1, 6))
        spec_kwargs = dict(acceptance=float(rng.uniform(0.3, 0.95)), method="ngram" if seed % 4 < 2 else "eagle")
        diffs = compare(np.cumsum(gap), prompt, output, cfg, k, seed, **spec_kwargs)
        checked.append({"seed": seed, "requests": n, "k": k, **spec_kwargs, **cfg,
                        "max_abs_diff_s": max(diffs.values())})
    return checked


_BASELINE = """
import json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np
from simulator.serving import LinearIterationModel
from simulator.serving.vllm import simulate_vllm
from tests.serving_reference import make_workload
n, repeats = int(sys.argv[2]), int(sys.argv[3])
a, p, o = make_workload(n, 7, 0.85, 64, 0.01, 2e-5)
m = LinearIterationModel(0.01, 2e-5)
simulate_vllm(a[:200], p[:200], o[:200], m, max_num_seqs=64, max_num_batched_tokens=8192)
runs = []
for _ in range(repeats):
    t = time.perf_counter()
    r = simulate_vllm(a, p, o, m, max_num_seqs=64, max_num_batched_tokens=8192)
    runs.append(time.perf_counter() - t)
np.save(sys.argv[4], np.stack([r.first_token_s, r.finish_s]))
print(json.dumps({"runs": runs, "iterations": int(r.iterations)}))
"""


def time_baseline(tree: Path, requests: int, repeats: int) -> dict:
    """``simulate_vllm`` of another checkout on the aggregated workload, in a subprocess."""
    out = Path("/tmp") / f"bench_disaggregated_baseline_{os.getpid()}.npy"
    done = subprocess.run([sys.executable, "-c", _BASELINE, str(tree.resolve()), str(requests), str(repeats),
                           str(out)], capture_output=True, text=True, check=True, cwd="/tmp")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    figures["times"] = np.load(out)
    out.unlink()
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--utilisation", type=float, default=0.6,
                        help="arrival rate as a fraction of make_workload's estimate for 2 replicas of batch 64")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeats", type=int, default=7, help="engine runs (median)")
    parser.add_argument("--simpy-repeats", type=int, default=3, help="SimPy runs (median)")
    parser.add_argument("--aggregated-requests", type=int, default=100_000)
    parser.add_argument("--aggregated-simpy-repeats", type=int, default=3)
    parser.add_argument("--no-aggregated", action="store_true", help="skip the aggregated engine's timing")
    parser.add_argument("--baseline-tree", type=Path, help="another checkout whose simulate_vllm to time too")
    parser.add_argument("--json", metavar="PATH", default=str(HERE / "results" / "bench_disaggregated.json"))
    args = parser.parse_args(argv)
    wall = time.perf_counter()

    # JIT warm-up (kernels cached on disk are loaded here), then exactness before any timing.
    arrival, prompt, output = make_workload(args.requests, args.seed, args.utilisation, 64, BASE_S, PER_TOKEN_S,
                                            replicas=2)
    cfg = bench_config()
    run_engine(arrival[:200], prompt[:200], output[:200], cfg, SpeculativeDecoding(k=K, acceptance=ALPHA,
                                                                                   method="ngram"), args.seed)
    checked = check_workloads()
    head = 600
    bench_diff = compare(arrival[:head], prompt[:head], output[:head], cfg, K, args.seed, acceptance=ALPHA,
                         method="ngram")
    print(f"exactness: {len(checked)} random workloads and the first {head} requests of the timed one agree "
          f"(max abs diff {max([c['max_abs_diff_s'] for c in checked] + list(bench_diff.values())):.3g} s)")

    spec = RecordedSpeculation(k=K, acceptance=ALPHA, method="ngram")
    engine_runs = []
    for _ in range(max(1, args.repeats)):
        elapsed, run = _timed(run_engine, arrival, prompt, output, cfg, spec, args.seed)
        engine_runs.append(elapsed)
    engine_s = statistics.median(engine_runs)
    draws = spec.log[-1]
    # The engine's share spent drawing acceptances (SpeculativeDecoding.draws, numpy, in simulate_vllm).
    decode_outputs = output[output >= 2]
    draws_s = statistics.median(_timed(spec.draws, decode_outputs, np.random.default_rng(args.seed))[0]
                                for _ in range(max(1, args.repeats)))
    spec.log.clear()
    simpy_runs = []
    for _ in range(max(1, args.simpy_repeats)):
        elapsed, ref = _timed(run_simpy, arrival, prompt, output, cfg, spec, draws)
        simpy_runs.append(elapsed)
    simpy_s = statistics.median(simpy_runs)
    full_diff = max(float(np.max(np.abs(run.result.first_token_s - ref["first_token_s"]))),
                    float(np.max(np.abs(run.result.finish_s - ref["finish_s"]))))
    assert full_diff <= TOL_S, f"the timed runs disagree by {full_diff} s"
    res = run.result
    decode = run.decode
    figures = {
        "requests": args.requests,
        "utilisation": args.utilisation,
        "seed": args.seed,
        "config": {**cfg, "k": K, "acceptance": ALPHA, "method": "ngram", "prefix_caching": False,
                   "kv_capacity_tokens": None, "kv_preemption": True},
        "workload": {
            "arrival_rate_per_s": float((len(arrival) - 1) / (arrival[-1] - arrival[0])),
            "mean_prompt_tokens": float(prompt.mean()),
            "mean_output_tokens": float(output.mean()),
            "one_token_requests": int((output == 1).sum()),
            "simulated_span_s": float(res.duration_s),
            "iterations": int(res.iterations),
            "prefill_iterations": int(run.prefill.iterations),
            "decode_iterations": int(decode.iterations),
            "mean_ttft_s": float(res.ttft_s.mean()),
            "p99_ttft_s": float(np.quantile(res.ttft_s, 0.99)),
            "mean_tpot_s": float(np.nanmean(res.tpot_s)),
            "tokens_per_step": float(decode.tokens_per_step),
        },
        "engine_s": engine_s,
        "engine_runs_s": engine_runs,
        "simpy_s": simpy_s,
        "simpy_runs_s": simpy_runs,
        "ratio_simpy_over_engine": simpy_s / engine_s,
        "engine_acceptance_draws_s": draws_s,
        "acceptance_draws": int(len(draws[0])),
        "target_ratio": 10.0,
        "tolerance_s": TOL_S,
        "max_abs_diff_timed_run_s": full_diff,
        "max_abs_diff_bench_head_s": bench_diff,
        "exactness_checks": checked,
    }
    rows = [
        (f"engine simulate_disaggregated (median of {len(engine_runs)})", f"{engine_s:10.4f} s"),
        (f"SimPy per-request model (median of {len(simpy_runs)})", f"{simpy_s:10.3f} s"),
        ("ratio SimPy / engine (target >= 10)", f"{simpy_s / engine_s:10.1f} x"),
        (f"  of the engine's time: drawing {len(draws[0]):,} acceptances", f"{draws_s:10.4f} s"),
    ]

    if not args.no_aggregated:
        a_arrival, a_prompt, a_output = make_workload(args.aggregated_requests, 7, 0.85, 64, BASE_S, PER_TOKEN_S)
        model = LinearIterationModel(BASE_S, PER_TOKEN_S)
        vllm_opts = dict(max_num_seqs=64, max_num_batched_tokens=DEFAULT_MAX_BATCHED_TOKENS)
        simulate_vllm(a_arrival[:200], a_prompt[:200], a_output[:200], model, **vllm_opts)
        vllm_runs = []
        for _ in range(max(1, args.repeats)):
            elapsed, a_run = _timed(simulate_vllm, a_arrival, a_prompt, a_output, model, **vllm_opts)
            vllm_runs.append(elapsed)
        vllm_s = statistics.median(vllm_runs)
        a_simpy_runs = [_timed(simpy_replica, a_arrival, a_prompt, a_output, BASE_S, PER_TOKEN_S, max_batch=64)[0]
                        for _ in range(max(1, args.aggregated_simpy_repeats))]
        a_simpy_s = statistics.median(a_simpy_runs)
        figures["aggregated"] = {
            "requests": args.aggregated_requests,
            "what": "bench_serving.py's vLLM-policy row: simulate_vllm (max_num_seqs 64, budget 8192, prefix "
                    "caching on) vs serving_simpy.simpy_replica (contract semantics) on make_workload(seed 7, "
                    "utilisation 0.85, max_batch 64); a speed figure only",
            "vllm_engine_s": vllm_s,
            "vllm_engine_runs_s": vllm_runs,
            "simpy_s": a_simpy_s,
            "simpy_runs_s": a_simpy_runs,
            "ratio_simpy_over_vllm_engine": a_simpy_s / vllm_s,
            "readme_figure": README_AGGREGATED,
        }
        if args.baseline_tree is not None:
            base = time_baseline(args.baseline_tree, args.aggregated_requests, max(1, args.repeats))
            same = (np.array_equal(base.pop("times"), np.stack([a_run.first_token_s, a_run.finish_s]))
                    and base["iterations"] == a_run.iterations)
            base_s = statistics.median(base["runs"])
            figures["aggregated"]["baseline"] = {"tree": str(args.baseline_tree), "vllm_engine_s": base_s,
                                                 "vllm_engine_runs_s": base["runs"], "identical_outputs": same,
                                                 "this_tree_over_baseline": vllm_s / base_s}
        rows += [
            (f"aggregated simulate_vllm, {args.aggregated_requests:,} requests (median of {len(vllm_runs)})",
             f"{vllm_s:10.4f} s"),
            (f"SimPy simpy_replica, same workload (median of {len(a_simpy_runs)})", f"{a_simpy_s:10.3f} s"),
            ("ratio SimPy / aggregated vLLM-policy engine (README: 33x)", f"{a_simpy_s / vllm_s:10.1f} x"),
        ]
        if args.baseline_tree is not None:
            base = figures["aggregated"]["baseline"]
            same = "identical" if base["identical_outputs"] else "DIFFER"
            rows += [(f"  the same in {args.baseline_tree} (median, outputs {same})",
                      f"{base['vllm_engine_s']:10.4f} s"),
                     ("  this tree / baseline", f"{base['this_tree_over_baseline']:10.2f} x")]

    figures["machine"] = {
        "note": "shared machine: absolute times are noisy, ratios are the figures to compare",
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": __import__("numba").__version__,
        "simpy": __import__("simpy").__version__,
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
    }
    figures["wall_s"] = time.perf_counter() - wall
    w = figures["workload"]
    print(f"{args.requests:,} requests ({w['one_token_requests']} of one token), 2 prefill + 2 decode replicas, "
          f"k {K}, alpha {ALPHA}, n-gram drafts: {w['arrival_rate_per_s']:.1f} req/s over "
          f"{w['simulated_span_s']:,.0f} simulated s, {w['iterations']:,} iterations; mean TTFT "
          f"{w['mean_ttft_s']:.3f} s (p99 {w['p99_ttft_s']:.3f} s), mean TPOT {w['mean_tpot_s'] * 1e3:.1f} ms, "
          f"{w['tokens_per_step']:.2f} tokens per step")
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")
    print(f"outputs agree (tolerance {TOL_S:g} s); wall {figures['wall_s']:.0f} s")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
