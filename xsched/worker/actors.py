"""The actors a worker holds, and the threads their methods run in.

``client.submit(Counter, actor=True)`` runs ``Counter()`` as a task here; the instance stays
in this process (``ActorHost.instances``) and the task's value -- what the scheduler,
other workers and clients see -- is a small ``Actor`` handle naming this worker
(``client/actors.py``). Calls on a handle come straight to this worker, never through the
scheduler::

    caller --actor-call {key, method} + pickled args--> worker listener --> ActorHost.call
           one thread per actor, so an actor's methods run one at a time, in arrival
           order, beside the task threads (a slow method never holds a task slot)
           <--reply: pickled result, or the exception and its traceback--

An instance lives while this worker holds its key: the key freed here (no client wants it
any more, or the worker leaves) drops it, and later calls fail naming why. Coroutine
methods run on the worker's event loop instead (asyncio's own one-at-a-time rules apply).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
from concurrent.futures import ThreadPoolExecutor

from ..comm import Msg
from ..errors import ActorError, pack_exception
from ..protocol.messages import unpack_objects
from .. import task_context
from .calls import _call_in_thread, _dumps_in_thread, _error_reply

__all__ = ["ActorHost"]


class ActorHost:
    """The instances this worker holds by key, and one executor thread per instance.

    >>> host = ActorHost(worker=None)
    >>> host.add("Counter-1", [])
    >>> host
    <ActorHost: 1 actor, 0 calls>
    >>> host.forget("Counter-1"); host.instances
    {}
    """

    def __init__(self, worker):
        self.worker = worker
        self.instances: dict[str, object] = {}
        self.calls = 0
        self._threads: dict[str, ThreadPoolExecutor] = {}

    def __repr__(self) -> str:
        n = len(self.instances)
        return f"<ActorHost: {n} actor{'' if n == 1 else 's'}, {self.calls} calls>"

    def add(self, key: str, instance) -> None:
        """(From the task thread that made it) keep ``instance`` as the actor ``key``."""
        self.instances[key] = instance

    def forget(self, key: str) -> None:
        """The key was freed here: drop the instance; calls already queued still finish."""
        self.instances.pop(key, None)
        pool = self._threads.pop(key, None)
        if pool is not None:
            pool.shutdown(wait=False)

    def close(self) -> None:
        for key in list(self.instances):
            self.forget(key)

    def _instance(self, key: str):
        try:
            return self.instances[key]
        except KeyError:
            where = getattr(self.worker, "address", "this worker")
            raise ActorError(
                f"worker {where} holds no actor {key!r}: its future was released (no client held it any "
                "more) or it moved when its worker left; create it again with client.submit(cls, actor=True)"
            ) from None

    def _thread(self, key: str) -> ThreadPoolExecutor:
        pool = self._threads.get(key)
        if pool is None:
            pool = self._threads[key] = ThreadPoolExecutor(
                1, thread_name_prefix=f"xsched-actor-{key[:40]}", initializer=self._enter_thread)
        return pool

    def _enter_thread(self) -> None:
        # methods may call get_worker() and other actors, as a task can
        task_context.thread_state.worker = self.worker

    async def call(self, header: dict, payload: list) -> Msg:
        """``actor-call``: run ``method(*args, **kwargs)`` of the actor ``key``; the reply
        carries its result, or its exception (the actor stays usable)."""
        return await self._run(header["key"], header["method"], header, payload)

    async def attribute(self, header: dict, payload: list) -> Msg:
        """``actor-attribute``: the value of one attribute, read in the actor's thread (after
        the calls that came before it)."""
        return await self._run(header["key"], header["name"], None, payload)

    async def _run(self, key: str, name: str, call: dict | None, payload: list) -> Msg:
        loop = asyncio.get_running_loop()
        try:
            instance = self._instance(key)
            pool = self._thread(key)
            if call is None:
                ok, result = await loop.run_in_executor(pool, _call_in_thread, getattr, (instance, name), {})
            else:
                objs = await loop.run_in_executor(pool, unpack_objects, call, payload)
                method = getattr(instance, name)
                args, kwargs = objs.get("args", ()), objs.get("kwargs", {})
                if inspect.iscoroutinefunction(method):
                    ok, result = True, await method(*args, **kwargs)
                else:
                    ok, result = await loop.run_in_executor(pool, contextvars.copy_context().run,
                                                            _call_in_thread, method, args, kwargs)
            self.calls += 1
            if not ok:
                return _error_reply(*result)
            if inspect.isawaitable(result):
                result = await result
            pickled, out = await loop.run_in_executor(pool, _dumps_in_thread, result)
        except asyncio.CancelledError:
            raise  # the worker is closing
        except BaseException as e:  # noqa: BLE001 - the caller gets it, the worker serves on
            if key not in self.instances:  # freed while the call waited (its thread shut down)
                try:
                    self._instance(key)
                except ActorError as gone:
                    e = gone
            return _error_reply(*pack_exception(e))
        if not pickled:
            return _error_reply(*out)
        return Msg({"status": "OK"}, raw={"result": out})
