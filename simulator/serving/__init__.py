"""Serving: what one replica (or a few behind a router) can really serve.

A request-level continuous-batching engine (:func:`simulate_replica`,
:func:`simulate_router` with the contract semantics; :func:`simulate_vllm` with vLLM V1
scheduling, prefix caching and KV preemption) driven by an iteration-time model
(:class:`LinearIterationModel`, :class:`RooflineIterationModel`,
:class:`OperatorIterationModel`, over a replica laid out as :class:`Parallelism`, with vLLM's KV
memory accounting, :func:`vllm_kv_memory`), Azure-format traces, and SLO capacity curves that the
fleet simulation consumes.
"""

from simulator.serving.concurrency import concurrency_curve, serve_at_concurrency, serve_closed_loop
from simulator.serving.iteration import (
    LinearIterationModel,
    RooflineIterationModel,
    ServingConfigError,
)
from simulator.serving.kv_memory import KvMemory, vllm_kv_memory
from simulator.serving.llm_catalog import LLM_CATALOG, LlmSpec
from simulator.serving.model_config import ModelConfigError, load_model_config
from simulator.serving.operators import OperatorIterationModel
from simulator.serving.parallelism import Parallelism
from simulator.serving.replica import ServingResult, simulate_replica, simulate_router
from simulator.serving.vllm import simulate_vllm

__all__ = [
    "LLM_CATALOG",
    "KvMemory",
    "LinearIterationModel",
    "LlmSpec",
    "ModelConfigError",
    "OperatorIterationModel",
    "Parallelism",
    "RooflineIterationModel",
    "ServingConfigError",
    "ServingResult",
    "concurrency_curve",
    "load_model_config",
    "serve_at_concurrency",
    "serve_closed_loop",
    "simulate_replica",
    "simulate_router",
    "simulate_vllm",
    "vllm_kv_memory",
]
