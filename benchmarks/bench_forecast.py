"""Do the demand forecast's bands cover? Synthetic histories with known generating processes.

    .venv/bin/python benchmarks/bench_forecast.py [--seeds 200] [--workers 2] [--json PATH]

Each case draws ``--seeds`` histories from a process whose future is known, fits the forecast
as a scenario does (:func:`simulator.scenario.forecasting.fit.fit_forecast`: the form by AICc and
the change of growth looked for) and scores it against the truth:

* ``weekly``: a year of daily rates, 12% compound growth a month, a weekday cycle (Monday +5% …
  Sunday −16% in ln), lognormal day noise (σ 0.05). Scored: the 50% and 90% bands of 400 drawn
  paths over the next 60 days against the held-out truth (pooled over days and seeds); the
  history's growth interval (90%) against 12%; the weekday multipliers recovered.
* ``random_walk``: the same, with a stochastic level (a random walk of σ 0.02 a day added to the
  log rate), a process ETS models directly.
* ``slowing``: the founder's history: 12 months of daily rates growing 12% a month for 8 months,
  then 5%; its change of growth detected (:mod:`simulator.scenario.forecasting.change`): the share of seeds
  whose 90% interval for the change date holds the truth; and the 90% band 24 months after the
  history's start (12 months ahead) against the true path, for the forecast and for a straight
  line fitted to the whole history.
* For ``weekly`` and ``random_walk`` the backtest's coverage on each history (5 rolling origins,
  28 days held out) is set beside the coverage measured against the true future.
* The time to fit a year of hourly rates (8,760 rows), and to backtest it.

Pass marks (issue 32): 90% bands cover 85–95%, 50% bands 45–55%; the growth interval and the
change-date interval hold the truth at their stated 90% within binomial noise; the backtest's
coverage within 5 points of the simulated one.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from simulator.scenario.forecasting.backtest import backtest  # noqa: E402
from simulator.scenario.forecasting.fit import fit_forecast  # noqa: E402
from simulator.scenario.forecasting.model import simulate_ln_rates  # noqa: E402
from simulator.units import SECONDS_PER_DAY  # noqa: E402

DAYS_PER_MONTH = 365.25 / 12
WEEK = np.array([0.05, 0.08, 0.07, 0.06, 0.02, -0.12, -0.16])
AHEAD = 60
PATHS = 400


def daily_history(seed: int, kind: str, days: int = 365, ahead: int = AHEAD) -> tuple[pd.Series, np.ndarray]:
    """A history of ``days`` daily mean rates and the true ln rates of the next ``ahead`` days."""
    rng = np.random.default_rng([seed, 32])
    n = days + ahead
    index = pd.date_range("2025-01-01", periods=n, freq="D")
    t = np.arange(n, dtype=np.float64)
    if kind == "slowing":
        fast, slow, change = math.log(1.12) / DAYS_PER_MONTH, math.log(1.05) / DAYS_PER_MONTH, 8 * DAYS_PER_MONTH
        trend = np.where(t < change, fast * t, fast * change + slow * (t - change))
    else:
        trend = math.log(1.12) / DAYS_PER_MONTH * t
    ln = math.log(100.0) + trend + WEEK[index.day_of_week] + rng.normal(0.0, 0.05, n)
    if kind == "random_walk":
        ln += np.cumsum(rng.normal(0.0, 0.02, n))
    return pd.Series(np.exp(ln[:days]), index=index[:days]), ln[days:]


CHANGE_DAY = 8 * DAYS_PER_MONTH


def score_slowing(seed: int) -> dict:
    """The founder's slowing history: the change found, and the bands a year ahead (month 24)."""
    ahead = 366
    history, future = daily_history(seed, "slowing", ahead=ahead)
    day = int(round(24 * DAYS_PER_MONTH)) - len(history)  # month 24 from the history's start
    fit = fit_forecast(history, history.index, "daily", pd.Timedelta(days=1))
    change = fit.change
    truth_at = history.index[0] + pd.Timedelta(days=CHANGE_DAY)
    draws = simulate_ln_rates(fit, ahead, PATHS, np.random.default_rng([seed, 7]))
    low, high = np.percentile(draws[:, day], [5, 95])
    # Today's straight line: ln rate on time and weekday terms over the whole history, with its
    # 90% prediction interval at that day.
    y = np.log(history.to_numpy())
    n = len(y)
    weekday = lambda index: [(index.day_of_week == d).astype(float) for d in range(1, 7)]  # noqa: E731
    design = np.column_stack([np.ones(n), np.arange(n), *weekday(history.index)])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    s2 = float(((y - design @ coef) ** 2).sum()) / (n - design.shape[1])
    when = history.index[-1] + pd.Timedelta(days=day + 1)
    x0 = np.array([1.0, n + day, *[float(when.day_of_week == d) for d in range(1, 7)]])
    centre = float(x0 @ coef)
    spread = 1.6496 * math.sqrt(s2 * (1 + x0 @ np.linalg.inv(design.T @ design) @ x0))
    return {"seed": seed, "found": bool(change is not None and change.found),
            "date_in_interval": bool(change is not None and change.interval[0] <= truth_at
                                     < change.interval[1] + pd.Timedelta(days=1)),
            "forecast_band_holds": bool(low <= future[day] <= high),
            "line_band_holds": bool(centre - spread <= future[day] <= centre + spread),
            "growth_after": fit.growth_per_month}


def score_case(args: tuple[int, str]) -> dict:
    seed, kind = args
    if kind == "slowing":
        return score_slowing(seed)
    history, future = daily_history(seed, kind)
    fit = fit_forecast(history, history.index, "daily", pd.Timedelta(days=1))  # the whole procedure
    draws = simulate_ln_rates(fit, len(future), PATHS, np.random.default_rng([seed, 7]))
    q05, q25, q75, q95 = np.percentile(draws, [5, 25, 75, 95], axis=0)
    out = {"seed": seed, "form": fit.label,
           "in50": float(((future >= q25) & (future <= q75)).mean()),
           "in90": float(((future >= q05) & (future <= q95)).mean()),
           "growth_in_interval": bool(fit.growth_interval[0] <= 0.12 <= fit.growth_interval[1])
           if kind != "slowing" else None,
           "weekly_error": float(np.max(np.abs(np.asarray(fit.weekly) / (np.exp(WEEK) / np.exp(WEEK).mean()) - 1)))
           if fit.weekly else None,
           "change_found": bool(fit.change is not None and fit.change.found)}
    if kind != "slowing":
        check = backtest(history, "day", SECONDS_PER_DAY, fit.label, holdout=28, origins=5, paths=PATHS, seed=seed)
        out["backtest50"], out["backtest90"] = check.coverage50, check.coverage90
    return out


def summarise(rows: list[dict]) -> dict:
    if "found" in rows[0]:
        return {"seeds": len(rows), **{key: float(np.mean([r[key] for r in rows])) for key in (
            "found", "date_in_interval", "forecast_band_holds", "line_band_holds", "growth_after")}}

    def mean(key):
        values = [r[key] for r in rows if r.get(key) is not None]
        return float(np.mean(values)) if values else None

    forms = pd.Series([r["form"] for r in rows]).value_counts().to_dict()
    return {"seeds": len(rows), "coverage50": mean("in50"), "coverage90": mean("in90"),
            "change_found": mean("change_found"),
            "growth_interval_hits": mean("growth_in_interval"), "weekly_max_error_mean": mean("weekly_error"),
            "backtest50": mean("backtest50"), "backtest90": mean("backtest90"), "forms": forms}


def hourly_year_timing() -> dict:
    """Seconds to read-free fit a year of hourly rates (8,760 rows) and to backtest it."""
    rng = np.random.default_rng(32)
    index = pd.date_range("2025-01-01", periods=365 * 24, freq="h")
    days = np.arange(len(index)) / 24.0
    ln = (math.log(100.0) + math.log(1.12) / DAYS_PER_MONTH * days + WEEK[index.day_of_week]
          + 0.3 * np.sin(2 * np.pi * (index.hour - 6) / 24) + rng.normal(0.0, 0.05, len(index)))
    started = time.perf_counter()
    fit = fit_forecast(pd.Series(np.exp(ln), index=index), index, "hourly", pd.Timedelta(hours=1))
    fitted = time.perf_counter() - started
    backtest(fit.series, fit.period, fit.period_s, fit.label)
    return {"rows": len(index), "fit_s": fitted, "fit_and_backtest_s": time.perf_counter() - started,
            "form": fit.label}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cases", default="weekly,random_walk,slowing")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "forecast.json")
    args = parser.parse_args()
    started = time.perf_counter()
    results = {}
    with ProcessPoolExecutor(args.workers) as pool:
        for kind in args.cases.split(","):
            rows = list(pool.map(score_case, [(seed, kind) for seed in range(args.seeds)], chunksize=4))
            results[kind] = summarise(rows)
            s = results[kind]
            if kind == "slowing":
                print(f"slowing: {s['seeds']} seeds; change found in {s['found']:.1%}, its 90% date interval holds "
                      f"the truth in {s['date_in_interval']:.1%}; month-24 90% band holds the truth: forecast "
                      f"{s['forecast_band_holds']:.1%}, straight line {s['line_band_holds']:.1%}; growth after "
                      f"{s['growth_after']:.2%} a month (truth 5%)")
                continue
            print(f"{kind}: {s['seeds']} seeds; 50% band {s['coverage50']:.1%}, 90% band {s['coverage90']:.1%}; "
                  f"backtest 50% {s['backtest50'] or float('nan'):.1%}, 90% {s['backtest90'] or float('nan'):.1%}; "
                  f"growth interval holds 12% in {s['growth_interval_hits'] or float('nan'):.1%}; a change found (wrongly) in "
                  f"{s['change_found']:.1%}; forms {s['forms']}")
    results["hourly_year"] = timing = hourly_year_timing()
    print(f"a year of hourly rates ({timing['rows']:,} rows): fitted in {timing['fit_s']:.1f} s, with its backtest "
          f"{timing['fit_and_backtest_s']:.1f} s ({timing['form']})")
    results["runtime_s"] = time.perf_counter() - started
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2) + "\n")
    print(f"runtime {results['runtime_s']:.0f} s -> {args.json}")


if __name__ == "__main__":
    main()
