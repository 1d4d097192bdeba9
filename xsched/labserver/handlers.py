"""REST and websocket handlers of the xsched JupyterLab panel (``/xsched/api/...``).

Every handler requires an authenticated Jupyter user (``@tornado.web.authenticated``;
jupyter_server's token or cookie login) and is authorized on the resource ``xsched``;
writes (POST, PATCH, DELETE) pass jupyter_server's XSRF check unless token-authenticated.
Nothing sent to the browser comes from a registry entry except its public fields
(``clusters.PUBLIC_FIELDS``): secrets and kernel keys stay in the server.

    GET    /xsched/api/clusters                 list: address, id, name, workers, threads, memory
    POST   /xsched/api/clusters                 start a LocalCluster owned by the panel
    GET    /xsched/api/clusters/<id>            detail: summary + per-worker rows + task groups
    PATCH  /xsched/api/clusters/<id>            {"workers": n}: scale (panel clusters only)
    DELETE /xsched/api/clusters/<id>            shut down (panel clusters only)
    POST   /xsched/api/clusters/<id>/kernels    {"target": "scheduler" | worker address}: attach
                                                the kernel inside that process -> {"id": kernel id}
    GET    /xsched/api/clusters/<id>/story?key=K   the transitions of task K: [{time, start, finish,
                                                worker, stimulus_id}] (clusters._story)
    WS     /xsched/api/ws                       pushes {"type": "clusters"} every interval, and
                                                {"type": "detail"} of the cluster it subscribed to
"""

from __future__ import annotations

import asyncio
import json
import logging

import tornado.web
import tornado.websocket
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from jupyter_server.utils import url_path_join

from .clusters import ClusterMonitor
from .kernels import attach_kernel

logger = logging.getLogger("xsched.labserver")

AUTH_RESOURCE = "xsched"
_ID = r"(?P<cluster_id>[^/]+)"


class _Base(APIHandler):
    auth_resource = AUTH_RESOURCE

    @property
    def monitor(self) -> ClusterMonitor:
        return self.settings["xsched_monitor"]

    def body(self) -> dict:
        if not self.request.body:
            return {}
        try:
            data = json.loads(self.request.body)
        except ValueError:
            raise tornado.web.HTTPError(400, "the body is not JSON") from None
        if not isinstance(data, dict):
            raise tornado.web.HTTPError(400, "the body must be a JSON object")
        return data

    async def detail_or_404(self, cluster_id: str) -> dict:
        try:
            return await self.monitor.detail(cluster_id)
        except KeyError:
            raise tornado.web.HTTPError(404, f"no running cluster {cluster_id!r}") from None


class ClustersHandler(_Base):
    @tornado.web.authenticated
    @authorized
    async def get(self):
        self.finish(json.dumps(await self.monitor.clusters()))

    @tornado.web.authenticated
    @authorized
    async def post(self):
        body = self.body()
        try:
            n = int(body.get("workers", 2))
            threads = int(body.get("threads_per_worker", 1))
        except (TypeError, ValueError):
            raise tornado.web.HTTPError(400, "'workers' and 'threads_per_worker' must be integers") from None
        if not (0 <= n <= 64 and 1 <= threads <= 256):
            raise tornado.web.HTTPError(400, "workers must be 0..64 and threads_per_worker 1..256")
        out = await self.monitor.start_cluster(n_workers=n, threads_per_worker=threads)
        self.set_status(201)
        self.finish(json.dumps(out))


class ClusterHandler(_Base):
    @tornado.web.authenticated
    @authorized
    async def get(self, cluster_id):
        self.finish(json.dumps(await self.detail_or_404(cluster_id)))

    @tornado.web.authenticated
    @authorized
    async def patch(self, cluster_id):
        body = self.body()
        try:
            n = int(body["workers"])
        except (KeyError, TypeError, ValueError):
            raise tornado.web.HTTPError(400, "give {\"workers\": n}") from None
        if not 0 <= n <= 64:
            raise tornado.web.HTTPError(400, "workers must be 0..64")
        try:
            await self.monitor.scale(cluster_id, n)
        except PermissionError as e:
            raise tornado.web.HTTPError(403, str(e)) from None
        self.finish(json.dumps({"id": cluster_id, "workers": n}))

    @tornado.web.authenticated
    @authorized
    async def delete(self, cluster_id):
        try:
            await self.monitor.shutdown(cluster_id)
        except PermissionError as e:
            raise tornado.web.HTTPError(403, str(e)) from None
        self.set_status(204)
        self.finish()


class KernelHandler(_Base):
    @tornado.web.authenticated
    @authorized
    async def post(self, cluster_id):
        target = self.body().get("target", "scheduler")
        if not isinstance(target, str) or not target:
            raise tornado.web.HTTPError(400, "target must be 'scheduler' or a worker address")
        detail = await self.detail_or_404(cluster_id)
        if target != "scheduler" and target not in {w["address"] for w in detail["workers"]}:
            raise tornado.web.HTTPError(404, f"no worker {target!r} in cluster {cluster_id!r}")
        try:
            info, public = await self.monitor.kernel_info(cluster_id, target)
        except (asyncio.TimeoutError, OSError, RuntimeError) as e:
            raise tornado.web.HTTPError(502, f"could not start the kernel in {target}: {e}") from None
        km = self.settings["kernel_manager"]
        existing = self.monitor.kernel_ids.get((cluster_id, target))
        kernel_id = await attach_kernel(km, info, target, existing)
        self.monitor.kernel_ids[(cluster_id, target)] = kernel_id
        self.finish(json.dumps(dict(public, id=kernel_id, cluster=cluster_id)))


class StoryHandler(_Base):
    @tornado.web.authenticated
    @authorized
    async def get(self, cluster_id):
        key = self.get_argument("key")
        try:
            story = await self.monitor.story(cluster_id, key)
        except KeyError:
            raise tornado.web.HTTPError(404, f"no running cluster {cluster_id!r}") from None
        self.finish(json.dumps({"key": key, "story": story}))


class UpdatesHandler(WebSocketMixin, tornado.websocket.WebSocketHandler, JupyterHandler):
    """Live updates: one message per interval with every cluster, plus the subscribed detail."""

    auth_resource = AUTH_RESOURCE
    _task: asyncio.Task | None = None
    _subscribed: str | None = None
    _interval = 1.0

    @property
    def monitor(self) -> ClusterMonitor:
        return self.settings["xsched_monitor"]

    @tornado.web.authenticated
    @authorized
    async def get(self, *args, **kwargs):
        return await super().get(*args, **kwargs)

    def open(self, *args, **kwargs):
        super().open(*args, **kwargs)
        self._wake = asyncio.Event()
        self._task = asyncio.ensure_future(self._push())

    def on_message(self, message):
        try:
            msg = json.loads(message)
        except ValueError:
            return
        if not isinstance(msg, dict):
            return
        if "subscribe" in msg:
            sub = msg["subscribe"]
            self._subscribed = sub if isinstance(sub, str) else None
        if "interval" in msg:
            try:
                self._interval = min(max(float(msg["interval"]) / 1000.0, 0.5), 60.0)
            except (TypeError, ValueError):
                pass
        self._wake.set()

    async def _push(self):
        try:
            while True:
                snap = await self.monitor.snapshot()
                self.write_message(json.dumps({"type": "clusters", "clusters": snap["clusters"],
                                               "time": snap["time"]}))
                sub = self._subscribed
                if sub is not None:
                    detail = snap["details"].get(sub)
                    self.write_message(json.dumps({"type": "detail", "id": sub, "detail": detail}))
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), self._interval)
                except asyncio.TimeoutError:
                    pass
        except tornado.websocket.WebSocketClosedError:
            pass
        except asyncio.CancelledError:
            pass
        except Exception:
            logger.exception("xsched lab updates stopped")

    def on_close(self):
        if self._task is not None:
            self._task.cancel()
        super().on_close()


def setup_handlers(web_app, monitor: ClusterMonitor) -> None:
    web_app.settings["xsched_monitor"] = monitor
    base = url_path_join(web_app.settings["base_url"], "xsched", "api")
    web_app.add_handlers(".*$", [
        (url_path_join(base, "clusters") + "/?", ClustersHandler),
        (url_path_join(base, "clusters", _ID, "kernels") + "/?", KernelHandler),
        (url_path_join(base, "clusters", _ID, "story") + "/?", StoryHandler),
        (url_path_join(base, "clusters", _ID) + "/?", ClusterHandler),
        (url_path_join(base, "ws"), UpdatesHandler),
    ])
