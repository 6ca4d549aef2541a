"""Scenario files: YAML in, validated and frozen models out."""

from simulator.scenario.catalog import BUILTIN_GPUS, GpuSpec
from simulator.scenario.errors import ScenarioError
from simulator.scenario.loader import load_scenario
from simulator.scenario.scenario import Scenario
from simulator.scenario.serialize import dump_scenario

__all__ = ["BUILTIN_GPUS", "GpuSpec", "Scenario", "ScenarioError", "dump_scenario", "load_scenario"]
