"""Fleetcast: discrete-event capacity planning for AI compute.

The public API is small: :func:`load_scenario` turns a YAML file (or a dict) into a
validated :class:`Scenario`; :func:`simulate` runs it over Monte Carlo paths and returns
:class:`Results` with ``.timeseries``, ``.pools``, ``.bands``, ``.summary`` and ``.save(dir)``.

The names are imported on first use, so that ``fleetcast`` starts (and takes Ctrl-C) before
the numerical libraries are loaded.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

from simulator.compiled_cache import configure as _configure_compiled_cache

_configure_compiled_cache()  # before numba is imported: a cache folder keyed by the compiled sources

__all__ = ["Results", "Scenario", "ScenarioError", "load_scenario", "simulate"]
__version__ = "0.1.0"

_HOMES = {
    "load_scenario": "simulator.serving.resolve",
    "simulate": "simulator.runs.montecarlo",
    "Results": "simulator.runs.results",
    "Scenario": "simulator.scenario",
    "ScenarioError": "simulator.scenario",
}

if TYPE_CHECKING:  # pragma: no cover
    from simulator.runs.montecarlo import simulate
    from simulator.runs.results import Results
    from simulator.scenario import Scenario, ScenarioError
    from simulator.serving.resolve import load_scenario


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        value = getattr(importlib.import_module(_HOMES[name]), name)
        globals()[name] = value
        return value
    if importlib.util.find_spec(f"simulator.{name}") is not None:  # a submodule: simulator.units
        return importlib.import_module(f"simulator.{name}")
    raise AttributeError(f"module 'simulator' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
