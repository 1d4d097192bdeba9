"""``df.groupby(by)``: aggregations as tree reductions, ``apply`` through the shuffle.

An aggregation keeps, per partition, a few *statistics* per group (``sum``, ``count``,
``min``, ``max``, ``first``, ``last``, ``size``, and for variances the ``moments``: count,
mean and M2, the sum of squared deviations from that mean), merges them ``split_every``
partitions at a time by grouping the partial results again, and finishes with what was
asked (``mean = sum / count``; ``var = M2 / (count - ddof)``, the moments merged by Chan's
parallel formula, as a sum of squares minus a squared mean loses every digit when the
mean is large against the spread).
Memory per task is therefore the number of groups, not the number of rows. With
``split_out=n`` the partial results are hashed on the group key into ``n`` trees, for
results with too many groups for one partition.

``apply`` and ``transform`` need every row of a group in one place: the frame is shuffled
on the key first (``shuffle.py``), then pandas' groupby runs per partition.

>>> import pandas as pd, xsched.dataframe as xd
>>> df = xd.from_pandas(pd.DataFrame({"k": list("abab"), "v": [1, 2, 3, 4]}), npartitions=2)
>>> df.groupby("k").v.sum().compute().to_dict()
{'a': 4, 'b': 6}
>>> df.groupby("k").agg({"v": ["mean", "max"]}).compute().round(1).to_dict("list")
{('v', 'mean'): [2.0, 3.0], ('v', 'max'): [3, 4]}
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pandas as pd

from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task
from .core import _NO_META, DataFrame, Series, _emulate, _Frame, _nonempty, _unify_categoricals, make_meta, \
    map_partitions, new_collection
from .planner import Layer
from .reductions import _as_float, _is_datetimelike, reduction
from .shuffle import shuffle

__all__ = ["GroupBy", "SeriesGroupBy"]

#: The statistics each aggregation needs, and how partial statistics merge.
_NEEDS = {"sum": ("sum",), "count": ("count",), "min": ("min",), "max": ("max",), "first": ("first",),
          "last": ("last",), "size": ("size",), "mean": ("sum", "count"), "var": ("moments",),
          "std": ("moments",), "prod": ("prod",)}
_MERGE = {"sum": "sum", "count": "sum", "min": "min", "max": "max", "first": "first", "last": "last",
          "size": "sum", "prod": "prod"}  # (``moments``: ``_merge_moments``)
DEFAULT_SPLIT_EVERY = 8


def _stable_hash(index: pd.Index, n: int) -> np.ndarray:
    """Which of ``n`` outputs each group key goes to; the same in every process (Python's
    own ``hash`` of a string is not)."""
    return (pd.util.hash_pandas_object(index, index=False).to_numpy() % n).astype(int)


def _keys_of(part: pd.DataFrame, by: Any) -> Any:
    return part[by] if isinstance(by, str) else [part[b] for b in by] if isinstance(by, list) else by


def _chunk(part: pd.DataFrame, by: Any, by_series: Any, selection: Any, stats: dict,
           dropna: bool, observed: bool, split_out: int) -> Any:
    """Per partition: each statistic per group (of the columns that need it, or of the whole
    selection for None); with ``split_out`` > 1 a list of that many pieces, hashed by key."""
    keys = by_series if by_series is not None else by
    out: dict[str, Any] = {}
    for stat, cols in stats.items():
        picked = cols if cols is not None and stat != "size" else selection
        g = _times_as_floats(part, keys, picked, _TIME_KINDS.get(stat, "")).groupby(
            keys, dropna=dropna, observed=observed, sort=False)
        if picked is not None:
            g = g[picked]
        out[stat] = _moments(g) if stat == "moments" else getattr(g, stat)()
    if split_out == 1:
        return out
    pieces: list[dict] = [{} for _ in range(split_out)]
    for stat, frame in out.items():
        where = _stable_hash(frame.index, split_out)
        for j in range(split_out):
            pieces[j][stat] = frame[where == j]
    return pieces


#: the kinds of time columns a statistic takes as floats of their integers: the sum (taken for
#: a mean: pandas refuses to sum datetimes) of datetimes, the moments of datetimes and timedeltas
_TIME_KINDS = {"sum": "M", "moments": "Mm"}


def _times_as_floats(part: pd.DataFrame, keys: Any, picked: Any, kinds: str) -> pd.DataFrame:
    """``part`` with its aggregated time columns of ``kinds`` as float64 of their integers (NaT:
    NaN), so that sums and moments run on them; ``_restore_times`` turns the results back."""
    if not kinds:
        return part
    named = set(keys) if isinstance(keys, list) else {keys} if isinstance(keys, str) else set()
    wanted = [picked] if isinstance(picked, str) else list(picked) if picked is not None else list(part.columns)
    times = [c for c in wanted if c in part.columns and c not in named
             and getattr(part[c].dtype, "kind", "O") in kinds]
    if not times:
        return part
    return part.assign(**{c: pd.Series(_as_float(part[c]), index=part.index, name=c) for c in times})


def _restore_times(out: Any, meta: Any) -> Any:
    """Results that came out as floats where ``meta`` (pandas' answer on a stand-in) has times:
    truncated to integers of the meta's unit, as pandas' own cast does."""
    if isinstance(out, pd.Series):
        return _as_time(out, meta.dtype) if _is_datetimelike(meta.dtype) else out
    if not out.columns.is_unique:
        return out
    fixes = {c: _as_time(out[c], dtype) for c, dtype in meta.dtypes.items()
             if _is_datetimelike(dtype) and c in out.columns and out[c].dtype.kind == "f"}
    if fixes:
        out = out.copy()
        for c, col in fixes.items():  # (names may be tuples: agg with lists)
            out[c] = col
    return out


def _as_time(col: pd.Series, dtype: Any) -> pd.Series:
    if col.dtype.kind != "f":
        return col
    values = col.to_numpy()
    ints = np.where(np.isnan(values), np.iinfo("i8").min, np.trunc(np.nan_to_num(values))).astype("i8")
    tz = getattr(dtype, "tz", None)
    times = ints.view(f"M8[{dtype.unit}]" if tz is not None else dtype)
    out = pd.Series(times, index=col.index, name=col.name)
    return out.dt.tz_localize("UTC").dt.tz_convert(tz) if tz is not None else out


def _moments(g: Any) -> pd.DataFrame:
    """Count, mean and M2 per group side by side (columns ``n``, ``mean``, ``m2``, over the
    selected columns for a frame), all from one grouping so that their rows agree; M2 from
    pandas' own variance of each partition (its two-pass sum of squared deviations, which
    keeps the digits a one-pass sum of squares loses when the mean is large)."""
    n = g.count()
    return pd.concat({"n": n, "mean": g.mean(), "m2": g.var(ddof=0) * n}, axis=1)


def _merge_moments(joined: pd.DataFrame, levels: list, dropna: bool) -> pd.DataFrame:
    """Chan's parallel formula over every partial of each group at once: the merged mean is
    the count-weighted mean, and M2 gains ``n_i * (mean_i - mean)**2`` per partial."""
    n, mean, m2 = joined["n"], joined["mean"], joined["m2"]
    mean = mean.where(n > 0, 0.0)
    m2 = m2.where(n > 0, 0.0)

    def by_group(x: Any) -> Any:
        return x.groupby(level=levels, dropna=dropna, sort=False)

    weighted = n * mean
    grand = by_group(weighted).transform("sum") / by_group(n).transform("sum")
    spread = (n * (mean - grand) ** 2).where(n > 0, 0.0)
    total = by_group(n).sum()
    return pd.concat({"n": total, "mean": by_group(weighted).sum() / total, "m2": by_group(m2 + spread).sum()},
                     axis=1)


def _merge(partials: list[dict], dropna: bool) -> dict:
    out = {}
    for stat in partials[0]:
        frames = [p[stat] for p in partials]
        joined = pd.concat(_unify_categoricals(frames))  # (categorical keys stay categorical)
        levels = list(range(joined.index.nlevels))
        if stat == "moments":
            out[stat] = _merge_moments(joined, levels, dropna)
        else:
            out[stat] = getattr(joined.groupby(level=levels, dropna=dropna, sort=False), _MERGE[stat])()
    return out


def _pick(pieces: list, j: int) -> Any:
    return pieces[j]


def _finish(partials: list[dict], spec: Any, dropna: bool, sort: bool, ddof: int, meta: Any) -> Any:
    stats = _merge(partials, dropna)
    results = {}
    for how in _hows(spec):
        results[how] = _final_stat(stats, how, ddof)
    out = _restore_times(_shape(results, spec, meta), meta)
    if sort:
        out = out.sort_index()
    return out


def _final_stat(stats: dict, how: str, ddof: int) -> Any:
    if how == "mean":
        return stats["sum"] / stats["count"]
    if how in ("var", "std"):
        count, m2 = stats["moments"]["n"], stats["moments"]["m2"]
        var = (m2 / (count - ddof)).where(count - ddof > 0)
        return np.sqrt(var) if how == "std" else var
    return stats[how]


def _hows(spec: Any) -> list[str]:
    if isinstance(spec, str):
        return [spec]
    if isinstance(spec, list):
        return list(spec)
    out: list[str] = []
    for v in spec.values():
        for h in ([v] if isinstance(v, str) else v):
            if h not in out:
                out.append(h)
    return out


def _shape(results: dict, spec: Any, meta: Any) -> Any:
    """Lay the finished statistics out as pandas' groupby.agg(spec) does (as ``meta`` shows)."""
    if isinstance(spec, str):
        out = results[spec]
    elif isinstance(spec, list):
        frames = []
        for how in spec:
            r = results[how]
            frames.append(r.to_frame(how) if isinstance(r, pd.Series) else r)
        if isinstance(meta, pd.DataFrame) and isinstance(meta.columns, pd.MultiIndex):
            out = pd.concat(frames, axis=1, keys=spec).swaplevel(0, 1, axis=1)
        else:
            out = pd.concat(frames, axis=1)
            out.columns = spec
    else:  # pandas: flat columns when every value is one name, (column, how) when any is a list
        nested = isinstance(meta, pd.DataFrame) and isinstance(meta.columns, pd.MultiIndex)
        cols = {}
        for col, hows in spec.items():
            for how in ([hows] if isinstance(hows, str) else hows):
                r = results[how]
                cols[(col, how) if nested else col] = r[col] if isinstance(r, pd.DataFrame) else r
        out = pd.DataFrame(cols)
    if isinstance(meta, pd.DataFrame) and isinstance(out, pd.DataFrame):
        out = out[list(meta.columns)] if list(out.columns) != list(meta.columns) else out
    if isinstance(meta, pd.Series) and isinstance(out, pd.Series):
        out.name = meta.name
    if out.index.nlevels == meta.index.nlevels:  # (the key's names, where a stand-in grouped)
        out.index = out.index.set_names(meta.index.names)
    return out


def _select_chain(graph: Any, name: str, column: Any) -> list[str]:
    """``name`` and the layers it takes ``column`` unchanged from: through column selections
    that keep it, and assignments of other columns (pandas shares the column's values there)."""
    chain = [name]
    layer = graph.layers.get(name)
    while getattr(layer, "inputs", None) and (
            (layer.kind == "select" and len(layer.inputs) == 1 and column in (layer.columns or ()))
            or (layer.kind == "assign" and column not in (layer.columns or ()))):
        chain.append(layer.inputs[0])
        layer = graph.layers.get(layer.inputs[0])
    return chain


def _is_column_of(key: _Frame, frame: DataFrame) -> bool:
    """Whether ``key`` is the column of its name taken from ``frame`` (``df.k``, or
    ``df[["k", "v"]].k``) rather than a Series computed from it (``df.k * 2``), which pandas
    groups by without leaving ``k`` out."""
    if not isinstance(key, Series) or key.name not in frame.columns:
        return False
    sources = set(_select_chain(frame._graph, frame._name, key.name))
    return any(name in sources for name in _select_chain(key._graph, key._name, key.name)[1:])


class GroupBy:
    """The rows of a DataFrame grouped by columns (or by a Series partitioned like it).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"k": [1, 2, 1], "v": [1.0, 2.0, 4.0]}), npartitions=2)
    >>> df.groupby("k").mean().compute().v.tolist()
    [2.5, 2.0]
    """

    def __init__(self, frame: _Frame, by: Any, sort: bool = True, dropna: bool = True,
                 observed: bool = True, selection: Any = None) -> None:
        if isinstance(by, tuple):
            by = list(by)
        if isinstance(by, (str, list)) and isinstance(frame, DataFrame):
            frame._check_columns([by] if isinstance(by, str) else by, "groupby")
        elif isinstance(by, _Frame):
            if by.npartitions != frame.npartitions:
                raise ValueError(f"groupby: the grouping Series has {by.npartitions} partitions but the "
                                 f"frame has {frame.npartitions}; they must be partitioned alike")
        else:
            raise TypeError(f"groupby: group by column names or an xsched Series, not {type(by).__name__}")
        self._frame, self._by, self._sort, self._dropna, self._observed = frame, by, sort, dropna, observed
        self._selection = selection
        # Grouped by a Series, the columns a selection-free aggregation covers are named here,
        # once: pandas leaves the key out when it is a column of the frame itself
        # (``df.groupby(df.k)``), which it tells by shared memory, and neither the meta (built
        # on a stand-in) nor the partitions can be relied on to see that alike.
        self._columns = None
        if isinstance(by, _Frame) and isinstance(frame, DataFrame):
            own = _is_column_of(by, frame)
            self._columns = [c for c in frame.columns if not (own and c == by.name)]
        self._meta = self._pandas(_nonempty(frame._meta), self._picked())

    def _picked(self) -> Any:
        """The columns aggregated: the selection, else those named for a grouping Series."""
        return self._selection if self._selection is not None else self._columns

    def _pandas(self, part: Any, selection: Any) -> Any:
        keys = _nonempty(self._by._meta) if isinstance(self._by, _Frame) else self._by
        grouped = part.groupby(keys, sort=self._sort, dropna=self._dropna, observed=self._observed)
        return grouped[selection] if selection is not None else grouped

    def __repr__(self) -> str:
        return f"xsched.GroupBy<{self._frame._name}, by={self._by if not isinstance(self._by, _Frame) else 'Series'}>"

    def __getitem__(self, key: Any) -> "GroupBy":
        names = key if isinstance(key, list) else [key]
        if isinstance(self._frame, DataFrame):
            self._frame._check_columns(names, "groupby(...)[...]")
        cls = GroupBy if isinstance(key, list) else SeriesGroupBy
        return cls(self._frame, self._by, self._sort, self._dropna, self._observed, key)

    def __getattr__(self, name: str) -> "GroupBy":
        if name.startswith("_"):
            raise AttributeError(name)
        frame = self.__dict__.get("_frame")
        if isinstance(frame, DataFrame) and name in frame.columns:
            return self[name]
        raise AttributeError(f"GroupBy has no attribute or column {name!r}")

    # ----------------------------------------------------------------- aggregations
    def agg(self, spec: Any, split_every: int | None = None, split_out: int = 1, ddof: int = 1):
        """Aggregate each group: a name (``"sum"``), a list of names, or ``{column: names}``.

        Supported: sum, count, mean, min, max, std, var, size, first, last, prod.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"k": list("aab"), "v": [1, 2, 3]}), npartitions=2)
        >>> df.groupby("k").agg(["sum", "count"]).compute().to_dict("list")
        {('v', 'sum'): [3, 3], ('v', 'count'): [2, 1]}
        """
        hows = _hows(spec)
        unknown = [h for h in hows if h not in _NEEDS]
        if unknown:
            raise ValueError(f"groupby.agg: {unknown[0]!r} is not an aggregation xsched runs as a tree; "
                             f"use one of {sorted(_NEEDS)}, or groupby(...).apply(func) for others")
        if isinstance(spec, dict) and isinstance(self._frame, DataFrame):
            self._frame._check_columns(list(spec), "groupby.agg")
        grouped = self._meta
        if isinstance(spec, dict) and self._picked() is not None and self._selection is None:
            # (a dict names its own columns, the key among them if it likes)
            grouped = self._pandas(_nonempty(self._frame._meta), None)
        try:
            meta = make_meta(grouped.agg(spec) if spec != "size" else grouped.size())
        except Exception as exc:
            raise TypeError(f"groupby.agg({spec!r}) fails in pandas on this frame's columns: "
                            f"{type(exc).__name__}: {exc}") from exc
        if isinstance(spec, dict):  # each statistic of the columns that need it only
            stats: dict = {}
            for col, col_hows in spec.items():
                for h in [col_hows] if isinstance(col_hows, str) else col_hows:
                    for stat in _NEEDS[h]:
                        stats.setdefault(stat, [])
                        if col not in stats[stat]:
                            stats[stat].append(col)
        else:
            stats = {stat: None for h in hows for stat in _NEEDS[h]}
        stats = dict(sorted(stats.items()))
        return self._tree(spec, stats, meta, split_every or DEFAULT_SPLIT_EVERY, split_out, ddof)

    aggregate = agg

    def _tree(self, spec: Any, stats: dict, meta: Any, split_every: int, split_out: int, ddof: int):
        frame = self._frame
        ann = annotations_in_force()
        by = None if isinstance(self._by, _Frame) else self._by
        tok = new_token(frame._name, by, getattr(self._by, "_name", None), self._picked(), spec, split_every,
                        split_out, ddof, self._sort, self._dropna)
        label = spec if isinstance(spec, str) else "agg"
        chunk_name = f"groupby-{label}-chunk-{tok}"
        layers: dict[str, dict] = {chunk_name: {}}
        for i, key in enumerate(frame._keys()):
            by_ref = Ref(chunk_key(self._by._name, (i,))) if isinstance(self._by, _Frame) else None
            layers[chunk_name][chunk_key(chunk_name, (i,))] = Task(
                _chunk, (Ref(key), by, by_ref, self._picked(), stats, self._dropna, self._observed, split_out),
                {}, per_task(ann))
        chunks = list(layers[chunk_name])
        used = None  # the columns the chunks read, for the planner (None: all)
        selected = list(spec) if isinstance(spec, dict) else self._selection
        if by is not None and selected is not None:
            used = ([by] if isinstance(by, str) else list(by)) + \
                (list(selected) if isinstance(selected, list) else [selected])
        inputs = [frame._name] + ([self._by._name] if isinstance(self._by, _Frame) else [])
        layers[chunk_name] = Layer(layers[chunk_name], "groupby", inputs, used)
        agg_name = f"groupby-{label}-agg-{tok}"
        layers[agg_name] = {}
        for j in range(split_out):
            keys = chunks
            if split_out > 1:
                pick_name = f"groupby-{label}-pick-{tok}"
                layer = layers.setdefault(pick_name, {})
                keys = []
                for i, c in enumerate(chunks):
                    k = chunk_key(pick_name, (i, j))
                    layer[k] = Task(_pick, (Ref(c), j), {}, per_task(ann))
                    keys.append(k)
            level = 0
            while len(keys) > split_every:
                name = f"groupby-{label}-combine{level}-{tok}"
                layer = layers.setdefault(name, {})
                nxt = []
                for g in range(0, len(keys), split_every):
                    k = chunk_key(name, (j, g // split_every))
                    layer[k] = Task(_merge, ([Ref(x) for x in keys[g:g + split_every]], self._dropna), {},
                                    per_task(ann))
                    nxt.append(k)
                keys = nxt
                level += 1
            layers[agg_name][chunk_key(agg_name, (j,))] = Task(
                _finish, ([Ref(x) for x in keys], spec, self._dropna, self._sort, ddof, meta), {}, per_task(ann))
        parents = [frame._graph] + ([self._by._graph] if isinstance(self._by, _Frame) else [])
        graph = LayeredGraph.merge(*parents, new=layers)
        return new_collection(graph, agg_name, meta, (None,) * (split_out + 1))

    def _agg_doc(how: str) -> Callable:  # noqa: N805 - a factory used while the class is built
        def method(self, split_every: int | None = None, split_out: int = 1, **kwargs: Any):
            return self.agg(how, split_every=split_every, split_out=split_out, **kwargs)
        method.__name__ = how
        method.__doc__ = (f"The {how} of each group, as a tree reduction.\n\n"
                          ">>> import pandas as pd, xsched.dataframe as xd\n"
                          ">>> df = xd.from_pandas(pd.DataFrame({'k': [1, 1, 2], 'v': [3, 4, 5]}), npartitions=2)\n"
                          f">>> df.groupby('k').v.{how}().compute().index.tolist()\n[1, 2]")
        return method

    sum = _agg_doc("sum")
    count = _agg_doc("count")
    mean = _agg_doc("mean")
    min = _agg_doc("min")
    max = _agg_doc("max")
    first = _agg_doc("first")
    last = _agg_doc("last")
    size = _agg_doc("size")
    prod = _agg_doc("prod")

    def var(self, ddof: int = 1, split_every: int | None = None, split_out: int = 1):
        """The variance of each group (``ddof=1`` as pandas).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({'k': [1, 1, 2], 'v': [3, 5, 5]}), npartitions=2)
        >>> df.groupby('k').v.var().compute().tolist()
        [2.0, nan]
        """
        return self.agg("var", split_every=split_every, split_out=split_out, ddof=ddof)

    def std(self, ddof: int = 1, split_every: int | None = None, split_out: int = 1):
        """The standard deviation of each group.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({'k': [1, 1], 'v': [3, 5]}), npartitions=2)
        >>> df.groupby('k').v.std().compute().round(4).tolist()
        [1.4142]
        """
        return self.agg("std", split_every=split_every, split_out=split_out, ddof=ddof)

    # ----------------------------------------------------------------- whole groups
    def apply(self, func: Callable, *args: Any, meta: Any = _NO_META, **kwargs: Any):
        """``func`` on each whole group: the frame is shuffled on the key so that every
        group is in one partition, then pandas' groupby-apply runs per partition.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"k": [1, 2, 1, 2], "v": [1, 2, 3, 4]}), npartitions=2)
        >>> df.groupby("k").apply(lambda g: g.v.max() - g.v.min(), meta=("v", "int64")).compute().sort_index().tolist()
        [2, 2]
        """
        return self._whole_groups("apply", func, args, kwargs, meta)

    def transform(self, func: Callable, *args: Any, meta: Any = _NO_META, **kwargs: Any):
        """``func`` per group giving a result aligned with the rows (through the shuffle).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"k": [1, 2, 1], "v": [1, 2, 3]}), npartitions=2)
        >>> df.groupby("k").v.transform("sum").compute().sort_index().tolist()
        [4, 2, 4]
        """
        return self._whole_groups("transform", func, args, kwargs, meta)

    def _whole_groups(self, method: str, func: Any, args: tuple, kwargs: dict, meta: Any):
        if isinstance(self._by, _Frame):
            raise NotImplementedError(f"groupby(Series).{method}: group by column names for {method}, "
                                      "e.g. df.assign(key=series).groupby('key')")
        by = [self._by] if isinstance(self._by, str) else self._by
        shuffled = shuffle(self._frame, by)
        if meta is _NO_META:
            meta = _emulate(_group_call, (shuffled, self._by, self._selection, method, func, args, kwargs,
                                          self._dropna, self._observed), {}, f"groupby.{method}")
        return map_partitions(_group_call, shuffled, self._by, self._selection, method, func, args, kwargs,
                              self._dropna, self._observed, meta=meta, _name=f"groupby-{method}")


def _group_call(part: pd.DataFrame, by: Any, selection: Any, method: str, func: Any, args: tuple,
                kwargs: dict, dropna: bool, observed: bool) -> Any:
    grouped = part.groupby(by, dropna=dropna, observed=observed, group_keys=True)
    if selection is not None:
        grouped = grouped[selection]
    if method == "apply" and selection is None:
        by_cols = [by] if isinstance(by, str) else list(by)
        grouped = part.drop(columns=by_cols).groupby([part[c] for c in by_cols], dropna=dropna,
                                                       observed=observed, group_keys=True)
    return getattr(grouped, method)(func, *args, **kwargs)


class SeriesGroupBy(GroupBy):
    """One column of a grouped frame: ``df.groupby("k").v``."""

    def nunique(self, split_every: int | None = None):
        """Distinct values per group: a tree of the distinct (key, value) pairs, so memory
        per task is the number of such pairs.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"k": [1, 1, 2], "v": [5, 5, 6]}), npartitions=2)
        >>> df.groupby("k").v.nunique().compute().tolist()
        [1, 1]
        """
        if isinstance(self._by, _Frame):
            raise NotImplementedError("groupby(Series).nunique: group by column names, e.g. "
                                      "df.assign(key=series).groupby('key')")
        by = [self._by] if isinstance(self._by, str) else list(self._by)
        pairs = self._frame[by + [self._selection] if self._selection not in by else by]  # (the key itself)
        meta = make_meta(self._meta.nunique())
        return reduction(pairs, _distinct, _count_distinct, _distinct_merge, meta=meta,
                         token="groupby-nunique", split_every=split_every,
                         aggregate_kwargs={"by": self._by, "column": self._selection, "sort": self._sort,
                                           "dropna": self._dropna, "meta": meta})


def _distinct(part: pd.DataFrame) -> pd.DataFrame:
    return part.drop_duplicates()


def _distinct_merge(partials: list) -> pd.DataFrame:
    return pd.concat(partials).drop_duplicates()


def _count_distinct(partials: list, by: Any, column: Any, sort: bool, dropna: bool, meta: Any) -> pd.Series:
    out = _distinct_merge(partials).groupby(by, sort=sort, dropna=dropna)[column].nunique()
    out.index = out.index.set_names(meta.index.names)  # (the names where a stand-in grouped)
    return out.rename(meta.name)


def _install() -> None:
    def groupby(self, by: Any = None, sort: bool = True, dropna: bool = True, observed: bool = True, **kwargs: Any):
        """Group rows by columns (names) or by a Series partitioned like this frame.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"k": list("ab"), "v": [1, 2]}), npartitions=1)
        >>> df.groupby("k").v.sum().compute().tolist()
        [1, 2]
        """
        if "level" in kwargs or by is None:
            raise TypeError("groupby groups by columns or a Series, not by index levels (level=): "
                            "reset_index() first and group by the columns it makes")
        if kwargs:
            raise TypeError(f"groupby: unsupported arguments {sorted(kwargs)}")
        if isinstance(self, Series):
            col = self.name if self.name is not None else "__series__"
            frame = self.to_frame(name=col)
            if not isinstance(by, _Frame):
                return SeriesGroupBy(frame, by, sort, dropna, observed, col)
            key = "__by__" if col != "__by__" else "__key__"
            grouped = SeriesGroupBy(frame.assign(**{key: by}), key, sort, dropna, observed, col)
            # The work groups a frame of the two by a stand-in column; the meta is pandas' own
            # grouping of the Series by the key, and results take their names from it.
            values = _nonempty(self._meta)
            keys = pd.Series(_nonempty(by._meta).to_numpy(), index=values.index, name=by.name)
            grouped._meta = values.groupby(keys, sort=sort, dropna=dropna, observed=observed)
            return grouped
        return GroupBy(self, by, sort, dropna, observed)

    DataFrame.groupby = groupby  # type: ignore[attr-defined]
    Series.groupby = groupby  # type: ignore[attr-defined]


_install()
