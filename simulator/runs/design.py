"""A scenario evaluated at given input values: one path per row of an experimental design.

A design (see :mod:`simulator.decisions.sobol`) is a table of rows, each giving a value to
every uncertain input. Row ``r`` is run as one path: the scenario with its ``uncertain``
fields set to the row's values (and no variants), validated again, simulated as path
``path_of_row[r]`` of the run's seed, and reduced to that path's totals (the columns of
:func:`simulator.runs.summary.path_totals`).

Rows that share a path index share every other random stream of that path (demand noise,
failures, preemptions, slips, training arrivals: each is keyed by the path, never by the
row). A Sobol design gives rows A_j, B_j and every A_B^i_j path j, so the differences its
estimators take between them hold the path's own randomness fixed and measure only the
inputs that differ (common random numbers). Rows run on the same executors as paths
(:func:`simulator.runs.montecarlo._run_paths`), and a row's result depends only on the seed,
its values and its path index: never on the executor, the workers or the order rows finish.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from concurrent.futures import Executor
from typing import Any

import numpy as np
import pandas as pd

from simulator.economics.opex import monthly_opex
from simulator.economics.pnl import monthly_pnl
from simulator.path.compiled import compile_scenario
from simulator.path.engine import run_path
from simulator.runs.digest import book_terms, path_assets, path_timeseries
from simulator.runs.executors import local_workers
from simulator.runs.montecarlo import ProgressCallback, _run_paths
from simulator.runs.path_figures import figure_value, parse_figure
from simulator.runs.resources import check_resources
from simulator.runs.summary import path_totals
from simulator.scenario import Scenario, ScenarioError
from simulator.scenario.fieldpath import set_field
from simulator.scenario.uncertain import typed_value
from simulator.serving.resolve import load_scenario

#: Rows of the timeseries one task tabulates at most: short horizons run many design rows
#: per task and reduce them with one ``path_totals`` call (its fixed cost dominates a short
#: path); a long horizon runs one row per task.
TABLE_ROWS_PER_TASK = 2048
MAX_ROWS_PER_TASK = 64


class DesignTask:
    """What a worker needs to run the rows of a design (picklable).

    ``task.totals(seed, row)`` is one row's path totals; ``task(seed, i)`` runs the i-th
    batch of ``rows_per_task`` consecutive rows and returns their totals (each a dict with
    ``row`` and ``path``). Each path is tabulated on its own; the batch only shares the one
    call that sums every path's table by path, so a row's totals are the same in any batch.
    """

    def __init__(self, scenario: Scenario, values: Mapping[str, np.ndarray], path_of_row: np.ndarray,
                 rows_per_task: int | None = None, figures: tuple[str, ...] = ()) -> None:
        data = scenario.model_dump(mode="json")
        data["uncertain"] = {}
        data["correlations"] = []
        data["variants"] = {}
        self.text = json.dumps(data)  # a fresh copy per row: json.loads is quicker than deepcopy
        self._prior: np.ndarray | None = None  # the scenario as written's expected demand (re-planning's prior)
        self._scenario = scenario
        self.fields = sorted(values)
        self.values = {field: np.asarray(values[field], dtype=np.float64) for field in self.fields}
        self.path_of_row = np.asarray(path_of_row, dtype=np.int64)
        if any(len(column) != len(self.path_of_row) for column in self.values.values()):
            raise ValueError("every input needs one value per row of the design")
        self.step_s = scenario.horizon.step_s
        start, end = scenario.horizon.start, scenario.horizon.end_time
        self.figures = tuple(parse_figure(text, start, end) for text in figures)
        self._figure_values: dict[int, dict[str, float]] = {}
        self.rows_per_task = rows_per_task or max(1, min(MAX_ROWS_PER_TASK,
                                                         TABLE_ROWS_PER_TASK // scenario.horizon.n_steps))

    @property
    def n_tasks(self) -> int:
        return -(-len(self.path_of_row) // self.rows_per_task)

    def timeseries(self, seed: int, row: int) -> pd.DataFrame:
        """Row ``row`` simulated as path ``path_of_row[row]``: its timeseries, ``path`` = row."""
        data = json.loads(self.text)
        for field in self.fields:
            set_field(data, field, typed_value(Scenario, field, float(self.values[field][row])))
        try:
            scenario = load_scenario(data)
        except ScenarioError as exc:
            exc.message += f" (set for row {row} of the sensitivity design from the field's distribution under 'uncertain')"
            exc.line = None
            raise
        if self._prior is None:
            self._prior = compile_scenario(self._scenario).expected_demand
        plan = dataclasses.replace(compile_scenario(scenario), prior_demand=self._prior)
        result = run_path(plan, seed, int(self.path_of_row[row]))
        table = path_timeseries(result, scenario, plan)
        table["path"] = row
        if self.figures:
            self._figure_values[row] = self._path_figures(result, scenario, plan, table)
        return table

    def _path_figures(self, result, scenario: Scenario, plan, table: pd.DataFrame) -> dict[str, float]:
        """The figures that need more than the path's totals (those come in ``_reduce``)."""
        pnl = None
        if any(not f.from_totals and f.name != "short" for f in self.figures):
            pnl = monthly_pnl(table, scenario.financing, scenario.horizon.step_s,
                              opex=monthly_opex(scenario.opex, scenario.horizon), taxes=scenario.taxes,
                              terms=book_terms(scenario, plan),
                              assets={int(table["path"].iloc[0]): path_assets(result, scenario)})
        return {f.text: figure_value(f, table, pnl, {}) for f in self.figures if not f.from_totals}

    def totals(self, seed: int, row: int) -> dict[str, Any]:
        """One row's path totals (with ``row`` and ``path``)."""
        return self._reduce([self.timeseries(seed, row)], [row])[0]

    def __call__(self, seed: int, task: int) -> list[dict[str, Any]]:
        rows = range(task * self.rows_per_task, min(len(self.path_of_row), (task + 1) * self.rows_per_task))
        return self._reduce([self.timeseries(seed, row) for row in rows], list(rows))

    def _reduce(self, tables: list[pd.DataFrame], rows: list[int]) -> list[dict[str, Any]]:
        totals = path_totals(pd.concat(tables, ignore_index=True), self.step_s).to_dict(orient="index")
        out = []
        for row in rows:
            values = self._figure_values.pop(row, {})
            values.update({f.text: figure_value(f, tables[0], None, totals[row]) for f in self.figures if f.from_totals})
            out.append({"row": row, "path": int(self.path_of_row[row]), **totals[row], **values})
        return out


def evaluate_design(
    scenario: Scenario,
    values: Mapping[str, np.ndarray],
    path_of_row: np.ndarray,
    seed: int | None = None,
    executor: str | Executor | None = None,
    workers: int | None = None,
    progress: ProgressCallback | None = None,
    rows_per_task: int | None = None,
    figures: tuple[str, ...] = (),
) -> pd.DataFrame:
    """Run every row of a design; one row of path totals per design row, in row order.

    Args:
        scenario: the scenario (its uncertain fields are the ones ``values`` may set).
        values: each field path's value on every row.
        path_of_row: the path index each row is run as.
        seed: the run's seed (default: the scenario's).
        executor, workers: as for :func:`simulator.runs.montecarlo.simulate`.
        progress: called as ``progress(rows done, rows)``.
        rows_per_task: rows a worker runs per task (default: by the horizon's length).
        figures: figures of each row's path (:mod:`simulator.runs.path_figures`), a column each.
    """
    if not (isinstance(executor, Executor) or executor in (None, "serial", "local")
            or type(executor).__module__.startswith("distributed")):
        raise ValueError(f"executor must be 'serial', 'local' or an Executor, got {executor!r}")
    seed = scenario.seed if seed is None else int(seed)
    task = DesignTask(scenario, values, path_of_row, rows_per_task, figures)
    n_rows = len(task.path_of_row)
    processes = check_resources(scenario, 1, 0, local_workers(executor, workers, task.n_tasks)).workers
    counted = None if progress is None else (
        lambda done, total: progress(min(n_rows, done * task.rows_per_task), n_rows))
    rows = [row for batch in _run_paths(task, seed, task.n_tasks, executor, processes, counted) for row in batch]
    return pd.DataFrame(rows).sort_values("row").set_index("row")
