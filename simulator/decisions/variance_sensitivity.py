"""Variance-based sensitivity of a scenario: which uncertain inputs its risk comes from.

One-at-a-time sensitivity (:mod:`simulator.decisions.sensitivity`) asks "what if this input
alone were at its P10 or its P90, the others at their medians?". This asks "how much of the
uncertainty of the margin comes from this input?", over the inputs' whole ranges and with
the others varying too, so that an input that matters only together with another (a lead
time that hurts only when growth is fast) is seen. The answer is each input's first-order
and total Sobol index (:mod:`simulator.decisions.sobol`) for the gross margin, the hours
short and the share of requests unserved.

The design has ``samples`` rows j in each of A, B and the k matrices A_B^i: n·(k + 2) runs,
each one path (:mod:`simulator.runs.design`), rows A_j, B_j and A_B^i_j all as path j, so
they share that path's demand noise and failures. Input i's A and B columns are drawn from
a stream of its own, keyed by its field path: adding an input leaves the other inputs'
columns as they were.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from simulator.decisions.sobol import (
    LEVEL,
    RESAMPLES,
    SaltelliDesign,
    design_columns,
    saltelli_matrices,
    sobol_estimates,
)
from simulator.decisions.sobol_groups import grouped_design
from simulator.path.streams import stream_key
from simulator.runs.design import evaluate_design
from simulator.runs.path_figures import check_figure, parse_figure
from simulator.scenario import Scenario, ScenarioError
from simulator.scenario.labels import field_label
from simulator.scenario.uncertain import typed_value

#: First entry of the spawn key of every Sobol-design stream (paths use their index there,
#: at most 1,000,000, so the streams never meet a path's).
SOBOL_DESIGN_KEY = stream_key("sobol-design")  # 3,896,933,270
DEFAULT_SAMPLES = 256
#: Each output from a row's path totals, and how a reader calls it.
OUTPUTS: dict[str, tuple[str, Callable[[pd.DataFrame], pd.Series]]] = {
    "gross_margin_usd": ("gross margin", lambda totals: totals["gross_margin_usd"]),
    "shortfall_hours": ("hours short", lambda totals: totals["shortfall_hours"]),
    "unserved_share": ("share of requests unserved", lambda totals: 1.0 - totals["share_served"]),
}
#: ``run_rows(scenario, values, path_of_row, seed, figures)`` -> one row of path totals per
#: design row, in row order, with a column per figure (:mod:`simulator.runs.path_figures`).
RunRows = Callable[..., pd.DataFrame]


def _require_uncertain(scenario: Scenario) -> None:
    if not scenario.uncertain:
        raise ScenarioError(("uncertain",), "the scenario has no uncertain inputs to vary "
                            "(write a field as {dist: lognormal, median: …, p90: …})")


def input_columns(scenario: Scenario, field: str, samples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """One input's A and B columns (as the field takes them: whole numbers for counts), drawn
    from its own stream ``SeedSequence(seed, spawn_key=(SOBOL_DESIGN_KEY, stream_key(field)))``."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(SOBOL_DESIGN_KEY, stream_key(field))))
    a, b = design_columns(scenario.uncertain[field], samples, rng)
    typed = np.vectorize(lambda value: float(typed_value(Scenario, field, float(value))), otypes=[np.float64])
    return typed(a), typed(b)


def sobol_design(scenario: Scenario, samples: int, seed: int) -> SaltelliDesign:
    """The radial design over the scenario's uncertain inputs (in field-path order)."""
    _require_uncertain(scenario)
    if samples < 2:
        raise ScenarioError((), f"a variance-based sensitivity needs at least 2 samples, got {samples}")
    return saltelli_matrices({field: input_columns(scenario, field, samples, seed)
                              for field in sorted(scenario.uncertain)})


def variance_sensitivity(scenario: Scenario, samples: int = DEFAULT_SAMPLES, seed: int | None = None,
                         run_rows: RunRows | None = None, resamples: int = RESAMPLES,
                         level: float = LEVEL, figures: Sequence[str] = (),
                         groups: Mapping[str, Sequence[str]] | None = None) -> pd.DataFrame:
    """First-order and total Sobol indices of each uncertain input, for each output.

    Args:
        scenario: a scenario with uncertain inputs (else a ScenarioError at ``uncertain``).
        samples: rows n of each design matrix; the scenario is run n·(k + 2) times.
        seed: the seed of the design, the paths and the bootstrap (default: the scenario's).
        run_rows: runs the design (default :func:`simulator.runs.design.evaluate_design`,
            which takes ``executor``, ``workers`` and ``progress``: bind them with a lambda).
        resamples, level: the bootstrap of the confidence intervals.
        figures: the figures to explain (:mod:`simulator.runs.path_figures`: ``short:2027``,
            ``lowest_cash``, ``net_income_usd:2028`` …); default the gross margin, the hours short
            and the share unserved over the horizon.
        groups: inputs measured as one (:mod:`simulator.decisions.sobol_groups`); fields that
            share a draw are grouped, correlated inputs must be.

    Returns one row per (output, input): ``output``, ``input`` (field path), ``label``,
    ``first_order``, ``first_order_lo``, ``first_order_hi``, ``total``, ``total_lo``,
    ``total_hi``, ``output_mean``, ``output_variance``, ``samples``, ``runs`` and ``level``. Inputs come
    in decreasing order of their total index for the gross margin.
    """
    seed = scenario.seed if seed is None else int(seed)
    _require_uncertain(scenario)
    if samples < 2:
        raise ScenarioError((), f"a variance-based sensitivity needs at least 2 samples, got {samples}")
    grouped = bool(groups) or bool(scenario.correlations) or any(
        spec.draw is not None for spec in scenario.uncertain.values())
    design = (grouped_design(scenario, groups or {}, samples, seed, SOBOL_DESIGN_KEY) if grouped
              else sobol_design(scenario, samples, seed))
    outputs = _outputs(scenario, figures)
    wanted = tuple(f for f in outputs if f not in OUTPUTS)
    extra = {"figures": wanted} if wanted else {}
    totals = (run_rows or evaluate_design)(scenario, design.columns(), design.sample_of_row(), seed, **extra)
    frames = []
    for output, pick in outputs.items():
        values = pick(totals).to_numpy(np.float64)
        if not np.isfinite(values).all():
            raise ScenarioError(("--figure",), f"{output!r} is undefined on some runs of the design (no month "
                                "of the period has it, e.g. no debt service for a DSCR)")
        # The same resamples for every output: a fresh generator from the same stream.
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(SOBOL_DESIGN_KEY,)))
        estimates = sobol_estimates(*design.split(values), rng, resamples, level)
        frames.append(estimates.frame(design.names).assign(output=output, output_mean=estimates.mean,
                                                           output_variance=estimates.variance))
    table = pd.concat(frames, ignore_index=True)
    table.insert(1, "label", [_input_label(scenario, design, name) for name in table["input"]])
    table = table.assign(samples=design.n, runs=design.runs, level=level)
    first = table[table["output"] == next(iter(outputs))].set_index("input")["total"]
    rank = {field: i for i, field in enumerate(first.sort_values(ascending=False, na_position="last").index)}
    table = table.assign(_output=table["output"].map(list(outputs).index), _rank=table["input"].map(rank))
    table = table.sort_values(["_output", "_rank"]).drop(columns=["_output", "_rank"]).reset_index(drop=True)
    return table[["output", "input", "label", *[c for c in table.columns if c not in ("output", "input", "label")]]]


def _outputs(scenario: Scenario, figures: Sequence[str]) -> dict[str, Callable[[pd.DataFrame], pd.Series]]:
    """Each output to explain and how its value is read from a row's totals."""
    if not figures:
        return {name: pick for name, (_, pick) in OUTPUTS.items()}
    start, end = scenario.horizon.start, scenario.horizon.end_time
    out = {}
    for text in dict.fromkeys(figures):
        if text in OUTPUTS:
            out[text] = OUTPUTS[text][1]
            continue
        figure = parse_figure(text, start, end)
        check_figure(figure)
        out[text] = lambda totals, name=text: totals[name]
    return out


def _input_label(scenario: Scenario, design, name: str) -> str:
    """A field's label; a group's name with its fields' labels."""
    if name in scenario.uncertain:
        return field_label(scenario, name)
    fields = [design.fields[i] for i in design.columns_of[design.names.index(name)]]
    return f"{name}: " + ", ".join(field_label(scenario, field) for field in fields)


def output_name(output: str) -> str:
    """How a reader calls an output: a default output's name, else the figure as written."""
    return OUTPUTS[output][0] if output in OUTPUTS else output


def sobol_png(table: pd.DataFrame, path: Path, output: str | None = None) -> None:
    """``sobol.png``: :func:`sobol_figure` of ``output`` (default: the table's first)."""
    sobol_figure(table, output).savefig(path, dpi=120)


def sobol_figure(table: pd.DataFrame, output: str | None = None):
    """Bars of each input's first-order and total index for ``output`` (default: the table's
    first), with their intervals. Title, note and legend sit outside the bars (constrained
    layout; the legend below the axes), the title wrapped to the figure's width."""
    import textwrap

    from matplotlib.figure import Figure

    output = output or str(table["output"].iloc[0])
    rows = table[table["output"] == output].iloc[::-1]
    name = output_name(output)
    fig = Figure(figsize=(9, 0.6 * len(rows) + 2.4), layout="constrained")
    ax = fig.subplots()
    y = np.arange(len(rows))
    for offset, column, color, text in ((0.2, "first_order", "#1b9e77", "first order S1: this input alone"),
                                        (-0.2, "total", "#7570b3", "total ST: alone and together with other inputs")):
        value = rows[column].to_numpy(np.float64)
        errors = np.clip([value - rows[f"{column}_lo"].to_numpy(np.float64),
                          rows[f"{column}_hi"].to_numpy(np.float64) - value], 0, None)
        ax.barh(y + offset, np.nan_to_num(value), height=0.38, color=color, label=text,
                xerr=np.nan_to_num(errors), error_kw={"ecolor": "black", "capsize": 3, "linewidth": 1})
    ax.set_yticks(y, [textwrap.fill(str(label), 45) for label in rows["label"]])
    ax.axvline(0, color="black", linewidth=1)
    ends = rows[["first_order_lo", "first_order_hi", "total_lo", "total_hi"]].to_numpy(np.float64)
    ax.set_xlim(min(-0.05, float(np.nanmin(ends, initial=0.0)) - 0.03), max(1.05, float(np.nanmax(ends, initial=0.0)) + 0.03))
    ax.set_xlabel(f"share of the variance of the {name}")
    level = f"{float(rows['level'].iloc[0]):.0%}"
    first_sum = rows["first_order"].sum(min_count=1)
    # 1 − ΣS1 (and any ST − S1) holds interactions, the paths' own randomness and the
    # estimators' noise together: it is labelled as the difference it is, not as interactions.
    note = (f"{name} does not vary: no variance to share" if rows["output_variance"].iloc[0] == 0 else
            f"1\u00a0−\u00a0ΣS1\u00a0=\u00a0{1 - first_sum:.2f}: the share no input explains alone (interactions, "
            "the paths' own randomness and estimator noise); a bar's total\u00a0−\u00a0first\u00a0order is read the same way")
    samples, runs = (int(rows[c].iloc[0]) for c in ("samples", "runs"))
    heading = f"Where the uncertainty of the {name} comes from: {samples} samples, {runs} runs. Error bars: {level} intervals."
    # across the figure, each part wrapped to its width (no-break spaces keep a formula whole): never cut
    fig.suptitle("\n".join([*textwrap.wrap(heading, 105), *textwrap.wrap(note, 105)]), fontsize=9)
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=2, frameon=False)
    return fig


def variance_summary(table: pd.DataFrame, scenario: Scenario, seed: int) -> dict:
    """The content of ``summary.json``: the design, each output's mean and variance, the indices."""
    outputs = {}
    for output, rows in table.groupby("output", sort=False):
        variance = float(rows["output_variance"].iloc[0])
        outputs[output] = {"mean": float(rows["output_mean"].iloc[0]), "variance": variance,
                           "first_order_sum": float(rows["first_order"].sum()) if variance > 0 else None}
    return {"scenario": scenario.name, "method": "variance", "seed": seed,
            "samples": int(table["samples"].iloc[0]), "runs": int(table["runs"].iloc[0]),
            "inputs": sorted(scenario.uncertain), "outputs": outputs,
            "indices": json.loads(table.to_json(orient="records"))}


def save_variance_sensitivity(directory: Path, table: pd.DataFrame, scenario: Scenario, seed: int | None = None) -> None:
    """``sensitivity.parquet``, ``sensitivity.csv``, ``sobol.png``, ``scenario.resolved.yaml``
    and ``summary.json``, atomically."""
    from simulator.output import staged_directory
    from simulator.scenario import dump_scenario

    seed = scenario.seed if seed is None else int(seed)
    with staged_directory(Path(directory)) as staging:
        table.to_parquet(staging / "sensitivity.parquet", index=False)
        table.to_csv(staging / "sensitivity.csv", index=False)
        sobol_png(table, staging / "sobol.png")
        (staging / "scenario.resolved.yaml").write_text(dump_scenario(scenario), encoding="utf-8")
        summary = variance_summary(table, scenario, seed)
        (staging / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
