"""Derive each served model's capacity from its ``serving`` description.

A model that says ``serving: {model: llama-3.1-70b, tp: 4, dtype: fp8, slo: …}`` instead of
``capacity_rps`` gets its capacity per replica and its SLO-attainment curve from
:func:`simulator.serving.capacity.capacity_curve`; both are written into the scenario, so
``scenario.resolved.yaml`` shows them and reloading it does not recompute them.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from simulator.scenario import Scenario, ScenarioError
from simulator.scenario.served import ServedModel, SloCurve
from simulator.serving.capacity import Slo, capacity_curve
from simulator.serving.config import operator_model
from simulator.serving.iteration import ServingConfigError
from simulator.serving.trace import LengthMix, TraceError, read_trace


def resolve_serving(scenario: Scenario, base_dir: Path = Path(".")) -> Scenario:
    """The scenario with ``capacity_rps`` and ``slo_curve`` filled in from ``serving``."""
    models = list(scenario.models)
    changed = False
    for index, model in enumerate(models):
        if model.serving is None or model.capacity_rps is not None:
            continue
        models[index] = _resolve_model(scenario, index, model, base_dir)
        changed = True
    return scenario.model_copy(update={"models": models}) if changed else scenario


def _resolve_model(scenario: Scenario, index: int, model: ServedModel, base_dir: Path) -> ServedModel:
    spec = model.serving
    assert spec is not None
    loc = ("models", index, "serving")
    pool = next(p for p in scenario.fleet.pools if p.name == model.pools[0])
    gpu = spec.gpu or pool.gpu
    try:
        iteration = operator_model(spec.model, gpu, spec.tp, spec.dtype, spec.kv_dtype, gpus=scenario.gpus)
    except ServingConfigError as exc:
        text = str(exc)
        field = ("model" if "unknown model" in text else "gpu" if "unknown GPU" in text
                 else "kv_dtype" if text.startswith("kv_dtype") else "dtype" if text.startswith("dtype")
                 or "FP8" in text else "tp")
        raise ScenarioError((*loc, field), str(exc)) from None
    mix = replace(_length_mix(spec.lengths, model, base_dir, loc), shared_prefix_tokens=spec.shared_prefix_tokens,
                  distinct_prompts=spec.distinct_prompts)
    slo = Slo(spec.slo.ttft_s, spec.slo.ttft_percentile, spec.slo.tpot_s, spec.slo.tpot_percentile)
    try:
        curve = capacity_curve(iteration, mix, slo, spec.max_batch,
                               prefill_chunk_tokens=spec.prefill_chunk_tokens,
                               requests=spec.probe_requests, seed=spec.seed,
                               max_batched_tokens=spec.max_batched_tokens,
                               prefix_caching=spec.prefix_caching == "enabled",
                               kv_preemption=spec.kv_preemption == "enabled")
    except (ServingConfigError, ValueError) as exc:
        raise ScenarioError(loc, str(exc)) from None
    return model.model_copy(update={
        "capacity_rps": round(curve.capacity_rps, 6),
        "slo_curve": SloCurve(load=list(curve.load), attainment=list(curve.attainment)),
        "serving": spec.model_copy(update={"gpu": gpu}),
    })


def _length_mix(lengths: str, model: ServedModel, base_dir: Path, loc: tuple) -> LengthMix:
    if lengths == "fixed":
        return LengthMix.fixed(model.demand.input_tokens, model.demand.output_tokens)
    path = lengths if lengths == "azure-conv" else str(base_dir / lengths)
    try:
        return read_trace(path).length_mix()
    except TraceError as exc:
        raise ScenarioError((*loc, "lengths"), str(exc)) from None
