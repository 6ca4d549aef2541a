"""Reports of runs: ``report.html`` with fan charts and ``plots/*.png``, and comparisons."""

from simulator.report.html import render_report

__all__ = ["render_report"]
