"""Figures client calls return: the task stream and the profile, shown in a notebook or
saved as a page of their own.

``client.get_task_stream(plot=True)`` and ``xsched.get_task_stream(plot=True)`` (as dask's)
return the runs with a ``TaskStreamFigure``; ``plot="save"`` also writes it to ``filename``.
``client.profile(plot=True)`` returns the profile with a ``ProfileFigure`` (its call tree as
a flame graph), ``filename=`` writes it. The client reaches this module through
``hooks.task_stream_figure`` and ``hooks.profile_figure`` (registered by
``xsched.dashboard``), as the layers import downward only::

    runs (dicts: key, group, worker, start, stop, status) -> svg.task_stream_svg -> TaskStreamFigure
    tree rows ([depth, function, file, count, own])       -> svg.profile_svg     -> ProfileFigure
        notebook: _repr_html_ (the figure's CSS, coloured from JupyterLab's theme variables)
        save(path): one HTML page, no script, light and dark (report.py's page style)

>>> runs = [{"key": "inc-1", "group": "inc", "worker": "tcp://w:2", "start": 0.0, "stop": 0.5, "status": "memory"}]
>>> fig = task_stream_figure(runs)
>>> fig
TaskStreamFigure<1 task run on 1 worker>
>>> 'data-task-count="1"' in fig.svg
True
>>> profile_figure([[0, "load", "", 3, 0], [1, "read", "io.py", 3, 3]])
ProfileFigure<3 samples of 1 kind of task>
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from .. import hooks
from ..files import output_path
from . import svg
from .report import _write, page

__all__ = ["TaskStreamFigure", "ProfileFigure", "task_stream_figure", "profile_figure", "DEFAULT_FILENAME",
           "PROFILE_FILENAME"]

DEFAULT_FILENAME = "task-stream.html"
PROFILE_FILENAME = "profile.html"

#: in a notebook, the figure's colours follow JupyterLab's theme (light or dark)
_NOTEBOOK_STYLE = """
.xsched-task-stream, .xsched-profile { --xs-fg: var(--jp-content-font-color1, #222); --xs-muted: var(--jp-content-font-color2, #666);
  --xs-axis: var(--jp-border-color1, #888); --xs-grid: var(--jp-border-color2, #ddd);
  --xs-row: var(--jp-layout-color2, #f4f4f4); }
"""


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


class _Figure:
    """A drawing (``.svg``) that shows itself in a notebook and saves as an HTML page."""

    svg: str
    what = "figure"  # the call that makes it, for error messages
    default_filename = DEFAULT_FILENAME
    css_class = "xsched-figure-box"

    def _title(self) -> str:
        raise NotImplementedError

    def _repr_html_(self) -> str:
        return f'<div class="{self.css_class}"><style>{svg.STYLE}{_NOTEBOOK_STYLE}</style>{self.svg}</div>'

    def save(self, path: str | os.PathLike | None = None) -> str:
        """Write the figure as one HTML page that opens offline; returns its absolute path."""
        path = output_path(self.default_filename if path is None else path, self.what, self.default_filename)
        _write(path, page(self._title(), self.svg))
        return path


class TaskStreamFigure(_Figure):
    """Task runs drawn as a row per worker and a bar per run, coloured by task group: shows
    itself in a notebook; ``.svg`` is the drawing, ``save(path)`` writes an HTML page."""

    what = "get_task_stream"
    css_class = "xsched-task-stream"

    def __init__(self, runs: list[Mapping]):
        self.runs = runs
        self.svg = svg.task_stream_svg(runs)

    def __repr__(self) -> str:
        workers = len({r.get("worker") for r in self.runs})
        return f"TaskStreamFigure<{_plural(len(self.runs), 'task run')} on {_plural(workers, 'worker')}>"

    def _title(self) -> str:
        return f"xsched task stream: {len(self.runs):,} task runs"


class ProfileFigure(_Figure):
    """The sampled call tree as a flame graph (an icicle: task prefixes on top, the calls
    they made below, widths by samples): shows itself in a notebook; ``save(path)`` writes
    an HTML page whose boxes name their function, file and samples on hover."""

    what = "profile"
    default_filename = PROFILE_FILENAME
    css_class = "xsched-profile"

    def __init__(self, rows: list):
        self.rows = rows
        self.svg = svg.profile_svg(rows)

    @property
    def samples(self) -> int:
        return sum(int(r[3]) for r in self.rows if int(r[0]) == 0)

    def __repr__(self) -> str:
        kinds = sum(1 for r in self.rows if int(r[0]) == 0)
        return f"ProfileFigure<{_plural(self.samples, 'sample')} of {_plural(kinds, 'kind')} of task>"

    def _title(self) -> str:
        return f"xsched profile: {self.samples:,} samples"


@hooks.task_stream_figure.register
def task_stream_figure(runs: Iterable[Mapping], filename: str | os.PathLike | None = None) -> TaskStreamFigure:
    """The figure of ``runs`` (as ``client.get_task_stream()`` returns them), saved to
    ``filename`` when one is given."""
    fig = TaskStreamFigure(list(runs))
    if filename is not None:
        fig.save(filename)
    return fig


@hooks.profile_figure.register
def profile_figure(rows: Iterable, filename: str | os.PathLike | None = None) -> ProfileFigure:
    """The flame graph of a profile's ``tree`` rows (as ``client.profile()["tree"]`` gives
    them), saved to ``filename`` when one is given."""
    fig = ProfileFigure([list(r) for r in rows])
    if filename is not None:
        fig.save(filename)
    return fig
