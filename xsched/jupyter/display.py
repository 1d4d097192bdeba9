"""Rich HTML for the objects a notebook user holds: Client and LocalCluster.

Static tables built from one ``scheduler_info()`` call; the live widgets in
``jupyter/widgets.py`` reuse ``summary_html`` and ``memory_bar`` and refresh them.
"""

from __future__ import annotations

import html

from .. import hooks
from ..graph.order import natural_key
from ..units import format_bytes

__all__ = ["client_html", "cluster_html", "dashboard_html", "dashboard_link_of", "workers_table", "memory_bar",
           "memory_text", "summary_html", "worker_order"]

# Colours follow the JupyterLab theme where there is one; the fallbacks read on light and dark
# backgrounds alike (a translucent grey track is never a white bar on a dark page).
TRACK = "var(--jp-layout-color2, rgba(128, 128, 128, 0.22))"
MANAGED = "var(--jp-brand-color1, #1976d2)"
#: unmanaged memory: stripes of the managed colour over the track, distinct in every theme
UNMANAGED = f"repeating-linear-gradient(135deg, {MANAGED} 0 2px, transparent 2px 4px)"
SPILLED = "var(--jp-warn-color1, #f57c00)"
LIMIT = "var(--jp-error-color1, #d32f2f)"


def worker_order(name, address: str) -> tuple:
    """Sort key of a worker in every view: its name with digit runs compared as numbers, then
    its address (the same way).

    >>> rows = [("worker-10", "tcp://h:1"), ("worker-2", "tcp://h:9"), ("worker-2", "tcp://h:10")]
    >>> [f"{n} {a}" for n, a in sorted(rows, key=lambda r: worker_order(*r))]
    ['worker-2 tcp://h:9', 'worker-2 tcp://h:10', 'worker-10 tcp://h:1']
    >>> sorted(["10", "2", "1"], key=lambda n: worker_order(n, ""))
    ['1', '2', '10']
    """
    return natural_key(str(address if name is None else name)), natural_key(str(address))


def memory_bar(memory: dict, limit: int | None, scale: float | None = None, width: str = "200px") -> str:
    """One horizontal bar: managed | unmanaged | spilled, with a red mark at the memory limit.

    ``scale`` (bytes) is the full width; by default the larger of the limit and the total.

    >>> "managed" in memory_bar({"managed": 10, "unmanaged": 5, "spilled": 0}, 100)
    True
    """
    managed = max(int(memory.get("managed", 0) or 0), 0)
    unmanaged = max(int(memory.get("unmanaged", 0) or 0), 0)
    spilled = max(int(memory.get("spilled", 0) or 0), 0)
    limit = int(limit or 0)
    total = managed + unmanaged + spilled
    scale = float(scale or max(limit, total, 1))
    segs, left = [], 0.0
    for name, n, colour in (("managed", managed, MANAGED), ("unmanaged", unmanaged, UNMANAGED),
                            ("spilled", spilled, SPILLED)):
        pct = min(100.0 - left, 100.0 * n / scale)
        if pct > 0:
            segs.append(f"<div title='{name}: {format_bytes(n)}' data-part='{name}' style='position:absolute;"
                        f"left:{left:.2f}%;width:{pct:.2f}%;height:100%;background:{colour}'></div>")
            left += pct
    if limit:
        pos = min(100.0, 100.0 * limit / scale)
        segs.append(f"<div title='limit: {format_bytes(limit)}' data-part='limit' style='position:absolute;"
                    f"left:calc({pos:.2f}% - 2px);width:2px;height:140%;top:-20%;background:{LIMIT}'></div>")
    return (f"<div class='xsched-memory-bar' style='display:inline-block;vertical-align:middle;width:{width};"
            f"height:12px;background:{TRACK};position:relative;margin:0 6px;"
            f"box-shadow:inset 0 0 0 1px rgba(128, 128, 128, 0.35)'>{''.join(segs)}</div>")


def memory_text(memory: dict, limit: int | None) -> str:
    """'1.2 GiB managed, 300 MiB unmanaged, 0 B spilled / 4 GiB'."""
    parts = [f"{format_bytes(memory.get('managed', 0) or 0)} managed",
             f"{format_bytes(memory.get('unmanaged', 0) or 0)} unmanaged",
             f"{format_bytes(memory.get('spilled', 0) or 0)} spilled"]
    return ", ".join(parts) + (f" / {format_bytes(limit)}" if limit else " (no limit)")


def workers_table(info: dict) -> str:
    """An HTML table of workers with a memory bar each (managed / unmanaged / spilled vs limit)."""
    rows = []
    workers = info.get("workers", {})
    for addr in sorted(workers, key=lambda a: worker_order(workers[a].get("name"), a)):
        w = workers[addr]
        mem = w.get("memory", {})
        limit = w.get("memory_limit") or 0
        rows.append(
            f"<tr><td>{html.escape(str(w.get('name')))}</td><td><code>{html.escape(addr)}</code></td>"
            f"<td>{w.get('nthreads')}</td><td>{w.get('processing', 0)}</td><td>{w.get('in_memory', 0)}</td>"
            f"<td style='text-align:left;white-space:nowrap'>{memory_bar(mem, limit, width='160px')} "
            f"{html.escape(memory_text(mem, limit))}</td></tr>")
    head = ("<tr><th>name</th><th>address</th><th>threads</th><th>processing</th><th>keys</th>"
            "<th>memory</th></tr>")
    return f"<table>{head}{''.join(rows)}</table>"


def summary_html(info: dict) -> str:
    """Workers, threads, memory and task counts in one line."""
    ws = list(info.get("workers", {}).values())
    tasks = info.get("tasks", {})
    limit = sum(w.get("memory_limit") or 0 for w in ws)
    rss = sum((w.get("memory") or {}).get("rss", 0) or 0 for w in ws)
    others = ", ".join(f"{k}: {v}" for k, v in sorted(tasks.items()) if k not in ("processing", "queued"))
    return (f"workers: <b>{len(ws)}</b>, threads: <b>{sum(w.get('nthreads', 0) for w in ws)}</b>, "
            f"memory: {format_bytes(rss)}{' / ' + format_bytes(limit) if limit else ''}, "
            f"tasks processing: <b>{tasks.get('processing', 0)}</b>, queued: <b>{info.get('queued', 0)}</b>"
            + (f" ({html.escape(others)})" if others else ""))


def dashboard_html(link: str | None) -> str:
    """A line with the dashboard page's link (opening in a new tab; the token stays in the
    href, out of the text), or nothing when there is no dashboard.

    >>> dashboard_html("http://127.0.0.1:8787/status?token=ab12")
    '<br>dashboard: <a href="http://127.0.0.1:8787/status?token=ab12" target="_blank" rel="noopener noreferrer">http://127.0.0.1:8787/status</a>'
    >>> dashboard_html(None)
    ''
    """
    if not link:
        return ""
    return (f'<br>dashboard: <a href="{html.escape(link)}" target="_blank" rel="noopener noreferrer">'
            f"{html.escape(link.partition('?')[0])}</a>")


def dashboard_link_of(thing) -> str | None:
    """``thing.dashboard_link`` (a Client's, a cluster's), or None when it has none or cannot say.

    >>> dashboard_link_of(object()) is None
    True
    """
    try:  # the display must never raise
        return getattr(thing, "dashboard_link", None)
    except Exception:
        return None


@hooks.client_html.register
def client_html(client) -> str:
    """Client summary: scheduler, dashboard link, workers, threads, tasks by state."""
    title = f"<b>xsched Client</b> <code>{html.escape(str(client.scheduler_address))}</code> ({client.status})"
    if client.status != "running":
        return title
    title += dashboard_html(dashboard_link_of(client))
    if client.asynchronous:
        return title
    try:
        info = client.scheduler_info()
    except Exception as e:  # the display must never raise
        return f"{title}<br>scheduler unreachable: {html.escape(str(e))}"
    return f"{title}<br>{summary_html(info)}{workers_table(info)}"


@hooks.cluster_html.register
def cluster_html(cluster) -> str:
    """LocalCluster summary: address, dashboard link, workers, threads, memory limit."""
    mem = format_bytes(cluster.memory_limit) if cluster.memory_limit else "no limit"
    name = getattr(cluster, "name", "LocalCluster")
    named = f" <i>{html.escape(str(name))}</i>" if name != "LocalCluster" else ""
    return (f"<b>LocalCluster</b>{named} <code>{html.escape(str(cluster.scheduler_address))}</code> "
            f"({cluster.status}){dashboard_html(dashboard_link_of(cluster))}<br>workers: {cluster.n_workers}, "
            f"threads per worker: {cluster.threads_per_worker}, memory per worker: {mem}, "
            f"processes: {cluster.processes}")
