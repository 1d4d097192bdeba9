"""The task stream as a figure: shown in a notebook, or saved as a page of its own.

``client.get_task_stream(plot=True)`` and ``xsched.get_task_stream(plot=True)`` (as dask's)
return the runs with a ``TaskStreamFigure``; ``plot="save"`` also writes it to ``filename``.
The client reaches this module through ``hooks.task_stream_figure`` (registered by
``xsched.dashboard``), as the layers import downward only::

    runs (dicts: key, group, worker, start, stop, status) -> svg.task_stream_svg -> TaskStreamFigure
        notebook: _repr_html_ (the figure's CSS, coloured from JupyterLab's theme variables)
        save(path): one HTML page, no script, light and dark (report.py's page style)

>>> runs = [{"key": "inc-1", "group": "inc", "worker": "tcp://w:2", "start": 0.0, "stop": 0.5, "status": "memory"}]
>>> fig = task_stream_figure(runs)
>>> fig
TaskStreamFigure<1 task run on 1 worker>
>>> 'data-task-count="1"' in fig.svg
True
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from .. import hooks
from . import svg
from .report import _checked_path, _write, page

__all__ = ["TaskStreamFigure", "task_stream_figure", "DEFAULT_FILENAME"]

DEFAULT_FILENAME = "task-stream.html"

#: in a notebook, the figure's colours follow JupyterLab's theme (light or dark)
_NOTEBOOK_STYLE = """
.xsched-task-stream { --xs-fg: var(--jp-content-font-color1, #222); --xs-muted: var(--jp-content-font-color2, #666);
  --xs-axis: var(--jp-border-color1, #888); --xs-grid: var(--jp-border-color2, #ddd);
  --xs-row: var(--jp-layout-color2, #f4f4f4); }
"""


class TaskStreamFigure:
    """Task runs drawn as a row per worker and a bar per run, coloured by task group: shows
    itself in a notebook; ``.svg`` is the drawing, ``save(path)`` writes an HTML page."""

    def __init__(self, runs: list[Mapping]):
        self.runs = runs
        self.svg = svg.task_stream_svg(runs)

    def __repr__(self) -> str:
        workers = len({r.get("worker") for r in self.runs})
        n = len(self.runs)
        return f"TaskStreamFigure<{n} task run{'s' if n != 1 else ''} on {workers} worker{'s' if workers != 1 else ''}>"

    def _repr_html_(self) -> str:
        return f'<div class="xsched-task-stream"><style>{svg.STYLE}{_NOTEBOOK_STYLE}</style>{self.svg}</div>'

    def save(self, path: str | os.PathLike = DEFAULT_FILENAME) -> str:
        """Write the figure as one HTML page that opens offline; returns its absolute path."""
        path = _checked_path(path, "get_task_stream", DEFAULT_FILENAME)
        _write(path, page(f"xsched task stream: {len(self.runs):,} task runs", self.svg))
        return path


@hooks.task_stream_figure.register
def task_stream_figure(runs: Iterable[Mapping], filename: str | os.PathLike | None = None) -> TaskStreamFigure:
    """The figure of ``runs`` (as ``client.get_task_stream()`` returns them), saved to
    ``filename`` when one is given."""
    fig = TaskStreamFigure(list(runs))
    if filename is not None:
        fig.save(filename)
    return fig
