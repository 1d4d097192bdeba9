"""``merge_asof``: each left row joined with the nearest right row by key, as pandas', per
left partition and without a shuffle.

pandas needs both sides sorted by the key; here each side's divisions along the key say
which right partitions a left partition can match (a key column is made the index with
``set_index(column, sorted=True)``, which only reads each partition's minimum and
maximum). A left partition is merged with the right partitions its key range overlaps plus,
for rows whose nearest match lies beyond them, one summary row per ``by`` group: the last
right row of all earlier partitions (``direction="backward"``), the first of all later
ones (``"forward"``), or both (``"nearest"``). The summaries are running chains over the
right partitions, one small task each, so every left partition sees the match the whole
frame would give it. Data flow::

    right partition r --> last rows per group, 0..r  (chain) --\\
    right partition r --> first rows per group, r..n (chain) ---+--> pd.merge_asof per left partition
    left partition i  ------------------------------------------/     (right: overlapping partitions + summaries)

>>> import pandas as pd, xsched.dataframe as xd
>>> trades = xd.from_pandas(pd.DataFrame({"t": [1, 5, 10], "qty": [1, 2, 3]}), npartitions=2)
>>> quotes = xd.from_pandas(pd.DataFrame({"t": [2, 3, 7], "bid": [9.0, 9.5, 8.0]}), npartitions=2)
>>> xd.merge_asof(trades, quotes, on="t").compute().bid.tolist()
[nan, 9.5, 8.0]
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.partials import chain_layer
from ..graph.spec import Ref, Task
from .core import DataFrame, _nonempty, make_meta, new_collection
from .pieces import _concat
from .io import from_pandas
from .shuffle import EmptyFrame, sorted_by

__all__ = ["merge_asof"]

_DIRECTIONS = ("backward", "forward", "nearest")


def merge_asof(left: DataFrame, right: Any, on: Any = None, left_on: Any = None, right_on: Any = None,
               left_index: bool = False, right_index: bool = False, by: Any = None, left_by: Any = None,
               right_by: Any = None, suffixes: tuple = ("_x", "_y"), tolerance: Any = None,
               allow_exact_matches: bool = True, direction: str = "backward") -> DataFrame:
    """Join each row of ``left`` with the right row of nearest key, as ``pandas.merge_asof``
    (same arguments): ``direction`` backward (the last key at or before), forward or
    nearest; ``by`` columns must match exactly; ``tolerance`` caps the distance. Both sides
    must be sorted by the key, as pandas asks: a key column's partitions must hold
    increasing, non-overlapping ranges, and an index must have known divisions. With a
    key column the result has each partition's own default index, as a merge on columns.
    The right's int and bool columns come back as float and object (as pandas gives them
    when a row finds no match), whether or not every row found one. With ``left_index`` and
    ``right_on``, the key column holds the matched right keys when every row found a match
    and the left's keys otherwise, as pandas' (one small task tells the partitions which;
    with ``by``, pandas' too, only when the left's index is named as the key);
    with ``left_on`` and ``right_index`` the rows keep the left's index, as pandas'.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> t = pd.date_range("2024-01-01", periods=6, freq="1min")
    >>> left = xd.from_pandas(pd.DataFrame({"x": range(6)}, index=t), npartitions=3)
    >>> right = pd.DataFrame({"y": [10, 20]}, index=t[[1, 4]] + pd.Timedelta("10s"))
    >>> xd.merge_asof(left, right, left_index=True, right_index=True, direction="forward").compute().y.tolist()
    [10.0, 10.0, 20.0, 20.0, 20.0, nan]
    """
    if direction not in _DIRECTIONS:
        raise ValueError(f"merge_asof: direction must be one of {', '.join(_DIRECTIONS)}, got {direction!r}")
    if isinstance(right, pd.DataFrame):
        right = from_pandas(right, npartitions=1, sort=right_index)
    if not isinstance(left, DataFrame) or not isinstance(right, DataFrame):
        raise TypeError(f"merge_asof joins two xsched DataFrames (or a pandas one on the right), got "
                        f"{type(left).__name__} and {type(right).__name__}")
    if on is not None:
        left_on = right_on = on
    if by is not None:
        left_by = right_by = by
    if (left_on is None) == (not left_index) or (right_on is None) == (not right_index):
        raise ValueError("merge_asof: give each side one key: on=, or left_on= / left_index=True and "
                         "right_on= / right_index=True")
    kwargs: dict = {"suffixes": suffixes, "tolerance": tolerance, "allow_exact_matches": allow_exact_matches,
                    "direction": direction}
    kwargs.update({k: v for k, v in (("left_on", left_on), ("right_on", right_on), ("left_by", left_by),
                                     ("right_by", right_by)) if v is not None})
    kwargs.update({k: True for k, v in (("left_index", left_index), ("right_index", right_index)) if v})
    for side, frame, key in (("left", left, left_on), ("right", right, right_on)):
        if key is not None:
            frame._check_columns([key], f"merge_asof ({side} key)")
    try:  # (pandas says what is wrong: key dtypes, by columns, tolerance)
        sample_left, sample_right = _sorted_sample(left._meta, left_on), _sorted_sample(right._meta, right_on)
        pd.merge_asof(sample_left, sample_right, **kwargs)
        # The right's columns as a row without a match has them (ints as floats, booleans as
        # objects), as any partition with one gives them: all partitions are made alike.
        meta = make_meta(pd.merge_asof(sample_left, sample_right.iloc[:0], **kwargs))
    except Exception as exc:
        raise ValueError(f"merge_asof fails in pandas on these frames' keys, columns and dtypes: "
                         f"{type(exc).__name__}: {exc}") from exc
    kept = None  # (left_on with right_index: pandas keeps the left's index, which the sort by key replaces)
    if left_on is not None and right_index:
        kept = [f"__xsched_asof_index_{i}__" for i in range(left._meta.index.nlevels)]
        left = left.map_partitions(_index_as_columns, kept, meta=_index_as_columns(left._meta, kept))
    lk, rk = _indexed_by_key(left, left_on, "left"), _indexed_by_key(right, right_on, "right")
    if lk is None or rk is None:  # (a side with no rows: nothing to match, and no divisions needed)
        return _unmatched(left, right, left_on is not None, right_on is not None, kwargs, meta, empty_left=lk is None,
                          kept=kept)
    by_cols = None if right_by is None else ([right_by] if isinstance(right_by, (str, int)) else list(right_by))
    token = new_token(lk._name, rk._name, kwargs)
    ann = annotations_in_force()
    layers: dict[str, dict] = {}
    rkeys = rk._keys()
    n = len(rkeys)
    # per right partition r, the last (first) right row per ``by`` group of partitions 0..r (r..n-1)
    chains = {}
    if direction in ("backward", "nearest"):
        chains["before"] = f"asof-last-rows-{token}"
        layers[chains["before"]] = chain_layer(chains["before"], range(n), rkeys, _end_rows, (by_cols, "tail"),
                                               annotations=ann)
    if direction in ("forward", "nearest"):
        chains["after"] = f"asof-first-rows-{token}"
        layers[chains["after"]] = chain_layer(chains["after"], range(n - 1, -1, -1), rkeys, _end_rows,
                                              (by_cols, "head"), annotations=ann)
    # (left_index with right_on: pandas fills the key column of unmatched rows with the left's
    # keys, but with by= only when the left's index bears the key's name; else they stay missing)
    fill_left_keys = left_index and right_on is not None and (right_by is None or lk._meta.index.name == right_on)
    name = f"merge-asof-{token}"
    layer = {}
    ld, rd = lk.divisions, rk.divisions
    for i, lkey in enumerate(lk._keys()):
        lo, hi = ld[i], ld[i + 1]
        overlap = [r for r in range(n) if rd[r] <= hi and rd[r + 1] >= lo]
        if overlap:
            first, last = overlap[0] - 1, overlap[-1] + 1
        else:
            first = max((r for r in range(n) if rd[r + 1] < lo), default=-1)
            last = first + 1
        pieces = []
        if "before" in chains and first >= 0:
            pieces.append(Ref(chunk_key(chains["before"], (first,))))
        pieces += [Ref(rkeys[r]) for r in overlap]
        if "after" in chains and last < n:
            pieces.append(Ref(chunk_key(chains["after"], (last,))))
        layer[chunk_key(name, (i,))] = Task(_merge_part, (Ref(lkey), pieces, left_on is not None,
                                                          right_on is not None, rk._meta, kwargs, meta,
                                                          fill_left_keys, kept),
                                            {}, per_task(ann))
    layers[name] = layer
    if fill_left_keys:
        name = _left_keys_unless_all_matched(layers, name, right_on, left.npartitions, token, ann)
    divisions = left.divisions if left_index and right_index else (None,) * (left.npartitions + 1)
    return new_collection(LayeredGraph.merge(lk._graph, rk._graph, new=layers), name, meta, divisions)


#: the column marking the right's rows, to tell which left rows found a match
_MATCHED = "__xsched_asof_matched__"


def _left_keys_unless_all_matched(layers: dict, merged: str, key: Any, n: int, token: str, ann: Any) -> str:
    """``left_index`` with ``right_on``: pandas fills the key column with the matched right
    keys when every left row found a match, else with the left's keys (its index), a choice
    over the whole frame: each partition says whether all its rows matched, one task joins
    those, and each partition takes the left's keys where any row of any partition did not."""
    flags, every = f"asof-matched-{token}", f"asof-all-matched-{token}"
    layers[flags] = {chunk_key(flags, (i,)): Task(_matched, (Ref(chunk_key(merged, (i,))),), {}, per_task(ann))
                     for i in range(n)}  # (a bool each, where the partition is: only those travel)
    layers[every] = {chunk_key(every, (0,)): Task(all, ([Ref(chunk_key(flags, (i,))) for i in range(n)],),
                                                  {}, per_task(ann))}
    name = f"asof-keys-{token}"
    layers[name] = {chunk_key(name, (i,)): Task(_keys_chosen, (Ref(chunk_key(merged, (i,))),
                                                               Ref(chunk_key(every, (0,))), key), {}, per_task(ann))
                    for i in range(n)}
    return name


def _matched(merged: tuple) -> bool:
    return merged[1]


def _keys_chosen(merged: tuple, all_matched: bool, key: Any) -> pd.DataFrame:
    out, _ = merged
    if not all_matched:
        out = out.copy()
        out[key] = out.index.to_numpy()
    return out


def _sorted_sample(meta: pd.DataFrame, key: Any) -> pd.DataFrame:
    """A few rows like the meta's, sorted by the key, as pandas needs them to merge."""
    sample = _nonempty(meta)
    return sample.sort_index() if key is None else sample.sort_values(key)


def _indexed_by_key(frame: DataFrame, key: Any, side: str) -> DataFrame | None:
    """``frame`` indexed by its key column (kept as a column too), divisions known; or as it
    is when the key is its index, which must have known divisions; None when it has no rows."""
    if key is None:
        if not frame.known_divisions:
            raise ValueError(f"merge_asof: the {side} frame's divisions are unknown, so which of its partitions "
                             "hold which keys is not known; set_index(column) (or from_pandas(..., sort=True)) first")
        return frame
    try:  # (keys out of order within a partition fail as pandas' do, not sorted quietly)
        return sorted_by(frame.map_partitions(_keys_in_order, key, side, meta=frame._meta, _name="asof-keys-sorted"),
                         key, drop=False)
    except EmptyFrame:
        return None
    except pd.errors.MergeError:
        raise
    except ValueError as exc:
        raise ValueError(f"merge_asof: the {side} frame is not sorted by {key!r} across its partitions ({exc}), "
                         f"as pandas' merge_asof needs; sort_values({key!r}) first") from None


def _keys_in_order(part: pd.DataFrame, key: Any, side: str) -> pd.DataFrame:
    """A partition whose ``key`` column increases, as pandas' merge_asof needs it; else its error."""
    if part[key].isna().any():
        raise pd.errors.MergeError(f"merge_asof: Merge keys contain null values on {side} side (column {key!r}); "
                                   "dropna() first")
    if not part[key].is_monotonic_increasing:
        raise pd.errors.MergeError(f"merge_asof: {side} keys must be sorted, and column {key!r} is not in order "
                                   f"within a partition; sort_values({key!r}) first")
    return part


def _unmatched(left: DataFrame, right: DataFrame, left_column: bool, right_column: bool, kwargs: dict,
               meta: pd.DataFrame, empty_left: bool, kept: list | None = None) -> DataFrame:
    """The merge when a side has no rows: each left partition against no right rows."""
    name = f"merge-asof-{new_token(left._name, right._name, kwargs, empty_left)}"
    ann = annotations_in_force()
    layer = {chunk_key(name, (i,)): Task(_merge_part, (Ref(key), [], left_column, right_column, right._meta, kwargs,
                                                       meta, False, kept), {}, per_task(ann))
             for i, key in enumerate(left._keys())}
    divisions = left.divisions if kwargs.get("left_index") and kwargs.get("right_index") else \
        (None,) * (left.npartitions + 1)
    return new_collection(LayeredGraph.merge(left._graph, new={name: layer}), name, meta, divisions)


def _end_rows(carried: pd.DataFrame | None, part: pd.DataFrame, by: Any, end: str) -> pd.DataFrame:
    """The last (``end="tail"``) or first (``"head"``) row per ``by`` group of the rows
    carried from the partitions before (after) and this one's."""
    parts = [part] if carried is None else ([carried, part] if end == "tail" else [part, carried])
    frame = _concat(parts)
    if by is None:
        return getattr(frame, end)(1)
    return getattr(frame.groupby(by, sort=False, dropna=False, observed=True), end)(1)


def _index_as_columns(part: pd.DataFrame, names: list) -> pd.DataFrame:
    """The partition with its index's levels also as the columns ``names``."""
    levels = part.index.to_frame(index=False)
    return part.assign(**{name: levels.iloc[:, i].to_numpy() for i, name in enumerate(names)})


def _merge_part(left: pd.DataFrame, pieces: list, left_column: bool, right_column: bool, right_meta: Any,
                kwargs: dict, meta: pd.DataFrame, flagged: bool = False, kept: list | None = None) -> Any:
    """pandas' merge_asof of a left partition with the right rows it can match; with
    ``left_index`` and ``right_on``, with whether every row found a match (see
    ``_left_keys_unless_all_matched``); ``kept``: the columns holding the left's own index."""
    right = _concat(pieces, right_meta) if pieces else right_meta
    if not right.index.is_monotonic_increasing:
        right = right.sort_index(kind="stable")
    if kept:  # (the left's own index back, as pandas keeps it with right_index)
        left = left.set_index(kept)
        left.index.names = meta.index.names
    elif left_column:  # (a key column on both sides: pandas' merge labels rows anew)
        left = left.reset_index(drop=True)
    if right_column:
        right = right.reset_index(drop=True)
    if flagged:
        right = right.assign(**{_MATCHED: True})
    out = pd.merge_asof(left, right, **kwargs)
    if flagged:
        matched = bool(out[_MATCHED].notna().all())
        out = out.drop(columns=_MATCHED)
    # A partition whose rows all found a match keeps a right int (bool) column that the
    # meta has as float (object), as with a row unmatched: the partitions agree with it.
    for col, dtype in meta.dtypes.items():
        if out[col].dtype != dtype and ((dtype.kind == "f" and out[col].dtype.kind in "iu")
                                        or (dtype == object and out[col].dtype.kind == "b")):
            out[col] = out[col].astype(dtype)
    return (out, matched) if flagged else out
