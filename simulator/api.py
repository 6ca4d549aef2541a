"""The public entry point for scenarios: validate, then derive what the scenario leaves to us."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from simulator.scenario import Scenario
from simulator.scenario import load_scenario as _validate
from simulator.serving.resolve import resolve_serving


def load_scenario(
    source: str | Path | Mapping[str, Any] | Scenario,
    overrides: Mapping[str, Any] | Iterable[str] | None = None,
    base_dir: str | Path | None = None,
) -> Scenario:
    """Validate a scenario (file path, dict or Scenario) and derive serving capacities.

    Args:
        source: a YAML file path, a mapping of the same structure, or a Scenario.
        overrides: ``{"horizon.duration": "30d"}`` or ``["fleet.pools[0].count=64"]``.
        base_dir: the folder relative file names (growth CSVs, job traces) are read from when
            ``source`` is a mapping (default: the current folder; a file's own folder otherwise).

    Raises:
        simulator.ScenarioError: the first problem, with its field path and YAML line.
    """
    scenario = _validate(source, overrides, resolve=resolve_serving, base_dir=base_dir)
    return resolve_serving(scenario) if isinstance(source, Scenario) and not overrides else scenario
