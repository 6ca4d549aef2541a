"""Small scenario builders for tests: deterministic by default, so answers can be hand-computed."""

from __future__ import annotations

import copy
from typing import Any

import simulator


def base_scenario(**top: Any) -> dict[str, Any]:
    """One owned pool of 8 H100s, one model, constant demand without noise, 24 hourly steps.

    Energy, facility and other costs are zero unless a test sets them, so each test sees only
    the mechanism it checks.
    """
    scenario: dict[str, Any] = {
        "name": "hand",
        "horizon": {"start": "2026-01-01", "duration": "24h", "step": "1h"},
        "seed": 1,
        "fleet": {
            "pools": [
                {
                    "name": "a",
                    "gpu": "H100",
                    "acquisition": {"type": "owned", "price_usd": 0},
                    "count": 8,
                }
            ]
        },
        "models": [
            {
                "name": "m",
                "pools": ["a"],
                "gpus_per_replica": 1,
                "capacity_rps": 1.0,
                "demand": {"base_rps": 4.0, "noise": "none", "input_tokens": 1000, "output_tokens": 200},
            }
        ],
        "pricing": {"input_usd_per_1m": 0.0, "output_usd_per_1m": 0.0},
        "energy": {"usd_per_kwh": 0.0},
        "facility": {"usd_per_kw_month": 0.0},
        "other_costs": {"usd_per_month": 0.0},
    }
    scenario.update(copy.deepcopy(top))
    return scenario


def run(data: dict[str, Any], **kwargs: Any) -> simulator.Results:
    """Simulate a dict scenario serially, keeping every path's series."""
    kwargs.setdefault("executor", "serial")
    kwargs.setdefault("keep_paths", None)
    return simulator.simulate(simulator.load_scenario(data), **kwargs)
