"""Fitting a demand forecast to a history: exponential smoothing on the log rate, chosen by AICc.

The model is an ETS state-space model (statsmodels' ``ETSModel``: additive error, additive trend
damped or not, additive seasonality, fitted by maximum likelihood) on the logarithm of the mean
request rate per period, so growth compounds and the noise is a share of the rate. Why ETS: its
likelihood is exact for the models it compares, the information criterion chooses the trend's
form (none, straight, damped) and the seasonality from the data, and its state-space form gives
the whole distribution of future paths, not only a band, which is what a Monte Carlo path needs.

The period modelled follows the history's cadence: hourly (or finer) data are averaged to days
(complete days only), their hour-of-day profile kept as a fixed intraday shape, and the weekday
cycle fitted as the ETS season (period 7); daily data likewise (the season when there are four
weeks or more); weekly and monthly data have no season. Candidates: a trend and a damped trend,
each with and without the season where one applies; the lowest AICc wins, except that a damped
trend must beat the same form undamped by more than 2 (models within 2 are equally supported,
and a damped trend that wins by less stops a growth the data do not show stopping). A model without a
trend is not a candidate: on a history whose level wanders (a random walk with drift), the
criterion would pick it often and forecast no growth where there is some, with bands far too
narrow (seen on synthetic random walks: 4 seeds in 40, 63% coverage of their 90% bands); a damped
trend already forecasts a flat future when the data say so.

What the fit does not carry by itself is the uncertainty of the trend it estimated: with a
smoothing weight of zero, ETS's future trend is certain. The trend's standard error is the larger
of the maximum-likelihood one of the ETS fit's initial trend (the inverse Hessian statsmodels
reports) and the Newey–West standard error of a regression of the log rate on time (and weekday
terms) (:func:`_trend_sd` says why); each simulated path tilts its trend by a draw from it
(:mod:`simulator.scenario.forecasting.model`). The growth reported is the trend at the history's end
with that standard error's 90% interval.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from simulator.scenario.forecasting.change import GrowthChange, find_change
from simulator.scenario.forecasting.model import damped_sum
from simulator.units import SECONDS_PER_DAY, SECONDS_PER_MONTH

WEEK = 7
MIN_POINTS = 8  # fewer than this and a trend, its noise and its season cannot be told apart
SEASON_MIN_POINTS = 4 * WEEK
Z95 = 1.6448536269514722
PARSIMONY_AICC = 2.0  # a damped trend is chosen only when its AICc beats the undamped one's by more


@dataclass
class ForecastFit:
    """A fitted forecast: the numbers paths are drawn from, and what a reader needs to trust it."""

    label: str  # the form chosen, e.g. "ETS(A,Ad,A)"
    period: str  # day | week | month | N days
    period_s: float
    origin: pd.Timestamp  # the end of the history's last period: the forecast's first instant
    alpha: float
    beta: float
    gamma: float
    phi: float  # 1 without damping
    sigma: float  # of the one-period log error
    level: float  # ln mean rate of the last period, its weekday multiplier taken out (they average 1)
    trend: float  # ln growth per period at the origin (0 without a trend)
    seasonal: list[float]  # the next ``len`` seasonal states, first one for the first period
    trend_sd: float  # standard error of the trend per period (the regression's)
    points: int
    candidates: list[tuple[str, float]]  # (label, AICc), best first
    change: GrowthChange | None = None  # the change of growth looked for in the history
    series: pd.Series | None = None  # the mean rate per period of the whole history (what a backtest holds out)
    bic: float = float("nan")  # of the ETS fit on ln rates (−2 log L + p ln n)
    hourly: list[float] | None = None  # intraday shape (hourly data)
    weekly: list[float] | None = None  # Monday-first weekday multipliers (the season)
    notes: list[str] = field(default_factory=list)

    @property
    def description(self) -> str:
        return f"{self.label} on ln(mean rate per {self.period})"

    def spec(self, widen: float = 1.0, trend: float | None = None, trend_sd: float | None = None,
             regime: dict | None = None):
        """The :class:`~simulator.scenario.forecast_spec.DemandForecast` paths are drawn from."""
        from simulator.scenario.forecast_spec import DemandForecast

        return DemandForecast(
            model=self.description, origin=self.origin.isoformat(), period_s=self.period_s, alpha=self.alpha,
            beta=self.beta, gamma=self.gamma, phi=self.phi, sigma=self.sigma,
            trend=self.trend if trend is None else trend, trend_sd=self.trend_sd if trend_sd is None else trend_sd,
            season_length=len(self.seasonal), widen=widen, regime=regime)

    @property
    def periods_per_month(self) -> float:
        return SECONDS_PER_MONTH / self.period_s

    @property
    def growth_per_month(self) -> float:
        """The growth the forecast starts from: the trend at the origin, a month of it."""
        return math.expm1(self.trend * self.periods_per_month)

    @property
    def growth_interval(self) -> tuple[float, float]:
        """Its 90% interval, from the trend's standard error."""
        return tuple(math.expm1((self.trend + z * self.trend_sd) * self.periods_per_month) for z in (-Z95, Z95))

    def point(self, periods: np.ndarray) -> np.ndarray:
        """The point forecast's deseasonalised ln mean rate of period ``h`` after the origin (h >= 1)."""
        h = np.asarray(periods, dtype=np.float64)
        return self.level + damped_sum(self.phi, h) * self.trend


def modelling_series(rps: pd.Series, starts: pd.DatetimeIndex, cadence: str,
                     spacing: pd.Timedelta) -> tuple[pd.Series, str, float, pd.Timestamp, list[float] | None]:
    """The mean rate per modelled period (indexed by period start), the period's name and length,
    the origin, and the intraday shape when the history is finer than a day."""
    if spacing < pd.Timedelta(days=1):
        frame = pd.DataFrame({"rps": rps.to_numpy()}, index=starts)
        day = frame.index.normalize()
        counts = frame.groupby(day)["rps"].count()
        full = counts[counts == counts.max()].index
        frame = frame[day.isin(full)]
        daily = frame.groupby(frame.index.normalize())["rps"].mean()
        hour = frame.index.hour
        ratio = frame["rps"].to_numpy() / daily.reindex(frame.index.normalize()).to_numpy()
        shape = pd.Series(ratio).groupby(hour).mean().reindex(range(24)).ffill().bfill()
        hourly = (shape / shape.mean()).round(4).tolist()
        return daily, "day", SECONDS_PER_DAY, daily.index[-1] + pd.Timedelta(days=1), hourly
    series = pd.Series(rps.to_numpy(), index=starts)
    if cadence == "monthly":
        return series, "month", SECONDS_PER_MONTH, starts[-1] + pd.DateOffset(months=1), None
    name = {"daily": "day", "weekly": "week"}.get(cadence, f"{spacing.days} days")
    return series, name, spacing.total_seconds(), starts[-1] + spacing, None


def fit_forecast(rps: pd.Series, starts: pd.DatetimeIndex, cadence: str, spacing: pd.Timedelta,
                 detect_change: bool = True) -> ForecastFit:
    """Fit the forecast to a history read (module docstring); ValueError when it is too short."""
    series, period, period_s, origin, hourly = modelling_series(rps, starts, cadence, spacing)
    fit = fit_periods(series, period, period_s, origin, detect_change)
    fit.hourly = hourly
    return fit


def fit_periods(series: pd.Series, period: str, period_s: float, origin: pd.Timestamp, detect_change: bool = True,
                form: str | None = None) -> ForecastFit:
    """Fit the mean rate per period (indexed by period start), the whole procedure: the form by
    AICc (or ``form``), then, with ``detect_change``, a change of growth found in the history
    (:func:`~simulator.scenario.forecasting.change.find_change`, against this fit too) starts the
    history the model is fitted on when at least :data:`MIN_POINTS` periods follow it, and the
    trend ahead is the broken line's after the change."""
    whole = fit_series(series, period, period_s, origin, form)
    change = None
    if detect_change:
        season = WEEK if period == "day" and len(series) >= SEASON_MIN_POINTS else 0
        change = find_change(series, season, rival_bic=whole.bic)
    since = series
    if change is not None and change.found and len(series) - change.index >= MIN_POINTS:
        since = series.iloc[change.index:]
    fit = whole if len(since) == len(series) else fit_series(since, period, period_s, origin, form)
    fit.change, fit.series = change, series
    if len(since) < len(series):
        # The trend ahead is the broken line's: fitted on the whole history, the date's
        # uncertainty in its spread (a line fitted since the date alone understates both).
        fit.trend, fit.trend_sd = change.after_mean, max(change.after_sd, fit.trend_sd if fit.phi >= 1 else 0.0)
        fit.notes.append(f"growth changed around {change.at:%Y-%m-%d} (90% interval {change.interval[0]:%Y-%m-%d} "
                         f"to {change.interval[1]:%Y-%m-%d}, probability {change.probability:.0%}): fitted on the "
                         f"{len(since)} {period}s since")
    return fit


def with_prior(trend: float, trend_sd: float, period_s: float, rate_per_month: float, sd: float) -> tuple[float, float]:
    """The trend and its standard error (per period) combined with a prior on the monthly growth,
    by precision on the log scale (docs/guide/demand-history.md): ``m0 = ln(1 + g0)``, ``v0 = (s0 / (1 + g0))²``."""
    per_month = SECONDS_PER_MONTH / period_s
    g, s = trend * per_month, max(trend_sd * per_month, 1e-12)
    m0, v0 = math.log1p(rate_per_month), (sd / (1.0 + rate_per_month)) ** 2
    precision = 1.0 / s**2 + 1.0 / v0
    return (g / s**2 + m0 / v0) / precision / per_month, precision**-0.5 / per_month


def fit_series(series: pd.Series, period: str, period_s: float, origin: pd.Timestamp,
               form: str | None = None) -> ForecastFit:
    """Fit the mean rate per period (indexed by period start); ``form`` (e.g. ``"ETS(A,Ad,A)"``)
    fits that candidate only, as a backtest refits the chosen form."""
    y = np.log(series.to_numpy())
    if len(y) < MIN_POINTS:
        raise ValueError(f"{len(y)} {period}s of history; a forecast needs at least {MIN_POINTS}")
    season = WEEK if period == "day" and len(y) >= SEASON_MIN_POINTS else 0
    results, label, table = _choose(y, season, form, period_s)
    states = results.states
    trend = float(states["trend"].iloc[-1])
    seasonal = []
    weekly = None
    level = float(states["level"].iloc[-1])
    if results.model.seasonal is not None:
        last = states["seasonal"].iloc[-season:].to_numpy()
        # ETS's season and level trade a constant; move it into the level so that the weekday
        # multipliers e^s average 1, as a scenario's profile does: level + s is unchanged.
        shift = math.log(float(np.mean(np.exp(last))))
        level += shift
        last = last - shift
        seasonal = [float(v) for v in last]  # s_{T-m+1} … s_T: the state for period T+h is seasonal[(h-1) % m]
        days = series.index[-season:].day_of_week
        weekly = [0.0] * WEEK
        for weekday, value in zip(days, np.exp(last), strict=True):
            weekly[weekday] = round(float(value), 6)
    _, slope_se = trend_regression(y, series.index, season if seasonal else 0)
    trend_sd = _trend_sd(results, slope_se)
    return ForecastFit(
        label=label, period=period, period_s=period_s, origin=origin,
        alpha=float(results.smoothing_level), beta=float(getattr(results, "smoothing_trend", 0.0) or 0.0),
        gamma=float(getattr(results, "smoothing_seasonal", 0.0) or 0.0),
        phi=float(results.damping_trend) if results.model.damped_trend else 1.0,
        sigma=float(math.sqrt(results.mse)), level=level, trend=trend,
        seasonal=seasonal, trend_sd=trend_sd,
        points=len(y), candidates=table, weekly=weekly, bic=float(results.bic))


def damping_bounds(period_s: float) -> tuple[float, float]:
    """Bounds of the damping per period: 0.8 to 0.98 a month (the usual range for monthly data),
    taken to the period's length, so a daily trend is not damped within weeks."""
    power = period_s / SECONDS_PER_MONTH
    return 0.8**power, 0.98**power


def _choose(y: np.ndarray, season: int, form: str | None = None, period_s: float = SECONDS_PER_MONTH):
    """Fit every candidate (or only ``form``); return the lowest-AICc results, its label and the table."""
    from statsmodels.tsa.exponential_smoothing.ets import ETSModel

    fitted = []
    for damped in (False, True):
        for seasonal in ((None, "add") if season else (None,)):
            label = f"ETS(A,{'Ad' if damped else 'A'},{'A' if seasonal else 'N'})"
            if form is not None and label != form:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = ETSModel(pd.Series(y), error="add", trend="add", damped_trend=damped, seasonal=seasonal,
                                 seasonal_periods=season or None,
                                 bounds={"damping_trend": damping_bounds(period_s)} if damped else None)
                results = model.fit(disp=False)
            if not np.isfinite(results.aicc):
                continue
            fitted.append((results.aicc, label, results))
    if not fitted:
        raise ValueError(f"no forecast model could be fitted to {len(y)} points")
    fitted.sort(key=lambda item: item[0])
    best = fitted[0]
    if "Ad" in best[1]:  # damping must earn its parameter: within 2 of the undamped form, the undamped
        plain = next((item for item in fitted if item[1] == best[1].replace("Ad", "A")), None)
        if plain is not None and plain[0] - best[0] <= PARSIMONY_AICC:
            best = plain
    return best[2], best[1], [(label, float(aicc)) for aicc, label, _ in fitted]


def _trend_sd(results, regression_se: float) -> float:
    """The trend's standard error: the larger of the regression's (Newey–West) and the ETS fit's
    for its initial trend (the inverse Hessian's). The regression's is steady but too small when the level wanders; the
    Hessian's follows the model but scatters by a factor of two from one history to the next of
    the same process (a numerical second derivative): the larger keeps the band from collapsing
    on either."""
    names = list(results.model.param_names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        se = float(np.asarray(results.bse)[names.index("initial_trend")])
    return max(se, regression_se) if math.isfinite(se) else regression_se


def trend_regression(y: np.ndarray, index: pd.DatetimeIndex, season: int) -> tuple[float, float]:
    """Slope of ``ln rate`` per period and its Newey–West standard error (weekday terms with a season)."""
    import statsmodels.api as sm

    n = len(y)
    columns = [np.ones(n), np.arange(n, dtype=np.float64)]
    if season:
        weekday = index.day_of_week.to_numpy()
        columns += [(weekday == d).astype(np.float64) for d in range(1, WEEK)]
    design = np.column_stack(columns)
    lags = int(math.floor(4 * (n / 100) ** (2 / 9)))
    fit = sm.OLS(y, design).fit(cov_type="HAC", cov_kwds={"maxlags": max(lags, 1)})
    return float(fit.params[1]), float(fit.bse[1])
