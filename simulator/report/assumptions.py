"""The report's assumptions table: what the run assumed, one row per setting, every section of
the scenario present (a section left empty says "none").

Rows are read from the resolved scenario (``scenario.resolved.yaml`` as a dict). The sections a
reader weighs most (horizon, pools, models, prices, energy, financing, operating expenses,
taxes, contracts) get sentences; the others are written out field by field
(:func:`simulator.report.scenario_text.structure_text`). An uncertain input shows the
distribution it was written as, not the median the resolved file holds in its place.
"""

from __future__ import annotations

from typing import Any

from simulator.report.scenario_text import (
    kind_of,
    money_text,
    number_text,
    percent_text,
    structure_text,
    value_text,
)
from simulator.report.tables import _cell as cell
from simulator.report.tables import _table as table
from simulator.scenario.served import ServedModel
from simulator.scenario.serving_policy import Headroom, describe

#: Row labels of the sections written out field by field (a list section: one row per item).
SECTION_LABELS = {
    "gpus": "GPU type", "failures": "Failures (every pool)", "power": "Power", "markets": "Markets", "market_value": "Market value",
    "alerts": "Alerts", "shortfall": "A shortfall counts when", "correlations": "Correlation",
    "contract_pipeline": "Contract pipeline", "plan": "Order plan", "variants": "Variant",
}
#: Sections with rows of their own (or none: the name is the page's title).
_OWN_ROWS = ("name", "description", "horizon", "seed", "paths", "fleet", "models", "pricing", "energy", "facility",
             "other_costs", "financing", "opex", "taxes", "contracts", "training", "uncertain", "fixed_inputs")
#: Fields of a GPU type the table shows (the catalog's sources are in the resolved scenario).
_GPU_FIELDS = (("price_usd", "to buy"), ("cloud_usd_per_gpu_hour", "per GPU-hour to rent"), ("memory_gb", "GB"),
               ("tdp_w", "W"))


class _Rows:
    """The table's rows, and the scenario's uncertain inputs to show values by."""

    def __init__(self, scenario: dict[str, Any]) -> None:
        self.scenario = scenario
        self.uncertain: dict[str, Any] = scenario.get("uncertain") or {}
        self.rows: list[list[dict[str, Any]]] = []

    def add(self, what: str, value: str) -> None:
        self.rows.append([cell(what), cell(value)])

    def value(self, data: dict[str, Any], path: str, key: str, kind: str = "number") -> str:
        return value_text(data.get(key), kind, self.uncertain, f"{path}.{key}")

    def fields(self, value: Any, path: str, skip: tuple[str, ...] = ()) -> str:
        return structure_text(value, path, self.uncertain, skip)


def assumptions_table(scenario: dict[str, Any]) -> dict[str, Any]:
    """What the run assumed: every section of the resolved scenario."""
    rows = _Rows(scenario)
    if scenario.get("description"):
        rows.add("Scenario", str(scenario["description"]))
    horizon = scenario.get("horizon", {})
    span = f"for {horizon.get('duration')}" if horizon.get("duration") is not None else f"to {horizon.get('end')}"
    rows.add("Horizon", f"{horizon.get('start')} {span} in steps of {horizon.get('step')}")
    paths = scenario.get("paths")
    rows.add("Paths and seed", f"{paths} path{'' if paths == 1 else 's'}, seed {scenario.get('seed')}")
    for i, pool in enumerate(scenario.get("fleet", {}).get("pools", [])):
        _pool(rows, pool, f"fleet.pools[{i}]")
    for i, model in enumerate(scenario.get("models", [])):
        _model(rows, model, f"models[{i}]")
    pricing = scenario.get("pricing") or {}
    if pricing:
        rows.add("Token prices (scenario)", _prices(rows, pricing, "pricing"))
    for i, model in enumerate(scenario.get("models", [])):
        rows.add(f"Prices of {model.get('name')}", _model_prices(rows, model, f"models[{i}]", pricing))
    for name, gpu in (scenario.get("gpus") or {}).items():
        rows.add(f"GPU type {name}", _gpu(gpu, f"gpus.{name}", rows))
    _energy(rows, scenario.get("energy") or {}, scenario.get("facility") or {}, scenario.get("other_costs") or {})
    for section in ("failures", "power"):
        _section(rows, section)
    _financing(rows, scenario.get("financing") or {})
    _opex(rows, scenario.get("opex") or [])
    _taxes(rows, scenario.get("taxes") or {})
    _contracts(rows, scenario.get("contracts") or [])
    for section in ("contract_pipeline", "markets", "market_value", "alerts", "shortfall"):
        _section(rows, section)
    _training(rows, scenario.get("training") or {})
    if rows.uncertain:
        for path in rows.uncertain:
            rows.add(f"Uncertain input {path}", value_text(None, kind_of(path), rows.uncertain, path))
    else:
        rows.add("Uncertain inputs", "none")
    for section in ("correlations", "plan", "variants"):
        _section(rows, section)
    for section, value in scenario.items():  # a section this version does not describe on its own
        if section not in _OWN_ROWS and section not in SECTION_LABELS:
            rows.add(section.replace("_", " ").capitalize(), rows.fields(value, section))
    return table(["Assumption", "Value"], rows.rows)


def _section(rows: _Rows, section: str) -> None:
    """A section written out field by field; a list or a mapping of named parts: a row each."""
    value = rows.scenario.get(section)
    label = SECTION_LABELS[section]
    if isinstance(value, list) and value:
        for i, item in enumerate(value):
            name = item.get("name") if isinstance(item, dict) else None
            rows.add(f"{label} {name}" if name else label,
                     rows.fields(item, f"{section}[{i}]", skip=("name",)) if name else rows.fields(item, f"{section}[{i}]"))
    elif section in ("variants", "market_value") and isinstance(value, dict) and value:
        for name, item in value.items():
            rows.add(f"{label} {name}", rows.fields(item, f"{section}.{name}"))
    else:
        rows.add(label, rows.fields(value, section) if value not in (None, [], {}) else "none")


def _pool(rows: _Rows, pool: dict[str, Any], path: str) -> None:
    acquisition = pool.get("acquisition") or {}
    orders = pool.get("orders") or []
    text = (f"{rows.value(pool, path, 'count')} × {pool.get('gpu')}, {acquisition.get('type', 'owned')}"
            + "".join(f", {label} {rows.value(acquisition, path + '.acquisition', key, kind)}"
                      for key, label, kind in (("price_usd", "at", "usd"), ("depreciation_years", "depreciated over",
                                                                                   "number"))
                      if acquisition.get(key) is not None)
            + (" years" if acquisition.get("depreciation_years") is not None else ""))
    terms = rows.fields(acquisition, path + ".acquisition", skip=("type", "price_usd", "depreciation_years"))
    if terms != "none":
        text += f" ({terms})"
    if orders:
        text += "; orders: " + "; ".join(rows.fields(order, f"{path}.orders[{i}]") for i, order in enumerate(orders))
    for key in ("changes", "procurement", "failures", "training"):
        if pool.get(key) not in (None, [], {}):
            text += f"; {key}: {rows.fields(pool[key], f'{path}.{key}')}"
    text += f"; serving policy: {_serving_policy(pool.get('serving_policy', 'all'))}"
    rows.add(f"Pool {pool.get('name')}", text)


def _demand(rows: _Rows, demand: dict[str, Any], path: str) -> str:
    growth = demand.get("growth") or {}
    kind = growth.get("kind", "constant")
    if kind == "piecewise":
        points = growth.get("points") or []
        rates = [f"{number_text(p.get('rps'))} on {p.get('at')}" for p in points]
        shown = rates if len(rates) <= 4 else [*rates[:2], "…", rates[-1]]
        source = f" from {growth['csv']}" if growth.get("csv") else ""
        after = f", then {growth['extrapolate']}" if growth.get("extrapolate") else ""
        return f"piecewise{source}: requests/s {', '.join(shown)} ({len(points)} points){after}"
    base = rows.value(demand, path, "base_rps")
    rest = rows.fields(growth, f"{path}.growth", skip=("kind",))
    text = f"{base} requests/s at the start, growth {kind}" + ("" if rest == "none" else f" ({rest})")
    if demand.get("forecast"):
        text += ", forecast from its history (see the demand forecast)"
    return text


def _model(rows: _Rows, model: dict[str, Any], path: str) -> None:
    name = model.get("name")
    demand = model.get("demand") or {}
    tokens = (f"; {rows.value(demand, path + '.demand', 'input_tokens')} input and "
              f"{rows.value(demand, path + '.demand', 'output_tokens')} output tokens per request")
    rows.add(f"Model {name}", f"{_demand(rows, demand, path + '.demand')}{tokens}; on {', '.join(model.get('pools') or [])}")
    shapes = _replica_shapes(model)
    if shapes:
        rows.add(f"Replicas of {name}", "; ".join(shapes))
    own = {pool: entry["serving_policy"] for pool, entry in (model.get("replicas") or {}).items()
           if isinstance(entry, dict) and entry.get("serving_policy") is not None}
    if own:
        rows.add(f"Serving policy of {name}", "; ".join(f"{_serving_policy(policy)} on {pool}" for pool, policy in own.items()))
    if model.get("preempt_after"):
        after = model["preempt_after"]
        rows.add(f"Before preempting training, {name} uses", "every rented pool it lists" if after == "rented" else ", ".join(after))


def _serving_policy(value: Any) -> str:
    """A serving policy as the resolved scenario writes it, in words."""
    return describe(Headroom(**value) if isinstance(value, dict) else value)


def _prices(rows: _Rows, pricing: dict[str, Any], path: str) -> str:
    text = (f"{rows.value(pricing, path, 'input_usd_per_1m', 'usd')} per 1M input, "
            f"{rows.value(pricing, path, 'output_usd_per_1m', 'usd')} per 1M output")
    decline = pricing.get("decline_per_year") or 0
    return text + (f", falling {rows.value(pricing, path, 'decline_per_year', 'percent')} a year" if decline else "")


def _model_prices(rows: _Rows, model: dict[str, Any], path: str, default: dict[str, Any]) -> str:
    """A model's own token prices (else the scenario's, said so), subscription and external API."""
    own = model.get("pricing")
    text = (_prices(rows, own, path + ".pricing") + " (its own)") if own else (_prices(rows, default, "pricing")
                                                                                + " (the scenario's)")
    subscription = model.get("subscription")
    if subscription:
        text += (f"; subscription {rows.value(subscription, path + '.subscription', 'usd_per_month', 'usd')} per month "
                 f"for {rows.value(subscription, path + '.subscription', 'requests_per_day')} requests/day")
    api = model.get("api")
    if api:
        text += (f"; external API ({api.get('mode', 'overflow')}) "
                 f"{rows.value(api, path + '.api', 'input_usd_per_1m', 'usd')} per 1M input, "
                 f"{rows.value(api, path + '.api', 'output_usd_per_1m', 'usd')} per 1M output")
    return text


def _gpu(gpu: dict[str, Any], path: str, rows: _Rows) -> str:
    parts = []
    for key, label in _GPU_FIELDS:
        if gpu.get(key) is not None:
            parts.append(f"{rows.value(gpu, path, key, kind_of(key))} {label}")
    return ", ".join(parts) or rows.fields(gpu, path)


def _energy(rows: _Rows, energy: dict[str, Any], facility: dict[str, Any], other: dict[str, Any]) -> None:
    text = (f"{rows.value(energy, 'energy', 'usd_per_kwh', 'usd')} per kWh at PUE {rows.value(energy, 'energy', 'pue')}; "
            f"a server draws {rows.value(energy, 'energy', 'server_power_factor')}× its GPUs' TDP, "
            f"{rows.value(energy, 'energy', 'draw_fraction', 'percent')} of it busy and "
            + (f"{rows.value(energy, 'energy', 'idle_draw_fraction', 'percent')} idle"
               if energy.get("idle_draw_fraction") is not None else "the same idle"))
    rest = rows.fields(energy, "energy", skip=("usd_per_kwh", "pue", "server_power_factor", "draw_fraction",
                                               "idle_draw_fraction"))
    rows.add("Energy", text + ("" if rest == "none" else f"; {rest}"))
    rows.add("Facility", f"{rows.value(facility, 'facility', 'usd_per_kw_month', 'usd')} per kW-month"
             + ("" if set(facility) <= {"usd_per_kw_month"} else f"; {rows.fields(facility, 'facility', skip=('usd_per_kw_month',))}"))
    rows.add("Other costs", f"{rows.value(other, 'other_costs', 'usd_per_month', 'usd')} per month"
             + ("" if set(other) <= {"usd_per_month"} else f"; {rows.fields(other, 'other_costs', skip=('usd_per_month',))}"))


def _financing(rows: _Rows, financing: dict[str, Any]) -> None:
    path = "financing"
    text = f"opening cash {rows.value(financing, path, 'opening_cash_usd', 'usd')}"
    if financing.get("share_of_capex"):
        text += (f"; {rows.value(financing, path, 'share_of_capex', 'percent')} of capex borrowed at "
                 f"{rows.value(financing, path, 'rate_per_year', 'percent')} a year over "
                 f"{rows.value(financing, path, 'term_years')} years")
        if financing.get("cap_usd") is not None:
            text += f", up to {rows.value(financing, path, 'cap_usd', 'usd')}"
    else:
        text += "; no capex borrowed"
    rows.add("Financing", text)
    for i, round_ in enumerate(financing.get("equity") or []):
        rows.add("Equity" + (f" {round_['name']}" if round_.get("name") else ""),
                 rows.fields(round_, f"{path}.equity[{i}]", skip=("name",)))
    for i, facility in enumerate(financing.get("facilities") or []):
        rows.add(f"Debt facility {facility.get('name', i)}", rows.fields(facility, f"{path}.facilities[{i}]", skip=("name",)))


def _opex(rows: _Rows, opex: list[dict[str, Any]]) -> None:
    if not opex:
        rows.add("Operating expenses", "none")
    for i, line in enumerate(opex):
        path = f"opex[{i}]"
        text = f"{rows.value(line, path, 'usd_per_month', 'usd')} per month"
        if line.get("growth_per_month"):
            text += f", growing {rows.value(line, path, 'growth_per_month', 'percent')} a month"
        if line.get("start") or line.get("end"):
            text += f", from {line.get('start') or 'the start'} to {line.get('end') or 'the end'}"
        for j, step in enumerate(line.get("steps") or []):
            text += f"; from {step.get('at')} {rows.value(step, f'{path}.steps[{j}]', 'usd_per_month', 'usd')} per month"
        rest = rows.fields(line, path, skip=("name", "usd_per_month", "growth_per_month", "start", "end", "steps"))
        rows.add(f"Operating expense {line.get('name')}", text + ("" if rest == "none" else f"; {rest}"))


def _taxes(rows: _Rows, taxes: dict[str, Any]) -> None:
    path = "taxes"
    if not taxes.get("rate") and path + ".rate" not in rows.uncertain:
        rows.add("Taxes", "none (rate 0%)")
        return
    text = (f"{rows.value(taxes, path, 'rate', 'percent')} of taxable income, computed {taxes.get('basis', 'monthly')}"
            f", paid in month {taxes.get('payment_month')}; losses carried forward offset up to "
            f"{rows.value(taxes, path, 'nol_limit_share', 'percent')} of a year's income")
    if taxes.get("opening_loss_usd"):
        text += f"; opening losses {rows.value(taxes, path, 'opening_loss_usd', 'usd')}"
    rest = rows.fields(taxes, path, skip=("rate", "basis", "payment_month", "nol_limit_share", "opening_loss_usd"))
    rows.add("Taxes", text + ("" if rest == "none" else f"; {rest}"))


def _contracts(rows: _Rows, contracts: list[dict[str, Any]]) -> None:
    if not contracts:
        rows.add("Contracts", "none")
    for i, contract in enumerate(contracts):
        path = f"contracts[{i}]"
        text = (f"{rows.value(contract, path, 'gpus')} GPUs of {contract.get('pool')} at "
                f"{rows.value(contract, path, 'usd_per_gpu_hour', 'usd')} per GPU-hour from {contract.get('start')} "
                f"for {contract.get('term')}")
        rest = rows.fields(contract, path, skip=("name", "gpus", "pool", "usd_per_gpu_hour", "start", "term"))
        rows.add(f"Contract {contract.get('name')}", text + ("" if rest == "none" else f"; {rest}"))


def _training(rows: _Rows, training: dict[str, Any]) -> None:
    jobs, streams, traces = (training.get(key) or [] for key in ("jobs", "streams", "traces"))
    if not (jobs or streams or traces):
        rows.add("Training", "none")
        return
    rows.add("Training", f"{len(jobs)} jobs, {len(streams)} streams, {len(traces)} traces; scheduled "
                         f"{training.get('policy')}, reviewed every {training.get('review_every')}")
    for kind, items in (("job", jobs), ("stream", streams), ("trace", traces)):
        for i, item in enumerate(items):
            name = item.get("name") if isinstance(item, dict) else None
            rows.add(f"Training {kind} {name or i + 1}",
                     rows.fields(item, f"training.{kind}s[{i}]", skip=("name",)))


def _replica_shapes(model: dict[str, Any]) -> list[str]:
    """Per pool: GPUs per replica and the requests/s one sustains (and the GPU it was derived on)."""
    try:
        served = ServedModel.model_validate(model)
    except ValueError:  # a run directory written by another version: leave the row out
        return []
    out = []
    for pool in served.pools:
        shape = served.shape_on(pool)
        if shape.capacity_rps is None:
            continue
        gpus = shape.gpus_per_replica
        derived = f", derived on {shape.derived_on}" if shape.derived_on else ""
        own = served.replicas.get(pool)
        features = [part for part in ((own.derived_workload or "").split("; ") if own is not None else [])
                    if part.startswith(("P:D", "speculative decoding", "host KV tier"))]
        unit = " per disaggregated unit" if any(part.startswith("P:D") for part in features) else ""
        extra = "".join(f"; {part}" for part in features)
        out.append(f"{pool}: {gpus} GPU{'' if gpus == 1 else 's'}{unit}, {shape.capacity_rps:,.3g} req/s"
                   f"{derived}{extra}")
    return out


__all__ = ["assumptions_table", "money_text", "percent_text"]
