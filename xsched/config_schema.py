"""The schema of xsched's configuration: every key, its type and what it means.

Defaults live in ``xsched.yaml`` (a test checks both files name the same keys). Every layer --
packaged defaults, YAML files, environment variables, ``config.set()`` -- is checked here, so a
typo or a wrong type fails with the key, the value, where it came from and what was expected.

>>> flatten(("worker", "memory"), {"target": 0.5}, "example")
{('worker', 'memory', 'target'): 0.5}
>>> flatten(("worker", "memory", "target"), "lots", "example")
Traceback (most recent call last):
...
xsched.config_schema.ConfigError: Config key 'worker.memory.target' got 'lots' (str) from example, but expects a fraction between 0 and 1, or false (disabled).
"""

from __future__ import annotations

import difflib
import math
import threading
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Union

from xsched.units import parse_bytes, parse_memory_limit, parse_timedelta

__all__ = [
    "ConfigError", "SCHEMA", "Kind", "Leaf", "Section", "OpenMap", "resolve", "flatten", "nest", "all_keys",
    "DASK_NAMES", "DaskConfigName",
]

Path = tuple[str, ...]


class ConfigError(ValueError):
    """A configuration key is unknown or its value has the wrong type."""


# --- kinds of values -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    """A type of config value: ``check`` returns the (normalized) value or raises ValueError."""

    expected: str
    check: Callable[[Any], Any]

    def __or__(self, other: "Kind") -> "Kind":
        def check(value: Any) -> Any:
            try:
                return self.check(value)
            except (ValueError, TypeError):
                return other.check(value)

        return Kind(f"{self.expected}, or {other.expected}", check)


def _is_real(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def number(
    lo: float = -math.inf,
    hi: float = math.inf,
    *,
    integer: bool = False,
    lo_open: bool = False,
    ints: bool = False,
) -> Kind:
    """Numbers in [lo, hi] (or (lo, hi] with ``lo_open``); integral floats become ints for
    ``integer`` (which rejects other floats) and for ``ints`` (which keeps them)."""
    what = "an integer" if integer else "a number"
    if lo_open:
        what += f" > {lo:g}"
    elif lo > -math.inf and hi < math.inf:
        what += f" between {lo:g} and {hi:g}"
    elif lo > -math.inf:
        what += f" >= {lo:g}"

    def check(value: Any) -> Any:
        if not _is_real(value) or math.isnan(value):
            raise ValueError
        if integer:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            value = int(value)
        elif ints and isinstance(value, float) and value.is_integer():
            value = int(value)
        if value < lo or value > hi or (lo_open and value == lo):
            raise ValueError
        return value

    return Kind(what, check)


def _literal(expected: str, *allowed: Any) -> Kind:
    def check(value: Any) -> Any:
        for a in allowed:
            if value == a and type(value) is type(a):
                return a
        raise ValueError

    return Kind(expected, check)


def choice(*values: str) -> Kind:
    listed = ", ".join(repr(v) for v in values)
    return _literal(listed if len(values) == 1 else f"one of {listed}", *values)


def _check_type(t: type) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if not isinstance(value, t) or (t is int and isinstance(value, bool)):
            raise ValueError
        return value

    return check


def _parsed_by(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError
        parse(value)
        return value

    return check


NULL = _literal("null", None)
FALSE = _literal("false (disabled)", False)
BOOL = Kind("true or false", _check_type(bool))
STR = Kind("a string", _check_type(str))
BYTES = Kind("a byte size such as '500MB', '2GiB' or 4e9", _parsed_by(parse_bytes))
DURATION = Kind("a duration such as '100ms', '5s', '1m' or a number of seconds", _parsed_by(parse_timedelta))
FRACTION = Kind("a fraction between 0 and 1", number(0, 1).check)
MEMORY_LIMIT = Kind(
    "a memory limit: a size ('4GB'), a fraction of memory (0.5), 'auto', or 0/null for none",
    _parsed_by(lambda v: v is None or parse_memory_limit(v, total=2**62)),
)
AMOUNT = number(0, ints=True)


def _names(value: Any) -> list[str]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValueError
    return list(value)


NAMES = Kind("a list of names", _names)


# --- schema nodes --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Leaf:
    """One value."""

    kind: Kind
    doc: str


@dataclass(frozen=True)
class OpenMap:
    """A mapping whose names the user chooses (kept verbatim, case included), each value of ``kind``."""

    kind: Kind
    doc: str


@dataclass(frozen=True)
class Section:
    """A mapping of fixed, kebab-case names to nodes."""

    doc: str
    children: dict[str, "Node"] = field(default_factory=dict)


Node = Union[Leaf, OpenMap, Section]

S, L = Section, Leaf
SCHEMA = S("xsched configuration", {
    "scheduler": S("The scheduler process.", {
        "worker-saturation": L(number(0, lo_open=True) | choice("inf"),
            "Root tasks sent to a worker per thread before the rest wait in the scheduler's queue; "
            "1.0 keeps memory low, 'inf' sends every runnable task at once."),
        "worker-ttl": L(DURATION, "A worker silent this long is declared dead (its heartbeats come from a "
                                  "thread of their own, so a busy event loop does not silence it)."),
        "heartbeats-per-second": L(number(0, lo_open=True),
            "Metrics heartbeats per second the scheduler aims at in all: wider clusters are told to beat "
            "less often than worker.heartbeat-interval, and worker-ttl stretches to three beats."),
        "allowed-failures": L(number(0, integer=True),
            "Worker deaths a task may cause before it fails with KilledWorker."),
        "bandwidth": L(BYTES, "Estimated bytes per second between workers, to weigh transfers in placement."),
        "no-worker-warning": L(DURATION,
            "Warn the client when a task has waited this long for a worker able to run it."),
        "events-log-length": L(number(0, integer=True), "Entries kept in the scheduler's event log."),
        "unknown-task-duration": L(DURATION, "Duration assumed for a kind of task never seen before."),
        "work-stealing": L(BOOL, "Idle workers take waiting tasks from saturated ones when moving the "
                                 "inputs costs little against the tasks' expected duration."),
        "validate": L(BOOL, "Check every invariant of the scheduler's state after its events (slow; for "
                            "tests and debugging): a violation is logged with its story and closes the scheduler."),
        "dashboard-address": L(STR | number(0, 65535, integer=True) | NULL,
            "Where the scheduler serves its dashboard page: ':8787' (port 8787 on the scheduler's host; "
            "taken: a free port), 'host:port', a port number, or null for no page."),
        "extensions": L(NAMES | NULL, "The scheduler extensions to load (progress, datasets, uploads, "
                                      "environments, coordination, events, diagnostics); null: all. Ops of "
                                      "one not loaded are refused."),
    }),
    "worker": S("Worker processes.", {
        "nthreads": L(number(1, integer=True) | NULL, "Threads per worker process; null: one per CPU core."),
        "memory": S("Memory management; thresholds are fractions of the memory limit.", {
            "limit": L(MEMORY_LIMIT, "Memory limit per worker process when none is given explicitly."),
            "target": L(FRACTION | FALSE, "Above this, spill least-recently-used data to disk."),
            "spill": L(FRACTION | FALSE, "Above this process memory (RSS), spill more data."),
            "pause": L(FRACTION | FALSE, "Above this, start no tasks and fetch no data until memory falls."),
            "terminate": L(FRACTION | FALSE, "Above this, the nanny restarts the worker."),
            "monitor-interval": L(DURATION, "How often process memory is sampled."),
            "max-spill": L(BYTES | FALSE, "Most bytes spilled to disk; false: unlimited."),
            "trim": L(BOOL, "Return freed memory to the OS after large releases (malloc_trim)."),
        }),
        "resources": OpenMap(AMOUNT,
            "Abstract resources the worker offers, e.g. GPU: 2; names keep their case."),
        "pre-spawn-environ": OpenMap(STR | AMOUNT,
            "Environment variables a nanny sets for the worker processes it starts, unless already set; "
            "by default one BLAS/OpenMP thread per task thread (OMP_NUM_THREADS, MKL_NUM_THREADS, "
            "OPENBLAS_NUM_THREADS = 1), so tasks do not start more threads than the machine has cores, and "
            "one glibc malloc arena (MALLOC_ARENA_MAX = 1), whose freed memory the worker's trims give back, "
            "and pyarrow's buffers from that heap too (ARROW_DEFAULT_MEMORY_POOL = system)."),
        "heartbeat-interval": L(DURATION, "How often the worker reports to the scheduler."),
        "reconnect-timeout": L(DURATION, "How long a worker its nanny restarted (after it lost its scheduler, "
                                         "or crashed) waits for the scheduler before it exits for good."),
        "local-directory": L(STR | NULL,
            "Directory for spilled data; null: under the system temp directory."),
        "connections": S("Concurrent data transfers.", {
            "outgoing": L(number(1, integer=True), "Most simultaneous fetches from other workers."),
        }),
    }),
    "comm": S("Networking.", {
        "security": L(choice("auto", "curve"),
            "Every connection is CURVE-authenticated in both directions and encrypted. Large transfers "
            "take an AES-256-OCB3 side channel; auto: in clear on loopback only (the bytes never leave "
            "the host); curve: encrypted on loopback too."),
        "timeouts": S("Network timeouts.", {
            "connect": L(DURATION, "Give up connecting to a peer after this long."),
        }),
    }),
    "debug": S("Debugging tasks where they run (client.debug, %debug, breakpoints).", {
        "post-mortem": S("Tracebacks of failed tasks kept on their worker.", {
            "keep": L(number(0, integer=True),
                "Failed tasks whose frames a worker keeps for client.debug (the last ones); 0 keeps none."),
        }),
        "breakpoint-timeout": L(DURATION, "A task paused at breakpoint() with no client attached for this "
                                          "long continues, with a warning naming it."),
        "session-idle-timeout": L(DURATION, "A debugging session whose client sends nothing for this long is "
                                            "detached (a post-mortem session ends; a breakpoint stays paused)."),
        "recreate-max-bytes": L(BYTES, "client.recreate_error_locally refuses tasks whose inputs are larger."),
    }),
    "jupyter": S("Embedded IPython kernels.", {
        "kernel-ip": L(STR, "Address the kernels in the scheduler and workers listen on."),
    }),
    "array": S("Chunked arrays.", {
        "chunk-size": L(BYTES, "Target chunk size when chunks are chosen automatically."),
        "rechunk": S("Rechunking.", {
            "memory": L(BYTES, "Most one rechunking task may hold (its inputs and its output); "
                        "intermediate chunkings are chosen to stay within it."),
            "method": L(choice("auto", "p2p", "tasks"),
                        "How blocks are regrouped: 'p2p' in one exchange worker to worker, through "
                        "disk (n + 1 + m tasks); 'tasks' with every piece a task result (runs "
                        "anywhere); 'auto': p2p when a Client is the default and the task route "
                        "would hold more than rechunk.memory at once."),
        }),
    }),
    "shuffle": S("Moving rows between partitions (merge, set_index, sort_values, groupby-apply, bag groupby).", {
        "method": L(choice("auto", "p2p", "tasks"),
                    "How rows move: 'p2p' sends each piece worker to worker, onto the receiver's disk "
                    "(bounded memory, n + 1 + n tasks); 'tasks' makes each piece a task result (runs "
                    "anywhere, n x n small tasks); 'auto': p2p when a Client is the default, else tasks."),
        "buffer": L(BYTES, "Most bytes of received p2p pieces a worker keeps in memory before "
                           "writing them to its disk."),
    }),
})
del S, L


# --- lookups and validation ----------------------------------------------------------------------


def _dotted(path: Path) -> str:
    return ".".join(path)


def all_keys(node: Node = SCHEMA, prefix: Path = ()) -> list[str]:
    """Every dotted key of the schema, sections included (for suggestions and listings).

    >>> "worker.memory.target" in all_keys()
    True
    """
    keys = [_dotted(prefix)] if prefix else []
    if isinstance(node, Section):
        for name, child in node.children.items():
            keys += all_keys(child, prefix + (name,))
    return keys


def _unknown(
    parent_path: Path, name: str, rest: Path | list[str], parent: Section, source: str | None
) -> ConfigError:
    key = _dotted(parent_path + (name, *rest))
    where = f" (from {source})" if source else ""
    suggestions = []
    canonical = name.lower().replace("_", "-")
    for match in difflib.get_close_matches(canonical, list(parent.children), n=3, cutoff=0.6):
        fixed = parent_path + (match, *rest)
        try:
            resolve(fixed)
        except ConfigError:
            fixed = parent_path + (match,)
        suggestions.append(repr(_dotted(fixed)))
    hint = f" Did you mean {' or '.join(suggestions)}?" if suggestions else ""
    under = f"under {_dotted(parent_path)!r}" if parent_path else "at the top level"
    return ConfigError(
        f"Unknown config key {key!r}{where}.{hint} Valid keys {under}: {', '.join(parent.children)}."
    )


def _child(section: Section, name: str) -> str | None:
    if name in section.children:
        return name
    canonical = name.lower().replace("_", "-")
    return canonical if canonical in section.children else None


def _check_name(path: Path, name: Any, source: str | None) -> None:
    if not isinstance(name, str) or not name or "." in name or name.strip() != name:
        where = f" (from {source})" if source else ""
        raise ConfigError(
            f"Bad name {name!r} under config key {_dotted(path)!r}{where}: names must be non-empty "
            "strings without dots or surrounding spaces."
        )


# --- dask's names ---------------------------------------------------------------------------------

#: dask's configuration names that xsched accepts, and the xsched key each sets (the same
#: meaning and units). Users who bring ``distributed.*`` settings from dask get them applied,
#: with a notice naming xsched's key (once per name and process); a ``distributed.*`` name
#: without an equivalent here is an unknown key, as any other.
DASK_NAMES: dict[str, str] = {
    "distributed.scheduler.allowed-failures": "scheduler.allowed-failures",
    "distributed.scheduler.bandwidth": "scheduler.bandwidth",
    "distributed.scheduler.events-log-length": "scheduler.events-log-length",
    "distributed.scheduler.unknown-task-duration": "scheduler.unknown-task-duration",
    "distributed.scheduler.validate": "scheduler.validate",
    "distributed.scheduler.work-stealing": "scheduler.work-stealing",
    "distributed.scheduler.worker-saturation": "scheduler.worker-saturation",
    "distributed.scheduler.worker-ttl": "scheduler.worker-ttl",
    "distributed.worker.memory.target": "worker.memory.target",
    "distributed.worker.memory.spill": "worker.memory.spill",
    "distributed.worker.memory.pause": "worker.memory.pause",
    "distributed.worker.memory.terminate": "worker.memory.terminate",
    "distributed.worker.memory.monitor-interval": "worker.memory.monitor-interval",
    "distributed.worker.memory.max-spill": "worker.memory.max-spill",
    "distributed.worker.connections.outgoing": "worker.connections.outgoing",
    "distributed.worker.resources": "worker.resources",
    "distributed.nanny.pre-spawn-environ": "worker.pre-spawn-environ",
    "distributed.comm.timeouts.connect": "comm.timeouts.connect",
}
_DASK = {tuple(k.split(".")): tuple(v.split(".")) for k, v in DASK_NAMES.items()}


class DaskConfigName(UserWarning):
    """A dask configuration name was used; the message names the xsched key it set."""


_noticed: set[str] = set()
_noticed_lock = threading.Lock()


def _canonical(parts) -> Path:
    return tuple(str(p).lower().replace("_", "-") for p in parts)


def _dask_target(parts) -> tuple[Path, Path] | None:
    """(xsched path, dask name) for a key given as dask's parts (``distributed....``), or None."""
    canon = _canonical(parts)
    for n in range(len(canon), 1, -1):
        target = _DASK.get(canon[:n])
        if target is not None:
            return target + tuple(parts[n:]), canon[:n]  # (the rest: a resource name keeps its case)
    return None


def _dask_unknown(parts, source: str | None) -> ConfigError:
    key = _dotted(tuple(map(str, parts)))
    where = f" (from {source})" if source else ""
    close = difflib.get_close_matches(_dotted(_canonical(parts)), list(DASK_NAMES), n=1, cutoff=0.9)
    hint = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
    return ConfigError(
        f"Unknown config key {key!r}{where}: xsched has no equivalent of this dask setting.{hint} The dask names "
        f"xsched accepts: {', '.join(DASK_NAMES)}."
    )


def _notice(dask: Path, target: Path) -> None:
    name = _dotted(dask)
    with _noticed_lock:
        if name in _noticed:
            return
        _noticed.add(name)
    key = _dotted(_DASK[dask])
    warnings.warn(f"Config key {name!r} is dask's name; it sets xsched's {key!r}. Use {key!r} to silence this "
                  "notice (shown once).", DaskConfigName, stacklevel=4)


def resolve(parts: Path | list[str], source: str | None = None) -> tuple[Path, Node]:
    """The canonical path and schema node of a key given as parts; ``_`` may stand for ``-``.

    >>> resolve(["scheduler", "worker_saturation"])[0]
    ('scheduler', 'worker-saturation')
    >>> resolve(["worker", "resources", "GPU"])[0]
    ('worker', 'resources', 'GPU')

    dask's names (``DASK_NAMES``) resolve to xsched's keys, with a one-time notice.
    """
    if parts and _canonical(parts[:1]) == ("distributed",):
        found = _dask_target(parts)
        if found is None:
            raise _dask_unknown(parts, source)
        target, dask = found
        _notice(dask, target)
        parts = target
    node: Node = SCHEMA
    path: Path = ()
    for i, part in enumerate(parts):
        if isinstance(node, Section):
            name = _child(node, part)
            if name is None:
                raise _unknown(path, part, tuple(parts[i + 1:]), node, source)
            node, path = node.children[name], path + (name,)
        elif isinstance(node, OpenMap) and i == len(parts) - 1:
            _check_name(path, part, source)
            node, path = Leaf(node.kind, node.doc), path + (part,)
        else:
            where = f" (from {source})" if source else ""
            raise ConfigError(
                f"Unknown config key {_dotted(tuple(parts))!r}{where}: {_dotted(path)!r} is a single "
                "value and has no sub-keys."
            )
    return path, node


def _type_error(path: Path, value: Any, expected: str, source: str | None) -> ConfigError:
    where = f" from {source}" if source else ""
    hint = ""
    if path == ("scheduler",) and isinstance(value, str):  # (dask's config.set(scheduler="threads"))
        hint = (f" To choose where a computation runs, as dask's config.set(scheduler=...) does, pass it to "
                f"compute: x.compute(scheduler={value!r}), or start a Client (the default for every compute).")
    return ConfigError(
        f"Config key {_dotted(path)!r} got {value!r} ({type(value).__name__}){where}, but expects {expected}.{hint}"
    )


def flatten(path: Path, value: Any, source: str | None = None, node: Node | None = None) -> dict[Path, Any]:
    """Validate ``value`` at ``path`` and return it as ``{leaf path: normalized value}``.

    ``path`` must already be canonical unless ``node`` is None (then it is resolved first).

    >>> flatten((), {"worker": {"resources": {"GPU": 2.0}}})
    {('worker', 'resources', 'GPU'): 2}
    """
    if node is None:
        if (isinstance(value, Mapping) and path and _canonical(path[:1]) == ("distributed",)
                and _dask_target(path) is None):
            # dask's names as nested mappings ({"distributed": {"scheduler": {...}}}): each leaf by its name
            out: dict[Path, Any] = {}
            for name, item in value.items():
                out.update(flatten(tuple(path) + (str(name),), item, source))
            return out
        path, node = resolve(path, source)
    if isinstance(node, Leaf):
        try:
            return {path: node.kind.check(value)}
        except (ValueError, TypeError):
            raise _type_error(path, value, node.kind.expected, source) from None
    if not isinstance(value, Mapping):
        names = "names of your choice" if isinstance(node, OpenMap) else ", ".join(node.children)
        expected = f"a mapping (of {names})"
        raise _type_error(path, value, expected, source)
    out: dict[Path, Any] = {}
    for name, item in value.items():
        if isinstance(node, OpenMap):
            _check_name(path, name, source)
            out.update(flatten(path + (name,), item, source, Leaf(node.kind, node.doc)))
        else:
            child = _child(node, name) if isinstance(name, str) else None
            if child is None and not path and isinstance(name, str) and _canonical([name]) == ("distributed",):
                out.update(flatten((name,), item, source))  # dask's names, nested (a dask YAML file)
                continue
            if child is None:
                raise _unknown(path, str(name), (), node, source)
            out.update(flatten(path + (child,), item, source, node.children[child]))
    return out


def nest(flat: Mapping[Path, Any], node: Node = SCHEMA, prefix: Path = ()) -> dict[str, Any]:
    """Nested dicts from ``{leaf path: value}``, in schema order, every section present.

    >>> nest({("scheduler", "worker-saturation"): 2.0})["scheduler"]
    {'worker-saturation': 2.0}
    """
    assert isinstance(node, Section)
    out: dict[str, Any] = {}
    for name, child in node.children.items():
        path = prefix + (name,)
        if isinstance(child, Section):
            out[name] = nest(flat, child, path)
        elif isinstance(child, OpenMap):
            n = len(path)
            out[name] = {p[n]: v for p, v in flat.items() if len(p) == n + 1 and p[:n] == path}
        elif path in flat:
            out[name] = flat[path]
    return out
