"""Monte Carlo error intervals: exact binomial sums checked against integer arithmetic, the
order-statistic ranks worked out by hand, and coverage measured over many replications
against quantiles and probabilities known in closed form."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction
from statistics import NormalDist

import numpy as np
import pytest

from simulator.runs.intervals import (
    binomial_cdf,
    half_width,
    mean_interval,
    quantile_interval,
    quantile_rank_bounds,
    ratio_interval,
    wilson_interval,
)

REPLICATIONS = 2000


def exact_cdf(k: int, n: int, p: Fraction) -> Fraction:
    """P(B <= k) with rational arithmetic, term by term from math.comb."""
    return sum((math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(k + 1)), Fraction(0))


def exact_coverage(n: int, q: Fraction, lower: int, upper: int) -> Fraction:
    """P(lower <= B < upper) for B ~ Binomial(n, q), exactly."""
    return sum((math.comb(n, j) * q**j * (1 - q) ** (n - j) for j in range(lower, upper)), Fraction(0))


# --- binomial_cdf ---------------------------------------------------------------------------

def test_binomial_cdf_small_case_by_hand():
    # n = 5, p = 1/2: C(5, j) = 1, 5, 10, 10, 5, 1 over 32, so the CDF is 1, 6, 16, 26, 31, 32 / 32.
    got = binomial_cdf(np.arange(-2, 8), 5, 0.5)
    assert got == pytest.approx(np.array([0, 0, 1, 6, 16, 26, 31, 32, 32, 32]) / 32, rel=1e-13, abs=0)
    assert binomial_cdf(2, 5, 0.5) == pytest.approx(16 / 32, rel=1e-13)
    assert isinstance(binomial_cdf(2, 5, 0.5), float)
    # n = 3, p = 0.2: P(B = 0) = 0.8^3 = 0.512, P(B = 1) = 3 * 0.2 * 0.64 = 0.384 -> 0.896.
    assert binomial_cdf([0, 1], 3, 0.2) == pytest.approx([0.512, 0.896], rel=1e-13)


@pytest.mark.parametrize("p", [0.013, 0.3, 0.5, 0.77, 0.999])
def test_binomial_cdf_matches_rational_arithmetic_at_n_60(p):
    n = 60
    exact = np.array([float(exact_cdf(k, n, Fraction(p))) for k in range(n + 1)])
    got = binomial_cdf(np.arange(n + 1), n, p)
    # Relative agreement everywhere, also in the far lower tail (0.23^60 is about 1e-38).
    assert got == pytest.approx(exact, rel=1e-11, abs=0)


def test_binomial_cdf_at_the_edges_of_p_and_k():
    k = np.array([-1, 0, 1, 59, 60, 61])
    assert binomial_cdf(k, 60, 0.0).tolist() == [0.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    assert binomial_cdf(k, 60, 1.0).tolist() == [0.0, 0.0, 0.0, 0.0, 1.0, 1.0]
    assert binomial_cdf([-1, 0, 3], 0, 0.4).tolist() == [0.0, 1.0, 1.0]
    assert binomial_cdf(np.array([[0, 1], [2, 3]]), 3, 0.5).shape == (2, 2)
    assert math.isnan(binomial_cdf(float("nan"), 3, 0.5))
    for bad in ({"n": 3, "p": -0.1}, {"n": 3, "p": 1.5}, {"n": -1, "p": 0.5}, {"n": 2.5, "p": 0.5}):
        with pytest.raises(ValueError):
            binomial_cdf(0, **bad)


def test_binomial_cdf_stays_accurate_at_a_million_trials():
    n = 10**6
    # p = 1e-5 (mean 10): terms from math.comb, p**j and exp((n - j) log1p(-p)), no lgamma.
    p = 1e-5
    terms = [math.comb(n, j) * p**j * math.exp((n - j) * math.log1p(-p)) for j in range(31)]
    exact = np.array([math.fsum(terms[: k + 1]) for k in range(31)])
    assert binomial_cdf(np.arange(31), n, p) == pytest.approx(exact, rel=1e-8, abs=0)
    # p = 1/2, m = n/2: by symmetry P(B <= m - 1) = (1 - P(B = m)) / 2, and
    # P(B = m) = C(2m, m) / 4^m = prod_{i=1..m} (m + i) / (4 i), summed in log space exactly.
    m = n // 2
    i = np.arange(1, m + 1, dtype=np.float64)
    central = math.exp(math.fsum(np.log((m + i) / (4 * i))))
    assert central == pytest.approx(1 / math.sqrt(math.pi * m), rel=1e-6)  # Stirling, as a sanity check
    below, at = binomial_cdf([m - 1, m], n, 0.5)
    assert below == pytest.approx((1 - central) / 2, rel=5e-9)
    assert at == pytest.approx((1 + central) / 2, rel=5e-9)


# --- quantile_rank_bounds -------------------------------------------------------------------

def test_median_ranks_for_twenty_values_by_hand():
    # B ~ Binomial(20, 1/2); each tail may hold at most (1 - 0.9) / 2 = 0.05.
    # P(B <= 5) = (1 + 20 + 190 + 1140 + 4845 + 15504) / 2^20 = 21700 / 1048576 = 0.0207
    # P(B <= 6) = (21700 + 38760) / 1048576 = 60460 / 1048576 = 0.0577 > 0.05
    # Lower: P(B < l) <= 0.05 holds for l = 6 (0.0207) but not l = 7 (0.0577), so l = 6.
    # Upper: P(B >= u) = P(B <= 20 - u) by symmetry: u = 15 gives 0.0207, u = 14 gives 0.0577,
    # so u = 15. Coverage 1 - 2 * 21700 / 1048576 = 1005176 / 1048576 = 0.9586.
    assert quantile_rank_bounds(20, 0.5, 0.9) == (6, 15)
    assert exact_coverage(20, Fraction(1, 2), 6, 15) == Fraction(1005176, 1048576)
    # At 95% the tails may hold 0.025: l = 6 and u = 15 still (0.0207 <= 0.025 < 0.0577).
    assert quantile_rank_bounds(20, 0.5, 0.95) == (6, 15)
    # At 80% (tails 0.1): P(B <= 6) = 0.0577 <= 0.1 and P(B <= 7) = 0.1316 > 0.1, so (7, 14).
    assert quantile_rank_bounds(20, 0.5, 0.8) == (7, 14)


@pytest.mark.parametrize("n, q", [(5, "1/2"), (10, "1/10"), (30, "1/10"), (30, "9/10"), (57, "1/4"),
                                  (100, "1/2"), (100, "9/10"), (250, "1/100"), (400, "1/10")])
@pytest.mark.parametrize("level", ["9/10", "19/20"])
def test_ranks_cover_at_least_the_level_exactly_and_are_the_tightest_within_each_tail(n, q, level):
    q, level = Fraction(q), Fraction(level)
    tail = (1 - level) / 2
    lower, upper = quantile_rank_bounds(n, float(q), float(level))
    assert 0 <= lower < upper <= n + 1
    below = exact_cdf(lower - 1, n, q) if lower >= 1 else Fraction(0)  # P(B < l)
    above = 1 - exact_cdf(upper - 1, n, q) if upper <= n else Fraction(0)  # P(B >= u)
    assert below <= tail and above <= tail
    assert exact_coverage(n, q, lower, upper) >= level
    # One rank further in would put more than the tail's share outside.
    if lower < n:
        assert exact_cdf(lower, n, q) > tail
    if upper > 1:
        assert 1 - exact_cdf(upper - 2, n, q) > tail


def test_ranks_at_the_edges():
    assert quantile_rank_bounds(0, 0.5, 0.9) == (0, 1)
    assert quantile_rank_bounds(3, 0.5, 0.9) == (0, 4)  # P(B = 0) = 1/8 > 0.05 on each side
    assert quantile_rank_bounds(5, 0.0, 0.9) == (0, 1)  # the minimum is above the 0-quantile
    assert quantile_rank_bounds(5, 1.0, 0.9) == (5, 6)  # the maximum is below the 1-quantile
    for bad in ({"q": 1.2, "level": 0.9}, {"q": 0.5, "level": 1.0}, {"q": 0.5, "level": 0.0}):
        with pytest.raises(ValueError):
            quantile_rank_bounds(10, **bad)


# --- quantile_interval ----------------------------------------------------------------------

def test_quantile_interval_picks_the_order_statistics_and_handles_missing_and_infinite_values():
    values = np.random.default_rng(7).permutation(np.arange(1.0, 21.0))
    assert quantile_interval(values, 0.5) == (6.0, 15.0)  # ranks (6, 15), from the case above
    with_nan = np.concatenate([values, [np.nan] * 7])
    assert quantile_interval(with_nan, 0.5) == (6.0, 15.0)  # NaN left out, n stays 20
    # Six paths that never ran short (+inf) stay in the sort: rank 15 is now one of them.
    never = np.concatenate([np.arange(1.0, 15.0), [np.inf] * 6])
    assert quantile_interval(never, 0.5) == (6.0, None)
    low_side = np.concatenate([[-np.inf] * 6, np.arange(1.0, 15.0)])
    assert quantile_interval(low_side, 0.5) == (None, 9.0)  # rank 6 is -inf, rank 15 is 9
    assert quantile_interval(never, 0.1) == (None, 5.0)  # ranks (0, 5): too few for a lower bound
    assert quantile_interval(np.arange(1.0, 11.0), 0.1) == (None, 4.0)  # ranks (0, 4)


def test_quantile_interval_with_nothing_to_go_on():
    assert quantile_interval([], 0.5) == (None, None)
    assert quantile_interval([np.nan] * 10, 0.5) == (None, None)
    assert quantile_interval([1.0, 2.0, 3.0], 0.5) == (None, None)
    assert quantile_interval([np.inf] * 50, 0.5) == (None, None)


def exponential_quantile(q):
    return -math.log1p(-q)  # rate 1


def lognormal_quantile(q):
    return math.exp(0.5 + 1.2 * NormalDist().inv_cdf(q))  # mu = 0.5, sigma = 1.2


@pytest.mark.parametrize("n", [100, 400])
@pytest.mark.parametrize("q", [0.5, 0.9])
@pytest.mark.parametrize("law", ["exponential", "lognormal"])
def test_quantile_interval_covers_a_known_quantile_about_ninety_percent_of_the_time(law, q, n):
    rng = np.random.default_rng([n, int(q * 100), len(law)])
    if law == "exponential":
        draws, truth = rng.exponential(1.0, size=(REPLICATIONS, n)), exponential_quantile(q)
    else:
        draws, truth = rng.lognormal(0.5, 1.2, size=(REPLICATIONS, n)), lognormal_quantile(q)
    hits = 0
    for row in draws:
        low, high = quantile_interval(row, q, 0.9)
        hits += low <= truth <= high
    coverage = hits / REPLICATIONS
    exact = float(exact_coverage(n, Fraction(q), *quantile_rank_bounds(n, q, 0.9)))
    assert exact >= 0.9
    assert 0.85 <= coverage <= 0.95
    # And the simulation agrees with the binomial to within four standard errors.
    assert abs(coverage - exact) <= 4 * math.sqrt(exact * (1 - exact) / REPLICATIONS)


# --- wilson_interval ------------------------------------------------------------------------

def test_wilson_interval_by_hand():
    # 10 successes in 100 at 90%: z = 1.6448536, z^2 = 2.7055435, p = 0.1.
    # shrink = 1 + z^2/n = 1.0270554; centre = (0.1 + z^2/200) / shrink = 0.1135277 / 1.0270554 = 0.1105371
    # half = z / shrink * sqrt(0.1 * 0.9 / 100 + z^2 / 40000) = 1.6015235 * sqrt(0.0009676386)
    #      = 1.6015235 * 0.0311069 = 0.0498184 -> (0.0607187, 0.1603555)
    low, high = wilson_interval(10, 100, 0.9)
    assert low == pytest.approx(0.0607187, abs=5e-7)
    assert high == pytest.approx(0.1603555, abs=5e-7)
    # Each bound is a p whose score test sits exactly at the edge: |0.1 - p| = z sqrt(p(1-p)/n).
    z = NormalDist().inv_cdf(0.95)
    for p in (low, high):
        assert abs(0.1 - p) == pytest.approx(z * math.sqrt(p * (1 - p) / 100), rel=1e-12)


def test_wilson_interval_edges():
    assert wilson_interval(0, 0) == (0.0, 1.0)
    low, high = wilson_interval(0, 10, 0.9)
    # No successes: the lower bound is exactly 0 and the upper z^2 / (n + z^2) = 2.7055 / 12.7055.
    assert low == 0.0 and high == pytest.approx(2.7055435 / 12.7055435, rel=1e-7)
    low, high = wilson_interval(10, 10, 0.9)
    assert high == 1.0 and low == pytest.approx(10 / 12.7055435, rel=1e-7)
    for bad in ((-1, 10), (11, 10), (0, -1)):
        with pytest.raises(ValueError):
            wilson_interval(*bad)


@pytest.mark.parametrize("n", [100, 400])
@pytest.mark.parametrize("p", [0.1, 0.3, 0.5])
def test_wilson_interval_covers_a_known_probability_about_ninety_percent_of_the_time(p, n):
    counts = np.random.default_rng([n, int(p * 10), 11]).binomial(n, p, size=REPLICATIONS)
    covers = {k: low <= p <= high for k in range(n + 1) for low, high in [wilson_interval(k, n, 0.9)]}
    coverage = float(np.mean([covers[k] for k in counts]))
    assert 0.85 <= coverage <= 0.95
    exact = float(sum(math.comb(n, k) * Fraction(p) ** k * (1 - Fraction(p)) ** (n - k)
                      for k in range(n + 1) if covers[k]))
    assert abs(coverage - exact) <= 4 * math.sqrt(exact * (1 - exact) / REPLICATIONS)


# --- mean_interval and half_width -----------------------------------------------------------

def test_mean_interval_by_hand_and_at_the_edges():
    # 1..5: mean 3, s = sqrt(10 / 4) = 1.5811388; half = 1.6448536 * 1.5811388 / sqrt(5) = 1.1630871.
    low, high = mean_interval([1, 2, 3, 4, 5, np.nan], 0.9)
    assert (low, high) == pytest.approx((3 - 1.1630871, 3 + 1.1630871), abs=1e-6)
    assert mean_interval([]) == (None, None)
    assert mean_interval([4.0, np.nan]) == (None, None)
    assert mean_interval([1.0, 2.0, np.inf]) == (None, None)


def test_mean_interval_covers_a_known_mean_about_ninety_percent_of_the_time():
    draws = np.random.default_rng(2024).exponential(2.0, size=(REPLICATIONS, 400))
    coverage = np.mean([low <= 2.0 <= high for low, high in map(mean_interval, draws)])
    assert 0.85 <= coverage <= 0.95


def test_half_width():
    assert half_width((1.0, 4.0)) == 1.5
    assert half_width((None, 4.0)) == math.inf
    assert half_width((1.0, None)) == math.inf
    assert half_width(wilson_interval(10, 100)) == pytest.approx(0.0498184, abs=5e-7)


def test_ratio_interval_by_hand_and_beyond_a_floats_range():
    # x = (1, 2, 3), y = (2, 2, 4): R = 6/8; residuals x − R·y = (−0.5, 0.5, 0), sd 0.5;
    # half-width z·0.5 / (√3 · 8/3).
    z = NormalDist().inv_cdf(0.95)
    half = z * 0.5 / (math.sqrt(3) * 8 / 3)
    low, high = ratio_interval([1, 2, 3], [2, 2, 4])
    assert low == pytest.approx(0.75 - half, rel=1e-12) and high == pytest.approx(0.75 + half, rel=1e-12)
    assert ratio_interval([1.0], [2.0]) == (None, None)  # one path: no interval
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow is no interval, and says nothing on the terminal
        assert ratio_interval([1e308, 1e308], [1e-308, 1e-308]) == (None, None)
