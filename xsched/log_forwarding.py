"""Log records of tasks, re-emitted in a client: the pieces of ``client.forward_logging``.

Built on two things xsched has already: a worker plugin (the handler is installed on every
worker, now and as workers join) and the events extension (the records travel as events on
a topic only the forwarding client subscribes to)::

    client.forward_logging("mylib", level)
        -> subscribe-topic "xsched-forward-logging-<client id>" (handler: the client's reemit)
        -> register-worker-plugin ForwardLogging {owned: the scheduler unregisters it when the
           client goes} --> every worker, now and as each joins: setup adds a
           ForwardingHandler to logging.getLogger("mylib") there
    task thread: logging.getLogger("mylib").warning(...) -> ForwardingHandler.emit keeps only
        records of a task running on this worker, at or above ``level``, not of xsched's own
        loggers (unless an xsched logger is the one forwarded), not made while forwarding;
        at most ``rate`` records a second (``burst`` at once): others are counted, dropped
        (the count goes with a batch, at most once every REPORT_INTERVAL);
        record_to_dict, in the task's thread: the message formatted (arguments that do not
        pickle never travel), a traceback as text -> pending (at most ``burst``: the oldest
        go, counted) -> worker._log_event(topic, take), once per batch
    worker loop: its drain of the task threads' events calls take() -> one log-event
        {worker, process, fid, logger, records, dropped} -- ahead of the outcomes of tasks
        that ended after those records, so a task's records come before its result
    scheduler (events extension): keeps the batch (the last 1,000 of the topic) and pushes it
    client loop: reemit -> each record rebuilt (make_record: ``record.worker``,
        ``record.task_key``, the message prefixed "[worker address] ") and handed to the
        client's logger of its name, if that logger is enabled for its level: the client's
        filters and handlers (caplog, a notebook's) see it as if it were logged there; a count
        of dropped records becomes one WARNING record on the forwarded logger
    client.unforward_logging("mylib") or the client goes -> the plugin is unregistered:
        teardown removes the handler on every worker

When records come faster than they can leave, nothing blocks the task and nothing grows
without bound: a worker forwards at most ``RATE`` records a second per forwarded logger
(``BURST`` at once, then the rate), drops the others and counts them; at most ``BURST``
records wait for the worker's loop (a loop held up long enough drops the oldest, counted
too); the count reaches the client as one WARNING on the forwarded logger, at most once a
second per worker. Each batch is one event: the scheduler pushes it to the client at once
and keeps the last 1,000 of the topic (``client.get_events``; older ones go, the store is
bounded). A client's loop that re-emits slower than the batches come lets them queue in the
scheduler's connection to it, which drops a client that stops reading altogether
(``comm.py``, back-pressure); the rate per worker keeps that far off.

A worker in the client's own process (``LocalCluster(processes=False)``) shares the client's
loggers: its tasks' records reach the client's handlers directly, and the client does not
re-emit them (``process`` names the process a batch comes from). Nothing loops: a record
the client re-emits is marked (``FORWARDED``) and is not a task's, and a record made while
a handler forwards (a ``__str__`` that logs, say) is not forwarded.

>>> log = logging.getLogger("xsched-doctest.forwarding")
>>> record = log.makeRecord(log.name, logging.WARNING, "f.py", 3, "%d%% done", (50,), None)
>>> item = record_to_dict(record)
>>> item["msg"], item["levelname"]
('50% done', 'WARNING')
>>> again = make_record(item, "tcp://127.0.0.1:40211", "inc-1")
>>> again.getMessage(), again.worker, again.task_key
('[tcp://127.0.0.1:40211] 50% done', 'tcp://127.0.0.1:40211', 'inc-1')
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Mapping

from .plugins import WorkerPlugin
from .task_context import current_key, process_token, thread_state

__all__ = ["ForwardLogging", "ForwardingHandler", "record_to_dict", "make_record", "reemit", "check_level",
           "check_logger_name", "forwarding_topic", "plugin_name", "RATE", "BURST", "MAX_TEXT", "FORWARDED"]

#: records a worker forwards per second and forwarded logger, sustained ...
RATE = 1000
#: ... and at once (also the most waiting for the worker's loop): beyond, records are dropped and counted
BURST = 10_000
#: seconds between two counts of dropped records a worker reports (one WARNING each, at the client)
REPORT_INTERVAL = 1.0
#: characters of a message (and of a traceback) that travel; the rest is cut, saying how much
MAX_TEXT = 32 * 1024
#: characters of an ``extra`` value's text
MAX_EXTRA_TEXT = 1024
#: the attribute marking a record a client re-emitted (a worker never forwards it again)
FORWARDED = "xsched_forwarded"
TOPIC_PREFIX = "xsched-forward-logging-"

#: the attributes of a record that travel as they are (the message travels formatted, as ``msg``)
FIELDS = ("name", "levelno", "levelname", "pathname", "filename", "module", "lineno", "funcName", "created",
          "msecs", "thread", "threadName", "process", "processName")
#: what a LogRecord has of its own: the rest of its attributes are a user's ``extra``
_STANDARD = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "taskName"}
#: names an ``extra`` may not take in a re-emitted record
_RESERVED = _STANDARD | {"worker", "task_key", FORWARDED}

_guard = threading.local()  # .on while this thread forwards a record: what it logs meanwhile is not forwarded


# ---------------------------------------------------------------------- arguments
def check_logger_name(logger_name) -> str | None:
    """The name of the logger to forward; None for the root logger (also ``""`` and ``"root"``).

    >>> check_logger_name("mylib"), check_logger_name(None), check_logger_name("root")
    ('mylib', None, None)
    >>> check_logger_name(3)
    Traceback (most recent call last):
    ...
    TypeError: forward_logging takes a logger's name (a string, or None for the root logger), not int
    """
    if logger_name is None:
        return None
    if not isinstance(logger_name, str):
        raise TypeError("forward_logging takes a logger's name (a string, or None for the root logger), "
                        f"not {type(logger_name).__name__}")
    if len(logger_name) > 512:
        raise ValueError(f"forward_logging takes a logger name of at most 512 characters, not {len(logger_name)}")
    return None if logger_name in ("", "root") else logger_name


def check_level(level) -> int:
    """A logging level as a number, from a number or a level's name (``"INFO"``, ``"warning"``).

    >>> check_level(logging.INFO), check_level("warning"), check_level(0)
    (20, 30, 0)
    >>> check_level("LOUD")
    Traceback (most recent call last):
    ...
    ValueError: level='LOUD' is not a logging level: give a number or one of CRITICAL, DEBUG, ...
    """
    if isinstance(level, bool) or not isinstance(level, (int, str)):
        raise TypeError(f"level takes a logging level (logging.INFO, or a name like 'INFO'), not "
                        f"{type(level).__name__}")
    if isinstance(level, str):
        names = logging.getLevelNamesMapping()
        if level.upper() not in names:
            raise ValueError(f"level={level!r} is not a logging level: give a number or one of "
                             f"{', '.join(sorted(names))}")
        return names[level.upper()]
    if level < 0:
        raise ValueError(f"level must be a logging level (a number >= 0), not {level}")
    return level


def forwarding_topic(client_id: str) -> str:
    """The events topic on which the workers send the records a client forwards.

    >>> forwarding_topic("client-1a2b")
    'xsched-forward-logging-client-1a2b'
    """
    return TOPIC_PREFIX + client_id


def plugin_name(client_id: str, logger_name: str | None) -> str:
    """The name of the worker plugin forwarding ``logger_name`` for a client.

    >>> plugin_name("client-1a2b", None), plugin_name("client-1a2b", "mylib")
    ('forward-logging-client-1a2b-root', 'forward-logging-client-1a2b-mylib')
    """
    return f"forward-logging-{client_id}-{logger_name or 'root'}"


def _number(value, default) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else f"{default:g}"


def _describe(logger_name: str | None) -> str:
    return "the root logger" if logger_name is None else f"the logger {logger_name!r}"


# ---------------------------------------------------------------------- the worker's side
def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters cut]"


def _plain(value):
    """An ``extra`` value as msgpack carries it: numbers, strings, bools and None as they are,
    anything else as its (cut) repr."""
    if value is None or isinstance(value, (bool, float)):
        return value
    if isinstance(value, int):
        return value if -2**63 <= value < 2**64 else repr(value)
    if isinstance(value, str):
        return _cut(value, MAX_EXTRA_TEXT)
    try:
        return _cut(repr(value), MAX_EXTRA_TEXT)
    except Exception:  # noqa: BLE001 - a repr that raises
        return f"<{type(value).__name__} whose repr failed>"


def _message(record: logging.LogRecord) -> str:
    try:
        return record.getMessage()
    except Exception as e:  # noqa: BLE001 - arguments that do not fit the format: say so, as logging would not
        try:
            return f"{record.msg!s} (with arguments {record.args!r}, which do not format: {type(e).__name__}: {e})"
        except Exception:  # noqa: BLE001
            return f"<a message of {record.name} that could not be formatted: {type(e).__name__}>"


def record_to_dict(record: logging.LogRecord, key: str | None = None, limit: int = MAX_TEXT) -> dict:
    """A log record as it travels (msgpack): its attributes (``FIELDS``), the message formatted
    (so arguments that would not pickle never have to), the traceback of ``exc_info`` and the
    stack of ``stack_info`` as text, the user's ``extra`` attributes as plain values, and the
    task's ``key``. Texts longer than ``limit`` characters are cut, saying so.

    >>> log = logging.getLogger("xsched-doctest.forwarding")
    >>> import sys
    >>> try:
    ...     1 / 0
    ... except ZeroDivisionError:
    ...     record = log.makeRecord(log.name, logging.ERROR, "f.py", 1, "failed on %r", (object,), sys.exc_info(),
    ...                             extra={"batch": 7, "shape": (2, 3)})
    >>> item = record_to_dict(record, "inc-1")
    >>> item["msg"], item["exc_text"].splitlines()[-1], item["extra"], item["key"]
    ("failed on <class 'object'>", 'ZeroDivisionError: division by zero', {'batch': 7, 'shape': '(2, 3)'}, 'inc-1')
    """
    out = {f: getattr(record, f, None) for f in FIELDS}
    out["name"] = str(out["name"])
    out["levelno"] = int(out["levelno"]) if isinstance(out["levelno"], int) else logging.WARNING
    for f in ("pathname", "filename", "module", "funcName", "threadName", "processName", "levelname"):
        if out[f] is not None and not isinstance(out[f], str):
            out[f] = str(out[f])
    for f in ("lineno", "thread", "process"):
        if not isinstance(out[f], int) or not -2**63 <= out[f] < 2**64:
            out[f] = None
    for f in ("created", "msecs"):
        if not isinstance(out[f], (int, float)):
            out[f] = None
    out["msg"] = _cut(_message(record), limit)
    exc_text = record.exc_text
    if not exc_text and record.exc_info and record.exc_info[0] is not None:
        try:
            exc_text = logging.Formatter().formatException(record.exc_info)
        except Exception as e:  # noqa: BLE001
            exc_text = f"<a traceback that could not be formatted: {type(e).__name__}: {e}>"
    out["exc_text"] = _cut(exc_text, limit) if isinstance(exc_text, str) and exc_text else None
    out["stack_info"] = (_cut(record.stack_info, limit)
                         if isinstance(record.stack_info, str) and record.stack_info else None)
    extra = {k: _plain(v) for k, v in record.__dict__.items()
             if k not in _STANDARD and not k.startswith("_") and isinstance(k, str)}
    if extra:
        out["extra"] = extra
    out["key"] = key
    return out


class ForwardingHandler(logging.Handler):
    """The handler ``ForwardLogging`` adds to a logger on a worker: it keeps what the records
    of this worker's tasks say, and hands them to the worker's loop in batches (see the module).

    ``worker`` needs ``address`` and ``_log_event(topic, producer)``; ``take()`` is the
    producer: the batch of what waits, or None.
    """

    def __init__(self, worker, topic: str, fid: str, logger_name: str | None, level: int = logging.NOTSET,
                 rate: float = RATE, burst: int = BURST):
        super().__init__(level)
        self.worker = worker
        self.topic = topic
        self.fid = fid
        self.logger_name = logger_name
        self.rate = float(rate)
        self.burst = int(burst)
        # forwarding xsched's own records only when an xsched logger is the one forwarded
        self.own = logger_name is not None and (logger_name == "xsched" or logger_name.startswith("xsched."))
        self.closed = False
        self._mutex = threading.Lock()  # (not Handler.lock: emit runs without it, see handle)
        self._pending: deque = deque(maxlen=max(1, self.burst))
        self._armed = False  # take() is with the worker's outgoing events, not yet called
        self._dropped = 0
        self._reported = float("-inf")  # when a count of dropped records last left
        self._report_timer = None  # (the loop's TimerHandle) a count waits to be reported
        self._tokens = float(self.burst)
        self._last = time.monotonic()

    def __repr__(self) -> str:
        return f"<ForwardingHandler {_describe(self.logger_name)} level={logging.getLevelName(self.level)}>"

    def handle(self, record: logging.LogRecord) -> bool:
        """Filters, then ``emit``, without the handler's lock: formatting runs user code (a
        ``__str__``), which must not wait for other threads logging here."""
        rv = self.filter(record)
        if rv:
            self.emit(record)
        return bool(rv)

    def _wanted(self, record: logging.LogRecord) -> str | None:
        """The key of the task of this worker that emitted ``record`` here, if it is to go."""
        if self.closed or getattr(_guard, "on", False) or getattr(record, FORWARDED, False):
            return None
        if getattr(thread_state, "worker", None) is not self.worker:
            return None  # not in a task, or in a task of another worker of this process
        name = record.name
        if not self.own and isinstance(name, str) and (name == "xsched" or name.startswith("xsched.")):
            return None
        return current_key()

    def emit(self, record: logging.LogRecord) -> None:
        key = self._wanted(record)
        if key is None:
            return
        _guard.on = True
        try:
            with self._mutex:
                now = time.monotonic()
                self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.rate)
                self._last = now
                keep = self._tokens >= 1.0
                if keep:
                    self._tokens -= 1.0
                else:
                    self._dropped += 1
            if not keep:
                return  # (counted: the next batch, or the report timer, tells the client)
            item = record_to_dict(record, key)
            with self._mutex:
                if len(self._pending) == self._pending.maxlen:
                    self._dropped += 1  # (the oldest goes)
                self._pending.append(item)
            self._arm()
        except Exception:  # noqa: BLE001 - logging's own way: a note on stderr, the task goes on
            self.handleError(record)
        finally:
            _guard.on = False

    def _arm(self) -> None:
        """Have ``take`` called as the worker's events next leave (once however many records wait)."""
        with self._mutex:
            if self._armed or self.closed:
                return
            self._armed = True
        self.worker._log_event(self.topic, self.take)

    def _report_now(self) -> None:
        self._report_timer = None
        self._arm()

    def take(self) -> dict | None:
        """(On the worker's loop, as its events leave.) The batch of waiting records: ``{worker,
        process, fid, logger, records, dropped, rate, burst}``, or None when there is none.
        The count of dropped records goes at most once every ``REPORT_INTERVAL`` (a timer
        on the loop sends what is left). Never raises."""
        try:
            now = time.monotonic()
            with self._mutex:
                records = list(self._pending)
                self._pending.clear()
                self._armed = False
                dropped = 0
                if self._dropped and now - self._reported >= REPORT_INTERVAL:
                    dropped, self._dropped, self._reported = self._dropped, 0, now
                later = self._dropped and self._report_timer is None and not self.closed
            if later:
                try:
                    self._report_timer = asyncio.get_running_loop().call_later(
                        max(0.0, self._reported + REPORT_INTERVAL - now), self._report_now)
                except RuntimeError:  # no loop here (a test calling take by hand)
                    pass
            if self.closed or (not records and not dropped):
                return None
            return {"worker": str(getattr(self.worker, "address", None)), "process": process_token(),
                    "fid": self.fid, "logger": self.logger_name, "records": records, "dropped": dropped,
                    "rate": self.rate, "burst": self.burst}
        except Exception:  # noqa: BLE001 - this runs inside the worker's drain: it must not break it
            return None


class ForwardLogging(WorkerPlugin):
    """The worker plugin behind ``client.forward_logging``: on each worker it adds a
    ``ForwardingHandler`` to the logger ``logger_name`` (None: the root logger), sending
    records at ``level`` or above on ``topic``; teardown removes it. ``fid`` names this
    forwarding (a client drops batches of one it stopped).

    >>> plugin = ForwardLogging("mylib", logging.WARNING, forwarding_topic("client-1a2b"))
    >>> plugin
    <ForwardLogging the logger 'mylib' level=WARNING topic='xsched-forward-logging-client-1a2b'>
    """

    def __init__(self, logger_name: str | None, level: int, topic: str, fid: str | None = None,
                 rate: float = RATE, burst: int = BURST):
        self.logger_name = logger_name
        self.level = level
        self.topic = topic
        self.fid = fid or uuid.uuid4().hex
        self.rate = rate
        self.burst = burst
        self.handler: ForwardingHandler | None = None

    def __repr__(self) -> str:
        return (f"<ForwardLogging {_describe(self.logger_name)} level={logging.getLevelName(self.level)} "
                f"topic={self.topic!r}>")

    def setup(self, worker):
        self.handler = ForwardingHandler(worker, self.topic, self.fid, self.logger_name, self.level,
                                         self.rate, self.burst)
        logging.getLogger(self.logger_name).addHandler(self.handler)

    def teardown(self, worker):
        handler, self.handler = self.handler, None
        if handler is not None:
            handler.closed = True
            logging.getLogger(self.logger_name).removeHandler(handler)
            if handler._report_timer is not None:
                handler._report_timer.cancel()


# ---------------------------------------------------------------------- the client's side
def make_record(item: Mapping, worker: str, key: str | None = None) -> logging.LogRecord:
    """A record rebuilt from ``record_to_dict``'s map, sent by ``worker``: the message
    prefixed with ``[worker]``, ``record.worker`` and ``record.task_key`` set, the traceback
    text in ``exc_text`` (formatters print it), the user's ``extra`` back as attributes
    (but for names a record has of its own), and marked ``FORWARDED``.

    >>> record = make_record({"name": "mylib", "levelno": 40, "msg": "boom", "exc_text": "Traceback ...",
    ...                       "extra": {"batch": 7, "worker": "not this"}}, "tcp://10.0.0.5:4000", "f-1")
    >>> logging.Formatter("%(levelname)s %(name)s %(message)s").format(record)
    'ERROR mylib [tcp://10.0.0.5:4000] boom\\nTraceback ...'
    >>> record.batch, record.worker
    (7, 'tcp://10.0.0.5:4000')
    """
    extra = item.get("extra")
    attrs = {k: v for k, v in extra.items() if isinstance(k, str) and k not in _RESERVED} \
        if isinstance(extra, Mapping) else {}
    for f in FIELDS:
        v = item.get(f)
        if v is not None:
            attrs[f] = v
    levelno = item.get("levelno")
    levelno = levelno if isinstance(levelno, int) and not isinstance(levelno, bool) else logging.WARNING
    attrs["levelno"] = levelno
    attrs["levelname"] = str(item.get("levelname") or logging.getLevelName(levelno))
    attrs["name"] = str(item.get("name") or "root")
    attrs["msg"] = f"[{worker}] {item.get('msg', '')}"
    attrs["args"] = None
    attrs["exc_info"] = None
    attrs["exc_text"] = item.get("exc_text") if isinstance(item.get("exc_text"), str) else None
    attrs["stack_info"] = item.get("stack_info") if isinstance(item.get("stack_info"), str) else None
    attrs["worker"] = worker
    attrs["task_key"] = key if key is not None else item.get("key")
    attrs[FORWARDED] = True
    return logging.makeLogRecord(attrs)


def reemit(batch, live: Mapping) -> int:
    """Hand the records of one batch to this process's loggers; how many records it held (and
    one more for a count of dropped records), whatever the loggers' levels let through.

    ``live``: the client's forwardings, logger name (None: root) -> fid; a batch of a
    forwarding no longer live, or from this very process, is left alone. Each record goes
    to the logger of its name if that logger is enabled for its level (``Logger.handle``:
    its filters and handlers, and its ancestors'). A count of dropped records becomes one
    WARNING record on the forwarded logger.

    >>> seen = []
    >>> class Keep(logging.Handler):
    ...     def emit(self, record):
    ...         seen.append(self.format(record))
    >>> log = logging.getLogger("xsched-doctest.reemit"); log.addHandler(Keep()); log.setLevel(logging.INFO)
    >>> batch = {"worker": "tcp://10.0.0.5:4000", "process": "elsewhere", "fid": "f1", "logger": log.name,
    ...          "records": [{"name": log.name, "levelno": 20, "msg": "step 1", "key": "f-1"}], "dropped": 2,
    ...          "rate": 1000, "burst": 10000}
    >>> reemit(batch, {log.name: "f1"}), reemit(batch, {log.name: "f2"})
    (2, 0)
    >>> seen[0]
    '[tcp://10.0.0.5:4000] step 1'
    >>> print(seen[1])
    [tcp://10.0.0.5:4000] 2 log records of tasks were not forwarded: they came faster than the
    worker sends them (at most 1000 a second, 10000 at once)
    """
    if not isinstance(batch, Mapping):
        return 0
    logger_name = batch.get("logger")
    if live.get(logger_name) != batch.get("fid") or batch.get("process") == process_token():
        return 0
    worker = str(batch.get("worker"))
    n = 0
    records = batch.get("records")
    for item in records if isinstance(records, list) else ():
        if not isinstance(item, Mapping):
            continue
        try:
            record = make_record(item, worker)
            target = logging.getLogger(None if record.name == "root" else record.name)
            if target.isEnabledFor(record.levelno):
                target.handle(record)
            n += 1
        except Exception:  # noqa: BLE001 - a malformed record: the others still go
            logging.getLogger("xsched.client").debug("a forwarded log record could not be rebuilt", exc_info=True)
    dropped = batch.get("dropped")
    if isinstance(dropped, int) and not isinstance(dropped, bool) and dropped > 0:
        target = logging.getLogger(logger_name)
        rate, burst = batch.get("rate"), batch.get("burst")
        text = (f"{dropped} log records of tasks were not forwarded: they came faster than the worker sends "
                f"them (at most {_number(rate, RATE)} a second, {_number(burst, BURST)} at once)")
        record = make_record({"name": target.name, "levelno": logging.WARNING, "msg": text}, worker)
        if target.isEnabledFor(logging.WARNING):
            target.handle(record)
        n += 1
    return n
