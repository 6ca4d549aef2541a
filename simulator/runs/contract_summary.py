"""The contract book over paths: what each contract brings, how much of it is delivered, and
how often its customer defaults (``summary.json``'s ``contracts``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from simulator.runs.intervals import wilson_interval
from simulator.runs.periods import LEVEL

QUANTILES = {"p10": 0.1, "p50": 0.5, "p90": 0.9}


def contract_summary(book: pd.DataFrame, n_paths: int, level: float = LEVEL) -> dict[str, Any]:
    """Per contract (a pipeline's contracts together, by the pipeline's name): revenue and SLA
    credits over the horizon (P10/P50/P90 over paths, a path without it counting 0), the share
    of contracted GPU-hours delivered (over every path), terms begun per path, and the share of
    paths on which it defaulted, with its Wilson interval."""
    book = book.assign(contract=book["contract"].str.split("#").str[0])
    out: dict[str, Any] = {}
    for name, rows in book.groupby("contract", sort=True):
        per_path = rows.groupby("path")[["revenue_usd", "sla_credits_usd", "terms_started"]].sum()
        per_path = per_path.reindex(range(n_paths), fill_value=0)
        defaulted = rows.groupby("path")["defaulted"].any().reindex(range(n_paths), fill_value=False)
        contracted = float(rows["gpu_hours_contracted"].sum())
        out[str(name)] = {
            "revenue_usd": {k: float(np.quantile(per_path["revenue_usd"], q)) for k, q in QUANTILES.items()},
            "sla_credits_usd": {k: float(np.quantile(per_path["sla_credits_usd"], q)) for k, q in QUANTILES.items()},
            "delivered_share": float(rows["gpu_hours_delivered"].sum() / contracted) if contracted > 0 else None,
            "terms_started_mean": float(per_path["terms_started"].mean()),
            "default_probability": float(defaulted.mean()),
            "default_probability_ci": [float(x) for x in wilson_interval(int(defaulted.sum()), n_paths, level)],
        }
    return out
