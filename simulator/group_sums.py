"""Sums and running sums by group, in one compiled pass, as pandas' grouped ones.

A path's digest reduces its hourly table many ways (totals per path, sums per path and
month). ``DataFrame.groupby(...).sum()`` costs about a millisecond per call before any
arithmetic, which over 10,000 paths is most of a run; these kernels do the same arithmetic
on arrays. Their results are pandas' (3.1) to the bit, whatever pandas is installed: see
:func:`sums` and :func:`running_sums`. ``tests/test_group_sums.py`` compares them with pandas.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def _float_sums(codes: np.ndarray, groups: int, values: np.ndarray) -> np.ndarray:
    rows, columns = values.shape
    sums = np.zeros((groups, columns))
    compensation = np.zeros((groups, columns))
    for i in range(rows):
        g = codes[i]
        for j in range(columns):
            value = values[i, j]
            if value == value:  # NaN is skipped
                y = value - compensation[g, j]
                t = sums[g, j] + y
                c = t - sums[g, j] - y
                compensation[g, j] = 0.0 if c != c else c  # an infinite value: no compensation
                sums[g, j] = t
    return sums


@numba.njit(cache=True)
def _int_sums(codes: np.ndarray, groups: int, values: np.ndarray) -> np.ndarray:
    rows, columns = values.shape
    sums = np.zeros((groups, columns), dtype=np.int64)
    for i in range(rows):
        for j in range(columns):
            sums[codes[i], j] += values[i, j]
    return sums


@numba.njit(cache=True)
def _float_cumsum(codes: np.ndarray, groups: int, values: np.ndarray) -> np.ndarray:
    out = np.empty(len(values))
    sums = np.zeros(groups)
    compensation = np.zeros(groups)
    for i in range(len(values)):
        g = codes[i]
        value = values[i]
        if value != value:
            out[i] = value  # NaN stays NaN, the running sum goes on
            continue
        y = value - compensation[g]
        t = sums[g] + y
        compensation[g] = t - sums[g] - y  # unlike the sum, no reset after an infinity
        sums[g] = t
        out[i] = t
    return out


def group_codes(*keys: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Each row's group number and each group's key values, groups in sorted key order (as
    ``groupby(sort=True)``; only combinations that occur)."""
    codes = np.zeros(len(keys[0]), dtype=np.int64)
    uniques = []
    for key in keys:
        unique, inverse = np.unique(key, return_inverse=True)
        codes = codes * len(unique) + inverse
        uniques.append(unique)
    present, codes = np.unique(codes, return_inverse=True)
    labels = []
    for position, unique in enumerate(uniques):
        inner = int(np.prod([len(u) for u in uniques[position + 1:]], dtype=np.int64))
        labels.append(unique[(present // inner) % len(unique)])
    return codes.astype(np.int64), labels


def sums(codes: np.ndarray, groups: int, columns: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each column summed by group (``codes`` from :func:`group_codes`).

    Integers and booleans exactly, as int64. Floats as pandas (3.1) sums them: where the rows
    come group by group and the column has no NaN, NumPy's pairwise sum of each group's run
    (``np.add.reduceat``); otherwise compensated in row order, NaN skipped.
    """
    out: dict[str, np.ndarray] = {}
    if not len(codes):
        return {name: np.zeros(groups, dtype=np.float64 if values.dtype.kind == "f" else np.int64)
                for name, values in columns.items()}
    runs = bool(np.all(codes[1:] >= codes[:-1]))
    starts = np.flatnonzero(np.concatenate(([True], codes[1:] != codes[:-1]))) if runs else None
    compensated = []
    for name, values in columns.items():
        if values.dtype.kind != "f":
            values = values.astype(np.int64)
            out[name] = (np.add.reduceat(values, starts) if runs
                         else _int_sums(codes, groups, values.reshape(-1, 1))[:, 0])
        elif runs and not np.isnan(values).any():
            out[name] = np.add.reduceat(np.ascontiguousarray(values, dtype=np.float64), starts)
        else:
            compensated.append(name)
    if compensated:
        block = _float_sums(codes, groups, np.column_stack([columns[n].astype(np.float64) for n in compensated]))
        out.update((name, block[:, j]) for j, name in enumerate(compensated))
    return {name: out[name] for name in columns}


def running_sums(codes: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Running compensated sums of a float column within each group, in row order."""
    groups = int(codes.max()) + 1 if len(codes) else 0
    return _float_cumsum(codes, groups, np.ascontiguousarray(values, dtype=np.float64))
