"""Locks, multi-locks, semaphores, queues, variables, events and pub/sub topics shared by clients and tasks.

The ``coordination`` scheduler extension (see ``base.py`` for the protocol). Its decisions
are those of ``CoordinationState`` (``coordination_state.py``, pure); this module only
turns requests into its events and carries out what it returns.

Data flow::

    client or task --lock-acquire {name, lease, timeout, worker}-->  _op_lock_acquire
        Acquire(..., wid) -> CoordinationState.handle
        (--multi-lock-acquire {names, lease, num_locks, timeout, worker}--> MultiLockAcquire)
            Reply(wid) for this request   -> answered now (the handler's return value)
            none yet: it waits in line    -> the handler returns a coroutine awaiting the
                                             request's future; call_later(timeout) -> Expire(wid)
            Reply(other wid)              -> that waiting request's future: its reply goes out
            Drop(wid)                     -> its requester left: cancelled, no reply
            Hold(holder, keys)            -> ClientDesiresKeys(holder, keys) on the state machine
            Unhold(holder)                -> RemoveClient(holder): a stored value lets go
    remove_client(client) / remove_worker(address) -> ClientGone / WorkerGone: the leases of
        those who left are released, and the next in line are granted
    restart(reason) (client.restart(): every task forgotten) -> Restarted: values holding
        futures stay, marked lost; a reply carrying one names, per item, the keys still
        unknown then (``lost: [[index, why, keys]]``: a key submitted again since is known,
        and its future simply binds to it) -> the taking client cancels those futures with why

Queue items and variable values arrive as frames with the keys of the futures in them
(like published datasets); the scheduler never unpickles them, refuses those larger than
``MAX_SHARED_VALUE`` and those naming keys it no longer knows.

>>> CoordinationExtension.name, sorted(CoordinationExtension.OPS)[:3]
('coordination', ['event-clear', 'event-is-set', 'event-set'])
"""

from __future__ import annotations

import asyncio
import itertools
import logging

from ...comm import Msg
from ...protocol import ops
from ...protocol.messages import frame_nbytes, split_objects
from ...protocol.schemas import MAX_SHARED_VALUE
from ...protocol.serialize import frame_bytes
from ..state import ClientDesiresKeys, RemoveClient
from .base import SchedulerExtension
from .coordination_state import (
    Acquire, ClientGone, CoordinationState, Drop, EventClear, EventSet, EventWait, Expire, Hold, Item,
    MultiLockAcquire, MultiLockRelease, Owner, Publish, QueueGet, QueuePut, Release, Reply, Restarted, Subscribe,
    Unhold, Unsubscribe, VariableDelete, VariableGet, VariableSet, WorkerGone,
)

__all__ = ["CoordinationExtension"]

logger = logging.getLogger("xsched.scheduler")

#: the longest a request waits before the scheduler answers it timed out (about 68 years)
_LONGEST_WAIT = float(2**31)


class CoordinationExtension(SchedulerExtension):
    """Serves the ops of Lock, MultiLock, Semaphore, Queue, Variable and Event (``xsched.client.coordination``)."""

    name = "coordination"

    def __init__(self, scheduler):
        super().__init__(scheduler)
        self.state = CoordinationState()
        self._wids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future] = {}  # wid -> the future its handler awaits
        self._timers: dict[int, asyncio.TimerHandle] = {}
        # (client, ticket) -> wid of a waiting queue get or put its caller named, so that it
        # can leave the line when the caller gives up (queue-abandon); and back
        self._tickets: dict[tuple[str, str], int] = {}
        self._ticket_of: dict[int, tuple[str, str]] = {}

    def __repr__(self) -> str:
        st = self.state
        return (f"<CoordinationExtension locks/semaphores={len(st.leases)} queues={len(st.queues)} "
                f"variables={len(st.variables)} events set={len(st.events)} waiting={len(st.waiting)}>")

    # ------------------------------------------------------------------ carrying out
    def _run(self, ev, own: int | None = None) -> Reply | None:
        """Feed one event; carry out the instructions; return the Reply to the request ``own``
        (the one being handled now, if any) instead of resolving a waiting future."""
        mine = None
        for inst in self.state.handle(ev):
            kind = type(inst)
            if kind is Reply:
                if "lost" in inst.header:
                    self._still_lost(inst)
                if inst.wid == own:
                    mine = inst
                else:
                    fut = self._waiting.get(inst.wid)
                    if fut is not None and not fut.done():
                        fut.set_result(inst)
            elif kind is Drop:
                fut = self._waiting.get(inst.wid)
                if fut is not None and not fut.done():
                    fut.cancel()
            elif kind is Hold:
                self.scheduler.handle(ClientDesiresKeys(inst.holder, list(inst.keys)))
            elif kind is Unhold:
                self.scheduler.handle(RemoveClient(inst.holder))
            else:
                raise TypeError(f"unknown coordination instruction {inst!r}")
        return mine

    def _still_lost(self, reply: Reply) -> None:
        """``lost: [[index, why]]`` -> ``[[index, why, keys]]``, the keys the scheduler still
        does not know (none: the entry goes)."""
        tasks = self.scheduler.state.tasks
        lost = []
        for i, why in reply.header["lost"]:
            keys = [k for k in reply.items[i].keys if k not in tasks]
            if keys:
                lost.append([i, why, keys])
        if lost:
            reply.header["lost"] = lost
        else:
            del reply.header["lost"]

    def _request(self, ev, timeout):
        """Answer ``ev`` now if the state did; else a coroutine awaiting its turn (or timeout)."""
        reply = self._run(ev, ev.wid)
        if reply is not None:
            return _answer(reply)
        if ev.wid not in self.state.waiting:  # (answered by nobody and not in line: cannot happen)
            raise RuntimeError(f"coordination: request {ev!r} was neither answered nor queued")
        loop = asyncio.get_running_loop()
        fut = self._waiting[ev.wid] = loop.create_future()
        if timeout is not None:
            self._timers[ev.wid] = loop.call_later(min(timeout, _LONGEST_WAIT), self._expire, ev.wid)
        return self._wait(ev.wid, fut)

    async def _wait(self, wid: int, fut: asyncio.Future):
        try:
            reply = await fut
        except asyncio.CancelledError:
            if wid in self.state.waiting:  # (not a Drop: this task itself was cancelled)
                self._run(Expire(wid))  # leave the line, so that nothing is granted to nobody
            raise
        finally:
            self._waiting.pop(wid, None)
            ticket = self._ticket_of.pop(wid, None)
            if ticket is not None:
                self._tickets.pop(ticket, None)
            timer = self._timers.pop(wid, None)
            if timer is not None:
                timer.cancel()
        return _answer(reply)

    def _expire(self, wid: int) -> None:
        self._timers.pop(wid, None)
        self._run(Expire(wid))

    # ------------------------------------------------------------------ reading requests
    def _owner(self, peer, h) -> Owner:
        client = self.scheduler._client_of(peer)
        worker = h.get("worker")
        return Owner(client, worker if worker in self.scheduler.state.workers else None)

    def _item(self, what: str, h, payload) -> Item | dict:
        """The stored value of a put/set, or a refusal (too large, or futures the scheduler lost)."""
        frames = split_objects(h, payload).get("data", [])
        size = sum(frame_nbytes(f) for f in frames)
        if size > MAX_SHARED_VALUE:
            return {"refused": f"{what}: the value pickles to {size} bytes, more than the {MAX_SHARED_VALUE} "
                               "a Queue item or Variable value may hold; put the data on the workers with "
                               "client.scatter(value) and share the future instead"}
        keys = list(dict.fromkeys(h.get("keys", ())))
        unknown = [k for k in keys if k not in self.scheduler.state.tasks]
        if unknown:
            return {"refused": f"{what}: the scheduler no longer knows the futures {unknown[:5]} (released or "
                               "cancelled); compute or scatter them again"}
        return Item([frame_bytes(f) for f in frames], keys)

    @staticmethod
    def _timeout(h) -> tuple[bool, float | None]:
        """(blocking, timeout): timeout 0 means do not wait; None waits for ever."""
        timeout = h.get("timeout")
        return timeout is None or timeout > 0, timeout

    # ------------------------------------------------------------------ locks and semaphores
    def _acquire(self, kind, peer, h, max_leases=1):
        blocking, timeout = self._timeout(h)
        return self._request(Acquire(kind, h["name"], h["lease"], self._owner(peer, h), next(self._wids),
                                     max_leases, blocking), timeout)

    def _release(self, kind, peer, h):
        return self._now(Release(kind, h["name"], h["lease"], self._owner(peer, h), next(self._wids),
                                 bool(h.get("abandon"))))

    def _now(self, ev):
        """A request the state answers at once."""
        return _answer(self._run(ev, ev.wid))

    def _op_lock_acquire(self, peer, h, payload):
        return self._acquire("lock", peer, h)

    def _op_lock_release(self, peer, h, payload):
        return self._release("lock", peer, h)

    def _op_multi_lock_acquire(self, peer, h, payload):
        blocking, timeout = self._timeout(h)
        return self._request(MultiLockAcquire(tuple(h["names"]), h["lease"], self._owner(peer, h), next(self._wids),
                                              h.get("num_locks"), blocking), timeout)

    def _op_multi_lock_release(self, peer, h, payload):
        return self._now(MultiLockRelease(tuple(h["names"]), h["lease"], self._owner(peer, h), next(self._wids),
                                          bool(h.get("abandon"))))

    def _op_semaphore_acquire(self, peer, h, payload):
        return self._acquire("semaphore", peer, h, h["max_leases"])

    def _op_semaphore_release(self, peer, h, payload):
        return self._release("semaphore", peer, h)

    def _op_semaphore_value(self, peer, h, payload):
        self.scheduler._client_of(peer)
        return {"value": self.state.lease_count("semaphore", h["name"])}

    # ------------------------------------------------------------------ queues
    def _op_queue_put(self, peer, h, payload):
        owner = self._owner(peer, h)
        item = self._item(f"Queue {h['name']!r}", h, payload)
        if isinstance(item, dict):
            return item
        blocking, timeout = self._timeout(h)
        wid = next(self._wids)
        answer = self._request(QueuePut(h["name"], item, owner, wid, h.get("maxsize", 0), blocking), timeout)
        return self._note_ticket(owner, h, wid, answer)

    def _op_queue_get(self, peer, h, payload):
        blocking, timeout = self._timeout(h)
        batch = h.get("batch")
        owner, wid = self._owner(peer, h), next(self._wids)
        answer = self._request(QueueGet(h["name"], owner, wid, False if batch is None else batch,
                                        h.get("maxsize", 0), blocking), timeout)
        return self._note_ticket(owner, h, wid, answer)

    def _note_ticket(self, owner: Owner, h, wid: int, answer):
        """``answer``; a request left waiting in line is found by its caller's ticket too."""
        ticket = h.get("ticket")
        if ticket is not None and wid in self.state.waiting:
            self._tickets[(owner.client, ticket)] = wid
            self._ticket_of[wid] = (owner.client, ticket)
        return answer

    def _op_queue_abandon(self, peer, h, payload):
        """The caller of a queue get or put gave up waiting: it leaves the line, so that no item
        goes to nobody (a get) and none arrives after all (a put). One answered already is
        past recall."""
        client = self.scheduler._client_of(peer)
        wid = self._tickets.get((client, h["ticket"]))
        if wid is not None and wid in self.state.waiting:
            self._run(Expire(wid))
        return {}

    def _op_queue_size(self, peer, h, payload):
        self.scheduler._client_of(peer)
        return {"size": self.state.qsize(h["name"])}

    # ------------------------------------------------------------------ variables
    def _op_variable_set(self, peer, h, payload):
        self.scheduler._client_of(peer)
        item = self._item(f"Variable {h['name']!r}", h, payload)
        if isinstance(item, dict):
            return item
        return self._now(VariableSet(h["name"], item, next(self._wids)))

    def _op_variable_get(self, peer, h, payload):
        blocking, timeout = self._timeout(h)
        return self._request(VariableGet(h["name"], self._owner(peer, h), next(self._wids), blocking), timeout)

    def _op_variable_delete(self, peer, h, payload):
        self.scheduler._client_of(peer)
        return self._now(VariableDelete(h["name"], next(self._wids)))

    # ------------------------------------------------------------------ events
    def _op_event_set(self, peer, h, payload):
        self.scheduler._client_of(peer)
        return self._now(EventSet(h["name"], next(self._wids)))

    def _op_event_clear(self, peer, h, payload):
        self.scheduler._client_of(peer)
        return self._now(EventClear(h["name"], next(self._wids)))

    def _op_event_is_set(self, peer, h, payload):
        self.scheduler._client_of(peer)
        return {"set": self.state.is_set(h["name"])}

    def _op_event_wait(self, peer, h, payload):
        blocking, timeout = self._timeout(h)
        return self._request(EventWait(h["name"], self._owner(peer, h), next(self._wids), blocking), timeout)

    # ------------------------------------------------------------------ pub/sub
    def _op_pubsub_subscribe(self, peer, h, payload):
        return self._now(Subscribe(h["topic"], h["queue"], self._owner(peer, h), next(self._wids)))

    def _op_pubsub_unsubscribe(self, peer, h, payload):
        self.scheduler._client_of(peer)
        return self._now(Unsubscribe(h["topic"], h["queue"], next(self._wids)))

    def _op_pubsub_publish(self, peer, h, payload):
        self.scheduler._client_of(peer)
        item = self._item(f"Pub {h['topic']!r}", h, payload)
        if isinstance(item, dict):
            return item
        return self._now(Publish(h["topic"], item, next(self._wids)))

    OPS = {
        ops.LOCK_ACQUIRE: _op_lock_acquire, ops.LOCK_RELEASE: _op_lock_release,
        ops.MULTI_LOCK_ACQUIRE: _op_multi_lock_acquire, ops.MULTI_LOCK_RELEASE: _op_multi_lock_release,
        ops.SEMAPHORE_ACQUIRE: _op_semaphore_acquire, ops.SEMAPHORE_RELEASE: _op_semaphore_release,
        ops.SEMAPHORE_VALUE: _op_semaphore_value,
        ops.QUEUE_PUT: _op_queue_put, ops.QUEUE_GET: _op_queue_get, ops.QUEUE_SIZE: _op_queue_size,
        ops.QUEUE_ABANDON: _op_queue_abandon,
        ops.VARIABLE_SET: _op_variable_set, ops.VARIABLE_GET: _op_variable_get,
        ops.VARIABLE_DELETE: _op_variable_delete,
        ops.EVENT_SET: _op_event_set, ops.EVENT_CLEAR: _op_event_clear, ops.EVENT_IS_SET: _op_event_is_set,
        ops.EVENT_WAIT: _op_event_wait,
        ops.PUBSUB_SUBSCRIBE: _op_pubsub_subscribe, ops.PUBSUB_UNSUBSCRIBE: _op_pubsub_unsubscribe,
        ops.PUBSUB_PUBLISH: _op_pubsub_publish,
    }

    # ------------------------------------------------------------------ hooks
    def remove_client(self, client: str) -> None:
        self._run(ClientGone(client))

    def remove_worker(self, address: str, reason: str) -> None:
        self._run(WorkerGone(address))

    def restart(self, reason: str) -> None:
        self._run(Restarted(reason))

    def close(self):
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        for fut in list(self._waiting.values()):
            if not fut.done():
                fut.cancel()
        self._waiting.clear()
        super().close()


def _answer(reply: Reply):
    """A state's Reply as the handler's return value: a header, or a Msg with the items' frames."""
    if not reply.items:
        return dict(reply.header)
    return Msg(dict(reply.header), raw={f"item{i}": list(item.frames) for i, item in enumerate(reply.items)})
