"""Rich HTML for the objects a notebook user holds: Client and LocalCluster.

Static tables built from one ``scheduler_info()`` call; the live widgets in
``jupyter/widgets.py`` build on the same figures.
"""

from __future__ import annotations

import html

from ..units import format_bytes

__all__ = ["client_html", "cluster_html", "workers_table"]


def workers_table(info: dict) -> str:
    """An HTML table of workers with a memory bar each (managed / unmanaged / spilled vs limit)."""
    rows = []
    for addr, w in sorted(info.get("workers", {}).items()):
        mem = w.get("memory", {})
        limit = w.get("memory_limit") or 0
        managed, unmanaged, spilled = mem.get("managed", 0), mem.get("unmanaged", 0), mem.get("spilled", 0)
        bar = ""
        if limit:
            pm = min(100.0, 100.0 * managed / limit)
            pu = min(100.0 - pm, 100.0 * unmanaged / limit)
            bar = (f"<div style='width:160px;height:10px;background:#eee;position:relative'>"
                   f"<div style='position:absolute;left:0;width:{pm:.1f}%;height:100%;background:#1f77b4'></div>"
                   f"<div style='position:absolute;left:{pm:.1f}%;width:{pu:.1f}%;height:100%;background:#aec7e8'>"
                   f"</div></div>")
        rows.append(
            f"<tr><td>{html.escape(str(w.get('name')))}</td><td><code>{html.escape(addr)}</code></td>"
            f"<td>{w.get('nthreads')}</td><td>{w.get('processing', 0)}</td><td>{w.get('in_memory', 0)}</td>"
            f"<td>{format_bytes(managed)} managed, {format_bytes(unmanaged)} unmanaged, "
            f"{format_bytes(spilled)} spilled{' of ' + format_bytes(limit) if limit else ''}{bar}</td></tr>")
    head = ("<tr><th>name</th><th>address</th><th>threads</th><th>processing</th><th>keys</th>"
            "<th>memory</th></tr>")
    return f"<table>{head}{''.join(rows)}</table>"


def client_html(client) -> str:
    """Client summary: scheduler, workers, threads, tasks by state."""
    title = f"<b>xsched Client</b> <code>{html.escape(str(client.scheduler_address))}</code> ({client.status})"
    if client.status != "running" or client.asynchronous:
        return title
    try:
        info = client.scheduler_info()
    except Exception as e:  # the display must never raise
        return f"{title}<br>scheduler unreachable: {html.escape(str(e))}"
    ws = info["workers"].values()
    tasks = ", ".join(f"{k}: {v}" for k, v in sorted(info.get("tasks", {}).items())) or "none"
    return (f"{title}<br>workers: {len(ws)}, threads: {sum(w['nthreads'] for w in ws)}, "
            f"queued: {info.get('queued', 0)}, tasks: {html.escape(tasks)}{workers_table(info)}")


def cluster_html(cluster) -> str:
    """LocalCluster summary: address, workers, threads, memory limit."""
    mem = format_bytes(cluster.memory_limit) if cluster.memory_limit else "no limit"
    return (f"<b>LocalCluster</b> <code>{html.escape(str(cluster.scheduler_address))}</code> "
            f"({cluster.status})<br>workers: {cluster.n_workers}, threads per worker: "
            f"{cluster.threads_per_worker}, memory per worker: {mem}, "
            f"processes: {cluster.processes}")
