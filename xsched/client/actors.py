"""Actors: a stateful object living in one worker, its methods called from anywhere.

``client.submit(Counter, actor=True)`` runs ``Counter()`` as a task (``create_actor``); the
worker keeps the instance (``worker/actors.py``) and the task's value is an ``Actor``
handle naming that worker. The handle is small and pickles by name, so it travels as a
result to the notebook and as an argument into other tasks; every copy reaches the one
instance. Calls skip the scheduler::

    notebook / task: counter.increment(5) --actor-call--> the worker holding it
                     ActorFuture <--------- result or exception --+
    counter.n (an attribute, not a method) --actor-attribute--> its value

A call returns an ``ActorFuture`` at once (``.result()`` waits; ``await`` it in async
code); reading an attribute waits for its value (in async code it is an ``ActorFuture``
too). A method that raises fails only that call: the actor stays usable. The actor lives
while its future or a handle a client fetched is held (such a handle holds a future of its
key); its worker leaving loses its state, and calls then fail with ``ActorError`` naming
the worker (the scheduler does not rebuild an actor behind the handles already given out).

>>> Actor("Counter", "Counter-1", "tcp://127.0.0.1:4000", ("increment",))
<Actor Counter 'Counter-1' on tcp://127.0.0.1:4000>
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import html

from .. import task_context
from ..comm import CommClosedError
from ..errors import ActorError, unpack_exception
from ..protocol import ops
from ..protocol.messages import unpack_objects
from .default import default_client
from .future import Future

__all__ = ["Actor", "ActorFuture", "create_actor"]


def create_actor(cls, *args, **kwargs) -> "Actor":
    """(The task of ``submit(cls, ..., actor=True)``, on a worker) make the instance, leave it
    with this worker, and return its handle."""
    worker, key = task_context.get_worker(), task_context.current_key()
    if key is None:
        raise ValueError("create_actor runs as the task of client.submit(cls, actor=True), not on its own")
    instance = cls(*args, **kwargs)
    worker.actors.add(key, instance)
    return Actor(type(instance).__name__, key, worker.address, _methods(type(instance)))


def _methods(cls) -> tuple[str, ...]:
    """The public callables of ``cls``: calls to these are method calls, other names reads."""
    out = []
    for name in dir(cls):
        if not name.startswith("_"):
            try:
                if callable(getattr(cls, name)):
                    out.append(name)
            except Exception:  # noqa: BLE001 - a descriptor that fails on the class: an attribute
                pass
    return tuple(out)


class Actor:
    """A handle on an object living in one worker: its methods run there.

    Got from ``client.submit(cls, actor=True).result()`` (or passed into a task as that
    future). Calling a method returns an ``ActorFuture``; reading an attribute returns its
    value.

    >>> class Counter:
    ...     n = 0
    ...     def increment(self, by=1):
    ...         self.n += by
    ...         return self.n
    >>> counter = client.submit(Counter, actor=True).result()
    >>> counter
    <Actor Counter 'Counter-...' on tcp://127.0.0.1:...>
    >>> counter.increment(5).result(), counter.n
    (5, 5)
    """

    __slots__ = ("_cls", "_key", "_address", "_methods", "_client", "_future")

    def __init__(self, cls: str, key: str, address: str, methods: tuple = ()):
        self._cls, self._key, self._address, self._methods = cls, key, address, tuple(methods)
        self._client = None  # the client that fetched it (bind): its calls go through that client
        self._future = None  # ... and a future of its key, so the actor lives while this handle does

    def _bind(self, client) -> "Actor":
        self._client, self._future = client, Future(self._key, client)
        return self

    def __reduce__(self):
        return (Actor, (self._cls, self._key, self._address, self._methods))

    @property
    def key(self) -> str:
        """The key of the task that made it."""
        return self._key

    @property
    def worker(self) -> str:
        """The address of the worker it lives in."""
        return self._address

    def __repr__(self) -> str:
        return f"<Actor {self._cls} {self._key!r} on {self._address}>"

    def _repr_html_(self) -> str:
        methods = ", ".join(html.escape(m) for m in self._methods) or "none"
        return (f"<div><strong>Actor</strong> {html.escape(self._cls)} <code>{html.escape(self._key)}</code> "
                f"on <code>{html.escape(self._address)}</code><br><small>methods: {methods}</small></div>")

    def __dir__(self):
        return sorted(set(object.__dir__(self)) | set(self._methods))

    def __eq__(self, other) -> bool:
        return isinstance(other, Actor) and (other._key, other._address) == (self._key, self._address)

    def __hash__(self) -> int:
        return hash((self._key, self._address))

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self._methods:
            return _Method(self, name)
        fut = self._send({"op": ops.ACTOR_ATTRIBUTE, "key": self._key, "name": name}, None, f"{self._cls}.{name}")
        return fut if fut._asynchronous else fut.result()

    def _send(self, header: dict, objects: dict | None, what: str) -> "ActorFuture":
        pool, loop = _route(self._client)
        coro = _request(pool, self._address, header, objects, self)
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:  # async code on that loop: await the ActorFuture
            return ActorFuture(asyncio.ensure_future(coro), what, asynchronous=True)
        return ActorFuture(asyncio.run_coroutine_threadsafe(coro, loop), what)


class _Method:
    """``actor.method``: calling it sends the call (bound to the handle)."""

    __slots__ = ("_actor", "_name")

    def __init__(self, actor: Actor, name: str):
        self._actor, self._name = actor, name

    def __repr__(self) -> str:
        return f"<actor method {self._actor._cls}.{self._name} of {self._actor._key!r}>"

    def __call__(self, *args, **kwargs) -> "ActorFuture":
        a = self._actor
        return a._send({"op": ops.ACTOR_CALL, "key": a._key, "method": self._name},
                       {"args": args, "kwargs": kwargs}, f"{a._cls}.{self._name}")


def _route(bound=None):
    """The connection pool and event loop to call from here: the worker's inside a task
    or an actor method on a worker, else those of the client that fetched the handle
    (while it runs), else the default client's."""
    worker = getattr(task_context.thread_state, "worker", None)
    if worker is not None:
        return worker.pool, worker.loop
    client = bound if bound is not None and bound.status == "running" else default_client()
    if client is None:
        raise ActorError("calling an actor needs a running Client: create one (xsched.Client(...)) in this "
                         "process first")
    return client._pool, client._loop


async def _request(pool, address: str, header: dict, objects: dict | None, actor: Actor):
    try:
        reply, payload = await pool.get(address).request(header, objects, timeout=None)
    except (CommClosedError, ConnectionError, OSError) as e:
        raise ActorError(
            f"actor {actor._cls} {actor._key!r} lived on worker {address}, which cannot be reached ({e}); its state "
            f"is gone with it. Create it again with client.submit({actor._cls}, actor=True)") from None
    if reply.get("error"):
        raise unpack_exception(reply.get("exception"), reply.get("traceback"), reply.get("text", ""),
                               worker=address)
    return unpack_objects(reply, payload)["result"]


class ActorFuture:
    """The outcome of one actor call: ``result()`` waits for it (or ``await`` it).

    >>> f = concurrent.futures.Future(); f.set_result(3)
    >>> af = ActorFuture(f, "Counter.increment")
    >>> af, af.result()
    (<ActorFuture Counter.increment: finished>, 3)
    """

    def __init__(self, future, what: str, asynchronous: bool = False):
        self._future, self._what, self._asynchronous = future, what, asynchronous

    def done(self) -> bool:
        return self._future.done()

    @property
    def status(self) -> str:
        if not self._future.done():
            return "pending"
        return "error" if self._future.exception() is not None else "finished"

    def result(self, timeout=None):
        """The call's value (its exception raised here, with the remote traceback)."""
        if self._asynchronous:
            if not self._future.done():
                raise RuntimeError(f"{self._what} is still running: in async code, await the ActorFuture")
            return self._future.result()
        try:
            return self._future.result(timeout)
        except concurrent.futures.TimeoutError:
            raise TimeoutError(f"actor call {self._what} did not finish within {timeout}s") from None

    def __await__(self):
        fut = self._future if self._asynchronous else asyncio.wrap_future(self._future)
        return fut.__await__()

    def __repr__(self) -> str:
        return f"<ActorFuture {self._what}: {self.status}>"
