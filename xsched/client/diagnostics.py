"""Logs, events and diagnostics from a client: what the cluster did, and what it is doing now.

A mixin of ``Client`` (``client.py``), and the functions tasks call (``xsched.log_event``,
``xsched.print``, ``xsched.warn``) with the ``xsched.get_task_stream`` context manager::

    events (the scheduler's ``events`` extension):
      xsched.log_event(topic, msg) in a task -> worker --log-event--> scheduler (kept, bounded)
      client.log_event / xsched.log_event outside a task --log-event--> scheduler
      client.get_events(topic) --get-events--> [(time, msg), ...]
      client.subscribe_topic(topic, handler) --subscribe-topic--> ... scheduler --event-->
          _op_event on the client's loop -> handler((time, msg))
      xsched.print(...) / xsched.warn(...) in a task -> topic "print" / "warn" naming the key
          -> the scheduler sends it to the clients that want that key -> _op_event writes it
          to this process's stdout/stderr or issues the warning (before the task's result
          arrives: the worker sends events ahead of task outcomes). In a process of both
          (processes=False) a print is the worker's own (the client skips its own process's),
          a warning the client's (the worker skips warnings.warn when a user's client of its
          scheduler is here: _client_here)
    logs: get_scheduler_logs(n) --get-logs--> scheduler; get_worker_logs(n) --get-logs--> workers
    forward_logging(name, level): a worker plugin (owned: gone with this client) adds a handler
        to that logger on every worker; records of tasks come back as events on this client's
        own topic -> _reemit_forwarded -> the client's logger of the same name
        (xsched/log_forwarding.py); unforward_logging(name) unregisters the plugin
    the scheduler's ``diagnostics`` extension: get_task_stream, has_what, nbytes, processing, story
    the workers, asked directly: call_stack (--call-stack-->), profile (--profile-->)
    dump_cluster_state(filename): --dump-state--> scheduler and every worker, written to a file

The client's handler of the scheduler's ``event`` op is this mixin's: ``__init_subclass__``
adds ``_MIXIN_SCHEDULER_OPS`` to the ``_SCHEDULER_OPS`` table of the class built on it.
"""

from __future__ import annotations

import asyncio
import builtins
import contextvars
import datetime
import inspect
import json
import logging
import os
import sys
import time
import warnings
from collections import Counter
from typing import Any

import msgpack

from .. import hooks, task_context
from ..files import output_path
from ..keys import key_split
from ..log_forwarding import (ForwardLogging, check_level, check_logger_name, forwarding_topic, plugin_name,
                              reemit)
from ..profiling import StackTree
from ..protocol import ops
from ..protocol.update_graph import workers_named
from ..protocol.serialize import dumps
from ..units import parse_timedelta
from .default import process_clients
from .dual import blocking, sync_or_async
from .future import Future, collect_futures

logger = logging.getLogger("xsched.client")

__all__ = ["DiagnosticsMixin", "log_event", "print", "warn", "get_task_stream", "TaskStream"]

#: the fields of a task-stream record (the scheduler's diagnostics extension sends them in this order)
TASK_STREAM_FIELDS = ("key", "worker", "start", "stop", "status", "nbytes", "group")


# ---------------------------------------------------------------------- what tasks call
def _check_event(topic, msg) -> None:
    """In the caller's thread: a topic (or list of topics) and a message msgpack can carry."""
    topics = [topic] if isinstance(topic, str) else topic
    if not isinstance(topics, (list, tuple)) or not topics or not all(isinstance(t, str) and t for t in topics):
        raise TypeError(f"an event's topic must be a non-empty string (or a list of them), not {topic!r}")
    try:
        msgpack.packb(msg, use_bin_type=True)
    except (TypeError, ValueError, OverflowError) as e:
        raise TypeError(f"an event's message must be made of what msgpack carries (numbers, strings, bytes, "
                        f"lists, dicts, None), not {type(msg).__name__}: {e}") from None


def _running_task():
    """(worker, key) of the task running in this thread, or (None, None)."""
    worker, key = getattr(task_context.thread_state, "worker", None), task_context.current_key()
    if worker is None or key is None or getattr(worker, "status", None) != "running":
        return None, None
    return worker, key


def log_event(topic, msg):
    """Record ``msg`` under ``topic`` on the scheduler, from a task or from the client.

    ``topic`` is a string (or a list of strings: the event goes under each); ``msg``
    anything msgpack carries (numbers, strings, bytes, lists, dicts). The scheduler keeps
    the last events of each topic (``client.get_events``) and pushes each one to the
    clients subscribed to its topic (``client.subscribe_topic``). Inside a task it goes
    through the worker, without a client; outside, through the default client.

    >>> import xsched
    >>> def train(step):
    ...     loss = 1 / (step + 1)
    ...     xsched.log_event("log_event-training", {"step": step, "loss": loss})
    ...     return loss
    >>> futures = client.map(train, range(3))
    >>> client.gather(futures)
    [1.0, 0.5, 0.3333333333333333]
    >>> sorted(msg["step"] for _, msg in client.get_events("log_event-training"))  # (in any order)
    [0, 1, 2]
    """
    _check_event(topic, msg)
    worker, _ = _running_task()
    if worker is not None:
        for t in [topic] if isinstance(topic, str) else topic:
            worker._log_event(t, msg)
        return None
    return hooks.get_client().log_event(topic, msg)


def print(*args, sep=" ", end="\n", file=None, flush=False):  # noqa: A001 - xsched.print, like dask's
    """``print`` that shows in the notebook of the client waiting for the task.

    Inside a task, the text goes to the worker's own output as usual *and* to the
    clients that want the task's result (every client, if none does), which write it to
    their stdout (stderr for ``file=sys.stderr``): in a notebook it shows in the cell that
    waits for the task. A client in the worker's own process (``LocalCluster(processes=False)``)
    shares the worker's output, so it shows the text once, as the worker printed it.
    Outside a task it is the builtin ``print``. Printing to other files stays on the worker.

    >>> import xsched
    >>> def work(x):
    ...     xsched.print("working on", x)
    ...     return x + 1
    >>> client.submit(work, 1).result()
    working on 1
    2
    >>> xsched.print("outside a task it is the builtin print")
    outside a task it is the builtin print
    """
    builtins.print(*args, sep=sep, end=end, file=file, flush=flush)
    worker, key = _running_task()
    if worker is None:
        return
    stream = "stdout" if file is None or file is sys.stdout else "stderr" if file is sys.stderr else None
    if stream is None:
        return
    text = (" " if sep is None else str(sep)).join(map(str, args)) + ("\n" if end is None else str(end))
    worker._log_event("print", {"key": key, "worker": worker.address, "text": text, "file": stream,
                                "process": task_context.process_token()})


def warn(message, category=None, stacklevel: int = 1, source=None) -> None:
    """``warnings.warn`` that shows in the notebook of the client waiting for the task.

    Inside a task the warning is issued on the worker as usual *and* in the clients that
    want the task's result (every client, if none does), naming the task. The category
    travels by name: the client uses it when it has that class (a builtin warning, or one
    of a module it imported), else ``UserWarning``. Outside a task it is
    ``warnings.warn``.

    A worker in the process of a client of its scheduler (``LocalCluster(processes=False)``)
    shares that client's stderr, so it leaves the warning to the client: it shows once, in
    the client's form (the task's key as the file name), in the notebook cell that waits now,
    and every time, as in a client of another process (the worker's own ``warnings.warn``
    would show a given line's warning once per process, and in the cell that started the
    cluster).

    >>> import xsched
    >>> def risky(x):
    ...     if x < 0:
    ...         xsched.warn(f"negative input {x}; using 0", RuntimeWarning)
    ...     return max(x, 0)

    A notebook shows ``<task risky-...>:0: RuntimeWarning: negative input -1; using 0`` under
    the cell; caught, to look at it:

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     client.submit(risky, -1).result()
    0
    >>> caught[0].category, str(caught[0].message), caught[0].filename
    (<class 'RuntimeWarning'>, 'negative input -1; using 0', '<task risky-...>')
    """
    if isinstance(message, Warning):
        category = type(message)
    category = category or UserWarning
    worker, key = _running_task()
    if worker is None or not _client_here(worker):
        warnings.warn(message, category, stacklevel=stacklevel + 1, source=source)
    if worker is None:
        return
    worker._log_event("warn", {"key": key, "worker": worker.address, "message": str(message),
                               "category": f"{category.__module__}.{category.__qualname__}"})


def _client_here(worker) -> bool:
    """Is there a running client in this process, on ``worker``'s scheduler, that a user made
    (not the one ``get_client()`` makes inside a task)? It will show a task's warning itself.

    >>> class W:
    ...     scheduler_id = "no-such-scheduler"
    >>> _client_here(W())
    False
    """
    scheduler_id = getattr(worker, "scheduler_id", None)
    if scheduler_id is None:
        return False
    made_by_tasks = {id(w.extensions.get("client")) for w in list(task_context._process_worker)}
    return any(c.status == "running" and getattr(c, "scheduler_id", None) == scheduler_id
               and id(c) not in made_by_tasks for c in list(process_clients))


def _warning_category(name) -> type:
    """The warning class named ``module.qualname``, from a module this process has imported
    (nothing is imported for it); ``UserWarning`` otherwise.

    >>> _warning_category("builtins.RuntimeWarning"), _warning_category("no.such.Warning")
    (<class 'RuntimeWarning'>, <class 'UserWarning'>)
    """
    if not isinstance(name, str):
        return UserWarning
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):  # module a.b, class C.D: try a.b.C / D, then a.b / C.D, ...
        obj = sys.modules.get(".".join(parts[:cut]))
        for part in parts[cut:]:
            obj = getattr(obj, part, None)
        if isinstance(obj, type) and issubclass(obj, Warning):
            return obj
    return UserWarning


def _show_print(msg) -> None:
    """Write a task's print here, unless the task ran in this process: its worker printed
    it to these very streams already (``LocalCluster(processes=False)``)."""
    if isinstance(msg, dict) and isinstance(msg.get("text"), str):
        if msg.get("process") == task_context.process_token():
            return
        stream = sys.stderr if msg.get("file") == "stderr" else sys.stdout
        stream.write(msg["text"])
        stream.flush()


def _show_warning(msg) -> None:
    if not isinstance(msg, dict):
        return
    where = f"<task {msg.get('key')}>"
    warnings.warn_explicit(str(msg.get("message", "")), _warning_category(msg.get("category")), where, 0,
                           module=where)


# ---------------------------------------------------------------------- the task stream
def _moment(t, what: str) -> float | None:
    """Seconds since the epoch from a number, a datetime, a timedelta or a duration string
    (both meaning that long ago), or None."""
    if t is None:
        return None
    if isinstance(t, datetime.datetime):
        return t.timestamp()
    if isinstance(t, datetime.timedelta):
        return time.time() - t.total_seconds()
    if isinstance(t, str):
        return time.time() - parse_timedelta(t)
    if isinstance(t, (int, float)) and not isinstance(t, bool):
        return float(t)
    raise TypeError(f"{what}= takes seconds since the epoch, a datetime, a timedelta or a duration like '30s' "
                    f"(that long ago), not {type(t).__name__}")


def _records(rows: list) -> list[dict]:
    out = []
    for row in rows:
        record = dict(zip(TASK_STREAM_FIELDS, row))
        if record.get("group") is None:  # (a scheduler before groups were kept with the runs)
            record["group"] = key_split(record["key"])
        out.append(record)
    return out


class TaskStream:
    """Records the tasks that run while it is open: ``with get_task_stream() as ts: ...``;
    then ``ts.data`` holds their records (see ``Client.get_task_stream``).

    The scheduler numbers the runs the workers report; entering notes the number reached,
    leaving fetches every run reported since. Wait for the work inside the block (its
    runs are reported when they end). ``async with`` for an asynchronous client.
    """

    def __init__(self, client=None, plot=False, filename: str = "task-stream.html"):
        self.client = client
        self.data: list[dict] = []
        self.figure = None  # (with plot=: a TaskStreamFigure once the block has ended)
        self._plot = _check_plot(plot, filename)
        self._filename = filename
        self._since: int | None = None

    def __repr__(self) -> str:
        return f"<TaskStream: {len(self.data)} task runs>"

    def _sync_client(self):
        client = self.client if self.client is not None else hooks.get_client()
        if client.asynchronous:
            raise TypeError("an asynchronous client records a task stream with `async with get_task_stream(...)`")
        self.client = client
        return client

    def __enter__(self) -> "TaskStream":
        client = self._sync_client()
        _, self._since = client._sync(client._task_stream(count=0))
        return self

    def __exit__(self, *exc) -> None:
        client = self._sync_client()
        rows, _ = client._sync(client._task_stream(since=self._since))
        self.data.extend(_records(rows))
        self._draw()

    def _draw(self) -> None:
        if self._plot:
            self.figure = hooks.task_stream_figure(self.data, self._filename if self._plot == "save" else None)

    async def __aenter__(self) -> "TaskStream":
        self.client = self.client if self.client is not None else hooks.get_client()
        _, self._since = await self.client._task_stream(count=0)
        return self

    async def __aexit__(self, *exc) -> None:
        rows, _ = await self.client._task_stream(since=self._since)
        self.data.extend(_records(rows))
        self._draw()


def _check_plot(plot, filename) -> bool | str:
    if plot not in (False, True, "save"):
        raise ValueError(f"get_task_stream: plot is False, True (a figure) or 'save' (a figure written to "
                         f"filename), not {plot!r}")
    if plot == "save" and not isinstance(filename, (str, os.PathLike)):
        raise TypeError(f"get_task_stream(plot='save') writes to filename, a path; got {filename!r}")
    if plot == "save":  # (a directory that does not exist: refused before the work, not after it)
        output_path(filename, "get_task_stream(plot='save')", "task-stream.html")
    return plot


def get_task_stream(client=None, plot=False, filename: str = "task-stream.html") -> TaskStream:
    """A context manager recording the tasks that run inside it (``ts.data`` afterwards).

    Each record is a dict: ``key``, ``group``, ``worker``, ``start`` and ``stop`` (seconds
    since the epoch, on the worker's clock), ``status`` (``memory`` or ``error``) and
    ``nbytes`` of the result. ``client``: the default client when None. ``plot=True`` also
    draws them (``ts.figure``, shown in a notebook: a row per worker, a bar per run);
    ``plot="save"`` writes that figure to ``filename`` as an HTML page, as dask's does.

    >>> from xsched import get_task_stream
    >>> with get_task_stream() as ts:
    ...     client.gather(client.map(lambda x: x * 2, range(4)))
    [0, 2, 4, 6]
    >>> ts
    <TaskStream: 4 task runs>
    >>> sorted(ts.data[0])
    ['group', 'key', 'nbytes', 'start', 'status', 'stop', 'worker']
    """
    return TaskStream(client, plot, filename)


# ---------------------------------------------------------------------- the mixin
class DiagnosticsMixin:
    """Events, logs, the task stream, who holds and runs what, stories, stacks, profiles, dumps."""

    # ------------------------------------------------------------------ the scheduler's event op
    def _op_event(self, h: dict, payload: list) -> None:
        """(On the client's loop) an event of a subscribed topic, or a task's print/warn for us."""
        topic, msg = h.get("topic"), h.get("msg")
        handler = self._topic_handlers().get(topic)
        if handler is None:
            # in a fresh context: a Jupyter kernel's streams then write to the cell running now,
            # not to the cell that started the client's loop thread (whose context it inherited)
            if topic == "print":
                contextvars.Context().run(_show_print, msg)
            elif topic == "warn":
                contextvars.Context().run(_show_warning, msg)
            return
        try:
            result = handler((h.get("time"), msg))
            if inspect.isawaitable(result):
                asyncio.ensure_future(result)
        except Exception:  # a user's handler never breaks the client's connection
            logger.exception("the handler of topic %r failed on an event", topic)

    #: the scheduler's ops this mixin handles, added to the client's table (``__init_subclass__``)
    _MIXIN_SCHEDULER_OPS = {ops.EVENT: _op_event}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        table = cls.__dict__.get("_SCHEDULER_OPS")
        if table is not None:
            both = set(table) & set(DiagnosticsMixin._MIXIN_SCHEDULER_OPS)
            if both:
                raise TypeError(f"{cls.__name__}._SCHEDULER_OPS handles {sorted(both)}, which DiagnosticsMixin "
                                "handles already")
            cls._SCHEDULER_OPS = {**table, **DiagnosticsMixin._MIXIN_SCHEDULER_OPS}

    def _topic_handlers(self) -> dict:
        """topic -> handler of this client (made on first use)."""
        handlers = self.__dict__.get("_topic_handler_table")
        if handlers is None:
            handlers = self.__dict__.setdefault("_topic_handler_table", {})
        return handlers

    # ------------------------------------------------------------------ events
    @sync_or_async
    def log_event(self, topic, msg) -> None:
        """Record ``msg`` under ``topic`` on the scheduler (see ``xsched.log_event``).

        >>> client.log_event("log_event-deployments", {"model": "v2", "by": "me"})
        >>> client.get_events("log_event-deployments")
        [(..., {'model': 'v2', 'by': 'me'})]
        """
        _check_event(topic, msg)
        return self._send_event(topic, msg)

    async def _send_event(self, topic, msg) -> None:
        await self._conn.request({"op": ops.LOG_EVENT, "topic": topic, "msg": msg}, timeout=self._timeout)

    @sync_or_async
    async def get_events(self, topic: str | None = None):
        """The events the scheduler keeps: ``[(time, msg), ...]`` for ``topic``, oldest first,
        or ``{topic: [(time, msg), ...]}`` for every topic when ``topic`` is None.

        The scheduler keeps the last 1,000 events of each topic (and at most 1,000 topics,
        64 MiB of messages).

        >>> client.log_event("get_events-notes", "started")
        >>> client.get_events("get_events-notes")[-1]        # the newest
        (..., 'started')
        >>> "get_events-notes" in client.get_events()        # {topic: events} of every topic
        True
        """
        if topic is not None and not isinstance(topic, str):
            raise TypeError(f"get_events(topic) takes a topic string or None, not {type(topic).__name__}")
        reply, _ = await self._conn.request({"op": ops.GET_EVENTS, "topic": topic}, timeout=self._timeout)
        events = reply["events"]
        if topic is not None:
            return [tuple(ev) for ev in events]
        return {t: [tuple(ev) for ev in evs] for t, evs in events.items()}

    @sync_or_async
    def subscribe_topic(self, topic: str, handler) -> None:
        """Call ``handler((time, msg))`` in this process for each new event of ``topic``.

        The scheduler pushes the events as they come; the handler runs on the client's
        event loop (keep it short; an ``async def`` handler is scheduled there). One handler
        per topic: subscribing again replaces it. A handler for ``"print"`` or ``"warn"``
        replaces the client's own writing of tasks' ``xsched.print`` / ``xsched.warn``.

        >>> import xsched
        >>> seen = []
        >>> client.subscribe_topic("subscribe_topic-training", seen.append)
        >>> client.submit(lambda: xsched.log_event("subscribe_topic-training", 1)).result()
        >>> seen
        [(..., 1)]
        >>> client.unsubscribe_topic("subscribe_topic-training")
        """
        if not isinstance(topic, str) or not topic:
            raise TypeError(f"subscribe_topic takes a non-empty topic string, not {topic!r}")
        if not callable(handler):
            raise TypeError(f"subscribe_topic needs a callable handler, not {type(handler).__name__}")
        self._topic_handlers()[topic] = handler  # (before the request: events may come right after it)
        return self._topic_request(ops.SUBSCRIBE_TOPIC, topic)

    @sync_or_async
    def unsubscribe_topic(self, topic: str) -> None:
        """Stop calling the handler of ``topic`` (see ``subscribe_topic``).

        >>> seen = []
        >>> client.subscribe_topic("unsubscribe_topic-news", seen.append)
        >>> client.unsubscribe_topic("unsubscribe_topic-news")
        >>> client.log_event("unsubscribe_topic-news", "unseen")
        >>> seen
        []
        """
        if not isinstance(topic, str) or not topic:
            raise TypeError(f"unsubscribe_topic takes a non-empty topic string, not {topic!r}")
        self._topic_handlers().pop(topic, None)
        return self._topic_request(ops.UNSUBSCRIBE_TOPIC, topic)

    async def _topic_request(self, op: str, topic: str) -> None:
        await self._conn.request({"op": op, "topic": topic}, timeout=self._timeout)

    # ------------------------------------------------------------------ forwarded logging
    def _log_forwardings(self) -> dict:
        """logger name (None: root) -> fid of each logger this client forwards (made on first use)."""
        table = self.__dict__.get("_log_forwarding_table")
        if table is None:
            table = self.__dict__.setdefault("_log_forwarding_table", {})
        return table

    @sync_or_async
    def forward_logging(self, logger_name=None, level=logging.NOTSET) -> None:
        """Show here what tasks log: records that the logger ``logger_name`` (None: the root
        logger) emits inside tasks, on every worker -- those running now and those that join
        later -- are re-emitted on this process's logger of the same name.

        They go through this process's logging as if logged here: the logger's level, its
        filters and handlers and its ancestors' (a notebook's handlers, pytest's ``caplog``;
        with no logging set up, Python prints warnings and above to stderr). Each carries
        ``record.worker`` (the worker's address) and ``record.task_key``, and its message
        starts with ``[worker address]``; its ``exc_info`` arrives as the traceback's text
        (``record.exc_text``, which formatters print). The message is formatted on the worker,
        so arguments that do not pickle are no trouble.

        ``level`` (a number or a name like ``"INFO"``): only records at that level or above
        are sent. The worker's own logger must let them through as well: its level is
        Python's default there (WARNING, from the root logger) unless the task's code sets
        one, so for INFO records call ``logging.getLogger(name).setLevel("INFO")`` in the
        task's module. Records of xsched's own loggers are not sent unless ``logger_name`` is
        one of them. Calling it again for a logger replaces its level.

        Records travel in batches, at most 1,000 a second per worker and forwarded logger (10,000
        at once); beyond that they are dropped on the worker and a WARNING here says how many.
        A task's records arrive before its result. Forwarding stops with ``unforward_logging``
        and when this client closes or goes away. A worker in this process
        (``LocalCluster(processes=False)``) shares this process's loggers: its tasks' records
        show here directly, once.

        >>> import logging, sys
        >>> def step(x):
        ...     logging.getLogger("mylib").warning("step %d is slow", x)
        ...     return x
        >>> shown = logging.StreamHandler(sys.stdout)   # (a notebook shows warnings without it, on stderr)
        >>> logging.getLogger("mylib").addHandler(shown)
        >>> client.forward_logging("mylib")
        >>> client.submit(step, 3).result()
        [tcp://127.0.0.1:...] step 3 is slow
        3
        >>> client.unforward_logging("mylib")
        >>> logging.getLogger("mylib").removeHandler(shown)
        """
        name = check_logger_name(logger_name)
        plugin = ForwardLogging(name, check_level(level), forwarding_topic(self.id))
        return self._start_forwarding(name, plugin, dumps(plugin))

    async def _start_forwarding(self, name: str | None, plugin: ForwardLogging, frames: list) -> None:
        live = self._log_forwardings()
        previous = live.get(name)
        subscribe = not live
        live[name] = plugin.fid  # (first: records may come as soon as a worker set the plugin up)
        try:
            if subscribe:
                self._topic_handlers()[plugin.topic] = self._reemit_forwarded
                await self._topic_request(ops.SUBSCRIBE_TOPIC, plugin.topic)
            await self._register_worker_plugin(plugin_name(self.id, name), False, False, frames, owned=True)
        except BaseException:
            if previous is None:
                live.pop(name, None)
            else:
                live[name] = previous
            if not live:
                await self._end_forwarding_topic()
            raise

    @sync_or_async
    def unforward_logging(self, logger_name=None) -> None:
        """Stop what ``forward_logging(logger_name)`` started (None: the root logger): every
        worker removes its handler, and records of it no longer show here. ValueError if this
        client does not forward that logger.

        >>> client.forward_logging("mylib")
        >>> client.unforward_logging("mylib")
        >>> client.unforward_logging("mylib")
        Traceback (most recent call last):
        ValueError: this client does not forward the logger 'mylib' (it forwards: none); ...
        """
        name = check_logger_name(logger_name)
        live = self._log_forwardings()
        if name not in live:
            forwarded = ", ".join(sorted("the root logger" if n is None else repr(n) for n in live)) or "none"
            what = "the root logger" if name is None else f"the logger {name!r}"
            raise ValueError(f"this client does not forward {what} (it forwards: {forwarded}); "
                             "client.forward_logging(name) starts forwarding one")
        return self._stop_forwarding(name)

    async def _stop_forwarding(self, name: str | None) -> None:
        live = self._log_forwardings()
        live.pop(name, None)  # (first: whatever of it still arrives is not re-emitted)
        try:
            await self._unregister_worker_plugin(plugin_name(self.id, name), False)
        finally:
            if not live:
                await self._end_forwarding_topic()

    async def _end_forwarding_topic(self) -> None:
        topic = forwarding_topic(self.id)
        self._topic_handlers().pop(topic, None)
        if self.status == "running":
            await self._topic_request(ops.UNSUBSCRIBE_TOPIC, topic)

    def _reemit_forwarded(self, event) -> None:
        """(On the client's loop) a batch of forwarded records: re-emitted in a fresh context,
        so that a Jupyter kernel shows them in the cell running now."""
        _, batch = event
        contextvars.Context().run(reemit, batch, self._log_forwardings())

    # ------------------------------------------------------------------ logs
    @sync_or_async
    async def get_scheduler_logs(self, n: int | None = None) -> list[tuple[str, str]]:
        """The scheduler's recent log records, oldest first: ``[(level, message), ...]``.

        What its ``xsched`` loggers emitted at their level (warnings and above unless the
        scheduler was started with ``--log-level info``); the last ``n`` (all kept: up to
        10,000) records.

        >>> logs = client.get_scheduler_logs(n=5)    # e.g. [('WARNING', '2024-12-02 10:00:00,123 - ...')]
        >>> len(logs) <= 5, all(isinstance(level, str) and isinstance(text, str) for level, text in logs)
        (True, True)
        """
        reply, _ = await self._conn.request({"op": ops.GET_LOGS, "n": _count(n, "n")}, timeout=self._timeout)
        return [tuple(r) for r in reply["logs"]]

    @sync_or_async
    async def get_worker_logs(self, n: int | None = None, workers=None) -> dict:
        """Each worker's recent log records: ``{address: [(level, message), ...]}``.

        ``workers``: addresses or names (all when None). A task's own records count too
        when it logs under ``xsched`` (``logging.getLogger("xsched.user")``).

        >>> import logging
        >>> def step(x):
        ...     logging.getLogger("xsched.user").warning("step %d is slow", x)
        ...     return x
        >>> client.submit(step, 3).result()
        3
        >>> logs = client.get_worker_logs(n=10)
        >>> any("step 3 is slow" in m for records in logs.values() for _, m in records)
        True
        """
        n = _count(n, "n")

        async def one(addr):
            reply, _ = await self._pool.get(addr).request({"op": ops.GET_LOGS, "n": n}, timeout=self._timeout)
            return addr, [tuple(r) for r in reply["logs"]]

        return dict(await self._ask_each(await self._worker_addresses(workers), one))

    async def _ask_each(self, addresses: list[str], ask) -> list:
        """``await ask(address)`` for every worker at once: the answers of those that gave one.
        A worker that left meanwhile (its connection closed or refused, or silent past the
        timeout) is left out, as dask's scheduler leaves it out of a profile; any other
        failure is raised."""
        answers = await asyncio.gather(*(ask(a) for a in addresses), return_exceptions=True)
        out = []
        for addr, answer in zip(addresses, answers):
            if isinstance(answer, (OSError, asyncio.TimeoutError)):  # (ConnectionError, CommClosedError too)
                logger.info("worker %s did not answer (%s: %s): left out", addr, type(answer).__name__, answer)
                continue
            if isinstance(answer, BaseException):
                raise answer
            out.append(answer)
        return out

    async def _worker_addresses(self, workers) -> list[str]:
        """Addresses of the workers given by address or name (all when None), sorted."""
        info = await self._scheduler_info()
        addrs = sorted(info["workers"])
        if workers is None:
            return addrs
        return workers_named(info["workers"], [workers] if isinstance(workers, str) else workers)

    # ------------------------------------------------------------------ the task stream
    @sync_or_async
    def get_task_stream(self, start=None, stop=None, count: int | None = None, plot=False,
                        filename: str = "task-stream.html"):
        """The task runs the workers reported, oldest first, as dicts: ``key``, ``group``,
        ``worker``, ``start``, ``stop`` (seconds since the epoch, on the worker's clock),
        ``status`` (``memory`` or ``error``) and ``nbytes`` of the result.

        ``plot=True`` returns ``(runs, figure)``, the figure shown in a notebook (a row per
        worker, a bar per run, coloured by task group); ``plot="save"`` also writes it to
        ``filename`` as an HTML page, as dask's does.

        ``start``/``stop``: only runs that ended after ``start`` and began before ``stop``
        (seconds since the epoch, datetimes, or durations like ``"30s"`` meaning that long
        ago); ``count``: only the last so many. The scheduler keeps the last 100,000 runs.
        To record the runs of one block of code: ``xsched.get_task_stream()``.

        >>> futures = client.map(lambda x: x * 2, range(4))
        >>> client.gather(futures)
        [0, 2, 4, 6]
        >>> runs = client.get_task_stream(start="1 minute", count=4)    # the last 4 of the last minute
        >>> runs[-1]
        {'key': 'lambda-...', 'worker': 'tcp://127.0.0.1:...', 'start': ..., 'stop': ...,
         'status': 'memory', 'nbytes': 28, 'group': 'lambda'}
        >>> sorted(r["key"] for r in runs) == sorted(f.key for f in futures)
        True
        """
        plot = _check_plot(plot, filename)
        call = self._task_stream_records(_moment(start, "start"), _moment(stop, "stop"), _count(count, "count"))
        if not plot:
            return call

        def drawn(runs: list[dict]) -> tuple[list[dict], Any]:  # (in the caller's thread, not the loop's)
            return runs, hooks.task_stream_figure(runs, filename if plot == "save" else None)

        if self.asynchronous:
            async def awaited():
                return drawn(await call)

            return awaited()
        return blocking(call, then=drawn)

    async def _task_stream_records(self, start, stop, count) -> list[dict]:
        rows, _ = await self._task_stream(start, stop, count)
        return _records(rows)

    async def _task_stream(self, start=None, stop=None, count=None, since=None) -> tuple[list, int]:
        """(rows, the scheduler's next run number)."""
        reply, _ = await self._conn.request({"op": ops.GET_TASK_STREAM, "start": start, "stop": stop,
                                             "count": count, "since": since}, timeout=self._timeout)
        return reply["records"], reply["index"]

    async def _activity(self, since: int | None = None) -> tuple[list[dict], int]:
        """(the workers' transfers and disk writes and reads the scheduler heard of since the
        cursor ``since`` (none when None), as task-stream records whose group is their kind;
        the cursor for the next call). Workers report them with their heartbeats."""
        reply, _ = await self._conn.request({"op": ops.GET_TASK_STREAM, "count": 0, "activity_since": since},
                                            timeout=self._timeout)
        return _records(reply.get("activity") or []), int(reply.get("activity_index") or 0)

    # ------------------------------------------------------------------ who holds and runs what
    @sync_or_async
    async def nbytes(self, keys=None, summary: bool = True) -> dict:
        """Bytes the cluster holds in memory, as the workers measured the values: summed per
        key prefix (``{"inc": 2400, ...}``), or per key with ``summary=False``. ``keys``:
        futures or keys to count (all in memory, of every client, when None).

        >>> futures = client.map(lambda i: bytes(100), range(3))
        >>> _ = client.gather(futures)
        >>> client.nbytes(futures)
        {'lambda': 399}
        >>> client.nbytes(futures[:1], summary=False)
        {'lambda-...': 133}
        """
        if keys is not None:
            flat: list[Future] = []
            collect_futures(keys, flat)
            plain = [k for k in (keys if isinstance(keys, (list, tuple, set)) else [keys]) if isinstance(k, str)]
            keys = [f.key for f in flat] + plain
        reply, _ = await self._conn.request({"op": ops.GET_NBYTES, "keys": keys, "summary": bool(summary)},
                                            timeout=self._timeout)
        return reply["nbytes"]

    @sync_or_async
    async def has_what(self, workers=None) -> dict:
        """The keys each worker holds in memory: ``{address: [key, ...]}``.

        ``workers``: addresses or names (all when None).

        >>> x = client.submit(sum, [1, 2])
        >>> x.result()
        3
        >>> [addr for addr, keys in client.has_what().items() if x.key in keys]   # who holds x
        ['tcp://127.0.0.1:...']
        """
        reply, _ = await self._conn.request({"op": ops.HAS_WHAT, "workers": _workers_list(workers)},
                                            timeout=self._timeout)
        return reply["has_what"]

    @sync_or_async
    async def processing(self, workers=None) -> dict:
        """The keys the scheduler has given each worker to run now: ``{address: [key, ...]}``.

        ``workers``: addresses or names (all when None).

        >>> from xsched import Event
        >>> go = Event("processing-go", client=client)
        >>> fut = client.submit(go.wait, 30)         # runs until go is set (30 s at most)
        >>> {addr: keys for addr, keys in client.processing().items() if keys}
        {'tcp://127.0.0.1:...': ['wait-...']}
        >>> go.set(); fut.result(); go.clear()
        True
        """
        reply, _ = await self._conn.request({"op": ops.PROCESSING, "workers": _workers_list(workers)},
                                            timeout=self._timeout)
        return reply["processing"]

    @sync_or_async
    async def story(self, *keys) -> list[tuple]:
        """The scheduler's transitions of these keys (or futures), oldest first:
        ``[(key, start state, finish state, stimulus id), ...]``.

        The stimulus id names what caused each change (``update-graph-...``,
        ``task-finished-...``, ...). The scheduler keeps the last
        ``scheduler.events-log-length`` transitions of all keys.

        >>> fut = client.submit(abs, -1, pure=False)   # (a new key: a key run before has an older story too)
        >>> fut.result()
        1
        >>> [(start, finish) for _, start, finish, _ in client.story(fut)]
        [('new', 'released'), ('released', 'waiting'), ('waiting', 'queued'), ('queued', 'processing'),
         ('processing', 'memory')]
        >>> client.story(fut)[-1]
        ('abs-...', 'processing', 'memory', 'task-finished-...')
        """
        names = _keys_of(keys)
        reply, _ = await self._conn.request({"op": ops.STORY, "keys": names}, timeout=self._timeout)
        return [tuple(e) for e in reply["story"]]

    # ------------------------------------------------------------------ what runs now
    @sync_or_async
    async def call_stack(self, futures=None, keys=None) -> dict:
        """The Python stack of each task running now: ``{address: {key: [frame lines]}}``.

        ``futures``/``keys``: only these tasks (every running task when both are None).
        Each frame is traceback text (``File "...", line N, in function`` and the line),
        outermost first, from the task's function down; workers running none of them are
        left out.

        >>> from xsched import Event
        >>> started = Event("call_stack-started", client=client)
        >>> done = Event("call_stack-done", client=client)
        >>> def wait_for_done():
        ...     started.set()
        ...     done.wait(timeout=30)
        >>> fut = client.submit(wait_for_done)
        >>> started.wait(timeout=30)
        True
        >>> for addr, stacks in client.call_stack(fut).items():
        ...     print("".join(stacks[fut.key]))
          File "<dynamic-code>", line ..., in wait_for_done
        ...
        >>> done.set(); fut.result(); started.clear(); done.clear()
        """
        wanted = None
        if futures is not None or keys is not None:
            wanted = _keys_of([futures if futures is not None else [], keys if keys is not None else []])

        async def one(addr):
            reply, _ = await self._pool.get(addr).request({"op": ops.CALL_STACK, "keys": wanted},
                                                          timeout=self._timeout)
            return addr, reply["stacks"]

        results = await self._ask_each(await self._worker_addresses(None), one)
        return {addr: stacks for addr, stacks in results if stacks}

    @sync_or_async
    async def interrupt(self, futures=None, keys=None) -> dict:
        """Interrupt these running tasks: ``TaskInterrupted`` is raised in each one's thread at
        its next line of Python, and the task fails with it (``client.retry`` runs it again).
        Returns ``{address: [keys interrupted there]}``; a task whose own code does not run now
        (waiting, finished, or its function still being unpickled) is left alone.

        >>> import time
        >>> from xsched import Event
        >>> started = Event("interrupt-started", client=client)
        >>> def spin():
        ...     started.set()
        ...     end = time.time() + 60                # (a minute at most)
        ...     while time.time() < end:
        ...         pass
        >>> fut = client.submit(spin)
        >>> started.wait(timeout=30)
        True
        >>> client.interrupt(fut)
        {'tcp://127.0.0.1:...': ['spin-...']}
        >>> fut.exception()
        TaskInterrupted('the task was interrupted while it ran (client.interrupt); ...')
        >>> started.clear()
        """
        wanted = _keys_of([futures if futures is not None else [], keys if keys is not None else []])
        if not wanted:
            return {}

        async def one(addr):
            reply, _ = await self._pool.get(addr).request({"op": ops.INTERRUPT_TASK, "keys": wanted},
                                                          timeout=self._timeout)
            return addr, reply["interrupted"]

        results = await self._ask_each(await self._worker_addresses(None), one)
        return {addr: keys for addr, keys in results if keys}

    @sync_or_async
    def profile(self, duration="1s", interval="10ms", workers=None, plot=False, filename=None, *,
                key=None, start=None, stop=None, scheduler=False, server=False, merge_workers=True):
        """Where the tasks spend their time: the workers sample the stacks of their running
        tasks every ``interval`` for ``duration`` and count each ``(function, file, line)``.

        Returns ``{"samples": stacks sampled, "counts": [{"function", "file", "line", "count",
        "self"}, ...], "tree": [[depth, function, file, count, own], ...]}``, the most
        sampled first: ``count`` is the samples in which that line was on a task's stack,
        ``self`` those in which it was the innermost frame; ``tree`` is the call tree of the
        samples per task prefix, in preorder (what a flame graph draws).
        ``workers``: addresses or names (all when None). A statistical sampler: lines that
        run for less than ``interval`` at a time are seen in proportion, or not at all.

        ``plot=True`` returns ``(profile, figure)``, the figure the call tree as a flame graph
        shown in a notebook; ``filename`` (or ``plot="save"``, to ``profile.html``) also
        writes it as an HTML page that opens offline, as dask's does.

        >>> import time
        >>> from xsched import Event
        >>> started = Event("profile-started", client=client)
        >>> def busy():
        ...     started.set()
        ...     end = time.time() + 2
        ...     while time.time() < end:
        ...         pass
        >>> fut = client.submit(busy)
        >>> started.wait(timeout=30)
        True
        >>> prof, fig = client.profile(duration="1s", plot=True)
        >>> top = prof["counts"][0]
        >>> top["function"], top["count"] > prof["samples"] / 2
        ('busy', True)
        >>> fig
        ProfileFigure<... samples of 1 kind of task>
        >>> fut.result(); started.clear()
        """
        asked = [f"{k}=" for k, v in (("key", key), ("start", start), ("stop", stop)) if v is not None]
        asked += [f"{k}=" for k, v in (("scheduler", scheduler), ("server", server)) if v]
        asked += ["merge_workers=False"] if not merge_workers else []
        if asked:  # (dask's keywords for its continuous history of samples)
            raise TypeError(f"profile: {', '.join(asked)} select from a history of samples kept all along, which "
                            "xsched does not keep: the workers sample their running tasks for `duration` from "
                            "the call on, so call it while the tasks of interest run (client.profile('5s'))")
        d, i = parse_timedelta(duration), parse_timedelta(interval)
        if not 0 <= d <= 600:
            raise ValueError(f"profile(duration=...) takes at most 10 minutes, not {duration!r}")
        if not 0.001 <= i <= 60:
            raise ValueError(f"profile(interval=...) takes 1ms to 60s, not {interval!r}")
        if plot not in (False, True, "save"):
            raise ValueError(f"profile: plot is False, True (a figure) or 'save' (a figure written to "
                             f"filename), not {plot!r}")
        if plot == "save" and filename is None:
            filename = "profile.html"
        if filename is not None:
            output_path(filename, "profile", "profile.html")  # (refused before sampling, not after)
        call, timeout = self._profile(d, i, workers), d + self._timeout + 5
        if not plot and filename is None:
            return blocking(call, timeout=timeout)

        def drawn(prof: dict):  # (in the caller's thread, not the loop's)
            fig = hooks.profile_figure(prof["tree"], filename)
            return (prof, fig) if plot else prof

        if self.asynchronous:
            async def awaited():
                return drawn(await call)

            return awaited()
        return blocking(call, timeout=timeout, then=drawn)

    async def _profile(self, duration: float, interval: float, workers) -> dict:
        async def one(addr):
            reply, _ = await self._pool.get(addr).request(
                {"op": ops.PROFILE, "duration": duration, "interval": interval, "tree": True},
                timeout=duration + self._timeout)
            return reply

        replies = await self._ask_each(await self._worker_addresses(workers), one)  # (one that left: without it)
        counts: Counter = Counter()
        own: Counter = Counter()
        tree = StackTree()
        for reply in replies:
            for function, filename, line, count, self_count in reply["counts"]:
                counts[(function, filename, line)] += count
                own[(function, filename, line)] += self_count
            tree.merge(reply.get("tree") or [])
        rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        return {"samples": sum(r["samples"] for r in replies),
                "counts": [{"function": w[0], "file": w[1], "line": w[2], "count": n, "self": own[w]} for w, n in rows],
                "tree": tree.rows()}

    # ------------------------------------------------------------------ a dump of everything
    @sync_or_async
    def dump_cluster_state(self, filename: str = "xsched-cluster-dump", format: str = "msgpack") -> str:
        """Write what the scheduler and every worker know to a file, for a post-mortem; returns its path.

        The file (``filename`` plus ``.msgpack`` or ``.json`` unless it ends so already)
        holds a map: ``scheduler`` (its info, task counts, every task's state and
        placement, the transition log -- the story of every key --, its event log and
        topics, the recent task stream and its logs), ``workers`` (per address: its tasks,
        metrics, transition log, recent runs and logs; or ``error`` when it did not
        answer), ``client`` and ``time``.

        >>> def inc(x):
        ...     return x + 1
        >>> futures = client.map(inc, [1, 2])
        >>> client.gather(futures)
        [2, 3]
        >>> path = client.dump_cluster_state("incident", format="json")
        >>> path
        '/.../incident.json'
        >>> import json
        >>> with open(path) as f:
        ...     dump = json.load(f)
        >>> sorted(dump)
        ['client', 'scheduler', 'time', 'workers']
        >>> task = dump["scheduler"]["tasks"][futures[0].key]
        >>> task["state"], task["who_has"]
        ('memory', ['tcp://127.0.0.1:...'])
        """
        if format not in ("msgpack", "json"):
            raise ValueError(f"dump_cluster_state writes format='msgpack' or 'json', not {format!r}")
        suffix = f".{format}"
        path = os.path.abspath(os.path.expanduser(filename if filename.endswith(suffix) else filename + suffix))
        return self._dump_cluster_state(path, format)

    async def _dump_cluster_state(self, path: str, format: str) -> str:
        reply, _ = await self._conn.request({"op": ops.DUMP_STATE}, timeout=None)
        scheduler = reply["state"]

        async def one(addr):
            try:
                r, _ = await self._pool.get(addr).request({"op": ops.DUMP_STATE}, timeout=self._timeout)
                return addr, r["state"]
            except Exception as e:  # noqa: BLE001 - a worker that cannot answer is part of the story
                return addr, {"error": f"{type(e).__name__}: {e}"}

        workers = dict(await asyncio.gather(*(one(a) for a in sorted(scheduler["info"]["workers"]))))
        state = {"time": time.time(), "client": self.id, "scheduler": scheduler, "workers": workers}
        await asyncio.get_running_loop().run_in_executor(None, _write_dump, path, state, format)
        return path


def _write_dump(path: str, state: dict, format: str) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    if format == "json":
        with open(tmp, "w") as f:
            json.dump(state, f, default=repr)
    else:
        with open(tmp, "wb") as f:
            f.write(msgpack.packb(state, use_bin_type=True, default=repr))
    os.replace(tmp, path)


def _count(n, what: str) -> int | None:
    if n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise TypeError(f"{what} must be a count (an integer >= 0) or None, not {n!r}")
    return n


def _workers_list(workers):
    if workers is None:
        return None
    return [workers] if isinstance(workers, str) else [w if isinstance(w, (str, int)) else str(w) for w in workers]


def _keys_of(items) -> list[str]:
    """Keys from futures, key strings, and lists of them."""
    out: list[str] = []

    def walk(x):
        if isinstance(x, Future):
            out.append(x.key)
        elif isinstance(x, str):
            out.append(x)
        elif isinstance(x, (list, tuple, set)):
            for y in x:
                walk(y)
        elif isinstance(x, dict):
            futures: list = []
            collect_futures(x, futures)
            out.extend(f.key for f in futures)
        else:
            raise TypeError(f"expected futures or key strings, not {type(x).__name__}")

    walk(items)
    return list(dict.fromkeys(out))
