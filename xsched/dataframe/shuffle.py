"""Moving rows between partitions: hash shuffle, set_index, sort_values, merge, drop_duplicates,
duplicated.

All of them split every partition into pieces, one piece to each output: by a hash of key
columns (``shuffle``, ``merge`` on columns, ``groupby(...).apply``), or by ranges of a sorted
column whose boundaries are estimated from quantiles first (``set_index``, ``sort_values``).
Cheap cases stay cheap: a merge with a one-partition frame broadcasts it,
``set_index(sorted=True)`` only reads the partitions' minimum and maximum, and a join on
indexes with equal divisions runs partition by partition.

The pieces move one of two ways (the ``shuffle.method`` setting): ``p2p``
(``xsched.graph.p2p``, the default on a cluster) sends them worker to worker onto the
receivers' disks, so memory stays bounded whatever the data's size; ``tasks``
(``xsched.graph.shuffle``, the default without a Client) makes each piece a task result,
spilled like any other. Either way a worker lost mid-shuffle costs a rerun, not the result.

>>> import pandas as pd, xsched.dataframe as xd
>>> left = xd.from_pandas(pd.DataFrame({"k": [1, 2, 3, 4], "a": list("wxyz")}), npartitions=2)
>>> right = xd.from_pandas(pd.DataFrame({"k": [4, 3, 9], "b": [40, 30, 90]}), npartitions=2)
>>> left.merge(right, on="k").compute().sort_values("k").to_dict("list")
{'k': [3, 4], 'a': ['y', 'z'], 'b': [30, 40]}
"""

from __future__ import annotations

import math
import numbers
import warnings
from functools import partial
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..graph.collection import compute_collection
from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.p2p import p2p_layers, shuffle_method as _choose
from ..graph.shuffle import shuffle_layers
from ..graph.spec import Ref, Task
from .categorical import has_known_categories
from .core import DataFrame, Series, _Frame, _nonempty, checked_divisions, make_meta, map_partitions, new_collection, \
    unify_divisions
from .methods import concat
from .pieces import _concat
from .io import _identity, from_pandas
from .reductions import quantile, reduction
from .repartition import repartition

__all__ = ["shuffle", "set_index", "sort_values", "merge", "drop_duplicates"]

#: Above this many partitions the exchange runs in two rounds (n x sqrt(n) small tasks
#: instead of n x n).
ROUNDS_ABOVE = 64


# --------------------------------------------------------------------------- task functions


def _hash_keys(part: pd.DataFrame, on: Sequence[Any] | None, dtypes: Sequence[Any] | None) -> np.ndarray:
    """One hash per row of the ``on`` columns, or of the index (``on=None``: a merge on one
    side's index hashes it as the other side's key columns are hashed); a name in ``on``
    that is no column is an index level's (a merge's ``on="k"`` where one side's index is
    named ``k``, as pandas allows)."""
    if on is None:
        keys = part.index.to_frame(index=False)
    elif all(c in part.columns for c in on):
        keys = part[list(on)]
    else:
        keys = pd.DataFrame({i: part[c].reset_index(drop=True) if c in part.columns
                             else pd.Series(part.index.get_level_values(c)) for i, c in enumerate(on)})
    keys = keys.set_axis(range(keys.shape[1]), axis=1)
    if dtypes is not None:  # both sides of a merge hash equal keys equally
        keys = keys.astype(dict(enumerate(dtypes)))
    return pd.util.hash_pandas_object(keys, index=False).to_numpy()


def _split_hash(part: pd.DataFrame, n: int, on: Sequence[Any] | None, dtypes: Sequence[Any] | None) -> list:
    where = (_hash_keys(part, on, dtypes) % n).astype(np.int64) if len(part) else np.zeros(0, np.int64)
    return _split_by(part, where, n)


def _split_by(part: pd.DataFrame, where: np.ndarray, n: int) -> list:
    """``part``'s rows grouped by output (``where``, each in ``0..n-1``), in their order.

    Output numbers held in one or two bytes sort by radix in one pass (NumPy's stable sort
    of small integers), a quarter of the time of sorting them as int64; ``take`` skips the
    checks ``iloc`` makes of every position."""
    small = where.astype(np.uint8 if n <= 1 << 8 else np.uint16 if n <= 1 << 16 else np.int64, copy=False)
    order = np.argsort(small, kind="stable")
    bounds = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(small, minlength=n), out=bounds[1:])
    taken = part.take(order)
    return [taken.iloc[bounds[j]:bounds[j + 1]] for j in range(n)]


def _sort_keys(values: Any, categories: Any = None) -> np.ndarray:
    """The values as they rank when sorted. A categorical whose categories are ``categories``
    (the meta's) ranks by its codes, in category order as pandas sorts it (ordered or not),
    missing as NaN; anything else by its values (so do partitions whose categories differ,
    each inferred by ``astype("category")``: sorted, the order their union keeps)."""
    dtype = values.dtype
    if categories is not None and isinstance(dtype, pd.CategoricalDtype) and dtype.categories.equals(categories):
        codes = np.asarray(values.codes if isinstance(values, pd.Index) else values.cat.codes, dtype="float64")
        codes[codes < 0] = np.nan
        return codes
    return values.to_numpy()


def _sort_key_series(part: pd.Series, categories: Any) -> pd.Series:
    return pd.Series(_sort_keys(part, categories), name=part.name)


def _split_range(part: pd.DataFrame, n: int, column: Any, boundaries: list, ascending: bool,
                 nulls_first: bool = False, categories: Any = None) -> list:
    values = _sort_keys(part.index if column is None else part[column], categories)
    nulls = pd.isna(values)
    # missing values go to the first or the last output, as pandas puts them; only the others
    # are searched (a missing value compares with nothing, e.g. None among strings)
    where = np.full(len(values), 0 if nulls_first else n - 1, np.int64)
    present = ~nulls
    if present.any():
        found = np.searchsorted(_as_values(boundaries, values.dtype), values[present], side="right").astype(np.int64)
        where[present] = (n - 1) - found if not ascending else found
    return _split_by(part, where, n)


def _as_values(boundaries: list, dtype: Any) -> np.ndarray:
    """The boundaries in the values' own NumPy dtype to search them: Timestamps as
    ``datetime64`` of the values' unit (as objects, nanosecond ones become ints that compare
    with no Timestamp), objects for object values."""
    if dtype == object:
        return np.asarray(boundaries, dtype=object)
    kind = getattr(dtype, "kind", "")
    if kind in "mM" and kind:  # (in the values' own unit: through nanoseconds, years past 2262 wrap round)
        unit = np.datetime_data(dtype)[0]
        make = pd.Timestamp if kind == "M" else pd.Timedelta
        return np.array([make(b).as_unit(unit).asm8 for b in boundaries], dtype=dtype)
    return np.asarray(boundaries)


class _Combine:
    """The pieces of one output concatenated in input order (picklable, with the meta)."""

    def __init__(self, meta: Any) -> None:
        self.meta = meta

    def __call__(self, pieces: list) -> Any:
        out = _concat(pieces, self.meta)
        return out if len(pieces) else self.meta


class _JoinCombine:
    """One output of a two-sided exchange: the first ``n_left`` pieces are the left side's,
    the rest the right's; each side concatenated, then merged as pandas merges."""

    def __init__(self, n_left: int, left_meta: Any, right_meta: Any, kwargs: dict, upcast: dict | None = None) -> None:
        self.n_left, self.left, self.right, self.kwargs = n_left, _Combine(left_meta), _Combine(right_meta), kwargs
        self.upcast = upcast

    def __call__(self, pieces: list) -> Any:
        left = self.left(pieces[:self.n_left])
        right = self.right(pieces[self.n_left:])
        del pieces[:]  # (the pieces go as soon as both sides are whole)
        return _merge_parts(left, right, self.kwargs, self.upcast)


def _merge_meta(left: Any, right: Any, kwargs: dict) -> tuple[pd.DataFrame, dict]:
    """A merge's meta and the columns its outputs must cast (``_merge_parts``' ``upcast``).

    pandas gives a column of a side that may lack a match (the right's in a left join, both
    in an outer one) another dtype only when some row really lacks one (int64 becomes
    float64, bool object), so the meta is that of matched rows beside unmatched ones, and
    the outputs whose rows all matched take it too: the dtypes never depend on the data.

    >>> a = pd.DataFrame({"k": [1], "x": [1]}); b = pd.DataFrame({"k": [1], "y": [True]})
    >>> meta, upcast = _merge_meta(a, b, {"on": "k", "how": "left"})
    >>> meta.dtypes.astype(str).tolist(), upcast
    (['int64', 'int64', 'object'], {'y': dtype('O')})

    (``upcast`` names every float and object column: an output whose ints or truth values
    are there gives them the meta's dtype, as concatenating it with the others would.)
    """
    left, right = _nonempty(left), _nonempty(right)
    matched = pd.merge(left, right, **kwargs)
    how = kwargs.get("how", "inner")
    alone = []  # rows of one side without a match: the other side's columns all missing
    if how in ("left", "outer"):
        alone.append(pd.merge(left, right.iloc[:0], **kwargs))
    if how in ("right", "outer"):
        alone.append(pd.merge(left.iloc[:0], right, **kwargs))
    dtypes = {}
    for part in alone:
        for c in matched.columns:
            have, missing = matched[c].dtype, part[c].dtype
            # (NumPy's ints and bools have no NaN: pandas makes them float64 or object; other
            # changes, as a categorical key's, follow the keys' values, not missing rows)
            if have != missing and have.kind in "iub" and isinstance(missing, np.dtype) and missing.kind in "fO":
                dtypes[c] = missing
    meta = make_meta(matched.astype(dtypes))
    upcast = {c: t for c, t in meta.dtypes.items() if isinstance(t, np.dtype) and t.kind in "fO"}
    return meta, upcast


def _set_index_sorted(part: pd.DataFrame, column: Any, drop: bool) -> pd.DataFrame:
    return part.set_index(column, drop=drop).sort_index(kind="stable")


def _sort_part(part: pd.DataFrame, by: Any, ascending: bool, na_position: str) -> pd.DataFrame:
    return part.sort_values(by, ascending=ascending, kind="stable", na_position=na_position)


def _merge_parts(left: pd.DataFrame, right: pd.DataFrame, kwargs: dict, upcast: dict | None = None) -> pd.DataFrame:
    """One output's merge. Joined on one side's column and the other's index, pandas labels
    the rows with the column side's index, missing (NaN) where that side has no match; but a
    piece whose column side is empty would come out labelled with the other side's index, so
    those labels are made missing here, as the whole merge gives them (unless the whole column
    side is empty, where pandas keeps the other's: a piece cannot know that). ``upcast``
    (``_merge_meta``'s): the dtypes columns take where rows may lack a match, given to the
    columns of an output whose rows all matched, so every output has the meta's."""
    out = pd.merge(left, right, **kwargs)
    if upcast:
        cast = {c: t for c, t in upcast.items() if out[c].dtype.kind in "iub"}
        if cast:
            out = out.astype(cast)
    how = kwargs.get("how", "inner")
    for side, on_index, other_on_index, keeps_other in ((left, "left_index", "right_index", "right"),
                                                         (right, "right_index", "left_index", "left")):
        if len(out) and not len(side) and how in (keeps_other, "outer") and kwargs.get(other_on_index) \
                and not kwargs.get(on_index):  # (``side`` joins on a column and received no rows)
            out.index = side.index.take(np.full(len(out), -1), allow_fill=True, fill_value=np.nan)
    return out


def _drop_dups(part: Any, subset: Any, keep: Any) -> Any:
    if isinstance(part, pd.Series):
        return part.drop_duplicates(keep=keep)
    return part.drop_duplicates(subset=subset, keep=keep)


def _drop_dups_merge(parts: list, subset: Any, keep: Any) -> Any:
    return _drop_dups(pd.concat(parts), subset, keep)


def _min_max(part: Any, column: Any) -> tuple:
    """(least, largest, how many, whether any is missing) of the index or ``column``."""
    values = part.index if column is None else part[column]
    kept = values.dropna()
    missing = len(kept) < len(values)
    return (kept.min(), kept.max(), len(kept), missing) if len(kept) else (None, None, 0, missing)


# --------------------------------------------------------------------------- the exchange


def _exchange(frame: _Frame, npartitions: int, split: Any, token: str, name: str, method: str | None = None):
    """``frame``'s rows moved to ``npartitions`` outputs by ``split(part, n)``: worker to
    worker (p2p) or as tasks, by ``method`` or else the ``shuffle.method`` setting."""
    if _choose(method) == "p2p":
        out_name = f"p2p-{name}-{token}"
        layers, _ = p2p_layers(frame._keys(), npartitions, split, _Combine(frame._meta), token, out_name)
    else:
        out_name = f"combine-{name}-{token}"
        stages = 2 if max(frame.npartitions, npartitions) > ROUNDS_ABOVE else 1
        layers, _ = shuffle_layers(frame._keys(), npartitions, split, _Combine(frame._meta), f"{name}-{token}",
                                   stages=stages)
    graph = LayeredGraph.merge(frame._graph, new=layers)
    return new_collection(graph, out_name, frame._meta, (None,) * (npartitions + 1))


def shuffle(frame: _Frame, on: Any = None, npartitions: int | None = None, _dtypes: Any = None, *,
            on_index: bool = False, ignore_index: bool = False, method: str | None = None) -> _Frame:
    """The rows moved so that equal values of the ``on`` columns (of a Series: ``on`` its
    name, its values), or with ``on_index=True`` equal index labels, share a partition;
    ``ignore_index=True`` numbers each partition's rows anew. ``method``: ``"tasks"``,
    ``"p2p"`` or None (the ``shuffle.method`` setting).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"k": [1, 2, 1, 2], "v": range(4)}), npartitions=2)
    >>> parts = df.shuffle("k").to_delayed()
    >>> sorted(sorted(set(p.compute().k)) for p in parts if len(p.compute()))
    [[1], [2]]
    """
    if npartitions is not None and (isinstance(npartitions, bool) or not isinstance(npartitions, numbers.Integral)
                                    or npartitions < 1):
        raise ValueError(f"shuffle: npartitions must be a whole number of at least 1, got {npartitions!r}")
    n = frame.npartitions if npartitions is None else int(npartitions)
    if isinstance(on, (_Frame, pd.Series, pd.Index, pd.DataFrame)):
        raise TypeError(f"shuffle: on= names columns of the frame (or on_index=True), not a {type(on).__name__}; "
                        "to shuffle by values of your own, assign them as a column first: "
                        "df.assign(key=values).shuffle('key')")
    if (on is None) == (not on_index):
        raise TypeError("shuffle: give on= (the columns whose equal values meet) or on_index=True, not both "
                        "and not neither")
    if on is None:
        keys = None
    elif isinstance(frame, Series):
        if on != frame.name and on != [frame.name]:
            raise KeyError(f"shuffle: a Series shuffles by its own values, on={frame.name!r} (its name), "
                           f"or on_index=True; got on={on!r}")
        keys = [frame.name]
    else:
        keys = [on] if not isinstance(on, (list, tuple)) else list(on)
        frame._check_columns(keys, "shuffle")
    target = frame.to_frame() if isinstance(frame, Series) and keys is not None else frame
    out = _hash_shuffle(target, keys, n, _dtypes, method)
    if target is not frame:
        out = out[frame.name]
    return out.map_partitions(_renumbered, meta=out._meta) if ignore_index else out


def _renumbered(part: Any) -> Any:
    return part.reset_index(drop=True)


def _hash_shuffle(frame: _Frame, on: list | None, n: int, dtypes: Any, method: str | None = None) -> _Frame:
    """The hash exchange by the ``on`` columns, or by the index (``on=None``), the keys cast
    to ``dtypes`` first (see ``_common_dtypes``)."""
    split = partial(_split_hash, on=on, dtypes=dtypes)
    token = new_token(frame._name, on, n, dtypes)
    return _exchange(frame, n, split, token, "shuffle", method)


def _categories(frame: _Frame, column: Any) -> Any:
    """The categories of a categorical sort column (its meta's), else None; None too when
    they are unknown (each partition inferred its own, sorted: values rank as they sort)."""
    values = frame.index if column is None else frame[column]
    dtype = values._meta.dtype
    if not isinstance(dtype, pd.CategoricalDtype) or not has_known_categories(values):
        return None
    return dtype.categories


def _quantile_boundaries(frame: _Frame, column: Any, npartitions: int) -> tuple[Any, list, Any]:
    """The column's minimum, ``npartitions - 1`` values splitting it into parts of about
    equal size, and its maximum (computed now, from a sample of every partition that keeps
    each partition's smallest and largest value, so both ends are exact). A categorical's
    are codes (see ``_sort_keys``): its values sort in category order, not as values."""
    values = frame.index if column is None else frame[column]
    categories = _categories(frame, column)
    if categories is not None:
        values = map_partitions(_sort_key_series, values, categories, _name="sort-keys",
                                meta=pd.Series([], dtype="float64", name=values._meta.name))
    est = compute_collection(quantile(values, list(np.linspace(0, 1, npartitions + 1)), exact_ends=True)).tolist()
    if pd.isna(est[0]):  # no values at all
        return None, [], None
    if pd.api.types.is_integer_dtype(values._meta.dtype) or (categories is not None and
                                                            isinstance(est[0], (int, float))):
        est = [int(round(v)) for v in est]
    lo, hi = est[0], est[-1]
    out: list = []
    for v in est[1:-1]:
        if v > (out[-1] if out else lo) and v <= hi:
            out.append(v)
    return lo, out, hi


#: the size ``set_index(npartitions="auto")`` aims each partition at
AUTO_PARTITION_BYTES = 128 * 2**20


def set_index(frame: DataFrame, other: Any, sorted: bool = False, npartitions: int | str | None = None,
              divisions: Sequence[Any] | None = None, drop: bool = True) -> DataFrame:
    """``frame`` indexed by column ``other``, sorted, with known divisions (see
    ``DataFrame.set_index``). Quantiles (and with ``sorted=True`` the partitions' minima and
    maxima) are computed now; the rows move when the result is computed. ``npartitions``:
    as many as the frame's (the default), a number, or ``"auto"``: partitions of about
    ``AUTO_PARTITION_BYTES`` in memory, from the partitions' sizes, computed now too.
    ``divisions`` given are taken as they are (nothing is computed now): they must be sorted,
    and the first and last must bound the column's values, as the divisions of the result
    say they do (rows beyond them go to the first or last partition, where ``loc`` of their
    labels does not look)."""
    if npartitions == "auto":
        sizes = compute_collection(frame.memory_usage_per_partition(deep=True))
        npartitions = max(1, math.ceil(sum(int(v) for v in sizes) / AUTO_PARTITION_BYTES))
    elif npartitions is not None and (isinstance(npartitions, bool) or not isinstance(npartitions, int)
                                      or npartitions < 1):
        raise ValueError(f"set_index: npartitions takes a number of partitions or 'auto', got {npartitions!r}")
    if isinstance(other, Series):  # (a Series partitioned like the frame: a column under a name of its own first)
        hidden = "__xsched_index__"
        out = set_index(frame._assign([(hidden, other)]), hidden, sorted, npartitions, divisions)
        return out.rename_axis(other.name)
    if isinstance(other, _Frame):
        raise TypeError(f"set_index takes a column name or a Series, not {type(other).__name__}")
    frame._check_columns([other], "set_index")
    meta = make_meta(_nonempty(frame._meta).set_index(other, drop=drop))
    if sorted:
        return _set_index_presorted(frame, other, drop, meta)
    categories = _categories(frame, other)
    if divisions is not None:
        divisions = tuple(divisions) if categories is not None else tuple(checked_divisions(
            f"set_index({other!r})", divisions, ", the first and last bounding the column's values"))
        boundaries = list(divisions[1:-1])
        codes = categories.get_indexer(boundaries) if categories is not None else None
        if codes is not None and (codes >= 0).all():  # the boundaries in category order, as codes
            if (np.diff(codes) < 0).any():
                raise ValueError(f"set_index({other!r}, divisions=...): {list(divisions)} are not in the order of "
                                 f"the column's categories {list(categories)}, which is the order it sorts in")
            boundaries = codes.tolist()
            divisions = None  # (compared as values by loc, where the rows follow category order: unknown)
        else:
            categories = None
    else:
        lo, boundaries, hi = _quantile_boundaries(frame, other, int(npartitions or frame.npartitions))
        # (a categorical's boundaries are codes: in category order, which divisions, compared
        # as values, do not follow; they stay unknown)
        divisions = (lo, *boundaries, hi) if lo is not None and categories is None else None
    n = len(boundaries) + 1
    split = partial(_split_range, column=other, boundaries=boundaries, ascending=True, categories=categories)
    token = new_token(frame._name, other, boundaries, drop, categories)
    moved = _exchange(frame, n, split, token, "set-index")
    out = map_partitions(_set_index_sorted, moved, other, drop, meta=meta, _name="set-index")
    if divisions is not None:
        out.divisions = divisions
    return out


def _set_index_presorted(frame: DataFrame, column: Any, drop: bool, meta: Any) -> DataFrame:
    try:
        return sorted_by(frame, column, drop, meta)
    except ValueError as exc:  # (not the old index's divisions, which map_partitions keeps)
        warnings.warn(f"set_index(sorted=True): {exc}; the divisions stay unknown (sorted=False sorts)",
                      stacklevel=3)
        out = map_partitions(_set_index_sorted, frame, column, drop, meta=meta, _name="set-index-sorted")
        out.divisions = (None,) * (frame.npartitions + 1)
        return out


def sorted_by(frame: DataFrame, column: Any, drop: bool = True, meta: Any = None) -> DataFrame:
    """``frame`` indexed by ``column``, whose values its partitions hold in order already:
    the divisions from their minima and maxima (``current_stats``), the rows of a value that
    spans two partitions moved forward. Raises ``ValueError`` (``EmptyFrame`` when no
    partition has a row) where there are no divisions to give."""
    if meta is None:
        meta = make_meta(_nonempty(frame._meta).set_index(column, drop=drop))
    divisions, moves = current_stats(frame, column)
    out = map_partitions(_set_index_sorted, frame, column, drop, meta=meta, _name="set-index-sorted")
    if moves:
        out = _moved_forward(out, divisions)
    out.divisions = divisions
    return out


class EmptyFrame(ValueError):
    """Every partition is empty: there is no value to make divisions of."""


def current_stats(frame: _Frame, col: Any = None) -> tuple[tuple, bool]:
    """The divisions the partitions' values give (each one's least value; an empty one takes
    the next one's, or the last largest), computed from their minima and maxima; and whether
    rows lie at or above the next partition's division (a value that spans two partitions,
    or empty partitions after the last values), which a division cannot have and
    ``set_index`` moves forward. Refused for ranges that overlap and for missing values."""
    stats = compute_collection(map_partitions(_min_max, frame, col, meta=object))
    what = "the index" if col is None else f"column {col!r}"
    if any(st[3] for st in stats):
        raise ValueError(f"{what} holds missing values, which no division can place; dropna() first")
    full = [st for st in stats if st[2]]
    if not full:
        raise EmptyFrame("every partition is empty")
    if any(a[1] > b[0] for a, b in zip(full[:-1], full[1:])):
        raise ValueError(f"the partitions' ranges of {what} overlap")
    bounds, after = [], full[-1][1]
    for low, _, count, _ in reversed(stats):
        after = low if count else after
        bounds.append(after)
    divisions = tuple(reversed(bounds)) + (full[-1][1],)
    moves = any(st[2] and st[1] >= divisions[i + 1] for i, st in enumerate(stats[:-1]))
    return divisions, moves


def compute_current_divisions(frame: _Frame, col: Any = None) -> tuple:
    """The divisions the partitions have now: each one's least index value (or ``col``'s),
    and the last one's largest, computed (only the minima and maxima travel). Refused when
    the ranges overlap, when a value lies in two partitions (or empty partitions follow the
    last values), as those are no divisions: ``set_index(col, sorted=True)`` moves such rows.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": [5, 6, 7, 8]}, index=[1, 2, 3, 9]), npartitions=2)
    >>> [int(d) for d in df.clear_divisions().compute_current_divisions()]
    [1, 3, 9]
    """
    if col is not None:
        if not isinstance(frame, DataFrame):
            raise TypeError(f"compute_current_divisions: col= names a DataFrame's column; a "
                            f"{type(frame).__name__}'s divisions are of its index (col=None)")
        frame._check_columns([col], "compute_current_divisions")
    try:
        divisions, moves = current_stats(frame, col)
    except ValueError as exc:
        raise type(exc)(f"compute_current_divisions: {exc}, so they have no divisions; set_index (or "
                        "sort_values) sorts them") from None
    if moves:
        raise ValueError("compute_current_divisions: a value lies at the end of one partition and the start of "
                         "the next (or empty partitions follow the last values), which divisions cannot say; "
                         "set_index(col, sorted=True) moves those rows forward")
    return divisions


def _below(carried: Any, part: Any, bound: Any) -> Any:
    """The rows of ``carried`` then ``part`` (both sorted) below ``bound`` (all when None)."""
    rows = part if carried is None or not len(carried) else pd.concat([carried, part])
    return rows if bound is None else rows.iloc[:rows.index.searchsorted(bound, "left")]


def _at_or_above(carried: Any, part: Any, bound: Any) -> Any:
    rows = part if carried is None or not len(carried) else pd.concat([carried, part])
    return rows.iloc[rows.index.searchsorted(bound, "left"):]


def _moved_forward(frame: _Frame, divisions: tuple) -> _Frame:
    """``frame`` (each partition sorted by index) with the rows at or above the next
    division moved to the partitions after, through a chain of small tasks (the rows of a
    value that spans two partitions; those of the last value, when empty partitions follow)."""
    tok = new_token(frame._name, divisions)
    carry_name, out_name = f"set-index-carry-{tok}", f"set-index-moved-{tok}"
    ann = annotations_in_force()
    keys = frame._keys()
    n = len(keys)
    carry, out = {}, {}
    for i, key in enumerate(keys):
        before = Ref(chunk_key(carry_name, (i - 1,))) if i else None
        if i < n - 1:
            carry[chunk_key(carry_name, (i,))] = Task(_at_or_above, (before, Ref(key), divisions[i + 1]), {},
                                                      per_task(ann))
        out[chunk_key(out_name, (i,))] = Task(_below, (before, Ref(key), divisions[i + 1] if i < n - 1 else None),
                                              {}, per_task(ann))
    graph = LayeredGraph.merge(frame._graph, new={carry_name: carry, out_name: out})
    return new_collection(graph, out_name, frame._meta, divisions)


def sort_index(frame: _Frame, ascending: bool = True, npartitions: int | None = None, **kwargs: Any) -> _Frame:
    """``frame`` in the order of its index labels, as pandas' ``sort_index``: with known
    divisions each partition is sorted where it is; else the labels are set as the index
    again through the shuffle (quantiles for divisions, then the rows move), as ``set_index``.
    Descending: the same partitions in reverse, each sorted descending (divisions unknown).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series([1, 2, 3], index=[30, 10, 20]), npartitions=2, sort=False)
    >>> s.sort_index().compute().index.tolist(), s.sort_index(ascending=False).compute().tolist()
    ([10, 20, 30], [1, 3, 2])
    """
    if kwargs:
        raise NotImplementedError(f"sort_index: {sorted(kwargs)} are not run across partitions here (it sorts "
                                  "the rows by their one-level labels); per partition: "
                                  ".map_partitions(lambda part: part.sort_index(...))")
    if not isinstance(ascending, bool):
        raise TypeError(f"sort_index: ascending must be True or False, got {ascending!r}")
    if isinstance(frame._meta.index, pd.MultiIndex):
        raise NotImplementedError("sort_index of a MultiIndex: reset_index() and sort_values(<the levels>)")
    if frame.known_divisions and (npartitions is None or npartitions == frame.npartitions):
        out = frame._method("sort_index")
    else:
        label = frame._meta.index.name
        column = "__index__" if label is None else label
        if isinstance(frame, DataFrame) and column in frame.columns:
            raise ValueError(f"sort_index: the index is named {column!r} like a column; rename one of them first")
        table = frame if isinstance(frame, DataFrame) else \
            frame.to_frame(name="__values__" if frame._meta.name is None else frame._meta.name)
        table = table.rename_axis(column).reset_index()
        indexed = set_index(table, column, npartitions=npartitions).rename_axis(label)
        out = indexed if isinstance(frame, DataFrame) else indexed[indexed.columns[0]].rename(frame._meta.name)
    if ascending:
        return out
    return out.partitions[::-1]._method("sort_index", ascending=False).clear_divisions()


#: pandas' sort kinds (every one sorts stably here, which each of them allows)
_KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")


def _check_kind(kind: Any) -> None:
    if kind not in _KINDS:
        raise ValueError(f"sort_values: kind must be one of {list(_KINDS[1:])}, got {kind!r}")


def _numbered_in_order(frame: _Frame) -> _Frame:
    """``frame``'s rows numbered 0, 1, ... in their order across partitions (``ignore_index``)."""
    return concat([frame], ignore_index=True)


def sort_values(frame: _Frame, by: Any, ascending: Any = True, npartitions: int | None = None,
                na_position: str = "last") -> _Frame:
    """The rows sorted by column ``by`` (or columns, a list; ``ascending`` one bool or one
    per column): ranges of the first column (estimated from quantiles, computed now) go to
    partitions in order, every row of one first-column value to the same partition, and
    each partition is sorted by all of them, so the whole is in order as pandas sorts it.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"v": [3, 1, 4, 1, 5, 9, 2, 6]}), npartitions=3)
    >>> df.sort_values("v").v.tolist()
    [1, 1, 2, 3, 4, 5, 6, 9]
    >>> df = xd.from_pandas(pd.DataFrame({"a": [2, 1, 2, 1], "b": [1, 2, 3, 4]}), npartitions=2)
    >>> df.sort_values(["a", "b"], ascending=[True, False]).b.tolist()
    [4, 2, 3, 1]
    """
    columns = list(by) if isinstance(by, (list, tuple)) else [by]
    if not columns:
        raise ValueError("sort_values: by is empty; name the column(s) to sort by")
    if isinstance(ascending, (list, tuple)):
        if len(ascending) != len(columns):
            raise ValueError(f"sort_values: ascending has {len(ascending)} values for {len(columns)} columns "
                             f"{columns}; give one per column, or a single bool")
        ascending = [bool(a) for a in ascending]
        first_ascending = ascending[0]
    else:
        first_ascending = bool(ascending)
    if isinstance(frame, DataFrame):
        frame._check_columns(columns, "sort_values")
    if na_position not in ("first", "last"):
        raise ValueError(f"sort_values: na_position must be 'first' or 'last', got {na_position!r}")
    by = columns if len(columns) > 1 else columns[0]
    _, boundaries, _ = _quantile_boundaries(frame, columns[0], int(npartitions or frame.npartitions))
    n = len(boundaries) + 1
    categories = _categories(frame, columns[0])
    split = partial(_split_range, column=columns[0], boundaries=boundaries, ascending=first_ascending,
                    nulls_first=na_position == "first", categories=categories)
    token = new_token(frame._name, by, boundaries, ascending, na_position, categories)
    moved = _exchange(frame, n, split, token, "sort")
    return map_partitions(_sort_part, moved, by, ascending, na_position, meta=frame._meta, _name="sort")


def shares(split_out: Any, frame: _Frame, what: str, default: Any) -> Any:
    """``split_out`` as a number of output partitions: ``True`` (dask's spelling) is as many as
    ``frame``'s, None is ``default``; anything but a whole number of at least 1 is refused."""
    if split_out is None:
        return default
    if split_out is True:
        return frame.npartitions
    if isinstance(split_out, bool) or not isinstance(split_out, numbers.Integral) or split_out < 1:
        raise ValueError(f"{what}: split_out must be a whole number of at least 1 (or True: as many as the "
                         f"partitions), got {split_out!r}")
    return int(split_out)


def drop_duplicates(frame: _Frame, subset: Any = None, keep: Any = "first", split_out: Any = None,
                    split_every: int | None = None, ignore_index: bool = False) -> _Frame:
    """The rows without duplicates, in the frame's order and partitions (its divisions kept):
    each partition's first (last) row of each key meets the others' in a hash shuffle, and
    the rows kept go back to their partitions (``_distinct_in_order``), so no task holds every
    distinct row and no partition waits for the others. ``split_out=1`` is a tree of distinct
    rows in one partition instead (few distinct rows: the cheapest);
    ``split_out=n`` (``True``: as many as the frame's partitions) a hash shuffle on ``subset``
    into ``n`` partitions, each partition's duplicates dropped before it.

    ``keep=False`` drops every row whose key repeats: the rows ``duplicated(keep=False)``
    does not flag (each partition held until its flags come back).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": [1, 2, 1, 3, 2]}), npartitions=2)
    >>> df.drop_duplicates().a.tolist(), df.drop_duplicates(split_out=1).npartitions
    ([1, 2, 3], 1)
    >>> df.drop_duplicates(keep="last").a.tolist(), df.drop_duplicates(keep=False).a.tolist()
    ([1, 3, 2], [3])

    ``ignore_index=True`` labels the rows kept 0, 1, ..., n - 1 in their order across the
    partitions, as pandas' (and dask's documented) ``ignore_index``: one global numbering, not
    each partition's own from 0, so the divisions become unknown (the row counts of the
    partitions before each are added up by a chain of small tasks, see ``concat``).

    >>> df.drop_duplicates(ignore_index=True).compute().index.tolist()
    [0, 1, 2]
    """
    if ignore_index:
        return _numbered_in_order(drop_duplicates(frame, subset, keep, split_out, split_every))
    if keep not in ("first", "last", False):
        raise ValueError(f"drop_duplicates: keep must be 'first', 'last' or False, got {keep!r}")
    if subset is not None and isinstance(frame, DataFrame):
        subset = [subset] if not isinstance(subset, list) else subset
        frame._check_columns(subset, "drop_duplicates")
    split_out = shares(split_out, frame, "drop_duplicates", None)
    if split_out is None or keep is False:
        if frame.npartitions == 1:
            return map_partitions(_drop_dups, frame, subset, keep, meta=frame._meta, _name="drop-duplicates")
        if keep is False or isinstance(frame._meta, pd.DataFrame) and (
                isinstance(frame._meta.columns, pd.MultiIndex) or {_PART, _ROW} & set(frame._meta.columns)):
            return frame[~duplicated(frame, subset, keep=keep)]
        return _distinct_in_order(frame, subset, keep)
    local = map_partitions(_drop_dups, frame, subset, keep, meta=frame._meta, _name="drop-duplicates-chunk")
    if split_out > 1:
        if isinstance(frame, Series):
            name = frame.name if frame.name is not None else "__series__"
            shuffled = shuffle(local.to_frame(name), [name], split_out)[name]
        else:
            shuffled = shuffle(local, subset or list(frame.columns), split_out)
        return map_partitions(_drop_dups, shuffled, subset, keep, meta=frame._meta, _name="drop-duplicates")
    merge = partial(_drop_dups_merge, subset=subset, keep=keep)
    return reduction(local, _identity, merge, merge, meta=frame._meta, token="drop-duplicates",
                     split_every=split_every)


def _distinct_in_order(frame: _Frame, subset: list | None, keep: str) -> _Frame:
    """``drop_duplicates`` in the frame's order and partitions, streaming: each partition's
    first (last) row of each key, whole and tagged with its partition and position, meets the
    others' in a hash shuffle on the key; each share keeps the first (last) of each key in the
    frame's order, and those rows go back to the partitions they came from, in their order. No
    partition waits for the others' (they are not held), and few distinct keys move few rows."""
    token = new_token(frame._name, subset, keep, "in-order")
    name = f"distinct-local-{token}"
    ann = annotations_in_force()
    layer = {chunk_key(name, (i,)): Task(_representatives, (Ref(k), subset, i, keep), {}, per_task(ann))
             for i, k in enumerate(frame._keys())}
    local_meta = _representatives(frame._meta, subset, 0, keep)
    local = new_collection(LayeredGraph.merge(frame._graph, new={name: layer}), name, local_meta,
                           (None,) * (frame.npartitions + 1))
    keys = [_VALUE] if isinstance(frame, Series) else (subset or list(frame._meta.columns))
    n = frame.npartitions
    met = _hash_shuffle(local, keys, n, None)
    kept = map_partitions(_first_of_each, met, keys, keep, meta=local_meta, _name="distinct-kept")
    back = _exchange(kept, n, _split_by_part, new_token(kept._name, "back"), "distinct-back")
    series = isinstance(frame, Series)
    out = map_partitions(_in_their_order, back, series, frame._meta.name if series else None, meta=frame._meta,
                         _name="drop-duplicates")
    out.divisions = frame.divisions  # (each partition's own rows, in their order)
    return out


def _representatives(part: Any, subset: list | None, i: int, keep: str) -> pd.DataFrame:
    """Partition ``i``'s first (last) row of each key, whole (a Series: its values, as
    ``__value__``), tagged with ``i`` and its position."""
    rows_of = part.to_frame(_VALUE) if isinstance(part, pd.Series) else part
    keys = rows_of if subset is None or isinstance(part, pd.Series) else rows_of[subset]
    rows = np.flatnonzero(~keys.duplicated(keep=keep).to_numpy())
    out = rows_of.take(rows)
    out[_PART] = np.full(len(rows), i, np.int64)
    out[_ROW] = rows.astype(np.int64)
    return out


def _first_of_each(part: pd.DataFrame, keys: list, keep: str) -> pd.DataFrame:
    """A share's first (last) row of each key in the frame's order."""
    part = part.sort_values([_PART, _ROW], kind="stable")
    return part[~part.duplicated(subset=keys, keep=keep).to_numpy()]


def _in_their_order(part: pd.DataFrame, series: bool, name: Any) -> Any:
    """A partition's rows that were kept, in their order, without their tags (a Series' values
    as the Series ``name``)."""
    out = part.sort_values(_ROW, kind="stable").drop(columns=[_PART, _ROW])
    return out[_VALUE].rename(name) if series else out


#: the columns ``duplicated`` tags rows with: their partition and their place in it
_PART, _ROW = "__xsched_part__", "__xsched_row__"
#: the column a Series' values are tagged and shuffled as
_VALUE = "__value__"


def _key_frame(part: Any, columns: list | None) -> pd.DataFrame:
    return part.to_frame(_VALUE) if isinstance(part, pd.Series) else part[columns]


def _tag_rows(part: Any, columns: list | None, i: int, keep: Any = None) -> pd.DataFrame:
    """The key columns of partition ``i`` (a Series: its values), each row tagged with ``i``
    and its position; with ``keep`` ("first" or "last") only the rows that are not
    ``duplicated(keep=keep)`` within the partition (each key's first or last here)."""
    keys = _key_frame(part, columns)
    if keep is None:
        return keys.assign(**{_PART: np.full(len(keys), i, np.int64), _ROW: np.arange(len(keys), dtype=np.int64)})
    rows = np.flatnonzero(~keys.duplicated(keep=keep).to_numpy())
    return keys.iloc[rows].assign(**{_PART: np.full(len(rows), i, np.int64), _ROW: rows.astype(np.int64)})


def tagged_rows(frame: _Frame, columns: list | None, token: str, keep: Any = None) -> DataFrame:
    """The key ``columns`` of ``frame`` (a Series: its values, as ``__value__``), each row
    tagged with its partition and position, for work that moves rows and brings results back
    to them (``duplicated``, ``rank``); with ``keep``, each partition's first (last) row of
    each key only (``_tag_rows``)."""
    name = f"tag-{token}"
    ann = annotations_in_force()
    tags = {chunk_key(name, (i,)): Task(_tag_rows, (Ref(k), columns, i, keep), {}, per_task(ann))
            for i, k in enumerate(frame._keys())}
    return new_collection(LayeredGraph.merge(frame._graph, new={name: tags}), name,
                          _tag_rows(frame._meta, columns, 0), (None,) * (frame.npartitions + 1))


def _flag_duplicates(part: pd.DataFrame, keep: Any) -> pd.DataFrame:
    """Whole groups of equal keys, in the frame's order: which rows are duplicates, by tag."""
    part = part.sort_values([_PART, _ROW], kind="stable")
    keys = [c for c in part.columns if c not in (_PART, _ROW)]
    flags = part.duplicated(subset=keys, keep=keep).to_numpy()
    return pd.DataFrame({_PART: part[_PART].to_numpy(), _ROW: part[_ROW].to_numpy(), "__flag__": flags})


def _split_by_part(part: pd.DataFrame, n: int) -> list:
    """Each row back to the partition it was tagged with."""
    return _split_by(part, part[_PART].to_numpy(), n)


def _flags_of(part: Any, flags: pd.DataFrame, name: Any, sent_some: bool = False) -> pd.Series:
    """Partition ``part``'s flags in its own order, on its index: those that came back for the
    rows sent; where only some were sent (``_tag_rows`` with ``keep``), every row sent comes
    back flagged, and those not sent repeat a key of this partition's: duplicates."""
    values = np.full(len(part), sent_some, dtype=bool)
    values[flags[_ROW].to_numpy()] = flags["__flag__"].to_numpy()
    return pd.Series(values, index=part.index, name=name)


def duplicated(frame: _Frame, subset: Any = None, keep: Any = "first") -> Series:
    """Which rows repeat an earlier one (``keep="first"``), a later one (``"last"``), or any
    other (``False``), on the ``subset`` columns: a boolean Series partitioned as the frame.

    The key columns, each row tagged with its partition and position, go through the hash
    shuffle so that equal keys meet in one partition, where pandas flags them in the frame's
    order; the flags go back to their rows' partitions through a second exchange. So memory is
    bounded as for any shuffle, whatever the number of distinct rows. With ``keep="first"``
    (``"last"``) a partition sends only its first (last) row of each key, its other rows being
    duplicates already: few distinct keys move few rows.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": [1, 2, 1, 3, 2], "b": list("xyxzw")}), npartitions=2)
    >>> df.duplicated().tolist(), df.duplicated(subset="a", keep="last").tolist()
    ([False, False, True, False, False], [True, True, False, False, False])
    """
    if keep not in ("first", "last", False):
        raise ValueError(f"duplicated: keep must be 'first', 'last' or False, got {keep!r}")
    columns = None
    if isinstance(frame, DataFrame):
        columns = list(frame.columns) if subset is None else [subset] if not isinstance(subset, list) else subset
        frame._check_columns(columns, "duplicated")
    meta = pd.Series([], dtype=bool, name=None if isinstance(frame, DataFrame) else frame._meta.name,
                     index=frame._meta.index[:0])  # (the rows' own labels, as the flags come back to them)
    n = frame.npartitions
    local = keep if keep is not False else None  # (keep=False: a key twice here may be once elsewhere too)
    tagged = tagged_rows(frame, columns, f"duplicated-{new_token(frame._name, columns, keep)}", local)
    keys = [c for c in tagged._meta.columns if c not in (_PART, _ROW)]
    met = _hash_shuffle(tagged, keys, n, None)
    flag_meta = _flag_duplicates(tagged._meta, keep)
    flagged = map_partitions(_flag_duplicates, met, keep, meta=flag_meta, _name="duplicated-flags")
    back = _exchange(flagged, n, _split_by_part, new_token(flagged._name, "back"), "duplicated-back")
    return map_partitions(_flags_of, frame, back, meta.name, local is not None, meta=meta, _name="duplicated")


# --------------------------------------------------------------------------- merge


#: Datetime and timedelta units, coarsest first.
_UNITS = ("s", "ms", "us", "ns")


def _key_dtypes(frame: DataFrame, on: list | None) -> list:
    """The dtypes of a merge's keys: the ``on`` columns' (or of the index levels they name),
    or the index levels' (``on=None``)."""
    meta = frame._meta
    if on is not None:
        return [meta[c].dtype if c in meta.columns else meta.index.get_level_values(c).dtype for c in on]
    index = meta.index
    return list(index.dtypes) if isinstance(index, pd.MultiIndex) else [index.dtype]


def _check_keys(frame: DataFrame, names: list, what: str) -> None:
    """Each of a merge's key ``names`` is a column of ``frame`` or the name of a level of its
    index (pandas' "column or index level names")."""
    levels = [n for n in frame._meta.index.names if n is not None]
    missing = [n for n in names if n not in frame._meta.columns and n not in levels]
    if missing:
        raise KeyError(f"{what}: {missing[0]!r} is neither a column nor an index level of this DataFrame; its "
                       f"columns are {list(frame._meta.columns)}, its index levels {levels}")


#: pandas' ``validate`` values, and which sides' keys each one says are unique
_VALIDATE = {"one_to_one": "both", "1:1": "both", "one_to_many": "left", "1:m": "left", "many_to_one": "right",
             "m:1": "right", "many_to_many": "", "m:m": ""}


def _common_dtype(a: Any, b: Any) -> Any:
    """One dtype that both sides' keys cast to hash equal values equally, as pandas matches
    them: a categorical as its categories' dtype, datetimes and timedeltas in the finer unit
    (tz-aware ones as UTC instants), numbers in a type holding both, strings as objects."""
    a, b = (d.categories.dtype if isinstance(d, pd.CategoricalDtype) else d for d in (a, b))
    if a == b:
        return a
    is_dt, is_td = pd.api.types.is_datetime64_any_dtype, pd.api.types.is_timedelta64_dtype
    if (is_dt(a) and is_dt(b)) or (is_td(a) and is_td(b)):
        unit = max((np.datetime_data(np.dtype(getattr(d, "base", d)))[0] for d in (a, b)), key=_UNITS.index)
        if getattr(a, "tz", None) is not None and getattr(b, "tz", None) is not None:
            return pd.DatetimeTZDtype(unit, "UTC")
        if getattr(a, "tz", None) is None and getattr(b, "tz", None) is None:
            return np.dtype(f"{'M' if is_dt(a) else 'm'}8[{unit}]")
    elif pd.api.types.is_numeric_dtype(a) and pd.api.types.is_numeric_dtype(b):
        if isinstance(a, pd.api.extensions.ExtensionDtype) or isinstance(b, pd.api.extensions.ExtensionDtype):
            return "float64"
        return np.result_type(a, b)
    elif pd.api.types.is_string_dtype(a) and pd.api.types.is_string_dtype(b):
        return object
    raise TypeError(f"merge: the key columns have types {a} and {b}, which never compare equal; "
                    f"cast one side first, e.g. right.astype({{...: '{a}'}})")


def _common_dtypes(left: list, right: list) -> list | None:
    """The dtypes both sides' keys (dtypes ``left`` and ``right``) cast to before hashing, or
    None when they are alike already."""
    if left == right:
        return None
    return [_common_dtype(a, b) for a, b in zip(left, right)]


def merge(left: DataFrame, right: DataFrame, how: str = "inner", on: Any = None, left_on: Any = None,
          right_on: Any = None, left_index: bool = False, right_index: bool = False,
          suffixes: tuple = ("_x", "_y"), npartitions: int | None = None, broadcast: bool | None = None,
          indicator: bool = False, shuffle_method: str | None = None, sort: bool = False,
          validate: str | None = None) -> DataFrame:
    """Join two frames as ``pandas.merge``: on columns or indexes (``left_index``,
    ``right_index``, either side or both; ``on``, ``left_on`` and ``right_on`` may name index
    levels too, as pandas' do) through a hash shuffle of both sides
    (``shuffle_method``: ``"p2p"``, ``"tasks"``, or None for the ``shuffle.method`` setting),
    by broadcasting a one-partition side, or partition by partition on indexes with equal
    known divisions. ``sort=True`` orders the result by the join keys, as pandas' does, with
    a sort of the result (rows of equal keys in no set order).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> a = xd.from_pandas(pd.DataFrame({"k": [1, 2, 3], "x": [1., 2., 3.]}), npartitions=2)
    >>> b = xd.from_pandas(pd.DataFrame({"k": [1, 3], "y": ["p", "q"]}), npartitions=1)
    >>> xd.merge(a, b, on="k", how="left").compute().sort_values("k").y.tolist()
    ['p', nan, 'q']
    >>> c = xd.from_pandas(pd.DataFrame({"y": ["p", "q"]}, index=[3, 2]), npartitions=2)
    >>> xd.merge(a, c, left_on="k", right_index=True).compute().sort_index().y.tolist()
    ['q', 'p']

    ``how="cross"`` pairs every row with every row of the other side, in pandas' order: each
    partition of the left with the whole right side (which a cross join's output, the
    product of both lengths, dwarfs).

    >>> len(xd.merge(a, b, how="cross")), xd.merge(a, b, how="cross").columns.tolist()
    (6, ['k_x', 'x', 'k_y', 'y'])

    ``validate`` ("1:1", "1:m", "m:1", "m:m" or their long names) checks as pandas' does that
    the keys are unique on the sides it names, raising pandas' ``MergeError`` when the result
    is computed: every row of a key meets in one output of the shuffle, whose merge checks
    it (a one-partition side is broadcast only when its own keys are the ones checked).

    >>> dup = xd.from_pandas(pd.DataFrame({"k": [1, 1, 2]}), npartitions=2)
    >>> xd.merge(dup, b, on="k", validate="m:1").compute().k.tolist()
    [1, 1]
    """
    if how not in ("inner", "left", "right", "outer", "leftsemi", "cross"):
        raise ValueError(f"merge: how must be inner, left, right, outer or cross, got {how!r}")
    method = None if shuffle_method is None else _choose(shuffle_method)
    if sort:
        out = merge(left, right, how, on, left_on, right_on, left_index, right_index, suffixes, npartitions,
                    broadcast, indicator, method, validate=validate)
        return _sorted_by_keys(out, how, on, left_on, right_on, left_index, right_index, left, right)
    if not isinstance(left, DataFrame) or not isinstance(right, DataFrame):
        if isinstance(right, pd.DataFrame):
            right = from_pandas(right, npartitions=1)
        else:
            raise TypeError(f"merge joins two xsched DataFrames (or a pandas one on the right), got "
                            f"{type(left).__name__} and {type(right).__name__}")
    if how == "cross":
        if on is not None or left_on is not None or right_on is not None or left_index or right_index:
            raise ValueError("merge(how='cross') pairs every row with every row: give no on=, left_on=, "
                             "right_on=, left_index= or right_index=")
        kwargs = {"how": "cross", "suffixes": suffixes, "indicator": indicator}
        meta = make_meta(pd.merge(_nonempty(left._meta), _nonempty(right._meta), **kwargs))
        return _broadcast(left, repartition(right, npartitions=1), kwargs, meta, big_left=True)
    if on is not None:
        left_on = right_on = on
    if left_on is None and right_on is None and not left_index and not right_index:
        common = [c for c in left.columns if c in set(right.columns)]
        if not common:
            raise ValueError(f"merge: no on=, and the frames share no column (left has "
                             f"{list(left.columns)}, right has {list(right.columns)})")
        left_on = right_on = common
    left_on = [left_on] if left_on is not None and not isinstance(left_on, list) else left_on
    right_on = [right_on] if right_on is not None and not isinstance(right_on, list) else right_on
    if left_on is not None:
        _check_keys(left, left_on, "merge (left side)")
    if right_on is not None:
        _check_keys(right, right_on, "merge (right side)")
    kwargs: dict = {"how": how, "suffixes": suffixes, "indicator": indicator}
    kwargs.update({k: v for k, v in (("left_on", left_on), ("right_on", right_on)) if v is not None})
    kwargs.update({k: True for k, v in (("left_index", left_index), ("right_index", right_index)) if v})
    try:  # (pandas says what is wrong with the keys: too many, too few, of different lengths)
        meta, upcast = _merge_meta(left._meta, right._meta, kwargs)
    except Exception as exc:
        raise ValueError(f"merge fails in pandas on these frames' keys, columns and dtypes: "
                         f"{type(exc).__name__}: {exc}") from exc
    unique = ""  # (the sides whose keys ``validate`` says are unique)
    if validate is not None:
        if validate not in _VALIDATE:
            raise ValueError(f"merge: validate must be one of {list(_VALIDATE)} (as pandas'), got {validate!r}")
        kwargs["validate"], unique = validate, _VALIDATE[validate]
    if left_index and right_index and left.known_divisions and right.known_divisions:
        # partition by partition, each side cut first at the union of both divisions (no shuffle:
        # partition i of each then holds the same labels, and the result keeps the divisions)
        aligned = unify_divisions(left, right)
        if len(aligned) == 2 and aligned[0].divisions == aligned[1].divisions:
            return map_partitions(_merge_parts, aligned[0], aligned[1], kwargs, upcast, meta=meta,
                                  _name="merge-aligned")
    left_key = None if left_index else left_on  # (None: the index)
    right_key = None if right_index else right_on
    dtypes = _common_dtypes(_key_dtypes(left, left_key), _key_dtypes(right, right_key))
    if broadcast is not False:  # (a partition of the big side cannot tell its keys are unique in the whole)
        if right.npartitions == 1 and how in ("inner", "left") and unique not in ("both", "left"):
            return _broadcast(left, right, kwargs, meta, big_left=True, upcast=upcast)
        if left.npartitions == 1 and how in ("inner", "right") and unique not in ("both", "right"):
            return _broadcast(right, left, kwargs, meta, big_left=False, upcast=upcast)
    n = int(npartitions or max(left.npartitions, right.npartitions))
    if _choose(method) == "p2p":  # both sides in one exchange: each output merges its pieces at once
        token = new_token(left._name, right._name, n, kwargs, dtypes)
        splits = ([partial(_split_hash, on=left_key, dtypes=dtypes)] * left.npartitions
                  + [partial(_split_hash, on=right_key, dtypes=dtypes)] * right.npartitions)
        out_name = f"p2p-merge-{token}"
        layers, _ = p2p_layers(left._keys() + right._keys(), n, splits,
                               _JoinCombine(left.npartitions, left._meta, right._meta, kwargs, upcast), token,
                               out_name)
        graph = LayeredGraph.merge(left._graph, right._graph, new=layers)
        return new_collection(graph, out_name, meta, (None,) * (n + 1))
    ls = _hash_shuffle(left, left_key, n, dtypes, "tasks")
    rs = _hash_shuffle(right, right_key, n, dtypes, "tasks")
    return map_partitions(_merge_parts, ls, rs, kwargs, upcast, meta=meta, _name="merge")


def _sorted_by_keys(out: DataFrame, how: str, on: Any, left_on: Any, right_on: Any, left_index: bool,
                    right_index: bool, left: DataFrame, right: DataFrame) -> DataFrame:
    """A merge's result ordered by its join keys (pandas' ``sort=True``): by the key columns
    the result holds, or by its index when the keys were the indexes."""
    if how == "cross":
        raise ValueError("merge(how='cross', sort=True): a cross join has no keys to sort by; sort the result "
                         "by its columns with sort_values")
    if on is None and left_on is None and right_on is None and not left_index and not right_index:
        on = [c for c in left.columns if c in set(right.columns)]
    as_list = (lambda k: None if k is None else k if isinstance(k, list) else [k])
    keys = as_list(on) if on is not None else as_list(left_on if not left_index else right_on if not right_index
                                                     else None)
    if keys is None or any(k not in out.columns for k in keys):
        return out.sort_index()
    lefts, rights = as_list(left_on), as_list(right_on)
    if on is None and lefts and rights and lefts != rights and all(k in out.columns for k in rights):
        # (a row only the right side has lacks the left key: the join key is the one it has)
        joined = {f"__key_{i}__": out[l].where(out[l].notna(), out[r]) for i, (l, r) in enumerate(zip(lefts, rights))}
        return out.assign(**joined).sort_values(list(joined)).drop(columns=list(joined))
    return out.sort_values(keys)


def _broadcast(big: DataFrame, small: DataFrame, kwargs: dict, meta: Any, big_left: bool,
               upcast: dict | None = None) -> DataFrame:
    """Every partition of ``big`` merged with the whole one-partition ``small``: no shuffle."""
    name = f"merge-broadcast-{new_token(big._name, small._name, kwargs)}"
    small_key = Ref(chunk_key(small._name, (0,)))
    ann = annotations_in_force()
    layer = {}
    for i, key in enumerate(big._keys()):
        args = (Ref(key), small_key) if big_left else (small_key, Ref(key))
        layer[chunk_key(name, (i,))] = Task(_merge_parts, args + (kwargs, upcast), {}, per_task(ann))
    graph = LayeredGraph.merge(big._graph, small._graph, new={name: layer})
    # with the right side on its index, an inner or left merge keeps the left's index, in its order
    divisions = big.divisions if kwargs.get("right_index") and big_left else (None,) * (big.npartitions + 1)
    return new_collection(graph, name, meta, divisions)


# --------------------------------------------------------------------------- methods


def _install() -> None:
    def df_merge(self, right, how="inner", on=None, left_on=None, right_on=None, left_index=False,
                 right_index=False, suffixes=("_x", "_y"), npartitions=None, broadcast=None, indicator=False,
                 shuffle_method=None, sort=False, validate=None):
        """Join with another frame (see ``xsched.dataframe.merge``; ``on`` may name index
        levels, ``validate`` checks the keys' uniqueness as pandas').

        >>> import pandas as pd, xsched.dataframe as xd
        >>> a = xd.from_pandas(pd.DataFrame({"k": [2, 1]}), npartitions=2)
        >>> a.merge(a, on="k").compute().k.sort_values().tolist()
        [1, 2]
        >>> a.merge(a, on="k", shuffle_method="tasks", sort=True).compute().k.tolist()
        [1, 2]
        """
        return merge(self, right, how, on, left_on, right_on, left_index, right_index, suffixes, npartitions,
                     broadcast, indicator, shuffle_method, sort, validate)

    def join(self, other, on=None, how="left", lsuffix="", rsuffix="", npartitions=None, validate=None):
        """Join on the index (or ``on`` columns of this frame against the other's index);
        ``validate`` ("1:1", "1:m", "m:1", "m:m") checks the keys' uniqueness as pandas' does.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> a = xd.from_pandas(pd.DataFrame({"x": [1, 2]}, index=[10, 20]), npartitions=1)
        >>> b = xd.from_pandas(pd.DataFrame({"y": [3]}, index=[20]), npartitions=1)
        >>> a.join(b).compute().y.tolist()
        [nan, 3.0]

        A list of frames joins each in turn, on the index, as pandas' (no ``on``, no suffixes).

        >>> c = xd.from_pandas(pd.DataFrame({"z": [5, 6]}, index=[10, 20]), npartitions=2)
        >>> a.join([b, c]).compute().columns.tolist()
        ['x', 'y', 'z']
        >>> a.join(b, validate="1:1").compute().y.tolist()
        [nan, 3.0]
        """
        if isinstance(other, Series):  # (pandas joins a named Series as a column of its name)
            if other.name is None:
                raise ValueError("join: a Series joins as a column of its name, and this one has none; "
                                 "s.rename('name') first")
            other = other.to_frame()
        if isinstance(other, (list, tuple)):
            if on is not None or lsuffix or rsuffix:
                raise ValueError("join of a list of frames joins on the index, without suffixes (as pandas): "
                                 "drop on=, lsuffix= and rsuffix=, or join one frame at a time")
            out = self
            for one in other:
                out = join(out, one, how=how, npartitions=npartitions, validate=validate)
            return out
        if on is not None:
            return merge(self, other, how=how, left_on=on, right_index=True, suffixes=(lsuffix, rsuffix),
                         npartitions=npartitions, validate=validate)
        return merge(self, other, how=how, left_index=True, right_index=True, suffixes=(lsuffix, rsuffix),
                     npartitions=npartitions, validate=validate)

    def df_sort_values(self, by, ascending=True, npartitions=None, na_position="last", kind=None,
                       ignore_index=False, key=None):
        """Sort by a column or a list of columns (see ``xsched.dataframe.shuffle.sort_values``),
        or by the index's name; pandas' ``key=`` (a function of each column, vectorized),
        ``ignore_index=`` (rows numbered 0, 1, ... in the sorted order) and ``kind=`` (every
        kind sorts stably here).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.DataFrame({"v": [2, 1]}), npartitions=2).sort_values("v").v.tolist()
        [1, 2]
        >>> df = xd.from_pandas(pd.DataFrame({"s": ["b", "A", "c"]}), npartitions=2)
        >>> df.sort_values("s", key=lambda s: s.str.lower(), ignore_index=True).compute().to_dict("list")
        {'s': ['A', 'b', 'c']}
        """
        _check_kind(kind)
        names = by if isinstance(by, list) else [by]
        index_name = self._meta.index.name
        if index_name is not None and index_name in names and index_name not in self._meta.columns:
            if len(names) > 1 or key is not None:
                raise NotImplementedError(f"sort_values: the index's name {index_name!r} among other keys (or with "
                                          "key=); reset_index() first and sort by the column it makes")
            out = self.sort_index(ascending=ascending if isinstance(ascending, bool) else ascending[0],
                                  **({} if na_position == "last" else {"na_position": na_position}))
        elif key is None:
            out = sort_values(self, by, ascending, npartitions, na_position)
        else:
            self._check_columns(names, "sort_values")
            hidden = [f"__xsched_sort_key_{i}__" for i in range(len(names))]
            keyed = self._assign([(h, key(self[c])) for h, c in zip(hidden, names)])
            out = sort_values(keyed, hidden if isinstance(by, list) else hidden[0], ascending, npartitions,
                              na_position).drop(columns=hidden)
        return _numbered_in_order(out) if ignore_index else out

    def s_sort_values(self, ascending=True, npartitions=None, na_position="last", kind=None, ignore_index=False,
                      key=None):
        """The values sorted (``key=``, ``ignore_index=`` and ``kind=`` as pandas', see
        ``DataFrame.sort_values``).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series([2, 3, 1]), npartitions=2).sort_values().tolist()
        [1, 2, 3]
        """
        name = self.name if self.name is not None else "__series__"
        out = df_sort_values(self.to_frame(name), name, ascending, npartitions, na_position, kind, ignore_index,
                             key)[name]
        return out if self.name is not None else out.rename(None)

    def df_drop_duplicates(self, subset=None, keep="first", split_out=None, split_every=None, ignore_index=False):
        """The rows without duplicates (see ``xsched.dataframe.shuffle.drop_duplicates``);
        ``ignore_index=True`` labels them 0, 1, ..., n - 1 across the partitions, as pandas'.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> len(xd.from_pandas(pd.DataFrame({"a": [1, 1, 2]}), npartitions=2).drop_duplicates())
        2
        """
        return drop_duplicates(self, subset, keep, split_out, split_every, ignore_index)

    def df_shuffle(self, on=None, ignore_index=False, npartitions=None, shuffle_method=None, on_index=False,
                   **options):
        """The rows moved so that equal ``on`` values (``on_index=True``: index labels) share a
        partition, a hash shuffle (see ``xsched.dataframe.shuffle.shuffle``).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.DataFrame({"a": [1, 1, 2]}), npartitions=2).shuffle("a").npartitions
        2
        """
        if options:
            raise TypeError(f"shuffle: unknown options {sorted(options)}; it takes on, ignore_index, "
                            "npartitions, shuffle_method and on_index")
        return shuffle(self, on, npartitions, on_index=on_index, ignore_index=ignore_index,
                       method=shuffle_method)

    def df_set_index(self, other, sorted=False, npartitions=None, divisions=None, drop=True):
        """A new index from a column, sorted, with known divisions: the column's quantiles are
        computed now and the rows move through the shuffle (``sorted=True``: no move, only the
        partitions' minima and maxima are read). ``divisions`` given skip the quantiles: sorted,
        the first and last bounding the column's values.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"k": [3, 1, 2, 5, 4, 0]}), npartitions=2)
        >>> df.set_index("k").index.compute().tolist()
        [0, 1, 2, 3, 4, 5]
        >>> df.set_index("k", npartitions="auto").npartitions   # (partitions of about 128 MiB)
        1
        """
        return set_index(self, other, sorted=sorted, npartitions=npartitions, divisions=divisions, drop=drop)

    DataFrame.set_index = df_set_index  # type: ignore[attr-defined]
    for cls in (DataFrame, Series):
        cls.compute_current_divisions = compute_current_divisions  # type: ignore[attr-defined]
    DataFrame.merge = df_merge  # type: ignore[attr-defined]
    DataFrame.join = join  # type: ignore[attr-defined]
    DataFrame.sort_values = df_sort_values  # type: ignore[attr-defined]
    DataFrame.drop_duplicates = df_drop_duplicates  # type: ignore[attr-defined]

    def df_duplicated(self, subset=None, keep="first"):
        """Which rows repeat another (see ``xsched.dataframe.shuffle.duplicated``).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series([3, 1, 3]), npartitions=2).duplicated().tolist()
        [False, False, True]
        """
        return duplicated(self, subset, keep)

    def s_duplicated(self, keep="first"):
        """Which values repeat another (see ``xsched.dataframe.shuffle.duplicated``).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series([3, 1, 3]), npartitions=2).duplicated(keep=False).tolist()
        [True, False, True]
        """
        return duplicated(self, None, keep)

    df_duplicated.__name__ = s_duplicated.__name__ = "duplicated"
    DataFrame.duplicated = df_duplicated  # type: ignore[attr-defined]
    Series.duplicated = s_duplicated  # type: ignore[attr-defined]
    DataFrame.shuffle = df_shuffle  # type: ignore[attr-defined]
    Series.shuffle = df_shuffle  # type: ignore[attr-defined]
    Series.sort_values = s_sort_values  # type: ignore[attr-defined]
    for cls in (DataFrame, Series):
        cls.sort_index = sort_index  # type: ignore[attr-defined]
    Series.drop_duplicates = df_drop_duplicates  # type: ignore[attr-defined]


_install()
