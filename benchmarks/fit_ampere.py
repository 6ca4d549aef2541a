"""Fit the A100 ("ampere") serving efficiencies to published A100 iteration times; score them held out.

    .venv/bin/python benchmarks/fit_ampere.py [--json benchmarks/results/ampere_fit.json]

Until this fit, every generation without measurements borrowed Hopper's efficiencies (fitted on
vLLM v0.15.1 runs on H100). Two published A100-80GB SXM profiles now give A100 its own:

* **fitted on**: DistServe's profile of vLLM (``data/distserve_a100_vllm_profile.csv``; OPT-13B at
  TP 1, 2, 4 and OPT-66B at TP 2, 3, 4), the authors' fitted iteration times evaluated inside the
  range they profiled: single prompts of 64-2,000 tokens and batches of 4 × 512 and 8 × 256;
  decode batches of 1-256 requests at 128-1,792 tokens of context each, as far as the replica's
  KV cache holds them;
* **held out**: Splitwise's DGX-A100 measurements (``data/splitwise_sim_a100_profile.csv``;
  Llama-2-70B and BLOOM-176B), never seen by the fit: the time to prefill a batch of ``b``
  prompts of ``p`` tokens and the time per token of ``b`` requests generating ``t`` tokens after
  such prompts (mean context ``p + t / 2``).

Fitted: GEMM efficiency, memory efficiency, the per-iteration and per-layer overheads and the
latency of one tensor-parallel all-reduce (least squares on ``log(simulated / published)``, each
within a plausible range). Attention efficiency and the front end keep Hopper's values. Scores: root-mean-square and
median absolute log error (reported as percentages), in-sample, leave-one-deployment-out (each
model-and-TP group scored by a fit on the others) and held out, for the fitted constants and for
Hopper's with A100's earlier all-reduce latency of 10 µs (the assumption they replace). The
constants are then copied into ``AMPERE_EFFICIENCY`` and A100's ``allreduce_latency_us`` in
``simulator/scenario/catalog.py``.

The data's own age is the caveat: both profiles are of late-2023 software (vLLM 0.2-era,
Splitwise's vLLM-based runs), so the fitted overheads carry that software's per-step costs; a
current vLLM on A100 is likely somewhat faster per step.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from paper_models import PAPER_MODELS  # noqa: E402

from simulator.scenario.catalog import BUILTIN_GPUS, HOPPER_EFFICIENCY, GpuSpec  # noqa: E402
from simulator.serving.batching import iteration_seconds  # noqa: E402
from simulator.serving.iteration import ServingConfigError  # noqa: E402
from simulator.serving.llm_catalog import LLM_CATALOG  # noqa: E402
from simulator.serving.operators import OperatorIterationModel  # noqa: E402

DISTSERVE = HERE / "data" / "distserve_a100_vllm_profile.csv"
SPLITWISE = HERE / "data" / "splitwise_sim_a100_profile.csv"
SPLITWISE_NAMES = {"llama2-70b": "llama-2-70b", "bloom-176b": "bloom-176b"}
FITTED = ("compute_efficiency", "memory_efficiency", "overhead_s", "layer_overhead_s", "allreduce_latency_s")
HOPPER = {"compute_efficiency": HOPPER_EFFICIENCY["gemm_efficiency"],
          "memory_efficiency": HOPPER_EFFICIENCY["memory_efficiency"],
          "overhead_s": HOPPER_EFFICIENCY["overhead_s"], "layer_overhead_s": HOPPER_EFFICIENCY["layer_overhead_s"],
          "allreduce_latency_s": 10e-6}  # A100's all-reduce latency before this fit
BOUNDS = {"compute_efficiency": (0.2, 0.9), "memory_efficiency": (0.4, 0.95), "overhead_s": (1e-4, 0.03),
          "layer_overhead_s": (1e-7, 3e-4), "allreduce_latency_s": (2e-6, 3e-4)}
PROMPTS = (64, 128, 256, 512, 1024, 1536, 2000)
PROMPT_BATCHES = ((512,) * 4, (256,) * 8)
DECODE_BATCHES = (1, 2, 4, 8, 16, 32, 64, 96, 128, 192, 256)
CONTEXTS = (128, 512, 1024, 1792)
SMALL_BATCH_LIMIT = 95  # DistServe's threshold between its two decode fits


def a100() -> GpuSpec:
    return GpuSpec(**BUILTIN_GPUS["A100-80GB"])


def llm(name: str):
    return PAPER_MODELS[name]() if name in PAPER_MODELS else LLM_CATALOG[name]


def replica(name: str, tp: int, values: dict[str, float]) -> OperatorIterationModel | None:
    """The replica's operator model; None if its weights leave it no KV cache on A100-80GB."""
    for share in (0.9, 0.98):
        try:
            return OperatorIterationModel(a100(), llm(name), tp=tp, dtype="bf16", gpu_memory_utilization=share,
                                          **values)
        except ServingConfigError:
            continue
    return None


def seconds(model: OperatorIterationModel, prompts: tuple[int, ...] = (), contexts: tuple[float, ...] = ()) -> float:
    """One iteration prefilling ``prompts`` whole or decoding requests at ``contexts`` tokens."""
    if prompts:
        tokens = sum(prompts)
        positions = sum(p * (p + 1) / 2 for p in prompts)
        return iteration_seconds(model.params, tokens, 0, positions, float(tokens), 0.0)
    total = float(sum(contexts))
    return iteration_seconds(model.params, 0, len(contexts), total, total, total)


def distserve_points() -> list[dict]:
    """(deployment, iteration, published seconds) inside DistServe's profiled range."""
    table = pd.read_csv(DISTSERVE)
    points = []
    for (name, tp), rows in table.groupby(["model", "tp"], sort=True):
        coef = {row.phase: (row.a_ms, row.b_ms, row.c_ms) for row in rows.itertuples()}
        model = replica(name, int(tp), HOPPER)
        kv = model.kv_capacity_tokens
        for batch in [(p,) for p in PROMPTS] + list(PROMPT_BATCHES):
            a, b, c = coef["prefill"]
            ms = a + b * sum(batch) + c * sum(p * p for p in batch)
            points.append({"deployment": f"{name} TP{tp}", "model": name, "tp": int(tp), "prompts": batch,
                           "contexts": (), "published_s": ms / 1e3})
        for size in DECODE_BATCHES:
            for context in CONTEXTS:
                if size * context > kv:
                    continue
                a, b, c = coef["decode_small" if size < SMALL_BATCH_LIMIT else "decode_large"]
                ms = a + b * size * context + c * size
                points.append({"deployment": f"{name} TP{tp}", "model": name, "tp": int(tp), "prompts": (),
                               "contexts": (float(context),) * size, "published_s": ms / 1e3})
    return points


def splitwise_points() -> list[dict]:
    table = pd.read_csv(SPLITWISE)
    points = []
    for row in table.itertuples():
        if row.model not in SPLITWISE_NAMES:
            continue
        name, tp = SPLITWISE_NAMES[row.model], int(row.tensor_parallel)
        common = {"deployment": f"{name} TP{tp}", "model": name, "tp": tp}
        points.append({**common, "prompts": (int(row.prompt_size),) * int(row.batch_size), "contexts": (),
                       "published_s": row.prompt_time_ms / 1e3, "what": "prompt"})
        context = row.prompt_size + row.token_size / 2.0
        points.append({**common, "prompts": (), "contexts": (context,) * int(row.batch_size),
                       "published_s": row.token_time_ms / 1e3, "what": "token"})
    return points


def log_errors(points: list[dict], values: dict[str, float]) -> np.ndarray:
    models: dict[tuple[str, int], OperatorIterationModel | None] = {}
    out = []
    for point in points:
        key = (point["model"], point["tp"])
        if key not in models:
            models[key] = replica(point["model"], point["tp"], values)
        model = models[key]
        if model is None:
            out.append(np.nan)
            continue
        out.append(math.log(seconds(model, point["prompts"], point["contexts"]) / point["published_s"]))
    return np.array(out)


def fit(points: list[dict]) -> dict[str, float]:
    low = np.array([BOUNDS[k][0] for k in FITTED])
    high = np.array([BOUNDS[k][1] for k in FITTED])
    start = np.clip(np.array([HOPPER[k] for k in FITTED]), low, high)
    scale = np.log(high / low)

    def residuals(x):
        return log_errors(points, dict(zip(FITTED, np.exp(np.log(low) + x * scale), strict=True)))

    result = least_squares(residuals, (np.log(start) - np.log(low)) / scale, bounds=(0.0, 1.0), x_scale=0.1)
    return dict(zip(FITTED, (float(v) for v in np.exp(np.log(low) + result.x * scale)), strict=True))


def score(errors: np.ndarray) -> dict[str, float]:
    errors = errors[np.isfinite(errors)]
    return {"points": int(errors.size), "rms_pct": 100.0 * float(np.sqrt(np.mean(errors ** 2))),
            "median_abs_pct": 100.0 * float(np.median(np.abs(np.expm1(errors)))),
            "mean_signed_pct": 100.0 * float(np.mean(np.expm1(errors)))}


def by_group(points: list[dict], errors: np.ndarray, key: str = "deployment") -> dict[str, dict]:
    groups: dict[str, list[int]] = {}
    for index, point in enumerate(points):
        label = point[key] if key == "deployment" else f"{point['deployment']} {point.get('what', '')}".strip()
        groups.setdefault(label, []).append(index)
    return {label: score(errors[rows]) for label, rows in groups.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=HERE / "results" / "ampere_fit.json")
    args = parser.parse_args()

    train = distserve_points()
    held = splitwise_points()
    fitted = fit(train)
    train_fitted, train_hopper = log_errors(train, fitted), log_errors(train, HOPPER)
    held_fitted, held_hopper = log_errors(held, fitted), log_errors(held, HOPPER)

    deployments = sorted({p["deployment"] for p in train})
    loo = np.full(len(train), np.nan)
    loo_values = {}
    for deployment in deployments:
        rest = [p for p in train if p["deployment"] != deployment]
        values = fit(rest)
        loo_values[deployment] = values
        rows = [i for i, p in enumerate(train) if p["deployment"] == deployment]
        loo[rows] = log_errors([train[i] for i in rows], values)

    out = {
        "fitted": fitted,
        "kept": {"attention_efficiency": HOPPER_EFFICIENCY["attention_efficiency"],
                 "frontend_s": HOPPER_EFFICIENCY["frontend_s"]},
        "hopper_assumption": HOPPER,
        "train": {"source": "DistServe vLLM A100 profile (data/distserve_a100_vllm_profile.csv)",
                  "fitted": score(train_fitted), "hopper": score(train_hopper),
                  "leave_one_deployment_out": score(loo),
                  "by_deployment_fitted": by_group(train, train_fitted),
                  "by_deployment_leave_one_out": by_group(train, loo),
                  "by_deployment_hopper": by_group(train, train_hopper)},
        "held_out": {"source": "Splitwise DGX-A100 measurements (data/splitwise_sim_a100_profile.csv)",
                     "fitted": score(held_fitted), "hopper": score(held_hopper),
                     "by_kind_fitted": by_group(held, held_fitted, "what"),
                     "by_kind_hopper": by_group(held, held_hopper, "what")},
        "leave_one_out_constants": loo_values,
    }
    print("fitted A100 constants:", {k: round(v, 6) for k, v in fitted.items()})
    for label, block in (("DistServe profile (fit)", out["train"]), ("Splitwise (held out)", out["held_out"])):
        f, h = block["fitted"], block["hopper"]
        print(f"{label}: {f['points']} points, rms {f['rms_pct']:.1f}% median |err| {f['median_abs_pct']:.1f}% "
              f"(Hopper's constants: rms {h['rms_pct']:.1f}%, median {h['median_abs_pct']:.1f}%)")
    lo = out["train"]["leave_one_deployment_out"]
    print(f"leave one deployment out: rms {lo['rms_pct']:.1f}% median |err| {lo['median_abs_pct']:.1f}%")
    for kind, row in out["held_out"]["by_kind_fitted"].items():
        hop = out["held_out"]["by_kind_hopper"][kind]
        print(f"  held out {kind}: median |err| {row['median_abs_pct']:.1f}% signed {row['mean_signed_pct']:+.1f}% "
              f"(Hopper's: {hop['median_abs_pct']:.1f}%, {hop['mean_signed_pct']:+.1f}%)")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
