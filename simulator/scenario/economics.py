"""Prices and running costs: what a token sells for, what energy, space and overhead cost.

Defaults are sourced reference figures (``shared/data/reference_hardware.md``): PUE 1.3
(average hyperscale), US industrial power $0.083/kWh (2025), a GPU drawing 75% of its TDP
on average (Epoch AI), server power 1.8× the GPUs' TDP (DGX H100: 10.2 kW for 8 × 700 W),
and wholesale colocation at $184 per kW-month (North America, H2 2024).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from simulator.scenario.types import Fraction, Frozen, NonNegative


class Pricing(Frozen):
    """What users pay, per million tokens."""

    input_usd_per_1m: NonNegative = 0.0
    output_usd_per_1m: NonNegative = 0.0


class Energy(Frozen):
    """Electricity for owned GPUs (a rental price already includes it).

    Power drawn by one available GPU's share of its server is
    ``TDP × draw × server_power_factor``, where ``draw`` is ``draw_fraction`` for busy GPU
    time and ``idle_draw_fraction`` for idle time; the facility multiplies it by PUE.
    """

    pue: Annotated[float, Field(ge=1, le=5, allow_inf_nan=False)] = 1.3
    usd_per_kwh: NonNegative = 0.083
    draw_fraction: Fraction = Field(default=0.75, description="Average draw of a busy GPU / TDP")
    idle_draw_fraction: Fraction | None = Field(
        default=None, description="Draw of an idle GPU / TDP (default: same as draw_fraction)"
    )
    server_power_factor: Annotated[float, Field(ge=1, le=5, allow_inf_nan=False)] = Field(
        default=1.8, description="Server power per GPU / GPU TDP (CPUs, memory, network, fans)"
    )

    @property
    def idle_fraction(self) -> float:
        return self.draw_fraction if self.idle_draw_fraction is None else self.idle_draw_fraction


class Facility(Frozen):
    """Data-centre space and power for owned GPUs, priced per kW of IT load provisioned."""

    usd_per_kw_month: NonNegative = 184.0


class OtherCosts(Frozen):
    """Fixed costs of running the serving infrastructure (network, storage, support).

    Counted in COGS, spread evenly over time (a month is 30.4375 days).
    """

    usd_per_month: NonNegative = 0.0
