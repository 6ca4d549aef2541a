"""The second validation pass: what spans fields of a scenario.

Pydantic has checked each field on its own; :func:`check_references` checks what no single
field can: names unique, every pool, GPU, job and input a field names exists, replicas fit
their pools, changes never remove more GPUs than are installed, power and training fit, and
uncertain inputs and their correlations can hold together. It raises a
:class:`~simulator.scenario.errors.ScenarioError` naming the first problem's field path.
"""

from __future__ import annotations

import pandas as pd

from simulator.scenario.book_references import check_books
from simulator.scenario.catalog import BUILTIN_GPUS
from simulator.scenario.correlation import copula_factor
from simulator.scenario.demand import PiecewiseGrowth
from simulator.scenario.errors import ScenarioError
from simulator.scenario.fleet import OnDemand, Owned, Reserved
from simulator.scenario.plan import check_plan_orders
from simulator.scenario.scenario import Scenario
from simulator.scenario.served import ServedModel
from simulator.scenario.suggest import closest, unknown_name
from simulator.scenario.training import LaunchAfter
from simulator.scenario.uncertain import copula_keys
from simulator.units import SECONDS_PER_YEAR, format_timestamp


def check_references(scenario: Scenario) -> None:
    """Check what spans fields; raise :class:`ScenarioError` naming the first problem."""
    pools = scenario.fleet.pools
    pool_names = [pool.name for pool in pools]
    for index, pool in enumerate(pools):
        if pool_names.index(pool.name) != index:
            raise ScenarioError(("fleet", "pools", index, "name"), f"duplicate pool name {pool.name!r}")
        if pool.gpu not in scenario.gpus:
            raise ScenarioError(("fleet", "pools", index, "gpu"),
                                unknown_name("GPU", pool.gpu, sorted({*BUILTIN_GPUS, *scenario.gpus}), "known"))
        _check_changes(scenario, index)
        _check_acquisition(scenario, index)
    _check_power(scenario)
    _check_training(scenario, pool_names)
    check_books(scenario, pool_names)
    opex_names = [line.name for line in scenario.opex]
    for index, name in enumerate(opex_names):
        if opex_names.index(name) != index:
            raise ScenarioError(("opex", index, "name"), f"duplicate opex line {name!r}")
    model_names = [model.name for model in scenario.models]
    for index, model in enumerate(scenario.models):
        if model_names.index(model.name) != index:
            raise ScenarioError(("models", index, "name"), f"duplicate model name {model.name!r}")
        for slot, pool_name in enumerate(model.pools):
            if pool_name not in pool_names:
                raise ScenarioError(("models", index, "pools", slot), unknown_name("pool", pool_name, pool_names))
        for pool_name, shape in model.replicas.items():
            if pool_name not in model.pools:
                guess = closest(pool_name, model.pools)
                raise ScenarioError(("models", index, "replicas", pool_name),
                                    f"{pool_name!r} is not one of the model's pools ({', '.join(model.pools)})"
                                    + (f"; did you mean {guess!r}?" if guess else ""))
            if (shape.companion_pool is None) != (shape.companion_gpus is None):
                raise ScenarioError(("models", index, "replicas", pool_name, "companion_gpus"),
                                    "give companion_pool and companion_gpus together")
        _check_companions(scenario, index, pool_names)
        _check_replica_sizes(scenario, index, pool_names)
        if len(set(model.pools)) != len(model.pools):
            raise ScenarioError(("models", index, "pools"), "a pool is listed twice")
        growth = model.demand.growth
        if isinstance(growth, PiecewiseGrowth) and growth.extrapolate == "trend":
            ordered = sorted(growth.points, key=lambda point: scenario.horizon.offset_of(point.at))
            if len(ordered) < 2 or not ordered[-2].rps > 0:
                raise ScenarioError(("models", index, "demand", "growth", "extrapolate"),
                                    "trend needs the last two points, the one before last above 0 req/s")
        if isinstance(growth, PiecewiseGrowth) and growth.extrapolate is None:
            last = max(scenario.horizon.offset_of(point.at) for point in growth.points)
            if last < scenario.horizon.length_s - 1e-6:
                end = format_timestamp(scenario.horizon.start + pd.Timedelta(seconds=last))
                raise ScenarioError(("models", index, "demand", "growth"),
                                    f"its last point ({end}) comes before the horizon's end "
                                    f"({format_timestamp(scenario.horizon.end_time)}); say what follows it: "
                                    "extrapolate: hold (keep the last rate) or extrapolate: trend (keep growing)")
        start = model.demand.start
        if isinstance(start, LaunchAfter) and start.after_job not in {job.name for job in scenario.training.jobs}:
            raise ScenarioError(("models", index, "demand", "start", "after_job"),
                                unknown_name("training job", start.after_job,
                                             [job.name for job in scenario.training.jobs], "jobs"))
        _check_replica_serving(model, index)
    _check_uncertain(scenario)
    if scenario.plan is not None:
        check_plan_orders(scenario.plan.orders, pools)


def _check_uncertain(scenario: Scenario) -> None:
    """A draw name is not also a field path; correlations name inputs and can hold together."""
    for path, spec in sorted(scenario.uncertain.items()):
        if spec.draw is not None and spec.draw in scenario.uncertain:
            raise ScenarioError(("uncertain", path, "draw"), f"{spec.draw!r} is a field path; name the draw otherwise")
    copula_factor(scenario.correlations, copula_keys(scenario.uncertain, scenario.fixed_inputs))


def _check_replica_serving(model: ServedModel, index: int) -> None:
    """A replica is its tp × dp × pp GPUs, and every serving block it derives from names its LLM."""
    serving = model.serving
    if serving is not None and model.gpus_per_replica is not None and model.gpus_per_replica != serving.gpus:
        raise ScenarioError(
            ("models", index, "gpus_per_replica"),
            f"is {model.gpus_per_replica} but serving's tp × dp × pp is {serving.gpus}; a replica is its "
            "parallel group",
        )
    for pool_name, shape in model.replicas.items():
        loc = ("models", index, "replicas", pool_name)
        if serving is None and shape.serving is not None and shape.serving.model is None:
            raise ScenarioError((*loc, "serving", "model"), "name the LLM the replica serves, e.g. llama-3.1-70b "
                                "(the model has no serving block of its own to take it from)")
        spec = model.serving_on(pool_name)
        if shape.gpus_per_replica is not None and spec is not None and shape.gpus_per_replica != spec.gpus:
            raise ScenarioError((*loc, "gpus_per_replica"),
                                f"is {shape.gpus_per_replica} but serving's tp × dp × pp is {spec.gpus} on this "
                                "pool; a replica is its parallel group")


def _check_companions(scenario: Scenario, index: int, pool_names: list[str]) -> None:
    """A disaggregated unit's other pool exists, is not the pool it is listed on, and holds its side."""
    model = scenario.models[index]
    for name in model.pools:
        shape = model.replicas.get(name)
        own = shape is not None and shape.serving is not None and shape.serving.disaggregation is not None
        if shape is not None and shape.companion_pool is not None:
            loc: tuple = ("models", index, "replicas", name, "companion_pool")
        else:
            spec = model.unit_serving_on(name)
            side = spec.disaggregation.elsewhere if spec is not None else None
            if side is None:
                continue
            loc = ("models", index, *(("replicas", name, "serving") if own else ("serving",)), "disaggregation",
                   side, "pool")
        companion = model.shape_on(name)
        other, gpus = companion.companion_pool, companion.companion_gpus
        if other not in pool_names or other == name:
            raise ScenarioError(loc, f"must name another pool of the fleet than {name!r}, not {other!r} "
                                f"(pools: {', '.join(pool_names)})")
        most = _most_gpus(scenario, pool_names.index(other), for_inference=True)
        if 0 < most < gpus:
            raise ScenarioError(loc, f"the unit's side there holds {gpus:,} GPUs but pool {other!r} never holds "
                                f"more than {most:,}")


def _check_replica_sizes(scenario: Scenario, index: int, pool_names: list[str]) -> None:
    """A replica must fit a pool: a size given for one pool on that pool, and the model-level
    size on at least one of the pools it applies to."""
    model = scenario.models[index]
    if not model.pools or model.api_only:
        return
    most = {name: _most_gpus(scenario, pool_names.index(name), for_inference=True) for name in model.pools}
    inherited = []
    for name in model.pools:
        shape = model.replicas.get(name)
        own_tp = shape is not None and shape.serving is not None and any(
            getattr(shape.serving, key) is not None for key in ("tp", "dp", "pp"))
        if shape is None or (shape.gpus_per_replica is None and not own_tp):
            inherited.append(name)
            continue
        size = model.shape_on(name).gpus_per_replica
        if 0 < most[name] < size:
            field = ("gpus_per_replica",) if shape.gpus_per_replica is not None else ("serving", "tp")
            raise ScenarioError(("models", index, "replicas", name, *field),
                                f"is {size} but pool {name!r} never holds more than {most[name]:,} GPUs")
    largest = max((most[name] for name in inherited), default=0)
    if 0 < largest < model.replica_gpus:
        field = ("serving", "tp") if model.gpus_per_replica is None and model.serving is not None else (
            "gpus_per_replica",)
        raise ScenarioError(("models", index, *field),
                            f"is {model.replica_gpus} but its pools never hold more than {largest:,} GPUs")


def _check_acquisition(scenario: Scenario, index: int) -> None:
    pool = scenario.fleet.pools[index]
    acquisition = pool.acquisition
    loc = ("fleet", "pools", index, "acquisition")
    horizon = scenario.horizon
    if isinstance(acquisition, Reserved):
        start, _ = acquisition.bounds_s(horizon)  # a term past the horizon's end is reported, not refused
        if start < 0:
            raise ScenarioError((*loc, "start"), "is before the start of the horizon")
    if isinstance(acquisition, OnDemand):
        if acquisition.max_count is not None and acquisition.max_count < pool.count:
            raise ScenarioError((*loc, "max_count"), f"is below the pool's count ({pool.count})")
        if acquisition.autoscale is not None and acquisition.max_count is None:
            raise ScenarioError((*loc, "max_count"), "is required with autoscale (the most GPUs it may rent)")
        scale = acquisition.autoscale
        if scale is not None and (acquisition.max_count or 0) < scale.node_gpus:
            raise ScenarioError((*loc, "max_count"), f"is below one node of {scale.node_gpus} GPUs (autoscale.node_gpus)")
        if acquisition.min_count is not None:
            if acquisition.autoscale is None:
                raise ScenarioError((*loc, "min_count"), "applies with autoscale (the fewest GPUs it keeps)")
            if acquisition.min_count > (acquisition.max_count or 0):
                raise ScenarioError((*loc, "min_count"), f"is above max_count ({acquisition.max_count})")

    if not isinstance(acquisition, Owned) and (pool.orders or pool.procurement):
        raise ScenarioError(("fleet", "pools", index, "orders" if pool.orders else "procurement"),
                            "orders and procurement apply to owned pools")
    for slot, order in enumerate(pool.orders):
        # Placed before the start is fine (a fleet that already exists has orders in flight),
        # as long as the GPUs have not arrived by then: those are part of the pool's count.
        if horizon.offset_of(order.at) + order.lead_time < 0:
            raise ScenarioError(("fleet", "pools", index, "orders", slot, "at"),
                                "with its lead_time the order arrives before the start of the horizon; "
                                "count those GPUs in the pool's count")
    if isinstance(acquisition, Owned):
        _check_in_service(acquisition, pool.count, horizon, loc)


def _check_in_service(acquisition: Owned, count: int, horizon, loc: tuple) -> None:
    """The starting GPUs of an owned pool: in service by the start, worth at most their price."""
    since = acquisition.in_service_since
    if since is not None and horizon.offset_of(since) > 0:
        raise ScenarioError((*loc, "in_service_since"),
                            f"is after the start of the horizon ({horizon.start.date()}); "
                            "GPUs installed later are an order or a change")
    book = acquisition.book_value_usd
    if book is None:
        return
    price = float(acquisition.price_usd or 0.0)
    if book > price * count:
        raise ScenarioError((*loc, "book_value_usd"),
                            f"is {book:,.0f}, above price × count ({price:,.0f} × {count:,} = {price * count:,.0f})")
    age = 0.0 if since is None else -horizon.offset_of(since)
    if book > 0 and age >= acquisition.depreciation_years * SECONDS_PER_YEAR:
        raise ScenarioError((*loc, "book_value_usd"),
                            f"is {book:,.0f} but the GPUs' {acquisition.depreciation_years:g}-year depreciation "
                            "life ended before the horizon starts; give 0 or a later in_service_since")
    if acquisition.retire_years is not None and age >= acquisition.retire_years * SECONDS_PER_YEAR:
        raise ScenarioError((*loc, "retire_years"),
                            f"the starting GPUs, in service since {since.date()}, are retired before the "
                            "horizon starts; lower the pool's count instead")


def _most_gpus(scenario: Scenario, index: int, for_inference: bool = False) -> int:
    """The most GPUs a pool can ever hold (for a training job: its partition, if dedicated)."""
    pool = scenario.fleet.pools[index]
    if pool.training.mode == "dedicated" and not for_inference:
        return pool.training.partition_gpus
    total = pool.count + sum(c.add or 0 for c in pool.changes) + sum(o.count for o in pool.orders)
    if isinstance(pool.acquisition, OnDemand) and pool.acquisition.max_count is not None:
        total = max(total, pool.acquisition.max_count)
    if pool.procurement is not None:
        return 10**12  # a policy can order without bound
    return total


def _check_training(scenario: Scenario, pool_names: list[str]) -> None:
    training = scenario.training
    names = [job.name for job in training.jobs]
    for kind, entries in (("jobs", training.jobs), ("streams", training.streams), ("traces", training.traces)):
        for slot, entry in enumerate(entries):
            loc = ("training", kind, slot)
            if entry.pool not in pool_names:
                raise ScenarioError((*loc, "pool"), unknown_name("pool", entry.pool, pool_names))
            most = _most_gpus(scenario, pool_names.index(entry.pool))
            sizes = [entry.gpus] if kind == "jobs" else (
                [g for _, g, _ in entry.rows] if kind == "traces" else
                ([entry.gpus] if isinstance(entry.gpus, int) else entry.gpus.choices))
            if max(sizes, default=0) > most:
                raise ScenarioError((*loc, "gpus"),
                                    f"needs {max(sizes):,} GPUs but pool {entry.pool!r} never has more than {most:,}")
            if kind == "jobs" and names.index(entry.name) != slot:
                raise ScenarioError((*loc, "name"), f"duplicate job name {entry.name!r}")
            if kind == "streams" and entry.end is not None and (
                    scenario.horizon.offset_of(entry.end) <= scenario.horizon.offset_of(entry.start)):
                raise ScenarioError((*loc, "end"), "is not after the stream's start: it would submit no job")
    for index, pool in enumerate(scenario.fleet.pools):
        if pool.training.mode == "dedicated" and pool.training.partition_gpus > pool.count + sum(
                c.add or 0 for c in pool.changes) + sum(o.count for o in pool.orders):
            raise ScenarioError(("fleet", "pools", index, "training", "partition_gpus"),
                                "is larger than the pool ever is")


def _check_power(scenario: Scenario) -> None:
    caps = scenario.power.caps
    seen: set[str] = set()
    for slot, upgrade in enumerate(scenario.power.upgrades):
        if upgrade.name in seen:
            raise ScenarioError(("power", "upgrades", slot, "name"), f"{upgrade.name!r} is used twice")
        seen.add(upgrade.name)
        if not caps:
            raise ScenarioError(("power", "upgrades", slot), "an upgrade raises the site's power cap: give power.caps")
    if not caps:
        return
    horizon = scenario.horizon
    at_start = [(horizon.offset_of(cap.at), slot) for slot, cap in enumerate(caps) if horizon.offset_of(cap.at) <= 0]
    if not at_start:
        return
    slot = max(at_start)[1]
    demand_mw = sum(
        pool.count * scenario.site_kw_per_gpu(pool.gpu) for pool in scenario.fleet.pools if pool.owned
    ) / 1000.0
    if demand_mw > caps[slot].mw + 1e-9:
        raise ScenarioError(
            ("power", "caps", slot, "mw"),
            f"{caps[slot].mw:g} MW is below the initial owned fleet's {demand_mw:.3f} MW "
            "(GPUs × TDP × server power factor × PUE)",
        )


def _check_changes(scenario: Scenario, pool_index: int) -> None:
    pool = scenario.fleet.pools[pool_index]
    horizon = scenario.horizon
    timed = sorted(
        ((horizon.offset_of(change.at), slot, change) for slot, change in enumerate(pool.changes)),
        key=lambda item: (item[0], item[1]),
    )
    installed = pool.count
    # GPUs that orders and a procurement policy can bring, whenever they arrive: their dates
    # (slips, the policy's decisions) are known only in the run, so they count as possibly in
    # service throughout (None: a policy without max_orders, no bound).
    arriving = _most_arriving(pool)
    out = 0  # GPUs out of service
    returnable = 0  # of them, taken out without a repair distribution (back_in_service returns these)
    for offset, slot, change in timed:
        loc = ("fleet", "pools", pool_index, "changes", slot)
        if offset < 0:
            raise ScenarioError((*loc, "at"), "is before the start of the horizon")
        if change.out_of_service is not None or change.back_in_service is not None:
            field = "out_of_service" if change.out_of_service is not None else "back_in_service"
            if not isinstance(pool.acquisition, Owned | Reserved):
                raise ScenarioError((*loc, field), "applies to owned and reserved pools (return rented GPUs instead)")
        if change.out_of_service is not None:
            in_service = installed - out + (arriving or 0)
            if arriving is not None and change.out_of_service > in_service:
                notes = [f"{installed} installed by then and up to {arriving} arriving by order or procurement"
                         ] if arriving else []
                notes += [f"{out} already out, counted out until they return"] if out else []
                raise ScenarioError(
                    (*loc, "out_of_service"),
                    f"takes {change.out_of_service} GPUs out of service when "
                    + (f"at most {in_service} can be" if arriving else f"only {in_service} are") + " in service"
                    + (f" ({'; '.join(notes)})" if notes else ""),
                )
            out += change.out_of_service
            if change.repair is None:
                returnable += change.out_of_service
            continue
        if change.back_in_service is not None:
            if change.back_in_service > returnable:
                with_repair = out - returnable
                raise ScenarioError(
                    (*loc, "back_in_service"),
                    f"returns {change.back_in_service} GPUs when only {returnable} are out of service"
                    + (f" without a repair ({with_repair} more return after their repair)" if with_repair else ""),
                )
            out -= change.back_in_service
            returnable -= change.back_in_service
            continue
        installed += change.delta
        if installed < 0:
            raise ScenarioError(
                (*loc, "remove"),
                f"removes {change.remove} GPUs when only {installed + (change.remove or 0)} "
                "are installed",
            )
        if arriving is not None and installed + arriving < out:
            raise ScenarioError(
                (*loc, "remove"),
                f"removes {change.remove} GPUs when only {installed + arriving + (change.remove or 0) - out} "
                f"{'can be' if arriving else 'are'} in service "
                f"({out} are out of service: to scrap them, bring them back in service first)",
            )


def _most_arriving(pool) -> int | None:
    """The most GPUs a pool's ``orders`` and ``procurement`` can ever bring (None: no bound)."""
    arriving = sum(order.count for order in pool.orders)
    policy = pool.procurement
    if policy is not None:
        if policy.max_orders is None:
            return None
        arriving += policy.max_orders * policy.order_count
    return arriving

