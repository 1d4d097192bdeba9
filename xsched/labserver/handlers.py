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
    GET    /xsched/api/clusters/<id>/story?key=K   the transitions of task K: {story: [{time, start,
                                                finish, worker, stimulus_id}], now: what it does now
                                                and why it does not run} (clusters._story_now)
    GET    /xsched/api/clusters/<id>/group?name=G   the keys of task group G, failed and running
                                                first: {group, total, keys: [{key, state, worker}]}
    POST   /xsched/api/clusters/<id>/interrupt  {"key": K}: interrupt task K where it runs now
                                                (client.interrupt) -> {"interrupted": {worker: [K]}}
    POST   /xsched/api/clusters/<id>/profile-reset  {}: the scheduler starts its profile again
                                                (every dashboard's: there is one) -> {"profile": {samples,
                                                since, rows}}
    WS     /xsched/api/ws                       pushes {"type": "clusters"} every interval, and
                                                {"type": "detail"} of the cluster it subscribed to;
                                                on {"type": "watch", "cluster": id, "panes": [...],
                                                "interval": 0.5}: one {"type": "telemetry"} message
                                                per interval with what those panes show, new since the
                                                last one (the cursors live in this connection only)

Watching (the main-area panes)::

    browser --{"type": "watch", cluster, panes, interval, reset}--> UpdatesHandler._watch (one
        asyncio task per watched cluster, at most MAX_WATCHES per connection)
        every interval: ClusterMonitor.telemetry(cluster, {parts, since, memory_since, logs_since})
            --telemetry--> the scheduler's telemetry extension --> one reply
        <--{"type": "telemetry", cluster, task_stream, workers, groups, memory, logs, time}--
        cursors (task-stream index, per-worker memory times, per-process log numbers) advance
        in the task only; a pane opened again starts its part afresh
    panes that need no telemetry (story) --> no request: the story pane asks GET .../story
    cluster gone from the registry --> {"type": "telemetry", cluster, "gone": true}, watch ends
    panes [] --> the watch ends;  socket closed --> every watch task cancelled: nothing left
"""

from __future__ import annotations

import asyncio
import json
import logging
import time

import tornado.web
import tornado.websocket
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from jupyter_server.utils import url_path_join

from .clusters import ClusterMonitor, parse_watch, watch_parts
from .kernels import attach_kernel

logger = logging.getLogger("xsched.labserver")

AUTH_RESOURCE = "xsched"
#: clusters one connection may watch at once
MAX_WATCHES = 4
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
        self.finish(json.dumps({"key": key, **story}))


class GroupHandler(_Base):
    @tornado.web.authenticated
    @authorized
    async def get(self, cluster_id):
        name = self.get_argument("name")
        try:
            rows = await self.monitor.group(cluster_id, name)
        except KeyError:
            raise tornado.web.HTTPError(404, f"no running cluster {cluster_id!r}") from None
        self.finish(json.dumps(rows))


class InterruptHandler(_Base):
    @tornado.web.authenticated
    @authorized
    async def post(self, cluster_id):
        key = self.body().get("key")
        if not isinstance(key, str) or not key:
            raise tornado.web.HTTPError(400, "key must be the key of a running task")
        try:
            interrupted = await self.monitor.interrupt(cluster_id, key)
        except KeyError:
            raise tornado.web.HTTPError(404, f"no running cluster {cluster_id!r}") from None
        self.finish(json.dumps({"key": key, "interrupted": interrupted}))


class ProfileResetHandler(_Base):
    @tornado.web.authenticated
    @authorized
    async def post(self, cluster_id):
        try:
            reply = await self.monitor.telemetry(cluster_id, {"parts": ["profile"], "reset": ["profile"]})
        except KeyError:
            raise tornado.web.HTTPError(404, f"no running cluster {cluster_id!r}") from None
        self.finish(json.dumps({"profile": reply["profile"]}))


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
        self._watches: dict[str, dict] = {}  # cluster id -> its watch (panes, interval, cursors, task)
        self._due = 0.0  # (loop time) when the next clusters message is due
        self._task = asyncio.ensure_future(self._push())

    def on_message(self, message):
        try:
            msg = json.loads(message)
        except ValueError:
            return
        if not isinstance(msg, dict):
            return
        if msg.get("type") == "watch":
            self._on_watch(msg)
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
        """The clusters message every interval; while a watch ticks at least as often, its
        telemetry messages carry it instead (``_carrier``), and this loop only steps in when
        the browser changed its subscription or the carrier missed a whole interval."""
        loop = asyncio.get_running_loop()
        try:
            while True:
                woken = self._wake.is_set()
                self._wake.clear()
                if woken or self._carrier() is None or loop.time() >= self._due + self._interval:
                    for message in await self._clusters_messages():
                        self.write_message(message)
                    wait = self._interval
                else:
                    wait = self._due + self._interval - loop.time()
                try:
                    await asyncio.wait_for(self._wake.wait(), wait)
                except asyncio.TimeoutError:
                    pass
        except tornado.websocket.WebSocketClosedError:
            pass
        except asyncio.CancelledError:
            pass
        except Exception:
            logger.exception("xsched lab updates stopped")

    async def _clusters_messages(self) -> list[str]:
        """The clusters message, and the subscribed cluster's detail, as JSON; the next is due an
        interval from now."""
        snap = await self.monitor.snapshot()
        self._due = asyncio.get_running_loop().time() + self._interval
        out = [json.dumps({"type": "clusters", "clusters": snap["clusters"], "time": snap["time"]})]
        sub = self._subscribed
        if sub is not None:
            out.append(json.dumps({"type": "detail", "id": sub, "detail": snap["details"].get(sub)}))
        return out

    def _carrier(self) -> dict | None:
        """The watch whose telemetry messages carry the clusters message: the quickest, if it
        ticks at least as often. Why: the browser then redraws the sidebar in the frame it
        redraws the panes in, instead of in a frame of its own (a third of its frames, with
        the panes at 0.5 s and the sidebar at 1 s)."""
        return min((w for w in self._watches.values() if w["interval"] <= self._interval),
                   key=lambda w: w["interval"], default=None)

    # ---------------------------------------------------------------- watching panes
    def _send(self, msg: dict) -> None:
        self.write_message(json.dumps(msg, separators=(",", ":")))  # (the telemetry: no spaces)

    def _on_watch(self, msg: dict) -> None:
        """Start, change or stop the watch of one cluster; a bad message is answered, never raised."""
        try:
            cluster, panes, interval, reset = parse_watch(msg)
        except ValueError as e:
            self._send({"type": "telemetry-error", "error": str(e)})
            return
        watches = self._watches
        watch = watches.get(cluster)
        if not panes:
            if watch is not None:
                watch["task"].cancel()
                watches.pop(cluster, None)
            return
        if watch is None:
            if len(watches) >= MAX_WATCHES:
                self._send({"type": "telemetry-error", "cluster": cluster,
                            "error": f"a connection watches at most {MAX_WATCHES} clusters; close panes of another"})
                return
            watch = watches[cluster] = {"panes": panes, "interval": interval, "since": None,
                                        "activity_since": None, "memory_since": {}, "logs_since": {},
                                        "wake": asyncio.Event()}
            watch["task"] = asyncio.ensure_future(self._watch(cluster, watch))
            return
        if reset or ("task-stream" in panes and "task-stream" not in watch["panes"]):
            watch["since"] = None  # a new task stream pane starts from the runs the scheduler keeps
            watch["activity_since"] = None
            watch["resets"] = watch.get("resets", 0) + 1  # (a reply to an older request keeps it None)
        # a pane opened again starts from what the scheduler keeps, not from where the last one was
        if "timeline" in panes and "timeline" not in watch["panes"]:
            watch["memory_since"] = {}
            watch["resets"] = watch.get("resets", 0) + 1
        if "logs" in panes and "logs" not in watch["panes"]:
            watch["logs_since"] = {}
            watch["resets"] = watch.get("resets", 0) + 1
        watch.update(panes=panes, interval=interval)
        watch["wake"].set()

    async def _ask(self, cluster: str, request: dict, parts: list) -> dict | None:
        """The telemetry reply for ``request``; None for panes that ask on demand only (the
        story), which need no telemetry: whether the cluster is still there is all they hear
        (KeyError when it is not)."""
        if parts:
            return await self.monitor.telemetry(cluster, request)
        await self.monitor.address_of(cluster)
        return None

    async def _watch(self, cluster: str, watch: dict) -> None:
        """One batched telemetry message per interval for one cluster, until cancelled."""
        loop = asyncio.get_running_loop()
        try:
            while True:
                t0 = loop.time()
                parts = watch_parts(watch["panes"])
                request = {"parts": parts, "since": watch["since"], "memory_since": watch["memory_since"] or None,
                           "logs_since": watch["logs_since"] or None, "activity_since": watch["activity_since"]}
                resets = watch.get("resets", 0)
                carry = self._carrier() is watch and t0 >= self._due - watch["interval"] / 2
                try:
                    if carry:  # (asked side by side; the clusters message goes first)
                        reply, messages = await asyncio.gather(self._ask(cluster, request, parts),
                                                               self._clusters_messages(), return_exceptions=True)
                        if isinstance(messages, BaseException):
                            logger.debug("xsched lab clusters message not made: %r", messages)
                        else:
                            for message in messages:
                                self.write_message(message)
                        if isinstance(reply, BaseException):
                            raise reply
                    else:
                        reply = await self._ask(cluster, request, parts)
                except KeyError:
                    self._send({"type": "telemetry", "cluster": cluster, "gone": True})
                    self._watches.pop(cluster, None)
                    return
                except asyncio.CancelledError:
                    raise
                except Exception as e:  # unreachable, refused: said, and tried again next interval
                    self._send({"type": "telemetry", "cluster": cluster, "error": f"{type(e).__name__}: {e}"})
                else:
                    if reply is None:
                        reply = {"time": time.time()}
                    current = watch.get("resets", 0) == resets  # (else a reset came while it was asked)
                    stream = reply.get("task_stream")
                    if stream is not None and current:
                        watch["since"] = stream.get("index")
                    activity = reply.get("activity")
                    if activity is not None and current:
                        watch["activity_since"] = activity.get("index")
                    if "memory_since" in reply and current:
                        watch["memory_since"] = {a: t for a, t in (reply["memory_since"] or {}).items()
                                                 if t is not None}
                    if "logs_since" in reply and current:
                        watch["logs_since"] = dict(reply["logs_since"] or {})
                    self._send(dict(reply, type="telemetry", cluster=cluster, panes=watch["panes"]))
                watch["wake"].clear()
                try:
                    await asyncio.wait_for(watch["wake"].wait(), max(watch["interval"] - (loop.time() - t0), 0.0))
                except asyncio.TimeoutError:
                    pass
        except (tornado.websocket.WebSocketClosedError, asyncio.CancelledError):
            pass
        except Exception:
            logger.exception("xsched lab telemetry of %s stopped", cluster)

    def on_close(self):
        if self._task is not None:
            self._task.cancel()
        for watch in self._watches.values():
            watch["task"].cancel()
        self._watches.clear()
        super().on_close()


def setup_handlers(web_app, monitor: ClusterMonitor) -> None:
    web_app.settings["xsched_monitor"] = monitor
    base = url_path_join(web_app.settings["base_url"], "xsched", "api")
    web_app.add_handlers(".*$", [
        (url_path_join(base, "clusters") + "/?", ClustersHandler),
        (url_path_join(base, "clusters", _ID, "kernels") + "/?", KernelHandler),
        (url_path_join(base, "clusters", _ID, "story") + "/?", StoryHandler),
        (url_path_join(base, "clusters", _ID, "group") + "/?", GroupHandler),
        (url_path_join(base, "clusters", _ID, "interrupt") + "/?", InterruptHandler),
        (url_path_join(base, "clusters", _ID, "profile-reset") + "/?", ProfileResetHandler),
        (url_path_join(base, "clusters", _ID) + "/?", ClusterHandler),
        (url_path_join(base, "ws"), UpdatesHandler),
    ])
