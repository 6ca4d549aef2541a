"""The P:D split of a disaggregated unit that serves the most requests per GPU within an SLO.

For each number of prefill replicas ``x`` (1 … ``max_prefill``), decode replicas ``y`` are added
one at a time while the unit's SLO capacity per GPU grows: with too few decode replicas TPOT
binds, with too many the prefill side's TTFT does and the added GPUs idle, so for each ``x``
the capacity per GPU rises to a peak and falls (the walk stops after ``patience`` splits
without a new best). Every split is the full tandem probe of
:func:`simulator.serving.capacity.capacity_curve` with the same requests and arrival draws.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from simulator.serving.capacity import CapacityCurve, Slo, SloUnreachable, capacity_curve
from simulator.serving.disaggregated import Unit
from simulator.serving.probe import TraceRequests
from simulator.serving.trace import LengthMix


@dataclass(frozen=True)
class SplitCandidate:
    """One split's capacity."""

    prefill_replicas: int
    decode_replicas: int
    gpus: int
    capacity_rps: float  # per unit; 0 when the SLO cannot be met
    curve: CapacityCurve | None

    @property
    def rps_per_gpu(self) -> float:
        return self.capacity_rps / self.gpus

    @property
    def split(self) -> str:
        return f"{self.prefill_replicas}:{self.decode_replicas}"


def search_split(unit: Unit, mix: LengthMix | TraceRequests, slo: Slo, max_prefill: int = 4, max_decode: int = 8,
                 patience: int = 2, **probe) -> list[SplitCandidate]:
    """Every split tried, best capacity per GPU first (module docstring).

    ``unit`` gives the sides' models, engines and link (its replica counts are replaced);
    ``probe``: :func:`capacity_curve`'s other arguments (``requests``, ``seed``, ``speculation`` …).
    """
    if not (1 <= max_prefill <= 64 and 1 <= max_decode <= 64):
        raise ValueError("max_prefill and max_decode must be between 1 and 64")
    tried: list[SplitCandidate] = []
    for x in range(1, max_prefill + 1):
        best = 0.0
        since = 0
        for y in range(1, max_decode + 1):
            candidate = replace(unit, prefill=replace(unit.prefill, replicas=x), decode=replace(unit.decode, replicas=y))
            try:
                curve = capacity_curve(candidate.prefill.model, mix, slo, candidate.decode.max_num_seqs,
                                       unit=candidate, **probe)
                capacity = curve.capacity_rps
            except SloUnreachable:  # the SLO cannot be met at any rate on this split (other errors propagate)
                curve, capacity = None, 0.0
            tried.append(SplitCandidate(x, y, candidate.gpus, capacity, curve))
            if capacity / candidate.gpus > best * (1 + 1e-9):
                best, since = capacity / candidate.gpus, 0
            else:
                since += 1
                if since >= patience:
                    break
    return sorted(tried, key=lambda c: (-c.rps_per_gpu, c.gpus))
