"""When running short matters: the definition of a material shortfall.

The kernels count every unserved request. A planner does not call one hour that drops 0.05%
of its requests "running short", so risk figures (first shortfall, paths running short,
P(short) per period, hours and GPU-hours short) count a step as short only when, for some
model, the unserved share of its demand exceeds ``min_unserved_share`` or (when set) the
share of its requests served within the SLO falls below ``min_slo_attainment``; and only
inside an episode of consecutive short steps that lasts at least ``min_duration``. The raw
unserved requests stay in every table.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from simulator.scenario.types import Duration, Frozen


class Shortfall(Frozen):
    """What counts as running short."""

    min_unserved_share: Annotated[float, Field(ge=0, lt=1)] = Field(
        default=0.001, description="A step is short when a model leaves more than this share of its demand unserved")
    min_slo_attainment: Annotated[float, Field(gt=0, le=1)] | None = Field(
        default=None, description="Or when fewer than this share of a model's requests meet its SLO (off when unset)")
    min_duration: Duration = Field(
        default=0.0, description="Shorter episodes of consecutive short steps do not count (one step at least)")
