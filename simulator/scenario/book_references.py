"""References of the books' sections: facilities name owned pools, contracts and markets name
pools of the right kind, resale curves name known GPUs (part of
:func:`simulator.scenario.references.check_references`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from simulator.scenario.catalog import BUILTIN_GPUS
from simulator.scenario.errors import ScenarioError
from simulator.scenario.suggest import unknown_name

if TYPE_CHECKING:
    from simulator.scenario.scenario import Scenario


def check_books(scenario: Scenario, pool_names: list[str]) -> None:
    """Facilities name existing owned pools; resale curves name known GPU types."""
    owned = {pool.name for pool in scenario.fleet.pools if pool.owned}
    for index, facility in enumerate(scenario.financing.facilities):
        for field in ("pools", "collateral"):
            for slot, name in enumerate(getattr(facility, field) or []):
                if name not in owned:
                    known = ", ".join(sorted(owned)) or "none"
                    where = ("financing", "facilities", index, field, slot)
                    if name not in pool_names:
                        raise ScenarioError(where, unknown_name("pool", name, sorted(owned), "owned pools"))
                    raise ScenarioError(where, f"not an owned pool {name!r}; owned pools: {known}")
    _check_contracts(scenario, pool_names)
    seen: set = set()
    for index, market in enumerate(scenario.markets.rent):
        where = ("markets", "rent", index, "pool")
        if market.pool not in pool_names:
            raise ScenarioError(where, unknown_name("pool", market.pool, pool_names))
        kind = scenario.fleet.pools[pool_names.index(market.pool)].acquisition.type
        if kind not in ("on_demand", "spot"):
            raise ScenarioError(where, f"pool {market.pool!r} is {kind}: rates move for on-demand and spot pools")
        if market.pool in seen:
            raise ScenarioError(where, f"pool {market.pool!r} has two markets")
        seen.add(market.pool)
    for index, market in enumerate(scenario.markets.purchase):
        where = ("markets", "purchase", index, "pool")
        if market.pool not in pool_names:
            raise ScenarioError(where, unknown_name("pool", market.pool, pool_names))
        if not scenario.fleet.pools[pool_names.index(market.pool)].owned:
            raise ScenarioError(where, f"pool {market.pool!r} is not owned: purchase prices move for owned pools")
        if ("purchase", market.pool) in seen:
            raise ScenarioError(where, f"pool {market.pool!r} has two purchase markets")
        seen.add(("purchase", market.pool))
    models = [model.name for model in scenario.models]
    for index, market in enumerate(scenario.markets.api):
        where = ("markets", "api", index, "model")
        if market.model not in models:
            raise ScenarioError(where, unknown_name("model", market.model, models))
        if scenario.models[models.index(market.model)].api is None:
            raise ScenarioError(where, f"model {market.model!r} has no 'api' tier whose prices could move")
        if ("api", market.model) in seen:
            raise ScenarioError(where, f"model {market.model!r} has two API markets")
        seen.add(("api", market.model))
    for gpu in scenario.market_value:
        if gpu not in scenario.gpus and gpu not in BUILTIN_GPUS:
            raise ScenarioError(("market_value", gpu),
                                unknown_name("GPU", gpu, sorted({*BUILTIN_GPUS, *scenario.gpus}), "known"))


def _check_contracts(scenario: Scenario, pool_names: list[str]) -> None:
    """A contract holds GPUs of an owned or reserved pool no training job uses; names are unique."""
    trained = {getattr(entry, "pool", None) for group in (getattr(scenario.training, name, []) or []
                                                          for name in ("jobs", "streams", "traces"))
               for entry in group}
    names: list[str] = []
    for section in ("contracts", "contract_pipeline"):
        for index, contract in enumerate(getattr(scenario, section)):
            where = (section, index)
            if contract.name in names:
                raise ScenarioError((*where, "name"), f"duplicate contract name {contract.name!r}")
            names.append(contract.name)
            if contract.pool not in pool_names:
                raise ScenarioError((*where, "pool"), unknown_name("pool", contract.pool, pool_names))
            pool = scenario.fleet.pools[pool_names.index(contract.pool)]
            if pool.acquisition.type not in ("owned", "reserved"):
                raise ScenarioError((*where, "pool"), f"pool {contract.pool!r} is {pool.acquisition.type}: contracts "
                                    "sell owned or reserved GPUs")
            if getattr(pool.acquisition, "autoscale", None) is not None:
                raise ScenarioError((*where, "pool"), f"pool {contract.pool!r} autoscales; contracts need a fixed pool")
            if contract.pool in trained:
                raise ScenarioError((*where, "pool"), f"training jobs run on pool {contract.pool!r}; sell GPUs of a "
                                    "pool without training")
