"""How many bytes of memory an object holds, cheaply and without ever raising.

The worker calls :data:`sizeof` on every result it stores to decide when to spill, so this
must be fast for huge containers (it samples), right for numpy (views of one buffer are
counted once), and robust: a broken ``__sizeof__`` gets a fallback, not an exception.

Types are dispatched along the MRO. Optional libraries (numpy, pandas) are registered lazily,
so importing this module imports neither; the first object from such a library triggers its
registration.

>>> import numpy as np
>>> a = np.zeros(1000)
>>> sizeof(a), sizeof([a, a[:10], a[10:]]) < 2 * a.nbytes  # the views share a's buffer
(8000, True)

Register your own types:

>>> class Blob:
...     def __init__(self, n): self.n = n
>>> @sizeof.register(Blob)
... def _(blob): return blob.n
>>> sizeof(Blob(123))
123
"""

from __future__ import annotations

import itertools
import logging
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["sizeof", "register", "register_lazy", "Sizeof", "deep_getsizeof"]

logger = logging.getLogger(__name__)

_FALLBACK = 64  # bytes assumed for objects whose size cannot be measured at all
_EXACT_ITEMS = 50  # containers up to this length are measured item by item
_SAMPLE_ITEMS = 10  # larger ones are estimated from this many items
_MAX_DEPTH = 4  # nesting deeper than this is counted shallowly
_DEEP_ROWS = 1000  # pandas object columns longer than this are sampled, not walked

SizeFunc = Callable[[Any], int]


class Sizeof:
    """A callable registry of size functions, looked up along the type's MRO.

    >>> s = Sizeof()
    >>> _ = s.register(str)(lambda x: len(x))
    >>> s("abc")
    3
    """

    def __init__(self) -> None:
        self._funcs: dict[type, SizeFunc] = {}
        self._lazy: dict[str, Callable[[], None]] = {}
        self._cache: dict[type, SizeFunc] = {}

    def register(self, types: type | tuple[type, ...], func: SizeFunc | None = None) -> Any:
        """Register ``func(obj) -> int`` for ``types``; usable as a decorator.

        >>> class Img:
        ...     nbytes = 10
        >>> _ = sizeof.register(Img)(lambda img: img.nbytes)
        >>> sizeof(Img())
        10
        """

        def decorator(f: SizeFunc) -> SizeFunc:
            for t in types if isinstance(types, tuple) else (types,):
                if not isinstance(t, type):
                    raise TypeError(f"sizeof.register expects types, got {t!r}.")
                self._funcs[t] = f
            self._cache.clear()
            return f

        return decorator(func) if func is not None else decorator

    def register_lazy(self, toplevel: str, func: Callable[[], None] | None = None) -> Any:
        """Run ``func()`` (which registers types) when an object from module ``toplevel`` is first seen.

        >>> @sizeof.register_lazy("mylib")  # doctest: +SKIP
        ... def _register_mylib():
        ...     import mylib
        ...     sizeof.register(mylib.Frame)(lambda f: f.nbytes)
        """

        def decorator(f: Callable[[], None]) -> Callable[[], None]:
            self._lazy[toplevel] = f
            self._cache.clear()
            return f

        return decorator(func) if func is not None else decorator

    def dispatch(self, cls: type) -> SizeFunc:
        """The size function used for instances of ``cls`` (``sys.getsizeof`` if none is registered).

        >>> sizeof.dispatch(bool) is sizeof.dispatch(int)
        True
        """
        try:
            return self._cache[cls]
        except KeyError:
            pass
        for base in cls.__mro__:
            toplevel = (getattr(base, "__module__", None) or "").partition(".")[0]
            loader = self._lazy.pop(toplevel, None)
            if loader is not None:
                try:
                    loader()
                except Exception:  # a broken optional library must not break sizeof
                    logger.debug("lazy sizeof registration for %s failed", toplevel, exc_info=True)
                self._cache.clear()
        for base in cls.__mro__:
            if base in self._funcs:
                func = self._cache[cls] = self._funcs[base]
                return func
        self._cache[cls] = _getsizeof
        return _getsizeof

    def __call__(self, obj: Any) -> int:
        """Bytes of memory held by ``obj``; never raises.

        >>> sizeof(b"x" * 1000) >= 1000
        True
        """
        try:
            return _as_size(self.dispatch(type(obj))(obj))
        except Exception:
            logger.debug("sizeof failed for %s; falling back", type(obj).__name__, exc_info=True)
            return _getsizeof(obj)


def _as_size(value: Any) -> int:
    size = int(value)
    return size if size >= 0 else 0


def _getsizeof(obj: Any) -> int:
    try:
        return _as_size(sys.getsizeof(obj))
    except Exception:
        return _FALLBACK


sizeof = Sizeof()
register = sizeof.register
register_lazy = sizeof.register_lazy


# --- builtins ------------------------------------------------------------------------------------


@sizeof.register(memoryview)
def _sizeof_memoryview(view: memoryview) -> int:
    return view.nbytes


_CONTAINERS = (list, tuple, set, frozenset, dict)


class _Arrays:
    """Arrays met while walking one container, grouped by the buffer they view.

    A group costs the sum of its members' bytes, but never more than the owning buffer:
    so ``[a, a[:10]]`` counts ``a`` once and ``[a[:10], a[10:]]`` counts ``a`` once as well.
    ``weight`` is the sampling factor of the container the array was found in.
    """

    def __init__(self) -> None:
        self.groups: dict[int, list[Any]] = {}  # id(root) -> [root, sum, max_weight]

    def add(self, arr: Any, weight: float) -> None:
        import numpy as np  # already imported: arr is an ndarray

        root = arr
        while isinstance(root.base, np.ndarray):
            root = root.base
        group = self.groups.setdefault(id(root), [root, 0.0, 0.0])
        group[1] += weight * _array_nbytes(arr)
        group[2] = max(group[2], weight)

    def total(self) -> float:
        return sum(min(s, _array_nbytes(root) * w) for root, s, w in self.groups.values())


def _walk(obj: Any, arrays: _Arrays, weight: float, depth: int, stack: set[int]) -> float:
    """Bytes of ``obj`` excluding numpy buffers, which are handed to ``arrays`` instead."""
    func = sizeof.dispatch(type(obj))
    if func is _sizeof_ndarray:
        arrays.add(obj, weight)
        return weight * _getsizeof_header(obj)
    if func is not _sizeof_container:
        return weight * sizeof(obj)
    own = _getsizeof(obj)
    if depth >= _MAX_DEPTH or id(obj) in stack:
        return weight * own
    items: Any = obj.items() if isinstance(obj, dict) else obj
    n = len(obj)
    if n <= _EXACT_ITEMS:
        sample = list(items)
    elif isinstance(obj, (list, tuple)):
        sample = [obj[i * n // _SAMPLE_ITEMS] for i in range(_SAMPLE_ITEMS)]  # evenly spaced
    else:
        sample = list(itertools.islice(items, _SAMPLE_ITEMS))
    if isinstance(obj, dict):
        sample = [x for pair in sample for x in pair]
        scale = n / (len(sample) / 2) if sample else 1.0
    else:
        scale = n / len(sample) if sample else 1.0
    stack.add(id(obj))
    try:
        inner = sum(_walk(item, arrays, weight * scale, depth + 1, stack) for item in sample)
    finally:
        stack.discard(id(obj))
    return weight * own + inner


def _sizeof_container(obj: Any) -> int:
    arrays = _Arrays()
    return int(_walk(obj, arrays, 1.0, 0, set()) + arrays.total())


sizeof.register(_CONTAINERS, _sizeof_container)


# --- numpy ---------------------------------------------------------------------------------------


def _array_nbytes(arr: Any) -> int:
    """Bytes of the distinct memory behind an array: broadcast (0-stride) axes count once."""
    if 0 in arr.strides:
        arr = arr[tuple(slice(None) if s else slice(0, 1) for s in arr.strides)]
    return int(arr.nbytes)


def _getsizeof_header(arr: Any) -> int:
    # an ndarray's own header, without its buffer; object arrays also hold their elements
    if arr.dtype.kind == "O":
        return _object_elements(arr.ravel() if arr.ndim != 1 else arr)
    return 0


def _object_elements(values: Any) -> int:
    """Estimated bytes of the Python objects an object array (or column) points to."""
    n = len(values)
    if n == 0:
        return 0
    if n <= _EXACT_ITEMS:
        return sum(sizeof(v) for v in values)
    picks = [values[i * n // _SAMPLE_ITEMS] for i in range(_SAMPLE_ITEMS)]
    return int(sum(sizeof(v) for v in picks) * n / _SAMPLE_ITEMS)


def _sizeof_ndarray(arr: Any) -> int:
    return _array_nbytes(arr) + _getsizeof_header(arr)


@sizeof.register_lazy("numpy")
def _register_numpy() -> None:
    import numpy as np

    sizeof.register(np.ndarray, _sizeof_ndarray)


# --- pandas --------------------------------------------------------------------------------------


@sizeof.register_lazy("pandas")
def _register_pandas() -> None:
    import pandas as pd

    def object_extra(values: Any) -> int:
        # memory_usage(deep=False) counts only pointers of Python-object storage; add the objects
        dtype = values.dtype
        python_strings = isinstance(dtype, pd.StringDtype) and dtype.storage == "python"
        if not (pd.api.types.is_object_dtype(dtype) or python_strings):
            return 0
        return _object_elements(values)

    @sizeof.register(pd.Index)
    def _index(index: Any) -> int:
        if len(index) <= _DEEP_ROWS:
            return int(index.memory_usage(deep=True))
        return int(index.memory_usage(deep=False)) + object_extra(index)

    @sizeof.register(pd.Series)
    def _series(series: Any) -> int:
        if len(series) <= _DEEP_ROWS:
            return int(series.memory_usage(deep=True, index=True))
        shallow = int(series.memory_usage(deep=False, index=False))
        return shallow + object_extra(series.array) + _index(series.index)

    @sizeof.register(pd.DataFrame)
    def _frame(frame: Any) -> int:
        if len(frame) <= _DEEP_ROWS:
            return int(frame.memory_usage(deep=True, index=True).sum())
        total = int(frame.memory_usage(deep=False, index=False).sum()) + _index(frame.index)
        for i in range(frame.shape[1]):
            total += object_extra(frame.iloc[:, i].array)
        return total


def deep_getsizeof(obj: Any, seen: set | None = None) -> int:
    """Bytes a Python structure holds: ``obj`` and everything its dicts, lists, tuples, sets,
    deques and ``__slots__`` refer to, each object counted once. For measuring the
    scheduler's own tables (what ``sizeof`` of task results does not look into).

    >>> deep_getsizeof([1, 1]) == sys.getsizeof([1, 1]) + sys.getsizeof(1)
    True
    """
    from collections import deque

    seen = set() if seen is None else seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    size = sys.getsizeof(obj)
    if isinstance(obj, dict):
        size += sum(deep_getsizeof(k, seen) + deep_getsizeof(v, seen) for k, v in obj.items())
    elif isinstance(obj, (list, tuple, deque, set, frozenset)):
        size += sum(deep_getsizeof(x, seen) for x in obj)
    elif hasattr(obj, "__slots__"):
        size += sum(deep_getsizeof(getattr(obj, s), seen) for s in obj.__slots__ if hasattr(obj, s))
    return size
