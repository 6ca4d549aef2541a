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


def fed_a_stream_that_never_ends(args: list[str], fifo: Any, chunk: bytes, megabytes: int) -> tuple[int, str]:
    """Run ``python -m simulator ARGS`` reading the FIFO ``fifo``, fed ``megabytes`` of
    ``chunk`` and then held open: a reader that does not stop at its limit waits for more,
    so it fails the test (after two minutes) instead of exhausting the machine's memory.
    Returns the exit code and stderr."""
    import os
    import subprocess
    import sys

    import pytest

    os.mkfifo(fifo)
    proc = subprocess.Popen([sys.executable, "-m", "simulator", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with open(fifo, "wb", buffering=0) as writer:  # opens once the command opens it
        try:
            for _ in range(megabytes * 2**20 // len(chunk)):
                writer.write(chunk)
        except BrokenPipeError:  # the command stopped reading and closed it
            pass
        try:
            _, stderr = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            pytest.fail(f"{' '.join(args)} read on past its limit")
    return proc.returncode, stderr
