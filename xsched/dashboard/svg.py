"""Figures of what a cluster did, as inline SVG strings: pure functions, data in, text out.

No cluster, no browser and no plotting library is needed to draw them or to test them. They
are meant to sit inside an HTML page (``report.py``): no ``xmlns``, no scripts, no external
references, and colours of text and axes taken from the page's CSS (``STYLE``, which follows
``prefers-color-scheme``), with readable fallbacks when the page sets none. Every string that
comes from users (task keys, group names, worker addresses) is escaped with ``html.escape``.

Each figure carries its counts as ``data-`` attributes, so a test (or a reader of the page)
can check what was drawn without parsing shapes::

    task_stream_svg   <svg id="xsched-report-task-stream" data-task-count (bars drawn)
                          data-run-count (runs given) data-worker-count data-group-count>
    memory_svg        <svg id="xsched-report-memory" data-worker-count data-sample-count>
    group_time_svg    <svg id="xsched-report-groups" data-group-count data-bar-count>
    group_bytes_svg   <svg id="xsched-report-group-bytes" data-group-count data-bar-count>
    activity_svg      <svg id="xsched-report-transfers" data-task-count (bars drawn) data-run-count
                          data-worker-count data-group-count (kinds)
    profile_svg       <svg id="xsched-profile" data-sample-count data-node-count (rows given)
                          data-box-count (boxes drawn) data-prefix-count>

>>> runs = [{"key": "inc-1", "group": "inc", "worker": "tcp://w:2", "start": 0.0, "stop": 0.5, "status": "memory"}]
>>> 'data-task-count="1"' in task_stream_svg(runs)
True
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Iterable, Mapping

from ..keys import key_split
from ..units import format_bytes, format_time

__all__ = ["MAX_BARS", "STYLE", "PALETTE", "natural_key", "group_colours", "group_stats", "task_stream_svg",
           "activity_svg", "memory_svg", "group_time_svg", "group_bytes_svg", "profile_svg"]

#: the task stream draws at most this many bars (the page says so when more ran)
MAX_BARS = 20_000

#: group colours: mid tones, readable on a light and a dark background; no red (red marks failures)
PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#b279a2", "#72b7b2", "#eeca3b", "#9d755d", "#ff9da6",
           "#8c8c8c", "#2e9fdf", "#b5bd3c", "#7f64c8", "#3fae8a", "#d9843b", "#c46fb5", "#6b8fd6")
ERRED = "#d62728"

#: the CSS the figures' classes need; the page includes it (report.py) in its <style>
STYLE = """
svg.xsched-figure { width: 100%; height: auto; font: 11px system-ui, -apple-system, "Segoe UI", sans-serif; }
svg.xsched-figure text { fill: var(--xs-fg, #222); }
svg.xsched-figure text.muted { fill: var(--xs-muted, #666); }
svg.xsched-figure .axis { stroke: var(--xs-axis, #888); stroke-width: 1; }
svg.xsched-figure .grid { stroke: var(--xs-grid, #ddd); stroke-width: 1; }
svg.xsched-figure .row { fill: var(--xs-row, #f4f4f4); }
svg.xsched-figure rect.erred { stroke: #d62728; stroke-width: 1.5; }
svg.xsched-figure .limit { stroke: #d62728; stroke-width: 1.2; stroke-dasharray: 6 4; fill: none; }
svg.xsched-figure polyline { fill: none; stroke-width: 1.6; }
svg.xsched-figure polyline.managed { stroke-dasharray: 5 3; }
"""

_CHAR = 6.4  # px per character of 11px text, to lay out labels without a browser
_ROW = 18


def _e(s) -> str:
    return html.escape(str(s), quote=True)


def _n(x: float) -> str:
    """A coordinate, short: one decimal, no trailing zero."""
    text = f"{x:.1f}"
    return text[:-2] if text.endswith(".0") else text


def natural_key(text: str) -> tuple:
    """Sort key that orders the numbers inside a string by value: ``"w10"`` after ``"w2"``.

    >>> sorted(["tcp://h:10", "tcp://h:2", "tcp://h:1"], key=natural_key)
    ['tcp://h:1', 'tcp://h:2', 'tcp://h:10']
    """
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part)
                 for part in re.split(r"(\d+)", str(text)) if part)


def group_colours(groups: Iterable[str]) -> dict[str, str]:
    """A colour per task group, the same in every figure of a page: groups in name order
    take the palette's colours in turn (they repeat after ``len(PALETTE)`` groups).

    >>> group_colours(["sum", "inc", "inc"])
    {'inc': '#4c78a8', 'sum': '#f58518'}
    """
    return {g: PALETTE[i % len(PALETTE)] for i, g in enumerate(sorted(set(map(str, groups)), key=natural_key))}


def _complete(colours: Mapping[str, str] | None, groups: list[str]) -> dict[str, str]:
    """``colours`` with a palette colour for each group it lacks (all of them when None)."""
    if not colours:
        return group_colours(groups)
    out = dict(colours)
    for i, g in enumerate(g for g in groups if g not in out):
        out[g] = PALETTE[(len(colours) + i) % len(PALETTE)]
    return out


def _group(run: Mapping) -> str:
    g = run.get("group")
    return str(g) if g else key_split(str(run.get("key", "")))


def _seconds(run: Mapping) -> float:
    return max(float(run["stop"]) - float(run["start"]), 0.0)


def group_stats(runs: Iterable[Mapping]) -> list[dict]:
    """Per task group: ``group``, ``count``, ``erred``, ``seconds`` (total run time), ``mean``
    and ``nbytes`` (of the results kept), the groups that took longest first.

    >>> runs = [{"key": "a-1", "start": 0, "stop": 2, "status": "memory", "nbytes": 8},
    ...         {"key": "a-2", "start": 0, "stop": 1, "status": "error", "nbytes": None},
    ...         {"key": "b-1", "start": 0, "stop": 0.5, "status": "memory", "nbytes": 16}]
    >>> [(s["group"], s["count"], s["erred"], s["seconds"], s["mean"], s["nbytes"]) for s in group_stats(runs)]
    [('a', 2, 1, 3.0, 1.5, 8), ('b', 1, 0, 0.5, 0.5, 16)]
    """
    table: dict[str, dict] = {}
    for run in runs:
        g = _group(run)
        s = table.setdefault(g, {"group": g, "count": 0, "erred": 0, "seconds": 0.0, "nbytes": 0})
        s["count"] += 1
        s["seconds"] += _seconds(run)
        if run.get("status") == "error":
            s["erred"] += 1
        else:
            s["nbytes"] += int(run.get("nbytes") or 0)
    out = sorted(table.values(), key=lambda s: (-s["seconds"], natural_key(s["group"])))
    for s in out:
        s["mean"] = s["seconds"] / s["count"]
    return out


def _ticks(lo: float, hi: float, n: int = 6) -> list[float]:
    """About ``n`` round values between lo and hi (both included when round)."""
    if not hi > lo:
        return [lo]
    raw = (hi - lo) / max(n, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    count = int(math.floor((hi - first) / step + 1e-9)) + 1
    return [round(first + i * step, 10) for i in range(count)]


def _tick_label(v: float) -> str:
    return f"{v:g}"


def _svg_open(fig_id: str, width: float, height: float, label: str, **data) -> str:
    attrs = "".join(f' data-{k.replace("_", "-")}="{_e(v)}"' for k, v in data.items())
    return (f'<svg id="{_e(fig_id)}" class="xsched-figure" viewBox="0 0 {_n(width)} {_n(height)}" '
            f'width="{_n(width)}" height="{_n(height)}" role="img" aria-label="{_e(label)}"{attrs}>'
            f"<title>{_e(label)}</title>")


def _message(width: float, y: float, text: str) -> str:
    return f'<text class="muted" x="{_n(width / 2)}" y="{_n(y)}" text-anchor="middle">{_e(text)}</text>'


def _time_axis(left: float, right: float, y: float, lo: float, hi: float, top: float, label: str) -> str:
    span = hi - lo
    parts = [f'<line class="axis" x1="{_n(left)}" y1="{_n(y)}" x2="{_n(right)}" y2="{_n(y)}"/>']
    for t in _ticks(lo, hi):
        x = left + (t - lo) / span * (right - left)
        parts.append(f'<line class="grid" x1="{_n(x)}" y1="{_n(top)}" x2="{_n(x)}" y2="{_n(y)}"/>'
                     f'<text x="{_n(x)}" y="{_n(y + 14)}" text-anchor="middle">{_tick_label(t)}</text>')
    parts.append(f'<text class="muted" x="{_n(right)}" y="{_n(y + 27)}" text-anchor="end">{_e(label)}</text>')
    return "".join(parts)


def _legend(items: list[tuple[str, str, str]], left: float, width: float, y: float,
            limit: int = 40) -> tuple[str, float]:
    """Swatches with labels flowing left to right and wrapping: ``[(label, colour, extra class)]``.
    Returns (svg, the y below it)."""
    parts, x = [], left
    shown = items[:limit]
    for label, colour, cls in shown:
        text = label if len(label) <= 40 else label[:39] + "…"
        w = 16 + len(text) * _CHAR + 14
        if x + w > width and x > left:
            x, y = left, y + 16
        klass = f' class="{cls}"' if cls else ""
        parts.append(f'<rect{klass} x="{_n(x)}" y="{_n(y - 9)}" width="11" height="11" fill="{colour}">'
                     f"<title>{_e(label)}</title></rect>"
                     f'<text x="{_n(x + 15)}" y="{_n(y)}">{_e(text)}</text>')
        x += w
    if len(items) > limit:
        more = f"and {len(items) - limit} more"
        if x + len(more) * _CHAR > width and x > left:
            x, y = left, y + 16
        parts.append(f'<text class="muted" x="{_n(x)}" y="{_n(y)}">{_e(more)}</text>')
    return "".join(parts), y + 12


# ----------------------------------------------------------------------------- the task stream
def task_stream_svg(runs: Iterable[Mapping], workers: Iterable[str] = (), *, start: float | None = None,
                    stop: float | None = None, colours: Mapping[str, str] | None = None, limit: int = MAX_BARS,
                    width: int = 960, names: Mapping[str, str] | None = None, fig_id: str = "xsched-report-task-stream",
                    label: str = "task stream: a row per worker, a bar per task run", what: str = "task runs",
                    empty: str = "no tasks ran in this period", show_bytes: bool = False) -> str:
    """The task stream: a row per worker, a bar per task run from its start to its stop,
    coloured by task group (legend below), failed runs outlined in red.

    ``runs``: dicts with ``key``, ``worker``, ``start``, ``stop`` (seconds), ``status``
    (``error`` marks a failure) and optionally ``group`` (else taken from the key), as
    ``client.get_task_stream()`` returns them. ``workers``: rows to show even with no run.
    ``start``/``stop``: the time axis (by default the runs' own span); times are shown
    in seconds from ``start``. Rows are in natural order of the addresses (``:10`` after
    ``:2``), labelled by ``names`` where given. At most ``limit`` bars are drawn: the
    failed runs, then the longest; ``data-task-count`` says how many were,
    ``data-run-count`` how many were given. Each bar's ``<title>`` (its hover text) holds
    the key, group, worker and duration. ``fig_id``, ``label``, ``what`` and ``empty`` name
    the figure, what its bars are and what it says without any; ``show_bytes`` adds each
    bar's ``nbytes`` to its hover text (``activity_svg`` draws the workers' transfers and disk
    I/O with it).

    >>> runs = [{"key": f"inc-{i}", "worker": f"tcp://h:{p}", "start": i, "stop": i + 1, "status": "memory"}
    ...         for i, p in enumerate([10, 2, 2])]
    >>> svg = task_stream_svg(runs, limit=2)
    >>> 'data-task-count="2"' in svg, 'data-run-count="3"' in svg, 'data-worker-count="2"' in svg
    (True, True, True)
    >>> svg.index(">tcp://h:2<") < svg.index(">tcp://h:10<")
    True
    >>> "no tasks ran" in task_stream_svg([])
    True
    """
    runs = [r for r in runs if r.get("start") is not None and r.get("stop") is not None]
    names = dict(names or {})
    rows = sorted({str(w) for w in workers} | {str(r.get("worker")) for r in runs}, key=natural_key)
    groups = sorted({_group(r) for r in runs}, key=natural_key)
    colours = _complete(colours, groups)
    limit = max(int(limit), 0)
    chosen = sorted(runs, key=lambda r: (r.get("status") != "error", -_seconds(r), float(r["start"])))[:limit]
    chosen.sort(key=lambda r: (float(r["start"]), str(r.get("key"))))

    lo = float(start) if start is not None else min((float(r["start"]) for r in runs), default=0.0)
    hi = float(stop) if stop is not None else max((float(r["stop"]) for r in runs), default=lo)
    lo = min([lo] + [float(r["start"]) for r in chosen])  # (a worker's clock may be a little off)
    hi = max([hi, lo + 1e-3] + [float(r["stop"]) for r in chosen])
    labels = {w: str(names.get(w, w)) for w in rows}
    left = min(max((len(t) for t in labels.values()), default=6) * _CHAR + 14, 280)
    right = width - 12
    row_h = _ROW if len(rows) <= 40 else max(3.0, 720 / len(rows))
    top = 6
    plot_h = max(len(rows), 1) * row_h
    axis_y = top + plot_h + 4
    parts: list[str] = []
    for i, w in enumerate(rows):
        y = top + i * row_h
        if i % 2 == 0:
            parts.append(f'<rect class="row" x="{_n(left)}" y="{_n(y)}" width="{_n(right - left)}" '
                         f'height="{_n(row_h)}"/>')
        if row_h >= 10:
            text = labels[w] if len(labels[w]) * _CHAR + 14 <= left else labels[w][: int((left - 14) / _CHAR) - 1] + "…"
            parts.append(f'<text x="{_n(left - 6)}" y="{_n(y + row_h / 2 + 4)}" text-anchor="end">'
                         f"<title>{_e(w)}</title>{_e(text)}</text>")
    parts.append(_time_axis(left, right, axis_y, 0.0, hi - lo, top, "seconds from the start"))
    index = {w: i for i, w in enumerate(rows)}
    scale = (right - left) / (hi - lo)
    pad = 1 if row_h >= 6 else 0
    for r in chosen:
        g = _group(r)
        x = left + (float(r["start"]) - lo) * scale
        w = max(_seconds(r) * scale, 0.6)
        y = top + index[str(r.get("worker"))] * row_h + pad
        erred = r.get("status") == "error"
        hover = (f"{r.get('key')}\ngroup: {g}\nworker: {r.get('worker')}\n"
                 f"duration: {format_time(_seconds(r))}{chr(10) + 'erred' if erred else ''}")
        if show_bytes and r.get("nbytes") is not None:
            hover += f"\nbytes: {format_bytes(int(r['nbytes']))}"
        cls = ' class="erred"' if erred else ""
        parts.append(f'<rect{cls} x="{_n(x)}" y="{_n(y)}" width="{_n(w)}" height="{_n(row_h - 2 * pad)}" '
                     f'fill="{colours[g]}"><title>{_e(hover)}</title></rect>')
    y = axis_y + 30
    if not runs:
        parts.append(_message(width, top + plot_h / 2 + 4, empty))
    erred_any = any(r.get("status") == "error" for r in runs)
    if len(chosen) < len(runs):
        order = "the failed ones, then the longest" if erred_any else "the longest"
        parts.append(f'<text class="muted" x="{_n(left)}" y="{_n(y + 6)}">{len(chosen):,} of {len(runs):,} '
                     f"{_e(what)} drawn: {order}</text>")
        y += 18
    items = [(g, colours[g], "") for g in groups]
    if erred_any:
        items.append(("erred (red outline)", "none", "erred"))
    legend, y = _legend(items, left, width - 8, y + 12) if items else ("", y)
    parts.append(legend)
    height = y + 6
    head = _svg_open(fig_id, width, height, label, task_count=len(chosen), run_count=len(runs),
                     worker_count=len(rows), group_count=len(groups))
    return head + "".join(parts) + "</svg>"


#: the colours of the workers' activity: transfers in red (as in the live task stream's), disk I/O in orange
ACTIVITY_COLOURS = {"transfer": "#d62728", "disk-write": "#f58518", "disk-read": "#eeca3b"}


def activity_svg(records: Iterable[Mapping], workers: Iterable[str] = (), *, start: float | None = None,
                 stop: float | None = None, width: int = 960, limit: int = MAX_BARS) -> str:
    """The workers' transfers and spill I/O: a row per worker, a bar per transfer (on the
    worker that fetched, hover for the peer and bytes), spill write or read back, from the
    records the scheduler keeps beside the task runs (``group``: ``transfer``,
    ``disk-write`` or ``disk-read``). ``data-task-count`` counts the bars drawn.

    >>> recs = [{"key": "transfer from tcp://h:2", "worker": "tcp://h:1", "start": 0, "stop": 0.1,
    ...          "status": "transfer", "nbytes": 8, "group": "transfer"}]
    >>> svg = activity_svg(recs)
    >>> 'id="xsched-report-transfers"' in svg, 'data-task-count="1"' in svg, "#d62728" in svg
    (True, True, True)
    """
    return task_stream_svg(records, workers, start=start, stop=stop, colours=ACTIVITY_COLOURS, limit=limit,
                           width=width, fig_id="xsched-report-transfers", show_bytes=True,
                           label="transfers and disk: a row per worker, a bar per transfer, spill or read back",
                           what="transfers and disk reads and writes",
                           empty="no transfers between workers and nothing spilled in this period")


# ----------------------------------------------------------------------------- memory
def memory_svg(history: Mapping[str, Mapping], limits: Mapping[str, float] | None = None, *,
               start: float | None = None, stop: float | None = None, width: int = 960,
               max_points: int = 1000) -> str:
    """Memory over time per worker: process memory (RSS, solid) and managed memory
    (``sizeof`` of the results it holds, dashed) in one colour per worker, and the memory
    limit as a red dashed line (named in the legend when it is far above the lines).

    ``history``: ``{address: {"name": ..., "samples": [[time, rss, managed, spilled], ...]}}``
    as the scheduler's memory history holds it; ``limits``: ``{address: bytes}``. Times are
    shown in seconds from ``start`` (by default the first sample); the axis reaches at
    least to ``stop``. Every sample given is drawn (pass those of the period to show),
    at most ``max_points`` points per line.

    >>> h = {"tcp://h:1": {"name": "0", "samples": [[0, 2**20, 0, 0], [1, 2**21, 2**20, 0]]}}
    >>> svg = memory_svg(h, {"tcp://h:1": 2**22})
    >>> 'data-worker-count="1"' in svg, 'class="limit"' in svg, svg.count("<polyline")
    (True, True, 2)
    >>> "no memory samples" in memory_svg({})
    True
    """
    limits = {a: float(v) for a, v in (limits or {}).items() if v}
    series: dict[str, list] = {}
    for addr, h in history.items():
        samples = [s for s in (h.get("samples") or []) if len(s) >= 3]
        series[str(addr)] = sorted(samples, key=lambda s: s[0])
    rows = sorted(series, key=natural_key)
    n_samples = sum(len(s) for s in series.values())
    left, right, top = 64, width - 12, 10
    plot_h = 220
    axis_y = top + plot_h
    parts: list[str] = []
    times = [s[0] for ss in series.values() for s in ss]
    t0 = float(start) if start is not None else min(times, default=0.0)
    lo = min([t0] + times) - t0
    hi = max([lo + 1.0, (float(stop) - t0) if stop is not None else lo] + [t - t0 for t in times])
    peak = max([max(float(s[1]), float(s[2])) for ss in series.values() for s in ss] + [1.0])
    shown_limits = sorted({v for a, v in limits.items() if a in series or not series})
    drawn_limits = [v for v in shown_limits if v <= peak * 3]
    top_value = max([peak] + drawn_limits) * 1.08
    unit, size = next(((u, s) for u, s in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)) if top_value >= s),
                      ("B", 1))
    for v in _ticks(0, top_value / size, 5):
        y = axis_y - v * size / top_value * plot_h
        parts.append(f'<line class="grid" x1="{left}" y1="{_n(y)}" x2="{right}" y2="{_n(y)}"/>'
                     f'<text x="{left - 6}" y="{_n(y + 4)}" text-anchor="end">{_tick_label(v)}</text>')
    parts.append(f'<text class="muted" x="{left - 6}" y="{top - 1}" text-anchor="end">{unit}</text>')
    parts.append(_time_axis(left, right, axis_y, lo, hi, top, "seconds from the start"))

    def xy(s, i):
        x = left + (float(s[0]) - t0 - lo) / (hi - lo) * (right - left)
        return f"{_n(x)},{_n(axis_y - float(s[i]) / top_value * plot_h)}"

    items = []
    for n, addr in enumerate(rows):
        samples = series[addr]
        colour = PALETTE[n % len(PALETTE)]
        name = str(history[addr].get("name", addr)) if isinstance(history.get(addr), Mapping) else addr
        label = addr if name in ("", addr) else f"{name} ({addr})"
        items.append((label, colour, ""))
        if not samples:
            continue
        step = max(1, math.ceil(len(samples) / max_points))
        pick = samples[::step] + ([samples[-1]] if (len(samples) - 1) % step else [])
        for i, cls, what in ((1, "rss", "process memory (RSS)"), (2, "managed", "managed memory")):
            hover = f"<title>{_e(label)}: {what}, peak {_e(format_bytes(max(float(s[i]) for s in samples)))}</title>"
            parts.append(f'<polyline class="{cls}" data-worker="{_e(addr)}" stroke="{colour}" '
                         f'points="{" ".join(xy(s, i) for s in pick)}">{hover}</polyline>')
            if len(pick) == 1:  # a line of one point shows nothing: a dot (hollow for managed memory)
                x, y = xy(pick[0], i).split(",")
                fill = colour if i == 1 else "none"
                parts.append(f'<circle cx="{x}" cy="{y}" r="3" fill="{fill}" stroke="{colour}">{hover}</circle>')
    for v in drawn_limits:
        y = axis_y - v / top_value * plot_h
        parts.append(f'<line class="limit" x1="{left}" y1="{_n(y)}" x2="{right}" y2="{_n(y)}">'
                     f"<title>memory limit {_e(format_bytes(v))}</title></line>")
    if not n_samples:
        parts.append(_message(width, top + plot_h / 2, "no memory samples in this period: workers send them "
                                                          "with their heartbeats"))
    y = axis_y + 44
    key = "solid: process memory (RSS); dashed: managed memory (results held)"
    if shown_limits:
        key += "; red dashed: memory limit " + ", ".join(
            format_bytes(v) + ("" if v in drawn_limits else " (above the scale)") for v in shown_limits)
    parts.append(f'<text class="muted" x="{left}" y="{_n(y)}">{_e(key)}</text>')
    legend, y = _legend(items, left, width - 8, y + 18) if items else ("", y)
    parts.append(legend)
    head = _svg_open("xsched-report-memory", width, y + 6, "memory over time per worker",
                     worker_count=len(rows), sample_count=n_samples)
    return head + "".join(parts) + "</svg>"


# ----------------------------------------------------------------------------- per task group
def _hbar_svg(fig_id: str, label: str, stats: list[dict], value, text, colours: Mapping[str, str] | None,
              width: int, limit: int) -> str:
    stats = sorted(stats, key=lambda s: (-value(s), natural_key(s["group"])))
    colours = _complete(colours, [s["group"] for s in stats])
    shown = stats[:limit]
    left = min(max((len(s["group"]) for s in shown), default=6) * _CHAR + 14, 260)
    right = width - 250
    top = 6
    biggest = max([value(s) for s in shown] + [0.0]) or 1.0
    parts = []
    for i, s in enumerate(shown):
        y = top + i * _ROW
        g = s["group"]
        w = value(s) / biggest * (right - left)
        name = g if len(g) * _CHAR + 14 <= left else g[: int((left - 14) / _CHAR) - 1] + "…"
        parts.append(f'<text x="{_n(left - 6)}" y="{_n(y + 13)}" text-anchor="end"><title>{_e(g)}</title>'
                     f"{_e(name)}</text>"
                     f'<rect x="{left}" y="{_n(y + 2)}" width="{_n(max(w, 0.6))}" height="{_ROW - 4}" '
                     f'fill="{colours.get(g, PALETTE[0])}"><title>{_e(g)}: {_e(text(s))}</title></rect>'
                     f'<text x="{_n(left + w + 6)}" y="{_n(y + 13)}">{_e(text(s))}</text>')
    y = top + max(len(shown), 1) * _ROW
    if not stats:
        parts.append(_message(width, top + 13, "no tasks ran in this period"))
    if len(shown) < len(stats):
        parts.append(f'<text class="muted" x="{left}" y="{_n(y + 12)}">and {len(stats) - len(shown):,} more '
                     f"groups</text>")
        y += 16
    head = _svg_open(fig_id, width, y + 6, label, group_count=len(stats), bar_count=len(shown))
    return head + "".join(parts) + "</svg>"


def _time_text(s: dict) -> str:
    erred = f", {s['erred']:,} erred" if s["erred"] else ""
    tasks = "task" if s["count"] == 1 else "tasks"
    return f"{format_time(s['seconds'])}: {s['count']:,} {tasks}{erred}, mean {format_time(s['mean'])}"


def group_time_svg(runs: Iterable[Mapping], colours: Mapping[str, str] | None = None, *, width: int = 960,
                   limit: int = 50) -> str:
    """Time per task group: a horizontal bar per group, the longest total on top, each
    labelled with its total seconds, task count (and failures) and mean run time.

    ``runs`` as for ``task_stream_svg``; at most ``limit`` groups are drawn
    (``data-group-count`` counts them all, ``data-bar-count`` those drawn).

    >>> runs = [{"key": k, "start": 0, "stop": t, "status": "memory"} for k, t in
    ...         [("load-1", 1), ("load-2", 1), ("sum-1", 5)]]
    >>> svg = group_time_svg(runs)
    >>> 'data-group-count="2"' in svg, svg.index(">sum<") < svg.index(">load<")
    (True, True)
    """
    return _hbar_svg("xsched-report-groups", "time per task group", group_stats(runs), lambda s: s["seconds"],
                     _time_text, colours, width, limit)


def group_bytes_svg(runs: Iterable[Mapping], colours: Mapping[str, str] | None = None, *, width: int = 960,
                    limit: int = 50) -> str:
    """Bytes of results per task group (``nbytes`` of the runs that kept a result), the
    largest on top.

    >>> runs = [{"key": "load-1", "start": 0, "stop": 1, "status": "memory", "nbytes": 2048},
    ...         {"key": "sum-1", "start": 0, "stop": 1, "status": "memory", "nbytes": 8}]
    >>> svg = group_bytes_svg(runs)
    >>> "2.00 KiB" in svg, svg.index(">load<") < svg.index(">sum<")
    (True, True)
    """
    return _hbar_svg("xsched-report-group-bytes", "bytes of results per task group", group_stats(runs),
                     lambda s: s["nbytes"], lambda s: f"{format_bytes(s['nbytes'])} from {s['count']:,} "
                     f"{'task' if s['count'] == 1 else 'tasks'}", colours, width, limit)


# ----------------------------------------------------------------------------- the profile
def profile_svg(rows: Iterable, *, width: int = 960, min_width: float = 0.5) -> str:
    """The profile's call tree as an icicle (a flame graph drawn from the top): a row per
    depth, the task prefixes first, then the functions they called; a box's width is the
    share of samples that passed through it, its colour its prefix's (as in the task
    stream), its tooltip the function, file, samples and those that ended in it.

    ``rows``: ``StackTree.rows()`` (``[depth, function, file, count, own]`` in preorder, as
    ``client.profile()["tree"]`` gives them). Boxes narrower than ``min_width`` pixels are
    not drawn (``data-node-count`` counts every row, ``data-box-count`` those drawn).

    >>> rows = [[0, "load", "", 4, 0], [1, "read", "io.py", 3, 1], [2, "inflate", "zlib.py", 2, 2],
    ...         [1, "parse", "csv.py", 1, 1]]
    >>> svg = profile_svg(rows)
    >>> 'data-sample-count="4"' in svg, 'data-box-count="4"' in svg, "inflate (zlib.py)" in svg
    (True, True, True)
    """
    rows = [(int(r[0]), str(r[1]), str(r[2]), int(r[3]), int(r[4])) for r in rows]
    total = sum(count for depth, _, _, count, _ in rows if depth == 0)
    prefixes = [function for depth, function, _, _, _ in rows if depth == 0]
    label = f"profile: {total:,} samples of {len(prefixes)} kinds of task"
    left, right, top = 8.0, width - 8.0, 8.0
    if not total:
        height = 60.0
        return (_svg_open("xsched-profile", width, height, label, sample_count=0, node_count=0, box_count=0,
                          prefix_count=0) + _message(width, 34, "no samples: no task was running") + "</svg>")
    depth_max = max(depth for depth, *_ in rows)
    height = top + (depth_max + 1) * _ROW + 24
    colours = group_colours(prefixes)
    scale = (right - left) / total
    cursor = [0]  # cursor[d]: where the next child of the last row of depth d - 1 starts, in samples
    prefix, parts, drawn = "", [], 0
    for depth, function, filename, count, own in rows:
        del cursor[depth + 1:]
        if depth >= len(cursor):
            continue  # (malformed: a row deeper than its parent's children)
        start = cursor[depth]
        cursor[depth] = start + count
        cursor.append(start)
        if depth == 0:
            prefix = function
        w = count * scale
        if w < min_width:
            continue
        drawn += 1
        x, y = left + start * scale, top + depth * _ROW
        name = function if not filename else f"{function} ({filename.rsplit('/', 1)[-1]})"
        tip = (f"{function}" + (f" in {filename}" if filename else " tasks") +
               f": {count:,} samples ({100 * count / total:.1f} %), {own:,} in it")
        parts.append(f'<g><title>{_e(tip)}</title><rect x="{_n(x)}" y="{_n(y)}" width="{_n(max(w - 1, 0.5))}" '
                     f'height="{_ROW - 2}" fill="{colours.get(prefix, PALETTE[0])}" fill-opacity="'
                     f'{1.0 if depth == 0 else max(0.45, 0.9 - 0.05 * depth):.2f}"/>')
        chars = int((w - 6) / _CHAR)
        if chars >= 3:
            text = name if len(name) <= chars else name[:chars - 1] + "…"
            parts.append(f'<text x="{_n(x + 3)}" y="{_n(y + 12)}">{_e(text)}</text>')
        parts.append("</g>")
    note = f"{total:,} samples; a box's width: the samples that passed through that call"
    return (_svg_open("xsched-profile", width, height, label, sample_count=total, node_count=len(rows),
                      box_count=drawn, prefix_count=len(prefixes)) + "".join(parts) +
            f'<text class="muted" x="{_n(left)}" y="{_n(height - 8)}">{_e(note)}</text></svg>')
