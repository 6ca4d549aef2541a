"""The root of a scenario: everything one simulation needs, validated and frozen.

Validation runs in two passes. Pydantic checks each field's type and range; then
:func:`simulator.scenario.references.check_references` checks what spans fields: names
unique, every pool and GPU a model or pool names exists, no change removes more GPUs than
are installed. Before either pass,
catalog defaults are filled in (a pool's GPU price from the catalog, a model's pricing from
the scenario's), so the resolved scenario shows every figure the simulation used.
"""

from __future__ import annotations

import copy
import datetime
import re
from typing import Annotated, Any

from pydantic import AfterValidator, Field, PrivateAttr, field_validator, model_validator

from simulator.scenario.catalog import BUILTIN_GPUS, GpuSpec, canonical_gpu_name
from simulator.scenario.contracts import Contract, ContractPipeline
from simulator.scenario.correlation import Correlation
from simulator.scenario.economics import (
    Alerts,
    Energy,
    Facility,
    Financing,
    OpexLine,
    OtherCosts,
    Pricing,
    Taxes,
)
from simulator.scenario.fleet import Failures, Fleet, Power
from simulator.scenario.horizon import Horizon
from simulator.scenario.market_value import MarketValue
from simulator.scenario.markets import Markets
from simulator.scenario.plan import PlanSettings
from simulator.scenario.plausibility import CheckName
from simulator.scenario.served import ServedModel
from simulator.scenario.shortfall import Shortfall
from simulator.scenario.training import Training
from simulator.scenario.types import Frozen
from simulator.scenario.uncertain import Uncertain

#: A variant's name is its folder under ``variants/``: a word, never a path (``../x``, ``/tmp``),
#: nor a control character, and short enough for any file system (60 characters of up to 4 bytes).
_VARIANT_NAME = re.compile(r"\w[\w .+,=@()-]*")


def _variant_name(name: str) -> str:
    if name.lower() == "base":
        raise ValueError("'base' names the run without variants; give the variant another name")
    if not _VARIANT_NAME.fullmatch(name):
        raise ValueError("a variant's name is the name of its folder: letters, digits, spaces and - _ . + , = @ ( ), "
                         f"starting with a letter or digit; got {name!r}")
    return name


VariantName = Annotated[str, Field(min_length=1, max_length=60), AfterValidator(_variant_name)]


class Scenario(Frozen):
    """A complete, validated scenario."""

    name: Annotated[str, Field(min_length=1, max_length=120)] = Field(
        description="Name of the scenario; the default output directory is outputs/<name>/")
    description: str = Field(default="", description="Free text, shown in the report")
    horizon: Horizon = Field(description="Start, length and step of the simulation")
    seed: Annotated[int, Field(ge=0, lt=2**63)] = Field(
        default=0, description="Root seed of every random draw: the same seed gives the same outputs")
    paths: Annotated[int, Field(ge=1, le=1_000_000)] = Field(
        default=1, description="Monte Carlo paths run by default")
    gpus: dict[str, GpuSpec] = Field(
        default_factory=dict,
        description="GPU types used: catalog entries (with overrides) and new ones",
    )
    fleet: Fleet = Field(default_factory=Fleet, description="The GPU pools")
    models: list[ServedModel] = Field(
        default_factory=list, description="The served models: where they run, their demand and pricing")
    pricing: Pricing = Field(default_factory=Pricing, description="Default token prices of the served models")
    energy: Energy = Field(default_factory=Energy, description="Power draw and electricity price")
    facility: Facility = Field(default_factory=Facility, description="Colocation price of owned GPUs")
    other_costs: OtherCosts = Field(
        default_factory=OtherCosts, description="Fixed serving-infrastructure costs, in COGS")
    failures: Failures | None = Field(
        default=None, description="Failures of every pool that does not set its own"
    )
    power: Power = Field(default_factory=Power, description="Site power caps and upgrades")
    financing: Financing = Field(
        default_factory=Financing, description="Opening cash, loans, debt facilities and equity")
    opex: list[OpexLine] = Field(default_factory=list, description="Operating expenses, below gross margin")
    taxes: Taxes = Field(default_factory=Taxes, description="Income tax")
    contracts: list[Contract] = Field(default_factory=list, description="GPU-hour contracts signed: GPUs held "
                                      "for customers before serving gets any")
    contract_pipeline: list[ContractPipeline] = Field(
        default_factory=list, description="Contracts to come: Poisson arrivals with sizes and prices drawn")
    markets: Markets = Field(default_factory=Markets, description="Prices that move over time (rental rates)")
    market_value: dict[str, MarketValue] = Field(
        default_factory=dict, description="Resale value by GPU type (default: a GPU is worth its book value)")

    @field_validator("market_value", mode="before")
    @classmethod
    def _catalog_spelling(cls, value: Any) -> Any:
        """A curve's GPU spelled as the catalog spells it (``h100`` is ``H100``)."""
        if not isinstance(value, dict):
            return value
        return {canonical_gpu_name(str(name)) or name: curve for name, curve in value.items()}
    alerts: Alerts = Field(
        default_factory=Alerts, description="Thresholds evaluated month by month on every path")
    shortfall: Shortfall = Field(default_factory=Shortfall, description="What counts as running short")
    training: Training = Field(
        default_factory=Training, description="Training jobs, streams and traces, and the queue policy")
    uncertain: dict[str, Uncertain] = Field(
        default_factory=dict,
        description="Inputs drawn once per path, by field path (fields hold their medians)",
    )
    correlations: list[Correlation] = Field(
        default_factory=list,
        description="Rank correlations between uncertain inputs (field paths or draw names)",
    )
    fixed_inputs: list[str] = Field(
        default_factory=list,
        description="Correlated inputs fixed by an override (a variant, --set): their draws still mix into "
        "their partners', so the partners draw on each path what they draw without the override",
    )
    plan: PlanSettings | None = Field(default=None, description="What `fleetcast plan` may order, and its risk target")
    variants: dict[VariantName, dict[str, Any]] = Field(
        default_factory=dict,
        description="Named alternatives: field overrides as {'fleet.pools[0].count': 512}",
    )
    accept: list[CheckName] = Field(
        default_factory=list,
        description="Plausibility checks confirmed: the values they flag are meant (as --accept NAME; "
        "growth, percentile, latency, price, horizon)",
    )
    plausibility_notes: list[str] = Field(
        default_factory=list,
        description="What the plausibility checks found, for the reader (written when the scenario loads; not used)",
    )

    _source_dir: str = PrivateAttr(default=".")

    @property
    def source_dir(self) -> str:
        """The folder the scenario file was read from (relative file names start there)."""
        return self._source_dir

    def __eq__(self, other: object) -> bool:
        """Equal when every field is: where the file was read from does not matter, nor what the
        plausibility checks noted of it (their notes name the lines of the file read)."""
        if not isinstance(other, Scenario):
            return False
        mine, theirs = dict(self.__dict__), dict(other.__dict__)
        mine.pop("plausibility_notes", None)
        theirs.pop("plausibility_notes", None)
        return mine == theirs

    __hash__ = None  # type: ignore[assignment]  # mutable-looking private state; not a dict key

    @field_validator("variants", mode="before")
    @classmethod
    def _plain_values(cls, value: Any) -> Any:
        """Dates in overrides are kept as ISO text, as they are written back out."""
        return _plain(value)

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


    def gpu(self, name: str) -> GpuSpec:
        """The spec of a GPU type used by this scenario."""
        return self.gpus[name]

    def failures_of(self, pool_index: int) -> Failures | None:
        """The pool's failure model, or the scenario's."""
        own = self.fleet.pools[pool_index].failures
        return own if own is not None else self.failures

    def site_kw_per_gpu(self, gpu: str) -> float:
        """Power one owned GPU draws from the site at full load: TDP × server factor × PUE."""
        return self.gpu(gpu).tdp_w / 1000.0 * self.energy.server_power_factor * self.energy.pue


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, datetime.date):
        return value.isoformat()
    return value


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
    if name not in gpus:
        gpus[name] = dict(BUILTIN_GPUS[name])
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
