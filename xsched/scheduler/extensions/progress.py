"""Progress of a set of keys, counted on the scheduler and pushed to the client.

The ``progress`` scheduler extension (see ``base.py`` for the protocol).

Data flow::

    client --subscribe-progress {keys, sub}--> ProgressExtension.subscribe
        walks the dependencies of ``keys`` once, counts per group [done, erred, total]
        <--reply {sub, groups, done}--
    SchedulerState._set_state -> transition_hooks -> ProgressExtension.transition(ts, start, finish)
        O(1) per transition: a key -> subscriptions index; marks the subscription dirty
    a task launches tasks (worker_client): its update-graph names it as ``parent``
        Scheduler._op_update_graph -> ProgressExtension.launched(parent, tasks)
        -> adopt_launched: every subscription counting the parent counts them too
    _flush_loop (one asyncio task, owned here): wakes on the first change, sends
        {"op": "progress", sub, groups, done} to each dirty subscription's client,
        then sleeps ``interval`` (100 ms), so a client gets at most ten updates a second
    a subscription ends when all its keys are done or erred (the last message has
    done=True), on unsubscribe-progress, or when its client goes away.

Counting rules (per key of the subscription):

* ``done`` when the key reaches memory (or is in memory at subscription);
* ``erred`` when it reaches erred; a retried key (erred -> released -> waiting) and a
  key whose data was lost and is recomputed (memory -> released -> waiting) go back to
  pending;
* a pending key that is forgotten (its futures were released or cancelled) leaves the
  total;
* a task launched by a counted task (``worker_client()`` inside it) is counted from then
  on, and so on down the recursion: totals grow while tasks launch, and a bar on
  ``client.submit(fib, 12)`` ends with every fib task launched under it done. Tasks reach
  the scheduler while their parent runs, so a parent that waits for what it launched is
  never done before them; one that launches and returns at once (fire and forget) may
  finish its subscription first, and what it launched then is not counted.

The counting class ``Subscription`` has no clocks or sockets and is tested by driving a
``SchedulerState`` with events.

>>> from xsched.scheduler.state import SchedulerState, AddWorker, UpdateGraph, NewTask, TaskFinished
>>> state = SchedulerState()
>>> _ = state.handle(AddWorker("w", nthreads=1))
>>> _ = state.handle(UpdateGraph("c", [NewTask("inc-1", b"", [], (0,))], ["inc-1"]))
>>> sub = Subscription.from_state("s1", "c", state, ["inc-1"])
>>> sub.groups()
{'inc': [0, 0, 1]}
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Iterable

from ...protocol.schemas import BadMessage
from ...protocol import ops
from .base import SchedulerExtension

logger = logging.getLogger("xsched.scheduler.extensions.progress")

__all__ = ["ProgressExtension", "Subscription", "adopt_launched"]

PENDING, DONE, ERRED = 0, 1, 2


class Subscription:
    """One client's view of the progress of some keys: per group [done, erred, total]."""

    __slots__ = ("id", "client", "complete", "status", "group_of", "counts", "dirty", "n_pending", "paused")

    def __init__(self, sub_id: str, client: str, complete: bool = True):
        self.id = sub_id
        self.client = client
        self.complete = complete  # False: count only what was left to compute (launched tasks too)
        self.status: dict[str, int] = {}      # key -> PENDING / DONE / ERRED
        self.group_of: dict[str, str] = {}
        self.counts: dict[str, list[int]] = {}  # group -> [done, erred, total]
        self.dirty = False
        self.n_pending = 0
        self.paused: set[str] = set()  # pending keys paused at a breakpoint (the debugging extension)

    @classmethod
    def from_state(cls, sub_id: str, client: str, state, keys: Iterable[str], complete: bool = True) -> "Subscription":
        """Walk what ``keys`` need through ``state.tasks``.

        A key in memory is done, and so is everything below it (its inputs ran before
        it; they may have been released since). Below an erred key only erred inputs and
        inputs in memory are followed (the others will not run for it).
        ``complete=False`` leaves out keys already done or erred (and does not walk below them).
        """
        sub = cls(sub_id, client, complete)
        tasks = state.tasks
        stack = [(tasks[k], None) for k in keys if k in tasks]
        seen: set[str] = set()
        while stack:
            ts, below = stack.pop()  # below: None, or the state ("memory"/"erred") of a key above
            if ts.key in seen or ts.key not in tasks:
                continue
            if ts.state == "memory" or below == "memory":
                seen.add(ts.key)
                if complete:
                    sub._add(ts.key, ts.group, DONE)
                    stack.extend((d, "memory") for d in ts.dependencies)
            elif ts.state == "erred":
                seen.add(ts.key)
                if complete:
                    sub._add(ts.key, ts.group, ERRED)
                    stack.extend((d, "erred") for d in ts.dependencies if d.state in ("erred", "memory"))
            elif below is None:
                seen.add(ts.key)
                sub._add(ts.key, ts.group, PENDING)
                stack.extend((d, None) for d in ts.dependencies)
        sub._order_groups(tasks)
        return sub

    def _order_groups(self, tasks) -> None:
        """Groups in the order they start running (earliest task priority first): read, sum, analyse."""
        first: dict[str, tuple] = {}
        for key, group in self.group_of.items():
            ts = tasks.get(key)
            prio = tuple(ts.priority) if ts is not None else ()
            if group not in first or prio < first[group]:
                first[group] = prio
        try:
            order = sorted(self.counts, key=lambda g: first.get(g, ()))
        except TypeError:  # priorities of mixed shapes: keep the walk's order
            return
        self.counts = {g: self.counts[g] for g in order}

    def adopt(self, tasks, keys: Iterable[str]) -> list[str]:
        """Count ``keys`` too (tasks a counted task launched); returns the keys newly counted.

        Each key counts as it stands in ``tasks`` (the scheduler's key -> TaskState): done
        when in memory, erred when erred, else pending. Keys counted already (launched twice, by
        pure calls that share a key) and keys the scheduler does not have are left out;
        so are done or erred keys when ``complete`` is False. New groups go after the
        others, in the order they first appear.

        >>> from xsched.scheduler.state import SchedulerState, UpdateGraph, NewTask
        >>> state = SchedulerState()
        >>> _ = state.handle(UpdateGraph("c", [NewTask("fib-1", b""), NewTask("add-1", b"")], ["fib-1", "add-1"]))
        >>> sub = Subscription("s1", "c")
        >>> sub.adopt(state.tasks, ["fib-1", "add-1", "fib-1", "gone-1"])
        ['fib-1', 'add-1']
        >>> sub.groups()
        {'fib': [0, 0, 1], 'add': [0, 0, 1]}
        """
        added = []
        for key in keys:
            ts = tasks.get(key)
            if ts is None or key in self.status:
                continue
            status = DONE if ts.state == "memory" else ERRED if ts.state == "erred" else PENDING
            if status != PENDING and not self.complete:
                continue
            self._add(key, ts.group, status)
            added.append(key)
        if added:
            self.dirty = True
        return added

    def _add(self, key: str, group: str, status: int) -> None:
        self.status[key] = status
        self.group_of[key] = group
        c = self.counts.setdefault(group, [0, 0, 0])
        c[2] += 1
        if status == DONE:
            c[0] += 1
        elif status == ERRED:
            c[1] += 1
        else:
            self.n_pending += 1

    def _move(self, key: str, new: int) -> None:
        old = self.status[key]
        if old == new:
            return
        c = self.counts[self.group_of[key]]
        if old == DONE:
            c[0] -= 1
        elif old == ERRED:
            c[1] -= 1
        else:
            self.n_pending -= 1
        if new == DONE:
            c[0] += 1
        elif new == ERRED:
            c[1] += 1
        else:
            self.n_pending += 1
        self.status[key] = new
        self.dirty = True

    def set_paused(self, key: str, paused: bool) -> bool:
        """A counted pending key paused at a breakpoint, or going on; True if that changed.

        >>> sub = Subscription("s1", "c"); sub._add("g-1", "g", PENDING)
        >>> sub.set_paused("g-1", True), sub.message()["paused"]
        (True, {'g': 1})
        >>> sub.transition("g-1", "processing", "memory"), sub.paused
        (False, set())
        """
        if paused and self.status.get(key) == PENDING and key not in self.paused:
            self.paused.add(key)
        elif not paused and key in self.paused:
            self.paused.discard(key)
        else:
            return False
        self.dirty = True
        return True

    def paused_by_group(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for key in self.paused:
            g = self.group_of[key]
            out[g] = out.get(g, 0) + 1
        return out

    def transition(self, key: str, start: str, finish: str) -> bool:
        """Apply one task transition; True when the key leaves this subscription."""
        if self.paused and finish != "processing":
            self.paused.discard(key)  # (it went on: done, erred, released...)
        if finish == "memory":
            self._move(key, DONE)
        elif finish == "erred":
            self._move(key, ERRED)
        elif finish == "waiting":
            self._move(key, PENDING)  # retried, or its data was lost and it is recomputed
        elif finish == "forgotten":
            if self.status.get(key) == PENDING:  # cancelled or released before it finished
                c = self.counts[self.group_of[key]]
                c[2] -= 1
                self.n_pending -= 1
                if c[2] == 0:
                    del self.counts[self.group_of[key]]
                self.dirty = True
            self.status.pop(key, None)
            self.group_of.pop(key, None)
            return True
        return False

    @property
    def finished(self) -> bool:
        """Nothing left pending: every key is done or erred (or was forgotten)."""
        return self.n_pending <= 0

    def groups(self) -> dict[str, list[int]]:
        """A copy: {group: [done, erred, total]}."""
        return {g: list(c) for g, c in self.counts.items()}

    def message(self) -> dict:
        msg = {"op": ops.PROGRESS, "sub": self.id, "groups": self.groups(), "done": self.finished}
        if self.paused:  # {group: tasks of it paused at a breakpoint}
            msg["paused"] = self.paused_by_group()
        return msg


def adopt_launched(watch: dict[str, set[Subscription]], tasks, parent: str, keys: list[str]) -> list[Subscription]:
    """Count the tasks ``parent`` launched in every subscription that counts ``parent``.

    ``watch`` is the index key -> subscriptions counting it (``ProgressExtension.watch``);
    the newly counted keys are added to it, so what they launch in turn is counted as
    well, however deep the recursion goes. ``tasks`` is the scheduler's key -> TaskState.
    Returns the subscriptions that changed (they are marked dirty). No sockets, no clocks:
    the unit tests drive it with a ``SchedulerState``.

    >>> from xsched.scheduler.state import SchedulerState, UpdateGraph, NewTask
    >>> state = SchedulerState()
    >>> _ = state.handle(UpdateGraph("c", [NewTask("fib-6", b"")], ["fib-6"]))
    >>> sub = Subscription.from_state("s1", "c", state, ["fib-6"])
    >>> watch = {"fib-6": {sub}}
    >>> _ = state.handle(UpdateGraph("wc", [NewTask("fib-5", b""), NewTask("fib-4", b"")], ["fib-5", "fib-4"]))
    >>> [s.id for s in adopt_launched(watch, state.tasks, "fib-6", ["fib-5", "fib-4"])]
    ['s1']
    >>> sub.groups(), sorted(watch)
    ({'fib': [0, 0, 3]}, ['fib-4', 'fib-5', 'fib-6'])
    """
    changed = []
    for sub in list(watch.get(parent, ())):
        added = sub.adopt(tasks, keys)
        for key in added:
            watch.setdefault(key, set()).add(sub)
        if added:
            changed.append(sub)
    return changed


class ProgressExtension(SchedulerExtension):
    """Serves ``subscribe-progress`` / ``unsubscribe-progress`` and pushes ``progress``.

    Created by the Scheduler (``scheduler.extensions["progress"]``). ``interval`` is the
    shortest time between two pushes to one subscription, in seconds.
    """

    name = "progress"

    def __init__(self, scheduler, interval: float = 0.1):
        super().__init__(scheduler)  # (its ops and its transition hook: see OPS and transition below)
        self.interval = interval
        self.subs: dict[str, Subscription] = {}
        self.watch: dict[str, set[Subscription]] = {}  # key -> subscriptions counting it
        self._changed = asyncio.Event()
        self._flusher: asyncio.Task | None = None
        self.closed = False

    def __repr__(self) -> str:
        return f"<ProgressExtension subscriptions={len(self.subs)} keys={len(self.watch)}>"

    # ------------------------------------------------------------------ ops
    def _op_subscribe(self, peer, header, payload) -> dict:
        client = self.scheduler._client_of(peer)
        keys = header.get("keys")
        if not isinstance(keys, (list, tuple)) or not all(isinstance(k, str) for k in keys):
            raise ValueError("subscribe-progress needs 'keys': a list of key strings")
        sub_id = str(header.get("sub") or f"progress-{uuid.uuid4().hex[:12]}")
        return self.subscribe(client, keys, sub_id, bool(header.get("complete", True)))

    def _op_unsubscribe(self, peer, header, payload) -> dict:
        self.unsubscribe(str(header.get("sub")))
        return {}

    OPS = {ops.SUBSCRIBE_PROGRESS: _op_subscribe, ops.UNSUBSCRIBE_PROGRESS: _op_unsubscribe}

    def subscribe(self, client: str, keys: list[str], sub_id: str, complete: bool = True) -> dict:
        """Start counting; the reply holds the first counts (and done=True if nothing is left)."""
        if sub_id in self.subs:
            # a refusal (the requester hears why; logged once per peer, without a traceback)
            raise BadMessage(f"progress subscription {sub_id!r} exists already; use a new id", "sub in use")
        sub = Subscription.from_state(sub_id, client, self.scheduler.state, keys, complete)
        missing = [k for k in keys if k not in self.scheduler.state.tasks]
        debugging = self.scheduler.extensions.get("debugging")
        for key in (debugging.paused if debugging is not None else ()):
            sub.set_paused(key, True)
        reply = {"sub": sub_id, "groups": sub.groups(), "done": sub.finished, "missing": missing[:100]}
        if sub.paused:
            reply["paused"] = sub.paused_by_group()
        if not sub.finished:
            self.subs[sub_id] = sub
            for key in sub.status:
                self.watch.setdefault(key, set()).add(sub)
            self._ensure_flusher()
        return reply

    def unsubscribe(self, sub_id: str) -> None:
        sub = self.subs.pop(sub_id, None)
        if sub is None:
            return
        for key in sub.status:
            subs = self.watch.get(key)
            if subs is not None:
                subs.discard(sub)
                if not subs:
                    del self.watch[key]

    def launched(self, parent: str, tasks) -> None:
        """The running task ``parent`` submitted ``tasks`` (NewTasks of an update-graph that
        named it, already handled by the state): count them wherever ``parent`` counts.

        Called by the Scheduler for every update-graph sent from inside a task; costs one
        lookup when no progress bar counts the parent.
        """
        if parent not in self.watch:
            return
        if adopt_launched(self.watch, self.scheduler.state.tasks, parent, [t.key for t in tasks]):
            self._changed.set()

    def set_paused(self, key: str, paused: bool) -> None:
        """(The debugging extension) ``key`` paused at a breakpoint, or went on: the bars
        counting it say so."""
        changed = False
        for sub in self.watch.get(key, ()):
            changed = sub.set_paused(key, paused) or changed
        if changed:
            self._changed.set()

    def remove_client(self, client: str) -> None:
        """The client went away: drop its subscriptions (called by the Scheduler)."""
        for sub_id in [s.id for s in self.subs.values() if s.client == client]:
            self.unsubscribe(sub_id)

    # ------------------------------------------------------------------ counting
    def transition(self, ts, start: str, finish: str) -> None:
        """The state machine's hook: O(1) for a key no subscription counts."""
        subs = self.watch.get(ts.key)
        if not subs:
            return
        changed = False
        for sub in list(subs):
            if sub.transition(ts.key, start, finish):
                subs.discard(sub)
            changed = changed or sub.dirty
        if not subs:
            self.watch.pop(ts.key, None)
        if changed:
            self._changed.set()

    def flush(self) -> int:
        """Send one update to every subscription that changed; end finished ones. Returns #sent."""
        sent = 0
        for sub in [s for s in self.subs.values() if s.dirty]:
            sub.dirty = False
            if sub.client not in self.scheduler.client_peer:
                self.unsubscribe(sub.id)
                continue
            self.scheduler.send_to_client(sub.client, sub.message())
            sent += 1
            if sub.finished:
                self.unsubscribe(sub.id)
        return sent

    def _ensure_flusher(self) -> None:
        if self._flusher is not None or self.closed:
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # driven by hand (tests): call flush() yourself
            return
        self._flusher = asyncio.ensure_future(self._flush_loop())

    async def _flush_loop(self) -> None:
        while True:
            await self._changed.wait()
            self._changed.clear()
            try:
                self.flush()
            except Exception:  # never let a display feature take the scheduler down
                logger.exception("progress: sending updates failed")
            await asyncio.sleep(self.interval)

    async def close(self) -> None:
        """Stop the flusher (the Scheduler calls this when it closes)."""
        self.closed = True
        if self._flusher is not None:
            self._flusher.cancel()
            try:
                await self._flusher
            except (asyncio.CancelledError, Exception):
                pass
            self._flusher = None
        self.subs.clear()
        self.watch.clear()
        super().close()  # (detaches the transition hook)
