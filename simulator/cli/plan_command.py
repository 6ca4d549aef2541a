"""``fleetcast plan``: what to order, how many and by when (``--order``), or the cheapest mix of
dated additions (``--action``); a thin command over :mod:`simulator.decisions`."""

from __future__ import annotations

from pathlib import Path

import click
from rich import box
from rich.table import Table

from simulator.cli.app import ACCEPT_HELP, SET_HELP, PathCount, console, main, safe_dir_name


@main.command(name="plan")
@click.argument("scenario", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--order", "orders", multiple=True, metavar="POOL:STEP:MAX",
              help="A candidate: orders of STEP GPUs for POOL on any review date, MAX in all (owned, "
              "reserved) or at once (on-demand), after the pool's lead time and slip (repeatable; "
              "replaces the scenario's plan.orders).")
@click.option("--target", type=click.FloatRange(0, 1),
              help="Highest acceptable P(material shortfall) in each period (default: plan.target, 0.1).")
@click.option("--per", type=click.Choice(["month", "quarter", "horizon"]),
              help="The period the target holds in (default: plan.target.per, month).")
@click.option("--budget", "budget_usd", type=click.FloatRange(min=0), help="Most the orders may commit, USD.")
@click.option("--cash-floor", "cash_floor_usd", type=float,
              help="Keep month-end cash at least this, USD (on the P10 path of the fleet as it stands, less what "
              "the orders pay).")
@click.option("--review-every", "review_every", metavar="DURATION",
              help="Order dates: every DURATION from the start (default: plan.review_every, 7d).")
@click.option("--action", "actions", multiple=True, metavar="NAME=POOL@DATE:STEP:MAX",
              help="Instead of --order: add STEP-sized batches (up to MAX) of GPUs to POOL from DATE, and "
              "find the cheapest mix for P(any shortfall over the horizon) <= --target (repeatable).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Directory (default outputs/<name>-plan/).")
@click.option("--paths", type=PathCount(), help="Paths per simulation (default: plan.paths; 'auto': enough to "
              "tell the target from twice it).")
@click.option("--seed", type=click.IntRange(min=0), help="Root seed of the search.")
@click.option("--workers", type=click.IntRange(min=1), help="Local worker processes (default: CPU count).")
@click.option("--compare-replan", is_flag=True,
              help="Also simulate re-planning (the pools' purchases ordered at each review from a forecast of the "
              "demand seen so far) on the plan's fresh paths, and compare: risk, GPUs bought, cash, commitments.")
@click.option("--no-report", is_flag=True, help="Skip report.html and plots/ of the plan's run.")
@click.option("--set", "overrides", multiple=True, metavar="FIELD=VALUE", help=SET_HELP)
@click.option("--accept", "accept", multiple=True, metavar="NAME", help=ACCEPT_HELP)
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors.")
def plan_command(scenario: Path, orders, target, per, budget_usd, cash_floor_usd, review_every, actions, out, paths,
                 seed, workers, compare_replan: bool, no_report: bool, overrides, accept, quiet: bool) -> None:
    """Plan the orders that keep the risk of running short at or below a target in every period."""
    from simulator.output import check_output_directory
    from simulator.scenario import ScenarioError
    from simulator.serving.resolve import load_scenario

    base = load_scenario(scenario, overrides, accept=accept)
    directory = out or Path("outputs") / f"{safe_dir_name(base.name)}-plan"
    if actions:
        if orders or per or budget_usd is not None or cash_floor_usd is not None or review_every or compare_replan:
            raise ScenarioError((), "--action plans dated additions on their own: drop --order, --per, --budget, "
                                "--review-every and --compare-replan, or plan orders without --action")
        check_output_directory(directory, inputs=[scenario])
        _plan_actions(base, actions, 0.1 if target is None else target, directory, paths, seed, quiet)
        return
    from simulator.decisions.order_planner import plan_orders
    from simulator.decisions.plan_output import save_order_plan
    from simulator.decisions.plan_setup import plan_settings
    from simulator.decisions.runner import stage_progress_bar

    settings = plan_settings(base, orders, target=target, per=per, budget_usd=budget_usd,
                             cash_floor_usd=cash_floor_usd, review_every=review_every, paths=paths)
    if not settings.orders:
        raise ScenarioError(("plan", "orders"), "nothing to plan: give --order POOL:STEP:MAX or a plan: section")
    check_output_directory(directory, inputs=[scenario])
    with stage_progress_bar(show=not quiet) as progress:
        outcome = plan_orders(base, settings, seed=seed, workers=workers, progress=progress)
        replan = None
        if compare_replan:
            from simulator.decisions.replan_compare import compare_replan as compare

            replan = compare(outcome, base, workers=workers, progress=progress).document
    document = save_order_plan(directory, outcome, report=not no_report, replan=replan)
    if not quiet:
        _print_plan(base.name, document)
        if replan is not None:
            _print_replan(replan)
        console.print(f"wrote {directory}/ (plan.json" + ("" if no_report else ", report.html") + ")",
                      markup=False, highlight=False)


def _print_plan(name: str, document: dict) -> None:
    from simulator.report.terminal import fitted_table

    target = document["target"]
    goal = f"P(short) <= {target['probability']:.0%} " + ("over the horizon" if target["per"] == "horizon"
                                                          else f"in every {target['per']}")
    title = f"{name}: orders for {goal}" if document["target_met"] else \
        f"{name}: TARGET NOT MET in {len(document['unreachable'])} period(s) ({goal}); the best plan found"
    rows = []
    for row in document["orders"]:
        lands = row["in_service"]
        if "p50" not in lands:
            when = f"{lands['from']} to {lands['until']}"
        elif lands["p10"] == lands["p90"]:
            when = lands["p50"]
        else:
            when = f"{lands['p50']} (P90 {lands['p90']})"
        size = f"{row['mw']:g} MW" if row["tier"] == "power" else f"{row['count']:,}"
        rows.append([row["tier"], f"{row['pool']} ({row['gpu']})", size, row["order_date"], when,
                     f"${row['cost_usd']:,.0f}"])
    if not document["orders"]:
        rows.append(["", "(no order needed)" if document["target_met"] else "(no order helps: see below)",
                     "", "", "", ""])
    columns = [(column, "right" if column in ("GPUs", "commits") else "left")
               for column in ("", "pool", "GPUs", "order by", "in service", "commits")]
    console.print(fitted_table(title, columns, rows, console.width, box_style=box.SIMPLE_HEAD))
    cost, worst = document["cost"], document["most_at_risk"]
    facts = Table(show_header=False, box=None, pad_edge=False)
    facts.add_row("orders commit", f"${cost['orders_commit_usd']:,.0f} (of which ${cost['value_left_at_end_usd']:,.0f} "
                  "left at the end: book value, reserved terms)")
    facts.add_row("cost over the horizon, P50", f"${cost['horizon_cost_usd_p50']:,.0f} (the whole fleet)")
    if worst is not None:
        lo, hi = worst["planned_ci"]
        facts.add_row("most at risk", f"{worst['period']}: {worst['planned']:.1%} [{lo:.1%}, {hi:.1%}]; "
                      f"fresh seeds {worst['fresh']:.1%}")
    facts.add_row("simulations", f"{document['simulations']}: {document['paths']:,} paths each, the fresh-seed "
                  f"check {document['fresh_paths']:,}")
    console.print(facts)
    risky = [row for row in document["periods"] if row["baseline"] > 0 or row["planned"] > 0 or row["fresh"] > 0]
    if risky:
        rows = []
        for row in risky:
            lo, hi = row["planned_ci"]
            rows.append([row["period"], f"{row['baseline']:.0%}", f"{row['planned']:.1%} [{lo:.0%}, {hi:.0%}]",
                         f"{row['fresh']:.1%}", "" if row["status"] == "met" else row["status"]])
        columns = [(column, "left" if column in ("period", "") else "right")
                   for column in ("period", "now", "planned", "fresh seeds", "")]
        console.print(fitted_table("P(short) by period: now, with the plan [90% for all periods together], fresh seeds",
                                   columns, rows, console.width, box_style=box.SIMPLE_HEAD, title_justify="left"))
    for row in document["unreachable"]:
        console.print(f"cannot be met: {row['period']} ({row['risk']:.0%}): {row['reason']}", markup=False,
                      highlight=False)


def _print_replan(replan: dict) -> None:
    view = Table(title=f"Open-loop plan against re-planning every {replan['review_every']} "
                 f"({replan['paths']:,} paths, the same futures)", title_justify="left", box=box.SIMPLE_HEAD)
    for column in ("", "open-loop", "re-planning"):
        view.add_column(column, justify="left" if not column else "right", no_wrap=True)
    policies = [replan["policies"][key] for key in ("open_loop", "replan")]
    rows = (("worst period's P(short)", lambda f: f"{f['risk_max']:.1%}"),
            ("GPUs bought (mean)", lambda f: f"{f['gpus_ordered']['mean']:,.1f}"),
            ("committed at the start", lambda f: f"${f['committed_at_start_usd']:,.0f}"),
            ("purchases (mean)", lambda f: f"${f['purchases_usd']['mean']:,.0f}"),
            ("cost over the horizon, P50", lambda f: f"${f['cost_usd']['p50']:,.0f}"),
            ("lowest cash, P10", lambda f: f"${f['lowest_cash_usd']['p10']:,.0f}"))
    for label, text in rows:
        view.add_row(label, *(text(f) for f in policies))
    console.print(view)


def _plan_actions(base, actions, target: float, directory: Path, paths, seed, quiet: bool) -> None:
    from simulator.decisions.planner import apply_actions, parse_action, plan, save_plan
    from simulator.runs.montecarlo import simulate

    if paths == "auto":
        paths = None
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
