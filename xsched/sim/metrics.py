"""What a simulated run costs, and how good its schedule is.

Why: the simulator exists to answer two questions at widths no test machine can start --
what do the scheduler's decisions cost as the cluster grows, and are they good -- and
the two answers must not leak into each other. So there are two kinds of figures:

- real CPU seconds spent *inside* the state machines: ``time.process_time`` around
  ``SchedulerState.handle`` and ``WorkerState.handle`` only (``Timed``), not around the
  simulator, the heap or the servers' message glue; per event (by event type) and per task;
- schedule quality in *virtual* time: the makespan against its lower bound
  ``max(critical path, total work / threads)`` and against an ideal list scheduler's
  (``Workload.list_makespan``: what any scheduler that learns durations only as tasks
  finish gets with no overhead at all), bytes moved between workers, the peak of
  managed memory (``WorkerState.nbytes_in_memory``) per worker, tasks run more than once.

Data flow::

    server glue --events--> Timed.handle --process_time()--> machine.handle --> instructions
                                  └── CpuLog.add(events, seconds)   (per event type)
    cluster --transfers, executions, memory--> Metrics --summary()--> one flat dict

>>> from xsched.scheduler.state import SchedulerState, AddWorker
>>> log = CpuLog()
>>> s = Timed(SchedulerState(), log)
>>> _ = s.handle(AddWorker("tcp://w", nthreads=2))
>>> dict(log.events), list(s.workers)
({'AddWorker': 1}, ['tcp://w'])
"""

from __future__ import annotations

import statistics
import time
from collections import Counter, defaultdict
from typing import Callable

__all__ = ["Timed", "CpuLog", "Metrics", "lower_bound"]

_clock = time.process_time


class CpuLog:
    """CPU seconds and counts by event type, for one kind of machine (the scheduler, or all
    workers together). A call with several events splits its seconds evenly among them.

    >>> log = CpuLog(); log.add([object(), object()], 0.004); log.calls, log.events["object"]
    (1, 2)
    >>> round(log.per_event_us(), 3)
    2000.0
    """

    __slots__ = ("cpu", "calls", "n_events", "events", "event_cpu")

    def __init__(self):
        self.cpu = 0.0
        self.calls = 0
        self.n_events = 0
        self.events: Counter = Counter()
        self.event_cpu: defaultdict = defaultdict(float)

    def add(self, events, seconds: float) -> None:
        """Count one ``handle`` call of ``events`` that took ``seconds`` of CPU.

        >>> log = CpuLog(); log.add(["a", "b"], 1.0); log.add([], 0.5); log.cpu, log.calls, dict(log.events)
        (1.5, 2, {'str': 2})
        """
        self.cpu += seconds
        self.calls += 1
        n = len(events)
        self.n_events += n
        share = seconds / n if n else 0.0
        for ev in events:
            name = type(ev).__name__
            self.events[name] += 1
            self.event_cpu[name] += share

    def per_event_us(self, exclude: tuple = ()) -> float:
        """Microseconds of CPU per event (leaving out the event types ``exclude``).

        >>> CpuLog().per_event_us()
        0.0
        """
        n = self.n_events - sum(self.events[e] for e in exclude)
        cpu = self.cpu - sum(self.event_cpu[e] for e in exclude)
        return 1e6 * cpu / n if n else 0.0

    def by_event(self) -> dict:
        """``{event type: [count, microseconds per event]}``, most CPU first.

        >>> log = CpuLog(); log.add([1], 1e-6); log.by_event()
        {'int': [1, 1.0]}
        """
        names = sorted(self.events, key=lambda e: -self.event_cpu[e])
        return {e: [self.events[e], round(1e6 * self.event_cpu[e] / self.events[e], 2)] for e in names}


class Timed:
    """A state machine whose ``handle`` is timed into ``log``; every other attribute is the
    machine's own. ``after(machine)`` runs after each call (outside the timing);
    ``profiler`` (a ``cProfile.Profile``) is enabled for the calls only.

    >>> from xsched.worker.state import WorkerState, ComputeTask
    >>> log = CpuLog(); w = Timed(WorkerState(nthreads=1), log)
    >>> [type(i).__name__ for i in w.handle(ComputeTask("a", b"x"))], w.nthreads, log.calls
    (['Execute'], 1, 1)
    """

    __slots__ = ("machine", "log", "after", "profiler")

    def __init__(self, machine, log: CpuLog, after: Callable | None = None, profiler=None):
        self.machine = machine
        self.log = log
        self.after = after
        self.profiler = profiler

    def handle(self, *events) -> list:
        """The machine's ``handle(*events)``, timed (and profiled, when asked).

        >>> from xsched.scheduler.state import SchedulerState, AddWorker
        >>> log = CpuLog(); Timed(SchedulerState(), log).handle(AddWorker("tcp://w")), log.n_events
        ([], 1)
        """
        prof = self.profiler
        if prof is not None:
            prof.enable()
        t0 = _clock()
        out = self.machine.handle(*events)
        dt = _clock() - t0
        if prof is not None:
            prof.disable()
        self.log.add(events, dt)
        if self.after is not None:
            self.after(self.machine)
        return out

    def __getattr__(self, name):
        return getattr(self.machine, name)


def lower_bound(critical_path: float, total_work: float, threads: int, resource_bound: float = 0.0) -> float:
    """No schedule finishes before its longest chain, nor before its work spread evenly
    over the threads (nor before the work needing a resource spread over what is offered).

    >>> lower_bound(2.0, 100.0, 10), lower_bound(20.0, 100.0, 10), lower_bound(2.0, 100.0, 10, 30.0)
    (10.0, 20.0, 30.0)
    """
    return max(critical_path, total_work / max(threads, 1), resource_bound)


class Metrics:
    """Everything one run measured (the cluster fills it in as it goes).

    >>> m = Metrics(); m.started.update(["a", "a", "b"]); m.summary_counts()["recomputed"]
    1
    """

    def __init__(self):
        self.scheduler = CpuLog()
        self.workers = CpuLog()
        self.messages: Counter = Counter()  # op -> messages sent (scheduler <-> workers, client)
        self.transfers = 0  # gather-dep requests between workers
        self.bytes_moved = 0  # bytes those delivered
        self.started: Counter = Counter()  # key -> times a worker started running it
        self.ran_on: dict = {}  # key -> [worker that started it, ...]
        self.lost_executions = 0  # running on a worker when it died
        self.peak_memory: dict = {}  # worker -> peak WorkerState.nbytes_in_memory
        self.dropped_messages = 0  # to a worker that was gone
        self.scheduler_wait = 0.0  # (charge_cpu) the longest a message waited for the busy scheduler

    def note_memory(self, address: str, nbytes: int) -> None:
        """Keep the peak managed memory of ``address``.

        >>> m = Metrics(); m.note_memory("w", 5); m.note_memory("w", 3); m.peak_memory
        {'w': 5}
        """
        if nbytes > self.peak_memory.get(address, 0):
            self.peak_memory[address] = nbytes
        elif address not in self.peak_memory:
            self.peak_memory[address] = nbytes

    def summary_counts(self) -> dict:
        """Executions, recomputations (runs beyond the first of a key), transfers, bytes.

        >>> Metrics().summary_counts()
        {'executions': 0, 'recomputed': 0, 'lost_executions': 0, 'transfers': 0, 'bytes_moved': 0}
        """
        return {
            "executions": sum(self.started.values()),
            "recomputed": sum(n - 1 for n in self.started.values() if n > 1),
            "lost_executions": self.lost_executions,
            "transfers": self.transfers,
            "bytes_moved": self.bytes_moved,
        }

    def summary(self, n_tasks: int, makespan: float | None, critical_path: float, total_work: float,
                threads: int, resource_bound: float = 0.0, list_makespan: float | None = None) -> dict:
        """One flat dict of every figure (``benchmarks/sim.py`` prints it as JSON).
        ``list_makespan``: an ideal list scheduler's (``Workload.list_makespan``), the
        reference for ``makespan_vs_list``.

        >>> s = Metrics().summary(10, 5.0, 1.0, 20.0, 8, list_makespan=4.0)
        >>> s["lower_bound"], s["makespan_ratio"], s["makespan_vs_list"], s["peak_memory_per_worker"]
        (2.5, 2.0, 1.25, {'max': 0, 'median': 0})
        """
        lb = lower_bound(critical_path, total_work, threads, resource_bound)
        peaks = list(self.peak_memory.values()) or [0]
        n = max(n_tasks, 1)
        return {
            "tasks": n_tasks,
            "makespan": makespan,
            "critical_path": round(critical_path, 6),
            "total_work": round(total_work, 6),
            "resource_bound": round(resource_bound, 6),
            "lower_bound": round(lb, 6),
            "makespan_ratio": round(makespan / lb, 4) if makespan is not None and lb > 0 else None,
            "list_makespan": None if list_makespan is None else round(list_makespan, 6),
            "makespan_vs_list": (round(makespan / list_makespan, 4)
                                 if makespan is not None and list_makespan else None),
            "cpu_per_task_us": round(1e6 * self.scheduler.cpu / n, 2),
            "cpu_per_event_us": round(self.scheduler.per_event_us(), 2),
            "cpu_per_event_us_excl_heartbeats": round(self.scheduler.per_event_us(("WorkerHeartbeat",)), 2),
            "scheduler_cpu_s": round(self.scheduler.cpu, 4),
            "scheduler_events": self.scheduler.n_events,
            "worker_cpu_per_task_us": round(1e6 * self.workers.cpu / n, 2),
            "worker_cpu_per_event_us": round(self.workers.per_event_us(), 2),
            "worker_events": self.workers.n_events,
            **self.summary_counts(),
            "peak_memory_per_worker": {"max": max(peaks), "median": int(statistics.median(peaks))},
            "messages": dict(sorted(self.messages.items())),
            "dropped_messages": self.dropped_messages,
            "scheduler_by_event": self.scheduler.by_event(),
            "worker_by_event": self.workers.by_event(),
        }
