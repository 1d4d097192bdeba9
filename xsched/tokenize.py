"""Deterministic tokens for Python values, so that equal calls get equal keys.

A key is ``<funcname>-<token>``. When a call is *pure*, its token is derived from the
function and its arguments, so building the same graph twice gives the same keys and the
scheduler can reuse results. Values we cannot hash reproducibly get a random token: such
calls are simply never deduplicated, which is always safe.

>>> tokenize(1, "a", [1.5, None]) == tokenize(1, "a", [1.5, None])
True
>>> key_split("sum-aggregate-9f8e7d6c5b4a39281706f5e4d3c2b1a0")
'sum-aggregate'
"""

from __future__ import annotations

import collections
import dataclasses
import enum
import functools
import hashlib
import pickle
import types
import uuid
import weakref
from typing import Any, Callable

import cloudpickle

from .graph import carried_globals
from .graph.spec import Ref, Task

__all__ = ["tokenize", "key_split"]

_DIGEST_SIZE = 16  # 32 hex characters


class _NotDeterministic(Exception):
    """Raised inside the hasher when a value cannot be hashed reproducibly."""


def tokenize(*args: Any, **kwargs: Any) -> str:
    """A 32-hex-character token that is equal for equal arguments.

    Dicts and sets hash independently of their order; numpy arrays by dtype, shape and
    content; functions by module, qualified name and code. Objects may define
    ``__xsched_tokenize__()`` returning something tokenizable that identifies them.
    Values that cannot be hashed reproducibly give a random token.

    >>> from xsched.tokenize import tokenize
    >>> tokenize({"a": 1, "b": 2}) == tokenize({"b": 2, "a": 1})
    True
    >>> len(tokenize(print))
    32
    """
    hasher = _Hasher()
    try:
        hasher.feed((args, kwargs) if kwargs else args)
    except (_NotDeterministic, RecursionError):
        return uuid.uuid4().hex
    return hasher.digest().hex()


# --------------------------------------------------------------------------- hashing


class _Hasher:
    """Feeds a value into a hash as a stream of tagged, length-prefixed parts.

    Parts are collected in a list and hashed in one call (per-part hash updates cost more
    than the hashing itself for the small values that make up most keys); large buffers
    go straight to the hash.
    """

    __slots__ = ("h", "parts", "active")

    def __init__(self, active: dict[int, int] | None = None) -> None:
        self.h = hashlib.blake2b(digest_size=_DIGEST_SIZE)
        self.parts: list[bytes] = []
        # id -> depth of the mutable containers being walked, to detect reference cycles
        self.active: dict[int, int] = {} if active is None else active

    def write(self, tag: bytes, data: bytes = b"") -> None:
        self.parts += (tag, b"\0", len(data).to_bytes(8, "little"), data)

    def write_buffer(self, buf: Any) -> None:
        """Hash a (large) buffer in place, without copying it into ``parts``."""
        self.write(b"buffer", str(memoryview(buf).nbytes).encode())
        self.h.update(b"".join(self.parts))
        self.parts.clear()
        self.h.update(buf)

    def digest(self) -> bytes:
        self.h.update(b"".join(self.parts))
        self.parts.clear()
        return self.h.digest()

    def feed(self, obj: Any) -> None:
        handler = _DISPATCH.get(type(obj))
        if handler is not None:
            handler(self, obj)
        else:
            self._feed_other(obj)

    def _sub_digest(self, obj: Any) -> bytes:
        """Digest of one element, for order-independent containers."""
        sub = _Hasher(self.active)
        sub.feed(obj)
        return sub.digest()

    def _enter(self, obj: Any) -> bool:
        """Start walking a mutable container; False (and a marker) if it is a cycle."""
        oid = id(obj)
        depth = self.active.get(oid)
        if depth is not None:
            self.write(b"cycle", str(len(self.active) - depth).encode())
            return False
        self.active[oid] = len(self.active)
        return True

    def feed_tuple(self, obj: tuple) -> None:  # immutable: cannot close a cycle itself
        self.write(b"tuple", str(len(obj)).encode())
        for item in obj:
            self.feed(item)

    def feed_list(self, obj: list) -> None:
        if self._enter(obj):
            try:
                self.write(b"list", str(len(obj)).encode())
                for item in obj:
                    self.feed(item)
            finally:
                del self.active[id(obj)]

    def feed_dict(self, obj: dict) -> None:
        if not obj:
            return self.write(b"dict")
        if self._enter(obj):
            try:
                self.write(b"dict", b"".join(sorted([self._sub_digest(i) for i in obj.items()])))
            finally:
                del self.active[id(obj)]

    def feed_set(self, obj: Any) -> None:
        if self._enter(obj):
            try:
                # (a set and a frozenset of the same items are equal, but a task may tell them apart)
                self.write(b"set" if type(obj) is set else b"frozenset",
                           b"".join(sorted([self._sub_digest(x) for x in obj])))
            finally:
                del self.active[id(obj)]

    def _feed_other(self, obj: Any) -> None:
        typ = type(obj)
        custom = getattr(typ, "__xsched_tokenize__", None)  # on the type: proxies stay lazy
        if custom is not None:
            self.write(b"custom", _qualname(typ))
            self.feed(custom(obj))
            return
        np = _numpy()
        if np is not None:
            if isinstance(obj, np.ndarray):
                return _feed_ndarray(self, obj, np)
            if isinstance(obj, np.generic):
                self.write(b"npscalar", obj.dtype.str.encode())
                return self.write(b"", obj.tobytes() if obj.dtype.kind != "O" else _pickled(obj))
            if isinstance(obj, np.dtype):
                return self.write(b"dtype", str(obj).encode())
        if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, functools.partial,
                            types.MethodType, type)):
            return _feed_callable(self, obj)
        if isinstance(obj, enum.Enum):
            self.write(b"enum", _qualname(typ))
            return self.write(b"", obj.name.encode())
        if dataclasses.is_dataclass(obj):
            self.write(b"dataclass", _qualname(typ))
            return self.feed(tuple(getattr(obj, f.name) for f in dataclasses.fields(obj)))
        if isinstance(obj, (list, tuple)):  # subclasses, e.g. namedtuples
            self.write(b"subclass", _qualname(typ))
            return self.feed_list(obj)
        if isinstance(obj, dict):
            self.write(b"subclass", _qualname(typ))
            if isinstance(obj, collections.OrderedDict):  # (equal only in the same order: hashed in it)
                return self.feed_list(list(obj.items()))
            if isinstance(obj, collections.defaultdict):  # (what a missing key gives is part of it)
                self.feed(obj.default_factory)
            return self.feed_dict(obj)
        self.write(b"pickle", _qualname(typ))
        self.write(b"", _pickled(obj, self))


def _qualname(typ: type) -> bytes:
    return f"{typ.__module__}.{typ.__qualname__}".encode()


def _pickled(obj: Any, hasher: _Hasher | None = None) -> bytes:
    """Pickle bytes of ``obj``; large buffers are hashed in place, not copied."""
    buffers: list = []
    try:
        data = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    except Exception:
        buffers.clear()
        try:
            data = cloudpickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
        except Exception as exc:
            raise _NotDeterministic from exc
    if hasher is not None:
        for buf in buffers:
            try:
                hasher.write_buffer(buf.raw())
            except BufferError:  # not contiguous
                hasher.write_buffer(memoryview(buf).tobytes())
    return data


def _feed_ndarray(hasher: _Hasher, arr: Any, np: Any) -> None:
    hasher.write(b"ndarray", f"{arr.dtype.str}|{arr.shape}".encode())
    if arr.dtype.kind == "O" or arr.dtype.hasobject:
        return hasher.feed(arr.ravel().tolist())
    if arr.dtype.fields is not None or arr.dtype.kind in "V":
        hasher.write(b"", str(arr.dtype.descr).encode())
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)
    hasher.write_buffer(memoryview(arr.reshape(-1).view(np.uint8)))


# Tokens of closure-free functions, keyed weakly by the function (checked against __code__).
_function_cache: "weakref.WeakKeyDictionary[Callable, tuple[Any, bytes, Any]]" = weakref.WeakKeyDictionary()
#: how many times a function's globals were cut short because it was being hashed already
_cycles_cut = [0]


def _feed_callable(hasher: _Hasher, func: Any) -> None:
    if isinstance(func, functools.partial):
        hasher.write(b"partial")
        hasher.feed(func.func)
        hasher.feed(func.args)
        return hasher.feed(func.keywords)
    if isinstance(func, types.MethodType):
        hasher.write(b"method", func.__name__.encode())
        hasher.feed(func.__func__)
        return hasher.feed(func.__self__)
    if isinstance(func, (type, types.BuiltinFunctionType)):
        module = getattr(func, "__module__", None)
        name = getattr(func, "__qualname__", None)
        if module and name and "<" not in name:
            return hasher.write(b"named", f"{module}.{name}".encode())
        return hasher.write(b"pickle", _pickled(func, hasher))
    # A Python function: identity plus the code, so redefining it in a notebook changes it;
    # one pickled by value (a notebook's) also by the globals it carries, so that rebinding
    # one of them changes it (carried_globals)
    simple = func.__closure__ is None and not func.__defaults__ and not func.__kwdefaults__
    carried = carried_globals.fingerprint(func) if carried_globals.carries(func) else ()
    cuts = _cycles_cut[0]
    if simple:
        cached = _function_cache.get(func)
        if cached is not None and cached[0] is func.__code__ and carried_globals.same(cached[2], carried):
            return hasher.write(b"function", cached[1])
    sub = _Hasher(hasher.active)
    sub.write(b"name", f"{func.__module__}.{func.__qualname__}".encode())
    _feed_code(sub, func.__code__)
    sub.feed(func.__defaults__)
    sub.feed(func.__kwdefaults__)
    if func.__closure__:
        if id(func) in hasher.active:  # a recursive closure refers to itself
            return hasher.write(b"cycle", func.__qualname__.encode())
        try:
            cells = tuple(c.cell_contents for c in func.__closure__)
        except ValueError:  # an empty cell (name not yet bound)
            cells = None
        hasher.active[id(func)] = len(hasher.active)
        try:
            sub.feed(cells)
        finally:
            del hasher.active[id(func)]
    if carried and id(func) in hasher.active:  # (reached again through its own globals: recursion)
        _cycles_cut[0] += 1
        sub.write(b"cycle", func.__qualname__.encode())
    elif carried:
        hasher.active[id(func)] = len(hasher.active)
        try:
            for name, value in carried_globals.read_globals(func):
                sub.write(b"global", name.encode())
                if isinstance(value, types.ModuleType):
                    sub.write(b"module", value.__name__.encode())
                elif isinstance(value, type) and carried_globals._class_by_value(value):
                    sub.write(b"class", cloudpickle.dumps(value, protocol=5))  # (by value: its attributes too)
                else:
                    sub.feed(value)
        finally:
            del hasher.active[id(func)]
    digest = sub.digest()
    # (a digest made while a function on the way here was cut short depends on the way: not kept)
    if simple and carried is not carried_globals.UNCACHEABLE and _cycles_cut[0] == cuts:
        _function_cache[func] = (func.__code__, digest, carried)
    hasher.write(b"function", digest)


def _feed_code(hasher: _Hasher, code: types.CodeType) -> None:
    hasher.write(b"code", code.co_code)
    hasher.write(b"names", "\0".join(code.co_names).encode())
    hasher.write(b"args", f"{code.co_argcount},{code.co_kwonlyargcount},{code.co_flags}".encode())
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _feed_code(hasher, const)
        else:
            hasher.feed(const)


_np_module: Any = False


def _numpy() -> Any:
    """numpy if it is already imported; we never import it just to tokenize."""
    global _np_module
    if _np_module is False:
        import sys

        mod = sys.modules.get("numpy")
        if mod is None:
            return None
        _np_module = mod
    return _np_module


def _text(tag: bytes) -> Callable[[_Hasher, Any], None]:
    return lambda hasher, obj: hasher.write(tag, repr(obj).encode())


_DISPATCH: dict[type, Callable[[_Hasher, Any], None]] = {
    type(None): lambda hasher, obj: hasher.write(b"none"),
    bool: _text(b"bool"),
    int: _text(b"int"),
    float: _text(b"float"),
    complex: _text(b"complex"),
    str: lambda hasher, obj: hasher.write(b"str", obj.encode("utf-8", "surrogatepass")),
    bytes: lambda hasher, obj: hasher.write(b"bytes", obj),
    bytearray: lambda hasher, obj: hasher.write(b"bytearray", bytes(obj)),
    memoryview: lambda hasher, obj: hasher.write(b"memoryview", obj.tobytes()),
    slice: lambda hasher, obj: (hasher.write(b"slice"), hasher.feed((obj.start, obj.stop, obj.step))),
    type(Ellipsis): lambda hasher, obj: hasher.write(b"ellipsis"),
    range: lambda hasher, obj: hasher.write(b"range", f"{obj.start},{obj.stop},{obj.step}".encode()),
    tuple: _Hasher.feed_tuple,
    list: _Hasher.feed_list,
    dict: _Hasher.feed_dict,
    set: _Hasher.feed_set,
    frozenset: _Hasher.feed_set,
    types.FunctionType: _feed_callable,
    types.BuiltinFunctionType: _feed_callable,
    functools.partial: _feed_callable,
    types.MethodType: _feed_callable,
    type: _feed_callable,
    Ref: lambda hasher, obj: hasher.write(b"ref", obj.key.encode("utf-8", "surrogatepass")),
    Task: lambda hasher, obj: (hasher.write(b"task"),
                               hasher.feed((obj.func, obj.args, obj.kwargs, obj.annotations))),
}


# --------------------------------------------------------------------------- key names

from .keys import key_split  # noqa: E402,F401 (re-exported where users have looked for it)
