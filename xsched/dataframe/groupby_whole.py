"""Grouped methods that need every row of a group in one place, through the shuffle.

A median, a rank or a group's first three rows cannot be merged from partial results the way
a sum can, so (as ``apply`` does) the frame is shuffled on the key first and pandas' own
grouped method runs on each partition, which then holds whole groups::

    frame --shuffle on the key--> whole groups per partition --pandas' method per partition-->
        one row per group (median, quantile, idxmax, idxmin, skew, kurt, sem, nunique,
        describe, ohlc, all, any, unique; value_counts, nlargest, nsmallest a few rows and
        corr, cov a matrix per group): every partition's rows into one, in the order of the
        keys as pandas'
        a row per row (shift, diff, pct_change, rank, ffill, bfill, and ``transform``): each
        row tagged with its partition and position first, the results sent back to their rows'
        partitions --exchange--> in the frame's partitions, order and labels (``in_place``)
        some of the rows (head, tail, nth, filter, sample) or a window's rows (rolling(...).f,
        expanding(...).f, ewm(...).f, resample(...).f): partitioned as shuffled, each group's
        rows in their order

So the results are pandas' exactly, but for two orders: those of some rows or of windows come
partitioned by key, not in the frame's row order (``.compute().sort_index()`` restores it), and
``value_counts`` gives a group's equal counts in an order of its own (pandas' comes from an
unstable sort of its whole result). A row per row comes back in place, so it lines up with the
frame (``df.v - df.groupby("k").v.transform("mean")``). ``get_group`` needs no shuffle: it
keeps the rows of one key.

>>> import pandas as pd, xsched.dataframe as xd
>>> df = xd.from_pandas(pd.DataFrame({"k": list("abab"), "v": [1, 2, 3, 10]}), npartitions=2)
>>> df.groupby("k").v.median().compute().to_dict()
{'a': 2.0, 'b': 6.0}
>>> df.groupby("k").v.shift().compute().tolist()
[nan, nan, 1.0, 2.0]
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from ..graph.layers import LayeredGraph, chunk_key, new_token
from ..graph.spec import Ref, Task
from .core import _Frame, _nonempty, make_meta, map_partitions, new_collection, sort_groups
from .pieces import UNKNOWN_CATEGORIES, _concat, cast_dtypes
from .groupby import (IN_PLACE as _IN_PLACE_HOOK, KEY_COLUMN, GroupBy, SeriesGroupBy, group_call, positions_in,
                      unnamed)
from .shuffle import _PART, _ROW, _exchange, _split_by_part, shuffle, tagged_rows
from .standin import on_stand_ins

__all__ = ["GroupedWindow"]

#: methods giving one row per group, or a few (the counted values of ``value_counts``, a
#: group's largest values, a list of quantiles, a matrix): in the keys' order, each group's
#: rows in pandas' order
REDUCING = ("median", "quantile", "idxmax", "idxmin", "skew", "kurt", "sem", "nunique", "value_counts", "describe",
            "ohlc", "all", "any", "corr", "cov", "unique", "nlargest", "nsmallest")
#: of these, pandas' SeriesGroupBy alone has
SERIES_ONLY = ("unique", "nlargest", "nsmallest")
#: methods giving a row per row (or a selection of rows), in each group's order
ROWWISE = ("shift", "diff", "pct_change", "rank", "ffill", "bfill", "head", "tail", "nth", "filter", "sample")
#: row-wise methods keeping some of the frame's rows as they are (their meta is the frame's)
KEEPING = ("filter", "sample")
#: methods giving exactly a row per row in the frame's order: their results go back to the
#: rows' own partitions (``in_place``), so they line up with the frame
IN_PLACE = ("shift", "diff", "pct_change", "rank", "ffill", "bfill", "transform")
#: the window methods of a grouped ``rolling`` / ``expanding`` / ``ewm``
WINDOW_METHODS = {"rolling": ("sum", "mean", "min", "max", "std", "var", "count", "median", "quantile", "apply",
                              "sem", "skew", "kurt"),
                  "expanding": ("sum", "mean", "min", "max", "std", "var", "count", "median", "quantile", "apply",
                                "sem", "skew", "kurt"),
                  "ewm": ("mean", "sum", "std", "var"),
                  "resample": ("sum", "mean", "count", "min", "max", "first", "last", "median", "std", "var", "size",
                               "ohlc", "nunique", "prod", "agg")}


#: a runnable example per generated method: (the call on EXAMPLE_FRAME's ``df``, its output)
EXAMPLES = {
    "median": ('df.groupby("k").v.median().compute().tolist()', '[2.0, 5.0]'),
    "quantile": ('df.groupby("k").v.quantile(0.25).compute().tolist()', '[1.5, 4.0]'),
    "idxmax": ('df.groupby("k").v.idxmax().compute().tolist()', '[4, 5]'),
    "idxmin": ('df.groupby("k").v.idxmin().compute().tolist()', '[0, 1]'),
    "skew": ('df.groupby("k").v.skew().compute().round(3).tolist()', '[0.935, 0.935]'),
    "kurt": ('df.groupby("k").v.kurt().compute().tolist()  # (three values a group: undefined)', '[nan, nan]'),
    "sem": ('df.groupby("k").v.sem().compute().round(3).tolist()', '[0.882, 1.764]'),
    "nunique": ('df.groupby("k").nunique().compute().v.tolist()', '[3, 3]'),
    "value_counts": ('df.groupby("k").v.value_counts().compute().groupby(level=0).sum().tolist()', '[3, 3]'),
    "describe": ('df.groupby("k").v.describe().compute()["max"].tolist()', '[4.0, 9.0]'),
    "ohlc": ('df.groupby("k").v.ohlc().compute()["close"].tolist()', '[4.0, 9.0]'),
    "all": ('df.groupby("k").v.all().compute().tolist()', '[True, True]'),
    "any": ('df.groupby("k").v.any().compute().tolist()', '[True, True]'),
    "unique": ('df.groupby("k").v.unique().compute().map(lambda a: a.tolist()).tolist()',
               '[[1.0, 2.0, 4.0], [3.0, 5.0, 9.0]]'),
    "nlargest": ('df.groupby("k").v.nlargest(2).compute().tolist()', '[4.0, 2.0, 9.0, 5.0]'),
    "nsmallest": ('df.groupby("k").v.nsmallest(1).compute().tolist()', '[1.0, 3.0]'),
    "corr": ('round(float(df.groupby("k").corr().compute().loc[("a", "v"), "w"]), 3)', '0.929'),
    "cov": ('float(df.groupby("k").cov().compute().loc[("a", "v"), "w"])', '2.1666666666666665'),
    "shift": ('df.groupby("k").v.shift().compute().sort_index().tolist()', '[nan, nan, 1.0, 3.0, 2.0, 5.0]'),
    "diff": ('df.groupby("k").v.diff().compute().sort_index().tolist()', '[nan, nan, 1.0, 2.0, 2.0, 4.0]'),
    "pct_change": ('df.groupby("k").v.pct_change().compute().sort_index().round(2).tolist()',
                   '[nan, nan, 1.0, 0.67, 1.0, 0.8]'),
    "rank": ('df.groupby("k").v.rank().compute().sort_index().tolist()', '[1.0, 1.0, 2.0, 2.0, 3.0, 3.0]'),
    "ffill": ('df.groupby("k").v.ffill().compute().sort_index().tolist()', '[1.0, 3.0, 2.0, 5.0, 4.0, 9.0]'),
    "bfill": ('df.groupby("k").v.bfill().compute().sort_index().tolist()', '[1.0, 3.0, 2.0, 5.0, 4.0, 9.0]'),
    "head": ('df.groupby("k").head(1).compute().sort_index().v.tolist()', '[1.0, 3.0]'),
    "tail": ('df.groupby("k").tail(1).compute().sort_index().v.tolist()', '[4.0, 9.0]'),
    "nth": ('df.groupby("k").nth(1).compute().sort_index().v.tolist()', '[2.0, 5.0]'),
    "filter": ('df.groupby("k").filter(lambda g: g.v.sum() > 10).compute().v.tolist()', '[3.0, 5.0, 9.0]'),
    "sample": ('len(df.groupby("k").sample(n=1, random_state=0).compute())', '2'),
}
#: the lines that make the examples' ``df``
EXAMPLE_FRAME = """>>> import pandas as pd, xsched.dataframe as xd
>>> df = xd.from_pandas(pd.DataFrame({"k": list("ababab"), "v": [1.0, 3.0, 2.0, 5.0, 4.0, 9.0],
...                                   "w": [2.0, 1.0, 4.0, 9.0, 5.0, 3.0]}), npartitions=2)"""


def _doc(method: str, text: str) -> str:
    call, output = EXAMPLES[method]
    return f"{text}\n\n{EXAMPLE_FRAME}\n>>> {call}\n{output}\n"


def _gather(parts: list, meta: Any, after: int, order: pd.Index | None, levelwise: bool = False,
            unobserved: tuple | None = None, sort: bool = True, others: list | None = None) -> Any:
    """The partitions' per-group rows as one object, in the keys' order, or in ``order`` (the
    keys in their first appearance, for ``sort=False``; ``levelwise``: ordered by each key
    column's first appearance in turn, as pandas' ``describe`` of several keys is); the
    ``after`` index levels past the key keep each group's own order; with ``unobserved``
    (``_unobserved``), pandas' rows for the categories no row holds added (``others``: the
    values each key that is not categorical takes in the whole frame, or None)."""
    if unobserved is not None:
        levels, fill, final_meta = unobserved
        return _with_unobserved(_gather(parts, meta, after, order, levelwise), levels, fill, final_meta, sort,
                                others)
    out = _concat(parts, meta)
    if levelwise and isinstance(order, pd.MultiIndex):
        firsts = [pd.factorize(order.get_level_values(i), use_na_sentinel=False)[0] for i in range(order.nlevels)]
        order = order[np.lexsort(firsts[::-1])]
    if order is None and after == 0:
        return sort_groups(out)
    keys = out.index.droplevel(list(range(out.index.nlevels - after, out.index.nlevels))) if after else out.index
    if order is None:
        codes = pd.factorize(keys, sort=True)[0]
        codes = np.where(codes < 0, codes.max(initial=0) + 1, codes)  # (a missing key last, as pandas)
    else:
        codes = positions_in(order, keys)
    return out.iloc[np.argsort(codes, kind="stable")]


def _whole(gb: GroupBy, chain: tuple, what: str, meta: Any = None) -> Any:
    """``chain`` on each partition of ``gb``'s frame shuffled on its key (``meta``: the
    result's, when the user gave it; else pandas' on a stand-in)."""
    if isinstance(gb._by, _Frame):
        return _whole(gb.by_key_column(), chain, what, meta)
    if meta is not None:
        meta = make_meta(meta)
    if len(chain) == 1 and chain[0][0] in IN_PLACE and not _moves_labels(chain[0]):
        return unnamed(gb, in_place(gb, chain, what, meta))
    keys = gb._whole_keys(what)  # (a Series key refused before pandas runs on a stand-in)
    args = (gb._by, gb._selection, chain, gb._dropna, gb._observed, gb._sort)
    if meta is None and chain[-1][0] in KEEPING:  # (the frame's own rows: a stand-in may have too few)
        meta = gb._frame._meta if gb._selection is None else gb._frame._meta[gb._selection]
    elif meta is None:
        try:  # (on a stand-in of two rows per column, so that a mistake shows now; its warnings say nothing)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                meta = make_meta(on_stand_ins(lambda: group_call(_nonempty(gb._frame._meta), *args)))
        except Exception as exc:
            kind = type(exc) if isinstance(exc, (TypeError, ValueError)) else ValueError
            columns = {c: str(t) for c, t in gb._frame.dtypes.items() if not str(c).startswith(KEY_COLUMN)}
            raise kind(f"groupby(...).{what}: pandas refuses it on columns {columns}: {exc}") from exc
    return unnamed(gb, map_partitions(_keyed_call, shuffle(gb._frame, keys), keys, meta, *args, meta=meta,
                                      _name=f"groupby-{chain[-1][0]}"))


def _moves_labels(step: tuple) -> bool:
    """Whether a step ``(method, args, kwargs)`` is ``shift(n, freq=...)``, which moves the
    rows' labels rather than their values (so its rows do not go back to their own labels)."""
    method, args, kwargs = step
    return method == "shift" and (kwargs.get("freq") is not None or (len(args) > 1 and args[1] is not None))


def _keyed_call(part: pd.DataFrame, keys: list, meta: Any, by: Any, selection: Any, chain: tuple, dropna: bool,
                *args: Any) -> Any:
    """``group_call`` of a shuffled partition's rows whose keys are there (``dropna``: the
    others are in no group); none: the empty meta (pandas refuses some chains on no rows)."""
    if dropna and keys and len(part):
        part = part[part[keys].notna().all(axis=1).to_numpy()]
    return group_call(part, by, selection, chain, dropna, *args) if len(part) else meta


def in_place(gb: GroupBy, chain: tuple, what: str, meta: Any = None) -> Any:
    """``chain`` (one method giving a row per row: ``IN_PLACE``) on whole groups, its results
    back in the frame's partitions and order: each row is tagged with its partition and
    position, the rows meet their group in the shuffle on the key, pandas' method runs there,
    and the results return to their rows' partitions through a second exchange, where they
    take their rows' order and labels. So ``df.v - df.groupby("k").v.transform("mean")`` lines
    up as in pandas, and the result keeps the frame's divisions.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"k": list("abab"), "v": [1.0, 2, 3, 4]}), npartitions=2)
    >>> (df.v - df.groupby("k").v.transform("mean")).compute().tolist()
    [-1.0, -1.0, 1.0, 1.0]
    """
    frame, keys = gb._frame, gb._whole_keys(what)
    if meta is None:
        meta = make_meta(on_stand_ins(lambda: group_call(_nonempty(frame._meta), gb._by, gb._selection, chain,
                                                          gb._dropna, gb._observed, gb._sort)))
    token = new_token(frame._name, gb._by, gb._selection, repr(chain), gb._dropna, gb._observed, gb._sort)
    tagged = tagged_rows(frame, _moved_columns(frame, keys, gb._selection), f"in-place-{token}")
    met = shuffle(tagged, keys)
    args = (gb._by, gb._selection, chain, gb._dropna, gb._observed, gb._sort, keys, meta)
    done = map_partitions(_tagged_call, met, *args, meta=_beside_tags(meta, tagged._meta[[_PART, _ROW]]),
                          _name=f"groupby-{chain[0][0]}")
    back = _exchange(done, frame.npartitions, _split_by_part, new_token(done._name, "back"), "groupby-back")
    missing = _dtype_with_missing_keys(gb, chain, keys, meta) if gb._dropna else None
    out = map_partitions(_put_back, frame, back, meta, missing, meta=meta, _name=f"groupby-{chain[0][0]}-in-place")
    out.divisions = frame.divisions
    return out


def _moved_columns(frame: Any, keys: list, selection: Any) -> list:
    """The columns a row takes to its group: the keys and the selected columns (every column
    when none is selected, as the method sees them all)."""
    if selection is None:
        return list(frame._meta.columns)
    picked = selection if isinstance(selection, list) else [selection]
    return list(dict.fromkeys([*keys, *picked]))


def _tagged_call(part: pd.DataFrame, by: Any, selection: Any, chain: tuple, dropna: bool, observed: bool,
                 sort: bool, keys: list, meta: Any) -> pd.DataFrame:
    """pandas' grouped ``chain`` on a partition of tagged rows (whole groups), its results
    beside the rows' tags. Rows whose key is missing (``dropna``) get pandas' answer for them
    where pandas gives one row per row with them in (``_with_missing_rows``), else a missing
    result: a piece of such rows only (or none) is one pandas refuses or answers with no rows."""
    body = part.drop(columns=[_PART, _ROW])  # (the rows keep their labels: a function may read them)
    missing = body[keys].isna().any(axis=1).to_numpy() if dropna and keys else np.zeros(len(body), dtype=bool)
    keyed = body[~missing] if missing.any() else body
    whole = _with_missing_rows(body, by, selection, chain, dropna, observed, sort) if missing.any() else None
    if whole is not None:  # (pandas' own answer for the rows of missing keys: shift's fill_value, say)
        out = whole
    elif len(keyed):
        out = group_call(keyed, by, selection, chain, dropna, observed, sort)
        if len(out) != len(keyed):
            raise ValueError(f"groupby(...).{chain[0][0]}: pandas gave {len(out)} rows for {len(keyed)}, where "
                             "it gives a row per row")
        if missing.any():  # (row for row, by position: labels may repeat; missing keys: missing)
            out = out.set_axis(np.flatnonzero(~missing)).reindex(np.arange(len(body)))
    elif isinstance(meta, pd.DataFrame):
        out = pd.DataFrame({c: pd.Series(np.nan, index=body.index, dtype=_holding_missing(d))
                            for c, d in meta.dtypes.items()})
    else:
        out = pd.Series(np.nan, index=body.index, dtype=_holding_missing(meta.dtype), name=meta.name)
    return _beside_tags(out, part[[_PART, _ROW]])


def _with_missing_rows(body: pd.DataFrame, by: Any, selection: Any, chain: tuple, dropna: bool, observed: bool,
                       sort: bool) -> Any:
    """pandas' grouped ``chain`` on rows some of whose keys are missing, when it gives a row
    per row and has rows with keys to group (a piece of missing keys only it may refuse or
    answer with none); else None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = group_call(body, by, selection, chain, dropna, observed, sort)
    except Exception:  # noqa: BLE001 - the rows of missing keys get a missing result instead
        return None
    return out if len(out) == len(body) and out.index.equals(body.index) else None


def _dtype_with_missing_keys(gb: GroupBy, chain: tuple, keys: list, meta: Any) -> Any:
    """The dtype pandas gives a Series result once some rows' keys are missing (it depends
    on the method: ``transform("first")`` of bools is object, ``cummax`` float), from a
    stand-in with such a row; None for a frame's result or when pandas refuses the stand-in."""
    if not isinstance(meta, pd.Series) or not keys:
        return None
    try:
        sample = _nonempty(gb._frame._meta)
        extra = sample.iloc[:1].copy()
        for key in keys:
            extra[key] = pd.Series([None], index=extra.index, dtype=object) if sample[key].dtype.kind in "biu" else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = on_stand_ins(lambda: group_call(pd.concat([sample, extra]), gb._by, gb._selection, chain,
                                                  gb._dropna, gb._observed, gb._sort))
        return out.dtype
    except Exception:  # noqa: BLE001 - pandas' own dtype for a missing value then (_holding_missing)
        return None


def _holding_missing(dtype: Any) -> Any:
    """``dtype``, or pandas' for it once a value is missing (float for integers, object for bools)."""
    if isinstance(dtype, np.dtype) and dtype.kind in "iu":
        return np.dtype(float)
    return np.dtype(object) if isinstance(dtype, np.dtype) and dtype.kind == "b" else dtype


def _beside_tags(out: Any, tags: pd.DataFrame) -> pd.DataFrame:
    """Results (a Series' as the column ``__value__``) beside their rows' tags, row by row."""
    values = out.to_frame("__value__") if isinstance(out, pd.Series) else out
    return pd.concat([values.reset_index(drop=True), tags.reset_index(drop=True)], axis=1)


_IN_PLACE_HOOK.append(in_place)


def _put_back(part: Any, back: pd.DataFrame, meta: Any, missing: Any = None) -> Any:
    """Partition ``part``'s results, returned from their groups, in its rows' order and
    labels; ``missing``: pandas' dtype of the result once keys are missing."""
    back = back.sort_values(_ROW, kind="stable")
    if isinstance(meta, pd.Series):
        values = pd.Series(back["__value__"].to_numpy(), index=part.index, name=meta.name)
        target = cast_dtypes(meta)
        if isinstance(target, np.dtype) and target.kind in "biu" and values.isna().any():
            # (a missing key's rows: pandas' dtype for them)
            holds = missing is not None and not (isinstance(missing, np.dtype) and missing.kind in "biu")
            return values.astype(missing if holds else _holding_missing(target))
        return values.astype(target)
    out = back.drop(columns=[_PART, _ROW])
    out.index = part.index
    return out


def _reducing(gb: GroupBy, method: str, args: tuple, kwargs: dict) -> Any:
    if isinstance(gb._by, _Frame):  # (named after the gathering, whose meta comes from the key column's grouping)
        grouped = gb.by_key_column()
        return unnamed(grouped, _reducing(grouped, method, args, kwargs))
    unobserved = None
    if not gb._observed and any(isinstance(gb._frame._meta[k].dtype, pd.CategoricalDtype) for k in gb._key_columns):
        # (each partition would answer for every category, the ones it does not hold too: the
        # groups run observed, and the gathered result gets pandas' rows for the others)
        unobserved = _unobserved(gb, method, args, kwargs)
        gb = type(gb)(gb._frame, gb._by, gb._sort, gb._dropna, True, gb._selection)
    out = _whole(gb, ((method, args, kwargs),), method)
    after = out._meta.index.nlevels - len(gb._key_columns)  # (the index levels past the key's)
    order = None if gb._sort else gb._distinct_keys(gb._key_columns)  # (pandas': first appearance)
    meta = out._meta if unobserved is None else unobserved[2]
    # (pandas pairs the categories with every value a key that is not categorical takes in any
    # row, rows dropped for a missing categorical key too: those values, from the whole frame)
    others = [None if unobserved is None or unobserved[0][i] is not None else gb._distinct_keys([k])
              for i, k in enumerate(gb._key_columns)]
    name = f"groupby-{method}-{new_token(out._name, after, getattr(order, '_name', None), unobserved is None)}"
    refs = [Ref(chunk_key(out._name, (i,))) for i in range(out.npartitions)]
    layer = {chunk_key(name, (0,)): Task(_gather, (refs, out._meta, int(after),
                                                   None if order is None else Ref(order.key), method == "describe",
                                                   unobserved, gb._sort,
                                                   [None if o is None else Ref(o.key) for o in others]))}
    graphs = [out._graph] + ([] if order is None else [order._graph]) + [o._graph for o in others if o is not None]
    return new_collection(LayeredGraph.merge(*graphs, new={name: layer}), name, meta, (None, None))


def _unobserved(gb: GroupBy, method: str, args: tuple, kwargs: dict) -> tuple:
    """What pandas' ``observed=False`` adds to a method on whole groups, found when the call is
    built on a stand-in whose rows hold one category only: each key's categories (None for a
    key that is not categorical), the value pandas gives a group no row holds, and its result's
    meta. What cannot be completed is refused here, naming the way around."""
    keys = gb._key_columns
    dtypes = [gb._frame._meta[k].dtype for k in keys]
    where = f"groupby(..., observed=False).{method}"
    for key, dtype in zip(keys, dtypes):
        if isinstance(dtype, pd.CategoricalDtype) and UNKNOWN_CATEGORIES in dtype.categories:
            raise ValueError(f"{where}: the categories of {key!r} are unknown (each partition has its own), so "
                             f"the groups no row holds are too; make them known first: "
                             f"df[{key!r}] = df[{key!r}].cat.as_known()")
    if not gb._sort and len(keys) > 1:
        raise NotImplementedError(f"{where} of several keys with sort=False: pandas places the groups no row holds "
                                  "in an order of its own; pass sort=True (or observed=True)")
    probe = _nonempty(gb._frame._meta)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            full = group_call(probe, gb._by, gb._selection, ((method, args, kwargs),), gb._dropna, False, True)
    except Exception as exc:
        kind = type(exc) if isinstance(exc, (TypeError, ValueError)) else ValueError
        raise kind(f"{where}: pandas refuses it for the groups no row holds: {exc}") from exc
    if full.index.nlevels != len(keys):
        raise NotImplementedError(f"{where} gives several rows per group; group with observed=True and reindex "
                                  "the result with the categories left out")
    held = [probe[k].iloc[0] for k in keys]
    fill = None
    for label in full.index:
        label = label if isinstance(label, tuple) else (label,)
        if any(isinstance(dt, pd.CategoricalDtype) and label[i] != held[i] for i, dt in enumerate(dtypes)):
            fill = full.loc[label if len(keys) > 1 else label[0]]
            break
    levels = [list(dt.categories) if isinstance(dt, pd.CategoricalDtype) else None for dt in dtypes]
    return levels, fill, make_meta(full)


_MISSING = object()


def _label_key(label: Any) -> tuple:
    return tuple(_MISSING if pd.isna(v) else v for v in (label if isinstance(label, tuple) else (label,)))


def _with_unobserved(out: Any, levels: list, fill: Any, meta: Any, sort: bool, others: list | None = None) -> Any:
    """``out`` (a row per group some row holds) with pandas' row for every other combination
    of the categorical keys' categories and the other keys' values (``_unobserved``; those
    of the whole frame when ``others`` has them, else those of the groups in ``out``)."""
    index = out.index

    def values(i: int) -> list:
        level = index.get_level_values(i) if index.nlevels > 1 else index
        missing = [np.nan] if level.isna().any() else []  # (dropna=False: the missing key, last)
        if levels[i] is not None:
            return levels[i] + missing
        found = level if others is None or others[i] is None else others[i]
        seen = [v for v in pd.unique(found) if not pd.isna(v)]
        return (sorted(seen) if sort else seen) + missing

    if index.nlevels == 1:
        wanted = values(0)
        if not sort:  # (the groups held in their order, then the others in the categories')
            present = set(index)
            wanted = list(index) + [v for v in wanted if v not in present and not pd.isna(v)]
        full = pd.CategoricalIndex(wanted, dtype=index.dtype, name=index.name)
    else:
        arrays = [pd.Categorical(values(i), dtype=index.levels[i].dtype) if levels[i] is not None
                  else pd.Index(values(i), dtype=index.levels[i].dtype) for i in range(index.nlevels)]
        full = pd.MultiIndex.from_product(arrays, names=index.names)
    # (labels matched as tuples with missing keys made one marker: pandas' own lookups of a
    # MultiIndex holding NaN do not find it)
    held = {_label_key(label): i for i, label in enumerate(index)}
    where = [held.get(_label_key(label), -1) for label in full]
    absent = [k for k, w in enumerate(where) if w < 0]
    if absent:
        if isinstance(out, pd.DataFrame):
            filler = pd.DataFrame([fill] * len(absent), columns=out.columns)
        else:
            filler = pd.Series([fill] * len(absent), name=out.name)
        count = len(out)
        out = pd.concat([out.reset_index(drop=True), filler], ignore_index=True)
        for n, k in enumerate(absent):
            where[k] = count + n
    out = out.iloc[where]
    out.index = full
    try:
        return out.astype(cast_dtypes(meta))
    except (TypeError, ValueError):
        return out


def _reducing_method(method: str):
    def run(self, *args: Any, **kwargs: Any):
        return _reducing(self, method, args, kwargs)

    run.__name__ = method
    run.__doc__ = _doc(method, f"pandas' grouped ``{method}``, exact: each group whole after a shuffle on the "
                               "key, the result in one partition in the keys' order (see ``groupby_whole``).")
    return run


def _rowwise_method(method: str):
    def run(self, *args: Any, meta: Any = None, **kwargs: Any):
        return _whole(self, ((method, args, kwargs),), method, meta)

    run.__name__ = method
    run.__doc__ = _doc(method, f"pandas' grouped ``{method}``: each group whole after a shuffle on the key; " + (
        "the results come back to their rows' partitions, in the frame's order (``in_place``)." if method in IN_PLACE
        else "the rows come partitioned by key (``.compute().sort_index()`` gives the frame's order).")
        + " ``meta=`` gives the result's columns and dtypes, as in dask, instead of pandas' on a stand-in.")
    return run


class GroupedWindow:
    """``df.groupby(k).v.rolling(3)`` (or ``expanding``, ``ewm``): its methods run pandas'
    grouped window on whole groups (see the module).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"k": list("aabb"), "v": [1, 2, 3, 4]}), npartitions=2)
    >>> df.groupby("k").v.rolling(2).sum().compute().sort_index().tolist()
    [nan, 3.0, nan, 7.0]
    """

    def __init__(self, gb: GroupBy, kind: str, args: tuple, kwargs: dict, pick: Any = None) -> None:
        self._gb, self._kind, self._args, self._kwargs = gb, kind, args, kwargs
        self._pick = pick  # (columns selected from the window itself: one with ``on``, which pandas indexes by it)
        if not isinstance(gb._by, _Frame):  # (pandas checks the window's arguments now, not in a task)
            group_call(gb._frame._meta, gb._by, gb._selection, ((kind, args, kwargs),), gb._dropna, gb._observed,
                  gb._sort)

    def __repr__(self) -> str:
        return f"<xsched grouped {self._kind} {self._args or ''}{self._kwargs or ''} of {self._gb!r}>"

    def __getitem__(self, key: Any) -> "GroupedWindow":
        """The window of some columns, as pandas' ``df.groupby(k).resample("1D")["v"]``: the same
        as selecting them before the window, ``df.groupby(k)["v"].resample("1D")``."""
        if isinstance(self._gb, SeriesGroupBy):
            raise KeyError(f"groupby(...).{self._kind}(...)[{key!r}]: the window is of one column already "
                           f"({self._gb._selection!r}); select columns before it, df.groupby(k)[{key!r}]")
        if self._kwargs.get("on") is not None:  # (pandas' own selection from the window: it keeps the times)
            self._gb._frame._check_columns(list(key) if isinstance(key, list) else [key], f"{self._kind}(...)[...]")
            return GroupedWindow(self._gb, self._kind, self._args, self._kwargs, key)
        return GroupedWindow(self._gb[key], self._kind, self._args, self._kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in WINDOW_METHODS[self._kind]:
            frame = self._gb._frame
            if not isinstance(self._gb, SeriesGroupBy) and name in getattr(frame, "columns", ()):
                return self[name]
            raise AttributeError(f"groupby(...).{self._kind}(...) has no {name!r}; it has "
                                 f"{', '.join(WINDOW_METHODS[self._kind])}")

        def run(*args: Any, **kwargs: Any) -> Any:
            picked = () if self._pick is None else (("__getitem__", (self._pick,), {}),)
            chain = ((self._kind, self._args, self._kwargs), *picked, (name, args, kwargs))
            return _whole(self._gb, chain, f"{self._kind}(...).{name}")

        run.__name__ = name
        return run


def _window(kind: str):
    def open_window(self, *args: Any, **kwargs: Any) -> GroupedWindow:
        return GroupedWindow(self, kind, args, kwargs)

    open_window.__name__ = kind
    call, output = WINDOW_EXAMPLES[kind]
    open_window.__doc__ = (f"pandas' grouped ``{kind}``: its methods run on whole groups after a shuffle on the "
                           "key, the rows partitioned by key (see ``GroupedWindow``).\n\n"
                           f"{WINDOW_FRAME}\n>>> {call}\n{output}\n")
    return open_window


#: a runnable example of each grouped window, on ``WINDOW_FRAME``'s ``df``
WINDOW_EXAMPLES = {
    "rolling": ('df.groupby("k").v.rolling(2).sum().compute().sort_index().tolist()', "[nan, 3.0, nan, 7.0]"),
    "expanding": ('df.groupby("k").v.expanding().max().compute().sort_index().tolist()', "[1.0, 2.0, 3.0, 4.0]"),
    "ewm": ('df.groupby("k").v.ewm(alpha=0.5).mean().compute().sort_index().round(3).tolist()',
            "[1.0, 1.667, 3.0, 3.667]"),
    "resample": ('df.groupby("k").v.resample("2h").sum().compute().sort_index().tolist()', "[3.0, 7.0]"),
}
WINDOW_FRAME = """>>> import pandas as pd, xsched.dataframe as xd
>>> df = xd.from_pandas(pd.DataFrame({"k": list("aabb"), "v": [1.0, 2, 3, 4]},
...                                  index=pd.date_range("2024-01-01", periods=4, freq="h")), npartitions=2)"""


def get_group(self: GroupBy, name: Any) -> Any:
    """The rows of one key (no shuffle: each partition keeps its own). A key absent from the
    data gives no rows (pandas raises ``KeyError``: it has looked at every row by then).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"k": list("abab"), "v": [1, 2, 3, 4]}), npartitions=2)
    >>> df.groupby("k").get_group("a").v.compute().tolist()
    [1, 3]
    """
    if isinstance(self._by, _Frame):
        rows = self._frame[self._by == name]
        return rows[self._picked()] if self._picked() is not None else rows
    by = self._whole_keys("get_group")
    values = name if isinstance(name, tuple) else (name,)
    if len(values) != len(by):
        raise ValueError(f"get_group: the frame is grouped by {by}, so a key has {len(by)} values; got {name!r}")
    frame = self._frame
    mask = None
    for column, value in zip(by, values):
        same = frame[column] == value
        mask = same if mask is None else mask & same
    rows = frame[mask]
    return rows[self._selection] if self._selection is not None else rows


def pipe(self: GroupBy, func: Any, *args: Any, **kwargs: Any) -> Any:
    """``func(grouped, *args, **kwargs)``, as pandas' ``pipe`` (a ``(func, keyword)`` pair
    passes the grouped object as that keyword).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"k": list("aab"), "v": [1, 2, 5]}), npartitions=2)
    >>> df.groupby("k").pipe(lambda g: g.v.max() - g.v.min()).compute().to_dict()
    {'a': 1, 'b': 0}
    """
    if isinstance(func, tuple):
        func, keyword = func
        return func(*args, **{keyword: self, **kwargs})
    return func(self, *args, **kwargs)


def whole_agg(self: GroupBy, func: Any, named: dict) -> Any:
    """pandas' ``agg`` on whole groups (what ``GroupBy.agg`` runs for names no tree merges:
    ``median``, ``nunique``, functions...), the result in one partition in the keys' order."""
    return _reducing(self, "agg", () if func is None else (func,), dict(named))


def _install() -> None:
    for method in REDUCING:
        if method == "nunique":
            GroupBy.nunique = _reducing_method(method)  # type: ignore[attr-defined]  (SeriesGroupBy: its tree)
        else:
            setattr(SeriesGroupBy if method in SERIES_ONLY else GroupBy, method, _reducing_method(method))
    for method in ROWWISE:
        setattr(GroupBy, method, _rowwise_method(method))
    GroupBy.pipe = pipe  # type: ignore[attr-defined]
    GroupBy._whole_agg = whole_agg  # type: ignore[attr-defined]
    for kind in WINDOW_METHODS:
        setattr(GroupBy, kind, _window(kind))
    GroupBy.get_group = get_group  # type: ignore[attr-defined]


_install()
