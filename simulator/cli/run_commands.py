"""``fleetcast validate``, ``run``, ``sweep`` and ``sensitivity``: thin commands over
the library (load the scenario, call the room that does the work, print a table).
"""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from simulator.cli.app import (
    ACCEPT_HELP,
    SET_HELP,
    KeepPaths,
    PathCount,
    console,
    errors,
    main,
    safe_dir_name,
)
from simulator.runs.limits import DEFAULT_KEEP_PATHS, DEFAULT_MAX_PATHS


@main.command()
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--set", "overrides", multiple=True, metavar="FIELD=VALUE", help=SET_HELP)
@click.option("--accept", "accept", multiple=True, metavar="NAME", help=ACCEPT_HELP)
def validate(scenario: Path, overrides: tuple[str, ...], accept: tuple[str, ...]) -> None:
    """Check SCENARIO and print what it resolved to (every default filled in)."""
    from simulator.scenario import dump_scenario
    from simulator.serving.resolve import load_scenario
    from simulator.units import readable_duration

    resolved = load_scenario(scenario, overrides, accept=accept)
    click.echo(dump_scenario(resolved), nl=False)
    h = resolved.horizon
    gpus = sum(pool.count for pool in resolved.fleet.pools)
    errors.print(
        f"ok: {resolved.name}: {h.n_steps:,} steps of {readable_duration(h.step_s)}, "
        f"{len(resolved.fleet.pools)} pools ({gpus:,} GPUs at start), {len(resolved.models)} models",
        markup=False,
        highlight=False,
    )


@main.command()
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Run directory (default outputs/<scenario name>/).")
@click.option("--paths", type=PathCount(), help="Monte Carlo paths (default: the scenario's), or 'auto': add paths "
              "in batches until --precision is met.")
@click.option("--precision", "precision", multiple=True, metavar="FIGURE=HALF_WIDTH",
              help="With --paths auto: the largest 90%-interval half-width of a figure, e.g. "
              "shortfall_probability=0.02, gross_margin_pct_p50=1, cost_usd_mean=1% (repeatable; "
              "default shortfall_probability=0.02 and gross_margin_pct_p50=1).")
@click.option("--max-paths", type=click.IntRange(min=1),
              help=f"With --paths auto: stop adding paths here, met or not (default {DEFAULT_MAX_PATHS:,}).")
@click.option("--seed", type=click.IntRange(min=0), help="Root seed (default: the scenario's).")
@click.option("--workers", type=click.IntRange(min=1), help="Local worker processes, for the paths and for writing "
              "the variants' files (default: CPU count).")
@click.option("--scheduler", metavar="ADDR", help="Run paths on a Dask cluster, e.g. tcp://10.0.0.5:8786.")
@click.option("--keep-paths", "keep_paths", type=KeepPaths(), default=str(DEFAULT_KEEP_PATHS), show_default=True,
              metavar="N|all", help="Paths whose full series go into timeseries/pools/models/jobs.parquet "
              "(bands.parquet, pnl.parquet and summary.json always cover every path).")
@click.option("--no-report", is_flag=True, help="Skip report.html and plots/ (render them later with `fleetcast report`).")
@click.option("--set", "overrides", multiple=True, metavar="FIELD=VALUE", help=SET_HELP)
@click.option("--accept", "accept", multiple=True, metavar="NAME", help=ACCEPT_HELP)
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors.")
def run(
    scenario: Path,
    out: Path | None,
    paths: int | str | None,
    precision: tuple[str, ...],
    max_paths: int | None,
    seed: int | None,
    workers: int | None,
    scheduler: str | None,
    keep_paths: int | None,
    no_report: bool,
    overrides: tuple[str, ...],
    accept: tuple[str, ...],
    quiet: bool,
) -> None:
    """Simulate SCENARIO and write its run directory."""
    from simulator.decisions.runner import run_scenario
    from simulator.decisions.variants import VariantResults
    from simulator.output import check_output_directory
    from simulator.report.headline import auto_paths_note
    from simulator.report.terminal import headline_view, years_view
    from simulator.runs.adaptive import Precision, PrecisionError, parse_targets
    from simulator.serving.resolve import load_scenario

    if (precision or max_paths is not None) and paths != "auto":
        raise PrecisionError("--precision and --max-paths need --paths auto")
    targets = Precision(parse_targets(list(precision)), max_paths=max_paths or DEFAULT_MAX_PATHS) \
        if paths == "auto" else None
    resolved = load_scenario(scenario, overrides, accept=accept)
    directory = out or Path("outputs") / safe_dir_name(resolved.name)
    check_output_directory(directory, inputs=[scenario])
    results = run_scenario(
        resolved, paths=paths, seed=seed, workers=workers, scheduler=scheduler, keep_paths=keep_paths,
        show_progress=not quiet, precision=targets,
    )
    results.save(directory, report=not no_report, processes=workers)
    if quiet:
        return
    summaries = results.summaries() if isinstance(results, VariantResults) else {"": results.summary}
    for name, summary in summaries.items():
        title = f"{resolved.name}{' · ' + name if name else ''}: {summary['paths']} paths"
        console.print(headline_view(summary, title, console.width))
        years = years_view(summary, console.width)
        if years is not None:
            console.print(years)
        note = auto_paths_note(summary)
        if note:
            console.print(note, markup=False, highlight=False)
        kept = summary["kept_paths"]
        if kept < summary["paths"]:
            which = f"paths 0–{kept - 1}" if kept else "no path"
            console.print(f"per-path series kept for {which} of {summary['paths']} (--keep-paths); "
                          "bands.parquet, pnl.parquet and summary.json cover all", markup=False, highlight=False)
    console.print(f"wrote {directory}/" + ("" if no_report else f" (open {directory / 'report.html'})"),
                  markup=False, highlight=False)


@main.command()
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--param", "params", multiple=True, required=True, metavar="FIELD=V1,V2,...",
              help="A field and the values to try (repeatable; YAML values).")
@click.option("--zip", "zipped", is_flag=True, help="Pair the value lists in order instead of a full grid.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Directory (default outputs/<name>-sweep/).")
@click.option("--paths", type=click.IntRange(min=1), help="Paths per point (default: the scenario's).")
@click.option("--seed", type=click.IntRange(min=0), help="Root seed (the same at every point).")
@click.option("--workers", type=click.IntRange(min=1), help="Local worker processes.")
@click.option("--set", "overrides", multiple=True, metavar="FIELD=VALUE", help=SET_HELP)
@click.option("--accept", "accept", multiple=True, metavar="NAME", help=ACCEPT_HELP)
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors.")
def sweep(scenario: Path, params, zipped: bool, out: Path | None, paths, seed, workers, overrides, accept,
          quiet: bool) -> None:
    """Run SCENARIO at every combination of parameter values; one row of headline figures each."""
    from simulator.decisions.runner import simulate_points
    from simulator.decisions.sweep import parse_parameters, run_sweep, save_sweep, sweep_points
    from simulator.output import check_output_directory
    from simulator.serving.resolve import load_scenario

    base = load_scenario(scenario, overrides, accept=accept)
    directory = out or Path("outputs") / f"{safe_dir_name(base.name)}-sweep"
    check_output_directory(directory, inputs=[scenario])
    parameters = parse_parameters(params)
    table = run_sweep(scenario, sweep_points(parameters, zipped), overrides=overrides, accept=accept, simulate_points=lambda points: (
        simulate_points({key: point.model_copy(update={"variants": {}}) for key, point in points.items()},
                        paths=paths, seed=seed, workers=workers, show_progress=not quiet)))
    save_sweep(directory, table, base, parameters)
    if not quiet:
        from simulator.report.terminal import sweep_view
        from simulator.scenario.labels import field_label

        console.print(sweep_view(f"{base.name}: {len(table)} points", table,
                                 {field: field_label(base, field) for field in parameters}, console.width))
        console.print(f"wrote {directory}/", markup=False, highlight=False)


@main.command()
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--method", type=click.Choice(["oat", "variance"]), default="oat", show_default=True,
              help="oat: each input at its P10 and P90, the others at medians (tornado); variance: first-order "
              "and total Sobol indices, the share of the margin's variance each input explains.")
@click.option("--samples", type=click.IntRange(min=2, max=1_000_000), metavar="N",
              help="Design samples for --method variance (default 256): N·(inputs + 2) runs of one path each.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Directory (default outputs/<name>-sensitivity/).")
@click.option("--paths", type=click.IntRange(min=1), help="Paths per run for --method oat (default: the scenario's).")
@click.option("--seed", type=click.IntRange(min=0), help="Root seed (the same for every run).")
@click.option("--workers", type=click.IntRange(min=1), help="Local worker processes.")
@click.option("--figure", "figures", multiple=True, metavar="NAME[:PERIOD]",
              help="--method variance: explain this figure (repeatable): short:2027, lowest_cash, worst_dscr:2027, "
              "breach:2027Q3, net_income_usd:2028, any pnl.parquet column (default: the margin, hours short and "
              "share unserved over the horizon).")
@click.option("--group", "groups", multiple=True, metavar="NAME=FIELD,FIELD",
              help="--method variance: measure these inputs as one (repeatable); correlated inputs must be grouped.")
@click.option("--set", "overrides", multiple=True, metavar="FIELD=VALUE", help=SET_HELP)
@click.option("--accept", "accept", multiple=True, metavar="NAME", help=ACCEPT_HELP)
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors.")
def sensitivity(scenario: Path, method: str, samples: int | None, out: Path | None, paths, seed, workers, figures,
                groups, overrides, accept, quiet: bool) -> None:
    """How margin and shortfall depend on each uncertain input: one at a time (oat) or by variance."""
    from simulator.errors import InputError
    from simulator.output import check_output_directory
    from simulator.serving.resolve import load_scenario

    if method == "oat" and samples is not None:
        raise InputError("--samples is for --method variance (one-at-a-time runs each input at its P10 and P90)")
    if method == "oat" and (figures or groups):
        raise InputError("--figure and --group are for --method variance")
    parsed_groups = {}
    for text in groups:
        name, _, fields = text.partition("=")
        if not name or not fields:
            raise InputError(f"--group {text!r}: expected NAME=FIELD,FIELD")
        parsed_groups[name.strip()] = [field.strip() for field in fields.split(",") if field.strip()]
    if method == "variance" and paths is not None:
        raise InputError("--paths is for --method oat (--method variance runs one path per design row; "
                         "set --samples)")
    base = load_scenario(scenario, overrides, accept=accept)
    directory = out or Path("outputs") / f"{safe_dir_name(base.name)}-sensitivity"
    check_output_directory(directory, inputs=[scenario])
    if method == "variance":
        _variance_sensitivity(base, directory, samples, seed, workers, quiet, figures, parsed_groups)
        return
    from simulator.decisions.runner import simulate_points
    from simulator.decisions.sensitivity import save_sensitivity, sensitivity_table

    table = sensitivity_table(base, simulate_points=lambda points: simulate_points(
        points, paths=paths, seed=seed, workers=workers, show_progress=not quiet))
    save_sensitivity(directory, table, base)
    if not quiet:
        from simulator.report.terminal import sensitivity_view

        console.print(sensitivity_view(f"{base.name}: sensitivity (P50 gross margin, USD)", table, console.width))
        console.print(f"wrote {directory}/ (tornado.png)", markup=False, highlight=False)


def _share(value: float) -> str:
    return "—" if value != value else f"{value:.2f}"


def _variance_sensitivity(base, directory: Path, samples: int | None, seed: int | None, workers: int | None,
                          quiet: bool, figures: tuple[str, ...] = (), groups: dict | None = None) -> None:
    from simulator.decisions.runner import progress_bar
    from simulator.decisions.variance_sensitivity import (
        DEFAULT_SAMPLES,
        output_name,
        save_variance_sensitivity,
        variance_sensitivity,
    )
    from simulator.runs.design import evaluate_design

    seed = base.seed if seed is None else seed
    with progress_bar("runs", show=not quiet) as progress:
        table = variance_sensitivity(
            base, samples or DEFAULT_SAMPLES, seed,
            lambda scenario, values, path_of_row, seed, figures=(): evaluate_design(
                scenario, values, path_of_row, seed, workers=workers, progress=progress, figures=figures),
            figures=figures, groups=groups)
    save_variance_sensitivity(directory, table, base, seed)
    if quiet:
        return
    output = str(table["output"].iloc[0])
    margin = table[table["output"] == output]
    first = margin.iloc[0]
    view = Table(title=f"{base.name}: share of the variance of {output_name(output)} ({int(first['samples'])} "
                       f"samples, {int(first['runs'])} runs, {float(first['level']):.0%} intervals)")
    for column in ("input", "S1 (alone)", "ST (with interactions)"):
        view.add_column(column, justify="left" if column == "input" else "right")
    for _, row in margin.iterrows():
        view.add_row(str(row["label"]), *(f"{_share(row[c])} [{_share(row[c + '_lo'])}, {_share(row[c + '_hi'])}]"
                                          for c in ("first_order", "total")))
    console.print(view)
    console.print(f"wrote {directory}/ (sobol.png)", markup=False, highlight=False)
