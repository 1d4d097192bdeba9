"""One method for both kinds of client: a synchronous one blocks on it, an asynchronous one awaits it.

A ``Client`` runs its asynchronous core on one event loop: the caller's own loop when it
was made with ``asynchronous=True`` (``await client``, ``async with Client(...)``), else
the background loop that the synchronous clients of the process share (``loop.py``).
Every public method that talks to the cluster is therefore written once, as what it
awaits, and ``sync_or_async`` makes the method users call of it::

    @sync_or_async
    async def scheduler_info(self) -> dict:
        '''The docstring users read.'''
        reply, _ = await self._conn.request(...)
        return reply["info"]

    client.scheduler_info()          synchronous client: runs on the loop, returns the dict
    await client.scheduler_info()    asynchronous client: returns the coroutine to await
    await self._scheduler_info()     the async core, on the loop, whichever the kind

The decorated ``async def`` is also installed under its name with a leading underscore,
for the async core and the code that runs on the client's loop (a synchronous call made
there would wait for itself). A method that must do something in the caller's thread
first (check its arguments, pickle or read a file there rather than on the shared loop)
is a plain ``def`` returning what to await; it may return ``blocking(awaitable,
timeout=..., then=...)`` to bound how long a synchronous call waits, or to finish a
synchronous call in the caller's thread (an asynchronous client gets the plain result).

The method keeps its name, docstring and signature (``help()``, ``inspect.signature``,
the API reference): the wrapper is a plain function wrapping it.

>>> import asyncio
>>> class Demo:
...     asynchronous = True
...     @sync_or_async
...     async def answer(self, x=1):
...         '''Twice x.'''
...         return 2 * x
>>> Demo.answer.__doc__, str(__import__("inspect").signature(Demo.answer))
('Twice x.', '(self, x=1)')
>>> asyncio.run(Demo().answer(21)), asyncio.run(Demo()._answer(4))
(42, 8)
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Awaitable, Callable

from . import loop as _loop

__all__ = ["sync_or_async", "blocking"]


class _Blocking:
    """What a synchronous call does with an awaitable (see ``blocking``)."""

    __slots__ = ("awaitable", "timeout", "then")

    def __init__(self, awaitable: Awaitable, timeout: float | None, then: Callable[[Any], Any] | None):
        self.awaitable = awaitable
        self.timeout = timeout
        self.then = then


def blocking(awaitable: Awaitable, *, timeout: float | None = None,
             then: Callable[[Any], Any] | None = None) -> _Blocking:
    """For a ``sync_or_async`` method to return: a synchronous call waits at most ``timeout``
    seconds for ``awaitable`` (TimeoutError), then returns ``then(result)``, called in the
    caller's thread. An asynchronous client gets ``awaitable`` itself."""
    return _Blocking(awaitable, timeout, then)


class sync_or_async:
    """Decorator of a ``Client`` method returning an awaitable (an ``async def``, or a ``def``
    returning a coroutine or ``blocking(...)``): the method users call. See the module."""

    def __init__(self, method: Callable[..., Any]):
        self.method = method

        @functools.wraps(method)
        def public(client, *args, **kwargs):
            call = method(client, *args, **kwargs)
            timeout = then = None
            if type(call) is _Blocking:
                call, timeout, then = call.awaitable, call.timeout, call.then
            if client.asynchronous:
                return call
            result = _loop.sync(call, timeout)
            return result if then is None else then(result)

        self.public = public

    def __set_name__(self, owner: type, name: str) -> None:
        # (called once the class exists: it then holds plain functions only)
        setattr(owner, name, self.public)
        if inspect.iscoroutinefunction(self.method):
            private = f"_{name}"
            if private in vars(owner):
                raise TypeError(f"{owner.__name__}.{private} is defined twice: by hand, and by @sync_or_async "
                                f"on {name}")
            setattr(owner, private, self.method)
