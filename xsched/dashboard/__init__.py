"""What users look at beyond the notebook: ``performance_report`` and the live dashboard page.

``svg.py`` draws the figures (pure functions, inline SVG); ``report.py`` gathers what a
block of code did from the client and writes one self-contained HTML file; ``figures.py``
makes the task stream and the profile figures of their own (``get_task_stream(plot=...)``,
``client.profile(plot=..., filename=...)``). ``server.py``
serves a scheduler's live dashboard page (the JupyterLab panes, bundled under
``static/``); it imports tornado, so it is imported only when a scheduler starts a
dashboard, through the hook registered here (``Scheduler.start`` calls
``hooks.dashboard_server``; the scheduler imports nothing from this layer).

>>> from xsched.dashboard import performance_report
"""

from .. import hooks
from . import figures  # noqa: F401 (registers hooks.task_stream_figure and hooks.profile_figure)
from .report import PerformanceReport, performance_report

__all__ = ["performance_report", "PerformanceReport"]


@hooks.dashboard_server.register
async def _serve_dashboard(scheduler, host: str, port: int):
    """Start the dashboard page of ``scheduler`` on ``host:port`` (its ``DashboardServer``)."""
    from .server import DashboardServer  # tornado: only in a scheduler that serves the page

    return await DashboardServer(scheduler).start(host, port)
