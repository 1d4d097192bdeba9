"""What a live dashboard shows, in one batched reply since the caller's cursors.

The ``telemetry`` scheduler extension (see ``base.py`` for the protocol). A dashboard (the
JupyterLab panes, through ``xsched/labserver``) polls one op at the rate its browser asks
for; each reply carries everything new since the cursors the caller sent back::

    dashboard --telemetry {parts, since, memory_since, logs_since, max_records}--> TelemetryExtension
        task-stream  the runs numbered ``since`` or later, from the diagnostics extension's
                     TaskStream (no copy kept here); over ``max_records`` only the newest are
                     sent and ``skipped`` counts the others (runs the bounded stream already
                     dropped count too); ``index``: the cursor for the next call. Beside it,
                     ``activity``: the workers' transfers and spill I/O the same way, from
                     ``activity_since`` (a cursor of its own)
        workers      one row per worker: address, name, nthreads, managed / unmanaged /
                     spilled / limit, cpu, executing, processing, status
        groups       per task group: done, processing, erred, waiting (``GroupCounts``), and
                     ``group_edges``: which groups feed which, ``[from, to]`` pairs
        memory       per worker, the samples of ``Scheduler.memory_history`` newer than
                     ``memory_since[address]`` (one cursor per worker: their clocks differ)
        logs         per process ("scheduler", then each worker address), its recent records of the
                     ``xsched`` loggers as ``[number, level, message]``, numbered from
                     ``logs_since[source]`` on (one cursor per process); at most ``LOG_RECORDS``
                     per process (``LogTail``)
        stacks       per worker running tasks, the call stack of each task running there, as its
                     last answer to ``call-stack`` gave it: ``{address: {time, tasks: {key:
                     [frame lines]}}}`` (asked in the background, ``STACK_FETCHES`` workers per
                     poll, each at most every ``STACK_REFRESH`` seconds)
        profile      the call tree of the task threads' sampled stacks per task prefix since the
                     first poll asking for it (``xsched/profiling.py``): ``{samples, since, rows}``,
                     at most ``PROFILE_ROWS`` rows, the heaviest first
    <--{time, task_stream: {runs (``columns``), index, first, skipped}, activity, workers, groups, group_edges,
        memory, memory_since, logs, logs_since, profile, stacks}--

Workers' logs live in the workers: a reply never waits for them. A poll asking for ``logs``
asks at most ``LOG_FETCHES`` workers (the longest unasked first, each at most once per
``LOG_REFRESH`` seconds) for their last ``LOG_RECORDS`` records with the ``get-logs`` op, over
connections of the extension's own (as a client's), and answers with what the earlier answers
left in each worker's ``LogTail``; a worker that leaves takes its tail with it. The
scheduler's own records are read in process, at every poll.

The profile, like the logs, is sampled by the workers: while polls ask for it, each worker in
turn (``PROFILE_FETCHES`` per poll at most) samples its task threads for ``PROFILE_SECONDS``
(the ``profile`` op with ``tree``) and the answer is merged into one bounded ``StackTree``.
Nothing is sampled while no dashboard shows the profile.

Stories: from the first poll on, a ``StoryRecorder`` notes every transition with its time and
worker (a bounded log beside the state's own); ``story(key)`` joins it to the state's story of
the key (the dashboard page's story pane; the JupyterLab panel's through ``run_on_scheduler``).

Cursors live with the caller, never here: a dashboard that goes away leaves nothing
behind. What this extension keeps is bounded whatever the number of tasks: the group
counts (``GroupCounts``, at most ``MAX_GROUPS`` groups), the log tails (``LOG_RECORDS`` per
process) and the story recorder (as long as the state's own log); the task stream
(at most 100,000 runs) and the memory history (3,600 samples per worker) are the
scheduler's own.

The group counts cost nothing until a dashboard first asks: the first request counts the
tasks the scheduler knows (one pass), then a transition hook (O(1)) keeps them. The hooks
(the counts, the story recorder) come off ``IDLE_DETACH`` seconds after the last request: a
dashboard that went away leaves the state machine as it found it.

>>> counts = GroupCounts()
>>> from types import SimpleNamespace as T
>>> a = T(key="inc-1", group="inc", state="waiting", nbytes=-1, dependencies=())
>>> counts(a, "released", "waiting"); counts(a, "waiting", "processing")
>>> a.nbytes = 8; counts(a, "processing", "memory"); counts(a, "memory", "released")
>>> counts.rows()
[{'name': 'inc', 'done': 1, 'processing': 0, 'erred': 0, 'waiting': 0, 'total': 1}]
"""

from __future__ import annotations

import asyncio
import collections
import heapq
import logging
import time
from itertools import islice

from ... import logs
from ...background import Background
from ...comm import ConnectionPool
from ...graph.order import natural_key
from ...profiling import StackTree
from ...protocol import ops
from ...protocol.schemas import TELEMETRY_PARTS
from .base import SchedulerExtension

logger = logging.getLogger("xsched.scheduler.telemetry")

__all__ = ["TelemetryExtension", "GroupCounts", "LogTail", "StoryRecorder", "join_story", "key_story", "group_keys",
           "KEY_ORDER", "MAX_GROUPS", "MAX_RECORDS", "PARTS", "LOG_RECORDS", "category", "columns", "rows_of"]

#: most groups counted; past it the oldest finished group is dropped first
MAX_GROUPS = 1000
#: tasks per group whose dependencies are read for the group graph (its edges)
EDGE_SAMPLES = 4
#: runs sent per reply when the caller does not say (at most 100,000: the schema's bound)
MAX_RECORDS = 10_000
#: what a caller may ask for (the op's schema allows these)
PARTS = TELEMETRY_PARTS
#: log records kept, and sent at most, per process (the scheduler, each worker)
LOG_RECORDS = 200
#: seconds between two requests for one worker's logs, however many dashboards poll
LOG_REFRESH = 2.0
#: workers asked for their logs per poll at most (the longest unasked first)
LOG_FETCHES = 8
#: seconds a worker has to answer ``get-logs`` (and ``call-stack``)
LOG_TIMEOUT = 5.0
#: workers asked for their running tasks' call stacks per poll at most (the longest unasked first)
STACK_FETCHES = 8
#: seconds between two requests for one worker's call stacks, however many dashboards poll
STACK_REFRESH = 1.0
#: seconds each worker samples its task threads for one profile answer, and between samples
PROFILE_SECONDS, PROFILE_INTERVAL = 1.0, 0.01
#: workers asked to sample per poll at most; rows of the profile sent per reply at most, and
#: the least share of all samples a frame needs to be sent (smaller ones stay in their parent)
PROFILE_FETCHES, PROFILE_ROWS, PROFILE_MIN_FRACTION = 8, 2000, 0.0005
#: most transitions the story recorder keeps when the state's log is unbounded (else as many as it)
STORY_RECORDER_LENGTH = 100_000
#: most keys listed when a dashboard opens a task group
GROUP_KEYS = 200
#: seconds without a dashboard's request after which the transition hooks (group counts,
#: story recorder) come off the state machine: a dashboard that went away costs nothing
IDLE_DETACH = 120.0
#: the columns of a group's counts
COLUMNS = ("done", "processing", "erred", "waiting")
_WAITING = frozenset({"waiting", "queued", "no-worker"})


def category(state: str, nbytes: int) -> int:
    """The column (an index into ``COLUMNS``) a task in ``state`` counts in, or -1 for none.

    A task that ran (``nbytes >= 0``) stays done when it is released or forgotten; one
    released before it ran counts nowhere (it is about to wait, or was cancelled).

    >>> [COLUMNS[category(s, -1)] for s in ("waiting", "queued", "processing", "erred", "memory")]
    ['waiting', 'waiting', 'processing', 'erred', 'done']
    >>> category("released", -1), COLUMNS[category("forgotten", 16)]
    (-1, 'done')
    """
    i = _CATEGORY.get(state, -2)
    return i if i > -2 else (0 if nbytes >= 0 else -1)


_CATEGORY = {"memory": 0, "processing": 1, "erred": 2, **{s: 3 for s in _WAITING}}


class GroupCounts:
    """Per task group, how many tasks are done, processing, erred and waiting: a transition
    hook of the scheduler's state, O(1) per transition, at most ``max_groups`` groups.

    It also notes which groups feed which (the task-group graph pane): the dependencies of
    the first ``EDGE_SAMPLES`` tasks of each group as they leave ``released``, so the cost
    stays bounded per group whatever its size.
    """

    __slots__ = ("counts", "max_groups", "edges", "_sampled", "__weakref__")

    def __init__(self, max_groups: int = MAX_GROUPS):
        self.counts: dict[str, list[int]] = {}  # group -> [done, processing, erred, waiting], oldest first
        self.max_groups = max_groups
        self.edges: dict[str, set[str]] = {}  # group -> the groups its tasks depend on
        self._sampled: dict[str, int] = {}  # group -> tasks whose dependencies were read

    def seed(self, tasks) -> None:
        """Count the tasks the state knows now (``state.tasks.values()``): one pass."""
        for ts in tasks:
            i = category(ts.state, ts.nbytes)
            if i >= 0:
                self._row(ts.group)[i] += 1
            self._sample(ts)

    def _row(self, group: str) -> list[int]:
        row = self.counts.get(group)
        if row is None:
            if len(self.counts) >= self.max_groups:
                self._evict()
            row = self.counts[group] = [0, 0, 0, 0]
        return row

    def _evict(self) -> None:
        """Drop the oldest group with nothing left to run (else the oldest group)."""
        for name, row in self.counts.items():
            if row[1] <= 0 and row[3] <= 0:
                self._forget(name)
                return
        self._forget(next(iter(self.counts)))

    def _forget(self, name: str) -> None:
        del self.counts[name]
        self.edges.pop(name, None)
        self._sampled.pop(name, None)

    def _sample(self, ts) -> None:
        group = ts.group
        n = self._sampled.get(group, 0)
        if n >= EDGE_SAMPLES or group not in self.counts:
            return
        self._sampled[group] = n + 1
        for dts in ts.dependencies:
            if dts.group != group:
                self.edges.setdefault(group, set()).add(dts.group)

    def __call__(self, ts, start: str, finish: str) -> None:
        # (one lookup for the usual states; category() for the rest: this runs on every transition)
        a, b = _CATEGORY.get(start, -2), _CATEGORY.get(finish, -2)
        if a == -2:
            a = category(start, ts.nbytes)
        if b == -2:
            b = category(finish, ts.nbytes)
        if a == b:
            return
        row = self._row(ts.group)
        if a >= 0:
            row[a] -= 1
        if b >= 0:
            row[b] += 1
        if start == "released":
            self._sample(ts)

    def rows(self) -> list[dict]:
        """One dict per group, in the order the groups first appeared."""
        out = []
        for name, row in self.counts.items():
            done, processing, erred, waiting = (max(x, 0) for x in row)
            out.append({"name": name, "done": done, "processing": processing, "erred": erred,
                        "waiting": waiting, "total": done + processing + erred + waiting})
        return out

    def edge_list(self) -> list[list[str]]:
        """``[dependency group, group]`` pairs between groups counted now, sorted.

        >>> from types import SimpleNamespace as T
        >>> counts = GroupCounts()
        >>> a = T(key="load-1", group="load", state="waiting", nbytes=-1, dependencies=())
        >>> b = T(key="inc-1", group="inc", state="waiting", nbytes=-1, dependencies=(a,))
        >>> counts(a, "released", "waiting"); counts(b, "released", "waiting")
        >>> counts.edge_list()
        [['load', 'inc']]
        """
        counts = self.counts
        return sorted([dep, group] for group, deps in self.edges.items() if group in counts
                      for dep in deps if dep in counts)


def stream_since(stream, since: int | None, max_records: int) -> tuple[list, int, int]:
    """(records, number of the first one, runs skipped) of a ``TaskStream`` from run ``since``
    (None: the oldest kept), the newest ``max_records`` when there are more.

    >>> from xsched.scheduler.extensions.diagnostics import TaskStream
    >>> s = TaskStream(maxlen=5)
    >>> for i in range(8):
    ...     s.add(f"inc-{i}", "w", i, i + 1, "memory")
    >>> rows, first, skipped = stream_since(s, 1, 2)
    >>> [r[0] for r in rows], first, skipped          # runs 1, 2 dropped by the stream, 3..5 by the cap
    (['inc-6', 'inc-7'], 6, 5)
    >>> stream_since(s, 8, 10)
    ([], 8, 0)
    """
    oldest = stream.index - len(stream.records)
    start = oldest if since is None else min(max(since, 0), stream.index)
    lost = max(oldest - start, 0)  # runs after the cursor the bounded stream dropped already
    begin = max(start, oldest)
    available = stream.index - begin
    take = min(available, max_records)
    first = stream.index - take
    # (from the right end: a poll takes the newest few of up to 100,000 kept runs, and a deque
    # walked from its left to them costs the whole length at every poll)
    rows = list(islice(reversed(stream.records), take))
    rows.reverse()
    return rows, first, lost + available - take


def _coded(values) -> tuple[list, list[int]]:
    """(the distinct values in order of appearance, each value's index among them)."""
    names = list(dict.fromkeys(values))
    return names, list(map({v: i for i, v in enumerate(names)}.__getitem__, values))


def columns(rows) -> dict:
    """Task-stream rows ``(key, worker, start, stop, status, nbytes, group)`` (``TaskStream``'s)
    as the telemetry reply sends them: a list per field, the group, worker
    and status of each run as an index into the distinct ones (``groups``, ``workers``,
    ``statuses``). Why columns: a browser parses a few long lists where it parsed an array per
    run, and the repeated names travel once (a 100,000-run reply: half the bytes).

    >>> cols = columns([("inc-1", "tcp://w:1", 1.0, 1.5, "memory", 8, "inc"), ("inc-2", "tcp://w:2", 2.0, 2.5, "error", 8, "inc")])
    >>> cols["keys"], cols["groups"], cols["group"], cols["workers"], cols["worker"], cols["statuses"], cols["status"]
    (['inc-1', 'inc-2'], ['inc'], [0, 0], ['tcp://w:1', 'tcp://w:2'], [0, 1], ['memory', 'error'], [0, 1])
    >>> rows_of(cols)[1]
    ['inc-2', 'inc', 'tcp://w:2', 2.0, 2.5, 'error']
    """
    keys = [r[0] for r in rows]
    starts = [r[2] for r in rows]
    stops = [r[3] for r in rows]
    group_names, group = _coded([r[6] for r in rows])
    worker_names, worker = _coded([r[1] for r in rows])
    status_names, status = _coded([r[4] for r in rows])
    return {"keys": keys, "groups": group_names, "group": group, "workers": worker_names, "worker": worker,
            "start": starts, "stop": stops, "statuses": status_names, "status": status}


def rows_of(cols: dict) -> list[list]:
    """The runs of a reply's ``columns`` back as ``[key, group, worker, start, stop, status]``
    rows (how a Python reader of the ``telemetry`` op sees each run whole)."""
    groups, workers, statuses = cols["groups"], cols["workers"], cols["statuses"]
    return [[key, groups[g], workers[w], start, stop, statuses[s]] for key, g, w, start, stop, s in
            zip(cols["keys"], cols["group"], cols["worker"], cols["start"], cols["stop"], cols["status"])]


class LogTail:
    """The last ``maxlen`` log records of one process, numbered in the order they arrive: the
    number is the cursor a caller sends back (``since``: the number of the next record it wants).

    ``update(tail)`` takes the process's newest records (oldest first, as ``get-logs`` answers)
    and keeps those after the newest one held: the two windows are matched where they overlap.

    >>> t = LogTail(maxlen=3)
    >>> t.update([("INFO", "a"), ("INFO", "b")]), t.since(None)
    (2, [[0, 'INFO', 'a'], [1, 'INFO', 'b']])
    >>> t.update([("INFO", "b"), ("WARNING", "c"), ("INFO", "b")]), t.since(2)
    (2, [[2, 'WARNING', 'c'], [3, 'INFO', 'b']])
    >>> t.update([("WARNING", "c"), ("INFO", "b")]), t.next, [r[0] for r in t.since(0)]  # nothing new
    (0, 4, [1, 2, 3])
    >>> t.since(99)[0][0]            # a cursor of another scheduler: everything held
    1
    """

    __slots__ = ("records", "next", "asked", "pending", "error")

    def __init__(self, maxlen: int = LOG_RECORDS):
        self.records: collections.deque = collections.deque(maxlen=maxlen)  # [number, level, message]
        self.next = 0             # the number of the next record
        self.asked = float("-inf")  # (loop time) when its process was last asked
        self.pending = False      # a request for them is under way
        self.error: str | None = None

    def update(self, tail) -> int:
        """Keep the records of ``tail`` newer than the newest held; returns how many."""
        held = [(r[1], r[2]) for r in self.records]
        tail = [(str(level), str(message)) for level, message in tail]
        start = 0
        if held:
            last = held[-1]
            for j in range(min(len(tail), len(held)) - 1, -1, -1):  # the longest overlap first
                if tail[j] == last and tail[:j + 1] == held[len(held) - j - 1:]:
                    start = j + 1
                    break
        for level, message in tail[start:]:
            self.records.append([self.next, level, message])
            self.next += 1
        return len(tail) - start

    def since(self, cursor: int | None) -> list:
        """The records numbered ``cursor`` or later (all held for None, or a cursor past the
        newest: another process's numbering), oldest first."""
        if cursor is None or cursor > self.next:
            cursor = 0
        if cursor >= self.next:
            return []
        return [list(r) for r in self.records if r[0] >= cursor]


class StoryRecorder:
    """A transition hook of a scheduler state: notes (time, key, start, finish, worker,
    stimulus_id) of every transition in a bounded log, for the dashboards' stories. It runs in
    the scheduler's event loop, beside the state machine, never inside its decisions.

    >>> from types import SimpleNamespace as NS
    >>> state = NS(transition_hooks=[], log=[("x-1", "waiting", "processing", "s-1")])
    >>> rec = StoryRecorder.install(state); rec is StoryRecorder.install(state)
    True
    >>> ws = NS(address="tcp://127.0.0.1:4000")
    >>> ts = NS(key="x-1", processing_on=None, who_has=set(), erred_on=None)
    >>> rec(ts, "waiting", "processing")   # the worker is assigned just after the hook
    >>> ts.processing_on = ws
    >>> [e[1:] for e in rec.entries_of("x-1")]
    [['x-1', 'waiting', 'processing', 'tcp://127.0.0.1:4000', 's-1']]
    """

    def __init__(self, state, maxlen: int = STORY_RECORDER_LENGTH):
        self.state = state
        # tuples of plain values: the cyclic garbage collector stops scanning them once it
        # has seen them, where a deque of 100,000 lists would be scanned in every full collection
        self.entries: collections.deque = collections.deque(maxlen=maxlen)
        self._pending: list = []  # (time, ts, start, stimulus_id): to "processing", worker not assigned yet

    @classmethod
    def install(cls, state) -> "StoryRecorder":
        """The recorder of ``state``, added to its transition hooks the first time."""
        for hook in state.transition_hooks:
            if isinstance(hook, cls):
                return hook
        # as far back as the state's own log reaches (scheduler.events-log-length)
        rec = cls(state, getattr(state.log, "maxlen", None) or STORY_RECORDER_LENGTH)
        state.transition_hooks.append(rec)
        return rec

    def __call__(self, ts, start: str, finish: str) -> None:
        try:
            if self._pending:
                self._settle(ts, start, finish)
            log = self.state.log
            sid = log[-1][3] if log and log[-1][0] == ts.key else None
            if finish == "processing" and ts.processing_on is None:
                self._pending.append((time.time(), ts, start, sid))
            else:
                self.entries.append((time.time(), ts.key, start, finish, _where(ts, finish), sid))
        except Exception:  # a note for a dashboard must never break the scheduler's transition
            self._pending.clear()
            logger.debug("story recorder: transition of %r not noted", getattr(ts, "key", ts), exc_info=True)

    def _settle(self, ts=None, start: str | None = None, finish: str | None = None) -> None:
        """Note the transitions to "processing" heard before their worker was assigned (it is
        by now), in the order heard. A task that left "processing" before any other transition
        was heard ran where it went: its worker in ``finish``."""
        for t, pts, pstart, sid in self._pending:
            if pts.processing_on is not None:
                worker = pts.processing_on.address
            elif pts is ts and start == "processing":
                worker = _where(ts, finish)
            else:
                worker = None
            self.entries.append((t, pts.key, pstart, "processing", worker, sid))
        self._pending.clear()

    def entries_of(self, key: str) -> list:
        """The recorded transitions of ``key``, oldest first."""
        self._settle()
        return [list(e) for e in self.entries if e[1] == key]


def _where(ts, finish: str) -> str | None:
    """The worker a task is on in state ``finish`` (None when that state has no worker)."""
    if finish == "processing" and ts.processing_on is not None:
        return ts.processing_on.address
    if finish == "memory" and ts.who_has:
        who = ts.who_has
        if len(who) == 1:  # (the common case: where it ran)
            for ws in who:
                return ws.address
        return ", ".join(sorted(ws.address for ws in who))
    if finish == "erred" and ts.erred_on:
        return str(ts.erred_on)
    return None


def holders_of(scheduler, key: str) -> list:
    """The workers holding the value of ``key`` now (sorted; none unless it is in memory):
    where a console can read it.

    >>> from types import SimpleNamespace as T
    >>> ts = T(state="memory", who_has=[T(address="tcp://b:1"), T(address="tcp://a:1")])
    >>> holders_of(T(state=T(tasks={"x": ts})), "x"), holders_of(T(state=T(tasks={})), "y")
    (['tcp://a:1', 'tcp://b:1'], [])
    """
    ts = scheduler.state.tasks.get(key)
    return sorted(ws.address for ws in ts.who_has) if ts is not None and ts.state == "memory" else []


def key_story(scheduler, key: str) -> list:
    """The transitions of one key, oldest first, each a dict: ``time`` (seconds since the
    epoch, None before a recorder was installed), ``start``, ``finish``, ``worker`` (None
    when none) and ``stimulus_id``: ``scheduler.story(key)`` joined to the recorder's notes."""
    recorded: list = []
    for hook in scheduler.state.transition_hooks:
        if isinstance(hook, StoryRecorder):
            recorded = hook.entries_of(key)
    return join_story(scheduler.story(key), recorded)


#: the order a group's keys are listed in, here and in the lab's sidebar: those that need
#: attention first (other states last)
KEY_ORDER = {"erred": 0, "processing": 1, "queued": 2, "waiting": 3, "no-worker": 4, "memory": 5}


def group_keys(scheduler, group: str, limit: int = GROUP_KEYS) -> dict:
    """The keys of one task group, at most ``limit``: failed, running, queued and waiting
    first, then held, then the rest; each ``{"key", "state", "worker"}`` (where it runs, is
    held or failed; None for none). ``{"group", "total", "keys"}``: what a dashboard lists
    when a group is opened (one pass over the tasks, on demand).

    >>> from types import SimpleNamespace as T
    >>> tasks = {k: T(key=k, group="inc", state=s, processing_on=None, who_has=(), erred_on=None)
    ...          for k, s in [("inc-2", "memory"), ("inc-10", "erred"), ("inc-1", "memory")]}
    >>> rows = group_keys(T(state=T(tasks=tasks)), "inc", limit=2)
    >>> rows["total"], [(r["key"], r["state"]) for r in rows["keys"]]
    (3, [('inc-10', 'erred'), ('inc-1', 'memory')])
    """
    found = [(KEY_ORDER.get(ts.state, 6), ts) for ts in scheduler.state.tasks.values() if ts.group == group]
    chosen = heapq.nsmallest(max(int(limit), 0), found, key=lambda c: (c[0], natural_key(c[1].key)))
    return {"group": group, "total": len(found),
            "keys": [{"key": ts.key, "state": ts.state, "worker": _where(ts, ts.state)} for _, ts in chosen]}


def join_story(story: list, recorded: list) -> list:
    """The state's story of a key (key, start, finish, stimulus_id) with the times and workers
    the recorder noted. The recorder hears every state change but not the notes the state
    logs without one (a key's arrival), and only since it was installed: the two are matched
    from the end.

    >>> story = [("a", "new", "released", "u-1"), ("a", "released", "waiting", "u-1"),
    ...          ("a", "waiting", "processing", "u-1")]
    >>> rows = join_story(story, [[10.5, "a", "waiting", "processing", "tcp://w:1", "u-1"]])
    >>> [(r["finish"], r["time"], r["worker"]) for r in rows]
    [('released', 10.5, None), ('waiting', 10.5, None), ('processing', 10.5, 'tcp://w:1')]
    >>> join_story(story[:1], [])[0]["time"] is None      # before the recorder: no time
    True
    """
    rows = [{"time": None, "start": _plain(start), "finish": _plain(finish), "worker": None,
             "stimulus_id": _plain(sid)} for _key, start, finish, sid in story]
    j = len(recorded) - 1
    for i in range(len(story) - 1, -1, -1):
        if j < 0:
            break
        t, _k, rstart, rfinish, worker, rsid = recorded[j]
        _key, start, finish, sid = story[i]
        if (rstart, rfinish) == (start, finish) and rsid in (None, sid):
            rows[i]["time"], rows[i]["worker"] = t, worker
            j -= 1
    # a note logged without a hook happened in the same event as a timed change of that stimulus
    times: dict = {}
    for row in rows:
        if row["time"] is not None:
            times.setdefault(row["stimulus_id"], row["time"])
    for row in rows:
        if row["time"] is None and row["stimulus_id"] in times:
            row["time"] = times[row["stimulus_id"]]
    return rows


def _plain(x):
    return x if isinstance(x, (str, int, float, bool)) or x is None else repr(x)


class TelemetryExtension(SchedulerExtension):
    """Serves ``telemetry``: task runs, worker rows, group counts and memory samples since the
    caller's cursors, in one reply."""

    name = "telemetry"

    def __init__(self, scheduler):
        super().__init__(scheduler)
        self.groups: GroupCounts | None = None  # counted from the first request on
        self.stories: StoryRecorder | None = None  # recorded from the first request on
        self.logs: dict[str, LogTail] = {}  # "scheduler" and worker address -> its recent records
        self.log_refresh = LOG_REFRESH
        self._pool: ConnectionPool | None = None  # to the workers, for their logs (opened on first use)
        self.profile: StackTree | None = None  # sampled from the first poll asking for it
        self.profile_since: float | None = None
        self._profile_rows: tuple[int, list] = (-1, [])  # (samples, the tree's rows then): walked once per change
        self._profiling: set[str] = set()  # workers sampling now
        self._profile_asked: dict[str, float] = {}  # worker -> when it was last asked (least recent first)
        self._stacks: dict[str, tuple[float, dict]] = {}  # worker -> (answered at, {key: frame lines})
        self._stacks_asked: dict[str, float] = {}  # worker -> when it was last asked (monotonic)
        self._stacks_pending: set[str] = set()
        self._background = Background("telemetry")
        self._last_look = 0.0  # (the loop's clock) when a dashboard last asked
        self._idle_timer = None  # the loop's timer that takes the hooks off (see ``looked``)

    def __repr__(self) -> str:
        n = "not counting" if self.groups is None else f"{len(self.groups.counts)} groups"
        return f"<TelemetryExtension {n}>"

    def looked(self) -> None:
        """A dashboard asked: the hooks stay on for ``IDLE_DETACH`` seconds more (a timer on
        the scheduler's loop takes them off after that long without a request)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # (no loop: a test's scheduler that never started keeps its hooks)
        self._last_look = loop.time()
        if self._idle_timer is None:
            self._idle_timer = loop.call_later(IDLE_DETACH, self._idle_check)

    def _idle_check(self) -> None:
        self._idle_timer = None
        loop = asyncio.get_running_loop()
        idle = loop.time() - self._last_look
        if not self.detach_if_idle(idle):
            self._idle_timer = loop.call_later(IDLE_DETACH - idle, self._idle_check)

    def detach_if_idle(self, idle: float) -> bool:
        """Take the transition hooks off when no dashboard asked for ``idle`` >= ``IDLE_DETACH``
        seconds; whether they are off. The next request counts the groups again (one pass) and
        records stories from then on."""
        if idle < IDLE_DETACH:
            return False
        self._detach_hooks()
        return True

    def _detach_hooks(self) -> None:
        for name in ("groups", "stories"):
            hook = getattr(self, name)
            if hook is not None:
                try:
                    self.scheduler.state.transition_hooks.remove(hook)
                except ValueError:
                    pass
                setattr(self, name, None)

    def group_counts(self) -> GroupCounts:
        """The group counts, started (one pass over the tasks, then a transition hook) on first use."""
        self.looked()
        if self.groups is None:
            state = self.scheduler.state
            groups = GroupCounts()
            groups.seed(state.tasks.values())
            state.transition_hooks.append(groups)
            self.groups = groups
        return self.groups

    def story_recorder(self) -> StoryRecorder:
        """The story recorder of the scheduler's state, installed on first use (or the one the
        JupyterLab panel installed)."""
        self.looked()
        if self.stories is None:
            self.stories = StoryRecorder.install(self.scheduler.state)
        return self.stories

    def close(self):
        """Detach the hooks; a coroutine closing the connections to workers when there are any."""
        super().close()
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        self._detach_hooks()
        self.logs.clear()
        self.profile, self._profile_rows = None, (-1, [])
        if self._pool is not None or len(self._background):
            return self._aclose()
        return None

    async def _aclose(self) -> None:
        await self._background.aclose()
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    def remove_worker(self, address: str, reason: str) -> None:
        """A worker left: its log tail and connection go."""
        self.logs.pop(address, None)
        self._profile_asked.pop(address, None)
        self._stacks.pop(address, None)
        self._stacks_asked.pop(address, None)
        if self._pool is not None:
            try:
                self._background.spawn(self._pool.drop(address))
            except RuntimeError:  # no loop running (a test's fake scheduler)
                pass

    # ------------------------------------------------------------------ the parts
    def task_stream(self, since: int | None, max_records: int) -> dict:
        """The runs since ``since``, as columns (``columns``)."""
        diagnostics = self.scheduler.extensions.get("diagnostics")
        if diagnostics is None:
            return {"runs": columns([]), "index": 0, "first": 0, "skipped": 0,
                    "error": "the scheduler does not load the diagnostics extension, which records the task stream"}
        rows, first, skipped = stream_since(diagnostics.task_stream, since, max_records)
        return {"runs": columns(rows), "index": diagnostics.task_stream.index, "first": first,
                "skipped": skipped}

    def activity(self, since: int | None, max_records: int) -> dict:
        """The workers' transfers and spill writes and reads since ``since``, as task-stream
        runs whose group and status are their kind (``transfer``, ``disk-write``, ``disk-read``)."""
        diagnostics = self.scheduler.extensions.get("diagnostics")
        if diagnostics is None:
            return {"runs": columns([]), "index": 0, "first": 0, "skipped": 0}
        rows, first, skipped = stream_since(diagnostics.activity, since, max_records)
        return {"runs": columns(rows), "index": diagnostics.activity.index,
                "first": first, "skipped": skipped}

    def workers(self) -> list[dict]:
        """One row per worker, in the order they joined."""
        rows = []
        for address, ws in self.scheduler.state.workers.items():
            m = ws.metrics or {}
            rows.append({
                "address": address, "name": str(ws.name if ws.name is not None else address),
                "nthreads": ws.nthreads, "memory_limit": ws.memory_limit or 0,
                "managed": m.get("managed", 0) or 0, "unmanaged": m.get("unmanaged", 0) or 0,
                "spilled": m.get("spilled", 0) or 0, "rss": m.get("rss", 0) or 0,
                "cpu": m.get("cpu", 0) or 0, "executing": m.get("executing", 0) or 0,
                "processing": len(ws.processing), "in_memory": len(ws.has_what), "status": ws.status,
            })
        return rows

    def memory(self, since: dict | None) -> tuple[dict, dict]:
        """(address -> samples ``[time, rss, managed, spilled]`` newer than ``since[address]``,
        address -> the time of its newest sample): the scheduler's memory history, not copied."""
        since = since or {}
        out, cursors = {}, {}
        for address, hist in getattr(self.scheduler, "memory_history", {}).items():
            t0 = since.get(address)
            new = []
            for sample in reversed(hist):  # newest first: stop at the first one already seen
                if t0 is not None and sample[0] <= t0:
                    break
                new.append(list(sample))
            new.reverse()
            out[address] = new
            cursors[address] = hist[-1][0] if hist else t0
        return out, cursors

    def story(self, key: str) -> list:
        """The transitions of ``key``, oldest first (``key_story``): what the dashboard page's
        story pane shows."""
        self.story_recorder()
        return key_story(self.scheduler, key)

    def group_keys(self, group: str, limit: int = GROUP_KEYS) -> dict:
        """One task group's keys, those needing attention first (``group_keys``)."""
        return group_keys(self.scheduler, group, limit)

    def recent_logs(self, since: dict | None) -> tuple[dict, dict]:
        """(source -> records ``[number, level, message]`` numbered ``since[source]`` or later,
        source -> the number of its next record): the scheduler's own records, read now, and
        what the workers last answered; asks the workers whose tails are oldest again."""
        since = since or {}
        own = self.logs.get("scheduler")
        if own is None:
            own = self.logs["scheduler"] = LogTail()
        own.update(logs.recent(own.records.maxlen))
        workers = self.scheduler.state.workers
        for address in workers:
            if address not in self.logs:
                self.logs[address] = LogTail()
        self._ask_workers()
        out, cursors = {}, {}
        for source in ["scheduler", *workers]:
            tail = self.logs[source]
            cursor = since.get(source)
            out[source] = tail.since(cursor)
            cursors[source] = tail.next
        return out, cursors

    def _ask_workers(self) -> None:
        """Ask up to ``LOG_FETCHES`` workers for their logs, the longest unasked first, none
        more often than every ``log_refresh`` seconds (nothing without a running loop)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        now = loop.time()
        due = [(tail.asked, address) for address, tail in self.logs.items()
               if address != "scheduler" and not tail.pending and now - tail.asked >= self.log_refresh]
        for _, address in sorted(due)[:LOG_FETCHES]:
            tail = self.logs[address]
            tail.pending, tail.asked = True, now
            self._background.spawn(self._fetch_logs(address, tail))

    async def _fetch_logs(self, address: str, tail: LogTail) -> None:
        try:
            tail.update(await self.worker_logs(address, tail.records.maxlen))
            tail.error = None
        except asyncio.CancelledError:
            raise
        except Exception as e:  # gone, slow, refused: said in the tail, asked again later
            tail.error = f"{type(e).__name__}: {e}"
            logger.debug("the logs of %s: %s", address, tail.error)
        finally:
            tail.pending = False
            tail.asked = asyncio.get_running_loop().time()

    def profile_part(self) -> dict:
        """The ``profile`` part: the merged call tree so far; asks the workers not sampling now
        to sample again (``PROFILE_FETCHES`` at most, the first poll starts the tree)."""
        if self.profile is None:
            self.profile, self.profile_since = StackTree(), time.time()
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass  # (no loop: a test's scheduler that never started; nothing to ask)
        else:
            asked = self._profile_asked
            idle = ((asked.get(a, 0.0), a) for a in self.scheduler.state.workers if a not in self._profiling)
            for _, address in heapq.nsmallest(PROFILE_FETCHES, idle):  # the longest unasked first: all in turn
                self._profiling.add(address)
                asked[address] = time.monotonic()
                self._background.spawn(self._fetch_profile(address))
        samples = self.profile.samples
        if self._profile_rows[0] != samples:  # (the tree is walked again only when answers grew it)
            self._profile_rows = (samples, self.profile.rows(PROFILE_MIN_FRACTION)[:PROFILE_ROWS])
        return {"samples": samples, "since": self.profile_since, "rows": self._profile_rows[1]}

    def stacks_part(self) -> dict:
        """The ``stacks`` part: the last call stacks each worker running tasks gave; asks again
        those whose answer is oldest (``STACK_FETCHES`` at most, each every ``STACK_REFRESH`` s).
        A worker running nothing now shows nothing (its last answer is dropped)."""
        workers = self.scheduler.state.workers
        busy = {a for a, ws in workers.items() if ws.processing}
        for address in [a for a in self._stacks if a not in busy]:
            del self._stacks[address]
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass  # (no loop: a test's scheduler that never started; nothing to ask)
        else:
            now = time.monotonic()
            asked = self._stacks_asked
            due = ((asked.get(a, 0.0), a) for a in busy
                   if a not in self._stacks_pending and now - asked.get(a, 0.0) >= STACK_REFRESH)
            for _, address in heapq.nsmallest(STACK_FETCHES, due):
                self._stacks_pending.add(address)
                asked[address] = now
                self._background.spawn(self._fetch_stacks(address))
        return {a: {"time": t, "tasks": tasks} for a, (t, tasks) in self._stacks.items()}

    async def _ask(self, address: str, msg: dict, timeout: float, what: str) -> dict | None:
        """A worker's reply to ``msg``, or None when it is gone, slow or refuses (logged at
        debug level: the part asks again at a later poll)."""
        try:
            reply, _ = await self._worker_pool().get(address).request(msg, timeout=timeout)
            return reply
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - gone, slow, refused
            logger.debug("the %s of %s: %s: %s", what, address, type(e).__name__, e)
            return None

    async def interrupt(self, key: str) -> dict:
        """Interrupt task ``key`` where it runs now (the dashboard page's Interrupt button, as
        ``client.interrupt``): ``{worker: [key]}``, or ``{}`` when it is not running (or the
        worker did not answer)."""
        ts = self.scheduler.state.tasks.get(key)
        if ts is None or ts.state != "processing" or ts.processing_on is None:
            return {}
        address = ts.processing_on.address
        reply = await self._ask(address, {"op": ops.INTERRUPT_TASK, "keys": [key]}, LOG_TIMEOUT, "interrupt")
        keys = list((reply or {}).get("interrupted") or [])
        return {address: keys} if keys else {}

    async def _fetch_stacks(self, address: str) -> None:
        try:
            reply = await self._ask(address, {"op": ops.CALL_STACK}, LOG_TIMEOUT, "call stacks")
            if reply is not None and address in self.scheduler.state.workers:
                self._stacks[address] = (time.time(), dict(reply.get("stacks") or {}))
        finally:
            self._stacks_pending.discard(address)

    async def _fetch_profile(self, address: str) -> None:
        tree = self.profile
        try:
            reply = await self._ask(address, {"op": ops.PROFILE, "duration": PROFILE_SECONDS,
                                              "interval": PROFILE_INTERVAL, "tree": True},
                                    PROFILE_SECONDS + LOG_TIMEOUT, "profile")
            if reply is not None and self.profile is tree is not None:  # (not into a tree reset since)
                tree.merge(reply.get("tree") or [])
        finally:
            self._profiling.discard(address)

    def _worker_pool(self) -> ConnectionPool:
        """Connections to the workers, as a client's (opened on first use)."""
        if self._pool is None:
            self._pool = ConnectionPool(self.scheduler.security)
        return self._pool

    async def worker_logs(self, address: str, n: int) -> list:
        """A worker's last ``n`` log records, ``[(level, message), ...]``, asked as a client asks."""
        reply, _ = await self._worker_pool().get(address).request({"op": ops.GET_LOGS, "n": n}, timeout=LOG_TIMEOUT)
        return [tuple(r) for r in reply["logs"]]

    # ------------------------------------------------------------------ the op
    def poll(self, parts=None, since: int | None = None, memory_since: dict | None = None,
             max_records: int | None = None, logs_since: dict | None = None,
             activity_since: int | None = None, reset=None) -> dict:
        """One reply of the ``telemetry`` op: the ``parts`` asked for (all of ``PARTS`` when
        None) since the caller's cursors. The dashboard page's server (``xsched/dashboard/
        server.py``) calls it on the scheduler's loop; clients send the op.

        >>> from xsched.scheduler.server import Scheduler
        >>> ext = Scheduler().extensions["telemetry"]      # (not started: no worker, no task)
        >>> reply = ext.poll(["workers", "task-stream"], since=0)
        >>> reply["workers"], reply["task_stream"]["index"], rows_of(reply["task_stream"]["runs"])
        ([], 0, [])
        """
        parts = parts or PARTS
        if reset and "profile" in reset:  # (every dashboard's profile starts again: there is one)
            self.profile, self.profile_since, self._profile_rows = StackTree(), time.time(), (-1, [])
        self.story_recorder()  # a dashboard looks: from now on its stories say when and where
        reply: dict = {"time": time.time()}
        if "task-stream" in parts:
            reply["task_stream"] = self.task_stream(since, max_records or MAX_RECORDS)
            reply["activity"] = self.activity(activity_since, max_records or MAX_RECORDS)
        if "workers" in parts:
            reply["workers"] = self.workers()
        if "groups" in parts:
            counts = self.group_counts()
            reply["groups"] = counts.rows()
            reply["group_edges"] = counts.edge_list()
        if "memory" in parts:
            reply["memory"], reply["memory_since"] = self.memory(memory_since)
        if "logs" in parts:
            reply["logs"], reply["logs_since"] = self.recent_logs(logs_since)
        if "profile" in parts:
            reply["profile"] = self.profile_part()
        if "stacks" in parts:
            reply["stacks"] = self.stacks_part()
        return reply

    def _op_telemetry(self, peer, h, payload) -> dict:
        return self.poll(h.get("parts"), h.get("since"), h.get("memory_since"), h.get("max_records"),
                         h.get("logs_since"), h.get("activity_since"), h.get("reset"))

    OPS = {ops.TELEMETRY: _op_telemetry}
