"""The cheapest plan that keeps the risk of running short at or below a target.

Candidate actions each add GPUs to a pool from a date, in multiples of ``step`` up to
``max``: buying (an owned pool), committing (a reserved pool) or renting (an on-demand pool)
are all "more GPUs of this pool from this date". The planner searches greedily:

1. Start with every action at zero.
2. While P(shortfall) — the share of paths with any unserved demand — is above the target,
   try one more ``step`` of each action and keep the one that buys the most risk reduction per
   dollar of extra total cost (P50 over paths); when no single step reduces the risk, keep the
   cheapest step (demand may need several before it shows).
3. Then try one ``step`` less of each action, most expensive first, and keep every removal
   that still meets the target.

Every candidate is simulated with the same seed and paths (common random numbers), so
comparisons between plans are not blurred by noise. The answer should be re-simulated with
fresh seeds to confirm the risk (``fleetcast plan`` does).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from simulator.scenario import Scenario, ScenarioError
from simulator.scenario.types import _when
from simulator.serving.resolve import load_scenario


@dataclass(frozen=True)
class Action:
    """``step``-sized additions of GPUs to ``pool`` from ``at`` (up to ``max`` GPUs)."""

    name: str
    pool: str
    at: str
    step: int
    max: int


@dataclass
class PlanResult:
    """The chosen quantities and how the search got there."""

    quantities: dict[str, int]
    risk: float
    cost_usd: float
    evaluations: int
    history: list[dict[str, Any]] = field(default_factory=list)


def apply_actions(scenario: Scenario, actions: list[Action], quantities: dict[str, int]) -> Scenario:
    """The scenario with each action's GPUs added as a dated change of its pool."""
    data = scenario.model_dump(mode="json")
    pools = {pool["name"]: pool for pool in data["fleet"]["pools"]}
    for action in actions:
        count = quantities.get(action.name, 0)
        if count:
            pools[action.pool].setdefault("changes", []).append({"at": action.at, "add": count})
    return load_scenario(data, base_dir=scenario.source_dir)


def plan(scenario: Scenario, actions: list[Action], target: float,
         evaluate: Callable[[Scenario], tuple[float, float]]) -> PlanResult:
    """Greedy search (see the module docstring). ``evaluate`` returns (risk, cost)."""
    names = {pool.name for pool in scenario.fleet.pools}
    seen: set[str] = set()
    for action in actions:
        if action.name in seen:
            raise ScenarioError((), f"--action {action.name}: the name is given twice")
        seen.add(action.name)
        if action.pool not in names:
            raise ScenarioError((), f"--action {action.name}: unknown pool {action.pool!r}; pools: {', '.join(sorted(names))}")
        try:
            offset = scenario.horizon.offset_of(_when(action.at))
        except ValueError as exc:
            raise ScenarioError((), f"--action {action.name}: {exc}") from None
        if not 0 <= offset < scenario.horizon.length_s:
            raise ScenarioError((), f"--action {action.name}: {action.at} is outside the horizon")
    quantities = {action.name: 0 for action in actions}
    cache: dict[tuple[int, ...], tuple[float, float]] = {}

    def score(q: dict[str, int]) -> tuple[float, float]:
        key = tuple(q[a.name] for a in actions)
        if key not in cache:
            cache[key] = evaluate(apply_actions(scenario, actions, q))
        return cache[key]

    risk, cost = score(quantities)
    history = [{"quantities": dict(quantities), "risk": risk, "cost_usd": cost}]
    while risk > target:
        options = []
        for action in actions:
            if quantities[action.name] + action.step > action.max:
                continue
            trial = {**quantities, action.name: quantities[action.name] + action.step}
            trial_risk, trial_cost = score(trial)
            options.append((trial, trial_risk, trial_cost))
        if not options:
            break  # every action at its maximum: the target cannot be met
        improving = [o for o in options if o[1] < risk]
        if improving:
            best = min(improving, key=lambda o: (max(o[2] - cost, 0.0) / (risk - o[1]), o[2]))
        else:
            best = min(options, key=lambda o: o[2])
        quantities, risk, cost = best
        history.append({"quantities": dict(quantities), "risk": risk, "cost_usd": cost})
    if risk <= target:
        improved = True
        while improved:
            improved = False
            for action in sorted(actions, key=lambda a: -quantities[a.name]):
                if quantities[action.name] < action.step:
                    continue
                trial = {**quantities, action.name: quantities[action.name] - action.step}
                trial_risk, trial_cost = score(trial)
                if trial_risk <= target and trial_cost < cost:
                    quantities, risk, cost, improved = trial, trial_risk, trial_cost, True
                    history.append({"quantities": dict(quantities), "risk": risk, "cost_usd": cost})
    return PlanResult(quantities, risk, cost, len(cache), history)


def parse_action(text: str) -> Action:
    """``NAME=POOL@WHEN:STEP:MAX``, e.g. ``buy-q3=h100-owned@2026-07-01:64:1024``."""
    try:
        name, rest = text.split("=", 1)
        pool, rest = rest.split("@", 1)
        at, step, most = rest.rsplit(":", 2)
        action = Action(name.strip(), pool.strip(), at.strip(), int(step), int(most))
    except ValueError:
        raise ScenarioError((), f"--action expects NAME=POOL@DATE:STEP:MAX, got {text!r}") from None
    if action.step < 1 or action.max < action.step:
        raise ScenarioError((), f"--action {text!r}: need 1 <= STEP <= MAX")
    return action


def save_plan(directory, results, result: PlanResult, target: float) -> None:
    """The planned scenario's run (re-simulated on fresh seeds) with ``plan.json`` beside it."""
    import json
    from pathlib import Path

    from simulator.output import staged_directory

    with staged_directory(Path(directory)) as staging:
        (staging / "plan.json").write_text(json.dumps({
            "target_shortfall_probability": target,
            "quantities": result.quantities,
            "risk_search": result.risk,
            "risk_fresh_seeds": results.summary["first_shortfall_time"]["probability"],
            "target_met": result.risk <= target and results.summary["first_shortfall_time"]["probability"] <= target,
            "cost_usd_p50": result.cost_usd,
            "plans_simulated": result.evaluations,
            "history": result.history,
        }, indent=2) + "\n", encoding="utf-8")
        results.write_files(staging)
