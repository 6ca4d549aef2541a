"""Closed-loop validation: regenerate the InferenceX points and compare the engine with them.

The data (``shared/data/inferencex_trainval``: ``measured.csv``, the deployments' ``scenarios/``
and the two models' ``config.json``) are vLLM runs of Llama-3.1-70B (FP8, NVFP4) and gpt-oss-120b
(MXFP4 experts) on one replica of ``tp`` H100, H200 or B200 GPUs, loaded by a closed loop of
``concurrency`` users with random prompts of up to ``isl`` tokens and up to ``osl`` output tokens
(generation not stopped early). Each point is rebuilt as that client ran it: ``10 × concurrency``
requests (InferenceX's ``num_prompts``), all users starting at once, no prefix reuse, input and
output lengths drawn uniformly from ``[0.8 × isl, isl]`` and ``[0.8 × osl, osl]`` (the client's
``--random-range-ratio 0.8``, InferenceX's published benchmark configuration). The spread matters:
with equal lengths the users would stay in lockstep, every prompt of a wave prefilled in one
iteration, while the measured TTFT at low concurrency is one prompt's prefill. The engine is vLLM
V1 scheduling with the deployment's ``max_num_batched_tokens`` (8192) and ``max_num_seqs`` (256).
TPOT of a request is ``(E2E − TTFT) / (its output tokens − 1)``; the point's TPOT and TTFT are
means over its requests, as the client reports them.

Precisions as deployed: Llama FP8 is ``dtype="fp8"``, Llama NVFP4 ``dtype="fp4"`` (B200 only),
gpt-oss keeps its checkpoint (16-bit attention and dense layers, MXFP4 experts: ``dtype="bf16"``).
The KV cache is FP8, except for gpt-oss on Hopper: its logged KV capacities are twice what an FP8
cache would hold in the memory left and match a 16-bit cache (vLLM's Hopper attention with gpt-oss's
sinks ran without an FP8 cache in these versions), so those deployments use ``kv_dtype="bf16"``.

A point is **below saturation** when the server holds every user at once: ``concurrency ≤
max_num_seqs`` and ``concurrency × (isl + osl)`` fits the KV cache. Above it TTFT is mostly the
server's queue, which the README's caveat names.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simulator.serving.config import resolve_gpu
from simulator.serving.llm_catalog import LlmSpec
from simulator.serving.model_config import load_model_config
from simulator.serving.operators import OperatorIterationModel
from simulator.serving.vllm import simulate_vllm

GPUS = {"h100": "H100", "h200": "H200", "b200": "B200"}
CONFIGS = {"llama-3.1-70b-instruct": "inference-sim--llama-3.1-70b-instruct_config.json",
           "gpt-oss-120b": "openai--gpt-oss-120b_config.json"}
MAX_NUM_SEQS = 256
MAX_NUM_BATCHED_TOKENS = 8192
PROMPTS_PER_USER = 10
RANGE_RATIO = 0.8


@dataclass(frozen=True)
class Point:
    """One measured point: deployment, load and the measured means (seconds)."""

    scenario: str
    label: str
    concurrency: int
    model: str
    gpu: str
    precision: str
    tp: int
    isl: int
    osl: int
    ttft_s: float
    tpot_s: float
    kv_tokens: int | None  # vLLM's logged KV capacity, where kept

    @property
    def deployment(self) -> tuple[str, str, str, int]:
        return self.model, self.gpu, self.precision, self.tp

    @property
    def dtype(self) -> str:
        if self.model.startswith("gpt-oss"):
            return "bf16"
        return "fp4" if self.precision == "fp4" else "fp8"

    @property
    def kv_dtype(self) -> str:
        return "bf16" if self.model.startswith("gpt-oss") and self.gpu != "b200" else "fp8"


def default_data_dir(root: Path | None = None) -> Path:
    """``../shared/data/inferencex_trainval`` beside the project root."""
    base = Path(root) if root is not None else Path(__file__).resolve().parents[2]
    return base.parent / "shared" / "data" / "inferencex_trainval"


def load_points(data_dir: Path | None = None) -> list[Point]:
    """Every row of ``measured.csv``."""
    folder = Path(data_dir) if data_dir is not None else default_data_dir()
    points = []
    with open(folder / "measured.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            kv = row.get("resolved_gpu_kv_tokens") or ""
            points.append(Point(
                row["scenario"], row["label"], int(row["concurrency"]), row["model"], row["gpu"], row["precision"],
                int(row["tp"]), int(row["isl"]), int(row["osl"]), float(row["ttft_ms"]) / 1000.0,
                float(row["tpot_ms"]) / 1000.0, int(float(kv)) if kv else None,
            ))
    return points


def load_llms(data_dir: Path | None = None) -> dict[str, LlmSpec]:
    folder = (Path(data_dir) if data_dir is not None else default_data_dir()) / "model_configs"
    return {model: load_model_config(folder / name, name=model) for model, name in CONFIGS.items()}


def point_model(point: Point, llms: dict[str, LlmSpec], **efficiencies: float) -> OperatorIterationModel:
    """The iteration model of a point's deployment (efficiencies: overrides of the generation's)."""
    gpu_name, gpu = resolve_gpu(GPUS[point.gpu])
    return OperatorIterationModel(gpu, llms[point.model], tp=point.tp, dtype=point.dtype, kv_dtype=point.kv_dtype,
                                  gpu_name=gpu_name, **efficiencies)


def kv_tokens(model: OperatorIterationModel) -> int:
    """The deployment's KV capacity per rank as vLLM accounts it at its engine settings."""
    return model.kv_memory(max_num_batched_tokens=MAX_NUM_BATCHED_TOKENS, max_num_seqs=MAX_NUM_SEQS).kv_cache_tokens


def below_saturation(point: Point, kv_capacity: int) -> bool:
    """Every user held at once (module docstring)."""
    return point.concurrency <= MAX_NUM_SEQS and point.concurrency * (point.isl + point.osl) <= kv_capacity


def point_lengths(point: Point, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Input and output lengths of the point's ``10 × concurrency`` requests (module docstring)."""
    count = PROMPTS_PER_USER * point.concurrency
    prompt = rng.integers(int(point.isl * RANGE_RATIO), point.isl + 1, count)
    output = rng.integers(int(point.osl * RANGE_RATIO), point.osl + 1, count)
    return prompt, output


def simulate_point(point: Point, model: OperatorIterationModel, kv_capacity: int | None = None,
                   seed: int = 0) -> dict[str, float]:
    """Mean TTFT and mean TPOT (seconds) of the point's closed loop, and its output tokens/s per GPU.

    ``kv_capacity``: the replica's KV tokens (default: vLLM's accounting at the engine settings,
    every data-parallel rank's).
    """
    if point.osl < 2:
        raise ValueError("TPOT needs at least 2 output tokens")
    capacity = kv_capacity if kv_capacity is not None else kv_tokens(model) * model.dp
    prompt, output = point_lengths(point, np.random.default_rng(seed))
    result = simulate_vllm(None, prompt, output, model, max_num_seqs=MAX_NUM_SEQS,
                           max_num_batched_tokens=MAX_NUM_BATCHED_TOKENS, kv_capacity_tokens=capacity,
                           prefix_caching=False, users=point.concurrency)
    tpot = (result.e2e_s - result.ttft_s) / (output - 1)
    return {"ttft_s": float(result.ttft_s.mean()), "tpot_s": float(tpot.mean()),
            "tokens_per_s_per_gpu": float(result.output_tokens.sum() / result.duration_s / model.gpus)}


def compare(points: list[Point], llms: dict[str, LlmSpec] | None = None,
            efficiencies: dict[str, dict[str, float]] | None = None) -> list[dict]:
    """One row per point: measured and simulated TTFT/TPOT, signed errors (simulated / measured − 1),
    the modelled and logged KV capacity and whether the point is below saturation.

    ``efficiencies``: per GPU key (``h100``…), overrides of the generation's constants.
    """
    llms = llms or load_llms()
    rows, models = [], {}
    for point in points:
        key = point.deployment
        if key not in models:
            model = point_model(point, llms, **(efficiencies or {}).get(point.gpu, {}))
            models[key] = (model, kv_tokens(model))
        model, capacity = models[key]
        sim = simulate_point(point, model, capacity * model.dp)
        rows.append(dict(
            scenario=point.scenario, label=point.label, concurrency=point.concurrency, model=point.model,
            gpu=point.gpu, precision=point.precision, tp=point.tp, ttft_s=point.ttft_s, tpot_s=point.tpot_s,
            sim_ttft_s=sim["ttft_s"], sim_tpot_s=sim["tpot_s"], ttft_error=sim["ttft_s"] / point.ttft_s - 1.0,
            tpot_error=sim["tpot_s"] / point.tpot_s - 1.0, kv_tokens=point.kv_tokens, sim_kv_tokens=capacity,
            kv_error=(capacity / point.kv_tokens - 1.0) if point.kv_tokens else None,
            below_saturation=below_saturation(point, point.kv_tokens or capacity),
            sim_tokens_per_s_per_gpu=sim["tokens_per_s_per_gpu"],
        ))
    return rows


def headline(rows: list[dict]) -> dict[str, float]:
    """Median |TPOT| and |TTFT| error below saturation, each GPU's median |TPOT| error, and the
    worst and median |KV| error over the points whose run logged its capacity."""
    below = [r for r in rows if r["below_saturation"]]
    out = {"points": len(rows), "points_below_saturation": len(below),
           "tpot_median_abs_error": float(np.median([abs(r["tpot_error"]) for r in below])),
           "ttft_median_abs_error": float(np.median([abs(r["ttft_error"]) for r in below]))}
    for gpu in sorted({r["gpu"] for r in below}):
        out[f"tpot_median_abs_error_{gpu}"] = float(np.median([abs(r["tpot_error"]) for r in below
                                                               if r["gpu"] == gpu]))
    kv = [abs(r["kv_error"]) for r in rows if r["kv_error"] is not None]
    if kv:
        out["kv_points"] = len(kv)
        out["kv_worst_abs_error"] = max(kv)
        out["kv_median_abs_error"] = float(np.median(kv))
    return out
