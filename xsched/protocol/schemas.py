"""What each wire message may contain: one schema per op and direction, checked once on receipt.

Every listener checks a message against its table before any handler sees it
(``comm.Listener``/``comm.Connection`` take ``schemas=``), so handlers may rely on the
fields they read: a required field is there, every field has its declared type and
bounds. A message that fails gets an error reply when it carries a request id, is logged
once per peer, op and kind of fault (``BadMessage.kind``), and is dropped; nothing else
happens. The tables:

==========================  =====================================  ============================
table                       who receives                           from
==========================  =====================================  ============================
``TO_SCHEDULER``            the scheduler's listener               clients and workers
``TO_WORKER``               a worker's listener (its address)      clients and other workers
``WORKER_FROM_SCHEDULER``   a worker's connection to the scheduler the scheduler
``CLIENT_FROM_SCHEDULER``   a client's connection to the scheduler the scheduler
``REPLIES``                 a client, the reply to its request    the scheduler
==========================  =====================================  ============================

Why hand-written: messages are msgpack, so values are exactly ``str``, ``bytes``,
``int``, ``float``, ``bool``, ``None``, ``list`` and ``dict``, and a check is a handful of
``type(v) is ...`` tests. JSON-schema libraries know neither bytes nor the difference
between int and bool, and cost several times more per message on the hot ops
(task-finished, key-in-memory); lists of keys are checked at C speed
(``set(map(type, keys))``).

Priorities are lists of finite numbers (int or float, not bool, not str): the scheduler
and workers compare the priorities of every client's tasks in one heap, so a string at
some position would meet a number at the same position of another task's priority and
raise TypeError deep inside the scheduler, long after the message was accepted.

>>> TO_SCHEDULER.check({"op": "task-finished", "key": "x", "nbytes": 8})
>>> TO_SCHEDULER.check({"op": "task-finished", "nbytes": 8})
Traceback (most recent call last):
...
xsched.protocol.schemas.BadMessage: task-finished: the field 'key' is missing (a key string)
>>> TO_SCHEDULER.check({"op": "update-graph", "tasks": [{"key": "x", "priority": [0, "a"]}], "keys": ["x"]})
Traceback (most recent call last):
...
xsched.protocol.schemas.BadMessage: update-graph: tasks[0].priority[1] must be a finite number (int or float), not str 'a'
"""

from __future__ import annotations

import math
from functools import partial
from itertools import chain, repeat
from operator import is_, is_not, itemgetter
from typing import Any, Callable, Iterable

from . import ops

__all__ = [
    "ProtocolError", "BadMessage", "Spec", "Schema", "Table", "TO_SCHEDULER", "TO_WORKER",
    "WORKER_FROM_SCHEDULER", "CLIENT_FROM_SCHEDULER", "REPLIES", "DASHBOARD", "OPS", "FRAMING_OPS",
    "TELEMETRY_PARTS",
]


class ProtocolError(ValueError):
    """A peer sent bytes that are not an xsched message; the message is dropped.

    ``kind`` names the fault for logging once per peer and kind; ``header`` is the decoded
    header when there was one (so a request id can still be answered).
    """

    def __init__(self, message: str, kind: str = "garbage", header: dict | None = None):
        super().__init__(message)
        self.kind = kind
        self.header = header


class BadMessage(ProtocolError):
    """A well-formed message whose op is not served here, or whose fields break its schema."""


# ---------------------------------------------------------------------- value specs
def _show(v: Any) -> str:
    """A short description of a bad value for an error message (never its whole content)."""
    name = type(v).__name__
    if isinstance(v, (list, dict, str, bytes)) and len(v) > 40:
        return f"{name} of length {len(v)}"
    text = repr(v)
    return f"{name} {text[:60]}{'...' if len(text) > 60 else ''}"


class Spec:
    """A kind of value: ``ok(v)`` is the fast test; ``why(v, path)`` explains a failure.

    ``many(values)``, when a spec has it, is ``all(map(ok, values))`` for a whole list at
    once, mostly at C speed (``set(map(type, values))``, ``max(map(len, values))``): a
    list of records (the 100,000 tasks of an update-graph) is then checked field by
    field over all records, not record by record. ``check_all`` uses it when there.
    """

    __slots__ = ("ok", "what", "_why", "many")

    def __init__(self, ok: Callable[[Any], bool], what: str, why: Callable[[Any, str], str] | None = None,
                 many: Callable[[list], bool] | None = None):
        self.ok, self.what, self._why, self.many = ok, what, why, many

    def check_all(self, values: list) -> bool:
        """Whether every item of the list ``values`` is ok."""
        return self.many(values) if self.many is not None else all(map(self.ok, values))

    def why(self, v: Any, path: str) -> str:
        if self._why is not None:
            found = self._why(v, path)
            if found:
                return found
        return f"{path} must be {self.what}, not {_show(v)}"

    def __repr__(self) -> str:
        return f"<Spec {self.what}>"


def _sized_many(typ: type, max_len: int) -> Callable[[list], bool]:
    """``many`` of a spec "exactly ``typ``, of at most ``max_len`` items"."""
    def many(vs: list) -> bool:
        return not vs or (set(map(type, vs)) == {typ} and max(map(len, vs)) <= max_len)

    return many


def text(max_len: int = 4096, what: str | None = None) -> Spec:
    return Spec(lambda v: type(v) is str and len(v) <= max_len, what or f"a string of at most {max_len} characters",
                many=_sized_many(str, max_len))


def integer(lo: int = 0, hi: int = 2**63 - 1, what: str | None = None) -> Spec:
    def many(vs: list) -> bool:
        return not vs or (set(map(type, vs)) == {int} and min(vs) >= lo and max(vs) <= hi)

    return Spec(lambda v: type(v) is int and lo <= v <= hi, what or f"an integer in [{lo}, {hi}]", many=many)


def number(lo: float = -math.inf, hi: float = math.inf, what: str | None = None) -> Spec:
    def ok(v):
        t = type(v)
        return (t is int or (t is float and math.isfinite(v))) and lo <= v <= hi

    def many(vs: list) -> bool:
        if not vs:
            return True
        if not set(map(type, vs)) <= {int, float}:
            return False
        try:
            if not all(map(math.isfinite, vs)):
                return False
        except OverflowError:  # an int too large for a float: ok() never converts ints
            return all(map(ok, vs))
        return (lo == -math.inf or min(vs) >= lo) and (hi == math.inf or max(vs) <= hi)

    return Spec(ok, what or ("a finite number" if lo == -math.inf else f"a finite number >= {lo:g}"), many=many)


def binary(max_len: int = 2**40) -> Spec:
    return Spec(lambda v: type(v) is bytes and len(v) <= max_len, "bytes", many=_sized_many(bytes, max_len))


def one_of(*values) -> Spec:
    allowed = frozenset(values)
    return Spec(lambda v: type(v) is str and v in allowed, "one of " + ", ".join(map(repr, sorted(allowed))))


def either(*specs: Spec) -> Spec:
    oks = [s.ok for s in specs]
    return Spec(lambda v: any(ok(v) for ok in oks), " or ".join(s.what for s in specs))


BOOL = Spec(lambda v: type(v) is bool, "true or false", many=lambda vs: set(map(type, vs)) <= {bool})
SCALAR = Spec(lambda v: v is None or type(v) in (str, int, float, bool), "a string, number, bool or null")


def list_of(item: Spec, max_len: int, fast: Callable[[list], bool] | None = None) -> Spec:
    """A list of at most ``max_len`` items; ``fast`` tests all items at once (C speed).

    ``fast`` (or else ``item.many``) must hold for a list exactly when it holds for each
    item: ``many`` of several lists checks all their items in one call.
    """
    iok = item.ok
    each = fast or item.many or (lambda v: all(map(iok, v)))

    def ok(v):
        return type(v) is list and len(v) <= max_len and each(v)

    def many(vs: list) -> bool:
        return not vs or (set(map(type, vs)) == {list} and max(map(len, vs)) <= max_len
                          and each(list(chain.from_iterable(vs))))

    def why(v, path):
        if type(v) is list and len(v) > max_len:
            return f"{path} has {len(v)} items, more than the {max_len} allowed"
        if type(v) is list:
            for i, x in enumerate(v):
                if not iok(x):
                    return item.why(x, f"{path}[{i}]")
        return ""

    return Spec(ok, f"a list of at most {max_len} items, each {item.what}", why, many)


def dict_of(key: Spec, value: Spec, max_len: int) -> Spec:
    kok, vok = key.ok, value.ok

    def ok(v):
        return type(v) is dict and len(v) <= max_len and all(kok(k) and vok(x) for k, x in v.items())

    def why(v, path):
        if type(v) is dict and len(v) > max_len:
            return f"{path} has {len(v)} entries, more than the {max_len} allowed"
        if type(v) is dict:
            for k, x in v.items():
                if not kok(k):
                    return key.why(k, f"a key of {path}")
                if not vok(x):
                    return value.why(x, f"{path}[{k!r:.60}]")
        return ""

    return Spec(ok, f"a map of at most {max_len} entries, {key.what} -> {value.what}", why)


class Field:
    """A field of a message or record: its spec, whether it must be there, whether null is allowed."""

    __slots__ = ("spec", "required", "null")

    def __init__(self, spec: Spec, required: bool, null: bool):
        self.spec, self.required, self.null = spec, required, null


def req(spec: Spec) -> Field:
    """Must be present and not null."""
    return Field(spec, True, False)


def opt(spec: Spec) -> Field:
    """May be absent (the handler supplies a default), but not null."""
    return Field(spec, False, False)


def maybe(spec: Spec) -> Field:
    """May be absent or null."""
    return Field(spec, False, True)


_MISSING = object()


def _fields(fields: dict[str, Spec | Field]) -> tuple:
    out = []
    for name, f in fields.items():
        if isinstance(f, Spec):
            f = req(f)
        out.append((name, f.spec.ok, f.required, f.null, f.spec))
    return tuple(out)


def _first_problem(fields: tuple, h: dict, path: str) -> tuple[str, str] | None:
    """(kind, explanation) of the first field of ``h`` that breaks ``fields``, or None.

    ``path`` names ``h`` inside the message ("" for the message itself)."""
    where = f"{path}: " if path else ""
    for name, ok, required, null, spec in fields:
        v = h.get(name, _MISSING)
        if v is _MISSING:
            if required:
                return f"missing {name}", f"{where}the field {name!r} is missing ({spec.what})"
        elif v is None:
            if not null:
                return f"null {name}", f"{where}the field {name!r} is null; it must be {spec.what}" + (
                    "" if required else " or left out")
        elif not ok(v):
            return f"bad {name}", spec.why(v, f"{path}.{name}" if path else name)
    return None


def record(fields: dict[str, Spec | Field], extra: Spec | None = None, max_len: int = 256,
           what: str = "a map") -> Spec:
    """A map with named fields; other entries (at most ``max_len`` in all) must fit ``extra``
    (any value when ``extra`` is None: senders may add fields a receiver ignores).

    Its ``many`` (records without ``extra``) checks a list of such maps one field at a
    time: the field's values of every map, then the spec's ``many`` on them all at once.
    """
    fs = _fields(fields)
    known = frozenset(fields)
    eok = extra.ok if extra is not None else None

    def ok(v):
        if type(v) is not dict or len(v) > max_len:
            return False
        get = v.get
        for name, fok, required, null, _ in fs:
            x = get(name, _MISSING)
            if x is _MISSING:
                if required:
                    return False
            elif x is None:
                if not null:
                    return False
            elif not fok(x):
                return False
        if eok is not None:
            for k, x in v.items():
                if type(k) is not str or (k not in known and not eok(x)):
                    return False
        return True

    def why(v, path):
        if type(v) is dict and len(v) > max_len:
            return f"{path} has {len(v)} entries, more than the {max_len} allowed"
        if type(v) is not dict:
            return ""
        found = _first_problem(fs, v, path)
        if found:
            return found[1]
        if eok is not None:
            for k, x in v.items():
                if type(k) is not str:
                    return f"{path} has a key {_show(k)}; keys must be strings"
                if k not in known and not eok(x):
                    return extra.why(x, f"{path}.{k:.60}")
        return ""

    columns = tuple((name, required, null, spec.check_all) for name, _, required, null, spec in fs)

    def many(vs: list) -> bool:
        if not vs:
            return True
        if set(map(type, vs)) != {dict} or max(map(len, vs)) > max_len:
            return False
        shapes = set(map(tuple, vs))  # the distinct lists of field names: usually one or two
        everywhere = set.intersection(*map(set, shapes))
        somewhere = set().union(*shapes)
        for name, required, null, check_all in columns:
            if name in everywhere:
                col = list(map(itemgetter(name), vs))
            elif required:
                return False
            elif name in somewhere:
                col = [v[name] for v in vs if name in v]
            else:
                continue
            if any(map(is_, col, repeat(None))):  # (by identity: values may define ==)
                if not null:
                    return False
                col = list(filter(partial(is_not, None), col))
            if col and not check_all(col):
                return False
        return True

    return Spec(ok, what, why, many if extra is None else None)


# ---------------------------------------------------------------------- the values of xsched
#: Bounds: far beyond anything a real cluster sends (a graph of 16 million tasks, a key of
#: 64 KiB), small enough that a confused or hostile peer is told at once.
MAX_ITEMS = 2**24
MAX_KEY = 2**16
MAX_NAME = 4096
MAX_PRIORITY = 64
MAX_RESOURCES = 256
MAX_TEXT = 2**24
#: Bytes one Queue item or Variable value may pickle to (futures and small values; larger
#: data belongs on the workers: client.scatter, then share the future).
MAX_SHARED_VALUE = 2**20
#: Lock names one MultiLock may take at once.
MAX_LOCK_NAMES = 1024


def _keys_fast(v: list) -> bool:
    return not v or (set(map(type, v)) == {str} and max(map(len, v)) <= MAX_KEY)


def _numbers_fast(v: list) -> bool:
    return not v or (set(map(type, v)) <= {int, float} and all(map(math.isfinite, v)))


KEY = text(MAX_KEY, "a key string")
NAME = text(MAX_NAME)
ADDRESS = text(MAX_NAME, "an address string")
KEYS = list_of(KEY, MAX_ITEMS, _keys_fast)
NBYTES = integer(0, 2**63 - 1, "a byte count (an integer >= 0)")
TIME = number(what="a finite number (seconds)")
SECONDS = number(0, what="a finite number of seconds >= 0")
PRIORITY = list_of(number(what="a finite number (int or float)"), MAX_PRIORITY, _numbers_fast)
PRIORITY.what = "a list of at most 64 finite numbers (int or float; never strings: all priorities share one order)"
RESOURCES = dict_of(text(256, "a resource name"), number(0, what="a finite amount >= 0"), MAX_RESOURCES)
LIMITS = dict_of(text(256, "a limit name"), integer(0, 2**31 - 1), MAX_RESOURCES)
WORKER_NAMES = list_of(either(text(MAX_NAME), integer(-2**63, 2**63 - 1)), 2**16)
WHO_HAS = dict_of(KEY, list_of(ADDRESS, 2**16), MAX_ITEMS)
KEY_NBYTES = dict_of(KEY, NBYTES, MAX_ITEMS)
STIMULUS = text(1024, "a stimulus id string")
TEXT = text(MAX_TEXT)
PICKLED = binary()
FUNCTION_ID = binary(64)
FUNCTIONS = dict_of(FUNCTION_ID, PICKLED, 4096)  # function id -> pickled function (a graph's, once)
INLINE = binary(64 * 1024)  # a small result sent along with task-finished / key-in-memory
UID = text(256, "an id string")
PROTOCOL = integer(0, 2**31 - 1, "a protocol version (an integer >= 0)")
VERSION = text(256, "a version string")

TASK = record({
    "key": KEY, "run_spec": maybe(PICKLED), "deps": opt(KEYS), "priority": opt(PRIORITY),
    "resources": maybe(RESOURCES), "workers": maybe(WORKER_NAMES), "allow_other_workers": maybe(BOOL),
    "retries": maybe(integer(0, 2**31 - 1)), "limits": maybe(LIMITS),
}, what="a task: a map with a string 'key' (and run_spec, deps, priority, resources, workers, ...)")

# A graph as columns (the calls of a delayed graph): task i is keys[i] with spec specs[i]
# (null: a key its dependents name, defined by a task entry or earlier), depending on the
# tasks at the indices deps[i]; the scheduler orders them (graph.order.order_indexed).
SPEC_OR_NULL = Spec(lambda v: v is None or type(v) is bytes, "bytes or null",
                    many=lambda vs: set(map(type, vs)) <= {bytes, type(None)})
INDICES = list_of(integer(0, MAX_ITEMS), MAX_ITEMS)
COLUMNS = record({
    "keys": req(KEYS), "specs": req(list_of(SPEC_OR_NULL, MAX_ITEMS)), "deps": req(list_of(INDICES, MAX_ITEMS)),
    "priority": opt(PRIORITY),
}, what="a graph as columns: a map of keys, specs (bytes or null), deps (lists of indices into keys) "
        "and priority (what every task's priority starts with)")

#: an event's topic (xsched.log_event); a message may name several
TOPIC = text(MAX_NAME, "a topic name")
TOPICS = either(TOPIC, list_of(TOPIC, 256))
#: an event's message: whatever msgpack carries (the sender checked it packs)
ANY = Spec(lambda v: True, "any msgpack value")
PACKAGE_NAMES = list_of(text(256, "a package name"), 256)
METADATA_KEY = either(text(MAX_NAME), integer(-2**63, 2**63 - 1))
METADATA_KEYS = either(METADATA_KEY, list_of(METADATA_KEY, 64))
COUNT = integer(0, 2**31 - 1, "a count (an integer >= 0)")
#: what a telemetry request may ask for (scheduler/extensions/telemetry.py serves each)
TELEMETRY_PARTS = ("task-stream", "workers", "groups", "memory", "logs", "profile", "stacks")
WORKERS = either(ADDRESS, WORKER_NAMES)  # worker addresses or names
PLUGIN_NAME = text(1024, "a plugin name")

METRICS = record({
    "time": opt(TIME), "rss": opt(NBYTES), "managed": opt(NBYTES), "spilled": opt(NBYTES), "paused": opt(BOOL),
}, extra=SCALAR, max_len=1024, what="a map of metric name -> string, number, bool or null")


# ---------------------------------------------------------------------- messages
class Schema:
    """The fields of one op in one direction, and the payload objects it may carry."""

    __slots__ = ("op", "fields", "objects", "required_objects", "_fs")

    def __init__(self, op: str, fields: dict[str, Spec | Field] | None = None, objects: Iterable[str] = (),
                 required_objects: Iterable[str] = ()):
        self.op = op
        self.fields = dict(fields or {})
        self.fields.setdefault("stimulus_id", maybe(STIMULUS))
        self.required_objects = frozenset(required_objects)
        self.objects = frozenset(objects) | self.required_objects
        self._fs = _fields(self.fields)

    def check(self, h: dict) -> None:
        """Raise BadMessage naming the first field that breaks the schema."""
        get = h.get
        for name, ok, required, null, _ in self._fs:
            v = get(name, _MISSING)
            if v is _MISSING:
                if required:
                    break
            elif v is None:
                if not null:
                    break
            elif not ok(v):
                break
        else:
            objs = get("_objs")
            if objs is None:
                if self.required_objects:
                    raise BadMessage(f"{self.op}: the payload object(s) {sorted(self.required_objects)} are missing",
                                     "missing objects", h)
                return
            names = {o[0] for o in objs}  # (decode checked the shape)
            if names <= self.objects and self.required_objects <= names:
                return
            raise BadMessage(f"{self.op}: payload objects {sorted(names)} where {sorted(self.objects) or 'none'} "
                             f"are allowed and {sorted(self.required_objects) or 'none'} required",
                             "bad objects", h)
        kind, why = _first_problem(self._fs, h, "")
        raise BadMessage(f"{self.op}: {why}", kind, h)


class Table(dict):
    """op -> Schema for one receiver; ``check`` validates a whole message."""

    def __init__(self, name: str, schemas: Iterable[Schema]):
        super().__init__((s.op, s) for s in schemas)
        self.name = name

    def check(self, h: dict) -> None:
        schema = self.get(h["op"])
        if schema is None:
            raise BadMessage(f"{self.name} does not handle op {h['op']!r}; it handles {', '.join(sorted(self))}",
                             "unknown op", h)
        schema.check(h)


S = Schema
_PING = S(ops.PING)

#: clients and workers -> the scheduler's listener (extension ops included)
TO_SCHEDULER = Table("the scheduler", [
    _PING,
    # from clients
    # protocol, version: what the peer announces (protocol/versions.py); optional, so that a peer
    # from before versions hears the refusal rather than a schema error
    S(ops.REGISTER_CLIENT, {"client": maybe(NAME), "protocol": maybe(PROTOCOL), "version": maybe(VERSION)}),
    # parent: the key of the task that submitted this graph (from inside a task), for progress bars
    S(ops.UPDATE_GRAPH, {"tasks": opt(list_of(TASK, MAX_ITEMS)), "keys": opt(KEYS), "parent": maybe(KEY),
                       "functions": maybe(FUNCTIONS), "columns": maybe(COLUMNS)}),
    S(ops.CLIENT_DESIRES_KEYS, {"keys": opt(KEYS)}),
    S(ops.CLIENT_RELEASES_KEYS, {"keys": opt(KEYS)}),
    S(ops.CANCEL_KEYS, {"keys": opt(KEYS), "force": maybe(BOOL)}),
    S(ops.RETRY_KEYS, {"keys": opt(KEYS)}),
    S(ops.WHO_HAS, {"keys": opt(KEYS)}),
    S(ops.WHO_CAN_RUN, {"keys": opt(KEYS)}),
    S(ops.SCATTER_DONE, {"who_has": opt(WHO_HAS), "nbytes": opt(KEY_NBYTES)}),
    S(ops.CLOSE_CLIENT), S(ops.HEARTBEAT_CLIENT), S(ops.SCHEDULER_INFO), S(ops.MEMORY_HISTORY), S(ops.START_IPYTHON),
    S(ops.RUN_ON_SCHEDULER, objects=("args", "kwargs"), required_objects=("func",)),
    S(ops.RETIRE_WORKERS, {"workers": maybe(either(ADDRESS, WORKER_NAMES)), "close_workers": maybe(BOOL)}),
    # timeout: seconds the scheduler waits for the copies before answering with what is done (null: no limit)
    S(ops.REPLICATE, {"keys": KEYS, "n": maybe(integer(1, 2**31 - 1)), "workers": maybe(WORKERS),
                    "timeout": maybe(SECONDS)}),
    S(ops.REBALANCE, {"keys": maybe(KEYS), "workers": maybe(WORKERS), "timeout": maybe(SECONDS)}),
    S(ops.RESTART, {"timeout": maybe(either(number(0), text(64))), "environment": maybe(UID), "wait": maybe(BOOL)}),
    S(ops.RESTART_WORKERS, {"workers": WORKERS, "timeout": maybe(SECONDS)}),
    S(ops.SUBSCRIBE_PROGRESS, {"keys": KEYS, "sub": maybe(UID), "complete": maybe(BOOL)}),
    S(ops.UNSUBSCRIBE_PROGRESS, {"sub": maybe(UID)}),
    S(ops.PUBLISH_DATASET, {"name": text(MAX_NAME, "a non-empty dataset name"), "keys": opt(KEYS),
                          "override": maybe(BOOL)}, objects=("data",)),
    S(ops.GET_DATASET, {"name": maybe(NAME)}),
    S(ops.LIST_DATASETS),
    S(ops.UNPUBLISH_DATASET, {"name": maybe(NAME)}),
    S(ops.SET_METADATA, {"keys": METADATA_KEYS, "value": maybe(ANY)}),
    S(ops.GET_METADATA, {"keys": METADATA_KEYS}),
    S(ops.UPLOAD_FILE, {"filename": text(255, "a plain file name")}, objects=("data",)),
    S(ops.ENVIRONMENT_START, {"uid": UID}),
    S(ops.ENVIRONMENT_CHUNK, {"uid": UID, "seq": integer(-1, 2**31)}, objects=("data",)),
    S(ops.ENVIRONMENT_DONE, {"uid": UID, "sha256": maybe(text(128)), "nbytes": maybe(NBYTES)}),
    S(ops.FIRE_AND_FORGET, {"keys": KEYS}),
    S(ops.SHUTDOWN), S(ops.VERSIONS, {"packages": maybe(PACKAGE_NAMES)}),
    # plugins (the scheduler keeps worker and nanny plugins as frames; it unpickles scheduler plugins)
    S(ops.REGISTER_WORKER_PLUGIN, {"name": PLUGIN_NAME, "nanny": maybe(BOOL), "idempotent": maybe(BOOL),
                                   "owned": maybe(BOOL)},  # owned: unregistered when the client goes
      required_objects=("plugin",)),
    S(ops.UNREGISTER_WORKER_PLUGIN, {"name": PLUGIN_NAME, "nanny": maybe(BOOL)}),
    S(ops.REGISTER_SCHEDULER_PLUGIN, {"name": PLUGIN_NAME, "idempotent": maybe(BOOL)}, required_objects=("plugin",)),
    S(ops.UNREGISTER_SCHEDULER_PLUGIN, {"name": PLUGIN_NAME}),
    # events (also from workers: a task's xsched.log_event, print, warn)
    S(ops.LOG_EVENT, {"topic": TOPICS, "msg": maybe(ANY)}),
    S(ops.GET_EVENTS, {"topic": maybe(TOPIC)}),
    S(ops.SUBSCRIBE_TOPIC, {"topic": TOPIC}),
    S(ops.UNSUBSCRIBE_TOPIC, {"topic": TOPIC}),
    # diagnostics
    S(ops.GET_LOGS, {"n": maybe(COUNT)}),
    S(ops.GET_TASK_STREAM, {"start": maybe(TIME), "stop": maybe(TIME), "count": maybe(COUNT),
                          "since": maybe(integer(0)), "activity_since": maybe(integer(0))}),
    S(ops.HAS_WHAT, {"workers": maybe(WORKERS)}),
    S(ops.GET_NBYTES, {"keys": maybe(KEYS), "summary": maybe(BOOL)}),
    S(ops.PROCESSING, {"workers": maybe(WORKERS)}),
    S(ops.STORY, {"keys": KEYS}),
    S(ops.TASK_SPEC, {"key": KEY}),
    S(ops.DUMP_STATE),
    # telemetry (a dashboard's batched poll): parts wanted; since: the task-stream cursor;
    # memory_since: worker address -> the time of the last memory sample already seen;
    # logs_since: "scheduler" or a worker address -> the number of the next log record wanted
    S(ops.TELEMETRY, {"parts": maybe(list_of(one_of(*TELEMETRY_PARTS), 8)),
                    "since": maybe(integer(0)), "activity_since": maybe(integer(0)),
                    "memory_since": maybe(dict_of(ADDRESS, TIME, 2**16)),
                    "logs_since": maybe(dict_of(ADDRESS, integer(0), 2**16)),
                    "max_records": maybe(integer(1, 100_000)),
                    # restart these parts' history before answering (the profile pane's Reset)
                    "reset": maybe(list_of(one_of("profile"), 1))}),
    # coordination primitives (timeout: null waits for ever, 0 does not wait; worker: the
    # requester runs in a task there, so what it holds goes when that worker does)
    S(ops.LOCK_ACQUIRE, {"name": NAME, "lease": UID, "timeout": maybe(SECONDS), "worker": maybe(ADDRESS)}),
    S(ops.LOCK_RELEASE, {"name": NAME, "lease": UID, "abandon": maybe(BOOL)}),
    S(ops.MULTI_LOCK_ACQUIRE, {"names": list_of(NAME, MAX_LOCK_NAMES), "lease": UID,
                             "num_locks": maybe(integer(1, MAX_LOCK_NAMES)), "timeout": maybe(SECONDS),
                             "worker": maybe(ADDRESS)}),
    S(ops.MULTI_LOCK_RELEASE, {"names": list_of(NAME, MAX_LOCK_NAMES), "lease": UID, "abandon": maybe(BOOL)}),
    S(ops.SEMAPHORE_ACQUIRE, {"name": NAME, "lease": UID, "max_leases": integer(1, 2**31 - 1),
                            "timeout": maybe(SECONDS), "worker": maybe(ADDRESS)}),
    S(ops.SEMAPHORE_RELEASE, {"name": NAME, "lease": UID, "abandon": maybe(BOOL)}),
    S(ops.SEMAPHORE_VALUE, {"name": NAME}),
    S(ops.QUEUE_PUT, {"name": NAME, "maxsize": opt(integer(0, 2**31 - 1)), "keys": opt(KEYS),
                    "timeout": maybe(SECONDS), "worker": maybe(ADDRESS), "ticket": opt(UID)},
      required_objects=("data",)),
    S(ops.QUEUE_GET, {"name": NAME, "maxsize": opt(integer(0, 2**31 - 1)),
                    "batch": maybe(either(BOOL, integer(1, 2**31 - 1))), "timeout": maybe(SECONDS),
                    "worker": maybe(ADDRESS), "ticket": opt(UID)}),
    S(ops.QUEUE_SIZE, {"name": NAME}),
    S(ops.QUEUE_ABANDON, {"ticket": UID}),
    S(ops.VARIABLE_SET, {"name": NAME, "keys": opt(KEYS)}, required_objects=("data",)),
    S(ops.VARIABLE_GET, {"name": NAME, "timeout": maybe(SECONDS), "worker": maybe(ADDRESS)}),
    S(ops.VARIABLE_DELETE, {"name": NAME}),
    S(ops.EVENT_SET, {"name": NAME}),
    S(ops.EVENT_CLEAR, {"name": NAME}),
    S(ops.EVENT_IS_SET, {"name": NAME}),
    S(ops.EVENT_WAIT, {"name": NAME, "timeout": maybe(SECONDS), "worker": maybe(ADDRESS)}),
    S(ops.PUBSUB_SUBSCRIBE, {"topic": NAME, "queue": NAME, "worker": maybe(ADDRESS)}),
    S(ops.PUBSUB_UNSUBSCRIBE, {"topic": NAME, "queue": NAME}),
    S(ops.PUBSUB_PUBLISH, {"topic": NAME, "keys": opt(KEYS)}, required_objects=("data",)),
    # from workers
    S(ops.REGISTER_WORKER, {
        "address": ADDRESS, "name": maybe(either(NAME, integer(-2**63, 2**63 - 1))),
        "nthreads": opt(integer(1, 2**16)), "memory_limit": maybe(NBYTES), "resources": maybe(RESOURCES),
        "pid": maybe(integer(0, 2**31)), "host": maybe(NAME), "local_directory": maybe(TEXT),
        "prefix": maybe(TEXT), "environment_error": maybe(TEXT), "hostname": maybe(NAME),
        "protocol": maybe(PROTOCOL), "version": maybe(VERSION)}),
    S(ops.HEARTBEAT_WORKER, {"metrics": opt(METRICS), "worker": opt(binary(256))}),  # worker: from its alive thread
    # seceded: seconds of start..stop the task spent seceded (absent: none; older workers never send it)
    # inline: the pickled result, small, when compute-task said a client wants it
    S(ops.TASK_FINISHED, {"key": KEY, "nbytes": opt(NBYTES), "type": maybe(NAME), "start": maybe(TIME),
                        "stop": maybe(TIME), "seceded": maybe(SECONDS), "inline": maybe(INLINE)}),
    S(ops.TASK_ERRED, {"key": KEY, "exception": opt(PICKLED), "traceback": opt(PICKLED), "text": opt(TEXT),
                     "start": maybe(TIME), "stop": maybe(TIME)}),
    S(ops.ADD_KEYS, {"nbytes": opt(KEY_NBYTES)}),
    S(ops.MISSING_DATA, {"key": KEY, "errant_worker": opt(text(MAX_NAME))}),
    S(ops.RESCHEDULE, {"key": KEY}),
    S(ops.WORKER_STATUS, {"status": opt(one_of("running", "paused", "closing", "closed"))}),
    S(ops.UNREGISTER_WORKER, {"reason": opt(TEXT)}),
    S(ops.RETIRE_WORKER, {"reason": opt(TEXT)}),
    S(ops.STEAL_RESPONSE, {"key": KEY, "state": maybe(NAME)}),
    S(ops.TASK_SECEDED, {"key": KEY}),
    S(ops.TASK_REJOINED, {"key": KEY}),
    S(ops.UPLOAD_FILE_DONE, {"uid": maybe(text(256)), "filename": maybe(NAME), "error": maybe(TEXT)}),
    S(ops.ENVIRONMENT_ACK, {"uid": maybe(UID), "seq": maybe(integer(-1, 2**31)), "error": maybe(TEXT)}),
    S(ops.ENVIRONMENT_READY, {"uid": maybe(UID), "path": maybe(TEXT), "error": maybe(TEXT)}),
    S(ops.GET_NANNY_PLUGINS, {"protocol": maybe(PROTOCOL), "version": maybe(VERSION)}),  # (versions.py)
    # a task paused at a breakpoint (where: its file, line and function) or going on (worker/debugging.py)
    S(ops.TASK_PAUSED, {"key": KEY, "paused": BOOL, "file": maybe(TEXT), "line": maybe(integer(0, 2**31)),
                        "function": maybe(NAME)}),
    # uid: of the plugin-add/-remove answered ("" for one sent to a worker as it registered)
    S(ops.PLUGIN_DONE, {"uid": maybe(text(256)), "name": maybe(PLUGIN_NAME),
                      "status": opt(one_of("OK", "error", "skipped")), "error": maybe(TEXT),
                      "exception": maybe(PICKLED), "traceback": maybe(PICKLED)}),
    # records: [start, stop, kind ("transfer", "disk-write", "disk-read"), peer or null, bytes] each
    S(ops.WORKER_ACTIVITY, {"records": list_of(list_of(SCALAR, 5), 10_000)}),
    # the p2p shuffle (from a task on a worker): id: the shuffle's token; n_in/n_out: its partitions;
    # out: the prefix of its output keys; grid: an array's output blocks per axis (keys <out>-i.j...);
    # run: the run whose data was found incomplete
    S(ops.SHUFFLE_GET, {"id": UID, "n_in": integer(1, MAX_ITEMS), "n_out": integer(1, MAX_ITEMS),
                        "out": text(MAX_KEY, "an output key prefix"),
                        "grid": maybe(list_of(integer(1, MAX_ITEMS), 64))}),
    S(ops.SHUFFLE_RESTART, {"id": UID, "run": integer(1), "why": maybe(TEXT)}),
])

#: clients and peer workers -> a worker's listener
TO_WORKER = Table("a worker", [
    _PING,
    S(ops.GET_DATA, {"keys": opt(KEYS), "bulk": maybe(BOOL)}),
    S(ops.BULK_RECEIVE, {"lengths": list_of(NBYTES, 2**16)}),
    S(ops.PUT_DATA, {"bulk": maybe(record({"id": binary(64), "index": list_of(integer(1, 2**31), 2**16)},
                                        what="a bulk push: {id, index}"))}, objects=("data",)),
    S(ops.RUN, objects=("args", "kwargs"), required_objects=("func",)),
    S(ops.START_IPYTHON), S(ops.VERSIONS, {"packages": maybe(PACKAGE_NAMES)}),
    S(ops.GET_LOGS, {"n": maybe(COUNT)}),
    S(ops.CALL_STACK, {"keys": maybe(KEYS)}),
    S(ops.INTERRUPT_TASK, {"keys": KEYS}),
    S(ops.PROFILE, {"duration": maybe(number(0, 600, "a finite number of seconds in [0, 600]")),
                  "interval": maybe(number(0.001, 60, "a finite number of seconds in [0.001, 60]")),
                  "tree": maybe(BOOL)}),
    S(ops.DUMP_STATE),
    # debugging (worker/debugging.py): client: the id of the client attaching (named to a second one)
    # sources: the text of code the client ran without a file (notebook cells), by file name,
    # so pdb's list and ll show it on the worker
    S(ops.DEBUG_ATTACH, {"key": KEY, "client": maybe(text(256)),
                         "sources": maybe(dict_of(text(4096), text(2**22), 1000))}),
    S(ops.DEBUG_INPUT, {"session": UID, "line": maybe(text(2**16, "a line of at most 65536 characters"))}),
    S(ops.DEBUG_DETACH, {"session": UID}),
    S(ops.DEBUG_LIST),
    S(ops.DEBUG_RELEASE, {"keys": KEYS}),
    S(ops.DEBUG_RECREATE, {"key": KEY, "max_bytes": maybe(NBYTES)}),
    # actors (worker/actors.py): a method of the actor held under key, or one of its attributes
    S(ops.ACTOR_CALL, {"key": KEY, "method": text(256, "a method name of at most 256 characters")},
      objects=("args", "kwargs")),
    S(ops.ACTOR_ATTRIBUTE, {"key": KEY, "name": text(256, "an attribute name of at most 256 characters")}),
    # the p2p shuffle: input i's pieces for outputs (one frame each, pickled pieces) of run
    # `run` of shuffle `id`; bulk: the frames pushed on the side channel
    S(ops.SHUFFLE_RECEIVE, {"id": UID, "run": integer(1), "input": integer(0, MAX_ITEMS),
                            "outputs": list_of(integer(0, MAX_ITEMS), MAX_ITEMS),
                            "frames": list_of(integer(1, MAX_ITEMS), MAX_ITEMS),
                            "bulk": maybe(record({"id": binary(64), "index": list_of(integer(1, 2**31), 2**16)},
                                                 what="a bulk push: {id, index}"))}, objects=("pieces",)),
])

#: the scheduler -> a worker's connection
WORKER_FROM_SCHEDULER = Table("a worker (from its scheduler)", [
    _PING,
    S(ops.COMPUTE_TASK, {"key": KEY, "run_spec": maybe(PICKLED), "priority": opt(PRIORITY), "who_has": opt(WHO_HAS),
                       "nbytes": opt(KEY_NBYTES), "resources": maybe(RESOURCES), "wanted": maybe(BOOL),
                       "functions": maybe(FUNCTIONS), "inline": maybe(dict_of(KEY, INLINE, MAX_ITEMS))}),
    S(ops.FREE_KEYS, {"keys": KEYS}),
    S(ops.FORGET_FUNCTIONS, {"fids": list_of(FUNCTION_ID, 2**16)}),
    S(ops.ACQUIRE_REPLICAS, {"who_has": opt(WHO_HAS), "nbytes": opt(KEY_NBYTES),
                           "priority": opt(dict_of(KEY, PRIORITY, MAX_ITEMS))}),
    S(ops.STEAL_REQUEST, {"key": KEY}),
    S(ops.UPLOAD_FILE, {"filename": text(255, "a plain file name"), "uid": opt(text(256))}, objects=("data",)),
    S(ops.CLOSE_WORKER, {"restart": maybe(BOOL), "reason": maybe(TEXT), "environment": maybe(TEXT)}),
    S(ops.ENVIRONMENT_START, {"uid": UID, "seq": maybe(integer(-1, 2**31))}),
    S(ops.ENVIRONMENT_CHUNK, {"uid": UID, "seq": integer(-1, 2**31)}, objects=("data",)),
    S(ops.ENVIRONMENT_DONE, {"uid": UID, "sha256": maybe(text(128)), "nbytes": maybe(NBYTES)}),
    # token: names this version of the plugin (a nanny compares it with the one it has)
    S(ops.PLUGIN_ADD, {"name": PLUGIN_NAME, "uid": opt(text(256)), "nanny": maybe(BOOL), "token": maybe(UID)},
      required_objects=("plugin",)),
    S(ops.PLUGIN_REMOVE, {"name": PLUGIN_NAME, "uid": opt(text(256)), "nanny": maybe(BOOL)}),
    S(ops.HEARTBEAT_INTERVAL, {"interval": number(0.001, 86400, "a number of seconds in [0.001, 86400]")}),
    S(ops.SHUFFLE_FORGET, {"id": UID, "run": integer(1)}),  # drop runs before `run`, refuse their pieces
])

#: the scheduler -> a client's connection
CLIENT_FROM_SCHEDULER = Table("a client", [
    _PING,
    S(ops.KEY_IN_MEMORY, {"key": KEY, "type": maybe(NAME), "workers": opt(list_of(ADDRESS, 64)),
                        "inline": maybe(INLINE)}),
    S(ops.TASK_ERRED, {"key": KEY, "exception": maybe(PICKLED), "traceback": maybe(PICKLED), "text": maybe(TEXT),
                     "blame": maybe(KEY), "worker": maybe(ADDRESS)}),
    S(ops.KEY_LOST, {"key": KEY}),
    S(ops.KEY_CANCELLED, {"key": KEY, "reason": maybe(TEXT)}),
    S(ops.WARNING, {"text": maybe(TEXT)}),
    S(ops.SCHEDULER_CLOSING),
    S(ops.PROGRESS, {"sub": maybe(UID), "groups": maybe(dict_of(text(MAX_KEY), list_of(integer(), 3), MAX_ITEMS)),
                   "done": maybe(BOOL)}),
    S(ops.EVENT, {"topic": TOPIC, "time": maybe(TIME), "msg": maybe(ANY)}),
])

#: the dashboard page a scheduler serves (xsched/dashboard/server.py): its port, the token that
#: opens it (``Security.dashboard_token``), and its host when it listens on a host of its own
#: (else the client uses the host it reached the scheduler by); null: the scheduler serves none
DASHBOARD = record({"port": integer(1, 65535), "token": text(256, "a token string"), "host": maybe(NAME)},
                   what="a dashboard: a map of port, token and host")

#: the replies a client checks on receipt, by the op of its request (the fields it reads)
REPLIES = Table("a client (replies)", [
    S(ops.REGISTER_CLIENT, {"scheduler_id": maybe(NAME), "address": maybe(ADDRESS), "dashboard": maybe(DASHBOARD),
                            "protocol": maybe(PROTOCOL), "version": maybe(VERSION)}),
])

#: ops of the framing itself (comm.py and messages.py), not of any handler
FRAMING_OPS = frozenset({ops.REPLY, ops.BATCH, ops.CHUNKED})

#: every op that may appear on the wire
OPS = frozenset().union(TO_SCHEDULER, TO_WORKER, WORKER_FROM_SCHEDULER, CLIENT_FROM_SCHEDULER, FRAMING_OPS)
if OPS != ops.ALL:  # (one definition: every op named in ops.py has a schema, and no other op has)
    raise ImportError(f"protocol.ops and the schema tables disagree: {sorted(OPS ^ ops.ALL)}")
