"""Fleetcast: discrete-event capacity planning for AI compute.

The public API is small: :func:`load_scenario` turns a YAML file (or a dict) into a
validated :class:`Scenario`; :func:`simulate` runs it over Monte Carlo paths and returns
:class:`Results` with ``.timeseries``, ``.pools``, ``.summary`` and ``.save(dir)``.
"""

from simulator.api import load_scenario
from simulator.montecarlo import simulate
from simulator.results import Results
from simulator.scenario import Scenario, ScenarioError

__all__ = ["Results", "Scenario", "ScenarioError", "load_scenario", "simulate"]
__version__ = "0.1.0"
