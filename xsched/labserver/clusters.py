"""What the JupyterLab panel shows, gathered with ordinary xsched clients (no tornado here).

Data flow::

    registry.entries()  (every scheduler this user runs: LocalCluster, `xsched scheduler`, batch)
        |  public fields only (address, id, host, pid, started): never the secret
        v
    ClusterMonitor.snapshot()  -- at most one refresh per `interval` (1 s), shared by every
        |                         websocket and REST request of the Jupyter server
        |  per cluster: one Client (found by address in the registry, like a user's), on which
        |  scheduler_info() and one run_on_scheduler(_group_progress) run in a worker thread
        |  (the group pass, O(tasks), at most PROGRESS_SHARE of the scheduler's time: a long
        |  one's answer is shown again until its share allows the next)
        v
    summaries (list) + details (per-worker rows, task groups) --> handlers.py --> browser

Clusters the panel itself started (``start_cluster``) are LocalClusters owned by the
server process: only those can be scaled or shut down from the panel.

The functions ``_group_progress`` and ``_story`` run *inside the scheduler* (through
``run_on_scheduler``); they live in this module so they pickle by reference. The first
``_group_progress`` adds the telemetry extension's ``StoryRecorder`` to the scheduler state's
transition hooks (once: the dashboard page's polls install the same one): from then on every
transition is noted with its time and worker (a bounded log beside the state's own), which
``_story`` joins to the state's story, so a key's story in the panel says when and where.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime
import functools
import heapq
import logging
import threading
import time
from typing import Any

from ..client.client import Client
from ..deploy.local import LocalCluster
from ..graph.order import natural_key
from ..jupyter.display import worker_order
from ..protocol import ops, registry
from ..scheduler.extensions.telemetry import StoryRecorder as _StoryRecorder
from ..scheduler.extensions.telemetry import KEY_ORDER, group_keys, holders_of, key_story

logger = logging.getLogger("xsched.labserver")

__all__ = ["ClusterMonitor", "public_entry", "cluster_name", "PUBLIC_FIELDS"]

#: the registry fields a browser may see (the entry also holds the secret: never sent)
PUBLIC_FIELDS = ("id", "address", "hostname", "pid", "started", "port", "name")
#: the most of its scheduler's time the panel's group counts may take: a pass over every task
#: (``_group_progress``) that took t seconds is not asked again for t / PROGRESS_SHARE seconds
#: (10,000 tasks: a few ms, every refresh; a million: about 0.4 s, every 20 s)
PROGRESS_SHARE = 0.02
#: most task keys listed per group (clickable for their story; the panel shows 8, then more on
#: demand): bounds the pushed payload to this many keys per group
KEYS_PER_GROUP = 48


def public_entry(entry: dict) -> dict:
    """A registry entry without its secret (an allow-list, not a deny-list).

    >>> public_entry({"id": "scheduler-1", "address": "tcp://127.0.0.1:8786", "secret": "s3cr3t"})
    {'id': 'scheduler-1', 'address': 'tcp://127.0.0.1:8786'}
    """
    return {k: entry[k] for k in PUBLIC_FIELDS if k in entry}


def cluster_name(entry: dict) -> tuple[str, bool]:
    """(the name a person reads, whether someone chose it) of a registry entry: its ``name``
    when it has one, else ``host · started HH:MM`` (this server's local time), else its id.

    >>> cluster_name({"id": "scheduler-22c96cbd", "name": "analysis"})
    ('analysis', True)
    >>> started = datetime.datetime(2026, 1, 2, 9, 5).timestamp()
    >>> cluster_name({"id": "scheduler-22c96cbd", "hostname": "node7", "started": started})
    ('node7 · started 09:05', False)
    >>> cluster_name({"id": "scheduler-22c96cbd"})
    ('scheduler-22c96cbd', False)
    """
    chosen = entry.get("name")
    if isinstance(chosen, str) and chosen.strip():
        return chosen.strip(), True
    host, started = entry.get("hostname"), entry.get("started")
    if host and isinstance(started, (int, float)):
        return f"{host} · started {datetime.datetime.fromtimestamp(started):%H:%M}", False
    return str(entry.get("id") or entry.get("address")), False


# --------------------------------------------------------------------------- in the scheduler
def _group_progress(scheduler=None, keys_per_group: int = KEYS_PER_GROUP) -> dict:
    """Per task group: counts by state and a few keys (runs in the scheduler, one pass).

    Also makes sure the scheduler's transitions are recorded with times and workers, for
    ``_story``.
    """
    started = time.perf_counter()
    telemetry = scheduler.extensions.get("telemetry")
    if telemetry is not None:
        telemetry.story_recorder()  # (the extension's: off again once no panel or pane asks)
    else:
        _StoryRecorder.install(scheduler.state)
    debugging = scheduler.extensions.get("debugging")
    paused = debugging.paused if debugging is not None else {}  # key -> {worker, file, line, ...}
    groups: dict[str, dict] = {}
    tasks = scheduler.state.tasks
    for ts in tasks.values():
        g = groups.get(ts.group)
        if g is None:
            g = groups[ts.group] = {"name": ts.group, "states": {}, "total": 0, "keys": [], "paused": 0}
        g["states"][ts.state] = g["states"].get(ts.state, 0) + 1
        g["total"] += 1
        rank = -1 if ts.key in paused else KEY_ORDER.get(ts.state, 6)  # paused first: they wait for someone
        g["keys"].append((rank, ts.key, ts.state))
        if ts.key in paused:
            g["paused"] += 1
    for g in groups.values():
        chosen = heapq.nsmallest(keys_per_group, g["keys"])  # (a plain sort of all keys: cheap)
        g["keys"] = [_key_row(k, s, tasks, paused) for _, k, s in sorted(chosen, key=lambda c: (c[0], natural_key(c[1])))]
    return {"groups": sorted(groups.values(), key=lambda g: g["name"]), "cost": time.perf_counter() - started}


def _key_row(key: str, state: str, tasks, paused: dict) -> dict:
    """A listed key, with the worker to debug it on when it failed there or is paused there.

    >>> _key_row("g-1", "processing", {}, {"g-1": {"worker": "tcp://w:1"}})
    {'key': 'g-1', 'state': 'processing', 'paused': True, 'worker': 'tcp://w:1'}
    >>> class Failed:
    ...     erred_on = "tcp://w:2"
    >>> _key_row("f-1", "erred", {"f-1": Failed()}, {})
    {'key': 'f-1', 'state': 'erred', 'worker': 'tcp://w:2'}
    """
    row = {"key": key, "state": state}
    if key in paused:
        row["paused"], row["worker"] = True, paused[key]["worker"]
    elif state == "erred":
        worker = getattr(tasks.get(key), "erred_on", None)
        if worker:
            row["worker"] = worker
    return row


def _story(key: str, scheduler=None) -> list:
    """The transitions of one key (runs in the scheduler), oldest first, each a dict:
    ``time`` (seconds since the epoch, None before the panel first looked at this scheduler),
    ``start``, ``finish``, ``worker`` (None when none) and ``stimulus_id`` (``key_story``)."""
    return key_story(scheduler, key)


def _story_now(key: str, scheduler=None) -> dict:
    """``{"story": _story(key), "now": ..., "holders": [...]}`` (runs in the scheduler): the
    transitions, what the key is doing now and why it is not running, in the scheduler's words
    (``SchedulerState.explain``), and the workers holding its value (a console there can read it)."""
    return {"story": _story(key, scheduler), "now": scheduler.state.explain(key),
            "holders": holders_of(scheduler, key)}


def _group_keys(group: str, scheduler=None) -> dict:
    """``{"group", "total", "keys": [{key, state, worker}]}`` of one task group (runs in the
    scheduler; ``telemetry.group_keys``): what the graph pane lists when a group is opened."""
    return group_keys(scheduler, group)


# --------------------------------------------------------------------------- in the Jupyter server
#: the panes a browser may watch -> the telemetry parts each needs
PANE_PARTS = {
    "task-stream": ("task-stream", "workers"),
    "progress": ("groups",),
    "worker-memory": ("workers",),
    "workers": ("workers",),
    "timeline": ("workers", "memory"),
    "logs": ("logs", "workers"),
    "story": (),  # (asked on demand: GET clusters/<id>/story?key=)
    "profile": ("profile",),
    "graph": ("groups",),
    "call-stack": ("stacks",),
}
#: seconds between two telemetry messages a browser may ask for
WATCH_INTERVAL = (0.25, 10.0)


def parse_watch(msg: dict) -> tuple[str, list[str], float, bool]:
    """(cluster id, panes, interval in seconds, reset) of a browser's watch message
    ``{"type": "watch", "cluster": id, "panes": [...], "interval": 0.5, "reset": false}``;
    ValueError saying what is wrong otherwise. No panes: stop watching that cluster.

    >>> parse_watch({"type": "watch", "cluster": "scheduler-1", "panes": ["progress", "workers"], "interval": 0.01})
    ('scheduler-1', ['progress', 'workers'], 0.25, False)
    >>> parse_watch({"type": "watch", "cluster": "s", "panes": ["graphs"]})
    Traceback (most recent call last):
    ...
    ValueError: unknown pane 'graphs': panes are task-stream, progress, worker-memory, workers, timeline, logs, story, profile, graph, call-stack
    """
    cluster = msg.get("cluster")
    if not isinstance(cluster, str) or not cluster or len(cluster) > 256:
        raise ValueError("a watch message needs \"cluster\": the id of a cluster (a string of 1 to 256 characters)")
    panes = msg.get("panes", [])
    if not isinstance(panes, list) or len(panes) > 32:
        raise ValueError("\"panes\" must be a list of pane names")
    for pane in panes:
        if pane not in PANE_PARTS:
            raise ValueError(f"unknown pane {pane!r}: panes are {', '.join(PANE_PARTS)}")
    interval = msg.get("interval", 1.0)
    if isinstance(interval, bool) or not isinstance(interval, (int, float)) or interval != interval:
        raise ValueError("\"interval\" must be a number of seconds")
    lo, hi = WATCH_INTERVAL
    return cluster, list(dict.fromkeys(panes)), min(max(float(interval), lo), hi), msg.get("reset") is True


def watch_parts(panes) -> list[str]:
    """The telemetry parts a set of panes needs, each once.

    >>> watch_parts(["task-stream", "worker-memory"])
    ['task-stream', 'workers']
    """
    return list(dict.fromkeys(p for pane in panes for p in PANE_PARTS[pane]))


def _summary(entry: dict, info: dict | None, error: str | None, owned: bool) -> dict:
    out = public_entry(entry)
    out["name"], out["named"] = cluster_name(entry)
    out["owned"] = owned
    if info is None:
        out.update(status="connecting" if error == "connecting" else "unreachable", error=error, workers=0, threads=0, memory=0, memory_limit=0)
        return out
    ws = info.get("workers", {}).values()
    out.update(
        status="running", error=None, workers=len(ws), threads=sum(w.get("nthreads", 0) for w in ws),
        memory=sum((w.get("memory") or {}).get("rss", 0) or 0 for w in ws),
        memory_limit=sum(w.get("memory_limit") or 0 for w in ws),
        tasks=info.get("tasks", {}), clients=info.get("clients", 0),
    )
    return out


def _worker_row(address: str, w: dict) -> dict:
    m = w.get("memory") or {}
    return {
        "address": address, "name": str(w.get("name", address)), "host": w.get("host"),
        "hostname": w.get("hostname"), "pid": w.get("pid"),
        "nthreads": w.get("nthreads", 0), "memory_limit": w.get("memory_limit") or 0,
        "managed": m.get("managed", 0) or 0, "unmanaged": m.get("unmanaged", 0) or 0,
        "spilled": m.get("spilled", 0) or 0, "rss": m.get("rss", 0) or 0,
        "processing": w.get("processing", 0), "in_memory": w.get("in_memory", 0), "status": w.get("status"),
    }


class ClusterMonitor:
    """One xsched Client per cluster, refreshed at most once per ``interval`` for everyone."""

    def __init__(self, interval: float = 1.0, request_timeout: float = 5.0, wait_per_refresh: float = 2.0,
                 connect_timeout: float = 5.0):
        self.interval = interval
        self.connect_timeout = connect_timeout  # seconds a new client waits for a scheduler
        self.wait_per_refresh = wait_per_refresh
        self._inflight: dict[str, asyncio.Future] = {}
        self._last: dict[str, tuple] = {}
        self._progress: dict[str, tuple] = {}  # address -> (group progress, when to ask again)
        self.request_timeout = request_timeout
        self._clients: dict[str, Any] = {}          # address -> xsched Client
        self._owned: dict[str, Any] = {}            # cluster id -> LocalCluster started by the panel
        self._lock = threading.Lock()
        self._pool = concurrent.futures.ThreadPoolExecutor(4, thread_name_prefix="xsched-lab")
        self._snapshot: dict | None = None
        self._snapshot_time = 0.0
        self._refreshing: asyncio.Future | None = None
        self.kernel_ids: dict[tuple[str, str], str] = {}   # (cluster id, target) -> jupyter kernel id

    # ---------------------------------------------------------------- plumbing
    async def _run(self, func, *args, timeout: float | None = None):
        loop = asyncio.get_running_loop()
        return await asyncio.wait_for(loop.run_in_executor(self._pool, func, *args),
                                      timeout or self.request_timeout)

    def _client(self, address: str):
        with self._lock:
            client = self._clients.get(address)
            if client is not None and getattr(client, "status", "running") == "running":
                return client
        client = Client(address, set_as_default=False, timeout=f"{self.connect_timeout}s", name="xsched-jupyterlab")
        with self._lock:
            old = self._clients.get(address)
            self._clients[address] = client
        if old is not None:
            _close_quietly(old)
        return client

    def _drop_client(self, address: str) -> None:
        with self._lock:
            client = self._clients.pop(address, None)
        if client is not None:
            self._pool.submit(_close_quietly, client)

    @staticmethod
    def _entries() -> list[dict]:
        return registry.entries()

    def _entry(self, cluster_id: str) -> dict:
        for e in self._entries():
            if e.get("id") == cluster_id:
                return e
        raise KeyError(cluster_id)

    def owned_ids(self) -> set[str]:
        return set(self._owned)

    # ---------------------------------------------------------------- snapshots
    def _fetch(self, entry: dict) -> tuple[dict | None, dict | None, str | None]:
        """(scheduler_info, group progress, error) of one cluster, in a worker thread."""
        address = entry["address"]
        try:
            client = self._client(address)
            info = client.scheduler_info()
            last, due = self._progress.get(address, (None, 0.0))
            if last is not None and time.monotonic() < due:
                return info, last, None  # (the last pass was long: its share of the scheduler is bounded)
            try:
                progress = client.run_on_scheduler(_group_progress)
            except Exception as e:  # an older scheduler: workers still shown
                progress = {"groups": [], "error": str(e)}
            cost = progress.get("cost") or 0.0
            self._progress[address] = (progress, time.monotonic() + max(self.interval, cost / PROGRESS_SHARE))
            return info, progress, None
        except Exception as e:
            self._drop_client(address)
            self._progress.pop(address, None)
            return None, None, f"{type(e).__name__}: {e}"

    async def snapshot(self, max_age: float | None = None) -> dict:
        """{"clusters": [summary...], "details": {id: detail}}; refreshed at most every interval."""
        max_age = self.interval if max_age is None else max_age
        if self._snapshot is not None and time.monotonic() - self._snapshot_time < max_age:
            return self._snapshot
        if self._refreshing is not None and not self._refreshing.done():
            return await asyncio.shield(self._refreshing)
        self._refreshing = asyncio.ensure_future(self._refresh())
        return await asyncio.shield(self._refreshing)

    async def _refresh(self) -> dict:
        entries = await self._run(self._entries)
        # one fetch in flight per cluster; a slow or unreachable one keeps its last answer
        # (or "connecting") instead of holding up the others
        futs = {}
        for e in entries:
            a = e["address"]
            f = self._inflight.get(a)
            if f is None or f.done():
                f = self._inflight[a] = asyncio.ensure_future(
                    self._run(self._fetch, e, timeout=self.request_timeout + 6))
            futs[a] = f
        if futs:
            await asyncio.wait(list(futs.values()), timeout=self.wait_per_refresh)
        results = []
        for e in entries:
            f = futs[e["address"]]
            if f.done():
                exc = None if f.cancelled() else f.exception()
                res = (None, None, f"{type(exc).__name__}: {exc}") if exc or f.cancelled() else f.result()
                self._last[e["address"]] = res
            else:
                res = self._last.get(e["address"], (None, None, "connecting"))
            results.append(res)
        for a in [a for a in self._inflight if a not in futs]:
            self._inflight.pop(a).cancel()  # its cluster left the registry: its answer is of no use
            self._last.pop(a, None)
            self._progress.pop(a, None)
        clusters, details = [], {}
        live = set()
        for entry, (info, progress, error) in zip(entries, results):
            live.add(entry["address"])
            owned = entry.get("id") in self._owned
            summary = _summary(entry, info, error, owned)
            clusters.append(summary)
            detail = dict(summary)
            detail["workers"] = sorted((_worker_row(a, w) for a, w in (info or {}).get("workers", {}).items()),
                                       key=lambda r: worker_order(r["name"], r["address"]))
            detail["n_workers"] = summary["workers"]
            detail["groups"] = (progress or {}).get("groups", [])
            detail["queued"] = (info or {}).get("queued", 0)
            details[entry.get("id")] = detail
        for address in [a for a in list(self._clients) if a not in live]:
            self._drop_client(address)  # its scheduler is gone
        self._snapshot = {"clusters": clusters, "details": details, "time": time.time()}
        self._snapshot_time = time.monotonic()
        return self._snapshot

    async def clusters(self) -> list[dict]:
        return (await self.snapshot())["clusters"]

    async def detail(self, cluster_id: str) -> dict:
        snap = await self.snapshot()
        if cluster_id not in snap["details"]:
            snap = await self.snapshot(max_age=0)  # just started?
        return snap["details"][cluster_id]

    # ---------------------------------------------------------------- telemetry
    async def address_of(self, cluster_id: str) -> str:
        """The scheduler address of a running cluster (KeyError: no such cluster any more),
        from the shared snapshot (at most one registry read per interval for everyone)."""
        snap = await self.snapshot()
        for c in snap["clusters"]:
            if c.get("id") == cluster_id:
                return c["address"]
        raise KeyError(cluster_id)

    async def telemetry(self, cluster_id: str, request: dict) -> dict:
        """One ``telemetry`` request (``xsched/scheduler/extensions/telemetry.py``) to a cluster's
        scheduler: ``request`` holds its fields (parts, since, memory_since, max_records).

        KeyError when the cluster went away; the scheduler's refusal or a lost connection raise
        as they are (the caller tells the browser)."""
        address = await self.address_of(cluster_id)
        client = await self._run(self._client, address)
        fields = {k: v for k, v in request.items() if v is not None}

        def ask():
            reply, _ = client._sync(client._conn.request({"op": ops.TELEMETRY, **fields},
                                                         timeout=self.request_timeout))
            return reply

        try:
            return await self._run(ask)
        except (OSError, asyncio.TimeoutError):
            self._drop_client(address)
            raise

    # ---------------------------------------------------------------- actions
    async def _entry_and_client(self, cluster_id: str) -> tuple[dict, Any]:
        """The registry entry of a cluster and a client of its scheduler; KeyError when gone."""
        entry = await self._run(self._entry, cluster_id)
        return entry, await self._run(self._client, entry["address"])

    async def story(self, cluster_id: str, key: str) -> dict:
        """``{"story": [...], "now": "..."}`` of a key (``_story_now``)."""
        _, client = await self._entry_and_client(cluster_id)
        return await self._run(client.run_on_scheduler, _story_now, key)

    async def group(self, cluster_id: str, group: str) -> dict:
        """The keys of one task group, those needing attention first (``_group_keys``)."""
        _, client = await self._entry_and_client(cluster_id)
        return await self._run(client.run_on_scheduler, _group_keys, group)

    async def interrupt(self, cluster_id: str, key: str) -> dict:
        """Interrupt task ``key`` where it runs now: ``{worker: [key]}`` (``client.interrupt``)."""
        _, client = await self._entry_and_client(cluster_id)
        return await self._run(functools.partial(client.interrupt, keys=[key]))

    async def kernel_info(self, cluster_id: str, target: str) -> tuple[dict, dict]:
        """(connection info, public description) of the kernel inside the scheduler or a worker.

        ``target`` is ``"scheduler"`` or a worker address. The kernel is started on demand
        (``start_ipython_scheduler`` / ``start_ipython_workers``) and keeps running in that process.
        """
        entry, client = await self._entry_and_client(cluster_id)

        def start():
            if target == "scheduler":
                info = client._sync(client._start_ipython_scheduler(), 70)
                return info, {"target": "scheduler", "name": f"scheduler {cluster_id}",
                              "hostname": entry.get("hostname")}
            infos = client._sync(client._start_ipython_workers([target]), 70)
            if target not in infos:
                raise KeyError(target)
            return infos[target], {"target": target, "name": f"worker {target}"}

        return await self._run(start, timeout=75)

    async def start_cluster(self, n_workers: int = 2, threads_per_worker: int = 1, **kwargs) -> dict:
        """Start a LocalCluster owned by this Jupyter server (processes: its scheduler too)."""

        def start():
            return LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker, **kwargs)

        cluster = await self._run(start, timeout=120)
        address = cluster.scheduler_address
        for _ in range(50):
            entries = await self._run(self._entries)
            match = [e for e in entries if e.get("address") == address]
            if match:
                self._owned[match[0]["id"]] = cluster
                self._snapshot = None
                return {"id": match[0]["id"], "address": address}
            await asyncio.sleep(0.1)
        await self._run(cluster.close, timeout=30)
        raise RuntimeError(f"the new cluster at {address} did not register itself")

    def _owned_cluster(self, cluster_id: str):
        try:
            return self._owned[cluster_id]
        except KeyError:
            raise PermissionError(f"cluster {cluster_id!r} was not started by this panel: scale or shut it "
                                  "down where it was created") from None

    async def scale(self, cluster_id: str, n: int) -> None:
        cluster = self._owned_cluster(cluster_id)
        await self._run(cluster.scale, n, timeout=120)
        self._snapshot = None

    async def shutdown(self, cluster_id: str) -> None:
        cluster = self._owned_cluster(cluster_id)
        address = cluster.scheduler_address
        self._drop_client(address)
        await self._run(cluster.close, timeout=60)
        self._owned.pop(cluster_id, None)
        self._snapshot = None

    def close(self) -> None:
        """Close every client and every cluster the panel started (server shutdown)."""
        for cluster in list(self._owned.values()):
            try:
                cluster.close()
            except Exception:
                logger.debug("closing a panel cluster failed", exc_info=True)
        self._owned.clear()
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for c in clients:
            _close_quietly(c)
        self._pool.shutdown(wait=False)


def _close_quietly(client) -> None:
    try:
        client.close(timeout=2)
    except Exception:
        logger.debug("closing a client failed", exc_info=True)
