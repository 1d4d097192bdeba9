"""Task specs as bytes: pickled once in the client, opened only by the worker that runs them.

Functions are pickled once per client (cloudpickle, by value for interactive code). In a
graph's specs (``SpecWriter(functions=table)``) a function of 96 bytes or more is a 16-byte
id, and the graph carries the table once: the scheduler keeps one copy and gives it to
each worker with the first task that needs it. Elsewhere (``dumps_task``) the spec embeds
the bytes. The worker unpickles each distinct function once (an LRU cache keyed by the
bytes, bounded in entries and bytes). A 10,000-task ``map`` of a notebook function
therefore costs one cloudpickle call and sends the function once, not 10,000 times.

>>> from xsched.graph.spec import Task
>>> spec = dumps_task(Task(len, ([1, 2],)))
>>> loads_task(spec).run({})
2
"""

from __future__ import annotations

import hashlib
import io
import pickle
import struct
import threading
import weakref
from collections import OrderedDict
from typing import Any

import cloudpickle

from ..graph import carried_globals
from ..graph.spec import Ref, Task
from .serialize import SerializationError, _describe

__all__ = ["dumps_task", "loads_task", "dumps_function", "SpecWriter"]

#: function -> (its pickled bytes, what they depend on: ``carried_globals.fingerprint``, None
#: for a function pickled by reference)
_func_cache: "weakref.WeakKeyDictionary[Any, tuple[bytes, Any]]" = weakref.WeakKeyDictionary()
_func_cache_by_id: dict[int, tuple[Any, bytes]] = {}


def dumps_function(func) -> bytes:
    """Pickle a function once (cached per function object); a function pickled by value (a
    notebook's) again when a global it carries was rebound since (``carried_globals``)."""
    try:
        blob, carried = _func_cache[func]
    except (KeyError, TypeError):
        pass
    else:
        if carried is None or carried_globals.same(carried, carried_globals.fingerprint(func)):
            return blob
    entry = _func_cache_by_id.get(id(func))
    if entry is not None and entry[0] is func:
        return entry[1]
    carried = carried_globals.fingerprint(func) if carried_globals.carries(func) else None
    try:
        blob = cloudpickle.dumps(func, protocol=5)
    except Exception as e:
        raise SerializationError(
            f"could not serialise the function {_describe(func)}: {type(e).__name__}: {e}. "
            "Functions sent to the cluster must be picklable; define helpers at module level "
            "or make sure closures do not capture open files, locks or sockets."
        ) from e
    try:
        if carried is not carried_globals.UNCACHEABLE:
            _func_cache[func] = (blob, carried)
    except TypeError:  # not weak-referenceable (e.g. builtins): cache by id, keep it alive
        if len(_func_cache_by_id) > 10_000:
            _func_cache_by_id.clear()
        _func_cache_by_id[id(func)] = (func, blob)
    return blob


class _FunctionCache:
    """Unpickled functions by their bytes, bounded in entries and in bytes.

    A closure that captured a large array pickles to a large blob; an entry-count bound alone
    would keep thousands of them (and their arrays) alive. Least recently used go first.
    """

    def __init__(self, max_entries: int = 4096, max_bytes: int = 64 * 2**20):
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self._items: "OrderedDict[bytes, Any]" = OrderedDict()
        self.nbytes = 0
        self._lock = threading.Lock()

    def get(self, blob: bytes):
        with self._lock:
            func = self._items.get(blob, _MISSING)
            if func is not _MISSING:
                self._items.move_to_end(blob)
                return func
        func = pickle.loads(blob)  # outside the lock: unpickling may import modules
        if len(blob) > self.max_bytes:
            return func  # too big to keep: every task of it pays its own unpickling
        with self._lock:
            if blob not in self._items:
                self._items[blob] = func
                self.nbytes += len(blob)
                while self._items and (len(self._items) > self.max_entries or self.nbytes > self.max_bytes):
                    old, _ = self._items.popitem(last=False)
                    self.nbytes -= len(old)
        return func

    def __len__(self) -> int:
        return len(self._items)


_MISSING = object()
_functions = _FunctionCache()


class _FunctionLoadError(Exception):
    """Unpickling a task's function failed (raised inside the task spec's unpickling, so that
    ``loads_task`` can tell the function from the arguments)."""


def _load_function(blob: bytes):
    try:
        return _functions.get(blob)
    except Exception as e:  # noqa: BLE001 - ImportError, AttributeError, whatever its reducer raises
        raise _FunctionLoadError(e) from e


_loading = threading.local()  # .functions: the table of the worker whose spec is being loaded


def _load_function_ref(fid: bytes):
    """The function a spec refers to by id, from the worker's table (``loads_task(functions=)``)."""
    table = getattr(_loading, "functions", None)
    blob = table.get(fid) if table is not None else None
    if blob is None:
        raise _FunctionLoadError(RuntimeError(
            f"the function {fid.hex()[:12]} this task refers to never reached this worker (the scheduler "
            "sends each function with the first task that needs it)"))
    return _load_function(blob)


#: Functions pickled to at least this many bytes travel once per graph, in a table, and
#: specs refer to them by id (a function of a module pickles to a few dozen bytes: inline).
FUNCTION_TABLE_MIN_BYTES = 96
#: At most this many functions per graph's table (the scheduler gives each task the table's
#: ids); further functions travel inside their specs as before.
FUNCTION_TABLE_MAX = 32
_fids: "weakref.WeakKeyDictionary[Any, tuple[bytes, bytes]]" = weakref.WeakKeyDictionary()


def _function_id(func, blob: bytes) -> bytes:
    """16 bytes naming ``blob`` (the same function pickled alike gets the same id everywhere);
    cached per function while its bytes are the same (not after a global it carries changed)."""
    try:
        known, fid = _fids[func]
        if known is blob:
            return fid
    except (KeyError, TypeError):
        pass
    fid = hashlib.blake2b(blob, digest_size=16).digest()
    try:
        _fids[func] = (blob, fid)
    except TypeError:
        pass
    return fid


class _FuncRef:
    """Pickles as a function id: the function itself travels once per graph (``SpecWriter(functions=)``)."""

    __slots__ = ("fid",)

    def __init__(self, fid: bytes):
        self.fid = fid

    def __reduce__(self):
        return (_load_function_ref, (self.fid,))


class _Func:
    """Pickles as the function's cached bytes; unpickles to the function itself."""

    __slots__ = ("blob",)

    def __init__(self, blob: bytes):
        self.blob = blob

    def __reduce__(self):
        return (_load_function, (self.blob,))


def _wrap(obj):
    """``obj`` with each nested Task's function replaced by its cached bytes (for cloudpickle)."""
    typ = type(obj)
    if typ is Task:
        return Task(_Func(dumps_function(obj.func)), tuple([_wrap(a) for a in obj.args]),
                    {k: _wrap(v) for k, v in obj.kwargs.items()} if obj.kwargs else {}, {})
    if typ is list:
        return [_wrap(o) for o in obj]
    if typ is tuple:
        return tuple([_wrap(o) for o in obj])
    if typ is dict:
        return {k: _wrap(v) for k, v in obj.items()}
    return obj


class _ByValue(Exception):
    """The spec refers to a class or function of ``__main__``: only cloudpickle can send it."""


class _SpecPickler(pickle.Pickler):
    """The C pickler, with each Task's function swapped on the way for its cached bytes, or
    for its id when the graph's specs share a function table (``_reference``).

    One Python call per Task and per non-builtin object, instead of rebuilding the spec
    (``_wrap``) before pickling it: most of a large graph's submit time was that copy.
    The ``_Func`` of each function is made once per pickler (``_funcs``), and ``Ref``s and
    ``_Func``s are reduced here rather than by their ``__reduce__``: a Python call less each.
    """

    def __init__(self, file, protocol: int = 5, functions: dict | None = None):
        super().__init__(file, protocol=protocol)
        self._funcs: dict[int, tuple[Any, Any]] = {}  # id(func) -> (func, _Func | _FuncRef): keeps func alive
        self._table = functions  # function id -> bytes, for functions specs refer to by id

    def _reference(self, func):
        """How specs carry ``func``: by id when there is a table (and room in it), else its bytes."""
        blob = dumps_function(func)
        table = self._table
        if table is None or len(blob) < FUNCTION_TABLE_MIN_BYTES or len(table) >= FUNCTION_TABLE_MAX:
            return _Func(blob)
        fid = _function_id(func, blob)
        table[fid] = blob
        return _FuncRef(fid)

    def reducer_override(self, obj):
        typ = type(obj)
        if typ is Task:
            func = obj.func
            entry = self._funcs.get(id(func))
            if entry is None or entry[0] is not func:
                entry = self._funcs[id(func)] = (func, self._reference(func))
            return Task, (entry[1], obj.args, obj.kwargs or {}, {})
        if typ is Ref:
            return Ref, (obj.key,)  # what Ref.__reduce__ returns
        if typ is _Func:
            return _load_function, (obj.blob,)  # what _Func.__reduce__ returns
        if typ is _FuncRef:
            return _load_function_ref, (obj.fid,)
        if obj is Task or obj is Ref or obj is _load_function or obj is _load_function_ref:
            return NotImplemented  # in every spec: skip the checks below
        if getattr(obj if isinstance(obj, type) else typ, "__module__", None) == "__main__" or (
                callable(obj) and getattr(obj, "__module__", None) == "__main__"):
            raise _ByValue  # by reference it would name a module the worker does not have
        return NotImplemented


#: How every spec of a Task without keyword arguments ends, after its arguments (as
#: ``_SpecPickler`` writes it): kwargs ``{}``, annotations ``{}``, the tuple of the four,
#: the call of ``Task``, STOP.
_TASK_TAIL = b"}\x94}\x94t\x94R\x94."
_PROTO_FRAME = b"\x80\x05\x95"  # PROTO 5, then FRAME and its 8-byte length
_FRAME_TARGET = 64 * 1024  # (pickle's frame size: a smaller pickle is a single frame)
_FRAME_MIN = 4  # (pickle writes no FRAME before fewer bytes)
_UNMADE = object()  # (a function seen once: a single task gains nothing from a head)


class SpecWriter:
    """Pickles the task specs of one graph, one after the other, with a single pickler.

    Making a pickler and its buffer cost as much as pickling a small task; here each spec
    only rewinds the buffer and resets the pickler's memo (every spec stays a complete
    pickle of its own), and each function is looked up in the cache once per graph.

    Most tasks of a graph share their function and have no keyword arguments; their specs
    differ only in the arguments. The part before the arguments (``Task``, the function's
    bytes) is pickled once per function, with the memo it leaves; a task's spec is then
    that part, the pickle of its arguments made with that memo, and the common tail. The
    bytes are those the pickler makes of the whole task; a spec that would be more than
    one frame, or anything unusual, is pickled whole. Not for several threads at once:
    make one per graph.

    >>> from xsched.graph.spec import Ref, Task
    >>> w = SpecWriter()
    >>> [loads_task(w.dumps(Task(len, (x,)))).run({"k": "ab"}) for x in ("xyz", Ref("k"))]
    [3, 2]
    """

    __slots__ = ("_buf", "_pickler", "_heads", "functions")

    def __init__(self, functions: dict | None = None) -> None:
        self._buf = io.BytesIO()
        self.functions = functions  # filled with the functions the specs refer to by id (send it along)
        self._pickler = _SpecPickler(self._buf, protocol=5, functions=functions)
        self._heads: dict[int, tuple] = {}  # id(func) -> (func, bytes before the args | None, memo then)

    def dumps(self, task: Any) -> bytes:
        """Bytes of a task spec, as ``dumps_task``; raises SerializationError the same way."""
        if type(task) is Task and not task.kwargs:
            func = task.func
            head = self._heads.get(id(func))
            if head is None or head[0] is not func:  # its first task: the next one makes the head
                self._heads[id(func)] = (func, _UNMADE, None)
            else:
                if head[1] is _UNMADE:
                    head = self._heads[id(func)] = (func, *self._head(func))
                if head[1] is not None:
                    spec = self._spliced(task.args, head[1], head[2])
                    if spec is not None:
                        return spec
        return self._whole(task)

    def dumps_flat(self, func: Any, args: tuple, ref_type: type, ref_key: Any) -> bytes:
        """The spec of ``Task(func, args)`` with each argument of ``ref_type`` a reference
        (``Ref(ref_key(arg))``), for flat arguments: such references, ints, floats, strs,
        bools and None. The bytes after the function's head are written here, not by the
        pickler (a Python call for the argument tuple, each reference and its tuple: most of
        a large graph's spec time); anything else goes through ``dumps`` as a Task.

        >>> from xsched.graph.spec import Ref
        >>> w = SpecWriter()
        >>> [loads_task(w.dumps_flat(max, (Ref("k"), 5), Ref, lambda r: r.key)).run({"k": 7})
        ...  for _ in range(2)]
        [7, 7]
        """
        head = self._heads.get(id(func))
        if head is not None and head[0] is func:
            if head[1] is _UNMADE:
                head = self._heads[id(func)] = (func, *self._head(func))
            if head[1] is not None:
                spec = _flat_spec(head[1], len(head[2]), args, ref_type, ref_key)
                if spec is not None:
                    return spec
        args = tuple([Ref(ref_key(a)) if type(a) is ref_type else a for a in args])
        return self.dumps(Task(func, args))

    def _pickle(self, obj: Any, memo: dict | None = None) -> bytes:
        """``obj`` pickled by the spec pickler, starting from ``memo`` (else an empty one)."""
        buf = self._buf
        buf.seek(0)
        buf.truncate()
        pickler = self._pickler
        if memo is None:
            pickler.clear_memo()
        else:
            pickler.memo = memo
        pickler.dump(obj)
        return buf.getvalue()

    def _whole(self, task: Any) -> bytes:
        try:
            return self._pickle(task)
        except Exception:  # _ByValue, or something only cloudpickle can pickle (a lambda argument...)
            pass
        return _dumps_by_value(task)

    def _head(self, func: Any) -> tuple[bytes | None, dict | None]:
        """What precedes the arguments in the spec of any Task of ``func`` without keyword
        arguments, and the pickler's memo at that point; (None, None) when its spec cannot
        be put together that way (a function of 64 KiB or more: several frames)."""
        try:
            out = self._pickle(Task(func, ()))
        except Exception:  # the whole spec will say why
            return None, None
        memo = self._pickler.memo.copy()  # {id: (index, obj)}: keeps the objects alive too
        if not (out[2:3] == b"\x95" and int.from_bytes(out[3:11], "little") == len(out) - 11
                and out.endswith(b")" + _TASK_TAIL)):  # (``)``: the empty tuple of arguments)
            return None, None
        before = len(memo) - _TASK_TAIL.count(b"\x94")  # what the tail memoizes comes last
        return out[11:len(out) - len(_TASK_TAIL) - 1], {k: v for k, v in memo.items() if v[0] < before}

    def _spliced(self, args: Any, head: bytes, memo: dict) -> bytes | None:
        """The spec of a Task of the head's function with these arguments, or None when it
        must be pickled whole."""
        try:
            out = self._pickle(args, memo)
        except Exception:
            return None
        if out[2:3] == b"\x95":
            if int.from_bytes(out[3:11], "little") != len(out) - 11:
                return None  # several frames
            body = out[11:-1]
        elif len(out) - 2 < _FRAME_MIN:
            body = out[2:-1]
        else:
            return None
        size = len(head) + len(body) + len(_TASK_TAIL)
        if size >= _FRAME_TARGET:
            return None  # whole, it would be cut into frames elsewhere
        return b"".join((_PROTO_FRAME, size.to_bytes(8, "little"), head, body, _TASK_TAIL))


# The pickle opcodes ``_flat_spec`` writes (protocol 5, as the pickler would, less its
# MEMOIZEs: a spec needs none but the one that lets later references name ``Ref`` again).
_REF_GLOBAL = pickle.dumps(Ref, protocol=5)[11:-1]  # module, name, STACK_GLOBAL, 3 MEMOIZEs
assert _REF_GLOBAL.count(b"\x94") == 3 and _REF_GLOBAL.endswith(b"\x93\x94")
_TUPLES = {0: b")", 1: b"\x85", 2: b"\x86", 3: b"\x87"}  # EMPTY_TUPLE, TUPLE1-3
_REF_CALL = b"\x85R"  # TUPLE1 of the key, REDUCE: Ref(key)
_FLOAT = struct.Struct(">d").pack
_CONSTANTS = {None: b"N", True: b"\x88", False: b"\x89"}


_SHORT_STR = [b"\x8c" + bytes((n,)) for n in range(256)]  # SHORT_BINUNICODE and its length
_SMALL_INT = [b"K" + bytes((n,)) for n in range(256)]  # BININT1


def _str_op(text: str) -> bytes:
    data = text.encode("utf-8")  # (a lone surrogate raises: the caller pickles the task instead)
    n = len(data)
    return (_SHORT_STR[n] if n < 256 else b"X" + n.to_bytes(4, "little")) + data


def _int_op(a: int) -> bytes | None:
    """An int as the pickler writes it, or None past 32 bits (LONG1: pickled whole)."""
    if 0 <= a < 256:
        return _SMALL_INT[a]
    if 0 <= a < 65536:
        return b"M" + a.to_bytes(2, "little")
    if -2**31 <= a < 2**31:
        return b"J" + a.to_bytes(4, "little", signed=True)
    return None


_BINGET = [b"h" + bytes((n,)) for n in range(256)]
#: The bytes of a two-reference spec besides the head and the two keys (``_flat_spec``).
_PAIR_FIXED = len(_REF_GLOBAL) + 2 + len(_REF_CALL) + 2 + 2 + len(_REF_CALL) + 1 + len(_TASK_TAIL)


def _flat_spec(head: bytes, memo_size: int, args: tuple, ref_type: type, ref_key: Any) -> bytes | None:
    """The spec of a task of the head's function with flat arguments, or None when an
    argument is not one of those written here (``SpecWriter.dumps_flat``)."""
    if len(args) == 2 and type(args[0]) is ref_type and type(args[1]) is ref_type and memo_size < 254:
        # two references (a tree reduction's pairs): what the loop below writes, in one join
        try:
            k0, k1 = ref_key(args[0]).encode("utf-8"), ref_key(args[1]).encode("utf-8")
        except UnicodeEncodeError:
            return None
        n0, n1 = len(k0), len(k1)
        size = len(head) + _PAIR_FIXED + n0 + n1
        if n0 < 256 and n1 < 256 and size < _FRAME_TARGET:
            return b"".join((_PROTO_FRAME, size.to_bytes(8, "little"), head, _REF_GLOBAL, _SHORT_STR[n0], k0,
                             _REF_CALL, _BINGET[memo_size + 2], _SHORT_STR[n1], k1, _REF_CALL, b"\x86",
                             _TASK_TAIL))
    if len(args) == 1 and type(args[0]) is int:  # (a tree's leaves: f(i))
        op = _int_op(args[0])
        size = len(head) + len(op or b"") + 1 + len(_TASK_TAIL)
        if op is not None and size < _FRAME_TARGET:
            return b"".join((_PROTO_FRAME, size.to_bytes(8, "little"), head, op, b"\x85", _TASK_TAIL))
    parts = [_PROTO_FRAME, b"", head] if len(args) <= 3 else [_PROTO_FRAME, b"", head, b"("]  # (MARK)
    append = parts.append
    ref_get = None  # after the first reference: BINGET of the memoized ``Ref``
    try:
        for a in args:
            typ = type(a)
            if typ is ref_type:
                if ref_get is None:
                    append(_REF_GLOBAL)
                    at = memo_size + 2
                    ref_get = _BINGET[at] if at < 256 else b"j" + at.to_bytes(4, "little")
                else:
                    append(ref_get)
                append(_str_op(ref_key(a)))
                append(_REF_CALL)
            elif typ is int:
                op = _int_op(a)
                if op is None:
                    return None
                append(op)
            elif typ is str:
                append(_str_op(a))
            elif typ is float:
                append(b"G" + _FLOAT(a))
            elif typ is bool or a is None:
                append(_CONSTANTS[a])
            else:
                return None
    except UnicodeEncodeError:
        return None
    append(_TUPLES.get(len(args), b"t"))
    append(_TASK_TAIL)
    size = sum(map(len, parts)) - len(_PROTO_FRAME)  # (what follows the frame's length: parts[1] is empty)
    if size >= _FRAME_TARGET:
        return None
    parts[1] = size.to_bytes(8, "little")
    return b"".join(parts)


def dumps_task(task: Any) -> bytes:
    """Bytes of a task spec (annotations stay in the client: the scheduler gets them apart).

    Raises SerializationError naming the argument that cannot be pickled. For the many
    tasks of one graph, ``SpecWriter`` is cheaper.
    """
    return SpecWriter()._whole(task)


def _dumps_by_value(task: Any) -> bytes:
    """The spec through cloudpickle: what refers to ``__main__`` travels by value."""
    try:
        return cloudpickle.dumps(_wrap(task), protocol=5)
    except Exception as e:
        culprit = _find_unpicklable(task)
        raise SerializationError(
            f"could not serialise {culprit} for the cluster: {type(e).__name__}: {e}. "
            "Arguments must be picklable: open files, locks, sockets and generators cannot travel; "
            "pass a path or parameters and open the resource inside the task."
        ) from e


def _find_unpicklable(task) -> str:
    if type(task) is Task:
        for i, a in enumerate(task.args):
            try:
                cloudpickle.dumps(a)
            except Exception:
                return f"argument {i} ({_describe(a)}) of {getattr(task.func, '__name__', task.func)!r}"
        for k, v in task.kwargs.items():
            try:
                cloudpickle.dumps(v)
            except Exception:
                return f"keyword argument {k!r} ({_describe(v)})"
    return _describe(task)


def loads_task(blob, key: str | None = None, where: str = "this worker", functions: dict | None = None) -> Any:
    """The task spec back from bytes (on the worker that runs it); ``functions`` (function
    id -> pickled function) resolves the functions a spec refers to by id.

    Raises SerializationError naming the task ``key``, whether its function or its
    arguments failed to unpickle, why, and what to do -- usually a module that the client
    has and ``where`` (the worker) has not.

    >>> loads_task(b"not a pickle", key="f-1")
    Traceback (most recent call last):
    ...
    xsched.protocol.serialize.SerializationError: could not unpickle the arguments of task 'f-1' on this worker: ...
    """
    _loading.functions = functions
    try:
        return pickle.loads(blob)
    except _FunctionLoadError as e:
        cause = e.__cause__ or e
        part, hint = "function", ("The function must be importable there: install its module on the workers, "
                                  "send it with client.upload_file, or define it in the notebook or script so "
                                  "that it travels by value.")
    except Exception as e:  # noqa: BLE001
        cause = e
        part, hint = "arguments", ("The classes of the arguments must be importable there: install their "
                                   "module on the workers or send it with client.upload_file.")
    name = f"task {key!r}" if key is not None else "a task"
    raise SerializationError(f"could not unpickle the {part} of {name} on {where}: "
                             f"{type(cause).__name__}: {cause}. {hint}") from cause
