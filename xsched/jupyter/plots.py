"""Matplotlib figures of a running cluster: memory over time, and the task stream.

Both return a ``matplotlib.figure.Figure`` built without pyplot's global state, so
they work in a notebook (a Figure displays itself), in scripts (``fig.savefig(...)``)
and on headless machines (no display backend is needed).

Where the numbers come from::

    plot_memory:  client --memory-history--> scheduler: the (time, rss, managed, spilled)
                  samples every worker sent with its heartbeats (the last hour at 1 s)
    task_stream:  client.run(_task_log) -> each worker's task_log: (key, start, stop, status)

>>> fig = client.plot_memory()
>>> fig = client.task_stream(start="30s")
>>> fig.savefig("tasks.png")
"""

from __future__ import annotations

import datetime
import time
import zlib
from collections import defaultdict

from ..protocol import ops
from .. import hooks
from ..tokenize import key_split
from ..units import parse_timedelta
from .display import worker_order

__all__ = ["plot_memory", "task_stream", "memory_figure", "task_stream_figure"]

_UNITS = [("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10), ("B", 1)]


def _show_figures_in_ipython() -> None:
    """Let IPython render a bare Figure as PNG (pyplot's inline backend does this only once
    pyplot is imported; we never import pyplot)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    ip = get_ipython()
    if ip is None:
        return
    from matplotlib.figure import Figure

    fmt = ip.display_formatter.formatters["image/png"]
    try:
        fmt.lookup_by_type(Figure)
    except KeyError:
        from IPython.core.pylabtools import print_figure

        fmt.for_type(Figure, lambda fig: print_figure(fig, "png", bbox_inches="tight"))


def _unit(largest: float) -> tuple[str, float]:
    for name, size in _UNITS:
        if largest >= size:
            return name, size
    return "B", 1


# ----------------------------------------------------------------------------- memory
@hooks.plot_memory.register
def plot_memory(client, figsize=(9, 6)):
    """Process memory (RSS) and managed memory per worker over time, as a Figure.

    Two panels sharing the time axis: RSS with each distinct worker memory limit as a
    dashed red line; managed data (``sizeof``), with spilled bytes dotted when any.

    >>> fig = plot_memory(client)
    >>> len(fig.axes)                # RSS, managed
    2
    """
    if client.asynchronous:
        return _plot_memory_async(client, figsize)
    history, limits = client._sync(_memory_data(client))
    return memory_figure(history, limits, figsize)


async def _plot_memory_async(client, figsize):
    history, limits = await _memory_data(client)
    return memory_figure(history, limits, figsize)


async def _memory_data(client):
    reply, _ = await client._conn.request({"op": ops.MEMORY_HISTORY}, timeout=client._timeout)
    info = await client._scheduler_info()
    limits = {a: w.get("memory_limit") or 0 for a, w in info["workers"].items()}
    return reply["history"], limits


def memory_figure(history: dict, limits: dict | None = None, figsize=(9, 6)):
    """The memory Figure from ``{addr: {"name": ..., "samples": [[t, rss, managed, spilled], ...]}}``.

    Worker lines carry ``gid=addr`` (one line per worker in each panel).

    >>> fig = memory_figure({"tcp://w": {"name": "0", "samples": [[0, 2**20, 0, 0], [1, 2**21, 2**20, 0]]}})
    >>> [len(ax.lines) for ax in fig.axes]
    [1, 1]
    """
    from matplotlib.figure import Figure

    _show_figures_in_ipython()
    limits = limits or {}
    fig = Figure(figsize=figsize, layout="constrained")
    ax_rss, ax_managed = fig.subplots(2, 1, sharex=True)
    samples = {a: h.get("samples") or [] for a, h in history.items()}
    if not any(samples.values()):
        ax_rss.text(0.5, 0.5, "no memory samples yet: workers send them with every heartbeat",
                    ha="center", va="center", transform=ax_rss.transAxes)
    t0 = min((s[0][0] for s in samples.values() if s), default=0.0)
    largest = max([max((x[1] for x in s), default=0) for s in samples.values()]
                  + [v for v in limits.values() if v] + [1])
    unit, size = _unit(largest)
    for addr in sorted(history, key=lambda a: worker_order(history[a].get("name"), a)):
        s = samples[addr]
        name = str(history[addr].get("name", addr))
        t = [x[0] - t0 for x in s]
        (line,) = ax_rss.plot(t, [x[1] / size for x in s], label=name, gid=addr)
        ax_managed.plot(t, [x[2] / size for x in s], label=name, gid=addr, color=line.get_color())
        if any(x[3] for x in s if len(x) > 3):
            ax_managed.plot(t, [x[3] / size for x in s], linestyle=":", color=line.get_color(),
                            label=f"{name} spilled", gid=f"{addr} spilled")
    for limit in sorted({v for v in limits.values() if v}):
        ax_rss.axhline(limit / size, color="#d62728", linestyle="--", linewidth=1,
                       label=f"limit {limit / size:.3g} {unit}")
    ax_rss.set_title("process memory (RSS) per worker")
    ax_rss.set_ylabel(unit)
    ax_managed.set_title("managed memory (sizeof of stored results) per worker")
    ax_managed.set_ylabel(unit)
    ax_managed.set_xlabel("seconds")
    for ax in (ax_rss, ax_managed):
        ax.set_ylim(bottom=0)
        if ax.lines:
            ax.legend(loc="upper left", fontsize="small")
    return fig


# ----------------------------------------------------------------------------- task stream
def _task_log(worker, start=None, count: int = 10_000) -> list:
    """Run on each worker by task_stream: its recent (key, start, stop, status) entries."""
    log = list(worker.task_log[-count:])
    if start is not None:
        log = [e for e in log if e[2] >= start]
    return [list(e) for e in log]


def _start_time(start) -> float | None:
    if start is None:
        return None
    if isinstance(start, datetime.datetime):
        return start.timestamp()
    if isinstance(start, datetime.timedelta):
        return time.time() - start.total_seconds()
    if isinstance(start, str):
        return time.time() - parse_timedelta(start)
    if isinstance(start, (int, float)):
        return float(start)
    raise TypeError(f"task_stream start= takes seconds since the epoch, a datetime, a timedelta or a "
                    f"duration like '30s', not {type(start).__name__}")


@hooks.task_stream.register
def task_stream(client, start=None, count: int = 10_000, figsize=(10, 4)):
    """A Gantt chart Figure: one row per worker, one bar per task, coloured by task group.

    ``start``: only tasks that ended after it (seconds since the epoch, a datetime, or a
    duration such as "30s" meaning the last 30 seconds). ``count``: at most this many of
    each worker's most recent tasks. Failed tasks have a red hatched edge.

    >>> client.gather(client.map(abs, range(-4, 0)))
    [4, 3, 2, 1]
    >>> fig = task_stream(client, start="1 minute")
    >>> [t.get_text() for t in fig.axes[0].get_yticklabels()]    # the workers' names
    ['0', '1']
    """
    since = _start_time(start)
    if client.asynchronous:
        return _task_stream_async(client, since, count, figsize)
    logs = client.run(_task_log, start=since, count=count)
    names = {a: w.get("name", a) for a, w in client.scheduler_info()["workers"].items()}
    return task_stream_figure(logs, names, figsize)


async def _task_stream_async(client, since, count, figsize):
    logs = await client._run(_task_log, (), {"start": since, "count": count})
    info = await client._scheduler_info()
    return task_stream_figure(logs, {a: w.get("name", a) for a, w in info["workers"].items()}, figsize)


def group_colour(group: str) -> tuple:
    """A stable colour for a task group (the same group gets the same colour in every figure)."""
    import matplotlib

    return matplotlib.colormaps["tab20"](zlib.crc32(group.encode()) % 20)


def task_stream_figure(logs: dict, names: dict | None = None, figsize=(10, 4)):
    """The Gantt Figure from ``{worker address: [(key, start, stop, status), ...]}``.

    Rows are the workers (y tick labels are their names), in name order.

    >>> fig = task_stream_figure({"tcp://a": [("inc-1", 0.0, 1.0, "memory")], "tcp://b": []})
    >>> [t.get_text() for t in fig.axes[0].get_yticklabels()]
    ['tcp://a', 'tcp://b']
    """
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    _show_figures_in_ipython()
    names = names or {}
    rows = sorted(set(logs) | set(names), key=lambda a: worker_order(names.get(a), a))
    fig = Figure(figsize=figsize, layout="constrained")
    ax = fig.add_subplot()
    t0 = min((e[1] for log in logs.values() for e in log), default=0.0)
    groups: dict[str, tuple] = {}
    for i, addr in enumerate(rows):
        spans: dict[tuple, list] = defaultdict(list)
        for key, start, stop, status in logs.get(addr, ()):
            g = key_split(key)
            spans[(g, status == "error")].append((start - t0, max(stop - start, 1e-4)))
        for (g, failed), xs in sorted(spans.items()):
            colour = groups.setdefault(g, group_colour(g))
            ax.broken_barh(xs, (i - 0.4, 0.8), facecolors=colour, gid=addr,
                           edgecolors="#d62728" if failed else "none", linewidth=1.5 if failed else 0,
                           hatch="//" if failed else None)
    ax.set_yticks(range(len(rows)), labels=[str(names.get(a, a)) for a in rows])
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.invert_yaxis()
    ax.set_xlabel("seconds")
    ax.set_ylabel("worker")
    ax.set_title("task stream")
    if not groups:
        ax.text(0.5, 0.5, "no tasks ran in this period", ha="center", va="center", transform=ax.transAxes)
    elif len(groups) <= 20:
        ax.legend(handles=[Patch(color=c, label=g) for g, c in groups.items()], loc="upper left",
                  bbox_to_anchor=(1.01, 1), fontsize="small", title="task group")
    return fig

