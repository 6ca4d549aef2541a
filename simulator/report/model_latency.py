"""Each served model's latency and service in the report, never pooled across models.

Pooled by request count, a high-volume small model's attainment hides a low-volume large
model's misses; so the report draws one band per model (``model_bands.parquet``: per step,
the share of the model's served requests within its SLO, and the share of its demand left
unserved) and, for a run of two models or more, a table of each model's figures over the
horizon (``summary.json``'s ``models``: P10/P50/P90 over paths). See
:mod:`simulator.runs.model_figures` for the definitions.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from matplotlib.ticker import PercentFormatter

from simulator.report.fan_charts import PALETTE, daily, fan
from simulator.report.rundata import RunData

#: What each panel draws of a long hourly run's day: attainment's low, unserved share's peak.
_PANELS = (("slo_attainment", "min", "served within SLO", "lower left"),
           ("unserved_share", "max", "demand unserved", "upper left"))


def has_model_bands(run: RunData) -> bool:
    return run.model_bands is not None and len(run.model_bands) > 0


def band_models(run: RunData) -> list[str]:
    """The models of ``model_bands.parquet``, in the scenario's order."""
    return list(dict.fromkeys(run.model_bands["model"]))


def model_band(run: RunData, model: str, metric: str) -> pd.DataFrame:
    """One model's band of one metric: ``time, mean, p5, p10, p50, p90, p95`` by step."""
    rows = run.model_bands[(run.model_bands["model"] == model) & (run.model_bands["metric"] == metric)]
    return rows.drop(columns=["model", "metric"]).reset_index(drop=True)


def model_panels(run: RunData, latency_ax: Any, unserved_ax: Any) -> None:
    """One fan per model (P10–P90 and the P50 line over paths): its SLO attainment on
    ``latency_ax``, its unserved share on ``unserved_ax``."""
    for ax, (metric, how, ylabel, corner) in zip((latency_ax, unserved_ax), _PANELS, strict=True):
        for index, model in enumerate(band_models(run)):
            fan(ax, daily(model_band(run, model, metric), how), PALETTE[index % len(PALETTE)], model, scale=100.0)
        ax.yaxis.set_major_formatter(PercentFormatter())
        ax.set_ylabel(ylabel)
        ax.legend(loc=corner, fontsize=8, ncols=2)


def _share(value: Any) -> str:
    return "–" if value is None else f"{value:.2%}"


def _cells(figure: dict[str, Any]) -> list[dict[str, Any]]:
    """P50, and P10 – P90, of one figure's quantiles."""
    return [{"text": _share(figure.get("p50")), "negative": False},
            {"text": f"{_share(figure.get('p10'))} – {_share(figure.get('p90'))}", "negative": False}]


def model_latency_table(summary: dict[str, Any]) -> dict[str, Any] | None:
    """Each model's SLO attainment (of its requests served) and unserved share (of its
    demand) over the horizon, P50 and P10 – P90 over paths; None for fewer than two models
    (one model's figures are the run's own, in the headline and the chart)."""
    models = summary.get("models") or {}
    if len(models) < 2:
        return None
    rows = [[{"text": str(name), "negative": False}, *_cells(entry.get("slo_attainment") or {}),
             *_cells(entry.get("unserved_share") or {})] for name, entry in models.items()]
    return {"columns": ["Model", "SLO attainment (P50)", "P10 – P90", "Unserved (P50)", "P10 – P90"], "rows": rows}


def latency_finding(summary: dict[str, Any]) -> dict[str, str] | None:
    """The key-findings card: the model whose served requests meet the SLO least (pooled over
    paths; P50 for a run without pooled figures), so that a large model's misses show
    whatever the other models' volume."""
    models = {name: entry for name, entry in (summary.get("models") or {}).items()
              if (entry.get("slo_attainment") or {}).get("p50") is not None}
    if not models:
        return None
    name = min(models, key=lambda each: (models[each].get("slo_attainment_pooled")
                                         if models[each].get("slo_attainment_pooled") is not None
                                         else models[each]["slo_attainment"]["p50"]))
    entry = models[name]
    attainment, unserved = entry["slo_attainment"], entry.get("unserved_share") or {}
    pooled = entry.get("slo_attainment_pooled")
    if pooled is None:  # (a run of an earlier version: per-path quantiles only)
        value = f"P50 {_share(attainment['p50'])}"
        note = (f"P10 {_share(attainment['p10'])} – P90 {_share(attainment['p90'])} over paths; "
                f"{_share(unserved.get('p50'))} of its demand unserved (P50)")
    else:
        value = f"pooled {_share(pooled)}"
        note = (f"within the SLO of its requests served, pooled over paths; per path P10 "
                f"{_share(attainment['p10'])} · P50 {_share(attainment['p50'])} · P90 {_share(attainment['p90'])}; "
                f"{_share(entry.get('unserved_share_pooled'))} of its demand unserved (pooled)")
    if len(models) == 1:
        return {"label": "SLO attainment", "value": f"{value} of requests served", "note": note}
    return {"label": "SLO attainment, lowest model", "value": f"{name}: {value}",
            "note": note + "; every model in the table below"}
