"""Sim-to-real: regenerate the 13 measured vLLM H100 workloads and compare the engine with them.

The data (``shared/data/vllm_h100_trainval``: ``experiments.csv``, ``measured.csv``) are vLLM
v0.15.1 runs loaded by inference-perf in ``shared_prefix`` mode. :func:`experiment_workload`
rebuilds each run's requests as that client made them (its README, "How the workload was
generated"):

* a pool of 10 groups × 10 prompts; each group shares a ``system_prompt_tokens`` system prompt
  (``prefix_id`` = group), each prompt adds ``question_tokens`` (``prompt_id`` = its pool index;
  where the prompt lengths were measured — tv13 — each pool prompt's length is drawn from the
  measured quantiles); the pool is shuffled once per run;
* request ``k`` of a stage uses pool prompt ``k mod 100``; it asks for exactly ``output_tokens``;
* a stage ``rate×seconds`` sends ``int(rate × seconds)`` requests, exponential gaps rescaled to
  sum to the stage's duration, starting 1 s into the stage; the next stage starts 1 s after
  every request of the previous one has finished.

:func:`simulate_experiment` serves it with vLLM V1 scheduling (that run's TP, ``max_num_seqs``,
``max_num_batched_tokens``, KV tokens, prefix caching on) and the operator iteration model, and
:func:`compare` returns signed errors ``simulated / measured − 1`` per metric. ITL follows the
dataset's definition, (E2E mean − TTFT mean) / (reported output tokens − 1), with the run's
reported (re-tokenised) output count, so simulated and measured ITL divide by the same number.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simulator.serving.config import operator_model
from simulator.serving.vllm import simulate_vllm

GROUPS, PER_GROUP = 10, 10
MODEL_NAMES = {
    "meta-llama/Llama-3.1-70B-Instruct": ("llama-3.1-70b", "bf16"),
    "RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic": ("llama-4-scout-17b-16e", "fp8"),
    "mistralai/Mistral-Nemo-Instruct-2407": ("mistral-nemo-2407", "bf16"),
    "Qwen/Qwen2.5-7B-Instruct": ("qwen2.5-7b", "bf16"),
    "01-ai/Yi-34B": ("yi-34b", "bf16"),
    "meta-llama/Llama-2-7b-hf": ("llama-2-7b", "fp16"),
}
METRICS = ("e2e_mean", "e2e_p90", "e2e_p99", "ttft_mean", "ttft_p90", "ttft_p99", "itl_mean")


@dataclass(frozen=True)
class Experiment:
    """One measured run: its configuration and measured metrics (seconds) per stage."""

    name: str
    model: str
    dtype: str
    gpu: str
    tp: int
    max_num_seqs: int
    max_num_batched_tokens: int
    kv_tokens: int
    system_tokens: int
    question_tokens: int
    prompt_quantiles: tuple[tuple[float, float], ...] | None
    output_tokens: int
    output_reported: float
    stages: tuple[tuple[float, float], ...]
    measured: dict[str, dict[str, float]]


def default_data_dir(root: Path | None = None) -> Path:
    """``../shared/data/vllm_h100_trainval`` beside the project root."""
    base = Path(root) if root is not None else Path(__file__).resolve().parents[2]
    return base.parent / "shared" / "data" / "vllm_h100_trainval"


def load_experiments(data_dir: Path | None = None) -> list[Experiment]:
    """The runs of ``experiments.csv`` with their rows of ``measured.csv``."""
    folder = Path(data_dir) if data_dir is not None else default_data_dir()
    measured: dict[str, dict[str, dict[str, float]]] = {}
    with open(folder / "measured.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            stage = measured.setdefault(row["experiment"], {}).setdefault(row["stage"], {})
            stage[row["metric"]] = float(row["value_ms"]) / 1000.0
    runs = []
    with open(folder / "experiments.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            model, dtype = MODEL_NAMES[row["model"]]
            stages = tuple((float(r), float(s)) for r, s in
                           (part.split("x") for part in row["stages"].split(";")))
            runs.append(Experiment(
                row["experiment"], model, dtype, row["gpu"], int(row["tp"]), int(row["max_num_seqs"]),
                int(row["max_num_batched_tokens"]), int(row["vllm_kv_tokens"]), int(row["system_prompt_tokens"]),
                int(row["question_tokens"]), _quantiles(row["prompt_tokens_measured"]), int(row["output_tokens"]),
                float(row["output_tokens_reported_mean"]), stages, measured[row["experiment"]],
            ))
    return runs


def _quantiles(text: str) -> tuple[tuple[float, float], ...] | None:
    """``min 580; p25 588; median 591; …; max 604`` as (probability, tokens) points."""
    if not text.strip():
        return None
    where = {"min": 0.0, "median": 0.5, "max": 1.0}
    points = []
    for part in text.split(";"):
        label, value = part.split()
        if label in where:
            points.append((where[label], float(value)))
        elif label.startswith("p"):
            points.append((float(label[1:]) / 100.0, float(value)))
    return tuple(sorted(points))


def prompt_pool(run: Experiment, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The shuffled pool: prompt tokens, group (``prefix_id``) and pool index (``prompt_id``)."""
    size = GROUPS * PER_GROUP
    if run.prompt_quantiles is None:
        lengths = np.full(size, run.system_tokens + run.question_tokens, dtype=np.int64)
    else:
        probs, values = zip(*run.prompt_quantiles, strict=True)
        lengths = np.rint(np.interp(rng.random(size), probs, values)).astype(np.int64)
    groups = np.arange(size) // PER_GROUP
    order = rng.permutation(size)
    return lengths[order], groups[order], order


def stage_offsets(rate: float, seconds: float, rng: np.random.Generator) -> np.ndarray:
    """Send times within a stage: ``int(rate × seconds)`` exponential gaps summing to ``seconds``, from 1 s."""
    count = int(rate * seconds)
    gaps = rng.exponential(1.0 / rate, count)
    return 1.0 + np.cumsum(gaps * (seconds / gaps.sum()))


def simulate_experiment(run: Experiment, seed: int = 0, **efficiencies: float) -> dict[str, dict[str, float]]:
    """Simulated metrics (seconds) per stage (``all``, ``0``, ``1`` …) for one run."""
    rng = np.random.default_rng(seed)
    model = operator_model(run.model, run.gpu, tp=run.tp, dtype=run.dtype, **efficiencies)
    lengths, groups, ids = prompt_pool(run, rng)
    offsets = [stage_offsets(rate, seconds, rng) for rate, seconds in run.stages]
    start = 0.0
    arrival, stage_of = np.zeros(0), np.zeros(0, dtype=np.int64)
    for index, times in enumerate(offsets):
        arrival = np.concatenate([arrival, start + times])
        stage_of = np.concatenate([stage_of, np.full(len(times), index)])
        pick = np.concatenate([np.arange(np.sum(stage_of == s)) % len(lengths) for s in range(index + 1)])
        result = simulate_vllm(
            arrival, lengths[pick], np.full(len(arrival), run.output_tokens), model,
            max_num_seqs=run.max_num_seqs, max_num_batched_tokens=run.max_num_batched_tokens,
            kv_capacity_tokens=run.kv_tokens, prefix_caching=True, kv_preemption=True,
            prefix_id=groups[pick], prefix_tokens=np.full(len(arrival), run.system_tokens), prompt_id=ids[pick],
        )
        start = float(result.finish_s[stage_of == index].max()) + 1.0
    out = {"all": _metrics(result, np.ones(len(arrival), dtype=bool), run)}
    for index in range(len(offsets)):
        out[str(index)] = _metrics(result, stage_of == index, run)
    return out


def _metrics(result, mask: np.ndarray, run: Experiment) -> dict[str, float]:
    e2e, ttft = result.e2e_s[mask], result.ttft_s[mask]
    stats = {"e2e_mean": float(e2e.mean()), "ttft_mean": float(ttft.mean())}
    for p in (90, 99):
        stats[f"e2e_p{p}"] = float(np.percentile(e2e, p))
        stats[f"ttft_p{p}"] = float(np.percentile(ttft, p))
    stats["itl_mean"] = (stats["e2e_mean"] - stats["ttft_mean"]) / (run.output_reported - 1.0)
    stats["preemptions"] = float(result.preemptions[mask].sum())
    return stats


def compare(runs: list[Experiment], seed: int = 0, **efficiencies: float) -> list[dict]:
    """One row per run, stage and measured metric: measured, simulated (s) and signed error."""
    rows = []
    for run in runs:
        simulated = simulate_experiment(run, seed=seed, **efficiencies)
        for stage, metrics in run.measured.items():
            for metric, value in metrics.items():
                sim = simulated[stage][metric]
                rows.append(dict(experiment=run.name, stage=stage, metric=metric, measured_s=value,
                                 simulated_s=sim, error=sim / value - 1.0))
    return rows


def headline(rows: list[dict]) -> dict[str, float]:
    """Median and worst |error| of each metric over the runs (stage ``all``)."""
    out: dict[str, float] = {}
    for metric in METRICS:
        errors = [abs(r["error"]) for r in rows if r["stage"] == "all" and r["metric"] == metric]
        if errors:
            out[f"{metric}_median_abs_error"] = float(np.median(errors))
            out[f"{metric}_worst_abs_error"] = float(np.max(errors))
    e2e = [r["simulated_s"] / r["measured_s"] for r in rows if r["stage"] == "all" and r["metric"] == "e2e_mean"]
    out["e2e_mean_worst_factor"] = float(max(max(e2e), 1.0 / min(e2e)))
    return out
