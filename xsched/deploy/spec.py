"""One cluster mechanism for every way of deploying: a scheduler, worker groups, launchers.

A cluster is a scheduler plus a set of *worker groups*. Each group is started, polled
and stopped by a :class:`Launcher`: a local nanny process, an ``ssh`` connection running
``xsched worker --nworkers N`` on a host, or a batch job. ``SpecCluster`` holds what is
the same everywhere: ``scale`` (in workers or in whole groups), ``adapt``, ``close``,
the repr and the notebook display. Subclasses only say how to start a scheduler and
what a new group is.

    SpecCluster --start--> scheduler (a process here, or over ssh)
        scale(n) / adapt --> _new_group(name) -> Launcher.start()   (one group = N workers)
        poll (once per interval, e.g. one squeue call) -> Launcher.status()
        close --> Launcher.stop() for every group, then the scheduler

Workers name themselves after their group (``<group>`` or ``<group>-<i>``), which is how
the scheduler's view of workers maps back to groups for adaptive scaling.

>>> from xsched.deploy import LocalCluster
>>> cluster = LocalCluster(n_workers=1, dashboard_address=None)
>>> cluster.scale(2)                          # two groups of one worker each
>>> sorted(cluster.workers)
['0', '1']
>>> adaptive = cluster.adapt(minimum=1, maximum=4)   # from now on, with the scheduler's load
>>> cluster.close()
"""

from __future__ import annotations

import html
import logging
import math
import threading
import time
import weakref
from typing import Any

from .. import hooks
from ..client.rpc import SchedulerRPC
from ..protocol.addressing import dashboard_link
from ..units import format_bytes, parse_bytes, parse_timedelta
from .adaptive import AdaptivePolicy, Job, JobLoad, SchedulerView, _count

logger = logging.getLogger("xsched.deploy")

__all__ = ["Launcher", "SpecCluster", "Adaptive", "PENDING", "RUNNING", "FINISHED"]

PENDING, RUNNING, FINISHED = "pending", "running", "finished"
_UNKNOWN = object()  # a cluster's dashboard before anyone asked its scheduler


class Launcher:
    """Starts, polls and stops one worker group. Subclasses: process, ssh, batch job.

    ``nworkers`` worker processes run in the group; they are named ``name`` (one) or
    ``name-0``, ``name-1``... (several).
    """

    kind = "worker group"

    def __init__(self, name: str, nworkers: int = 1):
        self.name = name
        self.nworkers = int(nworkers)
        self.started_at: float | None = None

    def start(self) -> None:
        """Start the group without waiting for its workers to register."""
        raise NotImplementedError

    def status(self) -> str:
        """``pending`` (asked for, not running yet), ``running`` or ``finished``."""
        raise NotImplementedError

    def stop(self, timeout: float = 10) -> None:
        """Stop the group and everything it started; safe to call twice."""
        raise NotImplementedError

    def terminate(self) -> None:
        """Ask the group to stop without waiting (``stop`` follows); optional."""

    def owns(self, worker_name: str | None) -> bool:
        """Whether a worker with this name belongs to this group."""
        if not worker_name:
            return False
        return worker_name == self.name or worker_name.startswith(self.name + "-")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} workers={self.nworkers} status={self.status()}>"


class SpecCluster:
    """A scheduler and worker groups; what every xsched cluster class shares.

    Subclasses implement ``_start_scheduler`` (setting ``scheduler_address``,
    ``security`` and ``scheduler_file``, and ``_dashboard`` when they know it without
    asking the scheduler), ``_stop_scheduler`` and ``_new_group``.
    """

    kind = "SpecCluster"
    #: the scheduler's dashboard page (schemas.DASHBOARD: port, token, host) or None; asked
    #: of the scheduler the first time dashboard_link is read unless the subclass knows it
    _dashboard = _UNKNOWN

    def __init__(self, *, workers_per_group: int = 1, threads_per_worker: int = 1, memory_limit: int | None = None,
                 timeout: float = 60, name: str | None = None):
        self.workers_per_group = int(workers_per_group)
        self.threads_per_worker = int(threads_per_worker)
        self.memory_limit = memory_limit
        self.timeout = float(timeout)
        self.name = name or self.kind
        self.status = "created"  # (the property: "failed" while its scheduler is gone)
        self.scheduler_address: str | None = None
        self.security = None
        self.scheduler_file: str | None = None
        self.groups: dict[str, Launcher] = {}
        self._next = 0
        self._lock = threading.RLock()
        self._adaptive: Adaptive | None = None

    # ------------------------------------------------------------------ hooks
    def _start_scheduler(self) -> None:
        raise NotImplementedError

    def _stop_scheduler(self, timeout: float) -> None:
        raise NotImplementedError

    def _new_group(self, name: str) -> Launcher:
        raise NotImplementedError

    def _group_name(self, index: int) -> str:
        return str(index)

    def _poll(self) -> None:
        """Refresh every group's status (batch clusters ask the queue once for all)."""

    def _scheduler_failure(self) -> str | None:
        """Why the scheduler is gone though nobody closed the cluster (its process died), or
        None: running, or not known here."""
        return None

    # ------------------------------------------------------------------ status
    @property
    def status(self) -> str:
        """``created``, ``running``, ``failed`` (its scheduler died: ``close()`` cleans up what is
        left), ``closing`` or ``closed``, as dask's cluster statuses.

        >>> from xsched import LocalCluster
        >>> cluster = LocalCluster(n_workers=0, dashboard_address=None)
        >>> cluster.status
        'running'
        >>> cluster.close()
        >>> cluster.status
        'closed'
        """
        if self._status == "running" and self._scheduler_failure() is not None:
            return "failed"
        return self._status

    @status.setter
    def status(self, value: str) -> None:
        self._status = value

    # ------------------------------------------------------------------ lifecycle
    def _start(self, n_groups: int = 0, wait: bool = True) -> None:
        try:
            self._start_scheduler()
            self.status = "running"
            self._add_groups(n_groups)
            if wait and n_groups:
                self.wait_for_workers(n_groups * self.workers_per_group)
        except BaseException:
            self.close()
            raise

    def _add_groups(self, k: int) -> list[str]:
        names = []
        with self._lock:
            for _ in range(max(int(k), 0)):
                name = self._group_name(self._next)
                self._next += 1
                group = self._new_group(name)
                group.started_at = time.monotonic()
                group.start()
                self.groups[name] = group
                names.append(name)
        return names

    def _remove_groups(self, names, timeout: float = 10) -> None:
        with self._lock:
            groups = [self.groups.pop(n) for n in list(names) if n in self.groups]
        for g in groups:  # ask all to stop first, so they shut down side by side
            try:
                g.terminate()
            except Exception:
                pass
        for g in groups:
            try:
                g.stop(timeout)
            except Exception:
                logger.exception("stopping %r failed", g)

    def _live_groups(self) -> dict[str, Launcher]:
        """Groups pending or running (polled now)."""
        self._poll()
        with self._lock:
            return {n: g for n, g in self.groups.items() if g.status() != FINISHED}

    def _prune(self) -> None:
        """Forget groups that ended (a walltime, a crash): scaling replaces them."""
        live = self._live_groups()
        with self._lock:
            for name in [n for n in self.groups if n not in live]:
                del self.groups[name]

    @property
    def n_workers(self) -> int:
        """Worker processes asked for (pending or running groups)."""
        return sum(g.nworkers for g in self._live_groups().values())

    @property
    def workers(self) -> dict[str, Launcher]:
        """Group name -> its launcher (a process, an ssh connection, a batch job), ended ones too."""
        return dict(self.groups)

    def scale(self, n: int | None = None, *, jobs: int | None = None, cores: int | None = None,
              memory: Any = None, wait: bool = True) -> None:
        """Grow or shrink to ``n`` workers, or to ``jobs`` whole groups (rounded up to whole
        groups), or, as dask's, to as many workers as give ``cores`` threads or ``memory``
        (bytes or "64GB") in all (the most workers of those asked for).

        >>> from xsched import LocalCluster
        >>> cluster = LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None)
        >>> cluster.scale(2)
        >>> cluster.n_workers
        2
        >>> cluster.scale(cores=1)    # as many workers as give one thread in all
        >>> cluster.n_workers
        1
        >>> cluster.scale(jobs=2)     # (a batch cluster's job may hold several workers)
        >>> cluster.close()
        """
        if cores is not None or memory is not None:
            if jobs is not None:
                raise ValueError("give scale() jobs= or cores=/memory=, not both")
            n = self._workers_for(n, cores, memory)
        if (n is None) == (jobs is None):
            raise ValueError("give scale() either n (workers) or jobs= (whole worker groups), not both")
        if n is not None and (not isinstance(n, int) or n < 0) or jobs is not None and (
                not isinstance(jobs, int) or jobs < 0):
            raise ValueError(f"scale() takes a whole number >= 0, not {n if n is not None else jobs!r}")
        target = jobs if jobs is not None else math.ceil(n / self.workers_per_group)
        if self._adaptive is not None:
            self._adaptive.stop()  # an explicit scale ends adaptive scaling, as users expect
            self._adaptive = None
        self._prune()
        live = self._live_groups()
        if target > len(live):
            self._add_groups(target - len(live))
        elif target < len(live):
            self._remove_groups(sorted(live, key=lambda k: live[k].started_at or 0, reverse=True)[:len(live) - target])
        if wait and target:
            self.wait_for_workers(target * self.workers_per_group)

    def _workers_for(self, n: int | None, cores: Any, memory: Any) -> int:
        """The workers ``scale(n, cores=, memory=)`` asks for: the most of each's need."""
        need = [n or 0]
        if cores is not None:
            if isinstance(cores, bool) or not isinstance(cores, int) or cores < 0:
                raise ValueError(f"scale(cores=...) takes a whole number of threads >= 0, not {cores!r}")
            need.append(math.ceil(cores / max(self.threads_per_worker, 1)))
        if memory is not None:
            if not self.memory_limit:
                raise ValueError(f"scale(memory=...): the workers of {self!r} have no memory limit, so no number of "
                                 "them makes an amount of memory; give n or cores=")
            need.append(math.ceil(parse_bytes(memory) / self.memory_limit))
        return max(need)

    def adapt(self, minimum: int | None = None, maximum: int | None = None, *, minimum_jobs: int | None = None,
              maximum_jobs: int | None = None, interval="1s", wait_count: int = 3,
              pending_grace="60s") -> "Adaptive":
        """Scale with the scheduler's load between bounds (in workers, or in whole jobs).

        >>> from xsched import LocalCluster
        >>> cluster = LocalCluster(n_workers=1, dashboard_address=None)
        >>> cluster.adapt(minimum=1, maximum=4)
        <Adaptive AdaptivePolicy(minimum_jobs=1, maximum_jobs=4, ...) every 1s>
        >>> cluster.adapt(minimum=1, maximum="x")
        Traceback (most recent call last):
        ...
        ValueError: maximum='x' must be a whole number >= 0.
        >>> cluster.close()
        """
        bounds = {"minimum": minimum, "maximum": maximum, "minimum_jobs": minimum_jobs, "maximum_jobs": maximum_jobs}
        for name, value in bounds.items():  # (before any arithmetic on them)
            if value is not None:
                _count(name, value)
        for low, high in (("minimum", "maximum"), ("minimum_jobs", "maximum_jobs")):
            if bounds[low] is not None and bounds[high] is not None and bounds[high] < bounds[low]:
                raise ValueError(f"{high}={bounds[high]} is below {low}={bounds[low]}.")
        per = self.workers_per_group
        lo = minimum_jobs if minimum_jobs is not None else math.ceil((minimum or 0) / per)
        hi = maximum_jobs if maximum_jobs is not None else (math.ceil(maximum / per) if maximum is not None else None)
        memory = self.memory_limit * per if self.memory_limit else None
        policy = AdaptivePolicy(minimum_jobs=lo, maximum_jobs=hi, workers_per_job=per,
                                threads_per_worker=self.threads_per_worker, memory_per_job=memory,
                                wait_count=wait_count, pending_grace=parse_timedelta(pending_grace))
        if self._adaptive is not None:
            self._adaptive.stop()
        self._adaptive = Adaptive(self, policy, parse_timedelta(interval))
        return self._adaptive

    def wait_for_workers(self, n_workers: int = -1, timeout: float | None = None) -> None:
        """Block until ``n_workers`` workers have registered with the scheduler (the default,
        -1: as many as the cluster asked for, ``cluster.n_workers``), as dask's.

        >>> from xsched import LocalCluster
        >>> cluster = LocalCluster(n_workers=2, dashboard_address=None)
        >>> cluster.wait_for_workers(n_workers=2, timeout=30)
        >>> cluster.close()
        """
        n = self.n_workers if n_workers == -1 else n_workers
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"wait_for_workers: n_workers must be a number of workers (or -1: all asked for), "
                             f"got {n_workers!r}")
        timeout = self.timeout if timeout is None else timeout
        with SchedulerRPC(self, timeout=self.timeout, name="cluster") as rpc:
            try:
                rpc.wait_for_workers(n, timeout=timeout)
            except TimeoutError:
                raise TimeoutError(f"only some of {n} workers of {self!r} registered within {timeout:.0f}s; "
                                   f"{self._where_logs_are()}") from None

    def _where_logs_are(self) -> str:
        return "check the workers' logs"

    def get_client(self) -> Any:
        """A Client of this cluster: the one this method made before while it is open, else
        a new one (which becomes the default client), as dask's ``cluster.get_client()``.

        >>> from xsched import LocalCluster
        >>> cluster = LocalCluster(n_workers=1, dashboard_address=None)
        >>> client = cluster.get_client()
        >>> client is cluster.get_client()
        True
        >>> client.close(); cluster.close()
        """
        from ..client.client import Client  # (deploy sits above the client layer)

        made = self.__dict__.get("_made_client")
        client = made() if made is not None else None
        if client is None or client.status in ("closing", "closed"):
            client = Client(self)
            self._made_client = weakref.ref(client)
        return client

    def get_logs(self, scheduler: bool = True, workers: bool = True, n: int | None = None) -> dict:
        """The recent log records of the scheduler and of each worker, as dask's
        ``cluster.get_logs()`` gives them: ``{"Scheduler": [(level, message), ...],
        worker address: [...]}`` (``n``: the last ``n`` of each; see
        ``Client.get_scheduler_logs``). A worker that died took its records with it: the
        cluster's error says where its processes' own output went.

        >>> from xsched import LocalCluster
        >>> with LocalCluster(n_workers=1, dashboard_address=None) as cluster:
        ...     sorted(cluster.get_logs())[0]
        'Scheduler'
        """
        from ..client.client import Client  # (a cluster of this process asks as a client does)

        if self.status != "running":
            raise RuntimeError(f"{self!r} is not running: its scheduler and workers are gone, and their records "
                               f"with them; {self._where_logs_are()}")
        logs: dict = {}
        with Client(self, set_as_default=False, timeout=self.timeout) as client:
            if scheduler:
                logs["Scheduler"] = client.get_scheduler_logs(n=n)
            if workers:
                logs.update(client.get_worker_logs(n=n))
        return logs

    @property
    def dashboard_link(self) -> str | None:
        """The URL of the scheduler's dashboard page, its token included, or None when the
        scheduler serves none (or the cluster is not running).

        >>> from xsched import LocalCluster
        >>> with LocalCluster(n_workers=1) as cluster:
        ...     cluster.dashboard_link
        'http://127.0.0.1:.../status?token=...'
        """
        if self.status != "running" or not self.scheduler_address:
            return None
        if self._dashboard is _UNKNOWN:  # (SSH and batch clusters: the scheduler says, once)
            with SchedulerRPC(self, timeout=self.timeout, name="cluster") as rpc:
                self._dashboard = rpc.dashboard
        return dashboard_link(self._dashboard, self.scheduler_address)

    def close(self, timeout: float = 10) -> None:
        """Stop adaptive scaling, every worker group, then the scheduler."""
        if self.status == "closed":
            return
        self.status = "closing"
        if self._adaptive is not None:
            self._adaptive.stop()
            self._adaptive = None
        self._remove_groups(list(self.groups), timeout)
        try:
            self._stop_scheduler(timeout)
        finally:
            self.status = "closed"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------------ display
    def _describe(self) -> str:
        mem = format_bytes(self.memory_limit) if self.memory_limit else "no limit"
        return f"threads per worker: {self.threads_per_worker}, memory per worker: {mem}"

    def __repr__(self) -> str:
        n = sum(g.nworkers for g in self.groups.values())
        mem = format_bytes(self.memory_limit) if self.memory_limit else "no limit"
        adaptive = ", adaptive" if self._adaptive is not None else ""
        named = f", name={self.name!r}" if self.name != self.kind else ""
        link = self._link_or_none()
        dashboard = f", dashboard={link}" if link else ""
        status = self.status
        if status == "failed":
            status += f" ({self._scheduler_failure()}; close() it)"
        return (f"{self.kind}({self.scheduler_address!r}{named}, workers={n}, threads={n * self.threads_per_worker}, "
                f"memory={mem} per worker, status={status}{adaptive}{dashboard})")

    def _link_or_none(self) -> str | None:
        """``dashboard_link``, or None when the scheduler cannot say (a display never raises)."""
        try:
            return self.dashboard_link
        except Exception:
            return None

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td>{html.escape(name)}</td><td>{html.escape(g.kind)}</td><td>{g.nworkers}</td>"
                       f"<td>{html.escape(g.status())}</td></tr>" for name, g in sorted(self.groups.items()))
        table = (f"<table><tr><th>group</th><th>kind</th><th>workers</th><th>status</th></tr>{rows}</table>"
                 if rows else "")
        link = self._link_or_none()
        dashboard = (f"<br>dashboard: <a href=\"{html.escape(link)}\" target=\"_blank\" rel=\"noopener noreferrer\">"
                     f"{html.escape(link.partition('?')[0])}</a>" if link else "")
        return (f"<b>{html.escape(self.kind)}</b> <code>{html.escape(str(self.scheduler_address))}</code> "
                f"({html.escape(self.status)})<br>{html.escape(self._describe())}{dashboard}{table}")


    def _ipython_display_(self, **kwargs):
        """The live widget with a Scale button, which xsched.jupyter registers (jupyter/widgets.py)."""
        hooks.ipython_display(self)


class Adaptive:
    """Scales a cluster with its scheduler's load, one decision per interval, in a thread.

    The decision itself is :class:`~xsched.deploy.adaptive.AdaptivePolicy` (pure, unit
    tested); this only gathers the scheduler's view and carries decisions out.
    """

    def __init__(self, cluster: SpecCluster, policy, interval: float):
        self.cluster = cluster
        self.policy = policy
        self.interval = float(interval)
        self.log: list = []  # (time, decision) of every non-empty decision, newest last
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="xsched-adaptive", daemon=True)
        self._thread.start()

    def __repr__(self) -> str:
        return f"<Adaptive {self.policy!r} every {self.interval:g}s>"

    def _view(self, client):
        info = client.scheduler_info()
        groups = self.cluster._live_groups()
        load: dict = {}
        processing = memory = 0
        for w in info["workers"].values():
            processing += w.get("processing", 0)
            memory += w.get("nbytes", 0) or 0
            for name, g in groups.items():
                if g.owns(w.get("name")):
                    old = load.get(name, JobLoad())
                    load[name] = JobLoad(old.workers + 1, old.tasks + w.get("processing", 0),
                                         old.memory + (w.get("nbytes", 0) or 0))
        states = info.get("tasks", {})
        # ready tasks without a thread: queued ones, and those no worker can run yet (none exists)
        waiting = int(states.get("queued", 0)) + int(states.get("no-worker", 0))
        return SchedulerView(queued=waiting, processing=processing, memory_used=memory, load=load), groups

    def step(self, client) -> object:
        """One interval: look, decide, act. Returns the decision."""
        view, groups = self._view(client)
        now = time.monotonic()
        jobs = [Job(name, g.status(), g.started_at or now) for name, g in groups.items()]
        decision = self.policy.decide(view, jobs, now)
        if decision:
            self.log.append((time.time(), decision))
            logger.info("adaptive: %s", decision.reason)
            if decision.cancel:
                self._retire(client, decision.cancel, groups)
            if decision.start:
                self.cluster._add_groups(decision.start)
        return decision

    def _retire(self, client, names, groups) -> None:
        """Move data off the groups' workers first (when the client can), then stop them."""
        retire = getattr(client, "retire_workers", None)
        addrs = [a for a, w in client.scheduler_info()["workers"].items()
                 if any(groups[n].owns(w.get("name")) for n in names if n in groups)]
        if retire is not None and addrs:
            try:
                retire(workers=addrs)
            except Exception as e:  # stopping them anyway: the scheduler recomputes what was lost
                logger.warning("adaptive: retiring %s failed (%s); stopping them", addrs, e)
        self.cluster._remove_groups(names)

    def _run(self) -> None:
        client = None  # a SchedulerRPC: scheduler_info() and retire_workers() are all a step needs
        try:
            while not self._stop.is_set():
                try:
                    if client is None:
                        client = SchedulerRPC(self.cluster, timeout=self.cluster.timeout, name="adaptive")
                    self.step(client)
                except Exception:
                    if self._stop.is_set():
                        return
                    logger.exception("adaptive scaling step failed; trying again next interval")
                self._stop.wait(self.interval)
        finally:
            if client is not None:
                try:
                    client.close()
                except Exception:
                    pass

    def stop(self) -> None:
        """End adaptive scaling (the cluster keeps the groups it has)."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=30)
