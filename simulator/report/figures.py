"""The report's charts, drawn with matplotlib from a run's bands and monthly P&L.

Every chart is a function of :class:`~simulator.report.rundata.RunData` (or of several, for
comparisons) returning a ``Figure``; nothing here touches pyplot's global state, so charts can
be drawn from any thread (:mod:`simulator.report.fan_charts`: the panels and fans). Fan
charts shade P5–P95 lightly and P10–P90 darker around the P50 line; those bands are
per-step quantiles over every path (``bands.parquet``; each model's SLO attainment and
unserved share: ``model_bands.parquet``, :mod:`simulator.report.model_latency`). Monthly
money comes from ``pnl.parquet`` (every path).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, PercentFormatter

from simulator.report.fan_charts import (
    PALETTE,
    at_daily_peak,
    daily,
    fan,
    is_daily,
    legends_outside,
    new_figure,
    plain,
)
from simulator.report.headline import money_text
from simulator.report.model_latency import has_model_bands, model_panels
from simulator.report.rundata import RunData

COGS = {
    "cogs_depreciation_usd": "depreciation",
    "cogs_cloud_usd": "cloud and API",
    "cogs_energy_usd": "energy",
    "cogs_facility_usd": "facility",
    "cogs_other_usd": "other",
}
RND = {"rnd_compute_usd": "training compute (R&D)"}


def _money(ax) -> None:
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: money_text(value, digits=1, thousands_from=1e3)))


def demand_capacity(run: RunData) -> Figure:
    fig, (top, bottom) = new_figure(2)
    per_second = _scale(run, "/s")  # requests per step, as a rate a reader knows
    fan(top, daily(run.band("demand_requests"), "max"), PALETTE[0], "demand", scale=per_second)
    served = daily(run.band("served_requests"), "max")
    top.plot(served["time"], served["p50"] * per_second, color=PALETTE[1], linewidth=0.9, label="served: P50",
             drawstyle="steps-post")
    top.set_ylabel("requests/s" + (", daily peak" if is_daily(run) else ""))
    top.set_title("Demand against capacity")
    top.legend(loc="upper left", fontsize=8)
    needed = run.band("gpus_needed")
    fan(bottom, daily(needed, "max"), PALETTE[0], "GPUs needed")
    fan(bottom, at_daily_peak(run.band("gpus_available"), needed), PALETTE[2], "GPUs available")
    bottom.set_ylabel("GPUs")
    bottom.legend(loc="upper left", fontsize=8)
    return fig


def shortfall_slo(run: RunData) -> Figure:
    """How likely a shortfall is and how deep: the share of paths short in each month (bars,
    with their interval) and at each step (line); the GPUs short, mean and P90 over paths;
    the share of requests served within the SLO: each model's, with the share of its demand
    left unserved, when the run has per-model bands (a model's own, never pooled by requests)."""
    per_model = has_model_bands(run)
    fig, axes = new_figure(4 if per_model else 3, 2.6)
    top, middle, bottom = axes[:3]
    months = run.summary.get("periods", {}).get("month", [])
    if months:
        begin, end = pd.Timestamp(run.summary["start"]), pd.Timestamp(run.summary["end"])
        calendar = pd.to_datetime([entry["start"] for entry in months])
        # Each bar spans the month's part inside the horizon.
        starts = calendar.map(lambda t: max(t, begin))
        ends = pd.DatetimeIndex([min(t + pd.DateOffset(months=1), end) for t in calendar])
        share = np.array([100 * entry["p_short"]["value"] for entry in months])
        low, high = (np.array([100 * (entry["p_short"]["ci"][i] if entry["p_short"]["ci"][i] is not None
                                      else entry["p_short"]["value"]) for entry in months]) for i in (0, 1))
        top.bar(starts, share, width=(ends - starts).total_seconds() / 86400 * 0.9, align="edge", color=PALETTE[1], alpha=0.35,
                label="short at some time in the month")
        top.errorbar(starts + (ends - starts) / 2, share, yerr=[share - low, high - share], fmt="none",
                     ecolor=PALETTE[1], elinewidth=0.8, capsize=2, label="90% interval (Monte Carlo)")
    if "short" in set(run.bands["metric"]):
        step = daily(run.band("short"), "max")
        top.plot(step["time"], 100 * step["mean"], color=PALETTE[1], linewidth=0.9, drawstyle="steps-post",
                 label="short at that time" + (" (the day's peak)" if is_daily(run) else ""))
    top.set_ylim(0, 105)
    top.yaxis.set_major_formatter(PercentFormatter())
    top.set_ylabel("paths short")
    top.set_title("Probability of a material shortfall, GPUs short and SLO attainment")
    top.legend(loc="upper left", fontsize=8)
    short = daily(run.band("shortfall_gpus"), "max")
    middle.fill_between(short["time"], 0, short["p90"], step="post", color=PALETTE[1], alpha=0.2, linewidth=0,
                        label="P90 over paths")
    middle.plot(short["time"], short["mean"], color=PALETTE[1], linewidth=1.1, drawstyle="steps-post",
                label="expected (mean over paths)")
    middle.set_ylabel("GPUs short")
    middle.legend(loc="upper left", fontsize=8)
    if per_model:
        model_panels(run, bottom, axes[3])
        return fig
    fan(bottom, daily(run.band("slo_attainment"), "min"), PALETTE[2], "SLO attainment", scale=100.0)
    bottom.yaxis.set_major_formatter(PercentFormatter())
    bottom.set_ylabel("requests within SLO")
    bottom.legend(loc="lower left", fontsize=8)
    return fig


def gpus_by_use(run: RunData) -> Figure:
    """Means over paths, which add up: inference + training + idle = available."""
    fig, (ax,) = new_figure(1, 3.4)
    mean = {name: run.band(name)["mean"].to_numpy() for name in
            ("gpus_inference", "gpus_training", "gpus_idle", "gpus_available", "gpus_installed")}
    times = run.band("gpus_installed")["time"].to_numpy()
    failed = np.maximum(mean["gpus_installed"] - mean["gpus_available"], 0.0)
    ax.stackplot(times, mean["gpus_inference"], mean["gpus_training"], mean["gpus_idle"], failed,
                 labels=["inference", "training", "idle", "failed or in repair"],
                 colors=[PALETTE[0], PALETTE[3], "#cccccc", PALETTE[1]], linewidth=0)
    ax.set_ylabel("GPUs (mean over paths)")
    ax.set_title("GPUs by use")
    ax.legend(loc="upper left", fontsize=8, ncols=4)
    return fig


def _monthly(pnl: pd.DataFrame, columns: Sequence[str], how: str = "mean") -> pd.DataFrame:
    grouped = pnl.groupby("month")[list(columns)]
    return grouped.mean() if how == "mean" else grouped.quantile(float(how))


def cost_stack(run: RunData) -> Figure:
    fig, (ax,) = new_figure(1, 3.4)
    monthly = _monthly(run.pnl, [*COGS, *RND])
    x = np.arange(len(monthly))
    bottom = np.zeros(len(monthly))
    for i, (column, label) in enumerate({**COGS, **RND}.items()):
        values = monthly[column].to_numpy()
        if not np.any(values):
            continue
        ax.bar(x, values, bottom=bottom, color=PALETTE[i % len(PALETTE)], label=label, width=0.8)
        bottom += values
    _month_ticks(ax, monthly.index)
    _money(ax)
    ax.set_ylabel("per month (mean over paths)")
    ax.set_title("Cost stack")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", fontsize=8, ncols=3)
    return fig


def _monthly_band(pnl: pd.DataFrame, column: str) -> pd.DataFrame:
    """P5/P10/P50/P90/P95 of one monthly column over paths, by month."""
    return pd.DataFrame({name: _monthly(pnl, [column], q)[column].to_numpy()
                         for name, q in (("p5", "0.05"), ("p10", "0.1"), ("p50", "0.5"), ("p90", "0.9"),
                                         ("p95", "0.95"))})


def revenue_margin(run: RunData) -> Figure:
    """Revenue and gross margin by month; below them the cumulative cash flow, unless the
    run has a cash balance (which has its own chart)."""
    panels = [(("revenue_usd", "revenue", PALETTE[0]), ("gross_margin_usd", "gross margin", PALETTE[2]))]
    if not has_cash(run):
        panels.append((("cumulative_cash_usd", "cumulative cash", PALETTE[3]),))
    fig, axes = new_figure(len(panels), 3.0 if len(panels) == 2 else 3.4)
    months = run.pnl["month"].drop_duplicates().sort_values()
    x = np.arange(len(months))
    for ax, columns in zip(axes, panels, strict=True):
        for column, label, color in columns:
            band = _monthly_band(run.pnl, column)
            band["time"] = x
            fan(ax, band, color, label, step=False)
        ax.axhline(0.0, color="black", linewidth=0.7)
        _money(ax)
        ax.legend(loc="upper left", fontsize=8)
    axes[0].set_ylabel("per month")
    axes[0].set_title("Revenue and gross margin")
    if len(axes) > 1:
        axes[1].set_ylabel("since the start")
    _month_ticks(axes[-1], months)
    return fig


def has_cash(run: RunData) -> bool:
    return "cash_balance_usd" in run.pnl.columns and len(run.pnl) > 0


def opening_cash(run: RunData) -> float:
    """Cash at the horizon's start: from the summary, else the scenario's financing."""
    value = (run.summary.get("cash") or {}).get("opening_usd")
    if value is None:
        value = (run.scenario.get("financing") or {}).get("opening_cash_usd")
    return float(value or 0.0)


def cash_balance(run: RunData) -> Figure:
    """Month-end cash balance over paths (P5–P95 light, P10–P90 darker, P50 line), from the
    opening balance at the start (marked); the zero line drawn across, the lowest P50 noted."""
    fig, (ax,) = new_figure(1, 3.4)
    opening = opening_cash(run)
    months = run.pnl["month"].drop_duplicates().sort_values()
    band = _monthly_band(run.pnl, "cash_balance_usd")
    start, end = pd.Timestamp(run.summary["start"]), pd.Timestamp(run.summary["end"])
    band["time"] = [min(pd.Timestamp(m) + pd.DateOffset(months=1), end) for m in months]
    first = pd.DataFrame({name: [opening] for name in ("p5", "p10", "p50", "p90", "p95")})
    first["time"] = [start]
    band = pd.concat([first, band], ignore_index=True)
    band["time"] = pd.to_datetime(band["time"])
    fan(ax, band, PALETTE[3], "cash balance", step=False)
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.plot([start], [opening], marker="o", markersize=5, color="#333333", linestyle="none",
            label=plain(f"opening cash {money_text(opening)}, at the start"))
    lowest = int(np.argmin(band["p50"].to_numpy()))
    ax.annotate(plain(f"lowest P50 {money_text(band['p50'].iloc[lowest])}"),
                (band["time"].iloc[lowest], band["p50"].iloc[lowest]), textcoords="offset points", xytext=(6, -12),
                fontsize=8, color=PALETTE[3], va="top")
    ax.margins(y=0.15)
    _money(ax)
    ax.set_ylabel("month-end balance")
    ax.set_title("Cash balance")
    ax.legend(loc="upper left", fontsize=8)
    return fig


def training_queue(run: RunData) -> Figure:
    fig, (ax,) = new_figure(1, 3.0)
    fan(ax, daily(run.band("training_jobs_queued"), "max"), PALETTE[1], "jobs queued")
    fan(ax, daily(run.band("training_jobs_running"), "max"), PALETTE[3], "jobs running")
    ax.set_ylabel("jobs")
    ax.set_title("Training queue")
    ax.legend(loc="upper left", fontsize=8)
    return fig


def _month_ticks(ax, months: Sequence) -> None:
    labels = [pd.Timestamp(m).strftime("%Y-%m") for m in months]
    every = max(1, -(-len(labels) // 9))
    ax.set_xticks(range(0, len(labels), every), labels[::every], rotation=0, fontsize=8)


def _scale(run: RunData, unit: str) -> float:
    """What turns a band of ``run`` into ``unit``: a step's total per second (``/s``) or per
    hour (``/h``), a share in percent (``%``), or as it is."""
    return {"/s": 1.0 / run.step_s, "/h": 3600.0 / run.step_s, "%": 100.0}.get(unit, 1.0)


def overlaid(runs: dict[str, RunData], metric: str, title: str, ylabel: str, unit: str = "",
             how: str = "max") -> Figure:
    """One band of several runs on one chart (``fleetcast compare``). ``how`` is what a long
    hourly run draws of each day: its ``max``, its ``min``, or the value ``at_peak`` need."""
    fig, (ax,) = new_figure(1, 3.2)
    for i, (label, run) in enumerate(runs.items()):
        band = run.band(metric)
        band = at_daily_peak(band, run.band("gpus_needed")) if how == "at_peak" else daily(band, how)
        fan(ax, band, PALETTE[i % len(PALETTE)], label, scale=_scale(run, unit))
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.legend()
    return legends_outside(fig)


def run_figures(run: RunData) -> dict[str, tuple[str, Figure]]:
    """The charts of one run's report, operations first, then money: name → (caption, figure)."""
    per_day = (" Long hourly runs are drawn one point per day: each quantile's peak of the day "
               "(for GPUs available, at the hour the median need peaks; for SLO attainment, its low)." if is_daily(run)
               else "")
    charts = {
        "demand_capacity": ("Demand and the GPUs it needs against the GPUs available, P10–P90 over paths." + per_day,
                            demand_capacity(run)),
        "shortfall_slo": ("The share of paths with a material shortfall (as the scenario's shortfall settings "
                          "define it) in each month and at each time; the GPUs short, expected and P90; and "
                          + ("per model, the share of its served requests within its SLO and the share of its "
                             "demand left unserved (each model on its own, never pooled by requests)."
                             if has_model_bands(run) else "the share of requests served within the SLO.")
                          + per_day, shortfall_slo(run)),
        "gpus_by_use": ("Installed GPUs by use (means over paths, which add up).", gpus_by_use(run)),
    }
    if run.has_training:
        charts["training_queue"] = ("Training jobs waiting and running, P10–P90 over paths.", training_queue(run))
    charts["cost_stack"] = ("Monthly cost by component (mean over paths); training compute is R&D, below gross "
                            "margin.", cost_stack(run))
    charts["revenue_margin"] = ("Monthly revenue and gross margin" + ("" if has_cash(run) else ", and cumulative cash")
                                + ", P10–P90 over paths.", revenue_margin(run))
    if has_cash(run):
        cash = run.summary.get("cash") or {}
        share = cash.get("negative_probability")
        charts["cash_balance"] = (
            f"Month-end cash balance from the opening cash of {money_text(opening_cash(run))} at the "
            "start: P50 line, P10–P90 shaded (P5–P95 lighter) over paths; the black line is zero."
            + (f" {share:.0%} of paths end a month with negative cash." if share is not None else ""),
            cash_balance(run))
    return {name: (caption, legends_outside(figure)) for name, (caption, figure) in charts.items()}
