"""When to submit and when to cancel batch jobs: the adaptive scaling decision, with no I/O.

A batch cluster calls :meth:`AdaptivePolicy.decide` once per interval with what the scheduler
sees (:class:`SchedulerView`) and the jobs it has (:class:`Job`), and carries out the returned
:class:`Decision`: submit ``start`` jobs, retire and cancel the jobs in ``cancel``. The policy
keeps only the memory needed for hysteresis, and never reads a clock: ``now`` comes in, so a test
can replay any sequence of intervals exactly.

Why the rules are what they are:

* **Up at once.** Work that waits costs the user time, and a batch job may itself wait in the
  queue for minutes, so the policy asks for every job the queued and processing tasks (or the
  memory held) could use right away, up to ``maximum_jobs``. Pending jobs count as jobs we have,
  so a long queue wait does not pile up more submissions.
* **Down slowly.** Jobs are expensive to get back, and task graphs have lulls (a reduction, a
  client computing locally between submissions). Only after ``wait_count`` consecutive intervals
  that all wanted fewer jobs does the policy cancel, and then only down to the *largest* of those
  wishes.
* **Grace for pending jobs.** A job we just submitted is not cancelled while it is still pending
  within ``pending_grace`` seconds: a short burst of work must not throw away our place in the
  queue, and flapping submit/cancel cycles annoy batch administrators.
* **Whole jobs, cheapest first.** Jobs are the unit the batch system knows. Pending jobs past the
  grace period go first (they hold nothing), then running jobs with no tasks and the least data
  (retiring them moves the least), oldest first (they have the least walltime left).

>>> from xsched.deploy.adaptive import AdaptivePolicy, SchedulerView, Job
>>> policy = AdaptivePolicy(minimum_jobs=0, maximum_jobs=10, workers_per_job=2, threads_per_worker=4)
>>> policy.decide(SchedulerView(queued=30, processing=0), jobs=[], now=0.0).start
4
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..units import format_bytes, parse_bytes

__all__ = ["AdaptivePolicy", "SchedulerView", "JobLoad", "Job", "Decision"]

PENDING, RUNNING, FINISHED = "pending", "running", "finished"


def _count(name: str, value, minimum: int = 0) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name}={value!r} must be a whole number >= {minimum}.")
    return value


@dataclass(frozen=True)
class JobLoad:
    """What one job's workers are doing, as the scheduler sees it.

    >>> JobLoad(workers=2, tasks=0, memory=0).idle
    True
    """

    workers: int = 0  # worker processes of this job connected to the scheduler
    tasks: int = 0    # tasks processing on them
    memory: int = 0   # bytes of data they hold

    @property
    def idle(self) -> bool:
        """No task is running on any of the job's workers."""
        return self.tasks == 0


@dataclass(frozen=True)
class SchedulerView:
    """The scheduler's load, reduced to what scaling needs.

    ``queued`` are tasks ready to run but waiting for a thread, ``processing`` those assigned to
    workers. ``memory_used`` is the data the workers hold; ``memory_needed`` an estimate of what
    they will hold soon (0 when the scheduler has none). ``load`` maps job ids to their
    :class:`JobLoad`; a job missing from it has no worker connected yet.

    >>> SchedulerView(queued=10, processing=6).work
    16
    """

    queued: int = 0
    processing: int = 0
    memory_used: int = 0
    memory_needed: int = 0
    load: Mapping[str, JobLoad] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("queued", "processing", "memory_used", "memory_needed"):
            _count(name, getattr(self, name))

    @property
    def work(self) -> int:
        """Tasks that want a thread now: queued plus processing."""
        return self.queued + self.processing


@dataclass(frozen=True)
class Job:
    """A batch job the cluster has submitted and not yet seen finish.

    ``submitted_at`` is on the same clock as the ``now`` given to :meth:`AdaptivePolicy.decide`.

    >>> Job("4242", "pending", submitted_at=100.0).state
    'pending'
    """

    job_id: str
    state: str
    submitted_at: float

    def __post_init__(self) -> None:
        if self.state not in (PENDING, RUNNING, FINISHED):
            raise ValueError(f"Job {self.job_id!r}: state={self.state!r} must be 'pending', 'running' or "
                             "'finished' (see xsched.deploy.batch_queue for the mapping).")


@dataclass(frozen=True)
class Decision:
    """What to do this interval: submit ``start`` new jobs and cancel the jobs in ``cancel``.

    ``target`` is the number of jobs the policy wants now and ``reason`` says why, for the log.

    >>> bool(Decision()), bool(Decision(start=2))
    (False, True)
    """

    start: int = 0
    cancel: tuple[str, ...] = ()
    target: int = 0
    reason: str = ""

    def __bool__(self) -> bool:
        return bool(self.start or self.cancel)


class AdaptivePolicy:
    """Decides, one interval at a time, how many whole batch jobs a cluster should have.

    Each job runs ``workers_per_job`` workers of ``threads_per_worker`` threads and, if given,
    ``memory_per_job`` bytes (``"32GB"`` works). The policy wants enough jobs that every queued
    and processing task has a thread, and that the data held fills at most ``memory_target`` of
    the jobs' memory; never fewer than ``minimum_jobs`` nor more than ``maximum_jobs``.

    >>> policy = AdaptivePolicy(maximum_jobs=4, workers_per_job=1, threads_per_worker=8, wait_count=2)
    >>> jobs = [Job("1", "running", 0.0), Job("2", "running", 0.0)]
    >>> [policy.decide(SchedulerView(), jobs, now=t).cancel for t in (600.0, 601.0)]
    [(), ('1', '2')]
    """

    def __init__(self, *, minimum_jobs: int = 0, maximum_jobs: int | None = None, workers_per_job: int = 1,
                 threads_per_worker: int = 1, memory_per_job: int | str | None = None, wait_count: int = 3,
                 pending_grace: float = 120.0, memory_target: float = 0.6) -> None:
        if maximum_jobs is None:
            raise ValueError("maximum_jobs is required: without an upper bound adaptive scaling could submit "
                             "a job for every task of a large graph. Pass e.g. maximum_jobs=20.")
        self.minimum_jobs = _count("minimum_jobs", minimum_jobs)
        self.maximum_jobs = _count("maximum_jobs", maximum_jobs)
        if self.maximum_jobs < self.minimum_jobs:
            raise ValueError(f"maximum_jobs={maximum_jobs} is below minimum_jobs={minimum_jobs}.")
        self.workers_per_job = _count("workers_per_job", workers_per_job, 1)
        self.threads_per_worker = _count("threads_per_worker", threads_per_worker, 1)
        self.memory_per_job = None if memory_per_job is None else parse_bytes(memory_per_job)
        if self.memory_per_job == 0:
            raise ValueError("memory_per_job must be more than 0 bytes, or None to scale on tasks only.")
        self.wait_count = _count("wait_count", wait_count, 1)
        if not (isinstance(pending_grace, (int, float)) and pending_grace >= 0):
            raise ValueError(f"pending_grace={pending_grace!r} must be a number of seconds >= 0.")
        self.pending_grace = float(pending_grace)
        if not (isinstance(memory_target, (int, float)) and 0 < memory_target <= 1):
            raise ValueError(f"memory_target={memory_target!r} must be a fraction in (0, 1], e.g. 0.6.")
        self.memory_target = float(memory_target)
        self._lower: deque[int] = deque(maxlen=self.wait_count)  # recent targets below the job count

    def __repr__(self) -> str:
        return (f"AdaptivePolicy(minimum_jobs={self.minimum_jobs}, maximum_jobs={self.maximum_jobs}, "
                f"workers_per_job={self.workers_per_job}, threads_per_worker={self.threads_per_worker}, "
                f"memory_per_job={self.memory_per_job}, wait_count={self.wait_count}, "
                f"pending_grace={self.pending_grace})")

    @property
    def threads_per_job(self) -> int:
        """Threads one job brings: workers per job times threads per worker."""
        return self.workers_per_job * self.threads_per_worker

    def target(self, view: SchedulerView) -> tuple[int, str]:
        """The number of jobs ``view`` calls for, within the bounds, and why.

        >>> AdaptivePolicy(maximum_jobs=3, threads_per_worker=4).target(SchedulerView(queued=100))
        (3, '100 tasks need 25 jobs of 4 threads; at most 3 jobs')
        """
        for_tasks = math.ceil(view.work / self.threads_per_job)
        reasons = [f"{view.work} tasks need {for_tasks} jobs of {self.threads_per_job} threads"]
        wanted = for_tasks
        if self.memory_per_job:
            data = max(view.memory_used, view.memory_needed)
            for_memory = math.ceil(data / (self.memory_per_job * self.memory_target))
            if for_memory:
                reasons.append(f"{format_bytes(data)} of data needs {for_memory} jobs "
                               f"at {self.memory_target:.0%} of {format_bytes(self.memory_per_job)}")
            wanted = max(wanted, for_memory)
        if wanted > self.maximum_jobs:
            reasons.append(f"at most {self.maximum_jobs} jobs")
        elif wanted < self.minimum_jobs:
            reasons.append(f"at least {self.minimum_jobs} jobs")
        return min(max(wanted, self.minimum_jobs), self.maximum_jobs), "; ".join(reasons)

    def decide(self, view: SchedulerView, jobs: Iterable[Job], now: float) -> Decision:
        """This interval's decision, given the scheduler's view, our jobs and the time now.

        Finished jobs in ``jobs`` are ignored; pending and running jobs both count as jobs we have.

        >>> policy = AdaptivePolicy(maximum_jobs=5, threads_per_worker=2)
        >>> policy.decide(SchedulerView(queued=3, processing=2), [Job("1", "running", 0.0)], now=10.0)
        Decision(start=2, cancel=(), target=3, reason='5 tasks need 3 jobs of 2 threads')
        """
        active = [job for job in jobs if job.state != FINISHED]
        have = len(active)
        target, reason = self.target(view)
        if target >= have:
            self._lower.clear()
            return Decision(start=target - have, target=target, reason=reason)
        self._lower.append(target)
        if len(self._lower) < self.wait_count:
            return Decision(target=target, reason=f"{reason}; {have} jobs, waiting to scale down "
                                                  f"({len(self._lower)}/{self.wait_count} intervals)")
        keep = max(self._lower)  # the mildest wish of the last wait_count intervals
        excess = have - keep
        # keep the most useful jobs; of the others cancel all but those still in their grace period,
        # so a fresh pending job never costs us a running one
        keepers = set(self._keep_order(view, active)[:keep])
        cancel = tuple(job_id for job_id in self.cancel_order(view, active, now) if job_id not in keepers)
        if len(cancel) == excess:
            self._lower.clear()
        held = excess - len(cancel)
        note = f"; {held} pending jobs kept within their {self.pending_grace:.0f}s grace" if held else ""
        return Decision(cancel=cancel, target=keep, reason=f"{reason}; down from {have} to {keep} jobs{note}")

    def cancel_order(self, view: SchedulerView, jobs: Iterable[Job], now: float) -> list[str]:
        """The ids of the jobs that may be cancelled now, cheapest to lose first.

        Pending jobs within their grace period are left out.

        >>> policy = AdaptivePolicy(maximum_jobs=5, pending_grace=60)
        >>> jobs = [Job("1", "running", 0.0), Job("2", "pending", 90.0), Job("3", "pending", 10.0)]
        >>> policy.cancel_order(SchedulerView(load={"1": JobLoad(1, 0, 10)}), jobs, now=100.0)
        ['3', '1']
        """
        pending, running = [], []
        for job in jobs:
            if job.state == PENDING:
                if now - job.submitted_at >= self.pending_grace:
                    pending.append(job)
            elif job.state == RUNNING:
                running.append(job)
        pending.sort(key=lambda job: -job.submitted_at)  # newest first: the oldest may start soonest
        running.sort(key=lambda job: _cost(view, job))
        return [job.job_id for job in pending + running]

    def _keep_order(self, view: SchedulerView, jobs: list[Job]) -> list[str]:
        """All job ids, most useful first: running by load (busiest first), then pending, oldest first."""
        run = sorted((job for job in jobs if job.state == RUNNING), key=lambda job: _cost(view, job), reverse=True)
        wait = sorted((job for job in jobs if job.state == PENDING), key=lambda job: job.submitted_at)
        return [job.job_id for job in run + wait]


def _cost(view: SchedulerView, job: Job) -> tuple:
    """What losing a running job costs: busy before idle, then tasks, data, and walltime left."""
    load = view.load.get(job.job_id, JobLoad())
    return (not load.idle, load.tasks, load.memory, job.submitted_at)
