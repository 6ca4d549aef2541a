"""Closed-loop serving against the 368 InferenceX points (H100, H200, B200; vLLM; TP 1-8).

    .venv/bin/python benchmarks/bench_inferencex.py [--json benchmarks/results/inferencex.json] [--points]

Regenerates every point of ``shared/data/inferencex_trainval`` with the shipped constants
(``simulator.serving.inferencex``: ``10 × concurrency`` requests, closed loop, lengths from the
client's range), prints the signed errors (simulated / measured − 1) of mean TPOT and mean TTFT per
deployment (``--points``: per point), the KV capacity against vLLM's logged figure per run, and the
headline against the bars: median |TPOT error| <= 15% and median |TTFT error| <= 30% over the
points below saturation, no GPU's median |TPOT error| above 25%, KV capacity within ±10% of every
logged figure. Beside it, what the constants were fitted on and their held-out errors, read from
``benchmarks/results/inferencex_fit.json`` (written by ``benchmarks/fit_inferencex.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simulator.serving import inferencex as ix  # noqa: E402

BARS = {"tpot_median_abs_error": 0.15, "ttft_median_abs_error": 0.30, "gpu_tpot_median_abs_error": 0.25,
        "kv_worst_abs_error": 0.10}
FIT = ROOT / "benchmarks" / "results" / "inferencex_fit.json"


def by_deployment(rows: list[dict]) -> list[dict]:
    """Median signed errors per deployment, points below saturation."""
    out = {}
    for row in rows:
        if row["below_saturation"]:
            out.setdefault((row["model"], row["gpu"], row["precision"], row["tp"]), []).append(row)
    return [dict(model=m, gpu=g, precision=p, tp=t, points=len(rs),
                 tpot=float(np.median([r["tpot_error"] for r in rs])),
                 ttft=float(np.median([r["ttft_error"] for r in rs])))
            for (m, g, p, t), rs in sorted(out.items())]


def bars(headline: dict) -> dict[str, bool]:
    gpus = [v for k, v in headline.items() if k.startswith("tpot_median_abs_error_")]
    return {"tpot_median_abs_error": headline["tpot_median_abs_error"] <= BARS["tpot_median_abs_error"],
            "ttft_median_abs_error": headline["ttft_median_abs_error"] <= BARS["ttft_median_abs_error"],
            "no_gpu_worse_than_25pct_tpot": max(gpus) <= BARS["gpu_tpot_median_abs_error"],
            "kv_within_10pct": headline["kv_worst_abs_error"] <= BARS["kv_worst_abs_error"]}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write rows, headline and bars here")
    parser.add_argument("--points", action="store_true", help="print every point's errors")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = ix.compare(ix.load_points())
    seconds = time.perf_counter() - start
    headline = ix.headline(rows)
    if args.points:
        print(f"{'deployment':<44} {'label':<5} {'N':>4} {'TPOT ms':>8} {'sim':>7} {'err':>7} "
              f"{'TTFT ms':>8} {'sim':>8} {'err':>7}")
        for r in rows:
            name = f"{r['model']} {r['gpu']} {r['precision']} tp{r['tp']}" + ("" if r["below_saturation"] else " *")
            print(f"{name:<44} {r['label']:<5} {r['concurrency']:>4} {r['tpot_s'] * 1e3:>8.2f} "
                  f"{r['sim_tpot_s'] * 1e3:>7.2f} {r['tpot_error']:>+7.1%} {r['ttft_s'] * 1e3:>8.1f} "
                  f"{r['sim_ttft_s'] * 1e3:>8.1f} {r['ttft_error']:>+7.1%}")
        print("(* above saturation: the server cannot hold every user at once)\n")
    print(f"{'deployment':<44} {'points':>6} {'TPOT err':>9} {'TTFT err':>9}  (median signed, below saturation)")
    for d in by_deployment(rows):
        print(f"{d['model'] + ' ' + d['gpu'] + ' ' + d['precision'] + ' tp' + str(d['tp']):<44} {d['points']:>6} "
              f"{d['tpot']:>+9.1%} {d['ttft']:>+9.1%}")
    print(f"\nKV capacity against vLLM's log: {headline['kv_points']} points, median |error| "
          f"{headline['kv_median_abs_error']:.1%}, worst {headline['kv_worst_abs_error']:.1%}")
    checks = bars(headline)
    print(f"\n{headline['points']} points ({headline['points_below_saturation']} below saturation) in {seconds:.1f} s")
    for key, value in headline.items():
        if key.endswith("error") or "error_" in key:
            print(f"  {key:<34} {value:6.1%}")
    for key, ok in checks.items():
        print(f"  bar {key:<30} {'met' if ok else 'MISSED'}")
    fit = json.loads(FIT.read_text()) if FIT.exists() else None
    if fit:
        bw = fit["blackwell"]
        print(f"\nBlackwell constants fitted on {bw['fitted_on']}:")
        print(f"  in-sample (fitted constants): TPOT {bw['in_sample']['tpot_median_abs_error']:.1%}, "
              f"TTFT {bw['in_sample']['ttft_median_abs_error']:.1%}")
        for model, part in bw["leave_one_model_out"].items():
            print(f"  {model} held out (fitted on the other model): TPOT {part['held_out']['tpot_median_abs_error']:.1%}"
                  f", TTFT {part['held_out']['ttft_median_abs_error']:.1%} (in-sample: "
                  f"{part['in_sample']['tpot_median_abs_error']:.1%}, {part['in_sample']['ttft_median_abs_error']:.1%})")
        wide = fit["hopper_widened_experts"]
        print(f"Hopper widened-expert efficiency fitted on {wide['fitted_on']}: H100 in-sample TPOT "
              f"{wide['in_sample_h100']['tpot_median_abs_error']:.1%}, H200 held out TPOT "
              f"{wide['held_out_h200']['tpot_median_abs_error']:.1%}, TTFT {wide['held_out_h200']['ttft_median_abs_error']:.1%}")
        reserve = fit.get("runtime_reserve")
        if reserve:
            print(f"Runtime reserve {reserve['median_gib']:.2f} GiB fitted on {reserve['fitted_on']}: worst |KV error| "
                  f"in-sample {reserve['in_sample_worst_abs_error']:.1%}, leave-one-deployment-out "
                  f"{reserve['leave_one_deployment_out_worst_abs_error']:.1%}")
        print("Hopper's other constants come from the 13 vLLM H100 runs: every H100/H200 Llama point is out of sample.")
    out = {"headline": headline, "bars": checks, "seconds": seconds, "deployments": by_deployment(rows), "rows": rows}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return out


if __name__ == "__main__":
    main()
