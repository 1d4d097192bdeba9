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

Named aggregations (``agg(total=("x", "sum"))``) are the same tree: the statistics of the
columns named, laid out one column per name.

``apply`` and ``transform`` need every row of a group in one place: the frame is shuffled
on the key first (``shuffle.py``), then pandas' groupby runs per partition.

``cumsum``, ``cumprod``, ``cummax``, ``cummin`` and ``cumcount`` move no rows: each partition
reduces to the running value each of its groups ends on, a chain of small tasks carries those
from partition to partition (as ``cumulative.py`` carries one value per column), and each
partition runs pandas' own method over its groups' carried values followed by its rows. So
memory is the number of groups, and missing values, ``skipna`` and dtypes are pandas'. Where
rows of a missing key are dropped (``dropna=True``), pandas turns a boolean ``cummax`` or
``cummin`` to floats throughout; here only the partitions holding such rows are floats (the
column computes as object when others are not). And pandas 3.1 misplaces NaT beside such
rows (a running value at the NaT, or NaT's integer added on): here the NaT stays missing.

>>> import pandas as pd, xsched.dataframe as xd
>>> df = xd.from_pandas(pd.DataFrame({"k": list("abab"), "v": [1, 2, 3, 4]}), npartitions=2)
>>> df.groupby("k").v.sum().compute().to_dict()
{'a': 4, 'b': 6}
>>> df.groupby("k").agg({"v": ["mean", "max"]}).compute().round(1).to_dict("list")
{('v', 'mean'): [2.0, 3.0], ('v', 'max'): [3, 4]}
>>> df.groupby("k").v.cumsum().compute().tolist()
[1, 2, 4, 6]
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

import numpy as np
import pandas as pd

from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.partials import combine_levels, pick
from ..graph.spec import Ref, Task
from .aggregation import custom_agg, is_custom
from .core import (_NO_META, DataFrame, Series, _emulate, _Frame, _nonempty, make_meta, map_partitions,
                   MissingAttribute, new_collection, part_key, sort_groups)
from .pieces import _concat, _unify_categoricals
from .planner import Layer
from .reductions import _as_float, _is_datetimelike, _time_unit_and_zone, reduction
from .shuffle import shares as shuffle_shares, shuffle
from .standin import on_stand_ins, trying_stand_ins

__all__ = ["GroupBy", "SeriesGroupBy"]

#: The statistics each aggregation needs, and how partial statistics merge.
_NEEDS = {"sum": ("sum",), "count": ("count",), "min": ("min",), "max": ("max",), "first": ("first",),
          "last": ("last",), "size": ("size",), "mean": ("fsum", "count"), "var": ("moments",),
          "std": ("moments",), "prod": ("prod",)}
_MERGE = {"sum": "sum", "fsum": "sum", "count": "sum", "min": "min", "max": "max", "first": "first", "last": "last",
          "size": "sum", "prod": "prod", "first_row": "first_row", "last_row": "last_row"}  # (moments: _merge_moments)
#: statistics that are pandas' methods under another name, with keywords: the sum a mean takes,
#: and ``first(skipna=False)`` / ``last(skipna=False)`` (each group's first or last row, missing or not)
_PANDAS_CALL = {"fsum": ("sum", {}), "first_row": ("first", {"skipna": False}), "last_row": ("last", {"skipna": False})}
DEFAULT_SPLIT_EVERY = 8


def _pandas_stat(g: Any, stat: str) -> Any:
    method, kwargs = _PANDAS_CALL.get(stat, (stat, {}))
    return getattr(g, method)(**kwargs)


def _stable_hash(index: pd.Index, n: int) -> np.ndarray:
    """Which of ``n`` outputs each group key goes to; the same in every process (Python's
    own ``hash`` of a string is not)."""
    return (pd.util.hash_pandas_object(index, index=False).to_numpy() % n).astype(int)


def one_label(by: Any) -> bool:
    """Whether ``by`` names one column: a string, or any other scalar label (``df.groupby(3)``
    on columns named by numbers)."""
    return by is not None and (isinstance(by, str) or pd.api.types.is_scalar(by))


def _keys_of(part: pd.DataFrame, by: Any) -> Any:
    return part[by] if one_label(by) else [part[b] for b in by] if isinstance(by, list) else by


def _chunk(part: pd.DataFrame, by: Any, by_series: Any, selection: Any, stats: dict,
           dropna: bool, observed: bool, split_out: int) -> Any:
    """Per partition: each statistic per group (of the columns that need it, or of the whole
    selection for None); with ``split_out`` > 1 a list of that many pieces, hashed by key."""
    keys = by_series if by_series is not None else by
    out: dict[str, Any] = {}
    groupings: dict[int, Any] = {}  # (one grouping per frame grouped: the keys factorized once, not per statistic)
    for stat, cols in stats.items():
        picked = cols if cols is not None and stat != "size" else selection
        frame = _times_as_floats(part, keys, picked, _TIME_KINDS.get(stat, ""))
        if id(frame) not in groupings:
            groupings[id(frame)] = (frame, frame.groupby(keys, dropna=dropna, observed=observed, sort=False))
        g = groupings[id(frame)][1]
        if picked is not None:
            g = g[picked]
        out[stat] = _moments(g) if stat == "moments" else _pandas_stat(g, stat)
    if split_out == 1:
        return out
    pieces: list[dict] = [{} for _ in range(split_out)]
    for stat, frame in out.items():
        where = _stable_hash(frame.index, split_out)
        for j in range(split_out):
            pieces[j][stat] = frame[where == j]
    return pieces


#: the kinds of columns a statistic takes as floats (times: of their integers): the sum of
#: datetimes, and the sum a mean takes (``fsum``) of datetimes (pandas refuses to sum them)
#: and of integers (as pandas' mean, in float64: an int64 sum of big values wraps around), the
#: moments of datetimes and timedeltas
_TIME_KINDS = {"sum": "M", "fsum": "Miu", "moments": "Mm"}


def _times_as_floats(part: pd.DataFrame, keys: Any, picked: Any, kinds: str) -> pd.DataFrame:
    """``part`` with its aggregated time columns of ``kinds`` as float64 of their integers (NaT:
    NaN), so that sums and moments run on them; ``_restore_times`` turns the results back."""
    if not kinds:
        return part
    named = set(keys) if isinstance(keys, list) else {keys} if one_label(keys) else set()
    wanted = [picked] if one_label(picked) else list(picked) if picked is not None else list(part.columns)
    times = [c for c in wanted if c in part.columns and c not in named
             and getattr(part[c].dtype, "kind", "O") in kinds]
    if not times:
        return part
    part = part.copy(deep=False)  # (columns may be named by numbers: no keywords)
    for c in times:
        part[c] = pd.Series(_as_float(part[c]), index=part.index, name=c)
    return part


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
    unit, tz = _time_unit_and_zone(dtype)
    out = pd.Series(ints.view(f"{dtype.kind}8[{unit}]"), index=col.index, name=col.name)
    if tz is not None:
        out = out.dt.tz_localize("UTC").dt.tz_convert(tz)
    return out.astype(dtype) if isinstance(dtype, pd.ArrowDtype) else out


def _moments(g: Any) -> pd.DataFrame:
    """Count, mean and M2 per group side by side (columns ``n``, ``mean``, ``m2``, over the
    selected columns for a frame), all from one grouping so that their rows agree; M2 from
    pandas' own variance of each partition (its two-pass sum of squared deviations, which
    keeps the digits a one-pass sum of squares loses when the mean is large)."""
    n = g.count()
    out = pd.concat({"n": n, "mean": g.mean(), "m2": g.var(ddof=0) * n}, axis=1)
    # (numbers in an ``object`` column come out as objects: as floats, a group of one has no
    # variance rather than a Python float dividing by zero)
    objects = [i for i, dtype in enumerate(out.dtypes) if dtype == object]
    for i in objects:
        out.isetitem(i, out.iloc[:, i].astype("float64"))
    return out


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
            out[stat] = _pandas_stat(joined.groupby(level=levels, dropna=dropna, sort=False), _MERGE[stat])
    return out


def _finish(partials: list[dict], spec: Any, dropna: bool, sort: bool, ddof: int, meta: Any) -> Any:
    stats = _merge(partials, dropna)
    results = {}
    for how in _hows(spec):
        results[how] = _final_stat(stats, how, ddof)
    out = _restore_times(_shape(results, spec, meta), meta)
    return sort_groups(out) if sort else out


def _final_stat(stats: dict, how: str, ddof: int) -> Any:
    if how == "mean":  # (a group with no value: missing, not divided by 0, which pyarrow's durations refuse)
        count = stats["count"]
        return (stats["fsum"] / count.where(count > 0, 1)).where(count > 0)
    if how in ("var", "std"):
        count, m2 = stats["moments"]["n"], stats["moments"]["m2"]
        var = (m2 / (count - ddof)).where(count - ddof > 0)
        return np.sqrt(var) if how == "std" else var
    return stats[how]


def _hows(spec: Any) -> list:
    """The aggregations ``spec`` names (a function counts as one)."""
    if isinstance(spec, str) or callable(spec):
        return [spec]
    if isinstance(spec, list):
        return list(spec)
    out: list[str] = []
    named = isinstance(spec, tuple)  # (name, column, how) each
    for v in ([how] for _, _, how in spec) if named else spec.values():
        for h in ([v] if isinstance(v, str) or callable(v) else v):
            if h not in out:
                out.append(h)
    return out


def _pairs(spec: Any) -> list | None:
    """The (column, how) pairs a dict or named spec asks for; None where it covers the selection."""
    if isinstance(spec, dict):
        return [(col, h) for col, hows in spec.items() for h in ([hows] if isinstance(hows, str) else hows)]
    if isinstance(spec, tuple) and spec[0][1] is not None:
        return [(col, how) for _, col, how in spec]
    return None


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
    elif isinstance(spec, tuple):  # named: one column per name, in the order given
        out = pd.DataFrame({name: results[how][col] if isinstance(results[how], pd.DataFrame) else results[how]
                            for name, col, how in spec})
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


def _at_least(part: pd.DataFrame, how: str, min_count: int, name: Any = None) -> Any:
    """The ``how`` statistic of ``agg([how, "count"])``'s result, missing where a group has
    fewer than ``min_count`` values; whole numbers and truth values as floats, so that every
    partition has the meta's types whichever groups were left missing."""
    if isinstance(part.columns, pd.MultiIndex):
        values, counts = part.xs(how, axis=1, level=1), part.xs("count", axis=1, level=1)
    else:
        values, counts = part[how], part["count"]
    out = values.where(counts >= min_count)
    if isinstance(out, pd.Series):
        return (out.astype("float64") if out.dtype.kind in "iub" else out).rename(name)
    return out.astype({c: "float64" for c, t in out.dtypes.items() if t.kind in "iub"})


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
        if (one_label(by) or isinstance(by, list)) and isinstance(frame, DataFrame):
            frame._check_columns([by] if one_label(by) else by, "groupby")
        elif isinstance(by, _Frame):
            if by.npartitions != frame.npartitions or (by.known_divisions and frame.known_divisions
                                                      and by.divisions != frame.divisions):
                raise ValueError(f"groupby: the grouping Series is partitioned otherwise than the frame "
                                 f"({by.npartitions} partitions, divisions {by.divisions[:3]}... against "
                                 f"{frame.npartitions}, {frame.divisions[:3]}...): partition i of each is "
                                 "grouped together, so they must be partitioned alike: "
                                 "s.repartition(divisions=df.divisions)")
        else:
            raise TypeError(f"groupby: group by column names or an xsched Series, not {type(by).__name__}")
        self._frame, self._by, self._sort, self._dropna, self._observed = frame, by, sort, dropna, observed
        self._selection = selection
        self._key_names: dict = {}  # (the names a Series' grouping gives its key columns back: ``unnamed``)
        self._group_keys = True  # (``groupby(group_keys=False)``: apply leaves the keys out of a row-wise result)
        # Grouped by a Series, the columns a selection-free aggregation covers are named here,
        # once: pandas leaves the key out when it is a column of the frame itself
        # (``df.groupby(df.k)``), which it tells by shared memory, and neither the meta (built
        # on a stand-in) nor the partitions can be relied on to see that alike.
        self._columns = None
        if isinstance(by, _Frame) and isinstance(frame, DataFrame):
            own = _is_column_of(by, frame)
            self._columns = [c for c in frame.columns if not (own and c == by.name)]
        self._stand_in: Callable[[], Any] = lambda: self._pandas(_nonempty(self._frame._meta), self._picked())
        self._meta_made: Any = None

    @property
    def _meta(self) -> Any:
        """pandas' own grouping of a stand-in of the frame: made once, and anew on each try of
        ``on_stand_ins`` (whose second try puts numbers in ``object`` columns)."""
        if trying_stand_ins():
            return self._stand_in()
        if self._meta_made is None:
            self._meta_made = self._stand_in()
        return self._meta_made

    def _picked(self) -> Any:
        """The columns aggregated: the selection, else those named for a grouping Series."""
        return self._selection if self._selection is not None else self._columns

    def _pandas(self, part: Any, selection: Any) -> Any:
        keys = _nonempty(self._by._meta) if isinstance(self._by, _Frame) else self._by
        grouped = part.groupby(keys, sort=self._sort, dropna=self._dropna, observed=self._observed)
        return grouped[selection] if selection is not None else grouped

    def __repr__(self) -> str:
        return f"xsched.GroupBy<{self._frame._name}, by={self._by if not isinstance(self._by, _Frame) else 'Series'}>"

    def __iter__(self):
        """Refused: see ``no_iteration``."""
        raise no_iteration(repr(self._by) if not isinstance(self._by, _Frame) else "<a Series>")

    def __getitem__(self, key: Any) -> "GroupBy":
        names = key if isinstance(key, list) else [key]
        if isinstance(self._frame, DataFrame):
            self._frame._check_columns(names, "groupby(...)[...]")
        cls = GroupBy if isinstance(key, list) else SeriesGroupBy
        out = cls(self._frame, self._by, self._sort, self._dropna, self._observed, key)
        out._group_keys = self._group_keys
        return out

    def __getattr__(self, name: str) -> "GroupBy":
        if name.startswith("_"):
            raise AttributeError(name)
        frame = self.__dict__.get("_frame")
        if isinstance(frame, DataFrame) and name in frame.columns:
            return self[name]
        raise MissingAttribute("GroupBy", name, pd.core.groupby.DataFrameGroupBy, type(self),
                               list(frame.columns) if isinstance(frame, DataFrame) else None)

    # ----------------------------------------------------------------- aggregations
    def agg(self, func: Any = None, split_every: int | None = None, split_out: int = 1, ddof: int = 1,
            **named: Any):
        """Aggregate each group: a name (``"sum"``), a list of names, ``{column: names}``, or named
        aggregations as in pandas, ``total=("x", "sum")`` (or ``pd.NamedAgg``), and on one column
        ``total="sum"``: a column per name, in the order given.

        As trees: sum, count, mean, min, max, std, var, size, first, last, prod, and
        ``xd.Aggregation`` (one's own, alone or as the values of a dict). Any other of pandas'
        (``"median"``, ``"nunique"``, ``"skew"``, a function...) makes the whole ``agg`` run as
        pandas' on whole groups after a shuffle on the key (``groupby_whole.py``): exact, one
        partition, and as costly as the shuffle.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"k": list("aab"), "v": [1, 2, 3]}), npartitions=2)
        >>> df.groupby("k").agg(["sum", "count"]).compute().to_dict("list")
        {('v', 'sum'): [3, 3], ('v', 'count'): [2, 1]}
        >>> df.groupby("k").agg(total=("v", "sum"), n=pd.NamedAgg("v", "count")).compute().to_dict("list")
        {'total': [3, 3], 'n': [2, 1]}
        >>> df.groupby("k").v.agg(top="max", avg="mean").compute().to_dict("list")
        {'top': [2, 3], 'avg': [1.5, 3.0]}

        ``split_out=n`` hashes the groups into ``n`` partitions (``True``: as many as the
        frame's), each a tree of its own.
        """
        split_out = shuffle_shares(split_out, self._frame, "groupby.agg", 1)  # (True is not 1 here)
        if is_custom(func):
            if split_out != 1 or named:
                raise ValueError("groupby.agg: an Aggregation of one's own gives one partition (split_out=1) "
                                 "and takes no named aggregations beside it")
            return custom_agg(self, func, split_every or DEFAULT_SPLIT_EVERY)
        if isinstance(func, str) and named and not any(isinstance(v, (str, tuple, list, pd.NamedAgg))
                                                       for v in named.values()):
            # (a method's own keywords, agg("sum", min_count=1): pandas passes them to it)
            method = getattr(type(self), func, None)
            if not callable(method) or func.startswith("_"):
                raise TypeError(f"groupby.agg({func!r}, {', '.join(f'{k}=' for k in named)}): keywords beside a "
                                "name go to that method, and the grouping has none of that name")
            split = {"split_every": split_every} if split_every is not None else {}
            return method(self, **named, **split, **({"split_out": split_out} if split_out != 1 else {}))
        spec = self._named(func, named) if named else list(func) if isinstance(func, tuple) else func
        if spec is None:
            raise TypeError("groupby.agg: Must provide 'func' or named aggregations, e.g. "
                            "agg('sum') or agg(total=('x', 'sum'))")
        hows = _hows(spec)
        unknown = [h for h in hows if not isinstance(h, str) or h not in _NEEDS]
        if unknown:  # (pandas' own agg on whole groups: groupby_whole.py)
            if split_out != 1:
                raise ValueError(f"groupby.agg: {unknown[0]!r} runs on whole groups after a shuffle, giving one "
                                 f"partition; drop split_out, or use only {sorted(_NEEDS)}")
            return self._whole_agg(func, named)
        pairs = _pairs(spec)
        if pairs is not None and isinstance(self._frame, DataFrame):
            self._frame._check_columns(list(dict.fromkeys(col for col, _ in pairs)), "groupby.agg")

        def agg_stand_in() -> Any:
            grouped = self._meta
            if pairs is not None and self._picked() is not None and self._selection is None:
                # (a dict names its own columns, the key among them if it likes)
                grouped = self._pandas(_nonempty(self._frame._meta), None)
            return make_meta(grouped.agg(**named) if named else grouped.size() if spec == "size" else grouped.agg(spec))
        try:
            meta = on_stand_ins(agg_stand_in)
        except Exception as exc:
            raise TypeError(f"groupby.agg({spec!r}) fails in pandas on this frame's columns: "
                            f"{type(exc).__name__}: {exc}") from exc
        if pairs is not None:  # each statistic of the columns that need it only
            stats: dict = {}
            for col, h in pairs:
                for stat in _NEEDS[h]:
                    stats.setdefault(stat, [])
                    if col not in stats[stat]:
                        stats[stat].append(col)
        else:
            stats = {stat: None for h in hows for stat in _NEEDS[h]}
        stats = dict(sorted(stats.items()))
        return self._tree(spec, stats, meta, split_every or DEFAULT_SPLIT_EVERY, split_out, ddof)

    def _named(self, func: Any, named: dict) -> tuple:
        """Named aggregations as ``((name, column, how), ...)`` (column None on one column),
        refused where pandas would refuse them, when the expression is built."""
        if func is not None:
            raise TypeError(f"groupby.agg: named aggregations ({', '.join(named)}) cannot be given with "
                            f"func={func!r}: pandas would pass them to it as its keyword arguments")
        one = isinstance(self, SeriesGroupBy)
        out = []
        for name, how in named.items():
            if isinstance(how, pd.NamedAgg):  # (a tuple before pandas 3, then a class with arguments)
                if getattr(how, "args", ()) or getattr(how, "kwargs", {}):
                    raise TypeError(f"groupby.agg: {name}={how!r}: arguments to a named aggregation are not "
                                    "supported; give ddof to agg itself")
                how = (how.column, how.aggfunc)
            if one and isinstance(how, (tuple, list)):
                raise TypeError(f"groupby(...)[column].agg: func is expected but received "
                                f"{type(how).__name__} in **kwargs ({name}={how!r}): name the "
                                f"aggregation only, e.g. {name}='sum'")
            if not one and not (isinstance(how, tuple) and len(how) == 2):
                raise TypeError(f"groupby.agg: Must provide 'func' or tuples of '(column, aggfunc)', "
                                f"not {name}={how!r}")
            col, how = (None, how) if one else how
            if not one and isinstance(self._selection, list) and col not in self._selection:
                raise KeyError(f"groupby(...)[{self._selection!r}].agg: no column {col!r} in the selection")
            out.append((name, col, how))
        return tuple(out)

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
        pairs = _pairs(spec)
        selected = list(dict.fromkeys(col for col, _ in pairs)) if pairs is not None else self._selection
        if by is not None and selected is not None:
            used = ([by] if one_label(by) else list(by)) + \
                (list(selected) if isinstance(selected, list) else [selected])
        if by is not None and set(stats) == {"size"} and self._selection is None:  # (rows counted: keys only)
            used = [by] if one_label(by) else list(by)
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
                    layer[k] = Task(pick, (Ref(c), j), {}, per_task(ann))
                    keys.append(k)
            keys = combine_levels(layers, keys, f"groupby-{label}", tok, _merge, split_every,
                                  args=(self._dropna,), index=(j,), annotations=ann)
            layers[agg_name][chunk_key(agg_name, (j,))] = Task(
                _finish, ([Ref(x) for x in keys], spec, self._dropna, self._sort, ddof, meta), {}, per_task(ann))
        parents = [frame._graph] + ([self._by._graph] if isinstance(self._by, _Frame) else [])
        graph = LayeredGraph.merge(*parents, new=layers)
        return new_collection(graph, agg_name, meta, (None,) * (split_out + 1))

    def _stat(self, how: str, numeric_only: bool = False, min_count: int = -1, split_every: int | None = None,
              split_out: int = 1, ddof: int = 1):
        """One tree statistic with pandas' keywords: ``numeric_only`` narrows the columns to
        those pandas keeps; a positive ``min_count`` leaves groups with fewer non-missing values
        missing (their counts taken in the same tree)."""
        target = self._numeric(how) if numeric_only else self
        if min_count is None or min_count <= 0:
            return target.agg(how, split_every=split_every, split_out=split_out, ddof=ddof)
        try:
            getattr(target._meta, how)(min_count=min_count)
        except Exception as exc:
            raise TypeError(f"groupby(...).{how}(min_count={min_count}) fails in pandas on this frame's columns: "
                            f"{type(exc).__name__}: {exc}") from exc
        both = target.agg([how, "count"], split_every=split_every, split_out=split_out)
        name = target._selection if isinstance(target, SeriesGroupBy) else None
        meta = _at_least(both._meta, how, int(min_count), name)
        return map_partitions(_at_least, both, how, int(min_count), name, meta=meta,
                              _name=f"groupby-{how}-min-count")

    def _rows(self, how: str, numeric_only: bool, min_count: int, split_every: int | None, split_out: int):
        """``first(skipna=False)`` / ``last(skipna=False)``: each group's first or last row as it
        is, from each partition's, then the first (last) of those in partition order."""
        if min_count is not None and min_count > 0:
            raise NotImplementedError(f"groupby(...).{how}(skipna=False, min_count={min_count}): give one of "
                                      "them; with skipna=False each group's row is taken as it is")
        target = self._numeric(how) if numeric_only else self
        try:
            meta = on_stand_ins(lambda: make_meta(getattr(target._meta, how)(skipna=False)))
        except Exception as exc:
            raise TypeError(f"groupby(...).{how}(skipna=False) fails in pandas on this frame's columns: "
                            f"{type(exc).__name__}: {exc}") from exc
        keys = [meta.index.get_level_values(i) for i in range(meta.index.nlevels)]
        if not self._observed and (any(isinstance(k.dtype, pd.CategoricalDtype) for k in keys)
                                   or self._categorical_key()):
            raise NotImplementedError(f"groupby(..., observed=False).{how}(skipna=False) with categorical keys: "
                                      "a partition without a category gives it a row of missing values, which "
                                      "this tree cannot tell from a missing row; group with observed=True")
        split_out = shuffle_shares(split_out, self._frame, f"groupby.{how}", 1)
        stat = f"{how}_row"
        return target._tree(stat, {stat: None}, meta, split_every or DEFAULT_SPLIT_EVERY, split_out, 1)

    def _categorical_key(self) -> bool:
        """Whether a grouping key is categorical: a column, or a Series grouped by (whose
        categories a sample result's index may not show)."""
        frame_meta = self._frame._meta
        for by in (self._by if isinstance(self._by, list) else [self._by]):
            if isinstance(by, _Frame):
                dtypes = [by._meta.dtype] if isinstance(by._meta, pd.Series) else list(by._meta.dtypes)
            elif isinstance(frame_meta, pd.DataFrame) and one_label(by) and by in frame_meta.columns:
                dtypes = [frame_meta[by].dtype]
            else:
                dtypes = []
            if any(isinstance(d, pd.CategoricalDtype) for d in dtypes):
                return True
        return False

    def _numeric(self, how: str) -> "GroupBy":
        """This grouping narrowed to the columns pandas' ``how(numeric_only=True)`` keeps (a
        Series' own values must be numeric, as pandas says)."""
        if isinstance(self, SeriesGroupBy):
            getattr(self._meta, how)(numeric_only=True)  # (pandas' TypeError for text, now)
            return self
        kept = list(getattr(self._meta, how)(numeric_only=True).columns)
        return self[kept]

    def _stat_method(how: str, keywords: str) -> Callable:  # noqa: N805 - a factory used while the class is built
        """A tree statistic's method with the keywords pandas gives it (``keywords``: "n" for
        numeric_only, "c" for min_count, "s" for skipna)."""
        default = 0 if how in ("sum", "prod") else -1

        def method(self, numeric_only: bool = False, min_count: int = default, skipna: bool = True,
                   split_every: int | None = None, split_out: int = 1):
            if not skipna:
                return self._rows(how, numeric_only, min_count, split_every, split_out)
            return self._stat(how, numeric_only, min_count, split_every, split_out)
        method.__name__, method.__qualname__ = how, f"GroupBy.{how}"
        said = {"n": "``numeric_only=True`` keeps the numeric columns", "c": "``min_count=n`` leaves a group "
                "with fewer than n values missing (then as floats)", "s": f"``skipna=False`` gives each group's "
                f"{how} row, missing values and all"}
        method.__doc__ = (f"The {how} of each group, as a tree reduction" +
                          ("; " + "; ".join(said[k] for k in keywords) if keywords else "") + ", as pandas'.\n\n"
                          ">>> import pandas as pd, xsched.dataframe as xd\n"
                          ">>> df = xd.from_pandas(pd.DataFrame({'k': [1, 1, 2], 'v': [3, 4, 5]}), npartitions=2)\n"
                          f">>> df.groupby('k').v.{how}().compute().index.tolist()\n[1, 2]")
        return method

    sum = _stat_method("sum", "nc")
    mean = _stat_method("mean", "n")
    min = _stat_method("min", "nc")
    max = _stat_method("max", "nc")
    first = _stat_method("first", "ncs")
    last = _stat_method("last", "ncs")
    prod = _stat_method("prod", "nc")

    def count(self, split_every: int | None = None, split_out: int = 1):
        """The number of non-missing values of each group, as a tree reduction.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({'k': [1, 1, 2], 'v': [3, None, 5]}), npartitions=2)
        >>> df.groupby('k').v.count().compute().tolist()
        [1, 1]
        """
        return self.agg("count", split_every=split_every, split_out=split_out)

    def size(self, split_every: int | None = None, split_out: int = 1):
        """The number of rows of each group, as a tree reduction.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({'k': [1, 1, 2], 'v': [3, None, 5]}), npartitions=2)
        >>> df.groupby('k').size().compute().tolist()
        [2, 1]
        """
        return self.agg("size", split_every=split_every, split_out=split_out)

    def var(self, ddof: int = 1, numeric_only: bool = False, split_every: int | None = None, split_out: int = 1):
        """The variance of each group (``ddof=1`` as pandas; ``numeric_only=True`` keeps the
        numeric columns).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({'k': [1, 1, 2], 'v': [3, 5, 5]}), npartitions=2)
        >>> df.groupby('k').v.var().compute().tolist()
        [2.0, nan]
        """
        return self._stat("var", numeric_only, -1, split_every, split_out, ddof)

    def std(self, ddof: int = 1, numeric_only: bool = False, split_every: int | None = None, split_out: int = 1):
        """The standard deviation of each group (``numeric_only=True`` keeps the numeric columns).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({'k': [1, 1], 'v': [3, 5]}), npartitions=2)
        >>> df.groupby('k').v.std().compute().round(4).tolist()
        [1.4142]
        """
        return self._stat("std", numeric_only, -1, split_every, split_out, ddof)

    # ----------------------------------------------------------------- running values
    def _cum_doc(method: str) -> Callable:  # noqa: N805 - a factory used while the class is built
        def run(self, numeric_only: bool = False, skipna: bool = True):
            return self._cumulative(method, numeric_only=numeric_only, skipna=skipna)
        run.__name__, run.__qualname__ = method, f"GroupBy.{method}"
        run.__doc__ = (f"The {method[3:]} so far within each group, in the rows' order; only one row per "
                       "group travels from a partition to the next.\n\n"
                       ">>> import pandas as pd, xsched.dataframe as xd\n"
                       ">>> p = pd.DataFrame({'k': [1, 2, 1, 1], 'v': [3, 4, 1, 5]})\n"
                       f">>> xd.from_pandas(p, npartitions=2).groupby('k').v.{method}().compute().equals("
                       f"p.groupby('k').v.{method}())\nTrue")
        return run

    cumsum = _cum_doc("cumsum")
    cumprod = _cum_doc("cumprod")
    cummax = _cum_doc("cummax")
    cummin = _cum_doc("cummin")

    def cumcount(self, ascending: bool = True):
        """Each row's number within its group, from 0 (from the group's last row with
        ``ascending=False``); only each group's count travels between partitions.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"k": list("abaa")}), npartitions=2)
        >>> df.groupby("k").cumcount().compute().tolist(), df.groupby("k").cumcount(False).compute().tolist()
        ([0, 0, 1, 2], [2, 0, 1, 0])
        """
        return self._cumulative("cumcount", ascending=ascending)

    def ngroup(self, ascending: bool = True):
        """Each row's group number, from 0 in the keys' order (``sort=True``) or of first
        appearance; no row moves: a tree of the distinct keys, then each partition numbers
        its rows against it. A row whose key is missing (``dropna=True``) gets NaN, and its
        partition floats, as pandas gives.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"k": list("cabca")}), npartitions=2)
        >>> df.groupby("k").ngroup().compute().tolist(), df.groupby("k", sort=False).ngroup().compute().tolist()
        ([2, 0, 1, 2, 0], [0, 1, 2, 0, 1])
        """
        if isinstance(self._by, _Frame):
            return self.by_key_column().ngroup(ascending)
        keys = self._whole_keys("ngroup")
        self._meta.ngroup(ascending=ascending)  # (pandas' own errors, when built)
        return map_partitions(_number_rows, self._frame, self._distinct_keys(keys), keys, ascending,
                              meta=pd.Series([], dtype="int64", index=self._frame._meta.index[:0]),
                              _name="groupby-ngroup")

    @property
    def ngroups(self):
        """How many groups (a Scalar: it needs a computation).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.DataFrame({"k": list("cabca")}), npartitions=2).groupby("k").ngroups.compute()
        3
        """
        if isinstance(self._by, _Frame):
            return self.by_key_column().ngroups
        keys = self._whole_keys("ngroups")
        if not self._observed and any(isinstance(self._frame._meta[k].dtype, pd.CategoricalDtype) for k in keys):
            raise NotImplementedError("groupby(..., observed=False).ngroups of a categorical key counts "
                                      "categories no row may hold; group with observed=True")
        return self._distinct_keys(keys, count=True)

    def _distinct_keys(self, keys: list, count: bool = False):
        """The distinct keys as a pandas Index (a MultiIndex for several), in the keys' order
        or of first appearance, or their number (a Scalar: a tree of each partition's
        distinct keys)."""
        return reduction(self._frame[keys], _distinct_rows, _keys_found, _distinct_rows, meta=0 if count else None,
                         token="groupby-keys", chunk_kwargs={"dropna": self._dropna},
                         aggregate_kwargs={"sort": self._sort and not count, "count": count})

    def _cumulative(self, method: str, numeric_only: bool = False, skipna: bool = True, ascending: bool = True):
        """Running values per group without a shuffle: each partition's groups end on some
        running value (``_cum_ends``), a chain of small tasks folds those into what precedes
        each partition (``_cum_carry``), and each partition runs pandas' own method over
        those carried rows followed by its own (``_cum_apply``). A count is a running sum
        of ones, from the last partition back when ``ascending`` is False."""
        try:
            res = self._meta.cumcount(ascending=ascending) if method == "cumcount" else \
                getattr(self._meta, method)(numeric_only=numeric_only, skipna=skipna)
        except Exception as exc:
            raise TypeError(f"groupby(...).{method}() fails in pandas on this frame's columns: "
                            f"{type(exc).__name__}: {exc}") from exc
        meta = make_meta(res)
        cols = None if method == "cumcount" else list(meta.columns) if isinstance(meta, pd.DataFrame) \
            else self._selection
        run, skipna = ("cumsum", True) if method == "cumcount" else (method, skipna)
        frame, ann = self._frame, annotations_in_force()
        by = None if isinstance(self._by, _Frame) else self._by
        tok = new_token(frame._name, by, getattr(self._by, "_name", None), cols, method, skipna, ascending,
                        self._dropna)
        ends_name, carry_name, out_name = (f"groupby-{method}-ends-{tok}", f"groupby-{method}-carry-{tok}",
                                           f"groupby-{method}-{tok}")
        order = list(range(frame.npartitions))[::1 if ascending else -1]

        def part(i: int) -> tuple:
            by_ref = Ref(part_key(self._by._name, i)) if by is None else None
            return Ref(part_key(frame._name, i)), by, by_ref, cols, run, skipna, self._dropna, ascending

        ends = {part_key(ends_name, i): Task(_cum_ends, part(i), {}, per_task(ann)) for i in order[:-1]}
        carry = {part_key(carry_name, i): Task(_cum_carry, (Ref(part_key(carry_name, prev)) if prev != order[0]
                                                            else None, Ref(part_key(ends_name, prev)), run,
                                                            skipna, self._dropna), {}, per_task(ann))
                 for prev, i in zip(order, order[1:])}
        out = {part_key(out_name, i): Task(_cum_apply, (*part(i), Ref(part_key(carry_name, i)) if i != order[0]
                                                        else None, meta.name if isinstance(meta, pd.Series) else None),
                                           {}, per_task(ann)) for i in order}
        inputs = [frame._name] + ([self._by._name] if by is None else [])
        picked = [] if cols is None else cols if isinstance(cols, list) else [cols]
        used = None if by is None else ([by] if one_label(by) else list(by)) + picked
        layers = {ends_name: Layer(ends, "groupby", inputs, used), carry_name: carry,
                  out_name: Layer(out, "groupby", inputs + [carry_name], used)}
        graph = LayeredGraph.merge(*[frame._graph] + ([self._by._graph] if by is None else []), new=layers)
        return new_collection(graph, out_name, meta, frame.divisions)

    # ----------------------------------------------------------------- whole groups
    def apply(self, func: Callable, *args: Any, meta: Any = _NO_META, **kwargs: Any):
        """``func`` on each whole group: the frame is shuffled on the key so that every
        group is in one partition, then pandas' groupby-apply runs per partition (with the
        grouping's ``group_keys``; under ``as_index=False`` the keys of a per-group result are
        columns, as pandas gives them).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"k": [1, 2, 1, 2], "v": [1, 2, 3, 4]}), npartitions=2)
        >>> df.groupby("k").apply(lambda g: g.v.max() - g.v.min(), meta=("v", "int64")).compute().sort_index().tolist()
        [2, 2]
        >>> df.groupby("k", group_keys=False).apply(lambda g: g * 2).compute().sort_index().v.tolist()
        [2, 4, 6, 8]
        """
        return self._whole_groups("apply", func, args, kwargs, meta)

    def transform(self, func: Callable, *args: Any, meta: Any = _NO_META, **kwargs: Any):
        """``func`` per group giving a result aligned with the rows (through the shuffle).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"k": [1, 2, 1], "v": [1, 2, 3]}), npartitions=2)
        >>> df.groupby("k").v.transform("sum").compute().sort_index().tolist()
        [4, 2, 4]
        """
        if isinstance(func, str) and func == "ngroup":  # (numbers the groups across all of them)
            raise ValueError("groupby(...).transform('ngroup') numbers each group among all the groups, which no "
                             "partition of whole groups sees; use groupby(...).ngroup()")
        return self._whole_groups("transform", func, args, kwargs, meta)

    @property
    def _key_columns(self) -> list:
        """The names of the key columns (none when grouped by a Series)."""
        return [self._by] if one_label(self._by) else list(self._by) if isinstance(self._by, list) else []

    def _whole_keys(self, what: str) -> list:
        """The key columns to shuffle on, so that every group is whole in one partition (what
        ``apply`` and the methods of ``groupby_whole.py`` run on); a Series key has been made
        a column first (``by_key_column``)."""
        assert not isinstance(self._by, _Frame), f"groupby(Series).{what}: by_key_column first"
        return self._key_columns

    def by_key_column(self) -> "GroupBy":
        """This grouping with its Series key made a column of the frame under a name of its
        own (``KEY_COLUMN``), which its results' index gives back the key's name (``unnamed``):
        methods that move whole groups shuffle on columns. The columns aggregated stay those
        of the Series key (pandas leaves out the frame's own column the key is)."""
        hidden = KEY_COLUMN
        while hidden in self._frame.columns:
            hidden += "_"
        frame = self._frame._assign([(hidden, self._by)])
        selection = self._selection if self._selection is not None else self._columns
        grouped = type(self)(frame, hidden, self._sort, self._dropna, self._observed, selection)
        grouped._key_names = {**self._key_names, hidden: self._by.name}
        grouped._group_keys = self._group_keys
        return grouped

    def _whole_groups(self, method: str, func: Any, args: tuple, kwargs: dict, meta: Any, as_index: bool = True):
        if isinstance(self._by, _Frame):
            return self.by_key_column()._whole_groups(method, func, args, kwargs, meta, as_index)
        if method == "transform":  # (a row per row: back in the frame's partitions, groupby_whole.in_place)
            return unnamed(self, IN_PLACE[0](self, ((method, (func, *args), kwargs),), method,
                                             None if meta is _NO_META else make_meta(meta)))
        keys = self._whole_keys(method)
        if not self._observed and any(isinstance(self._frame._meta[k].dtype, pd.CategoricalDtype) for k in keys):
            raise ValueError(f"groupby(..., observed=False).{method}: the groups run apart, each part of them in a "
                             "partition that would also answer for every category none of its rows holds (once per "
                             "partition); pass observed=True (pandas 3's default), then .reindex(...) on the "
                             "categories if their empty groups matter")
        shuffled = shuffle(self._frame, keys)
        call = (self._by, self._selection, ((method, (func, *args), kwargs),), self._dropna, self._observed,
                self._sort, method == "apply" and self._selection is None, self._group_keys, as_index)
        meta = make_meta(_emulate(group_call, (shuffled, *call), {}, f"groupby.{method}")) if meta is _NO_META \
            else _keyed_meta(make_meta(meta), self._frame._meta, self._whole_keys(method)) \
            if as_index and self._group_keys else make_meta(meta)
        out = unnamed(self, map_partitions(_group_call_or_meta, shuffled, meta, *call, meta=meta,
                                           _name=f"groupby-{method}"))
        if not as_index and self._key_names and isinstance(out, DataFrame):  # (the keys are columns here)
            out = out.rename(columns=partial(_level_names, self._key_names))  # (a function: a dict maps None to NaN)
        return out


def no_iteration(by: str) -> TypeError:
    """Why ``for key, group in df.groupby(...)`` is refused, and what to do instead: each
    group would be a computation of its own over every partition (a frame of its rows);
    pandas' iteration needs the groups in memory, which a grouping here never gathers.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"k": list("aab"), "v": [1, 2, 3]}), npartitions=2)
    >>> for key, group in df.groupby("k"):  # doctest: +ELLIPSIS
    ...     pass
    Traceback (most recent call last):
    TypeError: iterating over the groups of groupby('k') is not offered: ...
    """
    return TypeError(f"iterating over the groups of groupby({by}) is not offered: each group would be a "
                     "computation of its own over every partition. Run a function on every group with "
                     ".apply(func, meta=...), take one group with .get_group(key), or compute the frame (if it "
                     "fits in memory) and iterate in pandas: for key, group in df.compute().groupby(...)")


def _keyed_meta(meta: Any, frame_meta: pd.DataFrame, keys: list) -> Any:
    """A ``meta=`` given to ``apply`` that says nothing of its index (a default RangeIndex,
    as ``("x", "f8")`` or ``pd.Series(dtype=object)`` make) indexed by the group keys, as
    pandas indexes an apply's result: so that a join with another result by key (a
    ``size()``) meets keys of the same type, not the integers of a made-up index.

    >>> import pandas as pd
    >>> _keyed_meta(pd.Series([], dtype=object), pd.DataFrame({"k": ["a"], "v": [1]}), ["k"]).index
    Index([], dtype='str', name='k')
    """
    index = meta.index
    if not (isinstance(meta, (pd.Series, pd.DataFrame)) and isinstance(index, pd.RangeIndex)
            and index.name is None and len(index) == 0 and keys):
        return meta
    cols = frame_meta[keys].iloc[:0]
    keyed = pd.MultiIndex.from_frame(cols) if len(keys) > 1 else pd.Index(cols[keys[0]], name=keys[0])
    return meta.set_axis(keyed)


def _as_key(frame: _Frame, by: Any) -> Any:
    """pandas' other ways of naming a grouping key, made a Series of the index's labels
    partitioned like ``frame``: the index's name, a function or a dict of the labels, a pandas
    Series matched to them by label; a NumPy array (matched by position) is refused.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"v": range(6)}, index=pd.Index(range(6), name="i")), npartitions=2)
    >>> df.groupby(lambda i: i % 2).v.sum().compute().to_dict()
    {0: 6, 1: 9}
    """
    name = frame._meta.index.name
    if one_label(by) and name is not None and by == name and not (
            isinstance(frame, DataFrame) and by in frame._meta.columns):
        return frame.index.to_series()
    if isinstance(by, pd.Series):
        return frame.index.to_series().map(by).rename(by.name)
    if isinstance(by, dict) or (callable(by) and not isinstance(by, (_Frame, pd.Grouper))):
        return frame.index.to_series().map(by)
    if isinstance(by, (np.ndarray, pd.Index)):
        raise TypeError("groupby: a NumPy array (or pandas Index) of keys is matched to the rows by position, "
                        "which a partition does not know; group by a column, or a Series partitioned like the "
                        "frame (df.index.to_series().map(...))")
    return by


def names_index(frame: _Frame, by: Any) -> bool:
    """Whether ``by`` is a list of keys naming the index of a DataFrame by its name (which
    no column has), as pandas groups by index levels among columns."""
    name = frame._meta.index.name
    return (isinstance(frame, DataFrame) and isinstance(by, (list, tuple)) and name is not None
            and name not in frame._meta.columns and any(one_label(k) and k == name for k in by))


def _level_key(frame: _Frame, level: Any) -> Any:
    """``groupby(level=0)`` (or the index's name): the index's labels as the key."""
    levels = level if isinstance(level, (list, tuple)) else [level]
    if isinstance(frame._meta.index, pd.MultiIndex):
        raise TypeError(f"groupby(level={level!r}) of a MultiIndex: reset_index() first and group by the columns "
                        "it makes")
    name = frame._meta.index.name
    if len(levels) != 1 or not (levels[0] in (0, -1) or (name is not None and levels[0] == name)):
        raise ValueError(f"groupby(level={level!r}): the index has one level, 0"
                         f"{f' (named {name!r})' if name is not None else ''}")
    return frame.index.to_series()


#: ``groupby_whole.in_place`` (a room above this one): a row-per-row method's results back in place
IN_PLACE: list = []
#: ``grouper.grouped`` (a room above this one): a grouping by ``pd.Grouper``, alone or among keys
GROUPERS: list = []
#: the column an unnamed Series is grouped as (its results are named None again: ``unnamed``)
UNNAMED = "__series__"
#: the column a Series key becomes for the methods on whole groups (``GroupBy.by_key_column``)
KEY_COLUMN = "__xsched_key__"


def unnamed(grouped: "GroupBy", out: Any) -> Any:
    """``out`` named as pandas names it where a Series' grouping ran as columns of a frame: an
    unnamed Series as the column ``UNNAMED``, its Series key as a column of a name of its own
    (``grouped._key_names``: that name -> the key's)."""
    if grouped._selection == UNNAMED and isinstance(out, Series) and out._meta.name == UNNAMED:
        out = out.rename(None)
    names = grouped._key_names
    if names and isinstance(out, _Frame):  # (renamed whatever the meta shows: one given as meta= may not)
        out = out.rename_axis(index=partial(_level_names, names))
    return out


def _level_names(names: dict, level: Any) -> Any:
    """An index level's name, the key's where it was a key column's of a name of its own."""
    return names.get(level, level)


def _keys_as_columns(frame: DataFrame, by: list) -> tuple:
    """``frame.groupby(["name", df.x > 0])``: each Series or Index among the keys becomes a
    column of its own name (what pandas names that key's level), so the keys are all columns;
    a key that is the frame's own column (``df.j``) is that column's name; one without a name,
    or named as another column or the index, is refused with the fix."""
    names: list = []
    extra: dict = {}
    named = [k for k in by if not isinstance(k, _Frame)]
    for key in by:
        if not isinstance(key, _Frame):
            names.append(key)
            continue
        name = key.name
        if _is_column_of(key, frame) and name not in names:  # (df.k itself: pandas groups by the column)
            names.append(name)
            continue
        if (name is None or name in frame.columns or name in extra or name in named
                or name in frame._meta.index.names):
            raise NotImplementedError(
                f"groupby: a {type(key).__name__} key named {name!r} among others becomes a column of "
                "its name here, which must be new (not a column's or the index's); name it "
                "(key.rename('hour')), or assign it first: df.assign(hour=key).groupby([..., 'hour'])")
        extra[name] = key
        names.append(name)
    return frame._assign(list(extra.items())), names


def _distinct_rows(parts: Any, dropna: bool = False) -> pd.DataFrame:
    """One partition's distinct keys (or the distinct keys of a list of partials)."""
    part = pd.concat(parts) if isinstance(parts, list) else parts
    part = part.drop_duplicates()
    return part.dropna() if dropna else part


def _keys_found(partials: list, sort: bool, count: bool = False) -> Any:
    keys = _distinct_rows(partials)
    if count:
        return len(keys)
    if sort:
        keys = keys.sort_values(list(keys.columns), na_position="last", kind="stable")
    return pd.MultiIndex.from_frame(keys) if keys.shape[1] > 1 else pd.Index(keys.iloc[:, 0])


def positions_in(order: pd.Index, keys: pd.Index) -> np.ndarray:
    """Where each of ``keys`` is in ``order`` (distinct keys), missing values matching
    missing values, level by level; -1 where it is not.

    >>> order = pd.MultiIndex.from_tuples([("a", None), ("b", 1.0)])
    >>> positions_in(order, pd.MultiIndex.from_tuples([("b", 1.0), ("a", None), ("c", 2.0)])).tolist()
    [1, 0, -1]
    """
    both = order.append(keys)
    if isinstance(both, pd.MultiIndex):
        levels = [pd.factorize(both.get_level_values(i), use_na_sentinel=False)[0] for i in range(both.nlevels)]
        codes = pd.factorize(pd.MultiIndex.from_arrays(levels))[0]
    else:
        codes = pd.factorize(both, use_na_sentinel=False)[0]
    found = codes[len(order):]  # (codes count first appearances: ``order``'s are 0, 1, 2...)
    return np.where(found < len(order), found, -1)


def _number_rows(part: pd.DataFrame, distinct: pd.Index, keys: list, ascending: bool) -> pd.Series:
    rows = pd.MultiIndex.from_frame(part[keys]) if len(keys) > 1 else pd.Index(part[keys[0]])
    codes = positions_in(distinct, rows)
    if not ascending:
        codes = np.where(codes >= 0, len(distinct) - 1 - codes, codes)
    numbers = np.where(codes >= 0, codes, np.nan) if (codes < 0).any() else codes.astype("int64")
    return pd.Series(numbers, index=part.index)


def group_call(part: pd.DataFrame, by: Any, selection: Any, chain: tuple, dropna: bool, observed: bool,
               sort: bool = True, keys_apart: bool = False, group_keys: bool = True, as_index: bool = True) -> Any:
    """pandas' grouped ``chain`` (``((method, args, kwargs), ...)``) on one partition (whole
    groups: ``apply``, ``transform`` and ``groupby_whole.py``); ``keys_apart``: the function
    sees the other columns only (a frame's ``apply``, as pandas 3 gives it; with
    ``as_index=False`` pandas' own grouping by the columns does, which puts them back)."""
    if keys_apart and as_index:
        by_cols = [by] if one_label(by) else list(by)
        out = part.drop(columns=by_cols).groupby([part[c] for c in by_cols], dropna=dropna, observed=observed,
                                                 sort=sort, group_keys=group_keys)
    else:
        if not as_index and isinstance(selection, list):
            # (pandas' as_index=False of a list of columns fails on a result per group: the frame
            # narrowed to the keys and those columns instead, which its function sees alike)
            by_cols = [by] if one_label(by) else list(by)
            part, selection = part[by_cols + [c for c in selection if c not in by_cols]], None
        out = part.groupby(by, dropna=dropna, observed=observed, sort=sort, group_keys=group_keys,
                           as_index=as_index)
        if selection is not None:
            out = out[selection]
    for method, args, kwargs in chain:
        out = getattr(out, method)(*args, **kwargs)
    return out


def _group_call_or_meta(part: pd.DataFrame, meta: Any, *call: Any) -> Any:
    """``group_call`` of a partition the shuffle gave groups, else the (empty) meta: pandas'
    apply of no group cannot know what its function gives, and answers a frame of the
    input's columns where the function gives numbers or a Series."""
    return group_call(part, *call) if len(part) else meta


def _cum_frame(part: pd.DataFrame, by: Any, by_series: Any, cols: Any, ascending: bool, dropna: bool) -> tuple:
    """The values to run over (ones, to count) and the group keys of ``part``'s rows, matched by
    position (fresh RangeIndexes), the last row first to run from the end; without the rows of
    a missing key when those are dropped, and then the positions of the rows kept (pandas' own
    run beside such rows misplaces NaT, so they are never handed to it)."""
    keys = [by_series] if by_series is not None else [part[b] for b in ([by] if one_label(by) else by)]
    values = part[cols] if cols is not None else pd.Series(np.ones(len(part), dtype="i8"))
    step = 1 if ascending else -1
    values, keys = values.iloc[::step].reset_index(drop=True), [k.iloc[::step].reset_index(drop=True) for k in keys]
    missing = np.logical_or.reduce([k.isna().to_numpy() for k in keys]) if dropna and len(part) else None
    if missing is None or not missing.any():
        return values, keys, None
    kept = np.flatnonzero(~missing)
    return values.take(kept).reset_index(drop=True), [k.take(kept).reset_index(drop=True) for k in keys], kept


def _refill(out: Any, kept: Any, n: int) -> Any:
    """``out``, the rows at positions ``kept``, on all ``n`` rows: missing for those of a missing
    key, as pandas gives them (booleans turn to floats)."""
    if kept is None:
        return out
    out = out.set_axis(pd.Index(kept))
    if isinstance(out, pd.Series):
        out = out.astype("f8") if out.dtype == bool else out
    else:
        out = out.astype({c: "f8" for c, t in out.dtypes.items() if t == bool})
    return out.reindex(pd.RangeIndex(n))


def _grouped(values: Any, keys: list, dropna: bool) -> Any:
    # (running values are row by row: ``observed`` changes nothing, and unobserved categories
    # would only add groups without rows)
    return values.groupby(keys[0] if len(keys) == 1 else keys, dropna=dropna, observed=True, sort=False)


def _ends(acc: Any, keys: list, skipna: bool, dropna: bool) -> Any:
    """Each group's running value after its last row, indexed by group: the last one not missing
    when missing values are skipped (none: missing), else the last one (missing once any value was)."""
    if skipna:
        return _grouped(acc, keys, dropna).last()
    rows = _grouped(acc, keys, dropna).tail(1)
    at = [k.iloc[rows.index.to_numpy()] for k in keys]
    return rows.set_axis(pd.MultiIndex.from_arrays(at) if len(at) > 1 else pd.Index(at[0]))


def _after(carry: Any, values: Any, keys: list) -> tuple:
    """``values`` and ``keys`` with a row per group of ``carry`` first, and how many rows that is."""
    if carry is None or len(carry) == 0:
        return 0, values, keys
    levels = [pd.Series(carry.index.get_level_values(i)) for i in range(carry.index.nlevels)]
    carry, values = _unbool(carry.reset_index(drop=True), values), _unbool(values, carry)
    return (len(carry), pd.concat([carry, values], ignore_index=True),
            [pd.concat([c, k], ignore_index=True) for c, k in zip(levels, keys)])


def _unbool(x: Any, other: Any) -> Any:
    """``x`` with its booleans as ``other``'s dtype where that is not boolean (a sum of booleans
    is an integer), so that the two concatenate as numbers."""
    if isinstance(x, pd.Series):
        return x.astype(other.dtype) if x.dtype.kind == "b" and other.dtype.kind != "b" else x
    return x.astype({c: t for c, t in other.dtypes.items() if x[c].dtype.kind == "b" and t.kind != "b"})


def _cum_ends(part: pd.DataFrame, by: Any, by_series: Any, cols: Any, method: str, skipna: bool, dropna: bool,
              ascending: bool) -> Any:
    """The running value each group of ``part`` ends on, one row per group."""
    values, keys, _ = _cum_frame(part, by, by_series, cols, ascending, dropna)
    return _ends(getattr(_grouped(values, keys, dropna), method)(skipna=skipna), keys, skipna, dropna)


def _cum_carry(before: Any, ends: Any, method: str, skipna: bool, dropna: bool) -> Any:
    """What precedes the next partition: each group's running value over ``before``, then ``ends``."""
    if before is None or len(ends) == 0:
        return ends if before is None else before
    levels = [pd.Series(ends.index.get_level_values(i)) for i in range(ends.index.nlevels)]
    _, values, keys = _after(before, ends.reset_index(drop=True), levels)
    return _ends(getattr(_grouped(values, keys, dropna), method)(skipna=skipna), keys, skipna, dropna)


def _cum_apply(part: pd.DataFrame, by: Any, by_series: Any, cols: Any, method: str, skipna: bool, dropna: bool,
               ascending: bool, carry: Any, name: Any) -> Any:
    """pandas' groupby ``method`` over the carried rows and then ``part``'s, on ``part``'s rows
    (cols None: the count, from 0)."""
    values, keys, kept = _cum_frame(part, by, by_series, cols, ascending, dropna)
    n, values, keys = _after(carry, values, keys)
    out = getattr(_grouped(values, keys, dropna), method)(skipna=skipna).iloc[n:]
    out = _refill(out.reset_index(drop=True), kept, len(part)).iloc[::1 if ascending else -1]
    out.index = part.index
    if isinstance(out, pd.Series):
        out = (out - 1 if cols is None else out).rename(name)
    return out


class SeriesGroupBy(GroupBy):
    """One column of a grouped frame: ``df.groupby("k").v``."""

    def nunique(self, split_every: int | None = None, split_out: Any = None, dropna: bool = True):
        """Distinct values per group. Each partition's distinct (key, value) pairs are
        hash-shuffled into one share per partition (``split_out``), each share counts its
        pairs per key, and a tree adds the counts up per key: no task holds every pair, however
        many distinct values the groups have. ``split_out=1`` (and ``sort=False``, whose keys
        come in the order they first appear) is a tree of the distinct pairs instead: memory
        per task is the number of such pairs. ``dropna=False`` counts a missing value as one
        more distinct value, as pandas'.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"k": [1, 1, 2], "v": [5, 5, 6]}), npartitions=2)
        >>> df.groupby("k").v.nunique().compute().tolist(), df.groupby("k").v.nunique(split_out=1).compute().tolist()
        ([1, 1], [1, 1])
        """
        if isinstance(self._by, _Frame):
            grouped = self.by_key_column()
            return unnamed(grouped, grouped.nunique(split_every, split_out, dropna))
        by = [self._by] if one_label(self._by) else list(self._by)
        pairs = self._frame[by + [self._selection] if self._selection not in by else by]  # (the key itself)
        meta = make_meta(self._meta.nunique())
        shares = shuffle_shares(split_out, self._frame, "groupby(...).nunique", self._frame.npartitions)
        counting = {"by": self._by, "column": self._selection, "sort": self._sort, "dropna": self._dropna,
                    "observed": self._observed, "meta": meta, "values_dropna": bool(dropna)}
        if shares == 1 or not self._sort or self._selection in by:
            return reduction(pairs, _distinct, _count_distinct, _distinct_merge, meta=meta,
                             token="groupby-nunique", split_every=split_every, aggregate_kwargs=counting)
        local = map_partitions(_distinct, pairs, meta=pairs._meta, _name="groupby-nunique-local")
        met = shuffle(local, list(pairs.columns), shares)
        return reduction(met, _share_counts, _add_counts, _sum_counts, meta=meta, token="groupby-nunique-shares",
                         split_every=split_every, chunk_kwargs=counting,
                         aggregate_kwargs={"meta": meta, "sort": True, "observed": self._observed})


def _distinct(part: pd.DataFrame) -> pd.DataFrame:
    return part.drop_duplicates()


def _distinct_merge(partials: list) -> pd.DataFrame:
    return _concat(partials).drop_duplicates()  # (a categorical key's categories joined, not lost to strings)


def _count_distinct(partials: list, by: Any, column: Any, sort: bool, dropna: bool, meta: Any,
                    observed: bool = True, values_dropna: bool = True) -> pd.Series:
    grouped = _distinct_merge(partials).groupby(by, sort=sort, dropna=dropna, observed=observed)[column]
    out = grouped.nunique(dropna=values_dropna)
    out.index = out.index.set_names(meta.index.names)  # (the names where a stand-in grouped)
    return out.rename(meta.name)


def _share_counts(part: pd.DataFrame, by: Any, column: Any, sort: bool, dropna: bool, meta: Any,
                  observed: bool = True, values_dropna: bool = True) -> pd.Series:
    """A share's distinct values per key: its (key, value) pairs are no other share's."""
    return _count_distinct([part], by, column, sort, dropna, meta, observed, values_dropna)


def _sum_counts(partials: list, sort: bool = False, observed: bool = True) -> pd.Series:
    """The shares' counts added up per key (the keys in them kept: a category no row holds
    is there, at 0, where ``observed=False`` put it)."""
    joined = _concat(partials)
    return joined.groupby(level=list(range(joined.index.nlevels)), sort=sort, dropna=False,
                          observed=observed).sum()


def _add_counts(partials: list, meta: Any, sort: bool, observed: bool) -> pd.Series:
    """``_sum_counts`` at the root, named and typed as pandas' answer (``meta``)."""
    out = _sum_counts(partials, sort, observed)
    out.index = out.index.set_names(meta.index.names)
    return out.astype(meta.dtype).rename(meta.name)


#: grouped methods that give one row per group: with ``as_index=False`` their keys become columns
PER_GROUP = frozenset({"agg", "aggregate", "sum", "mean", "min", "max", "first", "last", "prod", "var", "std",
                       "count", "size", "nunique", "median", "quantile", "sem", "skew", "kurt", "value_counts",
                       "any", "all", "idxmax", "idxmin", "describe", "ohlc", "unique"})


class FlatGroupBy:
    """A grouping made with ``as_index=False``: the methods that give one row per group
    (``PER_GROUP``) give the keys as columns, numbered rows as the index (each partition's
    from 0), as pandas' do; every other method is the grouping's own.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"k": list("aab"), "v": [1, 2, 3]}), npartitions=2)
    >>> df.groupby("k", as_index=False).v.sum().compute().to_dict("list")
    {'k': ['a', 'b'], 'v': [3, 3]}
    >>> df.groupby("k", as_index=False).size().compute().columns.tolist()
    ['k', 'size']
    """

    def __init__(self, grouped: GroupBy) -> None:
        self._grouped = grouped

    def __repr__(self) -> str:
        return repr(self._grouped).replace(">", ", as_index=False>", 1)

    def __dir__(self) -> list:
        return dir(self._grouped)

    def __getitem__(self, key: Any) -> "FlatGroupBy":
        return FlatGroupBy(self._grouped[key])

    def __iter__(self):
        return iter(self._grouped)  # (refused: ``no_iteration``)

    def apply(self, func: Callable, *args: Any, meta: Any = _NO_META, **kwargs: Any) -> Any:
        """``func`` on each whole group, as pandas' apply under ``as_index=False``: a result
        per group (a number, a Series) has the keys as columns and numbered rows (each
        partition's from 0); a result per row keeps the rows' labels, without the keys.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"k": [1, 2, 1], "v": [1, 2, 3]}), npartitions=2)
        >>> df.groupby("k", as_index=False)[["v"]].apply(lambda g: g.sum()).compute().to_dict("list")
        {'k': [1, 2], 'v': [4, 2]}
        """
        if not isinstance(self._grouped, GroupBy):
            raise NotImplementedError("groupby(..., as_index=False).apply over pd.Grouper keys or the index's "
                                      "name: group by columns, or drop as_index=False and .reset_index()")
        return self._grouped._whole_groups("apply", func, args, kwargs, meta, as_index=False)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        attr = getattr(self._grouped, name)
        if isinstance(attr, (GroupBy, type(self._grouped))):  # (a column: df.groupby(k, as_index=False).v)
            return FlatGroupBy(attr)
        if name not in PER_GROUP:
            return attr

        def per_group(*args: Any, **kwargs: Any) -> Any:
            out = attr(*args, **kwargs)
            if isinstance(out, Series) and (out.name is None or name == "size"):
                return out.reset_index(name=name)  # (pandas names size's column "size", a column's too)
            return out.reset_index()
        per_group.__name__, per_group.__doc__ = name, attr.__doc__
        return per_group


def _install() -> None:
    def grouping(self, by: Any = None, sort: bool = True, dropna: bool = True, observed: bool = True,
                 as_index: bool = True, **kwargs: Any):
        if isinstance(by, pd.Grouper) or (isinstance(by, (list, tuple)) and any(
                isinstance(k, pd.Grouper) for k in by)):
            return GROUPERS[0](self, by, sort=sort, dropna=dropna, observed=observed, as_index=as_index, **kwargs)
        if not as_index:
            if isinstance(self, Series):
                raise TypeError("groupby: as_index=False is only valid for a DataFrame, as in pandas")
            return FlatGroupBy(grouping(self, by, sort=sort, dropna=dropna, observed=observed, **kwargs))
        if names_index(self, by):  # (its labels a column of a name of its own: ``grouper.GrouperKeys``)
            return GROUPERS[0](self, by, sort=sort, dropna=dropna, observed=observed, **kwargs)
        if "level" in kwargs:
            if by is not None:
                raise TypeError("groupby: give by or level, not both")
            by = _level_key(self, kwargs.pop("level"))
        elif by is None:
            raise TypeError("groupby: give by (columns, a Series, a function of the index...) or level")
        by = _as_key(self, by)
        if kwargs:
            raise TypeError(f"groupby: unsupported arguments {sorted(kwargs)}")
        if isinstance(self, Series):
            col = self.name if self.name is not None else UNNAMED
            frame = self.to_frame(name=col)
            several = isinstance(by, list) and len(by) > 0 and all(isinstance(k, _Frame) for k in by)  # (as pandas:
            # a list is several keys, a tuple one)
            if not isinstance(by, _Frame) and not several:
                return SeriesGroupBy(frame, by, sort, dropna, observed, col)
            keys = list(by) if several else [by]
            hidden = [name for name in (f"__by{i}__" for i in range(len(keys) + 1)) if name != col][:len(keys)]
            grouped = SeriesGroupBy(frame.assign(**dict(zip(hidden, keys))), hidden if several else hidden[0],
                                    sort, dropna, observed, col)
            grouped._key_names = {h: k.name for h, k in zip(hidden, keys)}
            # The work groups a frame of the Series and its keys by stand-in columns; the meta is
            # pandas' own grouping of the Series by the keys, and results take their names from it.
            def stand_in() -> Any:
                values = _nonempty(self._meta)
                made = [pd.Series(_nonempty(k._meta).to_numpy(), index=values.index, name=k.name) for k in keys]
                return values.groupby(made if several else made[0], sort=sort, dropna=dropna, observed=observed)
            grouped._stand_in, grouped._meta_made = stand_in, None
            return grouped
        if isinstance(by, (list, tuple)) and any(isinstance(k, _Frame) for k in by):
            self, by = _keys_as_columns(self, list(by))
        return GroupBy(self, by, sort, dropna, observed)

    def groupby(self, by: Any = None, sort: bool = True, dropna: bool = True, observed: bool = True,
                as_index: bool = True, group_keys: bool = True, **kwargs: Any):
        """Group rows by columns (names) or by a Series partitioned like this frame;
        ``as_index=False`` gives per-group results with the keys as columns (``FlatGroupBy``);
        ``pd.Grouper(freq="1D")`` groups the index into bins of time, as ``resample``; the
        index's name, alone or among columns, groups by its labels, as pandas'.
        ``group_keys=False``: ``apply`` leaves the keys out of a result per row.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"k": list("ab"), "v": [1, 2]}), npartitions=1)
        >>> df.groupby("k").v.sum().compute().tolist()
        [1, 2]
        >>> df.set_index("k").assign(m=1).groupby(["k", "m"]).v.sum().compute().index.tolist()
        [('a', 1), ('b', 1)]
        """
        if not isinstance(group_keys, (bool, np.bool_)):
            raise TypeError(f"groupby: group_keys must be True or False, got {group_keys!r}")
        out = grouping(self, by, sort, dropna, observed, as_index, **kwargs)
        inner = out
        while inner is not None and not isinstance(inner, GroupBy):  # (FlatGroupBy, GrouperKeys hold one)
            inner = getattr(inner, "_grouped", None)
        if not group_keys and inner is not None:  # (none: bins of time, a resample, which has no apply)
            inner._group_keys = False
        return out

    DataFrame.groupby = groupby  # type: ignore[attr-defined]
    Series.groupby = groupby  # type: ignore[attr-defined]


_install()
