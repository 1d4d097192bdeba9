"""Publish-subscribe topics shared through the scheduler: ``Pub`` and ``Sub``.

A ``Sub(topic)`` made in the notebook or in a task receives every message put on the
topic by any ``Pub(topic)`` after it subscribed, in the order the scheduler received
them; a message put when nobody subscribes is dropped (a topic keeps no history). Each
subscription is a queue of its own on the scheduler (its ``coordination`` extension)::

    Sub(topic) --pubsub-subscribe {topic, queue, worker}--> scheduler: files the queue under the topic
    Pub(topic).put(msg) --pubsub-publish {topic, keys} + frames--> a copy into every subscription's queue
    sub.get(timeout) --queue-get {queue}--> the next message (waits on the scheduler, not polling)
    sub.close(), or its client or worker leaving --> the subscription and its messages go

Messages are pickled here and never unpickled by the scheduler, at most ``MAX_SHARED_VALUE``
(1 MiB) each; futures in them stay in memory until every subscriber took its copy.

>>> from xsched import Pub, Sub
>>> sub = Sub("pubsub-doc", client=client)
>>> Pub("pubsub-doc", client=client).put({"step": 1})
>>> sub.get(timeout=10)
{'step': 1}
>>> sub.close()
"""

from __future__ import annotations

import asyncio
import uuid

from ..comm import CommClosedError
from ..errors import SchedulerLostError
from ..protocol import ops
from .coordination import Queue, _here, _Primitive, _seconds
from .dual import sync_or_async

__all__ = ["Pub", "Sub"]


class Pub(_Primitive):
    """Puts messages on a topic, for every ``Sub`` of it (in the notebook or in tasks).

    ``Pub(name=None, client=None)``; handles of the same name are the same topic, and a
    Pub travels into tasks by name.

    >>> readings = Sub("Pub-readings", client=client)
    >>> def measure(i):
    ...     Pub("Pub-readings").put({"sensor": i})              # (inside a task: the worker's client)
    ...     return i
    >>> client.gather(client.map(measure, range(3)))
    [0, 1, 2]
    >>> sorted(readings.get(timeout=10)["sensor"] for _ in range(3))
    [0, 1, 2]
    >>> readings.close()
    """

    _kind = "pub"

    def __init__(self, name: str | None = None, client=None):
        super().__init__(name, client)

    def __repr__(self) -> str:
        return f"<Pub {self.name!r}>"

    @sync_or_async
    def put(self, msg) -> None:
        """Send ``msg`` (a small picklable value, or futures) to every subscriber there is now.

        >>> Pub("Pub.put", client=client).put("nobody listens")   # (dropped: no subscriber)
        """
        frames, keys = self._pack(msg)
        return self._publish(frames, keys)

    async def _publish(self, frames, keys) -> None:
        await self._ask({"op": ops.PUBSUB_PUBLISH, "topic": self.name, "keys": keys}, raw={"data": frames})


class Sub(_Primitive):
    """Receives the messages put on a topic from its making on: ``get(timeout=)`` the next
    one, or iterate (``for msg in sub``, ``async for`` with an asynchronous client).

    ``Sub(name, client=None)``. It subscribes when made (with an asynchronous client, when
    first awaited or read: ``sub = await Sub(name, client=aclient)``) and until ``close()``,
    the end of a ``with`` block, or its client or worker leaving. Make it where it reads:
    it does not travel into tasks (a task makes its own).

    >>> with Sub("Sub-doc", client=client) as sub:
    ...     Pub("Sub-doc", client=client).put(1)
    ...     Pub("Sub-doc", client=client).put(2)
    ...     [sub.get(timeout=10), sub.get(timeout=10)]
    [1, 2]
    """

    _kind = "sub"

    def __init__(self, name: str | None = None, client=None):
        super().__init__(name, client)
        self._queue = Queue(f"xsched-sub-{uuid.uuid4().hex}", client=self.client)
        self._closed = False
        self._joining = None
        where = _here()
        if self.client.asynchronous:  # (joined when first awaited or read)
            self._joining = asyncio.ensure_future(self._subscribe(where))
        else:
            self.client._sync(self._subscribe(where), None)

    def __repr__(self) -> str:
        return f"<Sub {self.name!r}{' closed' if self._closed else ''}>"

    def __reduce__(self):
        raise TypeError(f"{self._what()} receives in the process that made it and does not travel into tasks; "
                        f"make Sub({self.name!r}) inside the task")

    async def _subscribe(self, where: dict) -> None:
        await self._ask({"op": ops.PUBSUB_SUBSCRIBE, "topic": self.name, "queue": self._queue.name, **where})

    async def _joined(self) -> None:
        if self._joining is not None:
            joining, self._joining = self._joining, None
            await joining

    def __await__(self):
        async def joined():
            await self._joined()
            return self
        return joined().__await__()

    @sync_or_async
    def get(self, timeout=None):
        """The next message, waiting for one; TimeoutError after ``timeout`` seconds without.

        >>> sub = Sub("Sub.get", client=client)
        >>> sub.get(timeout=0.1)
        Traceback (most recent call last):
        ...
        TimeoutError: Sub 'Sub.get': no message came within 0.1s
        >>> sub.close()
        """
        wait = _seconds(timeout, f"{self._what()}.get")
        if self._closed:
            raise RuntimeError(f"{self._what()} is closed; make a new Sub to receive again")
        return self._next(wait, _here())

    async def _next(self, wait, where):
        await self._joined()
        try:
            return await self._queue._get(wait, False, where)
        except (SchedulerLostError, CommClosedError):
            raise SchedulerLostError(f"{self._what()}: its client is {self.client.status} (or lost its scheduler) "
                                     "while receiving; make a new Client and a new Sub") from None
        except TimeoutError:
            if self._closed or wait is None:  # (no timeout: only the end of the subscription ends a wait)
                raise RuntimeError(f"{self._what()} was closed while waiting") from None
            raise TimeoutError(f"{self._what()}: no message came within {wait:g}s") from None

    def __iter__(self):
        if self.client.asynchronous:
            raise TypeError(f"{self._what()} has an asynchronous client: use `async for msg in sub`")
        while True:
            yield self.get()

    def __aiter__(self):
        return self

    async def __anext__(self):
        return await self.get()

    @sync_or_async
    def close(self) -> None:
        """Stop receiving: the messages not taken yet go too.

        >>> sub = Sub("Sub.close", client=client)
        >>> sub.close(); sub
        <Sub 'Sub.close' closed>
        """
        if self._closed or self.client.status != "running":  # (a closed client's subscriptions went with it)
            self._closed = True
            return self._nothing()
        self._closed = True
        return self._unsubscribe()

    async def _nothing(self) -> None:
        return None

    async def _unsubscribe(self) -> None:
        await self._joined()
        await self._ask({"op": ops.PUBSUB_UNSUBSCRIBE, "topic": self.name, "queue": self._queue.name})

    def __enter__(self):
        if self.client.asynchronous:
            raise TypeError(f"{self._what()} has an asynchronous client: use `async with Sub(...) as sub`")
        return self

    def __exit__(self, *exc):
        self.close()

    async def __aenter__(self):
        await self._joined()
        return self

    async def __aexit__(self, *exc):
        await self.close()

    def __del__(self):
        if getattr(self, "_closed", True):
            return
        client = self._client
        if client is not None and client.status == "running":
            try:  # (best effort, from whatever thread drops it: the subscription also goes with its client)
                client._send({"op": ops.PUBSUB_UNSUBSCRIBE, "topic": self.name, "queue": self._queue.name})
            except Exception:  # noqa: BLE001 - the client is closing: the scheduler drops it then
                pass
