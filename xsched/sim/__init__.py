"""A discrete-event simulator that drives xsched's real scheduler and worker state machines.

Why: the scheduler's decisions (placement, queuing, stealing, recovery) and their CPU cost
depend on the cluster's width and the workload's shape, and neither 1,000 workers nor a
reproducible worker death fit on a test machine. The state machines are pure (events in,
instructions out), so this package runs the real ``SchedulerState`` and one real
``WorkerState`` per simulated worker in *virtual* time, with no sockets or threads,
translating messages through the real servers' own handlers. It measures the real CPU
spent inside the state machines and the schedule's quality in virtual time.

Modules: ``loop`` (virtual time), ``servers`` (the real ``Scheduler``/``Worker`` minus
sockets), ``cluster`` (workers, network, client, joins and deaths), ``workloads``
(graphs with durations and sizes from a seed), ``metrics`` (CPU and quality figures).
``benchmarks/sim.py`` runs it from the command line.

>>> from xsched.sim import simulate, make
>>> r = simulate(make("tree", tasks=100, seed=1), workers=4, threads=2)
>>> r["completed"], r["tasks"], r["recomputed"], r["makespan_ratio"] < 2
(True, 102, 0, True)
"""

from __future__ import annotations

import math

from .cluster import CLIENT, Cluster
from .loop import Loop
from .metrics import CpuLog, Metrics, Timed, lower_bound
from .workloads import WORKLOADS, SimTask, Workload, make, map_tasks, movie, resources, shuffle, tree

__all__ = [
    "simulate", "setup", "Cluster", "CLIENT", "Loop", "Metrics", "CpuLog", "Timed", "lower_bound",
    "Workload", "SimTask", "WORKLOADS", "make", "map_tasks", "tree", "movie", "shuffle", "resources",
]


def setup(workload: Workload, workers: int = 10, threads: int = 8, *, joins=(), deaths=(), leaves=(),
          **options) -> Cluster:
    """A cluster of ``workers`` x ``threads`` with ``workload`` submitted at time 0, not run yet.

    ``joins``: times at which one more worker joins; ``deaths`` / ``leaves``: ``(time,
    worker index)`` at which a worker dies / retires. Worker ``i`` (in order of joining)
    offers ``workload.worker_resources(i)``. ``options`` go to :class:`Cluster`.

    >>> c = setup(make("map", tasks=10), workers=2, threads=1, deaths=[(1.5, 0)])
    >>> r = c.run(); r["completed"], r["lost_executions"], c.workers["sim://worker-0"].alive
    (True, 1, False)
    """
    c = Cluster(threads, **options)
    for i in range(workers):
        c.add_worker(resources=workload.worker_resources(i))
    c.submit(workload)
    for i, at in enumerate(joins, start=workers):
        c.add_worker(at=at, resources=workload.worker_resources(i))
    for at, index in deaths:
        c.kill_worker(index, at=at)
    for at, index in leaves:
        c.retire_worker(index, at=at)
    return c


def simulate(workload: Workload, workers: int = 10, threads: int = 8, *, until: float = math.inf,
             **options) -> dict:
    """Run ``workload`` on a fresh simulated cluster (see :func:`setup`); the summary dict.

    >>> r = simulate(map_tasks(64, jitter=0), workers=4, threads=4)
    >>> r["completed"], r["makespan_ratio"] < 1.01, r["bytes_moved"], r["workers"]
    (True, True, 0, 4)
    """
    return setup(workload, workers, threads, **options).run(until)
