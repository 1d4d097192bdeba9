"""What the tasks of a bag's element-wise operations run, one partition at a time.

Every partition is a ``list``; each function here takes partitions (and the user's
functions and arguments) and returns a new one. They live at module level so that a task
pickles them by reference and a worker imports them, and apart from ``xsched.bag.core``
(which builds the graphs) so that each stays short. Internal: the API is ``xsched.bag``.

>>> map_part(str.upper, (0,), (), (["a", "b"],), {})
['A', 'B']
>>> concat([[1, 2], [], [3]])
[1, 2, 3]
"""

from __future__ import annotations

import copy
import functools
import itertools
import pickle
import reprlib
from collections.abc import Iterable, Mapping
from typing import Any, Callable

from .reductions import NO_DEFAULT

__all__: list[str] = []  # task functions only; xsched.bag.core uses them by module


class Data:
    """Literal partition data in a task: opaque to the graph walkers (they would visit
    every element of a plain list looking for ``Ref``). ``travelled``: unpickled (on a
    worker, each run gets its own copy), or the caller's own objects (computed here)."""

    __slots__ = ("value", "travelled")

    def __init__(self, value: Any, travelled: bool = False) -> None:
        self.value, self.travelled = value, travelled

    def __reduce__(self) -> tuple:
        return (Data, (self.value, True))


def concat(parts: list) -> list:
    """The partitions, one after the other, as one list."""
    return list(itertools.chain.from_iterable(parts))


def identity(x: Any) -> Any:
    return x


def unwrap(data: Data) -> list:
    """The partition's elements, for tasks that may change them in place: computed in this
    process, a copy of the caller's mutable elements (as a worker's come unpickled), so
    neither the caller's objects nor a later compute see the changes.

    >>> rows = [[1], [2]]
    >>> got = unwrap(Data(rows)); got[0].append(9); rows
    [[1], [2]]
    """
    value = data.value
    if data.travelled or all(type(x) in _IMMUTABLE for x in value):
        return list(value)
    try:
        return pickle.loads(pickle.dumps(list(value), protocol=5))  # (what a worker would get)
    except Exception:  # noqa: BLE001 - not picklable: copied as deep as Python can, else shared
        try:
            return copy.deepcopy(list(value))
        except Exception:  # noqa: BLE001
            return list(value)


_IMMUTABLE = frozenset({int, float, complex, str, bytes, bool, type(None)})


def range_part(start: int, stop: int) -> list:
    return list(range(start, stop))


def as_list(x: Any) -> list:
    return x if type(x) is list else list(x)


def delayed_partition(x: Any) -> list:
    """The partition a ``from_delayed`` value computed to: the list of its elements."""
    if type(x) is list:
        return x
    if not isinstance(x, Iterable):
        raise TypeError(f"from_delayed: a Delayed value computed to {_SHOWN.repr(x)} (a {type(x).__name__}), but "
                        "each must compute to its partition: a list (or another iterable) of elements; return "
                        "[value] to make a partition of one")
    return list(x)


def check_lengths(what: str, columns: list) -> None:
    lengths = {len(c) for c in columns}
    if len(lengths) > 1:
        raise ValueError(f"{what}: zipped partitions have different lengths {sorted(lengths)}; Bags "
                         "zipped element by element need the same number of elements per partition")


_SHOWN = reprlib.Repr()
_SHOWN.maxstring = _SHOWN.maxother = 160
_SHOWN.maxlist = _SHOWN.maxtuple = _SHOWN.maxdict = _SHOWN.maxset = 8


def note_element(exc: BaseException, what: str) -> None:
    """Add to ``exc`` the element the user's function raised on, read from the frame of the
    loop over the partition (``x``, or ``row`` of zipped bags), so the loop costs nothing more.

    >>> try:
    ...     filter_part(lambda x: 1 / x, [2, 0])
    ... except ZeroDivisionError as exc:
    ...     exc.__notes__
    ["(the bag's filter raised on the element 0)"]
    """
    tb, found = exc.__traceback__, []
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_filename == __file__:
            found += [frame.f_locals[n] for n in ("x", "row") if n in frame.f_locals]
            if "row" in frame.f_locals and type(found[-1]) is tuple and len(found[-1]) == 1:
                found[-1] = found[-1][0]  # (one bag zipped with other arguments: its element)
        tb = tb.tb_next
    if found:
        try:
            shown = _SHOWN.repr(found[-1])
        except Exception:  # (an element whose repr fails: its type, at least)
            shown = f"of type {type(found[-1]).__name__}"
        exc.add_note(f"(the bag's {what} raised on the element {shown})")


def _naming_element(what: str) -> Callable:
    """A partition function whose user's function raising on an element says which (``note_element``)."""
    def wrap(run: Callable) -> Callable:
        @functools.wraps(run)
        def named(*args: Any, **kwargs: Any) -> list:
            try:
                return run(*args, **kwargs)
            except Exception as exc:
                note_element(exc, what)
                raise
        return named
    return wrap


@_naming_element("map")
def map_part(func: Callable, bag_pos: tuple, bag_kw: tuple, args: tuple, kwargs: dict) -> list:
    columns = [args[i] for i in bag_pos] + [kwargs[k] for k in bag_kw]
    if len(columns) == 1 and len(args) == 1 and not kwargs:
        return [func(x) for x in columns[0]]
    check_lengths("map", columns)
    args, kwargs, npos = list(args), dict(kwargs), len(bag_pos)
    out = []
    for row in zip(*columns):
        for i, v in zip(bag_pos, row):
            args[i] = v
        for k, v in zip(bag_kw, row[npos:]):
            kwargs[k] = v
        out.append(func(*args, **kwargs))
    return out


@_naming_element("starmap")
def starmap_part(func: Callable, part: list, kwargs: dict, bag_kw: tuple = ()) -> list:
    if not bag_kw:
        return [func(*x, **kwargs) for x in part]
    columns = [kwargs[k] for k in bag_kw]
    check_lengths("starmap", [part, *columns])
    kwargs, out = dict(kwargs), []
    for x, *row in zip(part, *columns):
        kwargs.update(zip(bag_kw, row))
        out.append(func(*x, **kwargs))
    return out


@_naming_element("filter")
def filter_part(predicate: Callable, part: list) -> list:
    return [x for x in part if predicate(x)]


@_naming_element("remove")
def remove_part(predicate: Callable, part: list) -> list:
    return [x for x in part if not predicate(x)]


def accumulate_part(binop: Callable, part: list, before: tuple, first: bool) -> tuple[list, Any]:
    """The running results of ``part`` and the last one, from ``before``'s last (the
    partition before's pair, or ``([], initial)`` for the first; NO_DEFAULT: none yet),
    which only the first partition shows."""
    start = before[1]
    if start is NO_DEFAULT:
        out = list(itertools.accumulate(part, binop))
    else:  # (not itertools' initial=: it takes None for no initial, and None is a running value)
        out = [start] if first else []
        for x in part:
            start = binop(start, x)
            out.append(start)
    return out, out[-1] if out else start


def product_part(left: list, right: list) -> list:
    return list(itertools.product(left, right))


def map_partitions_part(func: Callable, args: tuple, kwargs: dict) -> list:
    """``func``'s new partition: an iterable's elements, or one value (a number, a string, a
    dict: ``len``, a summary) as a partition of that one element, as dask's compute shows it."""
    out = func(*args, **kwargs)
    if isinstance(out, list):
        return out
    if isinstance(out, (str, bytes, Mapping)) or not isinstance(out, Iterable):
        return [out]
    return list(out)


def pluck_part(part: list, key: Any, default: Any) -> list:
    keys = key if isinstance(key, list) else None
    if default is NO_DEFAULT:
        if keys is None:
            return [x[key] for x in part]
        return [tuple(x[k] for k in keys) for x in part]

    def get(x: Any, k: Any) -> Any:
        try:
            return x[k]
        except (KeyError, IndexError):
            return default

    if keys is None:
        return [get(x, key) for x in part]
    return [tuple(get(x, k) for k in keys) for x in part]


def flatten_part(part: list) -> list:
    return [y for x in part for y in x]


def zip_parts(*parts: list) -> list:
    check_lengths("zip", list(parts))
    return list(zip(*parts))


def take_part(k: int, parts: list) -> list:
    return list(itertools.islice(itertools.chain.from_iterable(parts), k))


def join_pieces(items: list) -> list:
    """A new partition from a repartition plan's entry: ``(part, piece, pieces)`` each the
    ``piece``-th of ``pieces`` even cuts of ``part`` by position, joined in order."""
    out: list = []
    for part, p, pieces in items:
        n = len(part)
        out.extend(part if pieces == 1 else part[p * n // pieces:(p + 1) * n // pieces])
    return out


def nbytes_of(part: list) -> int:
    """The memory a partition's elements take (``xsched.sizeof``), for repartition by size."""
    from ..sizeof import sizeof

    return sum(sizeof(x) for x in part)


def to_frame(part: list, columns: list, dtypes: dict) -> Any:
    """A partition as a pandas DataFrame of ``meta``'s dtypes; a value that does not fit
    them (often: dtypes inferred from the first element, a later one missing) names its
    column and the ``meta=`` to pass, not just pandas' cast error."""
    import pandas as pd

    try:
        frame = pd.DataFrame(part, columns=columns)
    except (TypeError, ValueError) as exc:  # (tuples longer or shorter than the columns named)
        raise ValueError(f"to_dataframe: the elements do not make rows of the columns {columns} ({exc}); give "
                         "meta= (or columns=) naming one column per item of an element") from exc
    for column, dtype in dtypes.items():
        try:
            cast = frame[column].astype(dtype)
            _check_kept(frame[column], cast)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"to_dataframe: column {column!r} holds values that do not fit its dtype "
                             f"{dtype} (from meta=, or else inferred from the first element): {exc}; "
                             f"pass meta= with a dtype that fits, e.g. {{{column!r}: 'float64'}} or "
                             "'object'") from exc
        frame[column] = cast
    return frame


def _check_kept(values: Any, cast: Any) -> None:
    """ValueError when casting numbers or truth values to integers or booleans changed one
    (1.5 to 1, 2 to True): pandas' astype does so without a word.

    >>> import pandas as pd
    >>> _check_kept(pd.Series([1.0, 2.0]), pd.Series([1, 2]))
    >>> _check_kept(pd.Series([1.0, 1.5]), pd.Series([1, 1]))
    Traceback (most recent call last):
    ValueError: 1.5 would become 1
    """
    import numpy as np

    if not isinstance(cast.dtype, np.dtype) or cast.dtype.kind not in "iub":
        return
    source = values.to_numpy()
    if values.dtype.kind not in "iufb":
        if values.dtype != object or not all(type(v) in (bool, int, float) for v in source):
            return  # (text and other objects: pandas parses them, as asked)
    changed = np.flatnonzero(source != cast.to_numpy())
    if len(changed):
        raise ValueError(f"{source[changed[0]]} would become {cast.to_numpy()[changed[0]]}")
