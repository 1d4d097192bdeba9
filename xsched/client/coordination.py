"""Coordination primitives shared through the scheduler: Lock, MultiLock, Semaphore, Queue, Variable, Event.

Each is a small handle on a named object the scheduler keeps (its ``coordination``
extension): every handle of the same name, in the notebook or in any task, is the same
lock, queue or event. A handle finds its client with ``get_client()`` -- inside a task
that is the worker's client -- or takes ``client=``; it pickles by name, so handles travel
into tasks as arguments::

    notebook / task --lock-acquire {name, lease, timeout, worker}--> scheduler
        <--reply when granted (or {acquired: false} when the timeout passed)--
    a blocking call waits on the scheduler, not in a polling loop; the caller also
    enforces its timeout locally (a lost reply cannot hang it), and a caller that gives
    up sends a release of the lease it asked for, so no lease is granted to nobody.

What the scheduler knows of the holders does the cleaning up: a lease held by a client
or a worker that left the cluster is released at once (no lease timeouts), a queue's items
and a variable's value stay while the scheduler runs (after the client that put them has
gone), and futures in them are kept in memory until taken, replaced or deleted (or the
cluster is restarted: such futures then come out cancelled, saying so). Values are
pickled here and never unpickled by the scheduler; a value must pickle to at most
``MAX_SHARED_VALUE`` (1 MiB): larger data belongs on the workers (``client.scatter``).

>>> from xsched import Lock, MultiLock, Semaphore, Queue, Variable, Event
>>> Lock(name=3)
Traceback (most recent call last):
...
TypeError: a Lock's name must be a string, not int 3
"""

from __future__ import annotations

import asyncio
import uuid

from .. import task_context
from ..comm import RemoteError
from ..errors import SchedulerLostError
from ..protocol import ops
from ..protocol.messages import frame_nbytes, split_objects
from ..protocol.schemas import MAX_LOCK_NAMES, MAX_NAME, MAX_SHARED_VALUE
from ..protocol.serialize import dumps, loads
from ..units import format_bytes, timeout_seconds
from .client import get_client
from .dual import sync_or_async
from .future import binding_to, collecting_keys

__all__ = ["Lock", "MultiLock", "Semaphore", "Queue", "Variable", "Event"]

#: Seconds a blocking call waits for the scheduler's answer beyond its own timeout before
#: giving up locally (the scheduler answers at the timeout; this covers a lost reply).
REPLY_GRACE = 30.0

_seconds = timeout_seconds  # (the name this module's calls use)


def _here() -> dict:
    """The worker this call runs on, inside a task: what it holds is released when that worker goes."""
    worker = getattr(task_context.thread_state, "worker", None)
    address = getattr(worker, "address", None)
    return {"worker": address} if isinstance(address, str) else {}


def _rebuild(cls, state: dict):
    """Unpickling a handle (e.g. as a task's argument): the same name, the client found on first use."""
    obj = cls.__new__(cls)
    obj.__dict__.update(state)
    obj._client = None
    obj._local()
    return obj


class _Primitive:
    """What every handle has: a kind, a name, a client, and one way to ask the scheduler."""

    _kind = ""  # lock, multilock, semaphore, queue, variable, event

    def __init__(self, name, client):
        what = type(self).__name__
        if name is None:
            name = f"{self._kind}-{uuid.uuid4().hex}"
        if not isinstance(name, str):
            raise TypeError(f"a {what}'s name must be a string, not {type(name).__name__} {name!r}")
        if not name or len(name) > MAX_NAME:
            raise ValueError(f"a {what}'s name must be a non-empty string of at most {MAX_NAME} characters, "
                             f"not one of {len(name)}")
        self.name = name
        self._client = client if client is not None else get_client()
        self._local()

    def _local(self) -> None:
        """Set what this object alone holds (never pickled: a copy in a task holds nothing)."""

    @property
    def client(self):
        """The client this handle talks through (found with ``get_client()`` if none was given).

        >>> client                                      # the notebook's default client
        <Client: 'tcp://127.0.0.1:...' workers=2 threads=2 memory=...>
        >>> Lock("_Primitive.client").client is client
        True
        """
        if self._client is None:
            self._client = get_client()
        return self._client

    @property
    def asynchronous(self) -> bool:
        """Whether methods return awaitables (the client is asynchronous): then ``await`` them.

        >>> Lock("_Primitive.asynchronous", client=client).asynchronous
        False
        >>> import asyncio
        >>> from xsched import Client
        >>> async def main():                           # (in async code, with an asynchronous client)
        ...     async with Client(client.scheduler_address, asynchronous=True) as aclient:
        ...         lock = Lock("_Primitive.asynchronous", client=aclient)
        ...         return lock.asynchronous, await lock.acquire(), await lock.release()
        >>> asyncio.run(main())
        (True, True, None)
        """
        return self.client.asynchronous

    def _pickled_state(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k == "name" or k in self._PICKLED}

    _PICKLED: tuple = ()

    def __reduce__(self):
        return (_rebuild, (type(self), self._pickled_state()))

    def _what(self) -> str:
        return f"{type(self).__name__} {self.name!r}"

    async def _ask(self, header: dict, raw: dict | None = None, wait: float | None = None,
                   waits: bool = False) -> tuple[dict, list]:
        """Send a request; its reply. ``waits``: the scheduler may hold it up to ``wait`` seconds
        (None: for ever), so the local deadline is ``wait`` plus ``REPLY_GRACE``."""
        client = self.client
        if client.status != "running" or client._conn is None:
            raise SchedulerLostError(f"{self._what()}: its client is {client.status}; create a new Client")
        deadline = None if waits and wait is None else (wait or 0.0) + REPLY_GRACE
        # (releases of dropped futures go first: one sent after a get that hands a future of the
        # same key back would arrive after the scheduler handed it over, and let go of it)
        client._flush_releases()
        try:
            reply, payload = await client._conn.request(header, raw=raw, timeout=deadline)
        except asyncio.TimeoutError:
            raise TimeoutError(f"{self._what()}: no answer from the scheduler within {deadline:g}s") from None
        except RemoteError as e:
            raise ValueError(f"{self._what()}: the scheduler refused the request: {e}") from None
        refused = reply.get("refused")
        if refused:
            raise ValueError(refused if self._named_in(refused) else f"{self._what()}: {refused}")
        return reply, payload

    def _named_in(self, text: str) -> bool:
        return self.name in text

    def _pack(self, value) -> tuple[list, list]:
        """(frames, keys of the futures in it) of a value to store, refused when too large."""
        with collecting_keys() as keys:
            frames = dumps(value)
        size = sum(frame_nbytes(f) for f in frames)
        if size > MAX_SHARED_VALUE:
            how = "set" if self._kind == "variable" else "put"
            raise ValueError(
                f"{self._what()}: the value pickles to {size:,} bytes ({format_bytes(size)}), more than the "
                f"{MAX_SHARED_VALUE:,} bytes ({format_bytes(MAX_SHARED_VALUE)}) a {type(self).__name__} holds. "
                "It holds futures and small values: put large data on the workers and share its future, "
                f"future = client.scatter(value); {self._kind}.{how}(future)")
        return frames, sorted(set(keys))

    def _unpack(self, reply: dict, payload: list) -> list:
        """The values a reply carries, their futures bound to this handle's client. Futures
        whose keys a restart took (``lost``: [[index, why, keys]]) come out cancelled, with
        why: nobody will compute them, and waiting on them would never end."""
        objects = split_objects(reply, payload)
        with binding_to(self.client):
            values = [loads(objects[f"item{i}"]) for i in range(int(reply.get("n", 0)))]
        for _, why, keys in reply.get("lost") or ():
            for key in keys:
                self.client._op_key_cancelled({"key": key, "reason": why}, [])
        return values


# ----------------------------------------------------------------------------- Lock
class _Leased(_Primitive):
    """A primitive held by leases (Lock, Semaphore): ``with`` and ``async with`` take one
    (``_take``) and give it back (``release`` / ``__aexit__``)."""

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc):
        self.release()

    async def __aenter__(self):
        await self._take(None, _here())
        return self


class Lock(_Leased):
    """A lock shared by every client and task of the cluster, by name.

    ``Lock(name=None, client=None)``: the same name is the same lock everywhere (None makes
    a unique one; pass the object itself into tasks). Not re-entrant. A lock whose holder's
    client or worker leaves the cluster (closed, crashed, killed) is released by the
    scheduler, so a dead task never keeps it. A ``MultiLock`` over the same name is the
    same lock: each excludes the other.

    >>> from xsched import Lock
    >>> import os
    >>> path = os.path.abspath("out.txt")
    >>> lock = Lock(path, client=client)                     # (a name: any string)
    >>> def append(line, lock, path):
    ...     with lock:                                        # one task at a time
    ...         with open(path, "a") as f:
    ...             f.write(line + "\\n")
    >>> client.gather(client.map(append, ["a", "b"], lock=lock, path=path))
    [None, None]
    >>> sorted(open(path).read().split())
    ['a', 'b']
    """

    _kind = "lock"

    def __init__(self, name: str | None = None, client=None):
        super().__init__(name, client)

    def _local(self) -> None:
        self._lease: str | None = None

    def __repr__(self) -> str:
        return f"<Lock {self.name!r} {'held by this object' if self._lease else 'not held by this object'}>"

    @sync_or_async
    def acquire(self, blocking: bool = True, timeout=None):
        """Take the lock: True once held; False when it is not free in time.

        ``blocking=False`` does not wait at all; ``timeout`` (seconds, or a duration such
        as ``"200ms"``) waits at most that long. Without either it waits as long as it takes.

        >>> lock = Lock("Lock.acquire", client=client)
        >>> lock.acquire(timeout=5)
        True
        >>> Lock("Lock.acquire", client=client).acquire(blocking=False)   # another holds it
        False
        >>> lock.release()
        """
        wait = _acquire_wait(self, blocking, timeout)
        return self._take(wait, _here())

    async def _take(self, wait, where) -> bool:
        lease = uuid.uuid4().hex
        header = {"op": ops.LOCK_ACQUIRE, "name": self.name, "lease": lease, "timeout": wait, **where}
        reply = await _acquire_lease(self, header, {"op": ops.LOCK_RELEASE, "name": self.name}, wait)
        granted = bool(reply.get("acquired"))
        if granted:
            self._lease = lease
        return granted

    @sync_or_async
    def release(self) -> None:
        """Let the lock go. Raises ValueError if this object does not hold it.

        >>> lock = Lock("Lock.release", client=client); lock.acquire()
        True
        >>> lock.release()
        >>> lock.release()
        Traceback (most recent call last):
        ...
        ValueError: Lock 'Lock.release' is not held by this Lock object: ...
        """
        lease, self._lease = self._lease, None
        if lease is None:
            raise ValueError(f"{self._what()} is not held by this Lock object: release() only after a successful "
                             "acquire() on the same object")
        return self._give_back(lease)

    async def _give_back(self, lease: str) -> None:
        reply, _ = await self._ask({"op": ops.LOCK_RELEASE, "name": self.name, "lease": lease})
        if not reply.get("released"):
            raise ValueError(reply.get("error") or f"{self._what()} is not held under this lease")

    def locked(self) -> bool:
        """Whether this object holds the lock (as far as it knows).

        >>> lock = Lock("Lock.locked", client=client)
        >>> lock.locked(), lock.acquire(), lock.locked()
        (False, True, True)
        >>> lock.release()
        """
        return self._lease is not None

    async def __aexit__(self, *exc):
        lease, self._lease = self._lease, None
        if lease is None:
            raise ValueError(f"{self._what()} is not held by this Lock object")
        await self._give_back(lease)


def _acquire_wait(obj, blocking, timeout) -> float | None:
    if not isinstance(blocking, bool):
        raise TypeError(f"{obj._what()}: blocking must be True or False, not {blocking!r}")
    wait = _seconds(timeout, f"{obj._what()}.acquire")
    if not blocking:
        if wait is not None:
            raise ValueError(f"{obj._what()}: a timeout makes no sense with blocking=False (it does not wait)")
        wait = 0.0
    return wait


async def _acquire_lease(obj, header: dict, release: dict, wait) -> dict:
    """Ask for a lease: the reply (``acquired``). If this call gives up (local deadline,
    cancellation) it sends ``release`` (the op and what names the lock) for that lease unseen."""
    try:
        reply, _ = await obj._ask(header, wait=wait, waits=True)
    except (TimeoutError, asyncio.CancelledError):
        conn = obj.client._conn
        if conn is not None and not conn.closed:  # (a grant on its way must not be kept by nobody)
            try:
                conn.send({**release, "lease": header["lease"], "abandon": True})
            except Exception:  # noqa: BLE001 - the connection is going: the scheduler then releases it anyway
                pass
        raise
    return reply


# ----------------------------------------------------------------------------- MultiLock
class MultiLock(_Leased):
    """Several named locks taken at once, all or nothing, by every client and task of the cluster.

    ``MultiLock(names, client=None)``: ``with MultiLock(["a", "b"]):`` holds the locks ``a``
    and ``b`` for the block. The scheduler grants them in one step: a MultiLock never holds
    some of its names while it waits for the others, so tasks taking ``["a", "b"]`` and
    ``["b", "a"]`` cannot deadlock each other, as two nested Locks taken in opposite orders
    can. Not re-entrant; what a client or worker that leaves the cluster held is released.

    **One name space with Lock.** ``Lock("a")`` and a MultiLock over ``"a"`` are the same
    lock and exclude each other (a Lock is a MultiLock of one name). dask.distributed keeps
    its MultiLocks apart from its Locks, so there a ``Lock("a")`` does not stop a
    ``MultiLock(["a"])``; here a name is one resource however it is locked, so code that
    guards a file with ``Lock(path)`` and code that needs it with another resource,
    ``MultiLock([path, other])``, exclude each other as they must.

    **Who goes first.** Each name has a line of the requests that want it, in order of
    arrival. A request is granted when enough of its names are free and it is first in
    their lines: for every name, requests are served in the order they asked (a free name
    waits for the first in line, so a MultiLock is not starved by a stream of Locks on one
    of its names), while requests for other names pass by. The one exception: a client
    that the first in line is itself waiting for may take a free name ahead of it (a task
    holding ``a`` takes ``b`` inside while a MultiLock over both waits for that ``a``:
    holding ``b`` back would deadlock both). What the scheduler cannot see it cannot let
    pass: a task holding a lock that waits for *another* task which needs a name a waiting
    MultiLock asked for first waits for ever; take such locks together in one MultiLock.

    >>> from xsched import MultiLock
    >>> def transfer(amount, lock):
    ...     with lock:                                         # both accounts, or neither
    ...         return amount
    >>> accounts = ["MultiLock-acct-1", "MultiLock-acct-2"]
    >>> one, other = MultiLock(accounts, client=client), MultiLock(accounts[::-1], client=client)
    >>> client.gather([client.submit(transfer, 5, one), client.submit(transfer, 7, other)])
    [5, 7]
    >>> MultiLock("ab")
    Traceback (most recent call last):
    ...
    TypeError: MultiLock: names must be a list of lock names (strings), not str 'ab'
    """

    _kind = "multilock"
    _PICKLED = ("names",)

    def __init__(self, names, client=None):
        if isinstance(names, (str, bytes, dict)) or not hasattr(names, "__iter__"):
            raise TypeError(f"MultiLock: names must be a list of lock names (strings), not "
                            f"{type(names).__name__} {names!r}")
        names = tuple(names)
        for name in names:
            if not isinstance(name, str):
                raise TypeError(f"MultiLock {list(names)!r}: a lock name must be a string, not "
                                f"{type(name).__name__} {name!r}")
            if not name or len(name) > MAX_NAME:
                raise ValueError(f"MultiLock: a lock name must be a non-empty string of at most {MAX_NAME} "
                                 f"characters, not one of {len(name)}")
        if not 1 <= len(names) <= MAX_LOCK_NAMES:
            raise ValueError(f"MultiLock: names must name from 1 to {MAX_LOCK_NAMES} locks, not {len(names)}")
        seen: set = set()
        twice = sorted({n for n in names if n in seen or seen.add(n)})
        if twice:
            raise ValueError(f"MultiLock {list(names)!r}: the names {twice} are given twice; name each lock once")
        self.names = names
        self._client = client if client is not None else get_client()
        self._local()

    def _local(self) -> None:
        self._lease: str | None = None
        self._held: tuple = ()

    def __repr__(self) -> str:
        if self._lease is None:
            return f"<MultiLock {list(self.names)!r} not held by this object>"
        if len(self._held) == len(self.names):
            return f"<MultiLock {list(self.names)!r} held by this object>"
        return f"<MultiLock {list(self.names)!r} held by this object: {list(self._held)!r}>"

    def _what(self) -> str:
        return f"MultiLock {list(self.names)!r}"

    def _named_in(self, text: str) -> bool:
        return self._what() in text

    @sync_or_async
    def acquire(self, blocking: bool = True, timeout=None, num_locks: int | None = None):
        """Take the locks: True once held, all of them (or ``num_locks`` of them); False when
        they are not free in time. Nothing is held after False.

        ``blocking=False`` does not wait at all; ``timeout`` (seconds, or a duration such as
        ``"200ms"``) waits at most that long. ``num_locks=n`` is granted as soon as ``n`` of
        the names are free and takes those ``n`` (``held`` says which): a pool of
        interchangeable resources.

        >>> lock = MultiLock(["MultiLock.acquire-a", "MultiLock.acquire-b"], client=client)
        >>> lock.acquire(timeout=5)
        True
        >>> lock.release()
        >>> gpus = MultiLock(["MultiLock.acquire-gpu-0", "MultiLock.acquire-gpu-1"], client=client)
        >>> gpus.acquire(num_locks=1), gpus.held
        (True, ('MultiLock.acquire-gpu-0',))
        >>> gpus.release()
        """
        wait = _acquire_wait(self, blocking, timeout)
        if num_locks is not None and (not isinstance(num_locks, int) or isinstance(num_locks, bool)
                                      or not 1 <= num_locks <= len(self.names)):
            raise ValueError(f"{self._what()}: num_locks must be an integer from 1 to {len(self.names)} (the "
                             f"number of names), or None for all of them, not {num_locks!r}")
        if self._lease is not None:
            raise RuntimeError(f"{self._what()} is held by this object already: release() it first (a MultiLock "
                               "is not re-entrant)")
        return self._take(wait, _here(), num_locks)

    async def _take(self, wait, where, num_locks=None) -> bool:
        lease = uuid.uuid4().hex
        header = {"op": ops.MULTI_LOCK_ACQUIRE, "names": list(self.names), "lease": lease, "timeout": wait, **where}
        if num_locks is not None:
            header["num_locks"] = num_locks
        reply = await _acquire_lease(self, header, {"op": ops.MULTI_LOCK_RELEASE, "names": list(self.names)}, wait)
        if not reply.get("acquired"):
            return False
        self._lease, self._held = lease, tuple(reply.get("names") or self.names)
        return True

    @sync_or_async
    def release(self) -> None:
        """Let every lock this object holds go. Raises ValueError if it holds none.

        >>> lock = MultiLock(["MultiLock.release-a", "MultiLock.release-b"], client=client)
        >>> lock.acquire()
        True
        >>> lock.release()
        >>> lock.release()
        Traceback (most recent call last):
        ...
        ValueError: MultiLock ['MultiLock.release-a', ...] is not held by this MultiLock object: ...
        """
        lease, held = self._lease, self._held
        self._lease, self._held = None, ()
        if lease is None:
            raise ValueError(f"{self._what()} is not held by this MultiLock object: release() only after a "
                             "successful acquire() on the same object")
        return self._give_back(lease, held)

    async def _give_back(self, lease: str, held: tuple) -> None:
        reply, _ = await self._ask({"op": ops.MULTI_LOCK_RELEASE, "names": list(held), "lease": lease})
        if not reply.get("released"):
            raise ValueError(reply.get("error") or f"{self._what()} is not held under this lease")

    def locked(self) -> bool:
        """Whether this object holds its locks (as far as it knows).

        >>> lock = MultiLock(["MultiLock.locked-a", "MultiLock.locked-b"], client=client)
        >>> lock.locked(), lock.acquire(), lock.locked()
        (False, True, True)
        >>> lock.release()
        """
        return self._lease is not None

    @property
    def held(self) -> tuple:
        """The names this object holds now: all of ``names`` after ``acquire()``, the
        ``num_locks`` granted after ``acquire(num_locks=n)``, none before.

        >>> lock = MultiLock(["MultiLock.held-a", "MultiLock.held-b", "MultiLock.held-c"], client=client)
        >>> lock.held, lock.acquire(num_locks=2), lock.held
        ((), True, ('MultiLock.held-a', 'MultiLock.held-b'))
        >>> lock.release()
        """
        return self._held

    async def __aexit__(self, *exc):
        lease, held = self._lease, self._held
        self._lease, self._held = None, ()
        if lease is None:
            raise ValueError(f"{self._what()} is not held by this MultiLock object")
        await self._give_back(lease, held)


# ----------------------------------------------------------------------------- Semaphore
class Semaphore(_Leased):
    """At most ``max_leases`` holders at a time, across the cluster, by name.

    ``Semaphore(max_leases=1, name=None, client=None)``: limit how many tasks use a
    resource at once (a database, a licence, a disk). Every handle of a name must give the
    same ``max_leases``. Leases held by a client or worker that leaves the cluster are
    released by the scheduler at once.

    >>> from xsched import Semaphore
    >>> sem = Semaphore(max_leases=2, name="Semaphore-database", client=client)
    >>> def query(i, sem):
    ...     with sem:                                       # at most two at a time
    ...         return i * 2
    >>> client.gather(client.map(query, range(10), sem=sem))
    [0, 2, 4, 6, 8, 10, 12, 14, 16, 18]
    """

    _kind = "semaphore"
    _PICKLED = ("max_leases",)

    def __init__(self, max_leases: int = 1, name: str | None = None, client=None):
        if not isinstance(max_leases, int) or isinstance(max_leases, bool) or not 1 <= max_leases < 2**31:
            raise ValueError(f"Semaphore: max_leases must be an integer >= 1, not {max_leases!r}")
        self.max_leases = max_leases
        super().__init__(name, client)

    def _local(self) -> None:
        self._leases: list[str] = []

    def __repr__(self) -> str:
        return f"<Semaphore {self.name!r} max_leases={self.max_leases} held by this object: {len(self._leases)}>"

    @sync_or_async
    def acquire(self, timeout=None, blocking: bool = True):
        """Take a lease: True once held; False when none is free in time.

        >>> sem = Semaphore(2, name="Semaphore.acquire", client=client)
        >>> sem.acquire(timeout="1s")
        True
        >>> sem.release()
        True
        """
        wait = _acquire_wait(self, blocking, timeout)
        return self._take(wait, _here())

    async def _take(self, wait, where) -> bool:
        lease = uuid.uuid4().hex
        header = {"op": ops.SEMAPHORE_ACQUIRE, "name": self.name, "lease": lease, "max_leases": self.max_leases,
                  "timeout": wait, **where}
        reply = await _acquire_lease(self, header, {"op": ops.SEMAPHORE_RELEASE, "name": self.name}, wait)
        granted = bool(reply.get("acquired"))
        if granted:
            self._leases.append(lease)
        return granted

    @sync_or_async
    def release(self) -> bool:
        """Give back a lease this object holds. Raises RuntimeError if it holds none.

        >>> Semaphore(2, name="Semaphore.release", client=client).release()
        Traceback (most recent call last):
        ...
        RuntimeError: Semaphore 'Semaphore.release' was released more often than acquired: ...
        """
        try:
            lease = self._leases.pop()
        except IndexError:
            raise RuntimeError(f"{self._what()} was released more often than acquired: this Semaphore object "
                               "holds no lease") from None
        return self._give_back(lease)

    async def _give_back(self, lease: str) -> bool:
        reply, _ = await self._ask({"op": ops.SEMAPHORE_RELEASE, "name": self.name, "lease": lease})
        if not reply.get("released"):
            raise RuntimeError(reply.get("error") or f"{self._what()} is not held under this lease")
        return True

    @sync_or_async
    async def get_value(self) -> int:
        """How many leases are held now, by anyone.

        >>> sem = Semaphore(2, name="Semaphore.get_value", client=client)
        >>> sem.get_value(), sem.acquire(), sem.get_value()
        (0, True, 1)
        >>> sem.release()
        True
        """
        reply, _ = await self._ask({"op": ops.SEMAPHORE_VALUE, "name": self.name})
        return int(reply["value"])

    async def __aexit__(self, *exc):
        if not self._leases:
            raise RuntimeError(f"{self._what()} was released more often than acquired")
        await self._give_back(self._leases.pop())


# ----------------------------------------------------------------------------- Queue
class Queue(_Primitive):
    """A first-in first-out queue of futures and small values, shared by name.

    ``Queue(name=None, client=None, maxsize=0)``: any client or task may put and get;
    ``maxsize`` > 0 makes ``put`` wait while the queue is full. Items stay on the scheduler
    after the client that put them leaves; futures in them keep their data in memory until
    taken. Values must pickle to at most 1 MiB: scatter larger data and put its future.

    >>> from xsched import Queue
    >>> q = Queue("Queue-results", client=client)
    >>> def produce(n, q):
    ...     for i in range(n):
    ...         q.put(i * i)
    >>> f = client.submit(produce, 3, q)
    >>> [q.get(timeout=10) for _ in range(3)]
    [0, 1, 4]
    """

    _kind = "queue"
    _PICKLED = ("maxsize",)

    def __init__(self, name: str | None = None, client=None, maxsize: int = 0):
        if not isinstance(maxsize, int) or isinstance(maxsize, bool) or not 0 <= maxsize < 2**31:
            raise ValueError(f"Queue: maxsize must be an integer >= 0 (0: no limit), not {maxsize!r}")
        super().__init__(name, client)
        self.maxsize = maxsize

    def __repr__(self) -> str:
        return f"<Queue {self.name!r}{f' maxsize={self.maxsize}' if self.maxsize else ''}>"

    @sync_or_async
    def put(self, value, timeout=None) -> None:
        """Add ``value`` (a future, or a small picklable value) at the end of the queue.

        With ``maxsize`` set, waits while the queue is full: at most ``timeout`` seconds,
        then raises TimeoutError.

        >>> q = Queue("Queue.put", client=client)
        >>> q.put(client.submit(sum, [1, 2]))
        >>> q.put({"step": 1})
        >>> q.get(timeout=5).result(), q.get(timeout=5)
        (3, {'step': 1})
        """
        wait = _seconds(timeout, f"{self._what()}.put")
        frames, keys = self._pack(value)
        return self._put(frames, keys, wait, _here())

    async def _put(self, frames, keys, wait, where) -> None:
        header = {"op": ops.QUEUE_PUT, "name": self.name, "maxsize": self.maxsize, "keys": keys, "timeout": wait,
                  "ticket": uuid.uuid4().hex, **where}
        reply, _ = await self._ask_or_abandon(header, raw={"data": frames}, wait=wait, waits=True)
        if reply.get("timed_out"):
            raise TimeoutError(f"{self._what()} stayed full for {wait:g}s: nothing was put")

    @sync_or_async
    def get(self, timeout=None, batch=False):
        """The next item (waiting for one), or several: ``batch=True`` takes all there are
        now (a list, maybe empty, without waiting); ``batch=n`` waits for ``n`` and returns
        them as a list. Raises TimeoutError after ``timeout`` seconds without enough items.

        >>> q = Queue("Queue.get", client=client)
        >>> q.put(1); q.put(2); q.put(3)
        >>> q.get(timeout=1)
        1
        >>> q.get(batch=True)
        [2, 3]
        """
        wait = _seconds(timeout, f"{self._what()}.get")
        if not (batch is True or batch is False or (isinstance(batch, int) and batch >= 1)):
            raise ValueError(f"{self._what()}.get: batch must be False, True or an integer >= 1, not {batch!r}")
        return self._get(wait, batch, _here())

    async def _get(self, wait, batch, where):
        header = {"op": ops.QUEUE_GET, "name": self.name, "maxsize": self.maxsize, "timeout": wait,
                  "ticket": uuid.uuid4().hex, **where}
        if batch is not False:
            header["batch"] = batch
        reply, payload = await self._ask_or_abandon(header, wait=wait, waits=batch is not True)
        if reply.get("timed_out"):
            need = "no item" if batch is False else f"fewer than {batch} items"
            raise TimeoutError(f"{self._what()}: {need} came " + (f"within {wait:g}s" if wait is not None else
                                                                   "before the scheduler ended the wait"))
        values = self._unpack(reply, payload)
        return values if batch is not False else values[0]

    async def _ask_or_abandon(self, header: dict, **kwargs) -> tuple[dict, list]:
        """``_ask``; when this call gives up first (interrupted, cancelled, its own deadline),
        the request leaves the scheduler's line: a get waiting there would otherwise take
        the next item for nobody, and a put waiting for room would still put it."""
        try:
            return await self._ask(header, **kwargs)
        except (TimeoutError, asyncio.CancelledError):
            conn = self.client._conn
            if conn is not None and not conn.closed:
                try:
                    conn.send({"op": ops.QUEUE_ABANDON, "ticket": header["ticket"]})
                except Exception:  # noqa: BLE001 - the connection is going: the scheduler drops the request then
                    pass
            raise

    @sync_or_async
    async def qsize(self) -> int:
        """How many items wait in the queue now.

        >>> q = Queue("Queue.qsize", client=client)
        >>> q.qsize()
        0
        >>> q.put("item"); q.qsize()
        1
        >>> q.get(timeout=1)
        'item'
        """
        reply, _ = await self._ask({"op": ops.QUEUE_SIZE, "name": self.name})
        return int(reply["size"])


# ----------------------------------------------------------------------------- Variable
class Variable(_Primitive):
    """One shared value (a future, or a small picklable value), by name.

    ``Variable(name=None, client=None)``: ``set`` replaces the value, ``get`` reads it
    (waiting until there is one). A future set here keeps its data in memory until the
    value is replaced or deleted, even after the client that set it leaves. A stop flag
    for a long-running task is the classic use.

    >>> from xsched import Variable
    >>> stop = Variable("Variable-stop", client=client)
    >>> stop.set(False)
    >>> def loop(stop):
    ...     n = 0
    ...     while not stop.get():
    ...         n += 1
    ...     return n
    >>> f = client.submit(loop, stop)
    >>> stop.set(True)
    >>> f.result(timeout=30) >= 0                   # the loop stopped
    True
    >>> stop.delete()
    """

    _kind = "variable"

    def __init__(self, name: str | None = None, client=None):
        super().__init__(name, client)

    def __repr__(self) -> str:
        return f"<Variable {self.name!r}>"

    @sync_or_async
    def set(self, value) -> None:
        """Replace the value (a future, or a small picklable value).

        >>> v = Variable("Variable.set", client=client)
        >>> v.set(client.scatter([1, 2, 3]))        # a list of three futures
        >>> client.gather(v.get())
        [1, 2, 3]
        >>> v.delete()
        """
        frames, keys = self._pack(value)
        return self._set(frames, keys)

    async def _set(self, frames, keys) -> None:
        await self._ask({"op": ops.VARIABLE_SET, "name": self.name, "keys": keys}, raw={"data": frames})

    @sync_or_async
    def get(self, timeout=None):
        """The value, waiting until one is set: at most ``timeout`` seconds, then TimeoutError.

        >>> v = Variable("Variable.get", client=client)
        >>> v.get(timeout=0.1)
        Traceback (most recent call last):
        ...
        TimeoutError: Variable 'Variable.get' was not set within 0.1s
        >>> v.set(42); v.get(timeout=1)
        42
        >>> v.delete()
        """
        wait = _seconds(timeout, f"{self._what()}.get")
        return self._get(wait, _here())

    async def _get(self, wait, where):
        reply, payload = await self._ask({"op": ops.VARIABLE_GET, "name": self.name, "timeout": wait, **where},
                                         wait=wait, waits=True)
        if reply.get("timed_out"):
            raise TimeoutError(f"{self._what()} was not set within {wait:g}s")
        return self._unpack(reply, payload)[0]

    @sync_or_async
    async def delete(self) -> None:
        """Forget the value (its futures' data is freed unless someone else holds them).

        >>> v = Variable("Variable.delete", client=client); v.set(1)
        >>> v.delete()
        >>> v.get(timeout=0.1)
        Traceback (most recent call last):
        ...
        TimeoutError: Variable 'Variable.delete' was not set within 0.1s
        """
        await self._ask({"op": ops.VARIABLE_DELETE, "name": self.name})


# ----------------------------------------------------------------------------- Event
class Event(_Primitive):
    """A flag shared by name: tasks ``wait()`` until someone ``set()``s it.

    ``Event(name=None, client=None)``; it starts cleared.

    >>> from xsched import Event
    >>> go = Event("Event-go", client=client)
    >>> def work(i, go):
    ...     go.wait()                                           # until the notebook says go
    ...     return i
    >>> futures = client.map(work, range(4), go=go)
    >>> go.set()
    >>> client.gather(futures)
    [0, 1, 2, 3]
    >>> go.clear()                                              # (a set event stays set)
    """

    _kind = "event"

    def __init__(self, name: str | None = None, client=None):
        super().__init__(name, client)

    def __repr__(self) -> str:
        return f"<Event {self.name!r}>"

    @sync_or_async
    async def set(self) -> None:
        """Set the flag: every waiter wakes, and later waits return at once.

        >>> go = Event("Event.set", client=client)
        >>> go.set()
        >>> go.is_set(), go.wait(timeout=1)
        (True, True)
        >>> go.clear()
        """
        await self._ask({"op": ops.EVENT_SET, "name": self.name})

    @sync_or_async
    async def clear(self) -> None:
        """Clear the flag: later waits wait again.

        >>> go = Event("Event.clear", client=client); go.set()
        >>> go.clear()
        >>> go.is_set(), go.wait(timeout=0.1)
        (False, False)
        """
        await self._ask({"op": ops.EVENT_CLEAR, "name": self.name})

    @sync_or_async
    async def is_set(self) -> bool:
        """Whether the flag is set now.

        >>> Event("Event.is_set", client=client).is_set()
        False
        """
        reply, _ = await self._ask({"op": ops.EVENT_IS_SET, "name": self.name})
        return bool(reply["set"])

    @sync_or_async
    def wait(self, timeout=None):
        """Wait until the flag is set: True; False if ``timeout`` seconds passed first.

        >>> Event("Event.wait", client=client).wait(timeout=0.1)
        False
        """
        wait = _seconds(timeout, f"{self._what()}.wait")
        return self._wait(wait, _here())

    async def _wait(self, wait, where) -> bool:
        reply, _ = await self._ask({"op": ops.EVENT_WAIT, "name": self.name, "timeout": wait, **where},
                                   wait=wait, waits=True)
        return bool(reply.get("set"))
