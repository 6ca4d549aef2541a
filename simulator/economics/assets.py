"""Owned GPUs as assets: what the books carry, what a sale brings, what the fleet would fetch.

From one path's :class:`AssetLog` (filled by the engine's fleet, :mod:`simulator.path.fleet.state`),
month by month:

- the opening fleet: GPUs in service before the horizon (not bought within it) enter the
  opening balance sheet at cost (the pool's price, or their book value if higher) less the
  depreciation that brought them to their book value;
- sales: every GPU removed (a dated removal, retirement at end of life) is sold at its market
  value when its GPU type has a curve (:mod:`simulator.scenario.market_value`), else at its net
  book value; the gain or loss is the proceeds less that book value, and the sale takes the
  GPUs' cost and accumulated depreciation off the books;
- the fleet's value at each month's end per pool: at market (a curve; else book), and at
  book (each piece's cost less its straight-line depreciation to date; a delivery waiting for
  power is carried at cost and does not depreciate), the denominator of a loan-to-value test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from simulator.scenario.market_value import MarketValue


@dataclass
class AssetLog:
    """One path's owned GPUs as the books see them (times in seconds from the horizon start).

    - ``assets``: (pool, count, delivered_s, age_s at delivery, cost per GPU, book value per
      GPU at delivery, paid within the horizon);
    - ``pieces``: (asset, count, installed_s, depreciation USD per GPU-second, depreciation end s);
    - ``sales``: (time_s, piece, count, net book value per GPU);
    - ``orders``: [ordered_s, promised_s, delivered_s (NaN: not yet), pool, count].
    """

    assets: list = field(default_factory=list)
    pieces: list = field(default_factory=list)
    sales: list = field(default_factory=list)
    orders: list = field(default_factory=list)


@dataclass
class AssetMonths:
    """Per month (and pool, for values at the month's end)."""

    opening_cost: float
    opening_accumulated: float
    sale_cost: np.ndarray  # cost of the GPUs sold
    sale_book: np.ndarray  # their net book value
    sale_proceeds: np.ndarray
    market_value: np.ndarray  # (months, pools) at each month's end
    book_value: np.ndarray  # (months, pools) at each month's end


def month_index(starts_s: np.ndarray, times_s: np.ndarray | float) -> np.ndarray:
    """The month (row) each time falls in: months start at ``starts_s`` (the first at 0)."""
    return np.maximum(np.searchsorted(starts_s, times_s, side="right") - 1, 0)


def asset_months(log: AssetLog, starts_s: np.ndarray, ends_s: np.ndarray, price_usd: np.ndarray,
                 curves: Sequence[MarketValue | None]) -> AssetMonths:
    """The books' view of the path's owned GPUs over months ``[starts_s, ends_s)``.

    ``price_usd`` and ``curves``: per pool, the new price and the resale curve (None: book value).
    """
    n, pools = len(starts_s), len(price_usd)
    sale_cost, sale_book, proceeds = np.zeros(n), np.zeros(n), np.zeros(n)
    sold_by_month = np.zeros((n, len(log.pieces)))
    assets = log.assets
    for t, piece, count, book in log.sales:
        asset = assets[log.pieces[piece][0]]
        pool, age = asset[0], asset[3] + t - asset[2]
        j = int(month_index(starts_s, t))
        sale_cost[j] += count * asset[4]
        sale_book[j] += count * book
        curve = curves[pool]
        value = book if curve is None else float(price_usd[pool] * curve.share(age))
        proceeds[j] += count * value
        sold_by_month[j, piece] += count
    opening_cost = sum(a[1] * a[4] for a in assets if a[2] <= 0 and not a[6])
    opening_accumulated = sum(a[1] * (a[4] - a[5]) for a in assets if a[2] <= 0 and not a[6])
    market, books = np.zeros((n, pools)), np.zeros((n, pools))
    gone = np.cumsum(sold_by_month, axis=0)  # sold up to each month's end, per piece
    installed = np.zeros((n, len(assets)))  # GPUs of each asset installed by each month's end
    for k, (asset, count, installed_s, rate, ends) in enumerate(log.pieces):
        pool = assets[asset][0]
        at_end = installed_s < ends_s  # an event at a month's end belongs to the next month
        alive = np.where(at_end, count - gone[:, k], 0.0)
        installed[:, asset] += np.where(at_end, count, 0.0)
        book = np.where(at_end, rate * np.maximum(ends - ends_s, 0.0), 0.0)
        if rate == 0.0:  # not depreciating: a worthless cohort or one past its life
            book = np.zeros(n)
        books[:, pool] += alive * book
        market[:, pool] += alive * _value(assets[asset], price_usd, curves, ends_s, book)
    for a, (pool, count, delivered, _age, _cost, book, _paid) in enumerate(assets):
        held = delivered < ends_s
        waiting = np.where(held, count - installed[:, a], 0.0)  # delivered, waiting for power
        books[:, pool] += waiting * book
        market[:, pool] += waiting * _value(assets[a], price_usd, curves, ends_s, np.full(n, book))
    return AssetMonths(opening_cost, opening_accumulated, sale_cost, sale_book, proceeds, market, books)


def _value(asset: tuple, price_usd: np.ndarray, curves: Sequence[MarketValue | None], ends_s: np.ndarray,
           book: np.ndarray) -> np.ndarray:
    """One GPU of ``asset`` at each month's end: at market, or its book value without a curve."""
    pool, _count, delivered, age = asset[0], asset[1], asset[2], asset[3]
    curve = curves[pool]
    if curve is None:
        return book
    return price_usd[pool] * curve.share(age + ends_s - delivered)


def pool_curves(pool_gpus: Sequence[str], market_values: Mapping[str, MarketValue]) -> list[MarketValue | None]:
    """Each pool's resale curve, by its GPU type (None: none given)."""
    return [market_values.get(gpu) for gpu in pool_gpus]
