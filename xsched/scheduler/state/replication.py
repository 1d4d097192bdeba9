"""Copies on demand: ``client.replicate`` and ``client.rebalance``, planned from the state alone.

Both reuse what retirement does (``retirement.py``): a destination worker is told
``acquire-replicas`` (the key and its holders), copies the key from a holder and answers
``add-keys``; the ``AddKeys`` event makes it a holder like any other. Nothing new runs on
the workers.

- ``Replicate(request, keys, n, workers)``: each key held by ``n`` of ``workers`` (``n``
  None: by all of them; ``workers`` None: every running worker; ``n`` beyond their number:
  all of them). Copies go to the running workers with the most free memory, else holding
  the fewest bytes (as a retirement's do; copies planned in the same request count). A key
  already held by ``n`` or more of them is left alone: copies are only added, never removed.
- ``Rebalance(request, keys, workers)``: even out the bytes held (``WorkerState.nbytes``,
  the sum of the ``nbytes`` of the keys each holds) among ``workers`` (None: every running
  or paused worker), moving ``keys`` (None: any) from workers above the mean to running
  workers below it: :meth:`Replication.rebalance_plan`. A move is copy-then-free: the
  source hears ``free-keys`` only once the copy has landed, and only if no task needs the
  key then, so a worker dying in the middle loses nothing.

A key is never moved while a task that needs it is processing (it may be running on the
source, or its worker fetching it from there), nor while other copies of it are under way
(a retirement's, another request's). Each request is a ``ReplicaRequest`` in
``replications`` (request id -> it) until every copy it asked for has landed or failed.
A copy fails, and the rest goes on, when its key is released or lost, or its destination
leaves; a destination that reported every holder it was told of as missing is told the
holders known since, once each, or the copy fails. ``AbandonReplication`` ends a request
early (its caller's timeout). The outcome goes out as ``ReplicationDone`` for the server
to answer the waiting client.

>>> from xsched.scheduler.state import SchedulerState, AddWorker, AddKeys, Replicate
>>> s = SchedulerState()
>>> _ = s.handle(AddWorker("tcp://a"), AddWorker("tcp://b"), AddKeys("tcp://a", {"x": 8}, client="c"))
>>> [(o.worker, o.msg["op"]) for o in s.handle(Replicate("r1", ["x"], n=2))]
[('tcp://b', 'acquire-replicas')]
>>> s.handle(AddKeys("tcp://b", {"x": 8}))
[ReplicationDone(request='r1', result={'who_has': {'x': ['tcp://a', 'tcp://b']}, 'failed': {}})]
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from typing import Iterable

from ...protocol import ops
from .entities import TaskState, WorkerState
from .events import AbandonReplication, MissingData, Rebalance, Replicate, ReplicationDone, ToWorker
from .retirement import acquire_replicas_msg

#: The type name workers report for an actor's value (the handle class of client/actors.py).
ACTOR_TYPE = "Actor"

#: Keys named in a refusal, at most.
_NAMED = 10


class ReplicaRequest:
    """One replicate or rebalance in flight: the copies awaited, and what became of the others."""

    __slots__ = ("request", "kind", "keys", "pending", "told", "missing", "moved", "failed", "stimulus_id")

    def __init__(self, request: str, kind: str, keys: list, stimulus_id: str):
        self.request = request
        self.kind = kind  # "replicate" | "rebalance"
        self.keys = keys  # replicate: the keys asked about (reported with their holders)
        # (key, destination) -> the source to free once the copy landed (rebalance), or None
        self.pending: dict[tuple[str, str], str | None] = {}
        self.told: dict[tuple[str, str], set[str]] = {}  # holders the destination was told of
        self.missing: dict[tuple[str, str], set[str]] = {}  # of those, the ones it found without the key
        self.moved: dict[str, list[str]] = {}  # rebalance: key -> [source, destination]
        self.failed: dict[str, list[str]] = defaultdict(list)  # key -> what was not done, and why
        self.stimulus_id = stimulus_id

    def __repr__(self) -> str:
        return f"<ReplicaRequest {self.request!r} {self.kind} pending={len(self.pending)}>"


class Replication:
    """Replicate and rebalance requests, progressed after every event (a mixin of ``SchedulerState``)."""

    # ------------------------------------------------------------------ plans (pure)
    def replicate_plan(self, keys: Iterable[str], n: int | None = None, workers: Iterable | None = None
                       ) -> tuple[list[tuple[str, str]], dict[str, str]]:
        """The copies a ``Replicate`` would ask for, without asking: ``([(key, destination)],
        {key: why it gets fewer copies than asked})``. Keys not in memory are skipped.

        >>> from xsched.scheduler.state import SchedulerState, AddWorker, AddKeys
        >>> s = SchedulerState()
        >>> _ = s.handle(*[AddWorker(f"w{i}") for i in range(3)], AddKeys("w0", {"x": 8}, client="c"))
        >>> s.replicate_plan(["x"], n=2)
        ([('x', 'w1')], {})
        """
        pool = self._replication_pool(workers, ("running",))
        target = len(pool) if n is None else min(int(n), len(pool))
        members = set(pool)
        receivers = [ws for ws in pool if ws.status == "running"]
        planned: dict[str, int] = defaultdict(int)  # address -> bytes copied there by this plan
        copies: list[tuple[str, str]] = []
        short: dict[str, str] = {}
        for key in dict.fromkeys(keys):
            ts = self.tasks.get(key)
            if ts is None or ts.state != "memory":
                continue
            need = target - sum(1 for ws in ts.who_has if ws in members)
            if need <= 0:
                continue
            free = sorted((ws for ws in receivers if ws not in ts.who_has),
                          key=lambda ws: self._destination_cost(ws, planned))
            for ws in free[:need]:
                planned[ws.address] += max(ts.nbytes, 0)
                copies.append((key, ws.address))
            if len(free) < need:
                idle = sorted(ws.address for ws in pool if ws.status != "running" and ws not in ts.who_has)
                short[key] = (f"{target - need + len(free)} of the {target} copies asked for: "
                              f"{', '.join(idle)} cannot take one now (paused or retiring)")
        return copies, short

    def rebalance_plan(self, keys: Iterable[str] | None = None, workers: Iterable | None = None
                       ) -> list[tuple[str, str, str]]:
        """The moves a ``Rebalance`` would make, without making them: ``[(key, source, destination)]``.

        Senders are the workers holding more bytes than the mean of ``workers``, most loaded
        first; each offers its movable keys largest first to the least loaded running worker
        below the mean that lacks the key. A key of ``b`` bytes moves from a sender holding
        ``s`` to a receiver holding ``r`` when ``2 b <= s - r``: every move narrows the gap
        between the two (the spread only shrinks, nothing oscillates). A sender stops at the
        mean, a receiver once it reaches it. Each key moves at most once; keys of unknown
        or zero size, keys a processing task needs, keys with copies under way and actors stay.

        >>> from xsched.scheduler.state import SchedulerState, AddWorker, AddKeys
        >>> s = SchedulerState()
        >>> _ = s.handle(AddWorker("a"), AddWorker("b"), AddKeys("a", {"x": 10, "y": 10}, client="c"))
        >>> s.rebalance_plan()
        [('x', 'a', 'b')]
        """
        pool = self._replication_pool(workers, ("running", "paused"))
        pool = [ws for ws in pool if ws.status in ("running", "paused")]
        if len(pool) < 2:
            return []
        load = {ws: ws.nbytes for ws in pool}
        mean = sum(load.values()) / len(pool)
        wanted = None if keys is None else {self.tasks[k] for k in keys if k in self.tasks}
        busy = self._keys_being_copied()
        receivers = [(load[ws], ws.address, ws) for ws in pool if ws.status == "running" and load[ws] < mean]
        heapq.heapify(receivers)
        moves: list[tuple[str, str, str]] = []
        moved: set[TaskState] = set()
        for sender in sorted(pool, key=lambda ws: (-load[ws], ws.address)):
            if load[sender] <= mean or not receivers:
                break
            held = sender.has_what if wanted is None else sender.has_what & wanted
            offers = sorted((ts for ts in held if ts not in moved and self._movable(ts, busy)),
                            key=lambda ts: (-ts.nbytes, ts.key))
            for ts in offers:
                if load[sender] <= mean or not receivers:
                    break
                skipped = []
                while receivers and receivers[0][2] in ts.who_has:
                    skipped.append(heapq.heappop(receivers))
                if receivers and 2 * ts.nbytes <= load[sender] - receivers[0][0]:
                    _, _, receiver = heapq.heappop(receivers)
                    load[sender] -= ts.nbytes
                    load[receiver] += ts.nbytes
                    moves.append((ts.key, sender.address, receiver.address))
                    moved.add(ts)
                    if load[receiver] < mean:
                        heapq.heappush(receivers, (load[receiver], receiver.address, receiver))
                for entry in skipped:
                    heapq.heappush(receivers, entry)
        return moves

    def _replication_pool(self, workers: Iterable | None, default_status: tuple) -> list[WorkerState]:
        """The workers a request is about: those named (unknown names skipped), or every
        worker of ``default_status``; sorted by address."""
        if workers is None:
            return sorted(ws for ws in self.workers.values() if ws.status in default_status)
        found = {self.resolve_worker(w) for w in workers}
        return sorted(self.workers[a] for a in found if a is not None)

    def _keys_being_copied(self) -> set[str]:
        """Keys with copies under way: a retirement's, or a replicate's or rebalance's."""
        busy = set(self.replicating)
        for req in self.replications.values():
            busy.update(key for key, _ in req.pending)
        return busy

    def _movable(self, ts: TaskState, busy: set[str]) -> bool:
        # an actor's value is a handle naming the worker whose process holds the object: moving
        # the handle would free that object there (client/actors.py), so actors stay put
        return (ts.state == "memory" and ts.nbytes > 0 and ts.key not in busy and ts.type != ACTOR_TYPE
                and not any(d.state == "processing" for d in ts.dependents))

    def _replication_refusal(self, kind: str, keys: list | None, workers: list | None, n=None) -> str | None:
        """Why a request cannot start (named, with what to do), or None."""
        if kind == "replicate" and n is not None and (type(n) is not int or n < 1):
            return f"replicate: n={n!r}: the number of workers to hold each key must be an integer >= 1 (or None: all)"
        if workers is not None:
            unknown = [w for w in workers if self.resolve_worker(w) is None]
            if unknown:
                known = sorted(str(ws.name) for ws in self.workers.values())
                return (f"{kind}: no worker named {', '.join(repr(w) for w in unknown[:_NAMED])} is connected; "
                        f"the workers are {known[:20]}{' ...' if len(known) > 20 else ''} (names or addresses)")
        if keys is not None:
            bad = [(k, self.tasks[k].state if k in self.tasks else None) for k in keys
                   if k not in self.tasks or self.tasks[k].state != "memory"]
            if bad:
                named = ", ".join(f"{k!r} ({state or 'not known to the scheduler: released or cancelled'})"
                                  for k, state in bad[:_NAMED])
                more = f" and {len(bad) - _NAMED} more" if len(bad) > _NAMED else ""
                return (f"{kind}: {len(bad)} of the keys are not in memory: {named}{more}. Wait for them first "
                        f"(xsched.wait(futures) or future.result()), then call {kind} again; compute or scatter "
                        "released ones again")
        return None

    # ------------------------------------------------------------------ events
    def _ev_replicate(self, ev: Replicate) -> dict:
        if self._start_replication(ev, "replicate", ev.keys, ev.workers, ev.n):
            req = self.replications[ev.request]
            copies, short = self.replicate_plan(ev.keys, ev.n, ev.workers)
            for key, why in short.items():
                req.failed[key].append(why)
            self._ask_for_copies(req, [(key, dest, None) for key, dest in copies], ev.stimulus_id)
        return {}

    def _ev_rebalance(self, ev: Rebalance) -> dict:
        if self._start_replication(ev, "rebalance", ev.keys, ev.workers):
            moves = self.rebalance_plan(ev.keys, ev.workers)
            self._ask_for_copies(self.replications[ev.request], moves_as_copies(moves), ev.stimulus_id)
        return {}

    def _ev_abandon_replication(self, ev: AbandonReplication) -> dict:
        req = self.replications.get(ev.request)
        if req is not None:
            for key, dest in list(req.pending):
                self._copy_failed(req, key, dest, f"still under way when {ev.reason} (it may land later; "
                                                  "no copy was freed for it)")
            self._finish_replication(req)
        return {}

    def _start_replication(self, ev, kind: str, keys, workers, n=None) -> bool:
        """File the request, or answer it at once with a refusal; True when it goes on."""
        keys = None if keys is None else list(dict.fromkeys(keys))
        workers = None if workers is None else list(workers)
        refusal = self._replication_refusal(kind, keys, workers, n)
        if refusal is None and ev.request in self.replications:
            refusal = f"{kind}: a request named {ev.request!r} is under way already"
        if refusal is not None:
            self._out.append(ReplicationDone(ev.request, {"refused": refusal}))
            return False
        self.replications[ev.request] = ReplicaRequest(ev.request, kind, keys or [], ev.stimulus_id)
        return True

    def _replica_fetch_failed(self, ev: MissingData) -> None:
        """A destination found a holder without the key: note it against its copies."""
        for req in self.replications.values():
            missing = req.missing.get((ev.key, ev.worker))
            if missing is not None:
                missing.add(ev.errant_worker)

    # ------------------------------------------------------------------ progress (after every event)
    def _ask_for_copies(self, req: ReplicaRequest, copies: list[tuple[str, str, str | None]], sid: str) -> None:
        """acquire-replicas, one message per destination: (key, destination, source to free or None)."""
        by_dest: dict[str, list[TaskState]] = defaultdict(list)
        for key, dest, source in copies:
            ts = self.tasks[key]
            req.pending[(key, dest)] = source
            req.told[(key, dest)] = {ws.address for ws in ts.who_has}
            req.missing[(key, dest)] = set()
            by_dest[dest].append(ts)
        for dest, tss in by_dest.items():
            self._out.append(ToWorker(dest, acquire_replicas_msg(tss, sid)))

    def _progress_replications(self, sid: str) -> None:
        """After every event: note the copies that landed, free their sources, end finished requests."""
        frees: dict[str, list[str]] = defaultdict(list)  # source -> keys it may free now
        for req in list(self.replications.values()):
            retry: dict[str, list[TaskState]] = defaultdict(list)
            for (key, dest), source in list(req.pending.items()):
                ts, dws = self.tasks.get(key), self.workers.get(dest)
                if ts is None or ts.state != "memory":
                    self._copy_failed(req, key, dest, "the key was released or lost before the copy landed")
                elif dws is not None and dws in ts.who_has:
                    self._copy_landed(req, ts, dws, source, frees)
                elif dws is None:
                    self._copy_failed(req, key, dest, f"{dest} left before the copy landed (nothing was freed "
                                                      "for it)")
                elif req.told[(key, dest)] <= req.missing[(key, dest)]:  # it tried every holder it knew
                    new = {ws.address for ws in ts.who_has} - req.told[(key, dest)]
                    if new:
                        req.told[(key, dest)] |= new
                        retry[dest].append(ts)
                    else:
                        self._copy_failed(req, key, dest, f"{dest} could not copy it from any holder")
            for dest, tss in retry.items():
                self._out.append(ToWorker(dest, acquire_replicas_msg(tss, sid)))
            if not req.pending:
                self._finish_replication(req)
        for source, keys in frees.items():
            self._out.append(ToWorker(source, {"op": ops.FREE_KEYS, "keys": keys, "stimulus_id": sid}))

    def _copy_landed(self, req: ReplicaRequest, ts: TaskState, dws: WorkerState, source: str | None,
                     frees: dict[str, list[str]]) -> None:
        """``dws`` holds its copy of ``ts``: a rebalance frees the source now (its key goes into
        ``frees``, the free-keys to send), if it safely can."""
        del req.pending[(ts.key, dws.address)]
        del req.told[(ts.key, dws.address)], req.missing[(ts.key, dws.address)]
        if source is None:
            return
        sws = self.workers.get(source)
        if sws is None or sws not in ts.who_has:  # the source left or lost it meanwhile: moved all the same
            req.moved[ts.key] = [source, dws.address]
            return
        why = None
        if any(d.state == "processing" for d in ts.dependents):
            why = "a task that needs it was started meanwhile"
        elif not self._safe_holder(dws):
            why = f"{dws.address} is retiring"
        elif ts.key in self.replicating:
            why = "a retirement is copying it"
        if why is not None:
            req.failed[ts.key].append(f"copied to {dws.address} but kept on {source}: {why}")
            return
        ts.who_has.discard(sws)
        sws.has_what.discard(ts)
        sws.nbytes -= max(ts.nbytes, 0)
        frees[source].append(ts.key)
        req.moved[ts.key] = [source, dws.address]

    def _copy_failed(self, req: ReplicaRequest, key: str, dest: str, why: str) -> None:
        del req.pending[(key, dest)]
        del req.told[(key, dest)], req.missing[(key, dest)]
        req.failed[key].append(f"no copy on {dest}: {why}")

    def _finish_replication(self, req: ReplicaRequest) -> None:
        del self.replications[req.request]
        failed = {key: "; ".join(whys) for key, whys in req.failed.items()}
        if req.kind == "replicate":
            result = {"who_has": self.who_has(req.keys), "failed": failed}
        else:
            result = {"moved": dict(req.moved), "failed": failed}
        self._out.append(ReplicationDone(req.request, result))

    def _end_replications(self, reason: str) -> None:
        """Every request ends now (the cluster restarts): its copies under way are not done."""
        for req in list(self.replications.values()):
            for key, dest in list(req.pending):
                self._copy_failed(req, key, dest, reason)
            self._finish_replication(req)

    def _validate_replications(self) -> None:
        for name, req in self.replications.items():
            assert req.request == name and req.pending, (
                f"replication {name!r} is filed wrongly or has nothing to wait for")
            assert set(req.pending) == set(req.told) == set(req.missing), f"replication {name!r}: tables drifted"
            for (key, dest), source in req.pending.items():
                ts, dws = self.tasks.get(key), self.workers.get(dest)
                assert ts is not None and ts.state == "memory", f"{key!r} is copied for {name!r} but not in memory"
                assert dws is not None and dws not in ts.who_has, f"{key!r}: copy to {dest} for {name!r} is stale"
                assert source != dest, f"{key!r} is moved from {dest} to itself for {name!r}"

    HANDLERS = {Replicate: _ev_replicate, Rebalance: _ev_rebalance, AbandonReplication: _ev_abandon_replication}


def moves_as_copies(moves: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """Rebalance moves ``(key, source, destination)`` as copies ``(key, destination, source)``.

    >>> moves_as_copies([("x", "a", "b")])
    [('x', 'b', 'a')]
    """
    return [(key, dest, source) for key, source, dest in moves]

