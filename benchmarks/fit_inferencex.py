"""Fit the serving constants the InferenceX set can tell apart, and their held-out errors.

    .venv/bin/python benchmarks/fit_inferencex.py [--json benchmarks/results/inferencex_fit.json]

Two fits, each by least squares on log(simulated / measured) of mean TPOT and mean TTFT (TTFT at
half weight) over the points below saturation (``simulator.serving.inferencex``):

1. **Blackwell** (``GENERATION_EFFICIENCY["blackwell"]`` and B200's all-reduce latency): GEMM and
   memory efficiency, the per-iteration and per-layer overheads, the all-reduce latency and the
   achieved share of the NVLink bandwidth (``link_efficiency``), fitted
   on every B200 point (in-sample), then once on each model's B200 points alone and scored on the
   other model's (leave-one-model-out). Attention efficiency and the front end keep Hopper's.
2. **4-bit checkpoint experts widened on Hopper** (``widened_expert_efficiency`` of Hopper: the GEMM
   share of peak when gpt-oss's MXFP4 experts are dequantized to multiply in 16 bits), fitted on the
   H100 gpt-oss points and scored on the H200 ones (leave-one-GPU-out). Every other Hopper constant
   is the vLLM H100 set's (``benchmarks/fit_serving.py``); the InferenceX Hopper Llama points are not
   fitted on at all.

3. **Runtime reserve** (``simulator.serving.kv_memory.RUNTIME_RESERVE_GIB``): for each of the 28
   gpt-oss runs (deployment and workload; the runs differ in vLLM version and ``max_model_len``)
   whose vLLM log gives its KV capacity, the reserve that reproduces it exactly (the capacity is
   linear in it); the constant is their median, scored in-sample and leave-one-deployment-out (the
   median over the other deployments' runs).

To keep the fit quick (a few minutes), points at concurrency 4 and 32 are fitted on (every label), at
most 8 steps of the solver; the scores
use every point below saturation. Prints the constants and errors; ``--json`` writes them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simulator.serving import inferencex as ix  # noqa: E402

BLACKWELL = ("compute_efficiency", "memory_efficiency", "overhead_s", "layer_overhead_s", "allreduce_latency_s",
             "link_efficiency")
START = {"compute_efficiency": 0.45, "memory_efficiency": 0.75, "overhead_s": 5e-4, "layer_overhead_s": 5e-6,
         "allreduce_latency_s": 10e-6, "widened_expert_efficiency": 0.3, "link_efficiency": 0.7}
BOUNDS = {"compute_efficiency": (0.05, 1.0), "memory_efficiency": (0.2, 1.0), "overhead_s": (1e-5, 0.02),
          "layer_overhead_s": (1e-7, 1e-4), "allreduce_latency_s": (1e-6, 1e-4),
          "widened_expert_efficiency": (0.02, 1.0), "link_efficiency": (0.1, 1.0)}
FIT_CONCURRENCY = (4, 32)
TTFT_WEIGHT = 0.5


def residuals(points, llms, gpu, values: dict[str, float]) -> np.ndarray:
    rows = ix.compare(points, llms, {gpu: values})
    out = []
    for row in rows:
        if row["below_saturation"]:
            out.append(np.log1p(row["tpot_error"]))
            out.append(TTFT_WEIGHT * np.log1p(row["ttft_error"]))
    return np.array(out)


def fit(points, llms, gpu: str, names: tuple[str, ...]) -> dict[str, float]:
    """Least squares in log-parameter space, from START within BOUNDS."""
    lo = np.log([BOUNDS[n][0] for n in names])
    hi = np.log([BOUNDS[n][1] for n in names])
    x0 = np.clip(np.log([START[n] for n in names]), lo + 1e-9, hi - 1e-9)

    def f(x):
        return residuals(points, llms, gpu, dict(zip(names, np.exp(x), strict=True)))

    result = least_squares(f, x0, bounds=(lo, hi), diff_step=0.05, xtol=1e-2, ftol=1e-2, max_nfev=8)
    return {n: float(v) for n, v in zip(names, np.exp(result.x), strict=True)}


def score(points, llms, gpu: str, values: dict[str, float]) -> dict[str, float]:
    rows = [r for r in ix.compare(points, llms, {gpu: values}) if r["below_saturation"]]
    return {"points": len(rows),
            "tpot_median_abs_error": float(np.median([abs(r["tpot_error"]) for r in rows])),
            "ttft_median_abs_error": float(np.median([abs(r["ttft_error"]) for r in rows])),
            "tpot_median_signed_error": float(np.median([r["tpot_error"] for r in rows]))}


def fit_reserve(points, llms) -> dict:
    """The runtime reserve from the logged KV capacities (module docstring, 3)."""
    from simulator.serving.kv_memory import RUNTIME_RESERVE_GIB

    runs = {}
    for point in points:
        if point.kv_tokens:
            runs.setdefault((point.deployment, point.label), point)
    rows = []
    for (deployment, label), point in runs.items():
        memory = ix.point_model(point, llms).kv_memory(max_num_batched_tokens=ix.MAX_NUM_BATCHED_TOKENS,
                                                        max_num_seqs=ix.MAX_NUM_SEQS)
        free = memory.kv_bytes + memory.reserve_bytes  # before the reserve
        rows.append(dict(deployment=deployment, label=label, logged=point.kv_tokens, free=free,
                         per_token=memory.kv_bytes_per_token,
                         exact_gib=(free - point.kv_tokens * memory.kv_bytes_per_token) / 2**30))

    def error(row: dict, reserve_gib: float) -> float:
        return (row["free"] - reserve_gib * 2**30) / row["per_token"] / row["logged"] - 1.0

    reserve = float(np.median([r["exact_gib"] for r in rows]))
    held = [error(r, float(np.median([o["exact_gib"] for o in rows if o["deployment"] != r["deployment"]])))
            for r in rows]
    shipped = [error(r, RUNTIME_RESERVE_GIB) for r in rows]
    return {"fitted_on": f"{len(rows)} gpt-oss-120b runs with a logged KV capacity",
            "exact_gib": {f"{r['deployment'][1]} tp{r['deployment'][3]} {r['label']}": round(r["exact_gib"], 3)
                          for r in rows},
            "median_gib": reserve, "shipped_gib": RUNTIME_RESERVE_GIB,
            "in_sample_worst_abs_error": max(abs(error(r, reserve)) for r in rows),
            "shipped_worst_abs_error": max(abs(e) for e in shipped),
            "shipped_median_abs_error": float(np.median(np.abs(shipped))),
            "leave_one_deployment_out_worst_abs_error": max(abs(e) for e in held),
            "leave_one_deployment_out_median_abs_error": float(np.median(np.abs(held)))}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the constants and errors here")
    args = parser.parse_args(argv)
    points, llms = ix.load_points(), ix.load_llms()
    quick = [p for p in points if p.concurrency in FIT_CONCURRENCY]
    start = time.perf_counter()
    out: dict = {"fit_concurrency": list(FIT_CONCURRENCY)}

    b200 = [p for p in points if p.gpu == "b200"]
    models = sorted({p.model for p in b200})
    constants = fit([p for p in quick if p.gpu == "b200"], llms, "b200", BLACKWELL)
    out["blackwell"] = {"fitted_on": "every B200 point (Llama-3.1-70B FP8 and NVFP4, gpt-oss-120b MXFP4) at "
                                     f"concurrency {', '.join(map(str, FIT_CONCURRENCY))}",
                        "constants": constants, "in_sample": score(b200, llms, "b200", constants),
                        "leave_one_model_out": {}}
    for held in models:
        train = [p for p in quick if p.gpu == "b200" and p.model != held]
        values = fit(train, llms, "b200", BLACKWELL)
        out["blackwell"]["leave_one_model_out"][held] = {
            "constants": values, "held_out": score([p for p in b200 if p.model == held], llms, "b200", values),
            "in_sample": score([p for p in b200 if p.model == held], llms, "b200", constants)}
        print(f"  B200 without {held}: held-out {out['blackwell']['leave_one_model_out'][held]['held_out']}")

    hopper_oss = [p for p in points if p.model == "gpt-oss-120b" and p.gpu in ("h100", "h200")]
    train = [p for p in quick if p.model == "gpt-oss-120b" and p.gpu == "h100"]
    widened = fit(train, llms, "h100", ("widened_expert_efficiency",))
    h200 = [p for p in hopper_oss if p.gpu == "h200"]
    h100 = [p for p in hopper_oss if p.gpu == "h100"]
    out["hopper_widened_experts"] = {
        "fitted_on": "H100 gpt-oss-120b points at concurrency " + ", ".join(map(str, FIT_CONCURRENCY)),
        "constants": widened, "in_sample_h100": score(h100, llms, "h100", widened),
        "held_out_h200": score(h200, llms, "h200", widened)}
    out["runtime_reserve"] = fit_reserve(points, llms)
    out["seconds"] = time.perf_counter() - start
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return out


if __name__ == "__main__":
    main()
