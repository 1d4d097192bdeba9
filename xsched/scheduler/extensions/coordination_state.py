"""The decisions of the ``coordination`` extension: locks, multi-locks, semaphores, queues, variables, events, pub/sub.

Pure: plain data, one mutator ``CoordinationState.handle(*events) -> instructions``, no
sockets, no asyncio, no clocks, no pickling (values are frames it never opens). The
extension (``coordination.py``) turns requests into events and carries out what comes back.

Data flow::

    request (with a waiter id ``wid`` the extension chose)
        -> Acquire / Release / MultiLockAcquire / MultiLockRelease / QueuePut / QueueGet /
           VariableSet / VariableGet / VariableDelete / EventSet / EventClear / EventWait /
           Subscribe / Unsubscribe / Publish
    the waiting request's timeout passed      -> Expire(wid)
    a client left / a worker left             -> ClientGone(client) / WorkerGone(worker)
    the cluster was restarted (every task forgotten) -> Restarted(reason)
        |
        v
    CoordinationState.handle -> [Reply(wid, header, items) | Drop(wid) | Hold(holder, keys) |
                                 Unhold(holder)]
        Reply:  answer that request now (the one just made, or one that waited)
        Drop:   its requester is gone: answer nobody
        Hold:   ``holder`` wants ``keys`` (a client, or the pseudo-client of one stored value)
        Unhold: the pseudo-client of a stored value lets go of its keys

Every request is answered at once or waits in a FIFO line; a waiting request ends with a
Reply (granted, or timed out by Expire), or a Drop when its client left. Leases (of locks
and semaphores) belong to an ``Owner``: the client that asked and, for code running in a
task, its worker; when either leaves, its leases are released and the next in line get them.
A stored value (a queue item, a variable's value) holds the keys of the futures in it
under a pseudo-client of its own (``coordination:queue:NAME:SEQ``), so its data stays while
the value is stored and outlives the client that put it; taking it hands the keys to the
taker before the value lets go. A restart forgets every task: the stored values stay (their
plain parts are intact), each holding futures marked ``lost`` with why; a reply carrying
one says so (``lost: [[index, why]]``), so the taker's futures fail at once naming the
restart instead of waiting for keys nobody will compute.

Pub/Sub: a subscription is a queue of its own (its name chosen by the subscriber), filed
under its topic with its owner; a message published on the topic is put, as a copy holding
the same keys, in the queue of every subscription there is then, and a subscriber takes its
messages with the queue's own get. A subscription whose owner (client, or worker) leaves
goes, and its queue's messages with it; a message published with no subscriber is dropped.

Locks and MultiLocks share one name space: a ``Lock("a")`` is a MultiLock of the one name
``a``, so the two exclude each other. Each name has at most one holder and a line of the
requests that want it, in order of arrival; a MultiLock request stands in the line of each of
its names and holds nothing while it waits. The rule, applied whenever anything changes:

    a request is granted, whole and at once, when at least ``need`` of its names (all of them
    unless ``num_locks`` says fewer) are *available to it*: free, and either it is first in
    that name's line, or the first in that line waits (through the names it wants, their
    holders and what those holders wait for) for the requester's client. It takes ``need`` of
    them, the first in the order it gave. Requests that can be granted are granted in order of
    arrival.

So nothing is ever held in part: two MultiLocks taking [a, b] and [b, a] cannot deadlock.
For each name, requests are served in the order they arrived (a free name is kept for the
first in line rather than handed to a later request, so a MultiLock is not starved by a
stream of single locks), and requests for other names pass by. The one exception lets
through a client that the first in line is itself waiting for -- a task holding ``a`` that
takes ``b`` inside it while a MultiLock([a, b]) waits for its ``a``: keeping ``b`` for the
MultiLock would deadlock both. A waiting request is passed only by clients it waits for.

>>> s = CoordinationState()
>>> a, b = Owner("c1"), Owner("c2", worker="tcp://w:1")
>>> s.handle(Acquire("lock", "x", "L1", a, wid=1))
[Reply(wid=1, header={'acquired': True}, items=())]
>>> s.handle(Acquire("lock", "x", "L2", b, wid=2))    # waits in line
[]
>>> s.handle(WorkerGone("tcp://w:1"))                  # the waiter's worker left: told so
[Reply(wid=2, header={'refused': 'the worker tcp://w:1 of this request left the cluster'}, items=())]
>>> s.handle(ClientGone("c1")), s.leases
([], {})
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Union

__all__ = [
    "CoordinationState", "Owner", "Item", "Acquire", "Release", "MultiLockAcquire", "MultiLockRelease",
    "QueuePut", "QueueGet", "VariableSet", "VariableGet", "VariableDelete", "EventSet", "EventClear", "EventWait",
    "Subscribe", "Unsubscribe", "Publish", "Expire", "ClientGone", "WorkerGone", "Restarted", "Reply", "Drop",
    "Hold", "Unhold", "KINDS",
]

#: what the lease kinds are called in messages to users
KINDS = {"lock": "Lock", "semaphore": "Semaphore"}


# ----------------------------------------------------------------------------- data
@dataclass(frozen=True, slots=True)
class Owner:
    """Who made a request: a client id, and the worker address when it came from a task."""

    client: str
    worker: str | None = None


@dataclass(slots=True)
class Item:
    """A stored value: its pickled frames (never opened here), the keys of the futures in it,
    the pseudo-client holding those keys while it is stored (set when it is stored), and
    ``lost``: why its futures' keys are gone ("" while they are not: a restart sets it)."""

    frames: list
    keys: list = field(default_factory=list)
    holder: str = ""
    lost: str = ""

    def __repr__(self) -> str:
        return f"Item({sum(len(f) for f in self.frames)} bytes, keys={self.keys!r})"


@dataclass(slots=True)
class Waiter:
    """A request waiting its turn; ``lease`` for acquires, ``n`` for queue gets, ``item`` for puts.

    A lock request (a Lock's or a MultiLock's) has its ``names``, the ``need`` of them it
    takes, ``multi`` (a MultiLock's: its reply names what it took) and its ``seq`` of arrival."""

    wid: int
    owner: Owner
    lease: str = ""
    n: int = 1
    item: Item | None = None
    names: tuple = ()
    need: int = 0
    multi: bool = False
    seq: int = 0


@dataclass(slots=True)
class Leases:
    """A lock name (max_leases 1) or a semaphore: lease id -> owner, and the acquires waiting
    (for a lock name: every lock request that wants it, MultiLocks included, in arrival order)."""

    max_leases: int
    holders: dict = field(default_factory=dict)
    waiters: deque = field(default_factory=deque)


@dataclass(slots=True)
class QueueState:
    maxsize: int
    items: deque = field(default_factory=deque)
    getters: deque = field(default_factory=deque)
    putters: deque = field(default_factory=deque)


# ----------------------------------------------------------------------------- events
@dataclass(slots=True)
class Acquire:
    """``owner`` asks for a lease ``lease`` of the lock or semaphore ``name``; 0 timeout: do not wait."""

    kind: str  # "lock" | "semaphore"
    name: str
    lease: str
    owner: Owner
    wid: int
    max_leases: int = 1
    blocking: bool = True


@dataclass(slots=True)
class Release:
    """Give back ``lease``; ``abandon``: the requester gave up waiting (no error if not held,
    and a waiting acquire of that lease leaves the line)."""

    kind: str
    name: str
    lease: str
    owner: Owner
    wid: int
    abandon: bool = False


@dataclass(slots=True)
class MultiLockAcquire:
    """``owner`` asks for the locks ``names`` at once under one lease: all of them, or
    ``num_locks`` of them; not blocking: answer at once."""

    names: tuple
    lease: str
    owner: Owner
    wid: int
    num_locks: int | None = None
    blocking: bool = True


@dataclass(slots=True)
class MultiLockRelease:
    """Give back the names of ``names`` held under ``lease``; ``abandon`` as for Release."""

    names: tuple
    lease: str
    owner: Owner
    wid: int
    abandon: bool = False


@dataclass(slots=True)
class QueuePut:
    name: str
    item: Item
    owner: Owner
    wid: int
    maxsize: int = 0
    blocking: bool = True


@dataclass(slots=True)
class QueueGet:
    """Take one item (``batch`` False), ``batch`` items at once (an int), or all there are (True)."""

    name: str
    owner: Owner
    wid: int
    batch: Union[bool, int] = False
    maxsize: int = 0
    blocking: bool = True


@dataclass(slots=True)
class VariableSet:
    name: str
    item: Item
    wid: int


@dataclass(slots=True)
class VariableGet:
    name: str
    owner: Owner
    wid: int
    blocking: bool = True


@dataclass(slots=True)
class VariableDelete:
    name: str
    wid: int


@dataclass(slots=True)
class EventSet:
    name: str
    wid: int


@dataclass(slots=True)
class EventClear:
    name: str
    wid: int


@dataclass(slots=True)
class EventWait:
    name: str
    owner: Owner
    wid: int
    blocking: bool = True


@dataclass(slots=True)
class Subscribe:
    """``owner`` subscribes to ``topic``: the messages published from now on go to ``queue``."""

    topic: str
    queue: str
    owner: Owner
    wid: int


@dataclass(slots=True)
class Unsubscribe:
    """The subscription ``queue`` of ``topic`` ends; messages not taken yet go with it."""

    topic: str
    queue: str
    wid: int


@dataclass(slots=True)
class Publish:
    """``item`` goes to the queue of every subscription to ``topic``."""

    topic: str
    item: Item
    wid: int


@dataclass(slots=True)
class Expire:
    """The timeout of the waiting request ``wid`` passed."""

    wid: int


@dataclass(slots=True)
class ClientGone:
    client: str


@dataclass(slots=True)
class WorkerGone:
    worker: str


@dataclass(slots=True)
class Restarted:
    """The cluster was restarted (``client.restart()``): every task is forgotten; ``reason``
    is the restart's own (who restarted it, and what to do)."""

    reason: str


# ----------------------------------------------------------------------------- instructions
@dataclass(slots=True)
class Reply:
    """Answer the request ``wid`` with ``header`` (and the frames of ``items``, in order)."""

    wid: int
    header: dict
    items: tuple = ()


@dataclass(slots=True)
class Drop:
    """The request ``wid`` ends unanswered: its requester left."""

    wid: int


@dataclass(slots=True)
class Hold:
    """``holder`` (a client, or a stored value's pseudo-client) wants ``keys``."""

    holder: str
    keys: list


@dataclass(slots=True)
class Unhold:
    """The pseudo-client ``holder`` of a stored value lets go of all its keys."""

    holder: str


#: what a waiting request hears when its timeout passes, by where it waits
_EXPIRED = {"lock": {"acquired": False}, "semaphore": {"acquired": False}, "getters": {"timed_out": True},
            "putters": {"timed_out": True}, "variable": {"timed_out": True}, "event": {"set": False}}


class CoordinationState:
    """Every lock, semaphore, queue, variable, event and subscription of one scheduler, as plain data.

    ``leases[(kind, name)]`` (kind "lock" for Locks and MultiLocks alike, or "semaphore"),
    ``queues[name]``, ``variables[name]`` (an Item), ``variable_waiters[name]``,
    ``events[name]`` (names of set events only), ``event_waiters[name]``, ``topics[topic]``
    (its subscriptions' queue names -> their owners), and ``waiting``
    (wid -> (where, key, waiter)) for every request in line; a lock request is filed as
    ("lock", its names, waiter). ``stalled``: the lock names free while requests wait in
    their line (only MultiLocks leave a name so: its first in line waits for another name).
    Entries with nothing in them are dropped, so the tables hold only what is in use.
    """

    def __init__(self):
        self.leases: dict[tuple[str, str], Leases] = {}
        self.queues: dict[str, QueueState] = {}
        self.variables: dict[str, Item] = {}
        self.variable_waiters: dict[str, deque] = {}
        self.events: set[str] = set()
        self.event_waiters: dict[str, deque] = {}
        self.topics: dict[str, dict[str, Owner]] = {}  # topic -> its subscriptions' queues -> their owners
        self.waiting: dict[int, tuple[str, object, Waiter]] = {}  # wid -> (where, key, waiter)
        self.stalled: set[str] = set()
        self._lock_waiters: dict[str, dict[int, Waiter]] = {}  # client -> wid -> its waiting lock requests
        self._seq = 0
        self._arrivals = 0  # the seq of the last lock request that joined the lines
        self._out: list = []

    def __repr__(self) -> str:
        return (f"<CoordinationState leases={len(self.leases)} queues={len(self.queues)} "
                f"variables={len(self.variables)} events={len(self.events)} waiting={len(self.waiting)}>")

    # ------------------------------------------------------------------ the one mutator
    def handle(self, *events) -> list:
        """Apply events in order; the instructions to carry out, in order."""
        for ev in events:
            handler = self._HANDLERS.get(type(ev))
            if handler is None:
                raise TypeError(f"CoordinationState cannot handle {ev!r}")
            handler(self, ev)
        out, self._out = self._out, []
        return out

    # ------------------------------------------------------------------ reads (no change)
    def lease_count(self, kind: str, name: str) -> int:
        """Leases held now of the lock or semaphore ``name``."""
        res = self.leases.get((kind, name))
        return len(res.holders) if res is not None else 0

    def qsize(self, name: str) -> int:
        q = self.queues.get(name)
        return len(q.items) if q is not None else 0

    def is_set(self, name: str) -> bool:
        return name in self.events

    def validate(self) -> None:
        """Check every invariant (tests call it after every event); AssertionError names the first broken."""
        lines = []
        lock_waiters: dict[int, Waiter] = {}
        lease_owner: dict[str, Owner] = {}
        for key, res in self.leases.items():
            assert res.holders or res.waiters, f"{key}: an idle lock or semaphore is kept"
            assert len(res.holders) <= res.max_leases, f"{key}: {len(res.holders)} holders > {res.max_leases}"
            if key[0] != "lock":
                assert not res.waiters or len(res.holders) == res.max_leases, f"{key}: a lease is free while some wait"
                lines.append((key[0], key, res.waiters))
                continue
            name = key[1]
            assert res.max_leases == 1, f"{key}: a lock with max_leases {res.max_leases}"
            assert (not res.holders and bool(res.waiters)) == (name in self.stalled), (
                f"{key}: stalled is {name in self.stalled} with {len(res.holders)} holders, {len(res.waiters)} waiting")
            seqs = [w.seq for w in res.waiters]
            assert seqs == sorted(set(seqs)), f"{key}: its line is out of the order of arrival: {seqs}"
            for lease, owner in res.holders.items():  # one lease (a MultiLock's) may hold several names
                assert lease_owner.setdefault(lease, owner) == owner, f"lease {lease!r} held by two owners"
            for w in res.waiters:
                assert name in w.names, f"{key}: request {w.wid} in its line does not want it"
                lock_waiters[w.wid] = w
        assert self.stalled <= {k[1] for k in self.leases if k[0] == "lock"}, "a stalled lock name is not kept"
        by_client = {c: dict(ws) for c, ws in self._lock_waiters.items()}
        assert all(by_client.values()), "an empty entry in the index of lock requests by client"
        assert {w.wid for ws in by_client.values() for w in ws.values()} == set(lock_waiters), (
            "the index of lock requests by client is not the lock requests in line")
        closures: dict = {}
        for w in lock_waiters.values():
            assert self.waiting.get(w.wid) == ("lock", w.names, w), f"lock request {w.wid} not indexed"
            assert by_client[w.owner.client].get(w.wid) is w, f"lock request {w.wid} not indexed by its client"
            assert len(set(w.names)) == len(w.names) and 1 <= w.need <= len(w.names), f"lock request {w}"
            assert all(any(v is w for v in self.leases[("lock", n)].waiters) for n in w.names), (
                f"lock request {w.wid} is missing from the line of one of its names {w.names}")
            free = self._available(w, closures)
            assert len(free) < w.need, f"lock request {w.wid} waits while {free} are available to it"
        for name, q in self.queues.items():
            assert q.items or q.getters or q.putters, f"queue {name!r}: an idle queue is kept"
            assert not q.maxsize or len(q.items) <= q.maxsize, f"queue {name!r} holds more than its maxsize"
            assert not q.getters or len(q.items) < q.getters[0].n, f"queue {name!r}: a get waits with enough items"
            assert not q.putters or len(q.items) >= q.maxsize > 0, f"queue {name!r}: a put waits with room"
            assert all(i.holder for i in q.items), f"queue {name!r}: an item without a holder"
            lines += [("getters", name, q.getters), ("putters", name, q.putters)]
        queues_of = [q for subs in self.topics.values() for q in subs]
        assert all(self.topics.values()), "a topic without subscriptions is kept"
        assert len(queues_of) == len(set(queues_of)), "a subscription queue is filed under two topics"
        for name, line in self.variable_waiters.items():
            assert line and name not in self.variables, f"variable {name!r}: waiters kept with a value or none"
            lines.append(("variable", name, line))
        for name, line in self.event_waiters.items():
            assert line and name not in self.events, f"event {name!r}: waiters kept while set, or none"
            lines.append(("event", name, line))
        seen = len(lock_waiters)
        for where, key, line in lines:
            for w in line:
                seen += 1
                assert self.waiting.get(w.wid) == (where, key, w), f"request {w.wid} in {where} {key!r} not indexed"
        assert seen == len(self.waiting), "the index of waiting requests names requests in no line"

    # ------------------------------------------------------------------ helpers
    def _reply(self, wid: int, header: dict, items: tuple = ()) -> None:
        self._out.append(Reply(wid, header, tuple(items)))

    def _store(self, kind: str, name: str, item: Item) -> None:
        """``item`` is stored now: a pseudo-client of its own holds its keys."""
        self._seq += 1
        item.holder = f"coordination:{kind}:{name}:{self._seq}"
        if item.keys and not item.lost:
            self._out.append(Hold(item.holder, list(item.keys)))

    def _let_go(self, item: Item) -> None:
        if item.keys:
            self._out.append(Unhold(item.holder))

    def _hand_over(self, item: Item, owner: Owner) -> None:
        """``owner`` takes (a copy of) ``item``: its client holds the keys from now on."""
        if item.keys and not item.lost:
            self._out.append(Hold(owner.client, list(item.keys)))

    def _give(self, wid: int, items: list) -> None:
        """Reply with ``items``, saying which hold futures a restart took (``lost``)."""
        header: dict = {"n": len(items)}
        lost = [[i, item.lost] for i, item in enumerate(items) if item.lost]
        if lost:
            header["lost"] = lost
        self._reply(wid, header, items)

    # ------------------------------------------------------------------ locks and semaphores
    def _acquire(self, ev: Acquire) -> None:
        if ev.kind == "lock":
            self._lock_acquire((ev.name,), ev.lease, ev.owner, ev.wid, 1, ev.blocking, multi=False)
            return
        key = (ev.kind, ev.name)
        res = self.leases.get(key)
        what = f"{KINDS.get(ev.kind, ev.kind)} {ev.name!r}"
        if res is None:
            res = self.leases[key] = Leases(ev.max_leases)
        elif res.max_leases != ev.max_leases:
            self._reply(ev.wid, {"refused": f"{what} has max_leases={res.max_leases} on the scheduler while "
                                            f"this one asks with max_leases={ev.max_leases}; every Semaphore of "
                                            "one name must use the same max_leases"})
            return
        if ev.lease in res.holders or any(w.lease == ev.lease for w in res.waiters):
            self._reply(ev.wid, {"refused": f"{what}: the lease {ev.lease!r} is taken already (a new lease id "
                                            "is needed for each acquire)"})
            return
        if not res.waiters and len(res.holders) < res.max_leases:
            res.holders[ev.lease] = ev.owner
            self._reply(ev.wid, {"acquired": True})
        elif not ev.blocking:
            self._reply(ev.wid, {"acquired": False})
        else:
            self._wait(ev.kind, key, res.waiters, Waiter(ev.wid, ev.owner, lease=ev.lease))

    def _release(self, ev: Release) -> None:
        if ev.kind == "lock":
            self._lock_release((ev.name,), ev.lease, ev.owner, ev.wid, ev.abandon, f"Lock {ev.name!r}")
            return
        key = (ev.kind, ev.name)
        res = self.leases.get(key)
        owner = res.holders.get(ev.lease) if res is not None else None
        if owner is not None and owner.client == ev.owner.client:
            del res.holders[ev.lease]
            self._reply(ev.wid, {"released": True})
            self._grant(key)
            return
        if ev.abandon:
            if res is not None:
                for w in [w for w in res.waiters if w.lease == ev.lease and w.owner.client == ev.owner.client]:
                    self._remove_waiter(w.wid)
                    self._reply(w.wid, {"acquired": False})
                self._grant(key)
            self._reply(ev.wid, {"released": False})
            return
        what = f"{KINDS.get(ev.kind, ev.kind)} {ev.name!r}"
        self._reply(ev.wid, {"released": False, "error": (
            f"{what} is not held under this lease: it was released already, or its holder's client or worker "
            "left the cluster (the scheduler then releases what they held)")})

    def _grant(self, key: tuple) -> None:
        """Give free leases to the acquires in line, in order; forget an idle semaphore."""
        res = self.leases.get(key)
        if res is None:
            return
        while res.waiters and len(res.holders) < res.max_leases:
            w = res.waiters.popleft()
            self.waiting.pop(w.wid, None)
            res.holders[w.lease] = w.owner
            self._reply(w.wid, {"acquired": True})
        if not res.holders and not res.waiters:
            del self.leases[key]

    # ------------------------------------------------------------------ locks and multi-locks (one name space)
    def _multi_lock_acquire(self, ev: MultiLockAcquire) -> None:
        names = tuple(ev.names)
        need = len(names) if ev.num_locks is None else ev.num_locks
        self._lock_acquire(names, ev.lease, ev.owner, ev.wid, need, ev.blocking, multi=True)

    def _multi_lock_release(self, ev: MultiLockRelease) -> None:
        self._lock_release(tuple(ev.names), ev.lease, ev.owner, ev.wid, ev.abandon, _multi_what(ev.names))

    def _lock_acquire(self, names: tuple, lease: str, owner: Owner, wid: int, need: int, blocking: bool,
                      multi: bool) -> None:
        what = _multi_what(names) if multi else f"Lock {names[0]!r}"
        seen: set = set()
        twice = sorted({n for n in names if n in seen or seen.add(n)})
        if not names or twice:
            self._reply(wid, {"refused": f"{what}: " + (f"the names {twice} are given twice" if twice else
                                                         "a MultiLock needs at least one name")})
            return
        if not 1 <= need <= len(names):
            self._reply(wid, {"refused": f"{what}: num_locks must be between 1 and {len(names)} (the number of "
                                         f"names), not {need}"})
            return
        for name in names:
            res = self.leases.get(("lock", name))
            if res is not None and (lease in res.holders or any(w.lease == lease for w in res.waiters)):
                self._reply(wid, {"refused": f"{what}: the lease {lease!r} is taken already (a new lease id is "
                                             "needed for each acquire)"})
                return
        w = Waiter(wid, owner, lease=lease, names=names, need=need, multi=multi)
        free = self._available(w, {})
        if len(free) >= need:
            self._take_locks(w, free[:need])
            self._grant_locks(())  # (its client now holds more: later requests may pass those it blocks)
        elif not blocking:
            self._reply(wid, {"acquired": False})
        else:
            self._arrivals += 1
            w.seq = self._arrivals
            for name in names:
                res = self.leases.get(("lock", name))
                if res is None:
                    res = self.leases[("lock", name)] = Leases(1)
                res.waiters.append(w)
            self.waiting[wid] = ("lock", names, w)
            self._lock_waiters.setdefault(owner.client, {})[wid] = w
            self._grant_locks(names)  # (others may now pass a request that waits for this one's client)

    def _lock_release(self, names: tuple, lease: str, owner: Owner, wid: int, abandon: bool, what: str) -> None:
        held = []
        for name in names:
            res = self.leases.get(("lock", name))
            holder = res.holders.get(lease) if res is not None else None
            if holder is not None and holder.client == owner.client:
                del res.holders[lease]
                held.append(name)
        if held:
            self._reply(wid, {"released": True})
            self._grant_locks(held)
            return
        if abandon:
            mine = {}
            for name in names:
                res = self.leases.get(("lock", name))
                for w in res.waiters if res is not None else ():
                    if w.lease == lease and w.owner.client == owner.client:
                        mine[w.wid] = w
            for w in mine.values():
                self._remove_waiter(w.wid)
                self._reply(w.wid, {"acquired": False})
            self._grant_locks(names)
            self._reply(wid, {"released": False})
            return
        self._reply(wid, {"released": False, "error": (
            f"{what} is not held under this lease: it was released already, or its holder's client or worker "
            "left the cluster (the scheduler then releases what they held)")})

    def _take_locks(self, w: Waiter, names: list) -> None:
        for name in names:
            res = self.leases.get(("lock", name))
            if res is None:
                res = self.leases[("lock", name)] = Leases(1)
            res.holders[w.lease] = w.owner
        self._reply(w.wid, {"acquired": True, "names": list(names)} if w.multi else {"acquired": True})

    def _available(self, w: Waiter, closures: dict) -> list:
        """The names of ``w`` available to it now, in its order: free, and either ``w`` is first
        in their line or the first there waits for ``w``'s client (``closures``: wid -> the
        clients a request waits for, memoised while nothing changes)."""
        out = []
        for name in w.names:
            res = self.leases.get(("lock", name))
            if res is None:
                out.append(name)
            elif not res.holders:
                first = res.waiters[0] if res.waiters else None
                if first is None or first is w:
                    out.append(name)
                elif w.owner.client in self._waits_for_memo(first, closures):
                    out.append(name)
        return out

    def _waits_for_memo(self, w: Waiter, closures: dict) -> set:
        found = closures.get(w.wid)
        if found is None:
            found = closures[w.wid] = self._waits_for(w)
        return found

    def _waits_for(self, start: Waiter) -> set:
        """The clients the lock request ``start`` waits for: the holders of the names it wants,
        what the requests ahead of it in their lines wait for, and what those holders' own
        waiting lock requests wait for, transitively (more than it strictly waits for: a
        client found here only ever gets to pass it)."""
        clients: set = set()
        seen = {start.wid}
        todo = [start]
        while todo:
            r = todo.pop()
            for name in r.names:
                res = self.leases.get(("lock", name))
                if res is None:
                    continue
                for holder in res.holders.values():
                    if holder.client not in clients:
                        clients.add(holder.client)
                        for v in self._lock_waiters.get(holder.client, {}).values():
                            if v.wid not in seen:
                                seen.add(v.wid)
                                todo.append(v)
                for v in res.waiters:
                    if v is r:
                        break
                    if v.wid not in seen:
                        seen.add(v.wid)
                        todo.append(v)
        return clients

    def _grant_locks(self, names) -> None:
        """Grant every lock request that can be, earliest first, until none can; then file the
        lock names looked at as stalled or not, and forget the idle ones. ``names``: lock
        names whose holders or lines changed (the stalled ones are always looked at, since
        any grant or new request may let someone pass there)."""
        look = set(names) | self.stalled
        while True:
            closures: dict = {}
            best = best_free = None
            for name in look:
                res = self.leases.get(("lock", name))
                if res is None or res.holders or not res.waiters:
                    continue
                # who may take this free name: the first in its line, or a request of a client
                # that one waits for (a request granted through another name is found there)
                first = res.waiters[0]
                candidates = [first]
                if len(self._available(first, closures)) < first.need:
                    candidates = [v for client in self._waits_for_memo(first, closures)
                                  for v in self._lock_waiters.get(client, {}).values() if name in v.names]
                for w in candidates:
                    if best is not None and w.seq >= best.seq:
                        continue
                    free = self._available(w, closures)
                    if len(free) >= w.need:
                        best, best_free = w, free
            if best is None:
                break
            self._remove_waiter(best.wid)
            self._take_locks(best, best_free[:best.need])
            look |= set(best.names) | self.stalled
        for name in look:
            res = self.leases.get(("lock", name))
            if res is None:
                self.stalled.discard(name)
            elif not res.holders and not res.waiters:
                del self.leases[("lock", name)]
                self.stalled.discard(name)
            elif not res.holders:
                self.stalled.add(name)
            else:
                self.stalled.discard(name)

    # ------------------------------------------------------------------ queues
    def _queue_put(self, ev: QueuePut) -> None:
        q = self.queues.get(ev.name)
        if q is None:
            q = self.queues[ev.name] = QueueState(ev.maxsize)
        if not q.putters and (q.maxsize == 0 or len(q.items) < q.maxsize):
            self._store("queue", ev.name, ev.item)
            q.items.append(ev.item)
            self._reply(ev.wid, {"put": True})
            self._serve(ev.name)
        elif not ev.blocking:
            self._reply(ev.wid, {"timed_out": True})
            self._forget_queue(ev.name)
        else:
            self._wait("putters", ev.name, q.putters, Waiter(ev.wid, ev.owner, item=ev.item))

    def _queue_get(self, ev: QueueGet) -> None:
        q = self.queues.get(ev.name)
        if q is None:
            q = self.queues[ev.name] = QueueState(ev.maxsize)
        if ev.batch is True:  # all there are now, maybe none
            self._take(q, ev.wid, ev.owner, len(q.items))
            self._serve(ev.name)
            return
        n = 1 if ev.batch is False else int(ev.batch)
        if q.maxsize and n > q.maxsize:
            self._reply(ev.wid, {"refused": f"Queue {ev.name!r} holds at most {q.maxsize} items (maxsize): a "
                                            f"batch of {n} could never be served"})
            self._forget_queue(ev.name)
            return
        if not q.getters and len(q.items) >= n:
            self._take(q, ev.wid, ev.owner, n)
            self._serve(ev.name)
        elif not ev.blocking:
            self._reply(ev.wid, {"timed_out": True})
            self._forget_queue(ev.name)
        else:
            self._wait("getters", ev.name, q.getters, Waiter(ev.wid, ev.owner, n=n))

    def _take(self, q: QueueState, wid: int, owner: Owner, n: int) -> None:
        taken = [q.items.popleft() for _ in range(n)]
        for item in taken:
            self._hand_over(item, owner)
            self._let_go(item)
        self._give(wid, taken)

    def _serve(self, name: str) -> None:
        """Serve the gets in line, then let waiting puts in, for as long as either moves."""
        q = self.queues.get(name)
        if q is None:
            return
        moved = True
        while moved:
            moved = False
            while q.getters and len(q.items) >= q.getters[0].n:
                g = q.getters.popleft()
                self.waiting.pop(g.wid, None)
                self._take(q, g.wid, g.owner, g.n)
                moved = True
            while q.putters and (q.maxsize == 0 or len(q.items) < q.maxsize):
                p = q.putters.popleft()
                self.waiting.pop(p.wid, None)
                self._store("queue", name, p.item)
                q.items.append(p.item)
                self._reply(p.wid, {"put": True})
                moved = True
        self._forget_queue(name)

    def _forget_queue(self, name: str) -> None:
        q = self.queues.get(name)
        if q is not None and not q.items and not q.getters and not q.putters:
            del self.queues[name]

    # ------------------------------------------------------------------ pub/sub
    def _subscribe(self, ev: Subscribe) -> None:
        subs = self.topics.setdefault(ev.topic, {})
        if any(ev.queue in other for t, other in self.topics.items() if t != ev.topic):
            self._reply(ev.wid, {"refused": f"the subscription queue {ev.queue!r} belongs to another topic"})
        else:
            subs[ev.queue] = ev.owner
            self._reply(ev.wid, {"subscribers": len(subs)})
        if not subs:
            del self.topics[ev.topic]

    def _unsubscribe(self, ev: Unsubscribe) -> None:
        self._end_subscription(ev.topic, ev.queue)
        self._reply(ev.wid, {})

    def _end_subscription(self, topic: str, queue: str) -> None:
        """The subscription goes: its messages let go of their keys, and a get waiting on it
        hears it timed out (nothing more will come)."""
        subs = self.topics.get(topic)
        if subs is None or subs.pop(queue, None) is None:
            return
        if not subs:
            del self.topics[topic]
        q = self.queues.pop(queue, None)
        if q is None:
            return
        for item in q.items:
            self._let_go(item)
        for w in list(q.getters) + list(q.putters):
            self.waiting.pop(w.wid, None)
            self._reply(w.wid, {"timed_out": True})

    def _publish(self, ev: Publish) -> None:
        subs = self.topics.get(ev.topic, {})
        for queue in subs:
            copy = Item(ev.item.frames, list(ev.item.keys))
            q = self.queues.get(queue)
            if q is None:
                q = self.queues[queue] = QueueState(0)
            self._store("queue", queue, copy)
            q.items.append(copy)
            self._serve(queue)
        self._reply(ev.wid, {"subscribers": len(subs)})

    # ------------------------------------------------------------------ variables
    def _variable_set(self, ev: VariableSet) -> None:
        old = self.variables.get(ev.name)
        self._store("variable", ev.name, ev.item)  # (held before the old value lets go: keys in both stay)
        self.variables[ev.name] = ev.item
        if old is not None:
            self._let_go(old)
        self._reply(ev.wid, {})
        for w in self.variable_waiters.pop(ev.name, ()):
            self.waiting.pop(w.wid, None)
            self._hand_over(ev.item, w.owner)
            self._give(w.wid, [ev.item])

    def _variable_get(self, ev: VariableGet) -> None:
        item = self.variables.get(ev.name)
        if item is not None:
            self._hand_over(item, ev.owner)
            self._give(ev.wid, [item])
        elif not ev.blocking:
            self._reply(ev.wid, {"timed_out": True})
        else:
            line = self.variable_waiters.setdefault(ev.name, deque())
            self._wait("variable", ev.name, line, Waiter(ev.wid, ev.owner))

    def _variable_delete(self, ev: VariableDelete) -> None:
        old = self.variables.pop(ev.name, None)
        if old is not None:
            self._let_go(old)
        self._reply(ev.wid, {"deleted": old is not None})

    # ------------------------------------------------------------------ events
    def _event_set(self, ev: EventSet) -> None:
        self.events.add(ev.name)
        self._reply(ev.wid, {})
        for w in self.event_waiters.pop(ev.name, ()):
            self.waiting.pop(w.wid, None)
            self._reply(w.wid, {"set": True})

    def _event_clear(self, ev: EventClear) -> None:
        self.events.discard(ev.name)
        self._reply(ev.wid, {})

    def _event_wait(self, ev: EventWait) -> None:
        if ev.name in self.events:
            self._reply(ev.wid, {"set": True})
        elif not ev.blocking:
            self._reply(ev.wid, {"set": False})
        else:
            line = self.event_waiters.setdefault(ev.name, deque())
            self._wait("event", ev.name, line, Waiter(ev.wid, ev.owner))

    # ------------------------------------------------------------------ time and departures
    def _line(self, where: str, key) -> deque:
        if where == "semaphore":
            return self.leases[key].waiters
        if where == "getters":
            return self.queues[key].getters
        if where == "putters":
            return self.queues[key].putters
        if where == "variable":
            return self.variable_waiters[key]
        return self.event_waiters[key]

    def _wait(self, where: str, key, line: deque, w: Waiter) -> None:
        line.append(w)
        self.waiting[w.wid] = (where, key, w)

    def _remove_waiter(self, wid: int) -> tuple | None:
        """Take the request ``wid`` out of its line: (where, key, waiter), or None if not waiting.
        The caller tidies up after (``_tidy``)."""
        found = self.waiting.pop(wid, None)
        if found is not None:
            where, key, w = found
            if where == "lock":  # (in the line of each of its names)
                for name in w.names:
                    self.leases[("lock", name)].waiters.remove(w)
                mine = self._lock_waiters[w.owner.client]
                del mine[wid]
                if not mine:
                    del self._lock_waiters[w.owner.client]
            else:
                self._line(where, key).remove(w)
        return found

    def _tidy(self, where: str, key) -> None:
        """After requests left a line: serve what they blocked, drop empty entries."""
        if where == "lock":
            self._grant_locks(key)  # (the first in a line may have left)
        elif where == "semaphore":
            self._grant(key)  # (the head of the line may have left)
        elif where in ("getters", "putters"):
            self._serve(key)
        elif where == "variable" and not self.variable_waiters.get(key):
            self.variable_waiters.pop(key, None)
        elif where == "event" and not self.event_waiters.get(key):
            self.event_waiters.pop(key, None)

    def _expire(self, ev: Expire) -> None:
        found = self._remove_waiter(ev.wid)
        if found is not None:
            self._reply(ev.wid, dict(_EXPIRED[found[0]]))
            self._tidy(found[0], found[1])

    def _gone(self, gone, answer: dict | None) -> None:
        """Release the leases of owners for which ``gone(owner)`` holds; their waiting requests
        are dropped (``answer`` None: nobody to tell) or answered with ``answer``. Everything
        of theirs goes first, then the others in line are served."""
        touched = {}
        lock_names: set = set()
        for wid, (where, key, w) in list(self.waiting.items()):
            if gone(w.owner):
                self._remove_waiter(wid)
                self._out.append(Drop(wid) if answer is None else Reply(wid, dict(answer)))
                if where == "lock":
                    lock_names.update(key)
                else:
                    touched[(where, key)] = None
        for key, res in self.leases.items():
            for lease, owner in list(res.holders.items()):
                if gone(owner):
                    del res.holders[lease]
                    if key[0] == "lock":
                        lock_names.add(key[1])
                    else:
                        touched[(key[0], key)] = None
        for where, key in touched:
            self._tidy(where, key)
        self._grant_locks(lock_names)
        for topic, subs in list(self.topics.items()):
            for queue, owner in list(subs.items()):
                if gone(owner):
                    self._end_subscription(topic, queue)

    def _client_gone(self, ev: ClientGone) -> None:
        self._gone(lambda o: o.client == ev.client, None)

    def _worker_gone(self, ev: WorkerGone) -> None:
        self._gone(lambda o: o.worker == ev.worker,
                   {"refused": f"the worker {ev.worker} of this request left the cluster"})

    def _restarted(self, ev: Restarted) -> None:
        """Every task is gone: mark each value holding futures (stored, or waiting to be put).
        Nothing else changes: leases belong to clients and workers, which leave on their own."""
        def mark(item: Item, what: str) -> None:
            if item.keys and not item.lost:
                item.lost = f"{what} held this future when {ev.reason}"

        for name, q in self.queues.items():
            for item in q.items:
                mark(item, f"Queue {name!r}")
            for w in q.putters:
                mark(w.item, f"Queue {name!r}")
        for name, item in self.variables.items():
            mark(item, f"Variable {name!r}")

    _HANDLERS = {
        Acquire: _acquire, Release: _release, MultiLockAcquire: _multi_lock_acquire,
        MultiLockRelease: _multi_lock_release, QueuePut: _queue_put, QueueGet: _queue_get,
        VariableSet: _variable_set, VariableGet: _variable_get, VariableDelete: _variable_delete,
        EventSet: _event_set, EventClear: _event_clear, EventWait: _event_wait, Subscribe: _subscribe,
        Unsubscribe: _unsubscribe, Publish: _publish, Expire: _expire,
        ClientGone: _client_gone, WorkerGone: _worker_gone, Restarted: _restarted,
    }


def _multi_what(names) -> str:
    """How a MultiLock is named in messages: ``MultiLock ['a', 'b']``."""
    return f"MultiLock {list(names)!r}"
