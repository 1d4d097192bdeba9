"""Progress of computations run in this process (no Client, or ``scheduler="sync"`` /
``"threads"``), as dask's ``dask.diagnostics.ProgressBar``.

On a cluster, ``xsched.progress(...)`` and the dashboard show progress; a computation run
here has none of those, so this bar is what tells how far it got::

    with ProgressBar():
        x.sum().compute(scheduler="threads")
    [########################################] | 100% Completed |  2.1s

The bar is told of every computation ``graph/local.py`` runs while it is active (a ``with``
block, or from ``register()`` to ``unregister()``): the number of tasks when it starts,
each task as it ends, and the end. A thread of its own redraws the line every ``dt``
seconds, once the computation has run ``minimum`` seconds, so quick computations print
nothing.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, TextIO

from .graph import local

__all__ = ["ProgressBar"]


class ProgressBar:
    """A text progress bar of the computations run in this process.

    >>> import io, xsched.array as xa
    >>> out = io.StringIO()
    >>> with ProgressBar(out=out):
    ...     total = xa.ones(100, chunks=10).sum().compute()
    >>> out.getvalue().strip().split("|")[1].strip()
    '100% Completed'
    """

    def __init__(self, minimum: float = 0.0, width: int = 40, dt: float = 0.1, out: TextIO | None = None) -> None:
        if width < 1 or dt <= 0 or minimum < 0:
            raise ValueError(f"ProgressBar: width must be 1 or more, dt above 0 and minimum 0 or more; got "
                             f"width={width!r}, dt={dt!r}, minimum={minimum!r}")
        self.minimum, self.width, self.dt = minimum, width, dt
        self._out = out
        self._lock = threading.Lock()
        self._total = self._done = 0
        self._start: float | None = None
        self._stop = threading.Event()
        self._drawer: threading.Thread | None = None
        # One computation is drawn: the first started while none is, by the thread that runs
        # it (graph/local.py tells of a computation from the thread that called it). Others
        # started meanwhile -- inside its tasks, in their threads, or by another thread of
        # the user's -- are not counted: nesting is counted per thread.
        self._depths: dict[int, int] = {}
        self._owner: int | None = None

    # -- being told of computations (graph/local.py)
    def started(self, n_tasks: int) -> None:
        me = threading.get_ident()
        with self._lock:
            depth = self._depths[me] = self._depths.get(me, 0) + 1
            if self._owner is not None or depth > 1:
                return
            self._owner = me
            self._total, self._done, self._start = n_tasks, 0, time.perf_counter()
        self._stop.clear()
        self._drawer = threading.Thread(target=self._draw_until_stopped, name="xsched-progress", daemon=True)
        self._drawer.start()

    def task_done(self, key: str) -> None:
        me = threading.get_ident()
        with self._lock:
            if me == self._owner and self._depths.get(me) == 1:
                self._done += 1

    def finished(self, failed: bool) -> None:
        me = threading.get_ident()
        with self._lock:
            depth = self._depths[me] = self._depths.get(me, 1) - 1
            if not depth:
                del self._depths[me]
            if me != self._owner or depth:
                return
            self._owner = None
        self._stop.set()
        if self._drawer is not None:
            self._drawer.join()
            self._drawer = None
        if time.perf_counter() - (self._start or 0) >= self.minimum:
            self._draw(final=True)

    # -- drawing
    def _draw_until_stopped(self) -> None:
        while not self._stop.wait(self.dt):
            if time.perf_counter() - (self._start or 0) >= self.minimum:
                self._draw(final=False)

    def _draw(self, final: bool) -> None:
        with self._lock:
            total, done, start = self._total, self._done, self._start or time.perf_counter()
        share = done / total if total else 1.0
        bar = "#" * int(self.width * share)
        line = (f"\r[{bar:<{self.width}}] | {share * 100:3.0f}% Completed | "
                f"{_elapsed(time.perf_counter() - start)}")
        out = self._out or sys.stdout
        out.write(line + ("\n" if final else ""))
        out.flush()

    # -- activating
    def register(self) -> None:
        """Show the bar for every computation run here from now on (``unregister`` stops it)."""
        if self not in local.watchers:
            local.watchers.append(self)

    def unregister(self) -> None:
        """Stop showing the bar."""
        if self in local.watchers:
            local.watchers.remove(self)

    def __enter__(self) -> "ProgressBar":
        self.register()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.unregister()

    def __repr__(self) -> str:
        state = "registered" if self in local.watchers else "inactive"
        return f"<xsched.diagnostics.ProgressBar {state}, width={self.width}, dt={self.dt}s>"


def _elapsed(seconds: float) -> str:
    """``4.2s``, ``3min 5.0s``, ``1hr 2min 3.0s``, as dask's bar counts."""
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(int(minutes), 60)
    if hours:
        return f"{hours}hr {minutes}min {seconds:4.1f}s"
    if minutes:
        return f"{minutes}min {seconds:4.1f}s"
    return f"{seconds:4.1f}s"
