"""What users look at beyond the notebook: ``performance_report`` and the live dashboard page.

``svg.py`` draws the figures (pure functions, inline SVG); ``report.py`` gathers what a
block of code did from the client and writes one self-contained HTML file; ``stream.py``
makes the task stream a figure of its own (``get_task_stream(plot=...)``). ``server.py``
serves a scheduler's live dashboard page (the JupyterLab panes, bundled under
``static/``); it imports tornado, so it is imported only when a scheduler starts a
dashboard, through the hook registered here (``Scheduler.start`` calls
``hooks.dashboard_server``; the scheduler imports nothing from this layer).

>>> from xsched.dashboard import performance_report
"""

from .. import hooks
from . import stream  # noqa: F401 (registers hooks.task_stream_figure: get_task_stream(plot=...))
from .report import PerformanceReport, performance_report

__all__ = ["performance_report", "PerformanceReport"]


@hooks.dashboard_server.register
async def _serve_dashboard(scheduler, host: str, port: int):
    """Start the dashboard page of ``scheduler`` on ``host:port`` (its ``DashboardServer``)."""
    from .server import DashboardServer  # tornado: only in a scheduler that serves the page

    return await DashboardServer(scheduler).start(host, port)
