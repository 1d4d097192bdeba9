"""Debugging tasks on the worker that runs them: post-mortem sessions and breakpoints.

Why a room of its own: the worker server moves tasks and data; this is the one place that
lets a client into a task's frames -- which sessions exist, who is attached, when an
unattended pause or an idle session ends -- so that the server only routes the ops here.
Only a client holding the cluster's secret reaches these ops (the worker's listener
authenticates every peer), and nothing of a frame leaves the worker except the text pdb
prints.

Data flow::

    task thread: the task raised -> task_failed(key, exc, task, data)
        -> PostMortems.keep (postmortem.py); a BdbQuit after 'q' at a breakpoint becomes
           DebuggerQuit instead (no post-mortem of that)
    task thread: breakpoint() / xsched.breakpoint() -> Worker._breakpoint -> pause(key, frame)
        -> a breakpoint Session (channel, LinePdb), listed by debug-list and the heartbeat;
           a line "paused at ..." to the clients that want the key (the "print" topic);
           pdb.set_trace(frame): at the next line the task thread waits in channel.readline
           (the worker's loop and its other task threads go on)
    client --debug-attach {key}--> attach(): a paused task's session, or a new post-mortem
        Session whose pdb runs in a thread of its own (``debugger.post_mortem``)
        <--{session, output, prompt, done}-- after channel.exchange (no thread blocks on it)
    client --debug-input {session, line}--> the line to pdb; the same reply
    client --debug-detach--> a post-mortem session ends; a paused task stays paused
    pdb's channel, idle (``Session.on_idle``, in pdb's thread):
        attached client silent for debug.session-idle-timeout -> detached as above
        nobody attached to a pause for debug.breakpoint-timeout -> 'c', and a warning
    client --debug-release {keys}--> their post-mortems dropped ("released")
    client --debug-recreate {key}--> the task and its inputs, pickled (recreate_error_locally)

One session per task: a second attach is refused, naming the client attached.
"""

from __future__ import annotations

import asyncio
import bdb
import linecache
import logging
import os
import sys
import threading
import time
import uuid
from typing import Any

from ..errors import DebuggerQuit, _safe_text
from ..graph.spec import dependencies
from ..protocol import ops
from ..protocol.serialize import dumps
from ..sizeof import sizeof
from ..units import format_bytes
from .debugger import LineChannel, LinePdb, drive, post_mortem
from .postmortem import PostMortems

__all__ = ["Debugging", "Session", "breakpoints_enabled"]

logger = logging.getLogger("xsched.worker.debugging")

#: seconds a debug-attach/-input request waits for pdb before it answers "busy" (the client asks again)
POLL = 5.0


def breakpoints_enabled(environ=os.environ) -> bool:
    """Whether ``breakpoint()`` pauses tasks here: not when the worker's environment sets
    ``PYTHONBREAKPOINT=0``, as Python itself does.

    >>> breakpoints_enabled({}), breakpoints_enabled({"PYTHONBREAKPOINT": "0"})
    (True, False)
    """
    return environ.get("PYTHONBREAKPOINT", "").strip() != "0"


class Session:
    """One pdb on one task's frames: a post-mortem, or a task paused at a breakpoint."""

    def __init__(self, key: str, kind: str, idle_timeout: float, unattended_timeout: float | None,
                 where: dict | None = None):
        self.id = uuid.uuid4().hex[:16]
        self.key, self.kind = key, kind
        self.channel = LineChannel()
        self.client: str | None = None  # the attached client's id (None: nobody attached)
        self.since = time.time()
        self.where = where or {}
        self.idle_timeout = idle_timeout
        self.unattended_timeout = unattended_timeout
        self._last = time.monotonic()  # the last input, attach or detach
        self.timed_out = False
        self.on_timeout = lambda: None  # (the worker's warning)
        self.channel.idle_after = self._idle_after
        self.channel.on_idle = self._on_idle

    def touch(self) -> None:
        self._last = time.monotonic()

    def attach(self, client: str) -> None:
        self.client = client or "a client"
        self.touch()
        self.channel.poke()  # (its wait is now bounded by the idle timeout)

    def detach(self) -> None:
        self.client = None
        self.touch()
        if self.kind == "post-mortem":
            self.channel.close()
        else:
            self.channel.poke()  # (its wait is now bounded by the breakpoint timeout)

    def _idle_after(self) -> float | None:
        limit = self.idle_timeout if self.client is not None else self.unattended_timeout
        if limit is None:
            return None
        return max(limit - (time.monotonic() - self._last), 0.01)

    def _on_idle(self) -> str | None:
        """(pdb's thread, channel lock held) nothing came for a while: detach an idle client;
        continue a pause nobody attached to."""
        idle = time.monotonic() - self._last
        if self.client is not None:
            if idle >= self.idle_timeout:
                logger.info("debugging session of %r: %s sent nothing for %.0fs; detached", self.key, self.client,
                            idle)
                self.client = None
                self._last = time.monotonic()
                if self.kind == "post-mortem":
                    return "q"
            return None
        if self.unattended_timeout is not None and idle >= self.unattended_timeout:
            self.timed_out = True
            self.on_timeout()
            return "c"
        return None

    def info(self) -> dict:
        return {"key": self.key, "kind": self.kind, "session": self.id, "client": self.client, "since": self.since,
                **self.where}

    def __repr__(self) -> str:
        who = f"attached by {self.client}" if self.client else "nobody attached"
        return f"<Session {self.kind} {self.key!r} {who}>"


class Debugging:
    """The sessions and post-mortems of one worker (``worker.debugging``)."""

    def __init__(self, worker, keep: int = 5, breakpoint_timeout: float | None = 600.0,
                 idle_timeout: float = 300.0, breakpoints: bool = True):
        self.worker = worker
        self.postmortems = PostMortems(keep)
        self.breakpoint_timeout = breakpoint_timeout
        self.idle_timeout = idle_timeout
        self.breakpoints = breakpoints
        self.sessions: dict[str, Session] = {}  # session id -> session
        self.by_key: dict[str, Session] = {}
        self._quit_keys: set[str] = set()  # tasks quit ('q') from their breakpoint: their BdbQuit is DebuggerQuit
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, worker) -> "Debugging":
        from .. import config
        from ..units import parse_timedelta

        timeout = config.get("debug.breakpoint-timeout", "10 minutes")
        return cls(worker, int(config.get("debug.post-mortem.keep", 5)),
                   parse_timedelta(timeout) if timeout not in (None, False) else None,
                   parse_timedelta(config.get("debug.session-idle-timeout", "5 minutes")),
                   breakpoints_enabled())

    # ------------------------------------------------------------------ views
    def paused(self) -> list[dict]:
        """The tasks paused at a breakpoint here (debug-list, heartbeats)."""
        return [s.info() for s in list(self.sessions.values()) if s.kind == "breakpoint"]

    def list(self) -> dict:
        return {"paused": self.paused(), "postmortems": self.postmortems.info(),
                "dropped": dict(list(self.postmortems._dropped.items())[-20:])}

    # ------------------------------------------------------------------ task threads
    def task_failed(self, key: str, exc: BaseException, task: Any = None, data=None) -> BaseException:
        """(In the task's thread) keep the post-mortem of a failure; the exception to report
        (``DebuggerQuit`` for a task quit from its breakpoint). Never raises."""
        try:
            if isinstance(exc, bdb.BdbQuit) and key in self._quit_keys:
                self._quit_keys.discard(key)
                sys.settrace(None)
                return DebuggerQuit(key, self.worker.address)
            if self.postmortems.enabled:
                inputs = {}
                if task is not None and data is not None:
                    for k in dependencies(task):
                        try:
                            inputs[k] = data[k]
                        except Exception:  # noqa: BLE001 - gone since, or cannot be read back
                            pass
                self.postmortems.keep(key, exc, task, inputs)
        except Exception:  # noqa: BLE001 - a failure to keep a failure must not hide it
            logger.exception("keeping the post-mortem of %r failed", key)
        return exc

    def pause(self, key: str, frame) -> None:
        """(In the task's thread, from ``breakpoint()``) pause the task at ``frame``'s next
        line until a client attaches and continues it (or the breakpoint timeout passes)."""
        if not self.breakpoints:
            return
        with self._lock:
            existing = self.by_key.get(key)
            if existing is not None and existing.kind == "breakpoint":  # (reached again while its session runs)
                return
            code = frame.f_code
            where = {"file": code.co_filename, "line": frame.f_lineno, "function": code.co_name,
                     "worker": self.worker.address}
            session = Session(key, "breakpoint", self.idle_timeout, self.breakpoint_timeout, where)
            self.sessions[session.id] = session
            self.by_key[key] = session
        session.on_timeout = lambda: self._timed_out(session)
        # the scheduler shows the pause (progress bars, the panel) until the task goes on
        self.worker._to_scheduler_from_thread({"op": ops.TASK_PAUSED, "key": key, "paused": True,
                                               "file": where["file"], "line": where["line"],
                                               "function": where["function"]})
        text = (f"xsched: task {key!r} paused at {code.co_name} ({os.path.basename(code.co_filename)}:"
                f"{frame.f_lineno}) on worker {self.worker.address}: attach with client.debug(future) or %debug "
                "(see client.breakpoints())\n")
        logger.info("%s", text.strip())
        self.worker._log_event("print", {"key": key, "worker": self.worker.address, "text": text, "file": "stderr"})
        p = _BreakpointPdb(session.channel, lambda quit: self._ended(session, quit))
        p.set_trace(frame)

    def _timed_out(self, session: Session) -> None:
        timeout = self.breakpoint_timeout or 0
        message = (f"task {session.key!r} paused at a breakpoint on worker {self.worker.address} for {timeout:.0f}s "
                   "with no client attached (debug.breakpoint-timeout): it continues")
        logger.warning("%s", message)
        self.worker._log_event("warn", {"key": session.key, "worker": self.worker.address, "message": message,
                                        "category": "builtins.RuntimeWarning"})

    def _ended(self, session: Session, quit: bool) -> None:
        """(pdb's thread) the breakpoint's pdb let the task go on (or quit it)."""
        if quit:
            self._quit_keys.add(session.key)
        self._forget(session)

    def task_ended(self, key: str) -> None:
        """(The task's thread, as it ends) a breakpoint session still open for it is over."""
        session = self.by_key.get(key)
        if session is not None and session.kind == "breakpoint":
            self._forget(session)
        self._quit_keys.discard(key)

    def _forget(self, session: Session) -> None:
        with self._lock:
            self.sessions.pop(session.id, None)
            ended = self.by_key.get(session.key) is session
            if ended:
                del self.by_key[session.key]
                if session.kind == "post-mortem":
                    self.postmortems.in_use.discard(session.key)
        if ended and session.kind == "breakpoint":
            self.worker._to_scheduler_from_thread({"op": ops.TASK_PAUSED, "key": session.key, "paused": False})
        session.channel.finish()

    # ------------------------------------------------------------------ ops (the event loop)
    async def attach(self, key: str, client: str | None, sources: dict | None = None) -> dict:
        """A client attaches to the failed or paused task ``key``; ``sources``: its notebook
        cells, so that pdb lists the task's code defined there (``LinePdb._bind_source``)."""
        if sources:
            learn_sources(sources)
        with self._lock:
            session = self.by_key.get(key)
            if session is not None and (session.channel.closed or session.channel.done):
                session = None  # (ending: a new one replaces it)
            if session is not None and session.client is not None:
                ago = time.monotonic() - session._last
                return self._refusal("in-use", key, (
                    f"task {key!r} is being debugged already on worker {self.worker.address}: {session.kind} session "
                    f"{session.id} of {session.client} (its last input {ago:.0f}s ago). One session per task: "
                    "leave that one first (q, or c at a breakpoint), or wait until it is detached "
                    "(debug.session-idle-timeout)."))
            if session is None:
                pm = self.postmortems.get(key)
                if pm is None:
                    return self._missing(key)
                session = Session(key, "post-mortem", self.idle_timeout, None,
                                  {"where": pm.where, "worker": self.worker.address})
                self.sessions[session.id] = session
                self.by_key[key] = session
                self.postmortems.in_use.add(key)
                session.channel.sources = dict(sources or {})
                session.channel.write(f"post-mortem of task {key!r} on worker {self.worker.address} "
                                      f"(pid {os.getpid()}): {pm.text}\n")
                session.attach(client or "a client")
                thread = threading.Thread(target=self._run_post_mortem, args=(session, pm.tb), daemon=True,
                                          name=f"xsched-debug-{key[:40]}")
                thread.start()
            session.attach(client or "a client")
            if sources:
                session.channel.sources = dict(sources)
        return await self._exchange(session, None)

    def console(self, key: str) -> None:
        """Debug the failed or paused task ``key`` from this worker's own kernel (a console
        the JupyterLab panel's "debug" opens on it, or ``%remote``): pdb's output shows in the
        cell and each command is read with its ``input()``. ``q`` ends it (a paused task then
        fails with ``DebuggerQuit``), ``c`` lets a paused task go on.

        >>> worker.debugging.console("process-5d3a...")     # doctest: +SKIP
        post-mortem of task 'process-5d3a...' on worker tcp://127.0.0.1:40211 (pid 4242): ZeroDivisionError: ...
        (Pdb) p scale
        0
        """
        from ..jupyter.kernel import run_on_host_loop

        def call(func, *args):
            return run_on_host_loop(func, *args, timeout=POLL + 30)

        drive(call(self.attach, key, f"the console of worker {self.worker.address}"),
              lambda session, line: call(self.input, session, line),
              lambda session, reply: call(self.detach, session))

    def _run_post_mortem(self, session: Session, tb) -> None:
        try:
            post_mortem(session.channel, tb)
        finally:
            self._forget(session)

    async def input(self, session_id: str, line: str | None) -> dict:
        session = self.sessions.get(session_id)
        if session is None:
            return self._refusal("no-session", None, f"no debugging session {session_id} on worker "
                                 f"{self.worker.address}: it ended (q or c, the task finished, or it was idle "
                                 "longer than debug.session-idle-timeout). Attach again with client.debug(...).")
        session.touch()
        return await self._exchange(session, line)

    def detach(self, session_id: str) -> dict:
        session = self.sessions.get(session_id)
        if session is not None:
            session.detach()
        return {}

    def release(self, keys: list) -> dict:
        for key in keys:
            self.postmortems.drop(key, "released: no client wants the task any more")
        return {}

    async def recreate(self, key: str, max_bytes: int | None):
        """The failed task ``key`` and the inputs it ran with, pickled for the client; or why not."""
        pm = self.postmortems.get(key)
        if pm is None or pm.task is None:
            return self._missing(key)
        nbytes = sum(sizeof(v) for v in pm.inputs.values())
        if max_bytes is not None and nbytes > max_bytes:
            return self._refusal("too-large", key, (
                f"the inputs of task {key!r} hold about {format_bytes(nbytes)}, more than "
                f"debug.recreate-max-bytes ({format_bytes(max_bytes)}): debug it where it ran instead, with "
                "client.debug(future), or raise the limit (xsched.config.set({'debug.recreate-max-bytes': ...}))."))
        from ..comm import Msg

        frames = await asyncio.get_running_loop().run_in_executor(None, _dumps_or_error, (pm.task, pm.inputs))
        if isinstance(frames, str):
            return self._refusal("unpicklable", key, f"the task {key!r} or its inputs cannot be sent to the client: "
                                                     f"{frames}. Debug it where it ran: client.debug(future).")
        return Msg({"status": "OK", "nbytes": nbytes}, raw={"task": frames})

    def close(self) -> None:
        """The worker closes: every session ends (a paused task quits), every post-mortem goes."""
        for session in list(self.sessions.values()):
            session.channel.close()
        self.postmortems.clear()

    # ------------------------------------------------------------------ helpers
    async def _exchange(self, session: Session, line: str | None) -> dict:
        output, prompt, done = await session.channel.exchange(line, POLL)
        return {"session": session.id, "key": session.key, "kind": session.kind, "output": output,
                "prompt": prompt, "done": done, "busy": prompt is None and not done}

    def _missing(self, key: str) -> dict:
        why = self.postmortems.why_dropped(key)
        if why is not None:
            return self._refusal("dropped", key, f"the post-mortem of task {key!r} on worker {self.worker.address} "
                                                 f"is gone: {why}.")
        if not self.postmortems.enabled:
            return self._refusal("disabled", key, (
                f"worker {self.worker.address} keeps no post-mortems (debug.post-mortem.keep is 0): set it above 0 "
                "for the workers (e.g. XSCHED_DEBUG__POST_MORTEM__KEEP=5) and run the task again."))
        return self._refusal("unknown", key, f"worker {self.worker.address} has no post-mortem of task {key!r} and "
                                             "it is not paused at a breakpoint there.")

    def _refusal(self, reason: str, key: str | None, text: str) -> dict:
        return {"error": text, "reason": reason, "key": key, "done": True, "output": "", "prompt": None}


def _dumps_or_error(obj) -> list | str:
    try:
        return dumps(obj)
    except Exception as e:  # noqa: BLE001
        return _safe_text(e)


#: modules whose frames stepping never stops in: the worker's own, around the task's function
#: (stepping out of the task lets it finish instead of showing how the worker runs it)
RUNNER_MODULES = ["xsched.worker.*", "xsched.graph.*", "xsched.protocol.*", "xsched.task_context", "threading",
                  "concurrent.futures.*", "contextvars"]


class _BreakpointPdb(LinePdb):
    """pdb at a breakpoint: when an interaction ends with the task going on untraced (``c``)
    or quitting (``q``), the session is over. Stepping skips the worker's own frames."""

    def __init__(self, channel: LineChannel, ended):
        super().__init__(channel, skip=RUNNER_MODULES)
        self._ended = ended
        self._entry = None  # the task's own outermost frame: when it returns, the session is over

    def set_trace(self, frame=None):
        entry = frame
        while entry.f_back is not None and not self.is_skipped_module(entry.f_back.f_globals.get("__name__")):
            entry = entry.f_back
        self._entry = entry
        super().set_trace(frame)

    def dispatch_return(self, frame, arg):
        result = super().dispatch_return(frame, arg)
        if frame is self._entry and not self.quitting:
            # stepped out of the task's function: it finishes untraced, as after 'c'
            sys.settrace(None)
            back = frame.f_back
            while back is not None:
                back.f_trace = None
                back = back.f_back
            self._ended(False)
            return None
        return result

    def interaction(self, frame, traceback):
        super().interaction(frame, traceback)
        if self.quitting or sys.gettrace() is None:
            self._ended(bool(self.quitting))


def learn_sources(sources: dict) -> int:
    """Keep the text of code the attaching client ran without a file (its notebook cells) in
    this process's ``linecache``, unless a file of that name exists here: pdb's ``l`` and
    ``ll`` then show it. Returns how many were added.

    >>> import linecache
    >>> learn_sources({"<cell-test-1>": "def f():\\n    return 1\\n"}), linecache.getline("<cell-test-1>", 2)
    (1, '    return 1\\n')
    """
    added = 0
    for name, text in sources.items():
        if os.path.exists(name):
            continue
        linecache.cache[name] = (len(text), None, text.splitlines(True), name)
        added += 1
    return added
