"""The contract book of one path: what each contract term held, billed, credited and prepaid.

The engine logs each term of each contract as it runs (:class:`ContractTerm`: its GPUs, when it
held them, its price and terms, whether the customer defaulted) and the step kernel reports
the GPUs each pool held for contracts in each step (``POOL_CONTRACTED``: fewer than contracted
when GPUs are down or were never delivered). Per step, a pool's contract GPUs go to its terms
in proportion to what each holds then; each term bills ``usd_per_gpu_hour`` × max(take-or-pay,
usage) for the GPUs it got and credits ``sla_credit_usd_per_gpu_hour`` for each contracted
GPU-hour it did not. Revenue is billing less credits.

Prepayment: ``prepaid_share`` of the term's committed value (GPUs × the term's hours × price ×
max(take-or-pay, usage)) comes in at the term's start (before the horizon: it is the opening
deferred revenue, less what the months already run used); each month recognises that share of
its billing out of it; what is left when the term ends (credits, a default) is recognised then
as other income (a prepayment kept).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from simulator.economics.assets import month_index


@dataclass(frozen=True)
class ContractTerm:
    """One term of a contract as a path ran it (times in seconds from the horizon's start)."""

    name: str
    pool: int
    gpus: int
    start_s: float  # the term's start (may be before the horizon)
    end_s: float  # the term's end as signed
    stop_s: float  # when it stopped holding GPUs: its end, or the customer's default
    usd_per_gpu_hour: float
    take_or_pay: float
    usage: float
    prepaid_share: float
    sla_credit_usd_per_gpu_hour: float
    defaulted: bool

    @property
    def rate(self) -> float:
        """USD billed per GPU-hour delivered."""
        return self.usd_per_gpu_hour * max(self.take_or_pay, self.usage)

    @property
    def prepaid_usd(self) -> float:
        return self.prepaid_share * self.gpus * (self.end_s - self.start_s) / 3600.0 * self.rate


def held_fractions(terms: list[ContractTerm], n_steps: int, step_s: float) -> np.ndarray:
    """(terms, steps): the share of each step each term holds its GPUs."""
    starts = np.arange(n_steps) * step_s
    out = np.zeros((len(terms), n_steps))
    for i, term in enumerate(terms):
        overlap = np.minimum(starts + step_s, term.stop_s) - np.maximum(starts, max(term.start_s, 0.0))
        out[i] = np.clip(overlap / step_s, 0.0, 1.0)
    return out


def contract_steps(terms: list[ContractTerm], delivered: np.ndarray, step_s: float
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per (term, step): GPUs contracted and delivered (step averages), billing and credits.

    ``delivered``: (steps, pools) GPUs the kernel held for contracts in each step."""
    n_steps = delivered.shape[0]
    if not terms:
        empty = np.zeros((0, n_steps))
        return empty, empty, empty, empty
    share = held_fractions(terms, n_steps, step_s)
    contracted = share * np.array([[t.gpus] for t in terms], dtype=np.float64)
    got = np.zeros_like(contracted)
    for pool in {t.pool for t in terms}:
        rows = [i for i, t in enumerate(terms) if t.pool == pool]
        total = contracted[rows].sum(axis=0)
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(total > 0, np.minimum(delivered[:, pool], total) / np.where(total > 0, total, 1.0), 0.0)
        got[rows] = contracted[rows] * scale
    hours = step_s / 3600.0
    rate = np.array([[t.rate] for t in terms])
    credit = np.array([[t.sla_credit_usd_per_gpu_hour] for t in terms])
    billing = got * hours * rate
    credits = (contracted - got) * hours * credit
    return contracted, got, billing, credits


@dataclass
class ContractMonths:
    """Per month (rows), for the books."""

    prepaid: np.ndarray  # cash received as prepayment
    recognised: np.ndarray  # revenue taken out of deferred revenue
    forfeited: np.ndarray  # deferred revenue left at a term's end or default: other income
    opening_deferred: float


def contract_months(terms: list[ContractTerm], billing_by_month: np.ndarray, starts_s: np.ndarray,
                    horizon_s: float) -> ContractMonths:
    """Prepayments, recognition and forfeits per month; ``billing_by_month`` is (terms, months)."""
    n = len(starts_s)
    prepaid, recognised, forfeited = np.zeros(n), np.zeros(n), np.zeros(n)
    opening = 0.0
    for i, term in enumerate(terms):
        if term.prepaid_share <= 0:
            continue
        if term.start_s < 0:  # prepaid before the horizon: what the months already run did not use
            used = term.prepaid_share * term.gpus * min(-term.start_s, term.end_s - term.start_s) / 3600.0 * term.rate
            deferred = max(term.prepaid_usd - used, 0.0)
            opening += deferred
        else:
            deferred = term.prepaid_usd
            prepaid[int(month_index(starts_s, term.start_s))] += deferred
        first = 0 if term.start_s < 0 else int(month_index(starts_s, term.start_s))
        for j in range(first, n):
            take = min(deferred, term.prepaid_share * billing_by_month[i, j])
            recognised[j] += take
            deferred -= take
        if term.stop_s < horizon_s and deferred > 0:
            forfeited[int(month_index(starts_s, term.stop_s))] += deferred
            # the forfeit is taken from what later months would have recognised: none (the term stopped)
    return ContractMonths(prepaid, recognised, forfeited, opening)


def contract_book(path: int, terms: list[ContractTerm], delivered: np.ndarray, step_s: float,
                  step_times: np.ndarray) -> pd.DataFrame:
    """One row per (contract, calendar month) of one path: GPU-hours contracted and delivered,
    billing, SLA credits and revenue; terms begun that month; whether the contract defaulted."""
    columns = ["path", "contract", "month", "gpu_hours_contracted", "gpu_hours_delivered", "billing_usd",
               "sla_credits_usd", "revenue_usd", "terms_started", "defaulted"]
    if not terms:
        return pd.DataFrame(columns=columns)
    contracted, got, billing, credits = contract_steps(terms, delivered, step_s)
    hours = step_s / 3600.0
    step_months = np.asarray(step_times, dtype="datetime64[M]")
    months, month_of_step = np.unique(step_months, return_inverse=True)
    names = sorted({t.name for t in terms})
    which = np.array([names.index(t.name) for t in terms])
    shape = (len(names), len(months))
    sums = {key: np.zeros(shape) for key in ("contracted", "got", "billing", "credits")}
    rows_of = np.repeat(which, len(month_of_step))
    cols_of = np.tile(month_of_step, len(terms))
    for key, values in (("contracted", contracted * hours), ("got", got * hours), ("billing", billing),
                        ("credits", credits)):
        np.add.at(sums[key], (rows_of, cols_of), values.ravel())
    begun, ended = np.zeros(shape, dtype=np.int64), np.zeros(shape, dtype=bool)
    horizon_s = len(month_of_step) * step_s  # a default after the horizon's end is not one of its months
    for t, name_index in zip(terms, which, strict=True):
        begun[name_index, month_of_step[min(int(max(t.start_s, 0.0) // step_s), len(month_of_step) - 1)]] += 1
        if t.defaulted and t.stop_s < horizon_s:
            ended[name_index, month_of_step[int(t.stop_s // step_s)]] = True
    held = sums["contracted"] > 0
    r, c = np.nonzero(held)
    return pd.DataFrame({
        "path": np.full(len(r), path, dtype=np.int64), "contract": np.array(names, dtype=object)[r],
        "month": months.astype("datetime64[ns]")[c], "gpu_hours_contracted": sums["contracted"][r, c],
        "gpu_hours_delivered": sums["got"][r, c], "billing_usd": sums["billing"][r, c],
        "sla_credits_usd": sums["credits"][r, c], "revenue_usd": sums["billing"][r, c] - sums["credits"][r, c],
        "terms_started": begun[r, c], "defaulted": ended[r, c]}, columns=columns)
