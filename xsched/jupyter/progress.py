"""``xsched.progress``: live progress bars for futures and persisted collections.

Data flow::

    progress(futures)  --subscribe-progress {keys, sub}-->  scheduler (ProgressExtension)
        <-- reply {groups: {group: [done, erred, total]}}
    client loop  <-- "progress" {sub, groups, done} (at most every 100 ms, only on change)
        Client._handle -> client._progress[sub]._update(msg) -> _render()
            notebook: one ipywidgets.IntProgress + label per group (updated from the loop thread)
            terminal: one text line rewritten with "\\r"

The scheduler counts from its own transitions; the client never polls tasks.

In a terminal (or with ``notebook=False``) a synchronous call blocks until every task
is done or erred, like a long-running command with a progress line. In a notebook it
returns at once; the returned object shows the live widget when it is the last
expression of a cell (or pass it to ``display``).

>>> import xsched
>>> from xsched import delayed
>>> parts = [delayed(sum)(range(i)) for i in range(100)]
>>> total = client.persist(delayed(sum)(parts))
>>> xsched.progress(total)
[...] 101/101 sum | ...s
<TextProgressBar finished: 101/101 done, 0 erred, 1 groups, ...s>
"""

from __future__ import annotations

import asyncio
import html
import logging
import shutil
import sys
import threading
import time
import uuid

from ..client.future import Future
from ..graph.optimize import flatten_keys
from ..protocol import ops

logger = logging.getLogger("xsched.progress")

__all__ = ["progress", "Progress", "TextProgressBar", "WidgetProgressBar", "futures_of", "in_notebook"]


def in_notebook() -> bool:
    """True inside an IPython kernel (Jupyter) with ipywidgets importable."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    ip = get_ipython()
    if ip is None or getattr(ip, "kernel", None) is None:
        return False
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    return True


def futures_of(objs) -> list[Future]:
    """The Futures in ``objs``: Futures, nested lists/tuples/sets/dicts of them, persisted collections.

    >>> futures_of([])
    []
    """
    out: list[Future] = []
    stack = [objs]
    while stack:
        obj = stack.pop()
        if isinstance(obj, Future):
            out.append(obj)
        elif isinstance(obj, (list, tuple, set, frozenset)):
            stack.extend(reversed(list(obj)) if not isinstance(obj, (set, frozenset)) else obj)
        elif isinstance(obj, dict):
            stack.extend(reversed(list(obj.values())))
        elif hasattr(type(obj), "__xsched_graph__"):
            out.extend(_persisted_futures(obj))
        else:
            raise TypeError(f"progress watches Futures and persisted collections, not {type(obj).__name__}")
    return out


def _persisted_futures(coll) -> list[Future]:
    graph = coll.__xsched_graph__()
    keys = flatten_keys(coll.__xsched_keys__())
    if not keys or not all(isinstance(graph.get(k), Future) for k in keys):
        name = getattr(coll, "key", None) or getattr(coll, "name", None) or type(coll).__name__
        raise TypeError(
            f"progress needs a persisted collection, but {name!r} has not been submitted: use "
            f"`x = client.persist(x)` (or `fut = client.compute(x)`) first and pass the result to progress")
    return [v for v in graph.values() if isinstance(v, Future)]


class Progress:
    """The progress of some keys, kept up to date by the scheduler's ``progress`` messages.

    ``groups`` maps each task group to ``[done, erred, total]``; ``done`` turns True when
    nothing is left to run; ``paused`` maps a group to its tasks paused at a breakpoint
    now. Subclasses draw it (text or widget).
    """

    def __init__(self, client, keys: list[str], complete: bool = True):
        self.client = client
        self.keys = list(keys)
        self.complete = complete
        self.sub = f"progress-{uuid.uuid4().hex[:12]}"
        self.groups: dict[str, list[int]] = {}
        self.paused: dict[str, int] = {}  # group -> its tasks paused at a breakpoint now
        self.done = False
        self.status = "created"  # running, finished, stopped, lost
        self.start_time = time.time()
        self.stop_time: float | None = None
        self._pushes = 0
        self._finished = threading.Event()
        self._aevent: asyncio.Event | None = None

    # ------------------------------------------------------------------ summary
    @property
    def elapsed(self) -> float:
        return (self.stop_time or time.time()) - self.start_time

    def totals(self) -> tuple[int, int, int]:
        """(done, erred, total) over all groups."""
        d = sum(g[0] for g in self.groups.values())
        e = sum(g[1] for g in self.groups.values())
        t = sum(g[2] for g in self.groups.values())
        return d, e, t

    def __repr__(self) -> str:
        d, e, t = self.totals()
        return (f"<{type(self).__name__} {self.status}: {d}/{t} done, {e} erred, "
                f"{len(self.groups)} groups, {self.elapsed:.1f}s>")

    # ------------------------------------------------------------------ subscription (client loop)
    async def _subscribe(self) -> "Progress":
        client = self.client
        if client.status != "running":
            raise RuntimeError(f"progress needs a running Client; this one is {client.status}")
        self._aevent = asyncio.Event()
        client._progress[self.sub] = self
        self.status = "running"
        try:
            reply, _ = await client._conn.request({"op": ops.SUBSCRIBE_PROGRESS, "keys": self.keys, "sub": self.sub,
                                                   "complete": self.complete}, timeout=client._timeout)
        except BaseException:
            client._progress.pop(self.sub, None)
            self.status = "stopped"
            self._finish()
            raise
        if self._pushes == 0:  # a push that overtook the reply is newer than it
            self._apply(reply)
        return self

    def _update(self, msg: dict) -> None:
        """A ``progress`` message from the scheduler (called by Client._handle on its loop)."""
        self._pushes += 1
        self._apply(msg)

    def _apply(self, msg: dict) -> None:
        self.groups = {str(g): [int(x) for x in c] for g, c in (msg.get("groups") or {}).items()}
        self.paused = {str(g): int(n) for g, n in (msg.get("paused") or {}).items()}  # at breakpoints
        finished = bool(msg.get("done"))
        if finished:
            self.done = True
            self.status = "finished"
            self.stop_time = time.time()
            self.client._progress.pop(self.sub, None)
        try:
            self._render()
        except Exception:  # a display problem must never break the client's message loop
            logger.exception("progress: drawing failed")
        if finished:
            self._finish()

    def _finish(self) -> None:
        self._finished.set()
        if self._aevent is not None:
            self._aevent.set()

    def _render(self) -> None:
        pass

    # ------------------------------------------------------------------ waiting
    def wait(self, timeout: float | None = None) -> bool:
        """Block until every task is done or erred; False on timeout or if the client went away."""
        deadline = None if timeout is None else time.monotonic() + timeout
        self._waiter = threading.get_ident()
        try:
            while not self._finished.wait(0.1):
                self._flush()
                if self.client.status != "running":
                    self.status = "lost"
                    self._render_safely()
                    return False
                if deadline is not None and time.monotonic() > deadline:
                    return False
            return self.done
        finally:
            self._waiter = None
            self._flush()

    #: the thread waiting in ``wait`` (it draws what arrives on the client's loop: ``TextProgressBar``)
    _waiter: int | None = None

    def _flush(self) -> None:
        """Draw, in the waiting thread, what arrived on the client's loop (``TextProgressBar``)."""

    def __await__(self):
        return self._await().__await__()

    async def _await(self) -> "Progress":
        if self.status == "created":
            await self._subscribe()
        if self.blocking:
            await self._aevent.wait()
        return self

    blocking = False

    def stop(self) -> None:
        """Stop updating (tell the scheduler to forget this subscription)."""
        if self.status != "running":
            return
        self.status = "stopped"
        self.client._progress.pop(self.sub, None)
        self._finish()
        self._render_safely()
        if self.client.status == "running":
            self.client._send({"op": ops.UNSUBSCRIBE_PROGRESS, "sub": self.sub})

    def _render_safely(self) -> None:
        try:
            self._render()
        except Exception:
            logger.exception("progress: drawing failed")


class TextProgressBar(Progress):
    """One line of text, rewritten in place: ``[####      ] 12/30 read | ... | 1.5s``."""

    blocking = True

    def __init__(self, client, keys, complete: bool = True, width: int = 10, stream=None):
        super().__init__(client, keys, complete)
        self.width = width
        self.stream = stream
        self._last = ""
        # (the thread that waits draws: a notebook shows what a thread writes under the cell
        # that started the thread, and the client's loop thread began with an earlier cell;
        # with nobody waiting, the loop draws). A synchronous client's caller waits from the start.
        self._pending = False
        self._waiter = None if client.asynchronous else threading.get_ident()

    def line(self) -> str:
        parts = []
        for group, (d, e, t) in self.groups.items():
            filled = int(self.width * (d + e) / t) if t else self.width
            bar = "#" * filled + " " * (self.width - filled)
            paused = self.paused.get(group)
            parts.append(f"[{bar}] {d}/{t} {group}" + (f", {e} erred" if e else "")
                         + (f", {paused} paused at a breakpoint" if paused else ""))
        parts.append(f"{self.elapsed:.1f}s" + ("" if self.status in ("running", "finished") else f" ({self.status})"))
        return " | ".join(parts)

    def _render(self) -> None:
        waiter = self._waiter
        if waiter is not None and threading.get_ident() != waiter:
            self._pending = True  # (drawn by the waiting thread: _flush)
            return
        self._draw()

    def _flush(self) -> None:
        if self._pending:
            self._pending = False
            self._draw()

    def _draw(self) -> None:
        stream = self.stream or sys.stdout
        text = self.line()
        if getattr(stream, "isatty", lambda: False)():
            cols = shutil.get_terminal_size((100, 20)).columns - 1
            if len(text) > cols:
                text = text[: cols - 3] + "..."
        pad = " " * max(0, len(self._last) - len(text))
        self._last = text
        end = "\n" if self.status != "running" else ""
        stream.write("\r" + text + pad + end)
        stream.flush()


class WidgetProgressBar(Progress):
    """An ipywidgets VBox: a title, then one IntProgress bar and label per task group.

    Bars turn green when their group is complete and red when a task of it erred. Groups
    may appear after the first drawing (tasks launched by a counted task through
    ``worker_client()``, or a kind the first counts did not have yet): each gets its row
    when it first appears, and a group that left the counts (its pending tasks were all
    released) loses its row, so the rows always add up to the title's total.
    """

    def __init__(self, client, keys, complete: bool = True):
        super().__init__(client, keys, complete)
        try:
            import ipywidgets as w
        except ImportError:
            raise ImportError("progress(notebook=True) draws ipywidgets: `pip install ipywidgets`, "
                              "or pass notebook=False for a text bar") from None
        self._w = w
        self.title = w.HTML("<b>xsched progress</b>: subscribing ...")
        self.rows = w.VBox([])
        self.widget = w.VBox([self.title, self.rows])
        self.bars: dict[str, tuple] = {}  # group -> (IntProgress, HTML label)
        self._rows: dict[str, object] = {}  # group -> its HBox row (kept when hidden, reused if it returns)

    def _render(self) -> None:
        w = self._w
        for group, (d, e, t) in self.groups.items():
            pair = self.bars.get(group)
            if pair is None:
                bar = w.IntProgress(value=0, min=0, max=max(t, 1), layout=w.Layout(width="50%"))
                label = w.HTML()
                self.bars[group] = pair = (bar, label)
                self._rows[group] = w.HBox([bar, label])
            bar, label = pair
            bar.max = max(t, 1)
            bar.value = min(d + e, bar.max)
            bar.bar_style = "danger" if e else ("success" if t and d == t else "")
            text = f"{html.escape(group)}: {d} / {t}" + (f", <span style='color:#c33'>{e} erred</span>" if e else "")
            paused = self.paused.get(group)
            if paused:
                text += (f", <span title='attach with client.debug(future) or %debug; see client.breakpoints()'>"
                         f"&#9208; {paused} paused at a breakpoint</span>")
            label.value = text
        shown = tuple(self._rows[g] for g in self.groups)  # in the scheduler's order of groups
        if shown != tuple(self.rows.children):  # (reassigned only when the set of groups changed)
            self.rows.children = shown
        d, e, t = self.totals()
        state = {"running": "computing", "finished": "finished", "stopped": "stopped",
                 "lost": "client lost"}.get(self.status, self.status)
        self.title.value = (f"<b>xsched progress</b>: {state}, {d} / {t} tasks"
                            + (f", <span style='color:#c33'>{e} erred</span>" if e else "")
                            + f", {self.elapsed:.1f} s")

    def _ipython_display_(self, **kwargs):
        from IPython.display import display

        display(self.widget)


def progress(*futures, notebook: bool | None = None, complete: bool = True):
    """Show the progress of futures or persisted collections, grouped by task name.

    ``notebook=None`` picks a live widget in a Jupyter kernel (with ipywidgets) and a text
    line elsewhere. The text line blocks until all tasks are done or erred (for a client
    with ``asynchronous=True``, ``await progress(...)`` instead); the widget returns at
    once and updates live. ``complete=False`` counts only what is left to compute.

    Returns the progress object; ``.groups`` is ``{group: [done, erred, total]}``.

    >>> import xsched
    >>> def inc(x):
    ...     return x + 1
    >>> futs = client.map(inc, range(100))
    >>> xsched.progress(futs)
    [...] 100/100 inc | ...s
    <TextProgressBar finished: 100/100 done, 0 erred, 1 groups, ...s>
    >>> x = client.persist(xsched.delayed(sum)(futs))
    >>> xsched.progress(x).groups                        # (the inputs count too)
    [...] 100/100 inc | [...] 1/1 sum | ...s
    {'inc': [100, 0, 100], 'sum': [1, 0, 1]}
    """
    futs = futures_of(list(futures))
    if not futs:
        raise ValueError("progress needs Futures or persisted collections to watch, e.g. "
                         "progress(client.map(f, xs)) or progress(client.persist(x))")
    client = futs[0].client
    if client is None:
        raise ValueError(f"future {futs[0].key!r} was released; progress needs live futures")
    if any(f.client is not client for f in futs):
        raise ValueError("progress watches the futures of one Client at a time; call it once per client")
    keys = list(dict.fromkeys(f.key for f in futs))
    if notebook is None:
        notebook = in_notebook()
    bar = WidgetProgressBar(client, keys, complete) if notebook else TextProgressBar(client, keys, complete)
    if client.asynchronous:
        return bar  # await it: subscribes (and, as text, waits until done)
    client._sync(bar._subscribe())
    if not notebook:
        try:
            bar.wait()
        except KeyboardInterrupt:
            bar.stop()
            raise
    return bar
