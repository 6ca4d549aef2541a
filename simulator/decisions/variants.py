"""Named variants of a scenario, run side by side with common random numbers.

A scenario's ``variants`` map names to field overrides (``{"fleet.pools[0].count": 512}``).
Each variant is the base scenario with its overrides applied, simulated with the same seed:
path *i* of every variant draws the same demand, failures and slips for the pools and models
they share (streams are keyed by name), so the differences between variants come from the
plans, not from luck. Two identical variants give identical results.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from simulator.output import staged_directory
from simulator.report.headline import headline_figures
from simulator.runs.forked import run_side_by_side
from simulator.runs.results import Results
from simulator.scenario import Scenario
from simulator.serving.resolve import load_scenario

BASE = "base"


def variant_scenarios(scenario: Scenario) -> dict[str, Scenario]:
    """The base scenario (without variants) and each variant, validated and resolved.

    Capacities derived from ``serving`` are derived again for each variant, as on every
    reading of a mapping (a variant may change the serving configuration or a pool's GPU;
    unchanged ones come from the disk cache), and files named by a variant are read relative
    to the scenario's folder.
    """
    base = scenario.model_dump(mode="json")
    base["variants"] = {}
    out = {BASE: load_scenario(base, base_dir=scenario.source_dir)}
    for name, overrides in scenario.variants.items():
        out[name] = load_scenario(base, overrides, base_dir=scenario.source_dir)
    return out


@dataclass
class VariantResults:
    """Results of the base and every variant, and their comparison."""

    results: dict[str, Results]
    scenario: Scenario | None = None  # the scenario with its variants

    def __post_init__(self) -> None:
        for name, result in self.results.items():  # summary.json and the report say which run it is
            summary = getattr(result, "summary", None)
            if isinstance(summary, dict):
                summary["variant"] = name

    def summaries(self) -> dict[str, dict[str, Any]]:
        return {name: result.summary for name, result in self.results.items()}

    @property
    def comparison(self) -> pd.DataFrame:
        return headline_figures({name: result.summary for name, result in self.results.items()})

    def save(self, directory: str | Path, report: bool = True, processes: int | None = None) -> Path:
        """The base run's files at the top, each variant under ``variants/<name>/``, and
        ``comparison.csv``; written atomically as one directory. Each run's files and report
        are written side by side with the others' on up to ``processes`` cores (default:
        all; :mod:`simulator.runs.forked`)."""
        with staged_directory(Path(directory)) as staging:
            self.comparison.to_csv(staging / "comparison.csv", index=True)  # the base's report reads it
            writes = [partial(result.write_files, staging / "variants" / name, report=report)
                      for name, result in self.results.items() if name != BASE]
            writes.append(partial(self.results[BASE].write_files, staging, self.scenario, report=report))
            run_side_by_side(writes, processes)
        return Path(directory)


#: The options of ``simulate`` that runs on one executor take too.
_TOGETHER = {"paths", "seed", "executor", "workers", "progress", "keep_paths"}


def simulate_variants(scenario: Scenario, **kwargs: Any) -> VariantResults:
    """Simulate the base and every variant with the same seed and paths (common random
    numbers), together on one executor (:func:`simulator.runs.batch.simulate_all`: then
    ``progress(done, total)`` counts the paths of all of them); with ``paths="auto"`` or an
    option only ``simulate`` has, such as ``precision``, one after another."""
    from simulator.runs.batch import simulate_all
    from simulator.runs.montecarlo import simulate

    scenarios = variant_scenarios(scenario)
    if set(kwargs) <= _TOGETHER and kwargs.get("paths") != "auto":
        return VariantResults(simulate_all(scenarios, **kwargs), scenario)
    return VariantResults({name: simulate(s, **kwargs) for name, s in scenarios.items()}, scenario)
