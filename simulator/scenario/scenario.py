"""The root of a scenario: everything one simulation needs, validated and frozen.

Validation runs in two passes. Pydantic checks each field's type and range; then
:func:`check_references` checks what spans fields: names unique, every pool and GPU a model
or pool names exists, no change removes more GPUs than are installed. Before either pass,
catalog defaults are filled in (a pool's GPU price from the catalog, a model's pricing from
the scenario's), so the resolved scenario shows every figure the simulation used.
"""

from __future__ import annotations

import copy
from typing import Annotated, Any

from pydantic import Field, model_validator

from simulator.scenario.catalog import BUILTIN_GPUS, GpuSpec, canonical_gpu_name
from simulator.scenario.economics import Energy, Facility, OtherCosts, Pricing
from simulator.scenario.errors import ScenarioError
from simulator.scenario.fleet import Fleet
from simulator.scenario.horizon import Horizon
from simulator.scenario.served import ServedModel
from simulator.scenario.types import Frozen


class Scenario(Frozen):
    """A complete, validated scenario."""

    name: Annotated[str, Field(min_length=1, max_length=120)]
    description: str = ""
    horizon: Horizon
    seed: Annotated[int, Field(ge=0, lt=2**63)] = 0
    paths: Annotated[int, Field(ge=1, le=1_000_000)] = 1
    gpus: dict[str, GpuSpec] = Field(
        default_factory=dict,
        description="GPU types used: catalog entries (with overrides) and new ones",
    )
    fleet: Fleet = Field(default_factory=Fleet)
    models: list[ServedModel] = Field(default_factory=list)
    pricing: Pricing = Field(default_factory=Pricing)
    energy: Energy = Field(default_factory=Energy)
    facility: Facility = Field(default_factory=Facility)
    other_costs: OtherCosts = Field(default_factory=OtherCosts)

    @model_validator(mode="before")
    @classmethod
    def _fill_defaults(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = copy.deepcopy(data)
        gpus = _merge_gpu_catalog(data.get("gpus"))
        fleet = data.get("fleet")
        pools = fleet.get("pools") if isinstance(fleet, dict) else None
        for pool in pools if isinstance(pools, list) else []:
            if isinstance(pool, dict) and isinstance(pool.get("gpu"), str):
                _resolve_pool_gpu(pool, gpus)
        if gpus is not None:
            data["gpus"] = gpus
        return data

    def pricing_of(self, model: ServedModel) -> Pricing:
        """The model's own pricing, or the scenario's."""
        return model.pricing if model.pricing is not None else self.pricing

    def with_defaults_shown(self) -> Scenario:
        """The same scenario with inherited values written out (each model's pricing)."""
        models = [m.model_copy(update={"pricing": self.pricing_of(m)}) for m in self.models]
        return self.model_copy(update={"models": models})

    def gpu(self, name: str) -> GpuSpec:
        """The spec of a GPU type used by this scenario."""
        return self.gpus[name]


def _merge_gpu_catalog(user: Any) -> dict[str, Any] | Any:
    """Built-in entries with the user's overrides merged in, plus the user's own GPUs."""
    if user is None:
        return {}
    if not isinstance(user, dict):
        return user
    merged: dict[str, Any] = {}
    for name, fields in user.items():
        canonical = canonical_gpu_name(str(name))
        if canonical is not None and isinstance(fields, dict):
            merged[canonical] = {**BUILTIN_GPUS[canonical], **fields}
        else:
            merged[name] = fields
    return merged


def _resolve_pool_gpu(pool: dict[str, Any], gpus: dict[str, Any] | Any) -> None:
    """Spell the pool's GPU as the catalog does and fill its prices from the catalog."""
    if not isinstance(gpus, dict):
        return
    name = canonical_gpu_name(pool["gpu"], gpus) or canonical_gpu_name(pool["gpu"])
    if name is None:
        return  # check_references reports the unknown name with its path
    gpus.setdefault(name, dict(BUILTIN_GPUS[name]))
    pool["gpu"] = name
    spec = gpus[name]
    acquisition = pool.setdefault("acquisition", {"type": "owned"})
    if not isinstance(acquisition, dict) or not isinstance(spec, dict):
        return
    kind = acquisition.get("type", "owned")
    if kind == "owned" and "price_usd" not in acquisition:
        acquisition["price_usd"] = spec.get("price_usd")
    elif kind == "on_demand" and "usd_per_gpu_hour" not in acquisition:
        acquisition["usd_per_gpu_hour"] = spec.get("cloud_usd_per_gpu_hour")


def check_references(scenario: Scenario) -> None:
    """Check what spans fields; raise :class:`ScenarioError` naming the first problem."""
    pools = scenario.fleet.pools
    pool_names = [pool.name for pool in pools]
    for index, pool in enumerate(pools):
        if pool_names.index(pool.name) != index:
            raise ScenarioError(("fleet", "pools", index, "name"), f"duplicate pool name {pool.name!r}")
        if pool.gpu not in scenario.gpus:
            known = ", ".join(sorted({*BUILTIN_GPUS, *scenario.gpus}))
            raise ScenarioError(
                ("fleet", "pools", index, "gpu"), f"unknown GPU {pool.gpu!r}; known: {known}"
            )
        _check_changes(scenario, index)
    model_names = [model.name for model in scenario.models]
    for index, model in enumerate(scenario.models):
        if model_names.index(model.name) != index:
            raise ScenarioError(("models", index, "name"), f"duplicate model name {model.name!r}")
        for slot, pool_name in enumerate(model.pools):
            if pool_name not in pool_names:
                known = ", ".join(pool_names) or "none defined"
                raise ScenarioError(
                    ("models", index, "pools", slot), f"unknown pool {pool_name!r}; pools: {known}"
                )
        if len(set(model.pools)) != len(model.pools):
            raise ScenarioError(("models", index, "pools"), "a pool is listed twice")
        serving = model.serving
        if serving is not None and model.gpus_per_replica != serving.tp:
            raise ScenarioError(
                ("models", index, "gpus_per_replica"),
                f"is {model.gpus_per_replica} but serving.tp is {serving.tp}; a replica is its TP group",
            )


def _check_changes(scenario: Scenario, pool_index: int) -> None:
    pool = scenario.fleet.pools[pool_index]
    horizon = scenario.horizon
    timed = sorted(
        ((horizon.offset_of(change.at), slot, change) for slot, change in enumerate(pool.changes)),
        key=lambda item: (item[0], item[1]),
    )
    installed = pool.count
    for offset, slot, change in timed:
        loc = ("fleet", "pools", pool_index, "changes", slot)
        if offset < 0:
            raise ScenarioError((*loc, "at"), "is before the start of the horizon")
        installed += change.delta
        if installed < 0:
            raise ScenarioError(
                (*loc, "remove"),
                f"removes {change.remove} GPUs when only {installed + (change.remove or 0)} "
                "are installed",
            )


