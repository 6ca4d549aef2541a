"""What every chart of the report is drawn with: a figure of stacked panels, fan bands
(P5–P95 light, P10–P90 darker, the P50 line) and, for long hourly runs, one point per day.

Nothing here touches pyplot's global state, so charts can be drawn from any thread.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from simulator.report.rundata import RunData

PALETTE = ("#1f77b4", "#d95f02", "#1b9e77", "#7570b3", "#e7298a", "#66a61e", "#a6761d", "#666666")


def new_figure(rows: int = 1, height: float = 3.0) -> tuple[Figure, list]:
    fig = Figure(figsize=(10, height * rows), layout="constrained")
    axes = fig.subplots(rows, 1, sharex=True, squeeze=False)[:, 0]
    for ax in axes:
        ax.grid(alpha=0.25, linewidth=0.6)
        ax.spines[["top", "right"]].set_visible(False)
    return fig, list(axes)


def legends_outside(fig: Figure) -> Figure:
    """Every panel's legend moved to the right of its panel, one entry a line, so that no
    legend covers data whatever the series do; constrained layout narrows the panels to make
    room (the same width for every panel of a figure, so their time axes stay aligned)."""
    for ax in fig.axes:
        if ax.get_legend() is None:
            continue
        handles, labels = ax.get_legend_handles_labels()
        ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=8,
                  frameon=False)
    return fig


#: Shaded areas are drawn on at most this many points (a chart is about 1,000 pixels wide).
MAX_SHADED_POINTS = 1500


def _envelope(t: np.ndarray, low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Groups of consecutive steps reduced to (first time, lowest low, highest high): the
    shaded area keeps every excursion while costing a fixed number of points."""
    size = -(-len(t) // MAX_SHADED_POINTS)
    if size <= 1:
        return t, low, high
    starts = np.arange(0, len(t), size)
    return t[starts], np.minimum.reduceat(low, starts), np.maximum.reduceat(high, starts)


#: Horizons longer than this, at steps shorter than a day, are charted one point per day.
DAILY_AFTER = pd.Timedelta(days=45)
QUANTILE_COLUMNS = ("mean", "p5", "p10", "p50", "p90", "p95")


def daily(band: pd.DataFrame, how: str) -> pd.DataFrame:
    """Each quantile's highest (``how="max"``) or lowest (``"min"``) value of each day, for
    long horizons at sub-daily steps: the daily cycle of an hourly series would hide the
    spread between paths, and capacity is planned for the peak hour."""
    times = band["time"]
    if len(times) < 3 or times.iloc[-1] - times.iloc[0] <= DAILY_AFTER or times.iloc[1] - times.iloc[0] >= pd.Timedelta(days=1):
        return band
    grouped = band.groupby(times.dt.floor("D"))[list(QUANTILE_COLUMNS)]
    out = grouped.max() if how == "max" else grouped.min()
    return out.rename_axis("time").reset_index()


def at_daily_peak(band: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """``band`` at the step of each day when ``reference``'s median peaks (for the long
    horizons :func:`daily` reduces): GPUs available set against GPUs needed at the same hour.
    The day's low would set an autoscaled fleet's night against the evening's need."""
    times = band["time"]
    if len(daily(band, "max")) == len(band):
        return band
    peak_rows = reference.groupby(reference["time"].dt.floor("D"))["p50"].idxmax().to_numpy()
    return band.iloc[peak_rows].reset_index(drop=True).assign(time=times.iloc[peak_rows].dt.floor("D").to_numpy())


def is_daily(run: RunData) -> bool:
    band = run.band("demand_requests")
    return len(daily(band, "max")) < len(band)


def plain(text: str) -> str:
    """User text as matplotlib draws it literally (``$`` would start mathtext)."""
    return str(text).replace("$", r"\$")


def fan(ax, band: pd.DataFrame, color: str, label: str, scale: float = 1.0, step: bool = True) -> None:
    """P5–P95 and P10–P90 shaded, P50 drawn, of one band (``label`` is drawn literally)."""
    label = plain(label)
    t = band["time"].to_numpy()
    for low, high, alpha, text in (("p5", "p95", 0.12, None), ("p10", "p90", 0.30, f"{label}: P10–P90")):
        x, lower, upper = _envelope(t, band[low].to_numpy() * scale, band[high].to_numpy() * scale)
        ax.fill_between(x, lower, upper, color=color, alpha=alpha, linewidth=0, label=text,
                        step="post" if step else None)
    ax.plot(t, band["p50"].to_numpy() * scale, color=color, linewidth=1.1, label=f"{label}: P50",
            drawstyle="steps-post" if step else "default")
