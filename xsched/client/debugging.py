"""Debugging tasks from the client: ``client.debug``, ``client.breakpoints``, ``recreate_error_locally``.

A mixin of ``Client`` (``client.py``). The frames of a failed task, or of a task paused at
a breakpoint, stay in the worker that ran it (``worker/debugging.py``); pdb runs there, and
this side only carries lines: what pdb prints is written to this process's stdout, and
each command is read with the builtin ``input()`` -- in Jupyter that is the front end's
stdin request, in a terminal a prompt::

    client.debug(f): the future's handle (task-erred told the worker where the blamed task
        raised: FutureState.worker) -> --debug-attach {key}--> that worker
        <--{session, output, prompt, done}-- print(output); line = input(prompt)
        --debug-input {session, line}--> ... until done (q, c, or the session ends)
        Ctrl-C / end of input -> --debug-detach-->
    a pending future: --debug-list--> every worker, to find it paused at a breakpoint
    client.breakpoints() --debug-list--> every worker -> Breakpoints (a table)
    client.recreate_error_locally(f) --debug-recreate {key}--> the worker that kept the
        task's post-mortem: <--the task and the inputs it ran with--; run here, so its
        exception is raised here (a local %debug then works)
    Futures released (refcount.py, _flush_releases) -> _release_postmortems -> the last
        future whose error came from a failure kept on a worker --debug-release--> it drops
        that post-mortem
"""

from __future__ import annotations

import asyncio
import functools
import linecache
import html
import logging
import sys
import time
from typing import Any

from .. import config
from ..comm import CommClosedError
from ..errors import DebugError, KilledWorker, remote_handle
from ..graph.spec import Task, execute
from ..protocol import ops
from ..protocol.messages import unpack_objects
from ..units import format_bytes, parse_bytes
from ..worker.debugger import drive, show_reply
from .dual import sync_or_async
from .future import Future

__all__ = ["DebuggingMixin", "Breakpoints"]

logger = logging.getLogger("xsched.client")

#: seconds a debugging request may take beyond the worker's own wait (worker/debugging.py POLL)
REQUEST_SLACK = 10.0


class Breakpoints(list):
    """The tasks paused at breakpoints: a list of dicts (``key``, ``worker``, ``function``,
    ``file``, ``line``, ``since``, ``client`` attached or None), shown as a table.

    >>> Breakpoints([{"key": "g-1", "worker": "tcp://127.0.0.1:4000", "function": "g", "file": "/a/b.py",
    ...               "line": 3, "since": 0.0, "client": None}])
    <Breakpoints: 1 paused task>
      g-1  g (b.py:3) on tcp://127.0.0.1:4000, nobody attached
    >>> Breakpoints()
    <Breakpoints: no task is paused>
    """

    def _rows(self):
        for b in self:
            file = str(b.get("file") or "?").rsplit("/", 1)[-1]
            yield b, f"{b.get('function')} ({file}:{b.get('line')})"

    def __repr__(self) -> str:
        if not self:
            return "<Breakpoints: no task is paused>"
        lines = [f"<Breakpoints: {len(self)} paused task{'s' if len(self) > 1 else ''}>"]
        for b, where in self._rows():
            who = f"attached by {b['client']}" if b.get("client") else "nobody attached"
            lines.append(f"  {b['key']}  {where} on {b['worker']}, {who}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        if not self:
            return "<p><b>Breakpoints:</b> no task is paused</p>"
        now = time.time()
        rows = "".join(
            f"<tr><td><code>{html.escape(str(b['key']))}</code></td><td>{html.escape(str(b['worker']))}</td>"
            f"<td><code>{html.escape(where)}</code></td><td>{max(now - float(b.get('since') or now), 0):.0f}s</td>"
            f"<td>{html.escape(str(b.get('client') or ''))}</td></tr>" for b, where in self._rows())
        return ("<table><thead><tr><th>key</th><th>worker</th><th>where</th><th>paused for</th>"
                f"<th>attached</th></tr></thead><tbody>{rows}</tbody></table>")


class DebuggingMixin:
    """client.debug, client.breakpoints, client.recreate_error_locally; post-mortems released."""

    # ------------------------------------------------------------------ post-mortems kept on workers
    def _note_postmortem(self, key: str, blame: str, worker: str | None) -> None:
        """(The loop, task-erred) the failure of ``key`` is ``blame``'s, kept on ``worker``."""
        if worker is None:
            return
        refs = self.__dict__.setdefault("_postmortem_refs", {})  # (worker, blame) -> keys whose error it is
        of = self.__dict__.setdefault("_postmortem_of", {})  # key -> (worker, blame)
        old = of.get(key)
        if old is not None and old != (worker, blame):
            refs.get(old, set()).discard(key)
        of[key] = (worker, blame)
        refs.setdefault((worker, blame), set()).add(key)

    def _release_postmortems(self, keys: list) -> None:
        """(The loop) ``keys`` were released: the workers drop the failures no key of ours needs."""
        of = self.__dict__.get("_postmortem_of")
        if not of:
            return
        refs = self._postmortem_refs
        gone: dict[str, list] = {}
        for key in keys:
            handle = of.pop(key, None)
            if handle is None:
                continue
            holders = refs.get(handle)
            if holders is not None:
                holders.discard(key)
                if not holders:
                    del refs[handle]
                    gone.setdefault(handle[0], []).append(handle[1])
        for worker, blames in gone.items():
            task = asyncio.ensure_future(self._debug_release(worker, blames))
            pending = self.__dict__.setdefault("_debug_tasks", set())
            pending.add(task)
            task.add_done_callback(pending.discard)

    async def _debug_release(self, worker: str, keys: list) -> None:
        try:
            await self._pool.get(worker).request({"op": ops.DEBUG_RELEASE, "keys": keys}, timeout=self._timeout)
        except Exception as e:  # noqa: BLE001 - a worker gone has dropped them with everything else
            logger.debug("could not tell %s to drop the post-mortems of %s: %s", worker, keys, e)

    # ------------------------------------------------------------------ client.debug
    def debug(self, future=None):
        """Debug a failed task, or a task paused at a breakpoint, where it runs: pdb in the
        worker's process, on the task's own frames, typed here.

        ``future``: a Future (or its key) that failed or is paused at ``breakpoint()``, or the
        exception its ``result()`` raised; by default the exception being handled or the last
        one raised in the session, else the one task of this cluster paused at a breakpoint.
        What pdb prints appears here and each command is read with ``input()`` (in Jupyter,
        the cell's input box). ``p``, ``pp``, ``ll``, ``up``/``down``, ``where`` and
        ``interact`` (leave it with ``exit()``) work as in pdb, with the task's real data;
        the worker's other threads keep running. ``q`` ends a post-mortem (the frames stay
        kept: debug again later) and fails a paused task with ``DebuggerQuit``; ``c``
        resumes a paused task. Ctrl-C (or the end of input) detaches: a paused task stays
        paused until ``debug.breakpoint-timeout``; a session idle for
        ``debug.session-idle-timeout`` is detached by the worker.

        >>> def process(chunk):
        ...     scale = len(chunk) - 3
        ...     return [x / scale for x in chunk]
        >>> f = client.submit(process, [1, 2, 3])
        >>> f.result()
        Traceback (most recent call last):
        ZeroDivisionError: division by zero
        >>> client.debug(f)                                       # doctest: +SKIP
        post-mortem of task 'process-...' on worker tcp://127.0.0.1:40211 (pid 4242): ZeroDivisionError: ...
        > <ipython-input-1-...>(3)<listcomp>()
        (Pdb) up
        (Pdb) p scale
        0
        (Pdb) q
        """
        if self.asynchronous:
            return self._debug_async(future)
        worker, key = self._sync(self._debug_target(future, _default_exception()))
        drive(self._sync(self._debug_attach(worker, key)),
              lambda session, line: self._sync(self._debug_input(worker, session, line)),
              lambda session, reply: self._sync(self._debug_detach(worker, session, reply)))
        return None

    async def _debug_async(self, future) -> None:
        worker, key = await self._debug_target(future, _default_exception())
        reply = await self._debug_attach(worker, key)
        loop = asyncio.get_running_loop()
        while True:
            session = self._debug_show(reply)
            if session is None:
                return None
            line = None
            if not reply.get("busy"):
                try:
                    line = await loop.run_in_executor(None, input, reply.get("prompt") or "(Pdb) ")
                except BaseException as e:  # Ctrl-C, end of input, cancelled: detach
                    await self._debug_detach(worker, session, reply)
                    if isinstance(e, EOFError):
                        return None
                    raise
            reply = await self._debug_input(worker, session, line)

    _debug_show = staticmethod(show_reply)

    async def _debug_target(self, target, fallback) -> tuple[str, str]:
        """(worker address, key to attach to) for what ``debug`` was given."""
        if target is None:
            target = fallback
        if target is None:
            paused = await self._breakpoints()
            if len(paused) == 1:
                return paused[0]["worker"], paused[0]["key"]
            raise DebugError("client.debug() needs the future to debug (or its key, or the exception its result() "
                             "raised): no exception is at hand here, and "
                             + (f"{len(paused)} tasks are paused at breakpoints ({', '.join(b['key'] for b in paused)})"
                                if paused else "no task is paused at a breakpoint"))
        if isinstance(target, BaseException):
            handle = remote_handle(target)
            if handle is None:
                raise DebugError(f"{type(target).__name__} was not raised by a task on a cluster: there is no remote "
                                 "frame to debug (use pdb, or %debug, for exceptions raised here)")
            return await self._debug_where(handle.key, "error", handle.worker, handle.blame, handle.tb)
        key = target.key if isinstance(target, Future) else target
        if not isinstance(key, str):
            raise TypeError(f"client.debug takes a Future, a key or an exception, not {type(target).__name__}")
        st = target._state if isinstance(target, Future) else self._states.get(key)
        if st is not None and st.status == "error":
            return await self._debug_where(key, "error", st.worker, st.blame or key, st.text)
        for b in await self._breakpoints():
            if b["key"] == key:
                return b["worker"], key
        status = st.status if st is not None else "unknown to this client"
        raise DebugError(f"task {key!r} is {status}: it has not failed and is not paused at a breakpoint, so there "
                         "is nothing to debug. client.debug works on a future whose result() raised, or on a task "
                         "paused at breakpoint() (see client.breakpoints()).")

    async def _debug_where(self, key, status, worker, blame, text) -> tuple[str, str]:
        if worker is None:
            killed = "KilledWorker" in str(text)
            raise DebugError(f"task {key!r} failed without raising on a worker ({str(text).strip()[:200]}): "
                             + ("it killed the workers that ran it, so there are no frames to debug, and running it "
                                "in this process would likely end this process too (the notebook's kernel). Run "
                                "it alone in a process of its own, or look at its code and inputs"
                                if killed else
                                "a worker died running it, or it was refused before it ran, so there are no frames "
                                "to debug. client.recreate_error_locally(future) reruns it in this process."))
        info = await self._scheduler_info()
        if worker not in info["workers"]:
            raise DebugError(f"worker {worker}, where task {blame!r} raised, is gone (it died or was retired): the "
                             "task's frames died with it. Run it again (future.retry()) to debug the new failure, or "
                             "client.recreate_error_locally(future) to rerun it here with inputs still on the cluster.")
        return worker, blame

    async def _debug_request(self, worker: str, msg: dict) -> dict:
        try:
            reply, _ = await self._pool.get(worker).request(msg, timeout=self._timeout + REQUEST_SLACK)
        except (asyncio.TimeoutError, CommClosedError, OSError) as e:
            raise DebugError(f"worker {worker} did not answer the debugger ({type(e).__name__}: {e}); if it died, "
                             "the task's frames died with it: client.recreate_error_locally(future) reruns it "
                             "here") from None
        return reply

    async def _debug_attach(self, worker: str, key: str) -> dict:
        return await self._debug_request(worker, {"op": ops.DEBUG_ATTACH, "key": key, "client": self.id,
                                                  "sources": cell_sources()})

    async def _debug_input(self, worker: str, session: str, line: str | None) -> dict:
        return await self._debug_request(worker, {"op": ops.DEBUG_INPUT, "session": session, "line": line})

    async def _debug_detach(self, worker: str, session: str, reply: dict) -> None:
        try:
            await self._debug_request(worker, {"op": ops.DEBUG_DETACH, "session": session})
        except DebugError:
            return
        paused = reply.get("kind") == "breakpoint"
        print(f"\ndetached from task {reply.get('key')!r}" + (" (it stays paused: client.debug again to attach)"
                                                              if paused else ""))

    # ------------------------------------------------------------------ client.breakpoints
    @sync_or_async
    async def breakpoints(self) -> Breakpoints:
        """The tasks paused at ``breakpoint()`` (or ``xsched.breakpoint()``) on the workers now:
        key, worker, function, file and line, since when, and the client attached if any.
        A table in a notebook; attach to one with ``client.debug(future)``.

        >>> def g(x):
        ...     y = x + 1
        ...     breakpoint()
        ...     return y
        >>> f = client.submit(g, 1)           # doctest: +SKIP
        >>> client.breakpoints()              # doctest: +SKIP
        <Breakpoints: 1 paused task>
          g-5d3a...  g (<ipython-input-3-...>:3) on tcp://127.0.0.1:40211, nobody attached
        """
        async def one(addr):
            try:
                reply, _ = await self._pool.get(addr).request({"op": ops.DEBUG_LIST}, timeout=self._timeout)
            except Exception as e:  # noqa: BLE001 - a worker leaving meanwhile has nothing paused
                logger.debug("debug-list of %s failed: %s", addr, e)
                return []
            return [dict(b, worker=addr) for b in reply.get("paused", [])]

        found = await asyncio.gather(*(one(a) for a in await self._worker_addresses(None)))
        return Breakpoints(sorted((b for bs in found for b in bs), key=lambda b: b.get("since") or 0))

    # ------------------------------------------------------------------ recreate_error_locally
    def recreate_error_locally(self, future) -> Any:
        """Run a failed task again in this process, with the inputs it failed with, so that
        its exception is raised here (and a local ``%debug`` or ``pdb.pm()`` shows its frames).

        ``future``: the Future that failed (or its key, or the exception it raised), waited
        for while it is pending. The worker where the task raised sends the task and the
        inputs it ran with (kept with its post-mortem: see ``debug.post-mortem.keep``). When no worker has them any more
        (the post-mortem was dropped, the worker died), the scheduler's copy of the task's
        spec is used, with its inputs fetched from the workers that hold them; inputs no
        longer in memory anywhere make it fail, naming them. Inputs larger than
        ``debug.recreate-max-bytes`` (100 MB) are refused, pointing at ``client.debug``,
        which looks at them where they are. A failure that depends on the worker (a file, a
        library, memory there) may not happen here: the result is then returned, with a
        warning.

        >>> def process(chunk):
        ...     return sum(chunk) / (len(chunk) - 3)
        >>> f = client.submit(process, [1, 2, 3])         # (waited for, if still running)
        >>> client.recreate_error_locally(f)
        Traceback (most recent call last):
        ZeroDivisionError: division by zero
        >>> %debug                                        # doctest: +SKIP
        """
        if self.asynchronous:
            return self._recreate_async(future)
        task, inputs, key = self._sync(self._recreate_fetch(future))
        return _run_here(task, inputs, key)

    async def _recreate_async(self, future):
        task, inputs, key = await self._recreate_fetch(future)
        return _run_here(task, inputs, key)

    async def _recreate_fetch(self, future) -> tuple:
        """(task, inputs, key of the task that raised): from the worker that kept the failure,
        else from the scheduler's spec of the task and the inputs still on the cluster."""
        if isinstance(future, BaseException):
            handle = remote_handle(future)
            if handle is None:
                raise DebugError(f"{type(future).__name__} was not raised by a task: nothing to recreate")
            key, worker, blame = handle.key, handle.worker, handle.blame or handle.key
        else:
            key = future.key if isinstance(future, Future) else future
            if not isinstance(key, str):
                raise TypeError(f"recreate_error_locally takes a Future or its key, not {type(future).__name__}")
            st = future._state if isinstance(future, Future) else self._states.get(key)
            if st is not None and st.status == "pending":
                await st.await_done()  # (called right after submit, as users do: wait, as for result())
            if st is None or st.status != "error":
                status = st.status if st is not None else "unknown to this client"
                raise DebugError(f"task {key!r} is {status}, not failed: there is no error to recreate")
            if isinstance(st.error(), KilledWorker):
                raise DebugError(f"task {key!r} killed the workers that ran it ({str(st.text).strip()[:160]}); "
                                 "rerunning it in this process would likely end this process too (the notebook's "
                                 "kernel, and its state). Run it alone in a process of its own instead")
            worker, blame = st.worker, st.blame or key
        limit = int(parse_bytes(config.get("debug.recreate-max-bytes", "100MB")))
        why_not = "it did not raise on a worker"
        if worker is not None and worker in (await self._scheduler_info())["workers"]:
            try:
                reply, payload = await self._pool.get(worker).request(
                    {"op": ops.DEBUG_RECREATE, "key": blame, "max_bytes": limit}, timeout=None)
            except (CommClosedError, OSError) as e:
                reply, payload = {"error": str(e), "reason": "gone"}, []
            if not reply.get("error"):
                loop = asyncio.get_running_loop()
                task, inputs = await loop.run_in_executor(None, lambda: unpack_objects(reply, payload)["task"])
                logger.info("recreating task %r here with %s of inputs", blame, format_bytes(reply.get("nbytes") or 0))
                return task, inputs, blame
            if reply.get("reason") in ("too-large", "unpicklable"):
                raise DebugError(reply["error"])
            why_not = reply["error"]
        elif worker is not None:
            why_not = f"worker {worker} is gone"
        task, inputs = await self._recreate_from_scheduler(blame, limit, why_not)
        return task, inputs, blame

    async def _recreate_from_scheduler(self, key: str, limit: int, why_not: str) -> tuple:
        """The task's spec as this client sent it (the scheduler keeps it while the key is
        wanted) and its inputs fetched from the workers holding them."""
        reply, _ = await self._conn.request({"op": ops.TASK_SPEC, "key": key}, timeout=self._timeout)
        if reply.get("error"):
            raise DebugError(f"cannot recreate task {key!r} here: no worker holds its post-mortem ({why_not}) and "
                             f"{reply['error']}.")
        deps: dict = reply.get("dependencies") or {}
        nbytes = sum(deps.values())
        if nbytes > limit:
            raise DebugError(f"the inputs of task {key!r} hold about {format_bytes(nbytes)}, more than "
                             f"debug.recreate-max-bytes ({format_bytes(limit)}): debug it where it ran instead, with "
                             "client.debug(future), or raise the limit.")
        if deps:
            who, _ = await self._conn.request({"op": ops.WHO_HAS, "keys": list(deps)}, timeout=self._timeout)
            lost = [k for k in deps if not who["who_has"].get(k)]
            if lost:
                raise DebugError(f"cannot recreate task {key!r} here: its input(s) {lost[:5]} are no longer in "
                                 f"memory on the cluster, and no worker holds its post-mortem ({why_not}). Keep "
                                 "futures of the inputs (or persist them) and retry the task to debug it.")
        inputs = await self._fetch(list(deps)) if deps else {}
        from ..protocol.tasks import loads_task

        task = loads_task(reply["run_spec"], key, "this client", reply.get("functions") or {})
        logger.info("recreating task %r here from its spec (%s); %s of inputs", key, why_not, format_bytes(nbytes))
        return task, inputs


def _run_here(task, inputs: dict, key: str) -> Any:
    """Run the task as its worker did; its exception propagates from here."""
    _with_local_files(task)
    value = task.run(inputs) if type(task) is Task else execute(task, inputs)
    import warnings

    warnings.warn(f"task {key!r} did not fail when run here: its failure depends on its worker (a file, a library "
                  "or memory there) or on chance; client.debug(future) looks at it where it failed",
                  RuntimeWarning, stacklevel=3)
    return value


def _with_local_files(task: Any) -> None:
    """Give the functions of ``task`` that came back by value (cloudpickle names their file
    ``<dynamic-code>``) the file and first line of this process's own function of that name
    and code, so that the traceback and ``%debug`` show its source (the notebook's cell)."""
    main = sys.modules.get("__main__")
    stack = [task]
    while stack:
        spec = stack.pop()
        if type(spec) is not Task:
            continue
        stack.extend(a for a in spec.args if type(a) is Task)
        stack.extend(v for v in spec.kwargs.values() if type(v) is Task)
        func = spec.func
        while isinstance(func, functools.partial):
            func = func.func
        func = getattr(func, "__func__", func)
        code = getattr(func, "__code__", None)
        if code is None or code.co_filename != "<dynamic-code>":
            continue
        local = getattr(getattr(main, func.__name__, None), "__code__", None)
        if local is not None and local.co_code == code.co_code and local.co_name == code.co_name:
            func.__code__ = code.replace(co_filename=local.co_filename, co_firstlineno=local.co_firstlineno)


def _default_exception() -> BaseException | None:
    """The exception being handled in this thread, else the last unhandled one of the session."""
    current = sys.exc_info()[1]
    if current is not None and remote_handle(current) is not None:
        return current
    last = getattr(sys, "last_value", None)
    if last is not None and remote_handle(last) is not None:
        return last
    return None



#: At most this many characters of cell sources go with an attach (the newest cells first).
MAX_SOURCES_CHARS = 4 * 2**20


def cell_sources(cache: dict | None = None, limit: int = MAX_SOURCES_CHARS) -> dict[str, str]:
    """The code this process ran without a file on disk (IPython's notebook and console cells,
    which it keeps in ``linecache``), by file name: sent with an attach so that pdb's ``l``
    and ``ll`` show a function defined in a notebook on the worker, which has no such file.

    >>> cell_sources({"<ipython-input-1>": (9, None, ["x = 1\\n"], "<ipython-input-1>"),
    ...               __file__: (1, 1.0, ["..."], __file__)})
    {'<ipython-input-1>': 'x = 1\\n'}
    """
    cache = linecache.cache if cache is None else cache
    out: dict[str, str] = {}
    total = 0
    for name, entry in reversed(list(cache.items())):  # (newest last in the cache)
        if len(entry) != 4 or entry[1] is not None or not isinstance(name, str) or len(name) > 4096:
            continue  # a real file (with its mtime): the worker reads it itself if it has it
        text = "".join(entry[2])
        if total + len(text) > limit or len(out) >= 1000:
            break
        out[name] = text
        total += len(text)
    return out
