"""Forecasting demand from a history: the model fitted, its paths, a change of growth, backtests."""
