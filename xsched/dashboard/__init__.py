"""Static pages of what a cluster did, readable offline: ``performance_report``.

``svg.py`` draws the figures (pure functions, inline SVG); ``report.py`` gathers what a
block of code did from the client and writes one self-contained HTML file.

>>> from xsched.dashboard import performance_report
"""

from .report import PerformanceReport, performance_report

__all__ = ["performance_report", "PerformanceReport"]
