"""Background tasks with an owner: whoever spawns them cancels and awaits them on close.

A server, a connection or a pool starts coroutines that outlive the call that started
them (a reply being finished, a monitor loop, a reconnect). Each owner keeps them in one
``Background``: ``spawn`` starts a task and forgets it when it ends; ``aclose`` cancels
every task still running and waits for them to finish, so nothing of a closed owner runs
on afterwards or dies with "Task was destroyed but it is pending". A task may close its
own owner: ``aclose`` never cancels or awaits the task that calls it. A task cancelled by
its owner's close must end, not wait for that close to finish (it would wait for itself,
until ``aclose``'s timeout).

>>> import asyncio
>>> async def demo():
...     bg = Background()
...     bg.spawn(asyncio.sleep(3600))
...     n = len(bg)
...     await bg.aclose()
...     return n, len(bg)
>>> asyncio.run(demo())
(1, 0)
"""

from __future__ import annotations

import asyncio
import logging
from typing import Coroutine

logger = logging.getLogger("xsched.background")

__all__ = ["Background"]


class Background:
    """The background tasks of one owner (see the module docstring)."""

    __slots__ = ("_tasks", "name")

    def __init__(self, name: str = ""):
        self._tasks: set[asyncio.Task] = set()
        self.name = name

    def spawn(self, coro: Coroutine) -> asyncio.Task:
        """Run ``coro`` as a task of this owner (it is dropped from here when it ends)."""
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def cancel(self) -> None:
        """Cancel every task still running, except the caller's own."""
        me = _current()
        for t in list(self._tasks):
            if t is not me:
                t.cancel()

    async def aclose(self, timeout: float = 5.0) -> None:
        """Cancel every task still running (except the caller's own) and wait for them,
        at most ``timeout`` seconds (a task that ignores cancellation is logged and left)."""
        self.cancel()
        me = _current()
        tasks = [t for t in self._tasks if t is not me]
        if not tasks:
            return
        done, pending = await asyncio.wait(tasks, timeout=timeout)
        for t in done:
            if not t.cancelled() and t.exception() is not None:
                logger.debug("%s: a background task ended with %r", self.name or "background", t.exception())
        if pending:
            logger.warning("%s: %d background task(s) did not stop within %.1f s",
                           self.name or "background", len(pending), timeout)

    def __len__(self) -> int:
        return len(self._tasks)

    def __repr__(self) -> str:
        return f"<Background {self.name!r} tasks={len(self._tasks)}>"


def _current() -> asyncio.Task | None:
    try:
        return asyncio.current_task()
    except RuntimeError:  # no running loop
        return None
