"""Compile once, at install: ``python -m simulator.runs.warm [SCENARIO]`` (``make install``
runs it on the default scenario).

It simulates one path of the scenario over two days, serially, and writes nothing but caches:
numba keeps every kernel it compiles on disk (``cache=True``, in the folder
:mod:`simulator.compiled_cache` names) and the
serving capacity a replica derives is kept in the capacity cache (:mod:`simulator.cache_dirs`). So the first ``make
run`` pays neither the compilation nor the request-level derivation.
"""

from __future__ import annotations

import sys
import time


def warm(scenario: str) -> float:
    """Simulate ``scenario`` for one path over two days; the seconds it took."""
    from simulator.runs.montecarlo import simulate
    from simulator.serving.resolve import load_scenario

    start = time.perf_counter()
    resolved = load_scenario(scenario, ["horizon.duration=2d", "paths=1", "variants={}"])
    simulate(resolved, executor="serial")
    return time.perf_counter() - start


def main(argv: list[str]) -> int:
    scenario = argv[0] if argv else "scenarios/launch.yaml"
    print(f"compiling the kernels and deriving {scenario}'s replicas once (cached for every later run) ...",
          flush=True)
    print(f"done in {warm(scenario):.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
