"""Leave-one-out cross-validation of the serving model's fitted constants on the 13 vLLM H100 runs.

``benchmarks/fit_serving.py`` fits seven constants (GEMM, memory and attention efficiency,
per-iteration and per-layer overhead, front-end latency, all-reduce latency) to all 13 runs of
``shared/data/vllm_h100_trainval`` plus three Vidur operator times, and docs/serving/validation.md's "Serving
fidelity" table scores the model on those same 13 runs: an in-sample figure. This script asks
how well the model predicts a run it was *not* fitted to:

* for each run ``k``, fit the constants on the other 12 runs with exactly ``fit_serving.fit``
  (same 36 log-error residuals on mean E2E / TTFT / ITL, same ×2-weighted Vidur residuals, same
  bounds, start point, Levenberg–Marquardt steps and iteration count; seed 0);
* simulate the held-out run with those constants and report its signed error
  ``simulated / measured − 1`` on mean E2E, mean TTFT and mean ITL (stage ``all``);
* summarise as the in-sample table does: median |error| of each metric over the 13 held-out
  runs, the worst |error|, and the worst E2E factor ``max(sim/meas, meas/sim)``;
* report each fold's constants and their spread (min, median, max, and max−min relative to the
  all-13 fit) — a constant that moves a lot when one run is dropped is pinned by that run.

The all-13 fit is re-run alongside (fold ``all``) as the in-sample reference, so both come from
the same code and data; the in-sample figures with the catalog's constants (what
``bench_sim_to_real.py`` and the README table report) are printed beside them ("catalog").

Nothing is approximated: every fold is a full fit from the same start. The only shortcut is
exact memoisation — each worker caches a run's simulated rows by the constants it was simulated
with, so the evaluations every fold shares (the start point and its Jacobian probes) are
computed once per worker process; results are bit-identical to uncached runs. Folds run in
parallel processes (``--workers``, default 2); the result does not depend on the worker count.
Deterministic: same data, same code, same figures.

Run (from the project root; ~12 min with 2 workers on 2 cores)::

    NUMBA_CACHE_DIR=/tmp/cv-numba .venv/bin/python benchmarks/crossval_serving.py [--workers N] [--iterations N]

Prints the held-out table, the headline figures beside the in-sample ones and the constant
spreads; writes ``benchmarks/results/crossval_serving.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import fit_serving
import numpy as np

from simulator.serving.calibration import compare, headline, load_experiments

RESULTS = Path(__file__).parent / "results" / "crossval_serving.json"
SHOWN = ("e2e_mean", "ttft_mean", "itl_mean")
_CACHE: dict[tuple, list[dict]] = {}


def cached_compare(runs, seed: int = 0, **values: float) -> list[dict]:
    """``calibration.compare``, memoised per (run, seed, constants): exact, since the engine is deterministic."""
    key = (seed, tuple(sorted(values.items())))
    rows: list[dict] = []
    for run in runs:
        if (run.name, key) not in _CACHE:
            _CACHE[run.name, key] = compare([run], seed=seed, **values)
        rows.extend(_CACHE[run.name, key])
    return rows


def run_fold(held: str | None, iterations: int) -> dict:
    """Fit on every run but ``held`` (all runs if None); score ``held`` with the fitted constants."""
    fit_serving.compare = cached_compare  # fit_serving.residuals looks ``compare`` up in its module
    runs = load_experiments()
    train = [run for run in runs if run.name != held]
    start = time.perf_counter()
    log = io.StringIO()
    with contextlib.redirect_stdout(log):
        values, cost = fit_serving.fit(train, iterations)
    rows = [r for r in cached_compare(runs, seed=0, **values) if r["stage"] == "all"]
    return {"held_out": held, "fitted": {k: float(v) for k, v in values.items()}, "sum_of_squares": cost,
            "iterations_log": log.getvalue().splitlines(), "seconds": time.perf_counter() - start,
            "rows": [r for r in rows if held is None or r["experiment"] == held]}


def errors_of(rows: list[dict]) -> dict[str, float]:
    return {r["metric"]: r["error"] for r in rows if r["metric"] in SHOWN}


def train_cost(rows: list[dict], held: str, vidur_s: list[float]) -> float:
    """``fit_serving``'s objective on the runs other than ``held``, from already simulated rows."""
    data = [np.log1p(r["error"]) for r in rows if r["experiment"] != held and r["metric"] in fit_serving.FITTED_METRICS]
    vidur = [fit_serving.VIDUR_WEIGHT * np.log(t / ref[-1]) for t, ref in zip(vidur_s, fit_serving.VIDUR, strict=True)]
    return float(np.sum(np.square(data)) + np.sum(np.square(vidur)))


def spreads(folds: list[dict], reference: dict[str, float]) -> dict[str, dict[str, float]]:
    out = {}
    for name, lo, hi, _ in fit_serving.BOUNDS:
        values = np.array([fold["fitted"][name] for fold in folds])
        out[name] = {"all_runs": reference[name], "min": float(values.min()), "median": float(np.median(values)),
                     "max": float(values.max()), "std": float(values.std()),
                     "relative_range": float((values.max() - values.min()) / reference[name]),
                     "folds_at_bound": int(np.sum((values - lo < 1e-3 * (hi - lo)) | (hi - values < 1e-3 * (hi - lo)))),
                     "bounds": [lo, hi]}
    return out


def fmt(name: str, value: float) -> str:
    """Constants in readable units: µs / ms for times, plain for efficiencies."""
    if name in ("layer_overhead_s", "allreduce_latency_s"):
        return f"{value * 1e6:7.2f}µs"
    if name.endswith("_s"):
        return f"{value * 1e3:7.2f}ms"
    return f"{value:9.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=8, help="LM iterations per fit (fit_serving's default)")
    parser.add_argument("--json", metavar="PATH", default=str(RESULTS))
    args = parser.parse_args()
    names = [run.name for run in load_experiments()]
    began = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        futures = [pool.submit(run_fold, held, args.iterations) for held in [None, *names]]
        results = []
        for future in futures:
            results.append(future.result())
            fold = results[-1]
            print(f"fold {fold['held_out'] or 'all':44s} fitted in {fold['seconds']:6.1f}s, "
                  f"sum of squares {fold['sum_of_squares']:.4f}", flush=True)
    wall = time.perf_counter() - began
    full, folds = results[0], results[1:]
    catalog = headline([r for r in compare(load_experiments(), seed=0) if r["stage"] == "all"])
    held_rows = [row for fold in folds for row in fold["rows"]]
    cv, insample = headline(held_rows), headline(full["rows"])
    in_err = {r["experiment"]: {} for r in full["rows"]}
    for r in full["rows"]:
        in_err[r["experiment"]][r["metric"]] = r["error"]

    full_vidur = fit_serving.vidur_times(full["fitted"])
    for fold in folds:  # did the fold's fit beat the all-13 constants on its own 12 runs?
        fold["all13_constants_train_cost"] = train_cost(full["rows"], fold["held_out"], full_vidur)
        fold["lm_iterations_run"] = len(fold["iterations_log"])
    consts = [name for name, *_ in fit_serving.BOUNDS]
    print(f"\nheld-out signed error (in-sample, all-13 fit, in brackets)\n{'run':44s}"
          + "".join(f"{m:>20s}" for m in SHOWN))
    for fold in folds:
        err, name = errors_of(fold["rows"]), fold["held_out"]
        print(f"{name:44s}" + "".join(f"{err[m] * 100:+9.1f}% ({in_err[name][m] * 100:+6.1f}%)" for m in SHOWN))
    print(f"\n{'figure':32s}{'held-out':>10s}{'in-sample':>11s}{'catalog':>10s}")
    for metric in SHOWN:
        for kind in ("median", "worst"):
            key = f"{metric}_{kind}_abs_error"
            print(f"{key:32s}" + "".join(f"{d[key] * 100:9.1f}%" for d in (cv, insample, catalog)))
    print(f"{'e2e_mean_worst_factor':32s}" + "".join(f"{d['e2e_mean_worst_factor']:9.2f}×" for d in (cv, insample, catalog)))

    print(f"\nfitted constants per fold\n{'held out':10s}" + "".join(f"{c[:11]:>12s}" for c in consts))
    for fold in [full, *folds]:
        label = (fold["held_out"] or "none (all)").split("-")[0]
        print(f"{label:10s}" + "".join(f"{fmt(c, fold['fitted'][c]):>12s}" for c in consts))
    print(f"\n{'held out':10s}{'LM its':>7s}{'fold cost':>11s}{'all-13 consts':>15s}  (objective on the fold's 12 runs)")
    for fold in folds:
        print(f"{fold['held_out'].split('-')[0]:10s}{fold['lm_iterations_run']:>7d}{fold['sum_of_squares']:11.4f}"
              f"{fold['all13_constants_train_cost']:15.4f}" + ("  <- fit stopped above it" if
              fold["sum_of_squares"] > fold["all13_constants_train_cost"] else ""))
    spread = spreads(folds, full["fitted"])
    print(f"\n{'constant':22s}{'all-13':>11s}{'min':>11s}{'median':>11s}{'max':>11s}{'range/all':>10s}{'at bound':>9s}")
    for c, s in spread.items():
        print(f"{c:22s}" + "".join(f"{fmt(c, s[k]):>11s}" for k in ("all_runs", "min", "median", "max"))
              + f"{s['relative_range'] * 100:9.1f}%{s['folds_at_bound']:>6d}/13")
    print(f"\nwall time {wall:.0f}s with {args.workers} workers, {args.iterations} LM iterations per fit")

    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({
        "seed": 0, "iterations": args.iterations, "workers": args.workers, "wall_seconds": wall,
        "metrics": list(fit_serving.FITTED_METRICS), "bounds": {n: [lo, hi] for n, lo, hi, _ in fit_serving.BOUNDS},
        "held_out_summary": cv, "in_sample_summary": insample,
        "catalog_in_sample_summary": catalog, "constant_spread": spread,
        "all_runs_fit": {"fitted": full["fitted"], "sum_of_squares": full["sum_of_squares"],
                         "vidur_s": full_vidur, "rows": full["rows"]},
        "folds": [{**fold, "errors": errors_of(fold["rows"]), "vidur_s": fit_serving.vidur_times(fold["fitted"])}
                  for fold in folds],
    }, indent=2))


if __name__ == "__main__":
    main()
