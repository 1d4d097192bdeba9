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

try:  # (cloudpickle's own rules: which functions and classes it pickles by value, which globals it takes)
    from cloudpickle.cloudpickle import _extract_code_globals, _should_pickle_by_reference
except ImportError:  # pragma: no cover - another cloudpickle: a module's functions are by reference
    def _should_pickle_by_reference(obj: Any, name: Any = None) -> bool:
        return getattr(obj, "__module__", None) not in (None, "__main__") and "<" not in obj.__qualname__

    def _extract_code_globals(co: types.CodeType) -> dict:
        names = dict.fromkeys(co.co_names)  # (attribute names too: more than it takes, never fewer)
        for const in co.co_consts:
            if isinstance(const, types.CodeType):
                names.update(_extract_code_globals(const))
        return names

__all__ = ["by_value", "carries", "read_globals", "fingerprint", "same", "UNCACHEABLE"]

#: ``fingerprint``'s answer for a function whose carried globals include a value that can
#: change in place (a list, an array, an object): its bytes must be made anew each time
UNCACHEABLE = object()

#: kinds of values that cannot change in place: a fingerprint of their identities holds
_FIXED = (types.ModuleType, int, float, complex, str, bytes, bool, type(None), types.BuiltinFunctionType)

_names_of: dict[types.CodeType, tuple[str, ...]] = {}
_ABSENT = object()


def _names(code: types.CodeType) -> tuple[str, ...]:
    """The global names a code object and the code nested in it read, as cloudpickle finds
    them (not the attribute names among ``co_names``), sorted; cached per code."""
    found = _names_of.get(code)
    if found is None:
        found = _names_of[code] = tuple(sorted(_extract_code_globals(code)))
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
    empty for any other callable."""
    if not by_value(func):
        return []
    scope = func.__globals__
    return [(name, scope[name]) for name in _names(func.__code__) if name in scope]


def fingerprint(func: Any, _seen: set | None = None) -> Any:
    """What ``func``'s pickled bytes depend on beyond the function object: a tuple of the
    values of the globals it carries (and, for the by-value functions among them, theirs),
    to compare item by item with ``is`` (functions and classes as weak references, so that
    a cache keyed by the function does not keep them alive, nor itself through its own
    recursion); ``UNCACHEABLE`` when one of them can change in place (a list, an array, a
    class pickled by value); ``()`` for a function that carries none.

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
    seen = {id(func)} if _seen is None else _seen
    scope = func.__globals__
    out: list = []
    for name in names:
        value = scope.get(name, _ABSENT)
        if value is _ABSENT or id(value) in seen:  # (absent; or a function on the way here: recursion)
            continue
        if isinstance(value, _FIXED):
            out.append(value)
        elif type(value) is types.FunctionType:
            out.append(weakref.ref(value))
            if by_value(value):
                seen.add(id(value))
                inner = fingerprint(value, seen)
                if inner is UNCACHEABLE:
                    return UNCACHEABLE
                out.extend(inner)
        elif isinstance(value, type):
            if _class_by_value(value):  # (its attributes and methods travel with it, and may change)
                return UNCACHEABLE
            out.append(weakref.ref(value))
        elif isinstance(value, (tuple, frozenset)) and all(isinstance(v, _FIXED) for v in value):
            out.append(value)
        elif callable(value) and not hasattr(value, "__dict__"):  # (a ufunc, a builtin's method)
            out.append(value)
        else:
            return UNCACHEABLE
    return tuple(out)


def _class_by_value(cls: type) -> bool:
    """Whether cloudpickle pickles the class ``cls`` by value (defined in a notebook)."""
    try:
        return not _should_pickle_by_reference(cls)
    except Exception:
        return True


def same(a: Any, b: Any) -> bool:
    """Whether two fingerprints are of the same values (identities, not equality: a rebound
    global is another object, even when equal in value)."""
    if a is UNCACHEABLE or b is UNCACHEABLE or len(a) != len(b):
        return False
    return all(x is y for x, y in zip(a, b))
