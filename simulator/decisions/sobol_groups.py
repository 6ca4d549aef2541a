"""Inputs grouped for a variance-based sensitivity, and how correlated inputs are handled.

Sobol indices share a figure's variance among *independent* inputs. Inputs that move together
cannot be told apart by them, so they are measured as one: a **group**, whose first-order
index S_g = Var(E[Y | X_g]) / Var(Y) and total index ST_g = E[Var(Y | X_~g)] / Var(Y) treat
its fields as a single input (the design swaps all of a group's columns together).

- ``--group NAME=FIELD,FIELD`` makes a group; fields that share a ``draw`` are one input
  already (a group named ``draw:NAME`` unless a ``--group`` holds them).
- Correlated inputs (``correlations``) must be in one group: within it, each row draws the
  group's normal scores from their own streams and mixes them by the copula's factor, so the
  group's A and B values keep the correlations of the scenario; groups stay independent of
  each other, as the estimators need.

How group indices add up: for independent groups, S_g ≥ Σ S_i over its fields (the group also
holds its fields' interactions with each other), with equality for a figure additive in them;
ST_g ≤ Σ ST_i. Groups that cover every input have Σ S_g ≤ 1, the rest the interactions
between groups and the paths' own randomness.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import NormalDist

import numpy as np

from simulator.decisions.sobol import SaltelliDesign, paired_uniforms
from simulator.path.streams import stream_key
from simulator.scenario import Scenario, ScenarioError
from simulator.scenario.correlation import copula_factor, input_key
from simulator.scenario.uncertain import input_keys, typed_value

_NORMAL = NormalDist()
_TINY = 2.0**-53


def input_groups(scenario: Scenario, groups: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """Every uncertain field in exactly one input: the ``groups`` given, fields sharing a draw,
    and each other field alone (keyed by its path). Raises ScenarioError (exit 2) naming
    what does not hold."""
    uncertain = scenario.uncertain
    key_of = {field: input_key(field, spec.draw) for field, spec in uncertain.items()}
    out: dict[str, list[str]] = {}
    taken: dict[str, str] = {}
    for name, fields in groups.items():
        if name in uncertain:
            raise ScenarioError(("--group",), f"group {name!r} has the name of an uncertain field; name it otherwise")
        for field in fields:
            if field not in uncertain:
                known = ", ".join(sorted(uncertain)) or "none"
                raise ScenarioError(("--group",), f"{field!r} in group {name!r} is not an uncertain input; "
                                    f"uncertain inputs: {known}")
            if field in taken:
                raise ScenarioError(("--group",), f"{field!r} is in groups {taken[field]!r} and {name!r}")
            taken[field] = name
        out[name] = sorted(fields)
    for field in sorted(uncertain):
        if field in taken:
            continue
        key = key_of[field]
        out.setdefault(key, []).append(field)
        taken[field] = key
    # A shared draw, or a correlation, may not span two groups.
    group_of_key: dict[str, str] = {}
    for name, fields in out.items():
        for field in fields:
            key = key_of[field]
            if group_of_key.setdefault(key, name) != name:
                raise ScenarioError(("--group",), f"fields sharing the draw {key.removeprefix('draw:')!r} are in "
                                    f"groups {group_of_key[key]!r} and {name!r}: put them in one group")
    names = input_keys(dict(uncertain))
    for index, entry in enumerate(scenario.correlations):
        a, b = (names.get(name, name) for name in entry.inputs)
        if a in group_of_key and b in group_of_key and group_of_key[a] != group_of_key[b]:
            raise ScenarioError(("correlations", index), f"{entry.inputs[0]!r} and {entry.inputs[1]!r} are "
                                "correlated: a variance-based sensitivity measures them as one input; group "
                                f"them: --group NAME={','.join(_fields_of(out, group_of_key, key_of, (a, b)))}")
    return out


def _fields_of(groups: dict[str, list[str]], group_of_key: dict[str, str], key_of: dict[str, str],
               keys: tuple[str, ...]) -> list[str]:
    return sorted({field for key in keys for field in groups[group_of_key[key]] if key_of[field] == key})


def grouped_design(scenario: Scenario, groups: Mapping[str, Sequence[str]], samples: int, seed: int,
                   design_key: int) -> SaltelliDesign:
    """The radial design over the scenario's inputs in groups (see the module's text)."""
    uncertain = scenario.uncertain
    resolved = input_groups(scenario, groups)
    key_of = {field: input_key(field, spec.draw) for field, spec in uncertain.items()}
    names = input_keys(dict(uncertain))
    fields, a_columns, b_columns, members = [], [], [], []
    for name in sorted(resolved):
        group = resolved[name]
        keys = sorted({key_of[field] for field in group})
        scores = {}
        for key in keys:  # each input key's paired uniforms, from a stream of its own
            rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(design_key, stream_key(key))))
            u_a, u_b = paired_uniforms(samples, rng)
            scores[key] = (np.array([_NORMAL.inv_cdf(float(u)) for u in u_a]),
                           np.array([_NORMAL.inv_cdf(float(u)) for u in u_b]))
        inside = [c for c in scenario.correlations if {names.get(n, n) for n in c.inputs} <= set(keys)]
        factor = copula_factor(inside, names) if inside else None
        if factor is not None:
            order, matrix = factor
            for side in (0, 1):
                mixed = matrix @ np.vstack([scores[key][side] for key in order])
                for i, key in enumerate(order):
                    scores[key] = (mixed[i], scores[key][1]) if side == 0 else (scores[key][0], mixed[i])
        start = len(fields)
        for field in group:
            spec = uncertain[field]
            z_a, z_b = scores[key_of[field]]
            a_columns.append(np.array([float(typed_value(Scenario, field, spec.from_normal(float(z)))) for z in z_a]))
            b_columns.append(np.array([float(typed_value(Scenario, field, spec.from_normal(float(z)))) for z in z_b]))
            fields.append(field)
        members.append(tuple(range(start, len(fields))))
    return SaltelliDesign(tuple(sorted(resolved)), np.column_stack(a_columns), np.column_stack(b_columns),
                          tuple(fields), tuple(members))
