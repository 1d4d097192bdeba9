"""The globals a function carries when it is pickled by value, and whether they changed.

cloudpickle sends a function of ``__main__`` (a notebook's, a script's) or a lambda by
value: its code with the globals its code reads, as they are at that moment. A cache of
its pickled bytes, or of its token, keyed by the function object alone goes stale when the
notebook rebinds such a global (``threshold = 20``, then the cell that submits runs again):
the tasks would still see ``threshold = 5``. ``fingerprint(func)`` says what those bytes
depend on, so that the caches (``protocol.tasks.dumps_function``, ``tokenize``) are used
only while it is unchanged. A function imported from a module is pickled by reference and
reads its globals where it runs: it carries none.

>>> threshold = 5
>>> def above(v):
...     return v > threshold
>>> [name for name, _ in read_globals(above)]
['threshold']
"""

from __future__ import annotations

import types
import weakref
from typing import Any

try:  # (cloudpickle's own rule of which functions it pickles by value)
    from cloudpickle.cloudpickle import _should_pickle_by_reference
except ImportError:  # pragma: no cover - another cloudpickle: a module's functions are by reference
    def _should_pickle_by_reference(obj: Any, name: Any = None) -> bool:
        return getattr(obj, "__module__", None) not in (None, "__main__") and "<" not in obj.__qualname__

__all__ = ["by_value", "carries", "read_globals", "fingerprint", "same", "UNCACHEABLE"]

#: ``fingerprint``'s answer for a function whose carried globals include a value that can
#: change in place (a list, an array, an object): its bytes must be made anew each time
UNCACHEABLE = object()

#: kinds of values that cannot change in place: a fingerprint of their identities holds
_FIXED = (types.ModuleType, type, int, float, complex, str, bytes, bool, type(None), types.BuiltinFunctionType)

_names_of: dict[types.CodeType, tuple[str, ...]] = {}
_ABSENT = object()


def _names(code: types.CodeType) -> tuple[str, ...]:
    """The global names a code object and the code nested in it may read (cached per code)."""
    found = _names_of.get(code)
    if found is None:
        names = set(code.co_names)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                names.update(_names(const))
        found = _names_of[code] = tuple(sorted(names))
        if len(_names_of) > 10_000:
            _names_of.clear()
    return found


_by_value: "weakref.WeakKeyDictionary[Any, bool]" = weakref.WeakKeyDictionary()


def by_value(func: Any) -> bool:
    """Whether cloudpickle pickles ``func`` (a Python function) by value, globals and all
    (cached per function: its module does not change)."""
    if type(func) is not types.FunctionType:
        return False
    found = _by_value.get(func)
    if found is None:
        try:
            found = not _should_pickle_by_reference(func)
        except Exception:
            found = True
        _by_value[func] = found
    return found


def carries(func: Any) -> bool:
    """Whether ``func`` may carry globals: pickled by value, and its code reads some name
    (a function of its arguments alone never does: its bytes never go stale)."""
    return by_value(func) and bool(_names(func.__code__))


def read_globals(func: Any) -> list[tuple[str, Any]]:
    """``(name, value)`` of the globals a by-value function's code reads, sorted by name;
    empty for any other callable. Attribute names among the code's names that are not
    globals are left out (cloudpickle leaves them out too)."""
    if not by_value(func):
        return []
    scope = func.__globals__
    return [(name, scope[name]) for name in _names(func.__code__) if name in scope]


def fingerprint(func: Any, _seen: set | None = None) -> Any:
    """What ``func``'s pickled bytes depend on beyond the function object: a tuple of the
    values of the globals it carries (and, for the by-value functions among them, theirs),
    to compare item by item with ``is``; ``UNCACHEABLE`` when one of them can change in
    place; ``()`` for a function that carries none.

    >>> rate = 2
    >>> def f(v):
    ...     return v * rate
    >>> before = fingerprint(f)
    >>> rate = 3
    >>> same(before, fingerprint(f))
    False
    """
    if not by_value(func):
        return ()
    names = _names(func.__code__)
    if not names:
        return ()
    scope = func.__globals__
    out: list = []
    for name in names:
        value = scope.get(name, _ABSENT)
        if value is _ABSENT:
            continue
        if isinstance(value, _FIXED):
            out.append(value)
        elif type(value) is types.FunctionType:
            out.append(value)
            if by_value(value):
                seen = {id(func)} if _seen is None else _seen
                if id(value) in seen:
                    continue
                seen.add(id(value))
                inner = fingerprint(value, seen)
                if inner is UNCACHEABLE:
                    return UNCACHEABLE
                out.extend(inner)
        elif isinstance(value, (tuple, frozenset)) and all(isinstance(v, _FIXED) for v in value):
            out.append(value)
        elif callable(value) and not hasattr(value, "__dict__"):  # (a ufunc, a builtin's method)
            out.append(value)
        else:
            return UNCACHEABLE
    return tuple(out)


def same(a: Any, b: Any) -> bool:
    """Whether two fingerprints are of the same values (identities, not equality: a rebound
    global is another object, even when equal in value)."""
    if a is UNCACHEABLE or b is UNCACHEABLE or len(a) != len(b):
        return False
    return all(x is y for x, y in zip(a, b))
