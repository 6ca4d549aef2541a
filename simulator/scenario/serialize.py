"""Write a scenario back out as YAML, every default filled in, in readable units."""

from __future__ import annotations

from typing import Any

import yaml

from simulator.scenario.scenario import Scenario


class _Dumper(yaml.SafeDumper):
    """Block-style YAML that keeps field order."""


def dump_scenario(scenario: Scenario) -> str:
    """The resolved scenario as YAML text that :func:`load_scenario` reads back unchanged."""
    data: dict[str, Any] = scenario.model_dump(mode="json")
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
