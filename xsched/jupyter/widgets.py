"""Live ipywidgets for Client and LocalCluster in a notebook.

Data flow::

    display(client) -> Client._ipython_display_ -> xsched.hooks.ipython_display -> ipython_display(client)
        in a Jupyter kernel with ipywidgets: ClientWidget(client).start(); display(widget)
        elsewhere: the static HTML of jupyter/display.py (and repr() as text)
    ClientWidget._run (a coroutine on the client's loop, owned by the widget):
        every ``interval`` s: await client._scheduler_info() -> _apply(info)
            summary HTML (workers, threads, tasks processing and queued) and one
            memory bar per worker (managed | unmanaged | spilled, limit marked in red)
        stops when the client closes, the widget is closed, or ``close()`` is called
    ClusterWidget (LocalCluster) watches through its own SchedulerRPC (client/rpc.py), and adds
    an IntText and a "Scale" button; scaling runs in a thread so the notebook never blocks,
    and reports its result beside the button.

Widget objects can be built without a kernel (for tests and scripts):

>>> from xsched.jupyter.widgets import ClientWidget
>>> w = ClientWidget(client)
>>> w.refresh(); list(w.bars)
['tcp://127.0.0.1:...', 'tcp://127.0.0.1:...']
>>> w.close()
"""

from __future__ import annotations

import asyncio
import html
import logging
import threading

from .. import hooks
from ..client.rpc import SchedulerRPC
from ..units import format_bytes
from .display import dashboard_html, dashboard_link_of, memory_bar, memory_text, summary_html, worker_order
from .progress import in_notebook

logger = logging.getLogger("xsched.widgets")

__all__ = ["ClientWidget", "ClusterWidget", "ipython_display", "in_notebook"]


class ClientWidget:
    """A live view of a cluster through ``client``: ``.widget`` is the ipywidgets VBox.

    ``bars`` maps each worker address to its ``ipywidgets.HTML`` row (name, threads,
    tasks, memory bar). ``refresh()`` updates once (blocking); ``start()`` refreshes every
    ``interval`` seconds on the client's loop until the client or the widget closes.
    """

    def __init__(self, client, interval: float = 1.0, title: str | None = None, extra=()):
        import ipywidgets as w

        if client.asynchronous:
            raise ValueError("the live widget needs a synchronous Client; display the client's HTML instead")
        self.client = client
        self.interval = float(interval)
        self._title_text = title or (f"<b>xsched Client</b> <code>{html.escape(str(client.scheduler_address))}</code>"
                                     + dashboard_html(dashboard_link_of(client)))
        self.title = w.HTML(self._title_text)
        self.summary = w.HTML("")
        self.bars: dict[str, object] = {}
        self.workers_box = w.VBox([])
        self.widget = w.VBox([self.title, self.summary, self.workers_box, *extra])
        self.info: dict | None = None
        self.status = "created"  # running, closed
        self._timer = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.client.scheduler_address!r} workers={len(self.bars)} {self.status}>"

    def _ipython_display_(self, **kwargs):
        from IPython.display import display

        display(self.widget)

    # ------------------------------------------------------------------ drawing
    def refresh(self, info: dict | None = None) -> None:
        """Fetch ``scheduler_info()`` (unless given) and redraw. Blocking; not for the loop thread."""
        self._apply(info if info is not None else self.client.scheduler_info())

    def _apply(self, info: dict) -> None:
        self.info = info
        self.summary.value = summary_html(info)
        workers = info.get("workers", {})
        scale = max([w.get("memory_limit") or 0 for w in workers.values()]
                    + [sum((w.get("memory") or {}).get(k, 0) or 0 for k in ("managed", "unmanaged", "spilled"))
                       for w in workers.values()] + [1])
        changed = False
        for addr in set(self.bars) - set(workers):
            self.bars.pop(addr).close()
            changed = True
        import ipywidgets as w

        for addr in workers:
            row = self.bars.get(addr)
            if row is None:
                row = self.bars[addr] = w.HTML()
                changed = True
            row.value = _worker_row(addr, workers[addr], scale)
        if changed:  # in the one worker order of every view (name, digits as numbers; then address)
            self.workers_box.children = tuple(
                self.bars[a] for a in sorted(self.bars, key=lambda a: worker_order(workers[a].get("name"), a)))

    # ------------------------------------------------------------------ timer
    def start(self) -> "ClientWidget":
        """Refresh every ``interval`` seconds on the client's loop (returns at once)."""
        if self.status == "running":
            return self
        self.status = "running"
        self._timer = asyncio.run_coroutine_threadsafe(self._run(), self.client._loop)
        return self

    def _alive(self) -> bool:
        return (self.status == "running" and self.client.status == "running"
                and getattr(self.widget, "comm", True) is not None)

    async def _run(self) -> None:
        try:
            while self._alive():
                try:
                    info = await self.client._scheduler_info()
                except asyncio.CancelledError:
                    raise
                except Exception as e:
                    if not self._alive():
                        break
                    self.title.value = f"{self._title_text} <span style='color:#c33'>unreachable: " \
                                       f"{html.escape(str(e))}</span>"
                else:
                    self.title.value = self._title_text
                    try:
                        self._apply(info)
                    except Exception:
                        logger.exception("widget: drawing failed")
                await asyncio.sleep(self.interval)
        finally:
            await self._stopped()

    async def _stopped(self) -> None:
        if self.status != "closed":
            self.title.value = f"{self._title_text} ({self.client.status})"

    def close(self) -> None:
        """Stop refreshing and close the widgets."""
        self.status = "closed"
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.widget.close()


class ClusterWidget(ClientWidget):
    """A cluster's live view (LocalCluster, SSHCluster, SLURMCluster...) plus a worker count and a "Scale" button.

    It opens its own connection to the scheduler (a ``SchedulerRPC``, closed with the widget
    or the cluster).

    >>> cw = ClusterWidget(client.cluster)
    >>> cw.n_workers.value
    2
    >>> cw.n_workers.value = 3; cw.scale()       # doctest: +SKIP
    >>> cw.close()
    """

    def __init__(self, cluster, interval: float = 1.0):
        import ipywidgets as w

        self.cluster = cluster
        self.n_workers = w.BoundedIntText(value=cluster.n_workers, min=0, max=1024, description="workers",
                                          layout=w.Layout(width="180px"))
        self.button = w.Button(description="Scale", tooltip="start or stop workers until there are this many")
        self.scale_status = w.HTML("")
        self._scale_thread: threading.Thread | None = None
        self.button.on_click(lambda _b: self.scale())
        client = SchedulerRPC(cluster, name="widget")
        title = (f"<b>{html.escape(getattr(cluster, 'kind', type(cluster).__name__))}</b> "
                 f"<code>{html.escape(str(cluster.scheduler_address))}</code> ("
                 + (f"{'processes' if cluster.processes else 'in-process'}, " if hasattr(cluster, "processes") else "")
                 + f"{cluster.threads_per_worker} threads and "
                 f"{format_bytes(cluster.memory_limit) if cluster.memory_limit else 'no memory limit'} per worker)"
                 + dashboard_html(dashboard_link_of(cluster)))
        try:
            super().__init__(client, interval, title, extra=[w.HBox([self.n_workers, self.button,
                                                                     self.scale_status])])
        except BaseException:
            client.close()
            raise

    def scale(self, n: int | None = None) -> threading.Thread | None:
        """Scale the cluster to ``n`` workers (default: the number in the box), in a thread.

        Returns the thread (join it to wait), or None when ``n`` is refused.
        """
        n = int(self.n_workers.value if n is None else n)
        if n < 0:
            self.scale_status.value = f"<span style='color:#c33'>cannot scale to {n} workers: give 0 or more</span>"
            return None
        if self._scale_thread is not None and self._scale_thread.is_alive():
            self.scale_status.value = "still scaling; wait for it to finish"
            return self._scale_thread
        self.button.disabled = True
        self.scale_status.value = f"scaling to {n} workers ..."
        t = self._scale_thread = threading.Thread(target=self._scale, args=(n,), name="xsched-scale", daemon=True)
        t.start()
        return t

    def _scale(self, n: int) -> None:
        try:
            self.cluster.scale(n)
        except Exception as e:
            self.scale_status.value = (f"<span style='color:#c33'>scale({n}) failed: "
                                       f"{html.escape(f'{type(e).__name__}: {e}')}</span>")
        else:
            self.scale_status.value = f"{n} workers"
        finally:
            self.button.disabled = False

    def _alive(self) -> bool:
        return super()._alive() and self.cluster.status == "running"

    async def _stopped(self) -> None:
        await super()._stopped()
        if self.client.status == "running":
            await self.client._close()

    def close(self) -> None:
        super().close()
        if self.client.status == "running":
            self.client.close()


def _worker_row(addr: str, w: dict, scale: float) -> str:
    mem = w.get("memory") or {}
    limit = w.get("memory_limit") or 0
    status = w.get("status", "running")
    flag = "" if status == "running" else f" <span style='color:#c60'>({html.escape(str(status))})</span>"
    return (f"<div style='white-space:nowrap'><b>{html.escape(str(w.get('name')))}</b>{flag} "
            f"<code>{html.escape(addr)}</code> {w.get('nthreads', 0)} threads, "
            f"{w.get('processing', 0)} processing, {w.get('in_memory', 0)} keys"
            f"{memory_bar(mem, limit, scale)}<small>{html.escape(memory_text(mem, limit))}</small></div>")


def make_widget(obj, interval: float = 1.0) -> ClientWidget:
    """The live widget for a Client or a LocalCluster (not started)."""
    if hasattr(obj, "scale") and hasattr(obj, "scheduler_address") and not hasattr(obj, "submit"):
        return ClusterWidget(obj, interval)
    return ClientWidget(obj, interval)


@hooks.ipython_display.register
def ipython_display(obj) -> None:
    """Display ``obj`` (Client or LocalCluster): live widget in a kernel, else static HTML + text."""
    from IPython.display import display

    if in_notebook() and not getattr(obj, "asynchronous", False) and getattr(obj, "status", None) == "running":
        try:
            widget = make_widget(obj).start()
        except Exception:
            logger.debug("live widget unavailable; showing static HTML", exc_info=True)
        else:
            display(widget.widget)
            return
    display({"text/html": obj._repr_html_(), "text/plain": repr(obj)}, raw=True)
