"""The ``fleetcast`` command: a thin shell over the library.

Exit codes: 0 success; 2 invalid input (one line on stderr naming the field path and YAML
line, never a traceback); 1 internal error; 130 interrupted. Set ``FLEETCAST_DEBUG=1`` to
see the traceback of an internal error.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import traceback
import warnings
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from simulator.errors import InputError, RunFailedError
from simulator.results import DEFAULT_KEEP_PATHS
from simulator.serving.report import report_rows
from simulator.variants import VariantResults

console = Console()
errors = Console(stderr=True)


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised as an exception so every ``finally`` runs."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise _Terminated()


def _fail(message: str, code: int) -> None:
    errors.print(f"error: {message}", markup=False, highlight=False, soft_wrap=True)
    sys.exit(code)


_default_showwarning = warnings.showwarning


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ANN001
    """Notes about a run (fewer workers than asked, say) as one plain line on stderr."""
    if category.__name__ == "FleetcastNote":
        errors.print(f"note: {message}", markup=False, highlight=False, soft_wrap=True)
    else:
        _default_showwarning(message, category, filename, lineno, file, line)


class FleetcastGroup(click.Group):
    """Maps library exceptions to exit codes and one-line messages."""

    def invoke(self, ctx: click.Context) -> object:
        signal.signal(signal.SIGTERM, _on_sigterm)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        warnings.showwarning = _show_warning
        try:
            return super().invoke(ctx)
        except InputError as exc:
            _fail(str(exc), 2)
        except KeyboardInterrupt:
            _fail("interrupted; nothing was written and earlier outputs are untouched", 130)
        except RunFailedError as exc:
            _fail(f"{exc}; nothing was written and earlier outputs are untouched", 1)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except Exception as exc:  # noqa: BLE001 - the last line of defence
            if os.environ.get("FLEETCAST_DEBUG"):
                traceback.print_exc()
            _fail(f"internal error: {type(exc).__name__}: {exc} (FLEETCAST_DEBUG=1 shows the traceback)", 1)
        return None


@click.group(cls=FleetcastGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="fleetcast")
def main() -> None:
    """Fleetcast: capacity planning for AI compute.

    Simulate a GPU fleet against growing demand: when it runs short, what it costs,
    and what margin is left, with Monte Carlo risk bands.
    """


class _KeepPaths(click.ParamType):
    """A count of paths, or ``all`` (None)."""

    name = "N|all"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> int | None:
        if value is None or isinstance(value, int):
            return value
        text = str(value).strip().lower()
        if text == "all":
            return None
        if text.isascii() and text.isdigit():
            return int(text)
        self.fail(f"expected a number of paths or 'all', got {value!r}", param, ctx)
        return None


_SET_HELP = "Override a scenario field before validation, e.g. --set horizon.duration=90d (repeatable)."


@main.command()
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--set", "overrides", multiple=True, metavar="FIELD=VALUE", help=_SET_HELP)
def validate(scenario: Path, overrides: tuple[str, ...]) -> None:
    """Check SCENARIO and print what it resolved to (every default filled in)."""
    from simulator.api import load_scenario
    from simulator.scenario import dump_scenario

    resolved = load_scenario(scenario, overrides)
    click.echo(dump_scenario(resolved), nl=False)
    h = resolved.horizon
    gpus = sum(pool.count for pool in resolved.fleet.pools)
    errors.print(
        f"ok: {resolved.name}: {h.n_steps:,} steps of {h.step_s:g}s, "
        f"{len(resolved.fleet.pools)} pools ({gpus:,} GPUs at start), {len(resolved.models)} models",
        markup=False,
        highlight=False,
    )


@main.command()
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Run directory (default outputs/<scenario name>/).")
@click.option("--paths", type=click.IntRange(min=1), help="Monte Carlo paths (default: the scenario's).")
@click.option("--seed", type=click.IntRange(min=0), help="Root seed (default: the scenario's).")
@click.option("--workers", type=click.IntRange(min=1), help="Local worker processes (default: CPU count).")
@click.option("--scheduler", metavar="ADDR", help="Run paths on a Dask cluster, e.g. tcp://10.0.0.5:8786.")
@click.option("--keep-paths", "keep_paths", type=_KeepPaths(), default=str(DEFAULT_KEEP_PATHS), show_default=True,
              metavar="N|all", help="Paths whose full series go into timeseries/pools/models/jobs.parquet "
              "(bands.parquet, pnl.parquet and summary.json always cover every path).")
@click.option("--no-report", is_flag=True, help="Skip report.html and plots/ (render them later with `fleetcast report`).")
@click.option("--set", "overrides", multiple=True, metavar="FIELD=VALUE", help=_SET_HELP)
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors.")
def run(
    scenario: Path,
    out: Path | None,
    paths: int | None,
    seed: int | None,
    workers: int | None,
    scheduler: str | None,
    keep_paths: int | None,
    no_report: bool,
    overrides: tuple[str, ...],
    quiet: bool,
) -> None:
    """Simulate SCENARIO and write its run directory."""
    from simulator.api import load_scenario
    from simulator.output import check_output_directory
    from simulator.runner import run_scenario
    from simulator.summary import headline

    resolved = load_scenario(scenario, overrides)
    directory = out or Path("outputs") / _safe_dir_name(resolved.name)
    check_output_directory(directory)
    results = run_scenario(
        resolved, paths=paths, seed=seed, workers=workers, scheduler=scheduler, keep_paths=keep_paths,
        show_progress=not quiet,
    )
    results.save(directory, report=not no_report)
    if quiet:
        return
    summaries = results.summaries() if isinstance(results, VariantResults) else {"": results.summary}
    for name, summary in summaries.items():
        title = f"{resolved.name}{' · ' + name if name else ''}: {summary['paths']} paths"
        table = Table(title=title, show_header=False)
        table.add_column(style="bold")
        table.add_column()
        for label, text in headline(summary):
            table.add_row(label, text)
        console.print(table)
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
@click.option("--set", "overrides", multiple=True, metavar="FIELD=VALUE", help=_SET_HELP)
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors.")
def sweep(scenario: Path, params, zipped: bool, out: Path | None, paths, seed, workers, overrides, quiet: bool) -> None:
    """Run SCENARIO at every combination of parameter values; one row of headline figures each."""
    from simulator.api import load_scenario
    from simulator.output import check_output_directory
    from simulator.runner import run_scenario
    from simulator.sweep import parse_parameters, run_sweep, save_sweep, sweep_points

    base = load_scenario(scenario, overrides)
    directory = out or Path("outputs") / f"{_safe_dir_name(base.name)}-sweep"
    check_output_directory(directory)
    parameters = parse_parameters(params)
    table = run_sweep(scenario, sweep_points(parameters, zipped),
                      lambda point: run_scenario(point.model_copy(update={"variants": {}}), paths=paths, seed=seed,
                                                 workers=workers, show_progress=False),
                      overrides)
    save_sweep(directory, table, base, parameters)
    if not quiet:
        shown = [*parameters, "share_served_p50", "first_shortfall_p50", "gross_margin_pct_p50",
                 "gross_margin_usd_p10", "cost_per_1m_tokens_usd_p50"]
        view = Table(title=f"{base.name}: {len(table)} points")
        for column in shown:
            view.add_column(column.replace("_", " "), justify="right")
        for _, row in table[shown].iterrows():
            view.add_row(*(_cell(row[column]) for column in shown))
        console.print(view)
        console.print(f"wrote {directory}/", markup=False, highlight=False)


@main.command()
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Directory (default outputs/<name>-sensitivity/).")
@click.option("--paths", type=click.IntRange(min=1), help="Paths per run (default: the scenario's).")
@click.option("--seed", type=click.IntRange(min=0), help="Root seed (the same for every run).")
@click.option("--workers", type=click.IntRange(min=1), help="Local worker processes.")
@click.option("--set", "overrides", multiple=True, metavar="FIELD=VALUE", help=_SET_HELP)
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors.")
def sensitivity(scenario: Path, out: Path | None, paths, seed, workers, overrides, quiet: bool) -> None:
    """Swing of margin and shortfall as each uncertain input goes from its P10 to its P90."""
    from simulator.api import load_scenario
    from simulator.output import check_output_directory
    from simulator.runner import run_scenario
    from simulator.sensitivity import save_sensitivity, sensitivity_table

    base = load_scenario(scenario, overrides)
    directory = out or Path("outputs") / f"{_safe_dir_name(base.name)}-sensitivity"
    check_output_directory(directory)
    table = sensitivity_table(base, lambda point: run_scenario(point, paths=paths, seed=seed, workers=workers,
                                                               show_progress=False))
    save_sensitivity(directory, table, base)
    if not quiet:
        view = Table(title=f"{base.name}: sensitivity (P50 gross margin, USD)")
        for column in ("input", "input p10", "input p90", "margin at p10", "margin at p90", "swing"):
            view.add_column(column, justify="left" if column == "input" else "right")
        for _, row in table.iterrows():
            view.add_row(str(row["input"]), _cell(row["input_p10"]), _cell(row["input_p90"]),
                         _cell(row["gross_margin_usd_p10"]), _cell(row["gross_margin_usd_p90"]),
                         _cell(row["gross_margin_usd_swing"]))
        console.print(view)
        console.print(f"wrote {directory}/ (tornado.png)", markup=False, highlight=False)


@main.command(name="plan")
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--action", "actions", multiple=True, required=True, metavar="NAME=POOL@DATE:STEP:MAX",
              help="A candidate: add STEP-sized batches (up to MAX) of GPUs to POOL from DATE (repeatable).")
@click.option("--target", type=click.FloatRange(0, 1), default=0.1, show_default=True,
              help="Highest acceptable probability of any shortfall over the horizon.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Directory (default outputs/<name>-plan/).")
@click.option("--paths", type=click.IntRange(min=1), help="Paths per candidate (default: the scenario's).")
@click.option("--seed", type=click.IntRange(min=0), help="Root seed of the search.")
@click.option("--set", "overrides", multiple=True, metavar="FIELD=VALUE", help=_SET_HELP)
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors.")
def plan_command(scenario: Path, actions, target: float, out, paths, seed, overrides, quiet: bool) -> None:
    """Find the cheapest combination of candidate purchases that meets a shortfall-risk target."""
    from simulator.api import load_scenario
    from simulator.montecarlo import simulate
    from simulator.output import check_output_directory
    from simulator.planner import apply_actions, parse_action, plan, save_plan

    base = load_scenario(scenario, overrides)
    directory = out or Path("outputs") / f"{_safe_dir_name(base.name)}-plan"
    check_output_directory(directory)
    candidates = [parse_action(text) for text in actions]
    search_seed = base.seed if seed is None else seed

    def evaluate(point):
        summary = simulate(point.model_copy(update={"variants": {}}), paths=paths, seed=search_seed).summary
        return summary["first_shortfall_time"]["probability"], summary["quantiles"]["cost_usd"]["p50"]

    result = plan(base.model_copy(update={"variants": {}}), candidates, target, evaluate)
    planned = apply_actions(base.model_copy(update={"variants": {}}), candidates, result.quantities)
    check = simulate(planned, paths=paths, seed=search_seed + 1_000_003)
    save_plan(directory, check, result, target)
    if not quiet:
        fresh = check.summary["first_shortfall_time"]["probability"]
        met = result.risk <= target and fresh <= target
        title = f"{base.name}: cheapest plan for P(shortfall) <= {target:g}" if met else (
            f"{base.name}: TARGET NOT MET (P(shortfall) <= {target:g}); the best found")
        view = Table(title=title, show_header=False)
        for action in candidates:
            view.add_row(action.name, f"{result.quantities[action.name]:,} GPUs to {action.pool} from {action.at}")
        view.add_row("P(shortfall), search seeds", f"{result.risk:.1%}")
        view.add_row("P(shortfall), fresh seeds", f"{fresh:.1%}")
        view.add_row("total cost P50", f"${result.cost_usd:,.0f}")
        view.add_row("plans simulated", str(result.evaluations))
        console.print(view)
        console.print(f"wrote {directory}/", markup=False, highlight=False)


def _cell(value: object) -> str:
    if value is None or isinstance(value, float) and value != value:
        return "—"
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    return str(value)[:10] if isinstance(value, str) and "T" in value else str(value)


@main.command()
@click.option("--model", "llm", required=True, help="Model name, e.g. llama-3.1-70b (case-insensitive).")
@click.option("--gpu", required=True, help="GPU name, e.g. H100 (case-insensitive).")
@click.option("--tp", type=click.IntRange(min=1), default=1, show_default=True, help="Tensor-parallel GPUs per replica.")
@click.option("--dtype", type=click.Choice(["bf16", "fp16", "fp8"]), default="bf16", show_default=True)
@click.option("--kv-dtype", type=click.Choice(["bf16", "fp16", "fp8"]), help="KV-cache dtype (default: --dtype).")
@click.option("--max-batch", type=click.IntRange(min=1), default=256, show_default=True)
@click.option("--chunk", "chunk", type=click.IntRange(min=1),
              help="Token budget per iteration (chunked prefill); with --scheduler vllm, --max-batched-tokens.")
@click.option("--scheduler", type=click.Choice(["vllm", "whole-prompt"]), default="vllm", show_default=True,
              help="vllm: V1 token budget, chunked prefill, prefix cache; whole-prompt: the contract semantics.")
@click.option("--max-batched-tokens", type=click.IntRange(min=1),
              help="vLLM max_num_batched_tokens per iteration (default 8192).")
@click.option("--prefix-caching", type=click.Choice(["on", "off"]), default="on", show_default=True)
@click.option("--kv-preemption", type=click.Choice(["on", "off"]), default="on", show_default=True,
              help="on: KV blocks allocated as generated, newest request preempted when full; off: reserve.")
@click.option("--shared-prefix-tokens", type=click.IntRange(min=0), default=0, show_default=True,
              help="A system prompt of this many tokens shared by every request.")
@click.option("--distinct-prompts", type=click.IntRange(min=0), default=0, show_default=True,
              help="Requests repeat this many distinct prompts (0: every prompt distinct).")
@click.option("--trace", help="Azure-format trace CSV (TIMESTAMP,ContextTokens,GeneratedTokens), or azure-conv.")
@click.option("--rate-scale", type=click.FloatRange(min=0, min_open=True), help="Replay the trace at K times its rate.")
@click.option("--input-len", type=click.IntRange(min=1), help="Prompt tokens per request (without --trace).")
@click.option("--output-len", type=click.IntRange(min=1), help="Output tokens per request (without --trace).")
@click.option("--num-requests", type=click.IntRange(min=1), help="Requests (without --trace).")
@click.option("--rate", type=click.FloatRange(min=0, min_open=True), help="Poisson arrival rate, req/s (default: all at time 0).")
@click.option("--replicas", type=click.IntRange(min=1), default=1, show_default=True, help="Replicas behind a router.")
@click.option("--router", type=click.Choice(["least_outstanding", "round_robin"]), default="least_outstanding", show_default=True)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
def serving(llm, gpu, tp, dtype, kv_dtype, max_batch, chunk, scheduler, max_batched_tokens, prefix_caching,
            kv_preemption, shared_prefix_tokens, distinct_prompts, trace, rate_scale, input_len, output_len,
            num_requests, rate, replicas, router, seed, as_json) -> None:
    """Serve a workload on one replica (or several) with the request-level engine.

    Without --rate (and without a trace) all requests arrive at time 0: offline throughput.
    """
    from simulator.serving.report import serving_report

    if trace is None and None in (input_len, output_len, num_requests):
        raise click.UsageError("give --trace, or all of --input-len, --output-len and --num-requests")
    if trace is not None and (input_len or output_len or num_requests):
        raise click.UsageError("--trace replaces --input-len, --output-len and --num-requests")
    if trace is None and rate_scale is not None:
        raise click.UsageError("--rate-scale applies to a --trace; use --rate for synthetic requests")
    report = serving_report(
        llm=llm, gpu=gpu, tp=tp, dtype=dtype, kv_dtype=kv_dtype, max_batch=max_batch, chunk=chunk,
        trace=trace, rate_scale=rate_scale, input_len=input_len, output_len=output_len,
        num_requests=num_requests, rate=rate, replicas=replicas, router=router, seed=seed,
        scheduler=scheduler.replace("-", "_"), max_batched_tokens=max_batched_tokens,
        prefix_caching=prefix_caching == "on", kv_preemption=kv_preemption == "on",
        shared_prefix_tokens=shared_prefix_tokens, distinct_prompts=distinct_prompts,
    )
    if as_json:
        click.echo(json.dumps(report, allow_nan=False))
        return
    table = Table(title=report["config"], show_header=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    for label, value in report_rows(report):
        table.add_row(label, value)
    console.print(table)


def _safe_dir_name(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "-_." else "_" for c in name).strip("._")
    return cleaned or "scenario"


from simulator import cli_report  # noqa: E402,F401 - registers report, compare and schema

if __name__ == "__main__":  # pragma: no cover
    # `python -m simulator.cli` runs this file as __main__: use the imported module's group,
    # on which cli_report registered its commands.
    from simulator.cli import main as fleetcast

    fleetcast()
