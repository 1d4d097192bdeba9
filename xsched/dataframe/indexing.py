"""Selecting by label and by partition: ``loc``, ``partitions``, and the accessors.

``df.loc[a:b]`` uses known divisions to read only the partitions that can hold the labels
(partial date strings such as ``"2000-01-02"`` included); ``df.partitions[i]`` picks
partitions by position; ``s.str``, ``s.dt`` and ``s.cat`` run pandas' accessor methods and
properties partition by partition. ``core.py`` reaches these through its ``INDEXERS``
table, filled in here, so this module imports ``core`` and not the other way round.

>>> import pandas as pd, xsched.dataframe as xd
>>> df = xd.from_pandas(pd.DataFrame({"a": range(10)}), npartitions=5)
>>> df.loc[3:5].npartitions, df.partitions[::2].npartitions
(2, 3)
"""

from __future__ import annotations

import warnings
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from ..graph.collection import compute_collection
from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task
from . import categorical
from .core import INDEXERS, DataFrame, Series, _Frame, _labelled, _nonempty, elemwise, map_partitions, \
    new_collection, part_key, relabelled
from .reductions import reduction

__all__ = ["Accessor"]


#: accessor properties that the dtype answers, so the meta's are the data's
_FROM_DTYPE = {("cat", "ordered"), ("dt", "tz"), ("dt", "unit")}


class Accessor:
    """``s.str``, ``s.dt``, ``s.cat``: pandas' accessor methods and properties per partition.

    Except where one answer covers all partitions: ``s.str.cat()`` without ``others`` joins
    all values into one string (a reduction), ``s.cat.categories`` are the union of the
    partitions' categories and ``s.cat.codes`` code against it (the meta may not know them,
    as after ``astype("category")``: ``categorical.py``, which also gives ``s.cat.known`` and
    ``s.cat.as_known()``), and properties of the dtype (``s.cat.ordered``, ``s.dt.tz``) come
    from the meta.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series(["ab", "c"]), npartitions=2)
    >>> s.str.upper().compute().tolist(), s.str.len().compute().tolist()
    (['AB', 'C'], [2, 1])
    >>> s.str.cat(sep="-").compute(), s.astype("category").cat.categories.compute().tolist()
    ('ab-c', ['ab', 'c'])
    """

    def __init__(self, series: Series, kind: str) -> None:
        try:
            self._meta_accessor = getattr(_nonempty(series._meta), kind)
        except AttributeError as exc:
            raise AttributeError(f"the .{kind} accessor does not apply to a Series of dtype "
                                 f"{series._meta.dtype}: {exc}") from None
        self._series, self._kind = series, kind

    def __getattr__(self, attr: str):
        if attr.startswith("_"):
            raise AttributeError(attr)
        if self._kind == "cat" and attr in ("known", "as_known"):  # (not pandas': its categories are always known)
            return categorical.has_known_categories(self._series) if attr == "known" else \
                partial(categorical.as_known, self._series)
        if not hasattr(self._meta_accessor, attr):
            raise AttributeError(f".{self._kind} has no {attr!r}")
        if (self._kind, attr) == ("str", "cat"):
            return self._str_cat
        if (self._kind, attr) in (("str", "split"), ("str", "rsplit")):
            return partial(self._str_split, attr)
        if (self._kind, attr) == ("str", "get_dummies"):
            return self._str_dummies
        if self._kind == "cat":
            if attr == "categories":
                return categorical.categories(self._series)
            if attr == "codes":
                return categorical.codes(self._series)
            categorical.needs_known(self._series, attr)
        if (self._kind, attr) == ("dt", "freq"):
            return self._dt_freq()
        if (self._kind, attr) in _FROM_DTYPE:
            return getattr(self._meta_accessor, attr)
        if callable(getattr(self._meta_accessor, attr)):
            return self._method(attr)
        return relabelled(map_partitions(_accessor_attr, self._series, self._kind, attr,
                                         _name=f"{self._kind}-{attr}"), self._index_source())

    def __getitem__(self, key: Any):
        """``s.str[1:3]`` is ``s.str.slice(1, 3)`` and ``s.str[0]`` is ``s.str.get(0)``, as pandas'.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> s = xd.from_pandas(pd.Series(["abc", "de"]), npartitions=2)
        >>> s.str[1:].compute().tolist(), s.str[0].compute().tolist()
        (['bc', 'e'], ['a', 'd'])
        """
        if self._kind != "str":
            raise TypeError(f"the .{self._kind} accessor takes no [...]; .str does (a slice or a position)")
        if isinstance(key, slice):
            return self._method("slice")(key.start, key.stop, key.step)
        return self._method("get")(key)

    def _method(self, attr: str):
        """The accessor's method ``attr``, run per partition (an Index's results as ``core.Index``'s)."""
        def call(*args: Any, **kwargs: Any):
            if (self._kind, attr, kwargs.get("ambiguous")) == ("dt", "tz_localize", "infer") and \
                    self._series.npartitions > 1:
                raise NotImplementedError(
                    "dt.tz_localize(ambiguous='infer') reads the order of the whole column, which no partition "
                    "sees; pass ambiguous='NaT' or 'raise', a boolean array per partition through "
                    "map_partitions, or repartition(npartitions=1) first")
            source = self._index_source()
            return relabelled(map_partitions(_accessor_call, self._series, self._kind, attr, args, kwargs,
                                             None if source is None else source._row_labels(),
                                             _name=f"{self._kind}-{attr}"), source)
        call.__name__ = attr
        return call

    def _dt_freq(self) -> Any:
        """A period Series' frequency (its dtype's); for times, pandas infers one from every
        value in order, which no partition can: that is refused, naming the ways to get it."""
        dtype = self._series._meta.dtype
        if isinstance(dtype, pd.PeriodDtype):
            return self._meta_accessor.freq
        raise ValueError(f".dt.freq of a Series of {dtype} is inferred from all its values in order "
                         "(pandas.infer_freq); compute them first: pd.infer_freq(s.compute()), or infer it from "
                         "the first rows: s.head(1000).dt.freq")

    def _index_source(self) -> Any:
        """The Index whose labels an Index result is made from (None for a Series')."""
        return self._series if isinstance(self._series._meta, pd.Index) else None

    def __dir__(self) -> list[str]:
        extra = ["as_known", "known"] if self._kind == "cat" else []
        return sorted(extra + [a for a in dir(self._meta_accessor) if not a.startswith("_")])

    def _str_split(self, method: str, pat: Any = None, *, n: int = -1, expand: bool = False, regex: Any = None):
        """``s.str.split`` / ``rsplit``. With ``expand=True`` the number of columns would depend
        on each partition's values, so ``n`` must say it: ``n + 1`` columns in every partition,
        those a partition's values do not reach missing (pandas gives a column only as far as
        some value reaches).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> s = xd.from_pandas(pd.Series(["a b", "c d e", "f"]), npartitions=2)
        >>> s.str.split(" ", n=1, expand=True).compute().to_dict("list")
        {0: ['a', 'c', 'f'], 1: ['b', 'd e', nan]}
        """
        kwargs = {"pat": pat, "n": n, "expand": expand} | ({} if regex is None else {"regex": regex})
        if not expand:
            return self._method(method)(**kwargs)
        if isinstance(self._series._meta, pd.Index) or n is None or n < 0:
            raise ValueError(f"str.{method}(expand=True) makes as many columns as values split, which each "
                             f"partition would count apart: give n= (the most splits; n + 1 columns), or "
                             f"expand=False for lists" + (" (an Index's split is not expanded here)"
                                                          if isinstance(self._series._meta, pd.Index) else ""))
        sample = getattr(_nonempty(self._series._meta).str, method)(**kwargs)
        dtype = sample.dtypes.iloc[0]  # (every column of pieces of text: the first's dtype)
        meta = sample.reindex(columns=range(n + 1)).astype(dtype).iloc[:0]
        return map_partitions(_split_columns, self._series, method, kwargs, n + 1, dtype, meta=meta,
                              _name=f"str-{method}")

    def _str_dummies(self, sep: str = "|", dtype: Any = None):
        """``s.str.get_dummies(sep)``: a column per token found in any value, so the tokens are
        computed now (a tree of each partition's, as ``categorize`` computes categories); each
        partition then has them all, 0 where none of its values holds one.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> s = xd.from_pandas(pd.Series(["a|b", "c", "b|d"]), npartitions=2)
        >>> s.str.get_dummies().compute().to_dict("list")
        {'a': [1, 0, 0], 'b': [1, 0, 1], 'c': [0, 1, 0], 'd': [0, 0, 1]}
        """
        if isinstance(self._series._meta, pd.Index):
            raise NotImplementedError("str.get_dummies of an Index: use its Series, index.to_series().str")
        kwargs = {"sep": sep} | ({} if dtype is None else {"dtype": dtype})
        found = reduction(self._series, partial(_tokens, sep=sep), _all_tokens, _all_tokens, meta=[],
                          token="str-tokens")
        tokens = sorted(compute_collection(found))
        meta = _dummies(_nonempty(self._series._meta), kwargs, tokens).iloc[:0]
        return map_partitions(_dummies, self._series, kwargs, tokens, meta=meta, _name="str-get_dummies")

    def _str_cat(self, others: Any = None, sep: str | None = None, na_rep: str | None = None,
                 join: str = "left"):
        """``s.str.cat``: without ``others``, all values joined into one string (a Scalar; missing
        values left out, or written as ``na_rep``); with ``others`` (collections partitioned
        alike), row by row per partition."""
        if others is None:
            self._meta_accessor.cat(sep=sep, na_rep=na_rep)  # (pandas' own errors, at once)
            return reduction(self._series, _str_cat_chunk, partial(_str_cat_join, sep=sep),
                             partial(_str_cat_join, sep=sep), meta="", token="str-cat",
                             chunk_kwargs={"sep": sep, "na_rep": na_rep},
                             aggregate_kwargs={"final": True})
        if isinstance(others, (list, tuple)) and others and all(isinstance(o, Series) for o in others):
            return map_partitions(_str_cat_many, self._series, sep, na_rep, join, *others, _name="str-cat")
        if not isinstance(others, _Frame):
            raise TypeError("str.cat(others=...): a list of values or a pandas object cannot be cut into this "
                            "Series' partitions; pass an xsched Series (or DataFrame, or a list of xsched Series) "
                            "partitioned alike")
        return map_partitions(_str_cat_with, self._series, others, sep, na_rep, join, _name="str-cat")


def _str_cat_chunk(part: pd.Series, sep: str | None, na_rep: str | None) -> str | None:
    """A partition's values joined, or None when there are none to join (empty partitions are
    left out, not joined as empty strings)."""
    values = part if na_rep is not None else part.dropna()
    return values.str.cat(sep=sep, na_rep=na_rep) if len(values) else None


def _str_cat_join(partials: list, sep: str | None, final: bool = False) -> str | None:
    found = [p for p in partials if p is not None]
    if not found:
        return "" if final else None
    return ("" if sep is None else sep).join(found)


def _str_cat_with(part: pd.Series, others: Any, sep: Any, na_rep: Any, join: str) -> pd.Series:
    return part.str.cat(others, sep=sep, na_rep=na_rep, join=join)


def _str_cat_many(part: pd.Series, sep: Any, na_rep: Any, join: str, *others: pd.Series) -> pd.Series:
    return part.str.cat(list(others), sep=sep, na_rep=na_rep, join=join)


def _accessor_call(part: Any, kind: str, attr: str, args: tuple, kwargs: dict, rows: Any = None) -> Any:
    out = getattr(getattr(part, kind), attr)(*args, **kwargs)
    if isinstance(part, pd.Index):
        return _labelled(out, part, rows)  # (an Index's masks: see core.Index)
    if isinstance(out, np.ndarray) and out.shape == part.shape:  # (to_pytimedelta: a value per row, as a Series)
        return pd.Series(out, index=part.index, name=part.name, dtype=out.dtype)
    return out


def _tokens(part: pd.Series, sep: str) -> set:
    """The columns pandas' own ``get_dummies`` makes of the partition's distinct values (which
    tokens count depends on the dtype: an empty one does for pyarrow's strings only)."""
    distinct = part.dropna().drop_duplicates()
    return set(distinct.str.get_dummies(sep=sep).columns) if len(distinct) else set()


def _all_tokens(partials: list) -> set:
    return set().union(*partials)


def _dummies(part: pd.Series, kwargs: dict, tokens: list) -> pd.DataFrame:
    if part.notna().any():
        out = part.str.get_dummies(**kwargs).reindex(columns=tokens, fill_value=0)
    else:  # (pandas' get_dummies fails on values all missing; none holds a token)
        out = pd.DataFrame(0, index=part.index, columns=pd.Index(tokens, dtype=object))
    return out.astype(kwargs.get("dtype", "int64"))  # (the tokens it lacks too: pandas' dtype)


def _split_columns(part: pd.Series, method: str, kwargs: dict, width: int, dtype: Any) -> pd.DataFrame:
    """A partition's expanded split, ``width`` columns of ``dtype`` whatever its values reach."""
    out = getattr(part.str, method)(**kwargs)
    return out.reindex(columns=range(width)).astype(dtype)


def _accessor_attr(part: Any, kind: str, attr: str) -> Any:
    return getattr(getattr(part, kind), attr)


class _Loc:
    def __init__(self, frame: _Frame) -> None:
        self._frame = frame

    def __getitem__(self, key: Any):
        frame = self._frame
        if callable(key):  # (as pandas: called with the collection, e.g. lambda d: d.a > 0)
            key = key(frame)
        if isinstance(key, tuple):
            rows, cols = (k(frame) if callable(k) else k for k in key)
            if isinstance(frame, DataFrame):
                names = cols if isinstance(cols, list) else [cols] if not isinstance(cols, slice) else []
                frame._check_columns(names, "loc[rows, cols]")
            if isinstance(rows, slice) and rows == slice(None):
                return map_partitions(_loc, frame, (slice(None), cols), _name="loc")
            return _loc_cols(self._rows(rows), cols)
        return self._rows(key)

    def _rows(self, key: Any):
        frame = self._frame
        if isinstance(key, _Frame):
            return elemwise(_loc, frame, key, _name="loc-mask")
        if isinstance(key, pd.Series) and pd.api.types.is_bool_dtype(key.dtype):
            # (a pandas mask, matched to each partition's rows by label as pandas does; a row
            # it does not label fails as in pandas)
            return map_partitions(_loc, frame, key, meta=frame._meta, _name="loc-mask")
        if isinstance(key, (list, np.ndarray, pd.Index, pd.Series)):
            return self._labels(list(key))
        one = None  # (the label, when one is asked for)
        if isinstance(key, slice):
            if key.step is not None:
                raise NotImplementedError("loc with a step: select the rows, then filter")
            parts = self._partitions_between(key.start, key.stop)
        else:
            parts = self._partitions_between(key, key)
            if not parts and frame.known_divisions:  # (as pandas, and as loc[[label]])
                raise KeyError(f"loc[{key!r}]: the label is outside this collection's divisions "
                               f"[{frame.divisions[0]!r}, {frame.divisions[-1]!r}], so no partition holds it")
            one, key = key, slice(key, key)  # a single label keeps the frame's shape (pandas' loc[[label]])
        if not parts:
            parts = [0]
        sub = frame.partitions[parts[0]:parts[-1] + 1]
        if one is not None:
            out = map_partitions(_loc_one, sub, one, _name="loc")
        elif frame.known_divisions or (key.start is None and key.stop is None):
            out = map_partitions(_loc, sub, key, _name="loc")
        else:  # (between two labels: where they lie is known only once every partition is read)
            out = _between_labels(sub, key)
        if frame.known_divisions and not isinstance(key.start, str) and not isinstance(key.stop, str):
            lo = frame.divisions[parts[0]] if key.start is None else max(key.start, frame.divisions[parts[0]])
            hi = frame.divisions[parts[-1] + 1] if key.stop is None else min(key.stop,
                                                                          frame.divisions[parts[-1] + 1])
            out.divisions = (lo,) + out.divisions[1:-1] + (hi,)
        return out

    def _labels(self, labels: list):
        """``loc[[a, b, ...]]``: the rows of each label, in the list's order (repeats repeated),
        as pandas gives them. Consecutive labels that the divisions place in the same partition
        make one output partition (``part.loc[those labels]``), so an unsorted list keeps its
        order; a sorted one keeps known divisions."""
        frame = self._frame
        if any(isinstance(v, (bool, np.bool_)) for v in labels):
            raise TypeError("loc[[True, False, ...]]: a list cannot be cut into the partitions; "
                            "filter with a mask collection, df[df.a > 0] or df.loc[df.index.isin([...])]")
        if not labels or (frame.npartitions == 1 and not frame.known_divisions):  # (meta: the stand-in
            # lacks the labels, and rows selected by label keep the columns)
            return map_partitions(_loc, frame.partitions[0], labels, meta=frame._meta, _name="loc")
        if not frame.known_divisions:
            raise ValueError("loc[[labels]]: the divisions are unknown, so which partition holds a label "
                             "is unknown; set_index first, or filter with df.loc[df.index.isin([...])] "
                             "(rows in partition order, each once)")
        divs = pd.Index(frame.divisions)
        try:
            after = divs.searchsorted(labels, side="right")
            below_end = divs.searchsorted(labels, side="left") <= frame.npartitions
        except (TypeError, ValueError) as exc:
            raise KeyError(f"loc[{labels!r}]: the labels do not compare with this index's divisions "
                           f"({frame.divisions[0]!r} ...): {exc}") from None
        runs: list[tuple[int, list]] = []  # (partition, its labels), in the list's order
        for label, r, inside in zip(labels, after, below_end):
            i = r - 1 if r <= frame.npartitions else frame.npartitions - 1 if inside else -1
            if i < 0:  # (as pandas, which raises when a label is missing)
                raise KeyError(f"loc[[...]]: label {label!r} is outside this collection's divisions "
                               f"[{frame.divisions[0]!r}, {frame.divisions[-1]!r}], so no partition holds it")
            if runs and runs[-1][0] == i:
                runs[-1][1].append(label)
            else:
                runs.append((i, [label]))
        name = f"loc-{new_token(frame._name, labels)}"
        keys, ann = frame._keys(), annotations_in_force()
        layer = {part_key(name, j): Task(_loc, (Ref(keys[i]), run), {}, per_task(ann))
                 for j, (i, run) in enumerate(runs)}
        try:
            ordered = all(a <= b for a, b in zip(labels, labels[1:])) and (  # ("2000-01-02": no division)
                isinstance(frame.divisions[0], str) or not any(isinstance(v, str) for v in labels))
        except TypeError:
            ordered = False
        divisions = tuple(run[0] for _, run in runs) + (labels[-1],) if ordered else (None,) * (len(runs) + 1)
        return new_collection(LayeredGraph.merge(frame._graph, new={name: layer}), name, frame._meta, divisions)

    def _partitions_between(self, start: Any, stop: Any) -> list[int]:
        frame = self._frame
        if not frame.known_divisions:
            return list(range(frame.npartitions))
        divs = frame.divisions
        if isinstance(start, str) or isinstance(stop, str):  # "2000-01-02": pandas' partial dates
            try:
                found = pd.Index(divs).slice_indexer(start, stop)
            except (TypeError, ValueError, KeyError) as exc:
                raise KeyError(f"loc[{start!r}:{stop!r}]: the labels do not compare with this index's "
                               f"divisions ({divs[0]!r} ...): {exc}") from None
            if found.start >= len(divs) or found.stop <= 0:  # all after the last label, or before the first
                return []
            first = max(found.start - 1, 0)
            return list(range(first, min(max(found.stop - 1, first), frame.npartitions - 1) + 1))
        out = []
        for i in range(frame.npartitions):
            lo, hi = divs[i], divs[i + 1]
            last = i == frame.npartitions - 1
            if start is not None and (hi < start or (hi == start and not last)):
                continue
            if stop is not None and lo > stop:
                continue
            out.append(i)
        return out

    def __setitem__(self, key: Any, value: Any) -> None:
        """``df.loc[rows, cols] = value``, as pandas: the rows a mask collection, a label, a
        list of labels, a slice of labels (known divisions) or ``:``; the columns one, a list,
        or every one (a new column is missing elsewhere); the value a scalar, one per column, or
        a collection partitioned like the frame. The frame takes the new graph; what was built
        from it before keeps the old values.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"a": [1, -2, 3], "b": [0.5, 1.5, 2.5]}), npartitions=2)
        >>> df.loc[df.a < 0, "b"] = 0.0
        >>> df.compute().b.tolist()
        [0.5, 0.0, 2.5]
        """
        frame = self._frame
        rows, cols = key if isinstance(key, tuple) and isinstance(frame, DataFrame) else (key, None)
        rows = rows(frame) if callable(rows) else rows
        cols = cols(frame) if callable(cols) else cols
        if isinstance(rows, slice) and rows == slice(None):
            if isinstance(frame, Series):
                raise NotImplementedError("s.loc[:] = value: build the new Series (s.where(s.isna(), value)) "
                                          "and assign it where it belongs, df['s'] = ...")
            frame[list(frame.columns) if cols is None else cols] = value
            return
        mask = self._rows_mask(rows)
        if isinstance(frame, Series):
            _settable(frame._meta, None, value)
            frame._become(frame.mask(mask, value))
            return
        names = list(frame.columns) if cols is None else list(cols) if isinstance(cols, (list, pd.Index)) \
            else [cols]
        if isinstance(value, DataFrame):
            values = [value[c] if c in value.columns else value[value.columns[i]] for i, c in enumerate(names)]
        elif isinstance(value, (list, tuple, np.ndarray)) and len(names) > 1:
            if len(value) != len(names):
                raise ValueError(f"loc[..., {names!r}] = ...: {len(value)} values for {len(names)} columns; "
                                 "give one per column, or one for all")
            values = list(value)
        else:
            values = [value] * len(names)
        for name, v in zip(names, values):
            if name not in frame.columns:  # (a new column: missing where the rows are not chosen)
                frame[name] = np.nan
            else:
                _settable(frame._meta[name], name, v)
            frame[name] = frame[name].mask(mask, v)

    def _rows_mask(self, rows: Any) -> Any:
        """A boolean collection partitioned like the frame, true on the rows ``rows`` chooses."""
        frame = self._frame
        if isinstance(rows, _Frame):
            return rows
        meta = pd.Series([], dtype=bool, index=frame._meta.index)
        if isinstance(rows, slice):
            if rows.step is not None or not frame.known_divisions:
                raise NotImplementedError(
                    f"loc[{rows!r}] = ...: a slice of labels sets rows by order, known here only with sorted "
                    "labels (known divisions) and no step; choose the rows with a mask, df.loc[df.index < x] = ...")
            return map_partitions(_rows_between, frame, rows.start, rows.stop, meta=meta, _name="loc-rows")
        labels = list(rows) if isinstance(rows, (list, np.ndarray, pd.Index)) else [rows]
        if any(isinstance(v, (bool, np.bool_)) for v in labels):
            raise TypeError("loc[[True, False, ...]] = ...: a list cannot be cut into the partitions; "
                            "set with a mask collection, df.loc[df.a > 0, col] = value")
        return map_partitions(_rows_in, frame, labels, meta=meta, _name="loc-rows")


def _rows_between(part: Any, start: Any, stop: Any) -> pd.Series:
    """The rows labelled from ``start`` to ``stop``, both included (pandas' slice of sorted labels)."""
    chosen = np.ones(len(part), dtype=bool)
    if start is not None:
        chosen &= np.asarray(part.index >= start)
    if stop is not None:
        chosen &= np.asarray(part.index <= stop)
    return pd.Series(chosen, index=part.index)


def _rows_in(part: Any, labels: list) -> pd.Series:
    return pd.Series(part.index.isin(labels), index=part.index)


def _loc(part: Any, key: Any) -> Any:
    return part.loc[key]


def _between_labels(frame: _Frame, key: slice) -> _Frame:
    """``loc[a:b]`` where the divisions are unknown, as pandas on the whole: each partition says
    how its labels run (``_places``), one task plans from all of them (``_plan``), and each
    partition keeps its rows of the plan. Partitions whose labels increase, one after the
    other, give each partition's own ``loc[a:b]``; otherwise pandas' ``slice_indexer`` on the
    whole index (the labels of every partition not already sorted, and of small ones, travel
    to that task) says which rows, with pandas' KeyError where it gives one."""
    tok = new_token(frame._name, key.start, key.stop)
    ann = annotations_in_force()
    keys = frame._keys()
    places, plan, name = f"loc-places-{tok}", f"loc-plan-{tok}", f"loc-{tok}"
    layers = {
        places: {chunk_key(places, (i,)): Task(_places, (Ref(k),), {}, per_task(ann)) for i, k in enumerate(keys)},
        plan: {chunk_key(plan, (0,)): Task(_plan, ([Ref(chunk_key(places, (i,))) for i in range(len(keys))], key),
                                           {}, per_task(ann))},
        name: {chunk_key(name, (i,)): Task(_planned_rows, (Ref(k), Ref(chunk_key(plan, (0,))), i, key), {},
                                           per_task(ann)) for i, k in enumerate(keys)},
    }
    return new_collection(LayeredGraph.merge(frame._graph, new=layers), name, frame._meta,
                          (None,) * (frame.npartitions + 1))


#: a partition of at most this many rows sends its labels to the plan whether sorted or not
_SMALL = 1024


def _places(part: Any) -> tuple:
    """A partition's rows, whether its labels plainly increase (not categories, not levels),
    its first and last, and its labels themselves unless they increase and are many."""
    index = part.index
    plain = not isinstance(index, (pd.MultiIndex, pd.CategoricalIndex)) and index.is_monotonic_increasing
    ends = (index[0], index[-1]) if len(index) else None
    return len(index), plain, ends, None if plain and len(index) > _SMALL else index


def _plan(infos: list, key: slice) -> Any:
    """"increasing" (each partition's own loc), or per partition the positions of its rows."""
    present = [info for info in infos if info[0]]
    try:
        if all(info[1] for info in present) and all(a[2][1] <= b[2][0] for a, b in zip(present, present[1:])):
            return "increasing"
    except TypeError:  # (labels that do not compare)
        pass
    if any(info[3] is None for info in infos):
        raise ValueError(f"loc[{key.start!r}:{key.stop!r}]: the partitions' labels are each sorted but overlap "
                         "and the divisions are unknown, so the rows between two labels depend on the order of "
                         "the whole; sort by the index first (set_index), or select by value: "
                         "df[(df.index >= a) & (df.index <= b)]")
    whole = infos[0][3].append([info[3] for info in infos[1:]]) if len(infos) > 1 else infos[0][3]
    positions = np.arange(len(whole))[whole.slice_indexer(key.start, key.stop)]
    if len(positions) > 1 and np.any(np.diff(positions) < 0):
        raise NotImplementedError(f"loc[{key.start!r}:{key.stop!r}] gives the rows in another order than "
                                  "the partitions hold them; sort by the index first")
    starts = np.cumsum([0] + [info[0] for info in infos])
    return [positions[(positions >= s) & (positions < e)] - s for s, e in zip(starts[:-1], starts[1:])]


def _planned_rows(part: Any, plan: Any, i: int, key: slice) -> Any:
    return part.loc[key] if plan == "increasing" else part.iloc[plan[i]]


def _loc_one(part: Any, label: Any) -> Any:
    """The rows labelled ``label`` (a day of a DatetimeIndex by "2000-01-02" too), as a frame,
    none where this partition lacks it: its index sorted or not, as divisions unknown allow."""
    try:
        where = part.index.get_loc(label)
    except KeyError:
        return part.iloc[:0]
    return part.iloc[[where]] if isinstance(where, (int, np.integer)) else part.iloc[where]


def _loc_cols(frame: _Frame, cols: Any):
    return map_partitions(_loc, frame, (slice(None), cols), _name="loc")


class _ILoc:
    """``df.iloc[:, cols]``: columns by position (an int, a list, a slice or a mask), partition
    by partition. Rows by position are refused when the expression is built: a row's position
    depends on the lengths of the partitions before it, which are not known until they are read.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": [1, 2], "b": [3, 4], "c": [5, 6]}), npartitions=2)
    >>> df.iloc[:, [0, 2]].compute().columns.tolist(), df.iloc[:, 1].compute().tolist()
    (['a', 'c'], [3, 4])
    """

    def __init__(self, frame: DataFrame) -> None:
        self._frame = frame

    def __setitem__(self, key: Any, value: Any) -> None:
        raise NotImplementedError(f"iloc[{key!r}] = ...: a row's position depends on the lengths of the "
                                  "partitions before it, not known until they are read; set rows with a mask "
                                  "(df.loc[df.a > 0, 'b'] = value) or columns by name (df['b'] = value)")

    def __getitem__(self, key: Any):
        if not (isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], slice) and key[0] == slice(None)):
            raise NotImplementedError(f"iloc[{key!r}]: only columns can be selected by position, "
                                      "df.iloc[:, cols]; for rows use loc (labels), partitions[i] or head")
        cols = key[1]
        meta = self._frame._meta.iloc[:, cols]  # (pandas' own error for a position out of range, at once)
        return map_partitions(_iloc_cols, self._frame, cols, meta=meta, _name="iloc")


def _settable(meta: pd.Series, name: Any, value: Any) -> None:
    """pandas' refusal of ``value`` in a column of ``meta``'s dtype (``0.5`` in integers: it
    would change the dtype), raised when ``loc[...] = value`` is built, as pandas raises it."""
    if isinstance(value, (_Frame, pd.Series, pd.DataFrame)) or hasattr(value, "__xsched_graph__") \
            or np.ndim(value) != 0:  # (a lazy value, a Scalar say: its dtype decides once computed)
        return
    probe = _nonempty(meta).copy()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            probe.iloc[0] = value
    except TypeError as exc:
        where = "" if name is None else f", {name!r}"
        raise TypeError(f"loc[...{where}] = {value!r}: {exc}, as pandas refuses it; cast first, "
                        f"as in .astype(float)") from None


def _iloc_cols(part: Any, cols: Any) -> Any:
    return part.iloc[:, cols]


DataFrame.iloc = property(_ILoc, doc=_ILoc.__doc__)  # type: ignore[attr-defined]


class _Partitions:
    def __init__(self, frame: _Frame) -> None:
        self._frame = frame

    def __getitem__(self, index: Any):
        """Partitions by position: an int, a slice, a list of ints, or a mask of one bool per
        partition (a list, NumPy array or pandas Series, e.g. computed by map_partitions).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"a": range(6)}), npartitions=3)
        >>> [len(df.partitions[i].compute()) for i in (0, [True, False, True], [2, 0])]
        [2, 4, 4]
        """
        frame = self._frame
        positions = list(range(frame.npartitions))
        chosen = positions[index] if isinstance(index, slice) else \
            [positions[i] for i in _positions(index, frame.npartitions)]
        if not chosen:
            raise IndexError(f"partitions[{index!r}] selects none of the {frame.npartitions} partitions")
        name = f"partitions-{new_token(frame._name, chosen)}"
        keys = frame._keys()
        layer = {chunk_key(name, (j,)): Ref(keys[i]) for j, i in enumerate(chosen)}
        ordered = all(a < b for a, b in zip(chosen, chosen[1:]))  # (else the divisions would not be sorted)
        divisions = tuple(frame.divisions[i] for i in chosen) + (frame.divisions[chosen[-1] + 1],) \
            if frame.known_divisions and ordered else (None,) * (len(chosen) + 1)
        return new_collection(LayeredGraph.merge(frame._graph, new={name: layer}), name, frame._meta, divisions)


def _positions(index: Any, n: int) -> list:
    """The partition numbers ``partitions[index]`` asks for (not a slice): one, several, or
    those where a mask of ``n`` bools is True."""
    if isinstance(index, (pd.Series, pd.Index, np.ndarray)):
        index = index.tolist()
    if not isinstance(index, (list, tuple)):
        return [index]
    if index and all(isinstance(b, (bool, np.bool_)) for b in index):
        if len(index) != n:
            raise IndexError(f"partitions[mask]: the mask has {len(index)} values and the collection "
                             f"{n} partitions; give one bool per partition")
        return [i for i, b in enumerate(index) if b]
    return list(index)


INDEXERS.update(loc=_Loc, partitions=_Partitions, accessor=Accessor)
