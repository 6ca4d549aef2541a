"""Reports of runs: ``report.html`` with fan charts and ``plots/*.png``, and comparisons.

``render_report`` loads on first use, so that a run without a report (or a module that only
needs the headline figures) does not import matplotlib.
"""

__all__ = ["render_report"]


def __getattr__(name: str):
    if name == "render_report":
        from simulator.report.html import render_report

        return render_report
    raise AttributeError(f"module 'simulator.report' has no attribute {name!r}")
