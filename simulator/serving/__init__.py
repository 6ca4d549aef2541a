"""Serving: what one replica (or a few behind a router) can really serve.

A request-level continuous-batching engine (:func:`simulate_replica`,
:func:`simulate_router`) driven by an iteration-time model (:class:`LinearIterationModel`,
:class:`RooflineIterationModel`), Azure-format traces, and SLO capacity curves that the
fleet simulation consumes.
"""

from simulator.serving.iteration import (
    LinearIterationModel,
    RooflineIterationModel,
    ServingConfigError,
)
from simulator.serving.llm_catalog import LLM_CATALOG, LlmSpec
from simulator.serving.replica import ServingResult, simulate_replica, simulate_router

__all__ = [
    "LLM_CATALOG",
    "LinearIterationModel",
    "LlmSpec",
    "RooflineIterationModel",
    "ServingConfigError",
    "ServingResult",
    "simulate_replica",
    "simulate_router",
]
