"""``rolling``, ``shift``, ``diff`` and ``map_overlap``: rows that reach across a partition
boundary.

A row's window may start in the previous partition. Rather than moving whole partitions,
each partition receives only the *overlap* it needs from its predecessor: the last
``window - 1`` rows (a count window; one more with ``closed="both"`` or ``"left"``, whose
windows start a row earlier), or the rows within ``window`` of the partition's first index
value (a time window such as ``"1h"``, which needs a sorted DatetimeIndex).
Partition ``i`` is computed from ``overlap(i - 1) + partition(i)``, and the overlap's rows
are dropped from its result::

    tail-<t>-i      the last rows that partition i + 1's windows reach: of partition i and,
                    through tail-<t>-(i-1), of those before it when it is short or empty
    rolling-<t>-i   pandas' rolling on tail-<t>-(i-1) + partition i, overlap rows dropped

``map_overlap(func, before, after)`` uses the same tails (and heads, for ``after``) to call
any function on a partition with its neighbours' rows joined on, then drops them.

With ``center=True`` a window also reaches forward, and each partition receives the first
rows of its successors the same way (``head-<t>-i``, through ``head-<t>-(i+1)``). So a
window longer than a partition, or one after a filter emptied partitions, still sees every
row it covers; the tails are a chain of small tasks, as ``shift`` and ``diff``'s edges.

>>> import pandas as pd, xsched.dataframe as xd
>>> s = xd.from_pandas(pd.Series(range(8), dtype="float64"), npartitions=3)
>>> s.rolling(3).sum().compute().tolist()
[nan, nan, 3.0, 6.0, 9.0, 12.0, 15.0, 18.0]
"""

from __future__ import annotations

import datetime
import numbers
from typing import Any

import pandas as pd

from ..graph.layers import LayeredGraph, annotations_in_force, new_token, per_task
from ..graph.partials import chain_layer, row_starts
from ..graph.spec import Ref, Task
from .index import shifted_labels
from .core import _NO_META, DataFrame, Series, _check_meta, _emulate, _Frame, _nonempty, make_meta, \
    new_collection, part_key, require_sorted_times
from .pieces import _concat
from .selection import SelectsColumns
from .standin import on_stand_ins

__all__ = ["Rolling", "map_overlap"]

#: the columns a window of two Series runs on (``cov``, ``corr``)
PAIR = ("__first__", "__second__")
#: the copy of the times a window along them counts (``rolling(w, on="t")["t"]``)
ON_VALUES = "__on_values__"
_METHODS = ("sum", "mean", "min", "max", "count", "std", "var", "median", "quantile", "apply", "agg", "sem", "skew",
            "kurt", "rank")


def _edge(part: Any, n: int, last: bool) -> Any:
    """The last (or first) ``n`` rows: what a neighbour's shift reaches."""
    return part.iloc[max(len(part) - n, 0):] if last else part.iloc[:n]


def _edge_through(near: Any, part: Any, n: int, last: bool) -> Any:
    """The last (or first) ``n`` rows of this partition and, when it is shorter, of the ones
    before (after) it, whose own such rows are ``near``: what a neighbour's shift reaches,
    however short (or empty) the partitions in between."""
    edge = _edge(part, n, last)
    if near is None or not len(near) or len(edge) >= n:
        return edge
    more = _edge(near, n - len(edge), last)
    return pd.concat([more, edge] if last else [edge, more]) if len(edge) else more


def _times(rows: Any, on: Any) -> pd.Index:
    """The times a time window runs along: the index, or the column ``on``."""
    return rows.index if on is None else pd.Index(rows[on])


def _tail(near: Any, part: Any, reach: Any, is_time: bool, on: Any = None) -> Any:
    """What the next partition's windows may reach: the last ``reach`` rows, or the rows
    within ``reach`` of the last time (of the index, or of the column ``on``), of this
    partition and, through ``near`` (the previous partition's tail), of the ones before it
    when it is short or empty."""
    if not is_time:
        return _edge_through(near, part, reach, True)
    rows = pd.concat([near, part]) if near is not None and len(near) and len(part) else (
        part if len(part) or near is None else near)
    times = _times(rows, on)
    return rows[times >= times[-1] - reach] if len(rows) else rows


def _head(near: Any, part: Any, reach: Any, is_time: bool, on: Any = None) -> Any:
    """What the previous partition's centred windows may reach: the first ``reach`` rows, or
    the rows within ``reach`` of the first time, of this partition and, through ``near`` (the
    next partition's head), of the ones after it."""
    if not is_time:
        return _edge_through(near, part, reach, False)
    rows = pd.concat([part, near]) if near is not None and len(near) and len(part) else (
        part if len(part) or near is None else near)
    times = _times(rows, on)
    return rows[times <= times[0] + reach] if len(rows) else rows


def _neighbour_rows(keys: list, prefix: str, tok: str, before: Any, after: Any, is_time: bool, ann: Any,
                    on: Any = None) -> tuple[dict, list]:
    """The chains that bring each partition its neighbours' rows (see the module docstring):
    tails, the rows ``before`` reaches of the partitions before, and heads, those ``after``
    reaches of the partitions after (None: no chain); and per partition the references to
    its (previous tail, next head), None where no chain reaches. Time spans run along the
    index, or the column ``on``."""
    n = len(keys)
    tail_name, head_name = f"{prefix}-tail-{tok}", f"{prefix}-head-{tok}"
    layers: dict[str, dict] = {}
    if before is not None:
        layers[tail_name] = chain_layer(tail_name, range(n - 1), keys, _tail, (before, is_time, on),
                                        annotations=ann)
    if after is not None:
        layers[head_name] = chain_layer(head_name, range(n - 1, 0, -1), keys, _head, (after, is_time, on),
                                        annotations=ann)
    edges = [(Ref(part_key(tail_name, i - 1)) if before is not None and i else None,
              Ref(part_key(head_name, i + 1)) if after is not None and i < n - 1 else None) for i in range(n)]
    return layers, edges


def _window_of(joined: Any, window: Any, kwargs: dict, method: Any, args: tuple, method_kwargs: dict) -> Any:
    """pandas' rolling ``method`` of ``joined``; ``("pair", stat, names)``: the ``stat`` (cov,
    corr) of its two columns, as the Series of those names."""
    if isinstance(method, tuple):
        _, stat, names = method
        on = kwargs.get("on")
        if on is None:
            first, second = (joined.iloc[:, i].rename(n) for i, n in enumerate(names))
            return getattr(first.rolling(window, **kwargs), stat)(second, **method_kwargs)
        # (along the column ``on``: the pair's Series indexed by its times, as a Series' window runs)
        times = pd.Index(joined[on])
        first, second = (joined[c].set_axis(times).rename(n) for c, n in zip(PAIR, names))
        rest = {k: v for k, v in kwargs.items() if k != "on"}
        return getattr(first.rolling(window, **rest), stat)(second, **method_kwargs).set_axis(joined.index)
    return getattr(joined.rolling(window, **kwargs), method)(*args, **method_kwargs)


def _rolling(rows: Any, part: Any, window: Any, kwargs: dict, method: Any, args: tuple, method_kwargs: dict,
             ahead: Any = None) -> Any:
    """A partition of the result: pandas' rolling over the rows before it, the partition and
    (centred windows) the rows after it, the others' rows dropped (a pairwise cov or corr
    gives a row per row and column: those of the others' rows)."""
    if not len(part):
        return _window_of(part, window, kwargs, method, args, method_kwargs)
    pieces = [p for p in (rows, part, ahead) if p is not None and len(p)]
    joined = pd.concat(pieces) if len(pieces) > 1 else part
    out = _window_of(joined, window, kwargs, method, args, method_kwargs)
    start = len(rows) if rows is not None else 0
    per_row = len(out) // len(joined)
    return out.iloc[start * per_row:(start + len(part)) * per_row]


class Rolling(SelectsColumns):
    """Rolling windows over a partitioned Series or DataFrame (see the module docstring);
    ``["x"]``, ``[["x", "y"]]`` or ``.x`` gives those of some columns.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> idx = pd.date_range("2000-01-01", periods=6, freq="30min")
    >>> s = xd.from_pandas(pd.Series([1.0, 2, 3, 4, 5, 6], index=idx), npartitions=3)
    >>> s.rolling("1h").mean().compute().tolist()
    [1.0, 1.5, 2.5, 3.5, 4.5, 5.5]
    """

    def __init__(self, frame: _Frame, window: Any, step: int | None = None, **kwargs: Any) -> None:
        self._is_time = isinstance(window, (str, datetime.timedelta)) or hasattr(window, "nanos")
        if step is not None and (self._is_time or not isinstance(step, numbers.Integral) or step < 1):
            raise (NotImplementedError if self._is_time else ValueError)(
                f"rolling(step={step!r}): " + ("a window of time has no step (as in pandas)" if self._is_time
                                               else "step must be a whole number of rows, 1 or more"))
        self._step = int(step or 0)
        self._on = on = kwargs.get("on")
        if on is not None:
            _check_on(frame, on, window, self._is_time)
        if self._is_time:
            if on is None:
                require_sorted_times(frame, f"rolling({window!r}), a time window,", one_partition_will_do=True)
            window = pd.Timedelta(window)
        elif not isinstance(window, numbers.Integral) or isinstance(window, bool) or window < 0:
            raise ValueError(f"rolling: window must be a number of rows (0 or more) or a time span like '1h', "
                             f"got {window!r}")
        else:
            window = int(window)
        self._frame, self._window, self._kwargs = frame, window, kwargs
        # rows a window reaches back (forward when centred) past its own: one more with closed="both"
        # or "left", whose windows start a row earlier
        self._reach = window if self._is_time else max(window - 1 + (kwargs.get("closed") in ("both", "left")), 0)
        try:
            on_stand_ins(lambda: _nonempty(frame._meta).rolling(window, **kwargs))
        except Exception as exc:
            raise ValueError(f"rolling({window!r}, {kwargs}) fails in pandas: {exc}") from exc

    _label = "rolling(...)"
    #: with ``on``: the column selected from the window (the result's), and the name it takes
    _pick: Any = None
    _renamed: Any = None

    def __repr__(self) -> str:
        return f"xsched.Rolling<{self._frame._name}, window={self._window}>"

    def __getitem__(self, key: Any):
        """The windows of some columns (``SelectsColumns``); with ``on``, its column of times
        goes along: a list keeps it among the result's columns, as pandas', a name gives
        that column's Series."""
        on = self.__dict__.get("_on")
        if on is None or not isinstance(self.__dict__.get("_frame"), DataFrame):
            return super().__getitem__(key)
        if not isinstance(key, list) and key == on:  # (the times' own windows: a copy of them, renamed after)
            chosen = super().__getitem__([on])
            chosen._frame = chosen._frame._assign([(ON_VALUES, chosen._frame[on])])
            chosen._pick, chosen._renamed = ON_VALUES, on
            return chosen
        names = list(key) if isinstance(key, list) else [key]
        chosen = super().__getitem__(names + ([on] if on not in names else []))
        chosen._pick = None if isinstance(key, list) else key
        return chosen

    def __getattr__(self, name: str):
        chosen = self._column_or_none(name)
        if chosen is None:
            raise AttributeError(f"rolling(...) has no {name!r}: its methods are {', '.join(_METHODS)}, aggregate, "
                                 "cov and corr, and a DataFrame's columns select their windows")
        return chosen

    def _pairwise(self, stat: str, other: Any, pairwise: Any, ddof: int):
        frame, kwargs = self._frame, {"ddof": ddof}
        if self._step > 1:
            raise NotImplementedError(f"rolling(..., step=).{stat}: a step is not implemented for cov and corr, "
                                      "as in pandas; take every step-th row of the result instead")
        pick = self._pick
        if pick is not None:  # (one column selected beside the times it runs along: a Series' window)
            other = frame[pick] if other is None else other
            if not isinstance(other, Series):
                raise TypeError(f"rolling(...).{stat}: other must be an xsched Series partitioned as this one, "
                                f"not {type(other).__name__}")
            names = (self._renamed or pick, other.name)
            pair = frame[[self._on]]._assign([(PAIR[0], frame[pick]), (PAIR[1], other)])
            return Rolling(pair, self._window, **self._kwargs)._run(("pair", stat, names), **kwargs)
        if isinstance(frame, DataFrame):
            if other is not None or pairwise is False:
                raise NotImplementedError(f"rolling(...).{stat}: a DataFrame's runs pairwise over its own columns "
                                          "(other=None); for two frames, put their columns in one with assign")
            return self._run(stat, **kwargs)
        other = frame if other is None else other
        if not isinstance(other, Series):
            raise TypeError(f"rolling(...).{stat}: other must be an xsched Series partitioned as this one, "
                            f"not {type(other).__name__}")
        names = (frame.name, other.name)
        pair = frame.to_frame(PAIR[0]).assign(**{PAIR[1]: other})
        return Rolling(pair, self._window, **self._kwargs)._run(("pair", stat, names), **kwargs)

    def cov(self, other: Any = None, pairwise: Any = None, ddof: int = 1):
        """The rolling covariance with ``other`` (a Series partitioned alike; a DataFrame's
        columns pairwise), across partition boundaries.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"x": [1.0, 2, 4, 3], "y": [2.0, 1, 3, 5]}), npartitions=2)
        >>> df.x.rolling(3).cov(df.y).compute().tolist()
        [nan, nan, 1.0, 1.0]
        """
        return self._pairwise("cov", other, pairwise, ddof)

    def corr(self, other: Any = None, pairwise: Any = None, ddof: int = 1):
        """The rolling correlation with ``other`` (a Series partitioned alike; a DataFrame's
        columns pairwise), across partition boundaries.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"x": [1.0, 2, 4, 3], "y": [2.0, 1, 3, 5]}), npartitions=2)
        >>> df.rolling(2).corr().compute().loc[(3, "x"), "y"]
        np.float64(-1.0)
        """
        return self._pairwise("corr", other, pairwise, ddof)

    def _run(self, method: Any, *args: Any, **kwargs: Any):
        frame = self._frame
        label = method[1] if isinstance(method, tuple) else method
        try:
            meta = make_meta(on_stand_ins(lambda: _window_of(_nonempty(frame._meta), self._window, self._kwargs,
                                                            method, args, kwargs)))
        except Exception as exc:
            raise TypeError(f"rolling(...).{label}() fails in pandas on this data: {exc}") from exc
        tok = new_token(frame._name, self._window, self._kwargs, self._step, method, args, kwargs)
        out_name = f"rolling-{label}-{tok}"
        ann = annotations_in_force()
        keys = frame._keys()
        # (centred windows reach forward too: the next partitions' first rows)
        new, edges = _neighbour_rows(keys, "rolling", tok, self._reach,
                                     self._reach if self._kwargs.get("center") else None, self._is_time, ann,
                                     self._on)
        outs = {}
        for i, (k, (before, after)) in enumerate(zip(keys, edges)):
            outs[part_key(out_name, i)] = Task(
                _rolling, (before, Ref(k), self._window, self._kwargs, method, args, kwargs, after), {},
                per_task(ann))
        new[out_name] = outs
        if self._step > 1:  # (every step-th row of the whole frame: each partition's offset in rows)
            out_name = _every_step(new, keys, out_name, self._step, tok, ann)
        graph = LayeredGraph.merge(frame._graph, new=new)
        out = new_collection(graph, out_name, meta, frame.divisions)
        if self._pick is None:
            return out
        return out[self._pick] if self._renamed is None else out[self._pick].rename(self._renamed)


def _check_on(frame: _Frame, on: Any, window: Any, is_time: bool) -> None:
    """``rolling(on=)``: a column of a DataFrame; for a time window, of times, which run
    along it sorted across partitions (pandas, given each partition with the rows before
    it, refuses times that go back, at a boundary too)."""
    if not isinstance(frame, DataFrame):
        raise ValueError(f"rolling(on={on!r}): on names a column of a DataFrame; a Series has none, as in pandas")
    frame._check_columns([on], "rolling(on=...)")
    if is_time and getattr(frame._meta[on].dtype, "kind", "O") not in "Mm":
        raise TypeError(f"rolling({window!r}, on={on!r}): a time window runs along a column of times, and "
                        f"{on!r} is {frame._meta[on].dtype}; convert it first (xd.to_datetime)")


def _stepped(part: Any, start: int, step: int) -> Any:
    """The rows of a partition starting at whole-frame row ``start`` whose positions are
    multiples of ``step``."""
    return part.iloc[(-start) % step::step]


def _every_step(new: dict, keys: list, name: str, step: int, tok: str, ann: Any) -> str:
    """Layers (added to ``new``) keeping every ``step``-th row of the whole output ``name``, as
    pandas' ``rolling(step=)`` evaluates the window there: where each partition starts
    (``row_starts``), and each partition's rows at the multiples of ``step``."""
    layers, starts = row_starts(f"rolling-rows-{tok}", keys, annotations=ann)
    new.update(layers)
    stepped = f"rolling-step-{tok}"
    new[stepped] = {part_key(stepped, i): Task(_stepped, (Ref(part_key(name, i)), start, step), {}, per_task(ann))
                    for i, start in enumerate(starts)}
    return stepped


def _method(name: str):
    def method(self: Rolling, *args: Any, **kwargs: Any):
        return self._run(name, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = (f"The rolling {name} (pandas' ``Rolling.{name}``), across partition boundaries.\n\n"
                      ">>> import pandas as pd, xsched.dataframe as xd\n"
                      ">>> s = xd.from_pandas(pd.Series([1.0, 2, 3, 4]), npartitions=2)\n"
                      f">>> len(s.rolling(2).{name}({'lambda w: w.sum()' if name in ('apply', 'agg') else '0.5' if name == 'quantile' else ''}).compute())\n4")
    return method


for _name in _METHODS:
    setattr(Rolling, _name, _method(_name))
Rolling.aggregate = Rolling.agg  # type: ignore[attr-defined]  (pandas' two names)


def _shifted(before: Any, part: Any, after: Any, method: str, periods: int, kwargs: dict) -> Any:
    """A partition of ``shift``/``diff``: the neighbours' rows it reaches, joined on."""
    edge = before if periods > 0 else after
    if edge is None or not len(edge) or not len(part):
        return getattr(part, method)(periods, **kwargs)
    joined = _concat([edge, part] if periods > 0 else [part, edge])  # (categories each inferred: their union)
    out = getattr(joined, method)(periods, **kwargs)
    return out.iloc[len(edge):] if periods > 0 else out.iloc[:len(part)]


def _across_columns(frame: _Frame, axis: Any, method: str) -> bool:
    """``axis`` of ``shift``/``diff``: along the rows (0, "index") or, for a DataFrame, across
    each row's columns (1, "columns"), as pandas names them."""
    if isinstance(axis, str) and axis in ("index", "rows") or (not isinstance(axis, str) and axis == 0):
        return False
    if isinstance(axis, str) and axis == "columns" or (not isinstance(axis, str) and axis == 1):
        if not isinstance(frame._meta, pd.DataFrame):
            raise ValueError(f"{method}: No axis named {axis!r} for object type Series (a Series has only the "
                             "rows, axis=0)")
        return True
    raise ValueError(f"{method}: No axis named {axis!r}: 0 or 'index' moves along the rows, 1 or 'columns' "
                     "across each row")


def shift_like(frame: _Frame, method: str, periods: int, kwargs: dict):
    """``shift(periods)`` or ``diff(periods)``: each partition receives only the ``|periods|``
    rows it reaches, from its neighbour (the previous one for positive periods, the next for
    negative) and, past a shorter neighbour, from the ones beyond: each neighbour's edge is
    made from its own rows and the edge beyond it."""
    if not isinstance(periods, numbers.Integral) or isinstance(periods, bool):
        raise TypeError(f"{method}: periods must be a whole number of rows, got {periods!r} (a time shift "
                        "with freq= moves the index instead: use map_partitions)")
    periods = int(periods)
    try:
        meta = make_meta(on_stand_ins(lambda: getattr(_nonempty(frame._meta), method)(periods, **kwargs)))
    except Exception as exc:
        raise TypeError(f"{method}({periods}) fails in pandas on this data: {exc}") from exc
    tok = new_token(frame._name, method, periods, kwargs)
    edge_name, out_name = f"{method}-edge-{tok}", f"{method}-{tok}"
    ann = annotations_in_force()
    keys = frame._keys()
    n = len(keys)
    last = periods > 0
    # the rows partition i passes on: its own edge joined to those it was passed from beyond
    sources = range(n - 1) if last else range(n - 1, 0, -1)
    edges = chain_layer(edge_name, sources if periods else (), keys, _edge_through, (abs(periods), last),
                        annotations=ann)
    outs = {}
    for i, k in enumerate(keys):
        before = Ref(part_key(edge_name, i - 1)) if periods > 0 and i else None
        after = Ref(part_key(edge_name, i + 1)) if periods < 0 and i < n - 1 else None
        outs[part_key(out_name, i)] = Task(_shifted, (before, Ref(k), after, method, periods, kwargs), {},
                                           per_task(ann))
    graph = LayeredGraph.merge(frame._graph, new={edge_name: edges, out_name: outs})
    return new_collection(graph, out_name, meta, frame.divisions)


def _reach(value: Any, what: str, frame: _Frame) -> tuple[Any, bool]:
    """``before``/``after`` of ``map_overlap``: a number of rows or a time span (which needs a
    datetime index, sorted across partitions), and whether it is a time span."""
    if isinstance(value, (str, datetime.timedelta)) or hasattr(value, "nanos"):
        require_sorted_times(frame, f"map_overlap: {what}={value!r}, a time span,", one_partition_will_do=True)
        return pd.Timedelta(value), True
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 0:
        raise ValueError(f"map_overlap: {what} must be a number of rows (0 or more) or a time span like "
                         f"'1h', got {value!r}")
    return int(value), False


def _overlapped(prev: Any, part: Any, nxt: Any, func: Any, args: tuple, kwargs: dict, before: Any,
                after: Any, is_time: bool) -> Any:
    """One partition of ``map_overlap``: ``func`` over the rows before it, the partition and
    the rows after it, then only the partition's own rows of the result."""
    if is_time and len(part):  # (the tails reach from the neighbour's last row: a little wider)
        prev = prev[prev.index >= part.index[0] - before] if prev is not None else None
        nxt = nxt[nxt.index <= part.index[-1] + after] if nxt is not None else None
    prev = prev if prev is not None and len(prev) else None
    nxt = nxt if nxt is not None and len(nxt) else None
    pieces = [p for p in (prev, part, nxt) if p is not None]
    rows = pd.concat(pieces) if len(pieces) > 1 else part
    out = func(rows, *args, **kwargs)
    if len(out) != len(rows):  # (the neighbours' rows are cut off by position)
        raise ValueError(f"map_overlap: the function must return one row per row it is given; it returned "
                         f"{len(out)} for {len(rows)} (use map_partitions for functions that drop or add rows)")
    start = len(prev) if prev is not None else 0
    return out.iloc[start:start + len(part)]


def map_overlap(func: Any, frame: _Frame, before: Any, after: Any, *args: Any, meta: Any = _NO_META,
                enforce_metadata: bool = True, **kwargs: Any) -> _Frame:
    """``func(rows, *args, **kwargs)`` per partition, ``rows`` being the partition with the
    ``before`` rows ahead of it and the ``after`` rows behind it joined on (numbers of rows,
    taken through short or empty neighbours as need be, or time spans of a sorted datetime
    index), those rows dropped from the result: so moving windows, differences and the like
    written in pandas see across partition boundaries. ``func`` must return one row per row;
    each partition is checked against the meta (type and columns) unless
    ``enforce_metadata=False``.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series([1.0, 2, 3, 4, 5, 6]), npartitions=3)
    >>> xd.map_overlap(lambda x: x.rolling(3, center=True).mean(), s, 1, 1).compute().tolist()
    [nan, 2.0, 3.0, 4.0, 5.0, nan]
    """
    if not isinstance(frame, _Frame):
        raise TypeError(f"map_overlap: expected an xsched DataFrame or Series after the function, got "
                        f"{type(frame).__name__}")
    if any(isinstance(a, _Frame) for a in list(args) + list(kwargs.values())):
        raise TypeError("map_overlap: one collection only; pass others joined into it (assign or merge first)")
    what = f"map_overlap({getattr(func, '__name__', 'func')})"
    before, before_time = _reach(before, "before", frame)
    after, after_time = _reach(after, "after", frame)
    is_time = before_time or after_time
    if before_time != after_time:  # (0 rows is no span; other counts do not mix with spans)
        if (after if before_time else before) != 0:
            raise ValueError(f"map_overlap: before={before!r} and after={after!r} must both be numbers of rows "
                             "or both time spans")
        before, after = (before, pd.Timedelta(0)) if before_time else (pd.Timedelta(0), after)
    meta = _emulate(func, (frame,) + args, kwargs, what) if meta is _NO_META else make_meta(meta)
    tok = new_token(frame._name, func, before, after, args, kwargs)
    out_name = f"map-overlap-{tok}"
    ann = annotations_in_force()
    keys = frame._keys()
    new, edges = _neighbour_rows(keys, "overlap", tok, before or None, after or None, is_time, ann)
    outs = {}
    for i, (k, (prev, nxt)) in enumerate(zip(keys, edges)):
        task = Task(_overlapped, (prev, Ref(k), nxt, func, args, kwargs, before, after, is_time), {},
                    per_task(ann))
        outs[part_key(out_name, i)] = Task(_check_meta, (task, meta, what, i), {}, per_task(ann)) \
            if enforce_metadata else task
    new[out_name] = outs
    return new_collection(LayeredGraph.merge(frame._graph, new=new), out_name, meta, frame.divisions)


def _install() -> None:
    def df_map_overlap(self, func, before, after, *args, meta=_NO_META, enforce_metadata=True, **kwargs):
        """``func`` per partition with ``before``/``after`` rows of its neighbours joined on
        and dropped afterwards (see ``xsched.dataframe.map_overlap``).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> s = xd.from_pandas(pd.Series([1, 4, 9, 16]), npartitions=2)
        >>> s.map_overlap(lambda x: x.diff(), 1, 0).compute().tolist()
        [nan, 3.0, 5.0, 7.0]
        """
        return map_overlap(func, self, before, after, *args, meta=meta, enforce_metadata=enforce_metadata,
                           **kwargs)

    DataFrame.map_overlap = df_map_overlap  # type: ignore[attr-defined]
    Series.map_overlap = df_map_overlap  # type: ignore[attr-defined]

    def shift(self, periods: int = 1, freq: Any = None, axis: Any = 0, fill_value: Any = None):
        """Values moved ``periods`` rows down (up when negative), across partition
        boundaries; each partition receives only the rows it needs from its neighbour. With
        ``freq``, the labels of times move instead (by ``periods`` steps of ``freq``), and the
        divisions with them. ``axis=1`` moves each row's values across the columns, in each
        partition on its own.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series([1.0, 2, 3, 4]), npartitions=2).shift(1).tolist()
        [nan, 1.0, 2.0, 3.0]
        >>> s = xd.from_pandas(pd.Series([1, 2], index=pd.date_range("2000", periods=2)), npartitions=2)
        >>> [str(t.date()) for t in s.shift(1, freq="D").compute().index]
        ['2000-01-02', '2000-01-03']
        >>> df = xd.from_pandas(pd.DataFrame({"a": [1, 2], "b": [3, 4]}), npartitions=2)
        >>> df.shift(1, axis=1, fill_value=0).compute().to_dict("list")
        {'a': [0, 0], 'b': [1, 2]}
        """
        if _across_columns(self, axis, "shift"):
            filled = {} if fill_value is None else {"fill_value": fill_value}
            return self._method("shift", periods, freq=freq, axis=1, **filled)
        if freq is None:
            return shift_like(self, "shift", periods, {} if fill_value is None else {"fill_value": fill_value})
        index = self._meta.index
        if isinstance(freq, str) and freq == "infer":
            raise ValueError("shift(freq='infer'): a partition's labels cannot tell the whole index's frequency; "
                             "give it, e.g. shift(1, freq='D')")
        if not isinstance(index, (pd.DatetimeIndex, pd.TimedeltaIndex, pd.PeriodIndex)):
            raise TypeError(f"shift(freq={freq!r}) moves labels of times; this index is a {type(index).__name__} "
                            f"of {index.dtype}. Without freq= the values move by rows")
        return shifted_labels(self, index, periods, freq)

    def diff(self, periods: int = 1, axis: Any = 0):
        """Differences with the row ``periods`` above (below when negative), across partitions;
        ``axis=1``: with the column ``periods`` to the left, in each partition on its own.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series([1.0, 4, 9, 16]), npartitions=2).diff().tolist()
        [nan, 3.0, 5.0, 7.0]
        >>> xd.from_pandas(pd.DataFrame({"a": [1, 2], "b": [4, 8]}), npartitions=2).diff(axis=1).b.tolist()
        [3, 6]
        """
        if _across_columns(self, axis, "diff"):
            return self._method("diff", periods, axis=1)
        return shift_like(self, "diff", periods, {})

    for f in (shift, diff):
        setattr(DataFrame, f.__name__, f)
        setattr(Series, f.__name__, f)

    def rolling(self, window: Any, min_periods: int | None = None, win_type: str | None = None,
                center: bool = False, closed: str | None = None, step: int | None = None, *, on: Any = None):
        """Rolling windows of ``window`` rows or of a time span (``"1h"``); each partition
        receives only the overlap its windows need from the previous one. ``step``: the
        window evaluated at every step-th row of the whole frame only, as pandas'. ``on``: a
        column of times (sorted across partitions) that a time window runs along instead of
        the index, as pandas'.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> s = xd.from_pandas(pd.Series([1.0, 2, 3, 4]), npartitions=2)
        >>> s.rolling(2).max().compute().tolist(), s.rolling(2, step=3).max().compute().tolist()
        ([nan, 2.0, 3.0, 4.0], [nan, 4.0])
        >>> df = xd.from_pandas(pd.DataFrame({"t": pd.date_range("2000", periods=4, freq="12h"),
        ...                                   "v": [1.0, 2, 3, 4]}), npartitions=2)
        >>> df.rolling("1D", on="t").v.sum().compute().tolist()
        [1.0, 3.0, 5.0, 7.0]
        """
        kwargs = {k: v for k, v in (("min_periods", min_periods), ("win_type", win_type), ("closed", closed),
                                    ("on", on)) if v is not None}
        if center:
            kwargs["center"] = center
        return Rolling(self, window, step=step, **kwargs)

    DataFrame.rolling = rolling  # type: ignore[attr-defined]
    Series.rolling = rolling  # type: ignore[attr-defined]


_install()
