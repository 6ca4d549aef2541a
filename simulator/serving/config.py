"""Build an iteration-time model from names: ``llama-3.1-70b`` on ``H100``, TP 4, FP8."""

from __future__ import annotations

from collections.abc import Mapping

from simulator.scenario.catalog import BUILTIN_GPUS, GpuSpec, canonical_gpu_name
from simulator.scenario.suggest import unknown_name
from simulator.serving.iteration import RooflineIterationModel, ServingConfigError
from simulator.serving.llm_catalog import LLM_CATALOG, LlmSpec, find_llm
from simulator.serving.operators import OperatorIterationModel


def resolve_gpu(name: str, gpus: Mapping[str, GpuSpec] | None = None) -> tuple[str, GpuSpec]:
    """A GPU by name (case-insensitive) from ``gpus`` then the built-in catalog."""
    table = dict(gpus or {})
    canonical = canonical_gpu_name(name, table) if table else None
    if canonical is not None:
        return canonical, table[canonical]
    canonical = canonical_gpu_name(name)
    if canonical is None:
        raise ServingConfigError(unknown_name("GPU", name, sorted({*BUILTIN_GPUS, *table}), "known"))
    return canonical, GpuSpec(**BUILTIN_GPUS[canonical])


def resolve_llm(name: str, extra: Mapping[str, LlmSpec] | None = None) -> LlmSpec:
    spec = find_llm(name, dict(extra or {}))
    if spec is None:
        raise ServingConfigError(unknown_name("model", name, sorted({*LLM_CATALOG, *(extra or {})}), "known"))
    return spec


def roofline_model(
    model: str,
    gpu: str,
    tp: int = 1,
    dtype: str = "bf16",
    kv_dtype: str | None = None,
    gpus: Mapping[str, GpuSpec] | None = None,
    llms: Mapping[str, LlmSpec] | None = None,
) -> RooflineIterationModel:
    """A roofline iteration model from catalog names; raise ServingConfigError when it cannot run."""
    return _from_names(RooflineIterationModel, model, gpu, tp, dtype, kv_dtype, gpus, llms)


def operator_model(
    model: str,
    gpu: str,
    tp: int = 1,
    dtype: str = "bf16",
    kv_dtype: str | None = None,
    gpus: Mapping[str, GpuSpec] | None = None,
    llms: Mapping[str, LlmSpec] | None = None,
    **efficiencies: float,
) -> OperatorIterationModel:
    """An operator-class iteration model from catalog names (efficiencies: the generation's defaults).

    Keyword arguments override ``compute_efficiency``, ``memory_efficiency``,
    ``attention_efficiency``, ``overhead_s`` or ``frontend_s``.
    """
    return _from_names(OperatorIterationModel, model, gpu, tp, dtype, kv_dtype, gpus, llms, **efficiencies)


def _from_names(kind, model, gpu, tp, dtype, kv_dtype, gpus, llms, **extra):
    gpu_name, gpu_spec = resolve_gpu(gpu, gpus)
    return kind(gpu_spec, resolve_llm(model, llms), tp=tp, dtype=dtype, kv_dtype=kv_dtype, gpu_name=gpu_name,
                **extra)
