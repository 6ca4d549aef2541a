"""The order planner on the founder's and the infrastructure lead's cases: wall time on 2 workers,
simulations used, and whether the risk it states holds on seeds it never saw.

    .venv/bin/python benchmarks/bench_plan.py [--workers 2] [--json PATH]

- **founder**: ``growth.yaml`` (24 months hourly; owned H100s with a 120-day lead time and a
  3-week slip, a rented H100 bridge capped at 64, L40S purchases) with its ``plan:`` section,
  the assistant's growth uncertain (lognormal, median 12%/month, P90 16%); target
  P(short) <= 10% in every month. Target: the plan in under 2 minutes.
- **infra lead**: ``mixed.yaml`` (12 months; how many H200s, ordered by when, for
  P(short) <= 5% in every month while the B200 delivery slips).

The reference is one simulation of the same paths, timed in the same run: the plan's wall time
over it is the number of simulations' worth the search costs. The risk check simulates the
plan on two more seeds it never saw (as many paths as its own fresh-seed check: four times the
search's) and counts the periods whose share of paths running short falls outside the interval
the plan states (90% for all periods together).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import simulator  # noqa: E402
from simulator.decisions.order_planner import PeriodRisk, fresh_paths, period_shorts, plan_orders  # noqa: E402
from simulator.decisions.plan_output import plan_document  # noqa: E402

CASES = {
    "founder": ("growth.yaml", ["models[0].demand.growth.rate_per_month={dist: lognormal, median: 0.12, p90: 0.16}"]),
    "infra_lead": ("mixed.yaml", []),
}


def bench(name: str, workers: int) -> dict:
    path, overrides = CASES[name]
    scenario = simulator.load_scenario(ROOT / "scenarios" / path, overrides)
    simulator.simulate(scenario, paths=2, workers=1)  # compile the kernels before timing
    start = time.perf_counter()
    outcome = plan_orders(scenario, scenario.plan, workers=workers)
    wall = time.perf_counter() - start
    start = time.perf_counter()
    simulator.simulate(outcome.scenario, paths=outcome.paths, seed=12345, workers=workers, keep_paths=0)
    one = time.perf_counter() - start
    document = plan_document(outcome)
    stated = outcome.search
    checks = {}
    for label, risk in [("fresh_seed", outcome.fresh)] + [
            (f"seed_{seed}", PeriodRisk.of(period_shorts(
                simulator.simulate(outcome.scenario, paths=fresh_paths(outcome.paths), seed=seed, workers=workers,
                                   keep_paths=0),
                scenario.plan.target.per, outcome.labels))) for seed in (424242, 737373)]:
        outside = (risk.risk < stated.band_lo - 1e-12) | (risk.risk > stated.band_hi + 1e-12)
        checks[label] = {"periods_outside_stated_interval": int(outside.sum()),
                         "max_risk": float(risk.risk.max())}
    return {
        "scenario": path, "overrides": overrides, "workers": workers, "paths": outcome.paths,
        "plan_wall_s": round(wall, 1), "one_simulation_s": round(one, 1),
        "plan_over_one_simulation": round(wall / one, 2), "simulations": outcome.simulations,
        "rounds": [{k: r[k] for k in ("round", "repair", "orders_cost_usd", "risk_max", "periods_missed")}
                   for r in outcome.rounds],
        "orders": [{k: o[k] for k in ("pool", "tier", "count", "order_date", "in_service")} for o in document["orders"]],
        "orders_commit_usd": round(document["cost"]["orders_commit_usd"]),
        "target_met": document["target_met"], "unreachable": document["unreachable"],
        "stated_max_risk": float(stated.risk.max()), "periods": len(outcome.labels), "checks": checks,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--case", choices=sorted(CASES), action="append")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    figures = {name: bench(name, args.workers) for name in (args.case or CASES)}
    for name, entry in figures.items():
        print(f"{name}: plan in {entry['plan_wall_s']} s ({entry['plan_over_one_simulation']}x one simulation of "
              f"{entry['paths']} paths; {entry['simulations']} simulations), orders commit "
              f"${entry['orders_commit_usd']:,}, target met: {entry['target_met']}, stated max risk "
              f"{entry['stated_max_risk']:.3f}; periods outside the stated interval: " +
              ", ".join(f"{k} {v['periods_outside_stated_interval']}/{entry['periods']}"
                        for k, v in entry["checks"].items()))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
