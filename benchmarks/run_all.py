"""Run every benchmark in this folder (``bench_*.py``) and collect their JSON figures.

    .venv/bin/python benchmarks/run_all.py        # what `make bench` runs

Each benchmark compares Fleetcast with a reference implementation in the same process and
reports ratios, since this machine is shared and absolute times are noisy. Figures are
written to ``benchmarks/results/<name>.json``; the documentation (docs/performance.md) quotes them.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    failed = []
    for script in sorted(HERE.glob("bench_*.py")):
        print(f"== {script.stem}", flush=True)
        code = subprocess.call([sys.executable, str(script), "--json", str(results / f"{script.stem}.json")])
        if code:
            failed.append(script.stem)
    if failed:
        print("failed: " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
