"""DeepSeek-V3/R1's published day of serving, sized by Fleetcast: prefill and decode nodes.

Published (DeepSeek, "Day 6: One More Thing, DeepSeek-V3/R1 Inference System Overview", open-infra-index,
2025-03-01; 24 h from 2025-02-27 12:00 UTC+8): 608B input tokens, of which 342B (56.3%) hit the KV cache;
168B output tokens at 20–22 tokens/s per user; an average KV length of 4,989 tokens per output token;
prefill units of 4 nodes (routed experts EP32, MLA and shared expert DP32), decode units of 18 nodes
(EP144, DP144, 32 redundant experts), H800 nodes of 8 GPUs; ~73.7k input tokens/s per node in
prefill (cache hits included), ~14.8k output tokens/s per node in decode; **226.75 nodes on average**
(peak 278).

Rebuilt here (assumptions in capitals are ours):
- H800 = the catalog's H100 with NVLink at 400 GB/s (200 GB/s per direction); DeepSeek-V3 from its
  config.json (``scenarios/model_configs/deepseek-v3.json``: MLA, 256 routed experts, top 8), FP8 weights and
  KV cache; prefill replica TP1 × DP32 with EP32, decode replica TP1 × DP144 with EP144 (each GPU two
  expert slots: 256 experts and 32 redundant copies).
- Requests: the published averages give the lengths. Input:output tokens = 608:168; an output token's KV
  length averages prompt + output/2 = 4,989; so PROMPT = 4,383 and OUTPUT = 1,211 tokens, 138.7M requests
  a day, 1,606 req/s on average. CACHE: requests come in SESSIONS OF 10 sharing a prefix of 62.6% of the
  prompt, so 9/10 × 62.6% = 56.3% of input tokens can be cache hits (the published share); the hits are
  served by the GPU prefix cache (DeepSeek's cache is on disk: its load time is not charged).
- Prefill: the highest Poisson rate whose TTFT p90 is within 2 s (OUR SLO: none is published) on one
  prefill unit; its input tokens per second per node (hits included).
- Decode: the most users per GPU, in a closed loop on one decode unit, whose median TPOT is within the
  published 20 tokens/s per user (50 ms); its output tokens per second per node by Little's law (users / TPOT).
- Nodes: the day's average input rate over the prefill rate per node, plus the average output rate over the
  decode rate per node (the fleet following the load through the day, as DeepSeek scales nodes down at
  night). Then the same day through the fleet simulation: a scenario whose model runs on disaggregated
  units of ``P`` prefill replicas of 32 GPUs and one decode replica of 144 (``P`` = the decode replica's
  requests/s over a prefill replica's, rounded), each unit's capacity from the tandem engine (TTFT p90 ≤ 2 s,
  TPOT p50 ≤ 50 ms), at the day's average load: its GPUs in service over 8 = nodes. Whole units of
  ~38 nodes round the fleet up.

The bar: nodes within ±25% of 226.75. Run: ``.venv/bin/python benchmarks/bench_deepseek_day.py``; writes
``benchmarks/results/deepseek_day.json``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from simulator.scenario.catalog import BUILTIN_GPUS, GpuSpec
from simulator.serving.capacity import Slo, capacity_curve
from simulator.serving.model_config import load_model_config
from simulator.serving.operators import OperatorIterationModel
from simulator.serving.probe import TraceRequests
from simulator.serving.vllm import simulate_vllm

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "deepseek_day.json"
DAY_S = 86_400.0
INPUT_TOKENS, OUTPUT_TOKENS, CACHE_SHARE = 608e9, 168e9, 0.563
PUBLISHED = {"nodes_average": 226.75, "nodes_peak": 278, "prefill_tokens_per_s_per_node": 73_700,
             "decode_tokens_per_s_per_node": 14_800, "tokens_per_s_per_user": (20, 22)}
KV_PER_OUTPUT_TOKEN = 4_989
OUTPUT = round(KV_PER_OUTPUT_TOKEN / (INPUT_TOKENS / OUTPUT_TOKENS + 0.5))  # 1,211
PROMPT = round(OUTPUT * INPUT_TOKENS / OUTPUT_TOKENS)  # 4,383
SESSION = 10
PREFIX = round(CACHE_SHARE * PROMPT * SESSION / (SESSION - 1))
TTFT_S, TPOT_S = 2.0, 0.05
BAR = 0.25


def h800() -> GpuSpec:
    return GpuSpec(**{**BUILTIN_GPUS["H100"], "link_gbps": 200.0, "interconnect": "NVLink 400 GB/s (H800)"})


def replica(dp: int) -> OperatorIterationModel:
    llm = load_model_config(ROOT / "scenarios" / "model_configs" / "deepseek-v3.json")
    return OperatorIterationModel(h800(), llm, tp=1, dtype="fp8", kv_dtype="fp8", dp=dp, ep=dp, gpu_name="H800")


def sessions(n: int, output: int = OUTPUT) -> TraceRequests:
    """``n`` requests in sessions of ``SESSION`` sharing a ``PREFIX``-token prefix."""
    return TraceRequests(np.full(n, PROMPT), np.full(n, output), np.arange(n) // SESSION, np.full(n, PREFIX), None,
                         "DeepSeek day (derived lengths)", prefix_columns=True)


def prefill_rate(requests: int = 6000) -> dict:
    """Input tokens/s per node of one prefill unit at its TTFT capacity."""
    model = replica(32)
    curve = capacity_curve(model, sessions(2 * requests, output=1), Slo(TTFT_S, 90.0, 10.0, 99.0), 256,
                           requests=requests, warmup=1000, use_cache=False)
    return {"capacity_rps": curve.capacity_rps, "ttft_p90_s": curve.ttft_at_capacity_s,
            "cache_hit_rate": curve.hit_rate_at_capacity,
            "tokens_per_s_per_node": curve.capacity_rps * PROMPT / (model.gpus / 8)}


def decode_rate() -> dict:
    """Output tokens/s per node of one decode unit with its users at 20 tokens/s (TPOT 50 ms)."""
    model = replica(144)
    low, high = 16, 512  # users per GPU, bisected to the TPOT target
    best = None
    while high - low > 2:
        per_gpu = (low + high) // 2
        users = per_gpu * model.gpus
        n = 4 * users
        run = simulate_vllm(None, np.full(n, PROMPT), np.full(n, OUTPUT), model, users=users, kv_arrives=True,
                            max_num_seqs=512)
        tpot = float(np.median(run.tpot_s[n // 2:]))
        if tpot <= TPOT_S:
            low, best = per_gpu, (per_gpu, tpot, run)
        else:
            high = per_gpu
    per_gpu, tpot, run = best
    # Little's law: each of the users decoding receives a token every TPOT.
    rate = per_gpu * model.gpus / tpot
    return {"users_per_gpu": per_gpu, "tpot_p50_s": tpot, "tokens_per_s_per_user": 1 / tpot,
            "tokens_per_s_per_node": rate / (model.gpus / 8)}


def deepseek_scenario(prefill_replicas: int, trace: str, requests: int = 60_000) -> dict:
    """The day as a scenario: H800 nodes, DeepSeek-V3 on disaggregated units (``serving.disaggregation``),
    the day's average load, the derived lengths and sessions as a trace (``trace``, beside ``base_dir``)."""
    return {
        "name": "deepseek-day", "horizon": {"start": "2025-02-27", "duration": "24h", "step": "1h"}, "seed": 1,
        "gpus": {"H800": {**h800().model_dump(), "price_usd": 0, "cloud_usd_per_gpu_hour": 2.0}},
        "fleet": {"pools": [{"name": "h800", "gpu": "H800", "acquisition": {"type": "owned", "price_usd": 0},
                             "count": 8 * 400}]},
        "models": [{
            "name": "deepseek-v3", "pools": ["h800"],
            "serving": {
                "model_config": str(ROOT / "scenarios" / "model_configs" / "deepseek-v3.json"),
                "dtype": "fp8", "kv_dtype": "fp8", "tp": 1, "max_batch": 256, "lengths": trace,
                "routing": "prefix_affinity", "probe_requests": requests,
                "slo": {"ttft_s": TTFT_S, "ttft_percentile": 90, "tpot_s": TPOT_S, "tpot_percentile": 50},
                "disaggregation": {"prefill": {"replicas": prefill_replicas, "dp": 32, "ep": 32},
                                   "decode": {"replicas": 1, "dp": 144, "ep": 144, "max_batch": 512},
                                   "kv_link": "rdma"},
            },
            "demand": {"base_rps": OUTPUT_TOKENS / OUTPUT / DAY_S, "noise": "none", "input_tokens": PROMPT,
                       "output_tokens": OUTPUT},
        }],
        "pricing": {"input_usd_per_1m": 0.0, "output_usd_per_1m": 0.0},
    }


def fleet_nodes(prefill: dict, decode: dict) -> dict:
    """The day through Fleetcast: the scenario's unit derived by the tandem engine, placed by the fleet."""
    import tempfile

    import simulator

    # Prefill replicas per decode replica: the decode replica's requests/s over a prefill replica's, rounded.
    per_prefill = prefill["tokens_per_s_per_node"] * 4 / PROMPT
    per_decode = decode["tokens_per_s_per_node"] * 18 / OUTPUT
    p = max(1, round(per_decode / per_prefill))
    requests = 60_000
    with tempfile.TemporaryDirectory() as folder:
        trace = Path(folder) / "deepseek_sessions.csv"
        n = requests + 1000
        lines = ["TIMESTAMP,ContextTokens,GeneratedTokens,prefix_id,prefix_tokens"]
        lines += [f"2025-02-27 12:00:00,{PROMPT},{OUTPUT},{i // SESSION},{PREFIX}" for i in range(n)]
        trace.write_text("\n".join(lines) + "\n")
        scenario = simulator.load_scenario(deepseek_scenario(p, str(trace), requests))
        results = simulator.simulate(scenario, paths=1, executor="serial")
    shape = scenario.models[0].replicas["h800"]
    gpus = float(results.timeseries["gpus_inference"].mean())
    return {"prefill_replicas_per_unit": p, "gpus_per_unit": shape.gpus_per_replica,
            "unit_capacity_rps": shape.capacity_rps, "derived_workload": shape.derived_workload,
            "requests_per_s": OUTPUT_TOKENS / OUTPUT / DAY_S, "units": gpus / shape.gpus_per_replica,
            "nodes": gpus / 8}


def main(results_path: Path = RESULTS) -> dict:
    started = time.perf_counter()
    prefill = prefill_rate()
    decode = decode_rate()
    input_rate, output_rate = INPUT_TOKENS / DAY_S, OUTPUT_TOKENS / DAY_S
    prefill_nodes = input_rate / prefill["tokens_per_s_per_node"]
    decode_nodes = output_rate / decode["tokens_per_s_per_node"]
    fleet = fleet_nodes(prefill, decode)
    result = {
        "published": PUBLISHED, "lengths": {"prompt": PROMPT, "output": OUTPUT, "prefix": PREFIX, "session": SESSION},
        "prefill": prefill, "decode": decode,
        "by_rates": {"prefill_nodes": prefill_nodes, "decode_nodes": decode_nodes,
                     "nodes": prefill_nodes + decode_nodes,
                     "error": (prefill_nodes + decode_nodes) / PUBLISHED["nodes_average"] - 1},
        "fleet": {**fleet, "error": fleet["nodes"] / PUBLISHED["nodes_average"] - 1},
        "bar": BAR, "seconds": time.perf_counter() - started,
    }
    result["passes"] = abs(result["by_rates"]["error"]) <= BAR and abs(result["fleet"]["error"]) <= BAR
    results_path.parent.mkdir(parents=True, exist_ok=True)
    results_path.write_text(json.dumps(result, indent=2, default=float) + "\n")
    print(f"prefill: {prefill['tokens_per_s_per_node']:,.0f} input tok/s per node (published ~73,700), "
          f"TTFT p90 {prefill['ttft_p90_s']:.2f} s, cache hits {prefill['cache_hit_rate']:.1%}")
    print(f"decode:  {decode['tokens_per_s_per_node']:,.0f} output tok/s per node (published ~14,800) at "
          f"{decode['tokens_per_s_per_user']:.1f} tok/s per user")
    print(f"nodes by the two rates: {prefill_nodes:.1f} prefill + {decode_nodes:.1f} decode = "
          f"{prefill_nodes + decode_nodes:.1f} (published 226.75, {result['by_rates']['error']:+.1%})")
    print(f"fleet simulation: units of {fleet['prefill_replicas_per_unit']} prefill + 1 decode replicas "
          f"({fleet['gpus_per_unit']} GPUs, {fleet['unit_capacity_rps']:.0f} req/s each): {fleet['units']:.2f} units, "
          f"{fleet['nodes']:.1f} nodes ({result['fleet']['error']:+.1%})")
    return result


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=RESULTS, help="where to write the figures")
    main(parser.parse_args().json)
