"""pandas methods beyond the core: partition-wise ones, sampling, nlargest, concat, to_datetime,
to_timedelta, isna/notna, pop and squeeze.

Most pandas methods need no exchange between partitions; ``_SHARED_METHODS`` lists them
once, and each becomes a collection method running it per partition (the result's meta,
as always, from running it on a stand-in first). The others here need a little more:
``nlargest`` is a tree reduction, ``sample`` seeds each partition apart, ``concat`` joins
collections' partitions end to end.
``squeeze`` never squeezes rows: their number is not known when the expression is built.

>>> import pandas as pd, xsched.dataframe as xd
>>> df = xd.from_pandas(pd.DataFrame({"a": range(10)}), npartitions=3)
>>> df.query("a % 3 == 0").a.tolist(), df.a.nlargest(2).tolist()
([0, 3, 6, 9], [9, 8])
"""

from __future__ import annotations

import re
import sys
import warnings
from functools import partial
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from ..graph.collection import compute_collection
from ..graph.layers import LayeredGraph, annotations_in_force, new_token, per_task
from ..graph.partials import row_starts, through_all
from ..graph.delayed import source_of
from ..graph.spec import Ref, Task
from .core import (_NO_META, DataFrame, Index, Scalar, Series, _call_method, _checked_array, _Frame, _holds_lazy,
                   _Lifted, _nonempty, axis_number, make_meta, map_partitions, new_collection, part_key,
                   unify_divisions)
from .operators import per_column
from .categorical import has_known_categories
from .pieces import _concat, with_category
from .io import _identity
from .value_dtypes import VALUE_DEPENDENT, call_as_meta, in_dtypes_of, reaching_meta
from .reductions import _unique_chunk, _unique_merge, reduction

__all__ = ["concat", "to_datetime", "to_numeric", "to_timedelta", "isna", "notna"]


#: where pandas' method sets a Series argument against a DataFrame's columns (a value per
#: column), and with which axis: the argument's name and position
_PER_COLUMN = {"fillna": ((None,), (("value", 0),)), "clip": ((1,), (("lower", 0), ("upper", 1))),
               "where": ((1,), (("other", 1),)), "mask": ((1,), (("other", 1),))}


def _per_column_arguments(self: Any, method: str, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """``args`` and ``kwargs`` of a DataFrame's ``method`` with each Series pandas sets against
    the columns (``df.fillna(df.mean())``, ``df.clip(lo, hi, axis=1)``) made whole for every
    partition (``per_column``); NumPy arrays along the rows refused (``_checked_array``)."""
    axes, names = _PER_COLUMN[method]
    axis = self._axis(kwargs.get("axis"), method)
    by_columns = isinstance(self, DataFrame) and axis in axes
    args = list(args)
    for name, pos in names:
        value = kwargs[name] if name in kwargs else args[pos] if pos < len(args) else None
        if by_columns and isinstance(value, Series):
            value = per_column(self, value, f"{method}({name}=...)")
        value = _checked_array(value, self, method, column=axis == 0)
        if name in kwargs:
            kwargs[name] = value
        elif pos < len(args):
            args[pos] = value
    return tuple(args), kwargs


def _method_doc(method: str, doc: str) -> Callable:
    """A collection method that runs the pandas method of the same name on every partition."""
    def call(self, *args, **kwargs):
        if method in _PER_COLUMN:
            args, kwargs = _per_column_arguments(self, method, args, kwargs)
        if method in VALUE_DEPENDENT and not _holds_lazy((args, kwargs)):
            meta = reaching_meta(self._meta, method, args, kwargs)
            if meta is not None:  # (a dtype that depends on the values: value_dtypes.py)
                return map_partitions(call_as_meta, self, method, meta, *args, meta=meta, _name=method, **kwargs)
        out = self._method(method, *args, **kwargs)
        if method in ("where", "mask"):  # (a partition where nothing was replaced keeps a narrower dtype)
            return map_partitions(in_dtypes_of, out, out._meta, meta=out._meta, _name=f"{method}-dtypes")
        return out
    call.__name__ = method
    call.__doc__ = doc
    return call


#: The pandas methods that work partition by partition, with no exchange between partitions.
_SHARED_METHODS = {
    "astype": "Cast to dtypes, per partition.\n\n>>> import pandas as pd, xsched.dataframe as xd\n"
              ">>> xd.from_pandas(pd.Series([1, 2]), npartitions=1).astype(float).dtype\ndtype('float64')",
    "dropna": "Drop rows with missing values, per partition.\n\n>>> import pandas as pd, "
              "xsched.dataframe as xd\n>>> len(xd.from_pandas(pd.Series([1, None]), npartitions=1)"
              ".dropna())\n1",
    "isna": "Which values are missing.\n\n>>> import pandas as pd, xsched.dataframe as xd\n"
            ">>> xd.from_pandas(pd.Series([1, None]), npartitions=1).isna().compute().tolist()\n[False, True]",
    "notna": "Which values are present.\n\n>>> import pandas as pd, xsched.dataframe as xd\n"
             ">>> xd.from_pandas(pd.Series([1, None]), npartitions=1).notna().compute().tolist()\n[True, False]",
    "where": "Keep values where ``cond`` holds, else ``other``.\n\n>>> import pandas as pd, "
             "xsched.dataframe as xd\n>>> s = xd.from_pandas(pd.Series([1, 2, 3]), npartitions=2)\n"
             ">>> s.where(s > 1, 0).compute().tolist()\n[0, 2, 3]",
    "mask": "Replace values where ``cond`` holds with ``other``.\n\n>>> import pandas as pd, "
            "xsched.dataframe as xd\n>>> s = xd.from_pandas(pd.Series([1, 2, 3]), npartitions=2)\n"
            ">>> s.mask(s > 1, 0).compute().tolist()\n[1, 0, 0]",
    "abs": "Absolute values.\n\n>>> import pandas as pd, xsched.dataframe as xd\n"
           ">>> xd.from_pandas(pd.Series([-1, 2]), npartitions=1).abs().compute().tolist()\n[1, 2]",
    "round": "Round to ``decimals``.\n\n>>> import pandas as pd, xsched.dataframe as xd\n"
             ">>> xd.from_pandas(pd.Series([1.26]), npartitions=1).round(1).compute().tolist()\n[1.3]",
    "clip": "Limit values to ``[lower, upper]``.\n\n>>> import pandas as pd, xsched.dataframe as xd\n"
            ">>> xd.from_pandas(pd.Series([1, 5]), npartitions=1).clip(2, 4).compute().tolist()\n[2, 4]",
    "replace": "Replace values, per partition.\n\n>>> import pandas as pd, xsched.dataframe as xd\n"
               ">>> xd.from_pandas(pd.Series([1, 2]), npartitions=1).replace(1, 9).compute().tolist()\n[9, 2]",
    "copy": "A copy (the graph is shared; partitions are copied when computed).\n\n"
            ">>> import pandas as pd, xsched.dataframe as xd\n>>> xd.from_pandas(pd.Series([1]), "
            "npartitions=1).copy().compute().tolist()\n[1]",
    "select_dtypes": "Only the columns of some dtypes.\n\n>>> import pandas as pd, xsched.dataframe as xd\n"
                     ">>> xd.from_pandas(pd.DataFrame({'a': [1], 'b': ['x']}), npartitions=1)"
                     ".select_dtypes('number').columns.tolist()\n['a']",
    "add_prefix": "Column (or label) names with a prefix.\n\n>>> import pandas as pd, xsched.dataframe as xd\n"
                  ">>> xd.from_pandas(pd.DataFrame({'a': [1]}), npartitions=1).add_prefix('x_').columns.tolist()\n"
                  "['x_a']",
    "rename_axis": "Name the index (or the columns' axis), per partition.\n\n>>> import pandas as pd, "
                   "xsched.dataframe as xd\n>>> xd.from_pandas(pd.DataFrame({'a': [1]}), npartitions=1)"
                   ".rename_axis('key').compute().index.name\n'key'",
    "add_suffix": "Column (or label) names with a suffix.\n\n>>> import pandas as pd, xsched.dataframe as xd\n"
                  ">>> xd.from_pandas(pd.DataFrame({'a': [1]}), npartitions=1).add_suffix('_y').columns.tolist()\n"
                  "['a_y']",
}


for _name, _doc in _SHARED_METHODS.items():
    setattr(_Frame, _name, _method_doc(_name, _doc))


def explode(self: _Frame, *args: Any, ignore_index: bool = False, **kwargs: Any):
    """One row per element of list-like values, per partition; ``ignore_index=True``
    numbers the rows 0, 1, 2... across all partitions, as pandas does.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series([[1, 2], [3], [4, 5]]), npartitions=2)
    >>> s.explode().compute().tolist(), s.explode(ignore_index=True).compute().index.tolist()
    ([1, 2, 3, 4, 5], [0, 1, 2, 3, 4])
    """
    out = self._method("explode", *args, **kwargs)
    return concat([out], ignore_index=True) if ignore_index else out


_Frame.explode = explode  # type: ignore[method-assign]


def _with_caller_names(expr: Any, kwargs: dict) -> dict:
    """``kwargs`` of ``query``/``eval`` with a ``local_dict`` of the ``@name`` variables the
    expression reads, from the caller's frame (pandas reads them there too, but the
    partitions are evaluated elsewhere, where the caller's variables are not)."""
    if not isinstance(expr, str) or "@" not in expr or "local_dict" in kwargs:
        return kwargs
    caller = sys._getframe(2)
    names = {}
    for name in set(re.findall(r"@([A-Za-z_]\w*)", expr)):
        if name in caller.f_locals:
            names[name] = caller.f_locals[name]
        elif name in caller.f_globals:
            names[name] = caller.f_globals[name]
    return {**kwargs, "local_dict": names}


def query(self: DataFrame, expr: str, **kwargs: Any):
    """Rows where the expression holds (``DataFrame.query``), per partition; ``@name``
    reads the caller's variable ``name``, as in pandas.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({'a': [1, 5, 9]}), npartitions=2)
    >>> low = 2
    >>> df.query('a > @low').a.compute().tolist()
    [5, 9]
    """
    return self._method("query", expr, **_with_caller_names(expr, kwargs))


def eval(self: DataFrame, expr: str, **kwargs: Any):
    """Evaluate a column expression (``DataFrame.eval``), per partition; ``@name`` reads the
    caller's variable ``name``, as in pandas.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({'a': [1, 5]}), npartitions=1)
    >>> k = 3
    >>> df.eval('b = a * @k').b.compute().tolist()
    [3, 15]
    """
    return self._method("eval", expr, **_with_caller_names(expr, kwargs))


DataFrame.query = query  # type: ignore[method-assign]
DataFrame.eval = eval  # type: ignore[method-assign]


def isin(self: _Frame, values: Any):
    """Whether each value is in ``values``: a list or set (sent to every partition), or an
    xsched Series or Index, whose distinct values are gathered first and sent to every
    partition (a DataFrame's ``isin`` of a Series matches by index label, as pandas').

    >>> import pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series([1, 2, 3, 1]), npartitions=2)
    >>> s.isin([2]).compute().tolist(), s.isin(xd.from_pandas(pd.Series([1, 3]), npartitions=1)).compute().tolist()
    ([False, True, False, False], [True, False, True, True])
    """
    if isinstance(values, dict) and any(isinstance(v, _Frame) for v in values.values()):
        raise TypeError("isin({column: values}): the values must be lists or sets here, not xsched collections; "
                        "compute them first (values.compute().unique())")
    if isinstance(values, (Series, Index)) and not isinstance(self, DataFrame):
        source = values.to_series() if isinstance(values, Index) else values
        values = reduction(source, _unique_chunk, _unique_merge, meta=[], token="isin-values",
                           chunk_kwargs={"dropna": False})
    return self._method("isin", values)


_Frame.isin = isin  # type: ignore[method-assign]
_fill_per_partition = _method_doc("fillna", "")  # (the per-column arguments made whole, per partition)


def fillna(self: _Frame, value: Any = None, *args: Any, limit: int | None = None, **kwargs: Any):
    """Fill missing values with ``value`` (a scalar, a dict per column, or a Series per
    column), per partition; with ``limit=n``, only the first ``n`` missing values of each
    column are filled, counted over the whole column as pandas counts them (each partition
    is told how many lie before it).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series([None, 1, None, None, 2, None]), npartitions=3)
    >>> s.fillna(0).compute().tolist(), s.fillna(0, limit=2).compute().tolist()
    ([0.0, 1.0, 0.0, 0.0, 2.0, 0.0], [0.0, 1.0, 0.0, nan, 2.0, nan])
    """
    self = _admitting_fill_values(self, value)
    if limit is None:
        return _fill_per_partition(self, value, *args, **kwargs)
    if self._axis(kwargs.get("axis"), "fillna") == 1 or self.npartitions == 1:  # (a row's values are in one partition)
        return _fill_per_partition(self, value, *args, limit=limit, **kwargs)
    if args or set(kwargs) - {"axis"} or not (pd.api.types.is_scalar(value) or isinstance(value, (dict, Scalar))):
        raise NotImplementedError(f"fillna(limit={limit}) across partitions takes a scalar value or a dict per "
                                  "column (and no other argument); fill without limit, or ffill/bfill(limit=)")
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ValueError(f"fillna: limit must be a whole number greater than 0, got {limit!r}")
    lazy = _Lifted(value) if _holds_lazy(value) else None  # (df.a.mean(), say)
    meta = make_meta(_nonempty(self._meta).fillna(value if lazy is None else lazy.standin, limit=limit))
    name = f"fillna-{new_token(self._name, value, limit)}"
    given = value if lazy is None else Ref(lazy.delayed.key)
    layers = through_all(name, self._keys(), _missing_count, _missing_before, _fill_first, (given, limit))
    graphs = [self._graph] + ([] if lazy is None else [source_of(lazy.delayed, "fillna", "")[1]])
    return new_collection(LayeredGraph.merge(*graphs, new=layers), name, meta, self.divisions)


def _admitting_fill_values(frame: _Frame, value: Any) -> _Frame:
    """``frame`` with the fill value among the categories of its categorical columns whose
    categories each partition inferred for itself (``astype("category")``): a partition
    may lack one the whole column has, which pandas' fillna would refuse there."""
    meta = frame._meta
    columns = [(None, meta)] if isinstance(meta, pd.Series) else \
        list(meta.items()) if isinstance(meta, pd.DataFrame) and meta.columns.is_unique else []
    wanted = {}
    for name, column in columns:
        fill = value.get(name) if isinstance(value, dict) and name is not None else value
        if (isinstance(column.dtype, pd.CategoricalDtype) and not has_known_categories(column)
                and pd.api.types.is_scalar(fill) and not pd.isna(fill)):
            wanted[name] = fill
    return map_partitions(_with_categories, frame, wanted, meta=meta, _name="fillna-categories") if wanted else frame


def _with_categories(part: Any, wanted: dict) -> Any:
    if None in wanted:  # (a Series)
        return with_category(part, wanted[None])
    out = part.copy(deep=False)
    for name, fill in wanted.items():
        out[name] = with_category(out[name], fill)
    return out


def _missing_count(part: Any) -> Any:
    return part.isna().sum()


def _missing_before(counts: list) -> list:
    """How many missing values (per column) lie in the partitions before each one."""
    before, total = [], counts[0] * 0
    for count in counts:
        before.append(total)
        total = total + count
    return before


def _fill_first(part: Any, before: Any, value: Any, limit: int) -> Any:
    """The partition with its first missing values filled, as many (per column) as ``limit``
    leaves after the ``before`` in the partitions before it."""
    if isinstance(part, pd.Series):
        left = limit - int(before)
        return part.fillna(value, limit=left) if left > 0 else part.copy()
    out = part.copy()
    for i, column in enumerate(part.columns):  # (by position: column names may repeat)
        left = limit - int(before.iloc[i])
        fill = value.get(column) if isinstance(value, dict) else value
        if left > 0 and fill is not None:
            out.isetitem(i, part.iloc[:, i].fillna(fill, limit=left))
    return out


_Frame.fillna = fillna  # type: ignore[method-assign]


# --------------------------------------------------------------------------- reductions by rank


def _chosen(part: Any, n: int, keep: str, largest: bool, *columns: Any) -> np.ndarray:
    """The positions, in order, of the rows pandas' ``nlargest`` (``nsmallest``) chooses."""
    numbered = part.reset_index(drop=True)  # (positions as labels: the index may repeat)
    return np.sort(getattr(numbered, "nlargest" if largest else "nsmallest")(n, *columns, keep=keep).index.to_numpy())


def _top_rows(part: pd.DataFrame, n: int, columns: Any, keep: str, largest: bool) -> pd.DataFrame:
    """A frame's rows that pandas' ``nlargest`` (``nsmallest``) would choose, in the frame's
    order: partial results of a tree, put together in the frame's order, which decides
    between ties (``keep="last"`` prefers later rows)."""
    return part.iloc[_chosen(part, n, keep, largest, columns)]


def _top_rows_merge(parts: list, n: int, columns: Any, keep: str, largest: bool) -> pd.DataFrame:
    return _top_rows(pd.concat(parts), n, columns, keep, largest)


def _top(parts: list, n: int, columns: Any, keep: str, largest: bool) -> pd.DataFrame:
    return getattr(pd.concat(parts), "nlargest" if largest else "nsmallest")(n, columns, keep=keep)


# A Series' n largest (smallest) through a tree, exactly as pandas picks and orders them: its
# ties go by the rows' order in the whole Series (keep="last" prefers later rows and lists
# them first), missing values fill the result up to n when fewer values exist, and when n
# reaches the Series' length pandas sorts it whole. Each partial is (the rows among which the
# choice lies, in the Series' order; the number of rows they stand for).


def _candidates(part: pd.Series, n: int, keep: str, largest: bool) -> pd.Series:
    """The rows of ``part`` (in its order) among which the Series' choice lies: its own ``n``
    best values by ``keep`` (every tie of the n-th with ``"all"``), and, when it has fewer
    than ``n`` values, the missing ones that may fill the result."""
    has_value = part.notna().to_numpy()
    values = part[has_value]
    at = np.flatnonzero(has_value)[_chosen(values, n, keep, largest)]
    if len(values) < n:
        missing = np.flatnonzero(~has_value)
        at = np.sort(np.concatenate([at, missing if keep == "all" else missing[:n]]))
    return part.iloc[at]


def _series_top_chunk(part: pd.Series, n: int, keep: str, largest: bool) -> tuple:
    return _candidates(part, n, keep, largest), len(part)


def _series_top_combine(partials: list, n: int, keep: str, largest: bool) -> tuple:
    return _candidates(pd.concat([c for c, _ in partials]), n, keep, largest), sum(m for _, m in partials)


def _series_top(partials: list, n: int, keep: str, largest: bool) -> pd.Series:
    """pandas' choice from the candidates of every partition (``_candidates``), as pandas
    makes it from the whole Series."""
    rows = pd.concat([c for c, _ in partials])
    if n >= sum(m for _, m in partials):  # (then every row is a candidate, and pandas sorts them all)
        return getattr(rows, "nlargest" if largest else "nsmallest")(n, keep=keep)
    values, missing = rows.dropna(), rows[rows.isna()]
    ranked = (values.iloc[::-1] if keep == "last" else values).sort_values(ascending=not largest, kind="stable")
    if keep != "all":
        return pd.concat([ranked.iloc[:n], missing]).iloc[:n]
    if len(ranked) > n:  # (every tie of the n-th value)
        nth = ranked.iloc[n - 1]
        ranked = ranked[(ranked >= nth) if largest else (ranked <= nth)]
    fill = len(ranked) < n <= len(missing) + len(ranked)
    return pd.concat([ranked, missing]).iloc[:len(missing) + len(ranked) if fill else len(ranked)]


def _nbest(frame: _Frame, n: int, columns: Any, keep: str, largest: bool, split_every: int | None):
    token = "nlargest" if largest else "nsmallest"
    if isinstance(frame, Series):
        getattr(_nonempty(frame._meta), token)(n, keep=keep)  # (pandas' refusals, now: a dtype, a keep)
        options = {"n": n, "keep": keep, "largest": largest}
        return reduction(frame, partial(_series_top_chunk, **options), partial(_series_top, **options),
                         combine=partial(_series_top_combine, **options), meta=frame._meta, token=token,
                         split_every=split_every)
    cols = list(columns) if isinstance(columns, (list, tuple, pd.Index)) else [columns]
    frame._check_columns(cols, token)
    options = {"n": n, "columns": columns, "keep": keep, "largest": largest}
    return reduction(frame, partial(_top_rows, **options), partial(_top, **options),
                     combine=partial(_top_rows_merge, **options), meta=frame._meta, token=token,
                     split_every=split_every)


def _install() -> None:
    def keys(self):
        """The column labels, as pandas' ``DataFrame.keys``.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.DataFrame({"a": [1], "b": [2]}), npartitions=1).keys().tolist()
        ['a', 'b']
        """
        return self.columns

    def get(self, key: Any, default: Any = None):
        """The column (or columns, for a list) ``key``, or ``default`` when the frame has none
        of that name, as pandas' ``DataFrame.get``.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"a": [1]}), npartitions=1)
        >>> df.get("a").tolist(), df.get("z", "none")
        ([1], 'none')
        """
        wanted = key if isinstance(key, list) else [key]
        try:
            if all(k in self._meta.columns for k in wanted):
                return self[key]
        except TypeError:  # (an unhashable label names no column)
            pass
        return default

    def insert(self, loc: int, column: Any, value: Any, allow_duplicates: bool = False) -> None:
        """Insert column ``column`` at position ``loc``, in place, as pandas' ``DataFrame.insert``
        (``value``: a scalar, or a Series partitioned like the frame).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"a": [1, 2], "c": [5, 6]}), npartitions=2)
        >>> df.insert(1, "b", df.a * 10)
        >>> df.compute().to_dict("list")
        {'a': [1, 2], 'b': [10, 20], 'c': [5, 6]}
        """
        columns = list(self._meta.columns)
        if not isinstance(loc, int) or isinstance(loc, bool) or not 0 <= loc <= len(columns):
            raise IndexError(f"insert: loc must be an int from 0 to {len(columns)}, got {loc!r}")
        if column in columns:  # (pandas' allow_duplicates=True is not run: columns here are named once)
            raise ValueError(f"insert: the frame has a column {column!r} already; name the new one otherwise")
        added = self._assign([(column, value)])
        order = columns[:loc] + [column] + columns[loc:]
        self._become(added[order])

    DataFrame.keys = keys  # type: ignore[attr-defined]
    DataFrame.get = get  # type: ignore[attr-defined]
    DataFrame.insert = insert  # type: ignore[attr-defined]
    Series.to_list = Series.tolist  # type: ignore[attr-defined]

    def nlargest(self, n: int = 5, columns: Any = None, keep: str = "first", split_every: int | None = None):
        """The ``n`` largest rows (by ``columns`` for a DataFrame), as a tree reduction.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.DataFrame({"a": [3, 9, 1, 7]}), npartitions=2).nlargest(2, "a").a.tolist()
        [9, 7]
        """
        return _nbest(self, n, columns, keep, True, split_every)

    def nsmallest(self, n: int = 5, columns: Any = None, keep: str = "first", split_every: int | None = None):
        """The ``n`` smallest rows (by ``columns`` for a DataFrame), as a tree reduction.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series([3, 9, 1, 7]), npartitions=2).nsmallest(2).tolist()
        [1, 3]
        """
        return _nbest(self, n, columns, keep, False, split_every)

    def s_nlargest(self, n: int = 5, keep: str = "first", split_every: int | None = None):
        return nlargest(self, n, None, keep, split_every)

    def s_nsmallest(self, n: int = 5, keep: str = "first", split_every: int | None = None):
        return nsmallest(self, n, None, keep, split_every)

    s_nlargest.__doc__, s_nsmallest.__doc__ = nlargest.__doc__, nsmallest.__doc__
    DataFrame.nlargest, DataFrame.nsmallest = nlargest, nsmallest  # type: ignore[attr-defined]
    Series.nlargest, Series.nsmallest = s_nlargest, s_nsmallest  # type: ignore[attr-defined]

    def get_partition(self, n: int):
        """Partition ``n`` alone, as a collection of one partition.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.DataFrame({"a": range(6)}), npartitions=3).get_partition(1).a.tolist()
        [2, 3]
        """
        if not -self.npartitions <= n < self.npartitions:
            raise IndexError(f"get_partition({n}): this collection has {self.npartitions} partitions")
        return self.partitions[n % self.npartitions]

    def sample(self, n: Any = None, frac: float | None = None, replace: bool = False, random_state: Any = None):
        """A random fraction of the rows of every partition, reproducible from ``random_state``
        (an int, or a NumPy ``RandomState``/``Generator`` a seed is drawn from; each
        partition draws from its own seed, derived from it). ``n`` rows is refused, as in dask:
        how many each partition holds is not known.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"a": range(100)}), npartitions=4)
        >>> len(df.sample(frac=0.2, random_state=0)), df.sample(0.1, random_state=1).a.tolist() == \\
        ...     df.sample(0.1, random_state=1).a.tolist()
        (20, True)
        """
        if n is not None and frac is None and isinstance(n, float) and 0 <= n <= 1:
            n, frac = None, n  # (sample(0.1): a fraction, the first positional as dask's frac)
        if n is not None and frac is not None:
            raise TypeError("sample: give the fraction by name, sample(frac=0.5, replace=..., random_state=...) "
                            "(the first positional is dask's n)")
        if n is not None:
            raise ValueError("sample(n=...) is not offered: how many rows each partition holds is not known "
                             "without reading them all; give frac= (e.g. frac=n / len(df)), or df.head(n) for "
                             "the first rows")
        if frac is None:
            raise TypeError("sample: give frac=, the fraction of the rows to keep")
        if not 0 <= frac <= 1 and not replace:
            raise ValueError(f"sample: frac must be between 0 and 1 without replacement, got {frac}")
        if isinstance(random_state, np.random.RandomState):
            random_state = int(random_state.randint(0, 2**31 - 1))  # (a seed drawn from it, as dask draws one)
        elif isinstance(random_state, np.random.Generator):
            random_state = int(random_state.integers(0, 2**31 - 1))
        seed = np.random.SeedSequence(random_state).generate_state(1)[0] if random_state is not None else \
            np.random.SeedSequence().generate_state(1)[0]
        return _seeded(self, "sample", int(seed), {"frac": frac, "replace": replace})

    def random_split(self, frac: Sequence[float], random_state: int | None = None) -> list:
        """The rows split at random into parts of about the given fractions (they are
        normalised to add up to 1); every row lands in exactly one part.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> a, b = xd.from_pandas(pd.DataFrame({"a": range(100)}), npartitions=4).random_split([0.8, 0.2], 0)
        >>> len(a) + len(b)
        100
        """
        weights = np.asarray(frac, dtype=float)
        if weights.ndim != 1 or len(weights) < 1 or (weights < 0).any() or weights.sum() <= 0:
            raise ValueError(f"random_split: frac must be non-negative fractions, got {frac!r}")
        bounds = np.concatenate([[0.0], np.cumsum(weights / weights.sum())])
        bounds[-1] = 1.0 + 1e-12
        seed = np.random.SeedSequence(random_state).generate_state(1)[0]
        return [_seeded(self, "split", int(seed), {"lo": float(bounds[i]), "hi": float(bounds[i + 1])})
                for i in range(len(weights))]

    def pop(self, item: Any):
        """Column ``item``, dropped from this DataFrame (which changes in place, as pandas').

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"a": [1, 2], "b": [3, 4]}), npartitions=2)
        >>> df.pop("b").tolist(), df.columns.tolist()
        ([3, 4], ['a'])
        """
        out = self[item]
        self._become(self.drop(columns=[item]))
        return out

    def squeeze(self, axis: Any = None):
        """A DataFrame of one column as that Series (else unchanged); rows are never squeezed,
        their number being unknown until computed (``axis=0`` is refused).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.DataFrame({"a": [1, 2]}), npartitions=2).squeeze().tolist()
        [1, 2]
        """
        if self._axis(axis, "squeeze") == 0:
            raise NotImplementedError("squeeze(axis=0): the number of rows is not known until computed; "
                                      "compute() first, or take .iloc[0] of the computed pandas object")
        if isinstance(self, DataFrame) and len(self.columns) == 1:
            return self[self.columns[0]]
        return self

    def series_map(self, arg: Any, na_action: Any = None, meta: Any = _NO_META):
        """Map values through a function, a dict, or a Series (pandas', or an xsched Series:
        a lookup table whose partitions are joined once and sent to every partition), per
        partition. Mapping through an xsched Series takes its dtype as the result's (give
        ``meta=`` when keys missing from it make pandas' floats or objects).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> s = xd.from_pandas(pd.Series([1, 2, 1]), npartitions=2)
        >>> s.map({1: "a", 2: "b"}).compute().tolist()
        ['a', 'b', 'a']
        >>> table = xd.from_pandas(pd.Series(["one", "two"], index=[1, 2]), npartitions=2)
        >>> s.map(table).compute().tolist()
        ['one', 'two', 'one']
        """
        if isinstance(arg, _Frame):
            if not isinstance(arg, Series):
                raise TypeError(f"map looks values up in a Series (its index to its values), not a "
                                f"{type(arg).__name__}")
            if meta is _NO_META:
                meta = pd.Series([], dtype=arg._meta.dtype, name=self._meta.name)
            arg = reduction(arg, _identity, _concat, _concat, meta=None, token="map-table")
        return map_partitions(_call_method, self, "map", arg, na_action=na_action, meta=meta, _name="map")

    series_map.__name__ = "map"
    Series.map = series_map  # type: ignore[attr-defined]
    DataFrame.pop = pop  # type: ignore[attr-defined]
    for cls in (DataFrame, Series):
        cls.squeeze = squeeze  # type: ignore[attr-defined]

    def memory_usage_per_partition(self, index: bool = True, deep: bool = False):
        """Bytes each partition holds (a Series, one value per partition).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.DataFrame({"a": range(4)}), npartitions=2).memory_usage_per_partition().tolist()
        [148, 148]
        """
        return self.map_partitions(_memory_usage, index, deep, meta=0)

    def size(self):
        """The number of values (rows x columns), as a Scalar.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.DataFrame({"a": range(4), "b": 1}), npartitions=2).size.compute()
        np.int64(8)
        """
        return self.map_partitions(_size, meta=0).sum()

    def truncate(self, before: Any = None, after: Any = None, axis: Any = None, copy: Any = None):
        """The rows labelled from ``before`` to ``after`` (both kept), as pandas' ``truncate`` of a
        sorted index: with known divisions only the partitions that can hold them are read;
        ``axis=1`` keeps the columns between those labels.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> s = xd.from_pandas(pd.Series(range(10)), npartitions=3)
        >>> s.truncate(2, 5).compute().tolist(), s.truncate(2, 5).npartitions
        ([2, 3, 4, 5], 2)
        """
        if self._axis(axis, "truncate") == 1:
            return self._method("truncate", before=before, after=after, axis=1)
        if isinstance(self._meta.index, pd.DatetimeIndex):  # (times, as pandas reads them: "2024-01-03" is its midnight)
            before, after = (None if t is None else pd.to_datetime(t) for t in (before, after))
        if before is not None and after is not None and _reversed(before, after):
            raise ValueError(f"truncate: before={before!r} is after after={after!r} (pandas refuses it too)")
        if self.known_divisions:
            return self.loc[before:after]
        return self._method("truncate", before=before, after=after).clear_divisions()

    def repeat(self, repeats: Any, axis: Any = None):
        """Each value ``repeats`` times in a row, its label with it, as pandas' ``Series.repeat``
        (a whole number; per partition, so known divisions stay).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series([1, 2]), npartitions=2).repeat(2).compute().tolist()
        [1, 1, 2, 2]
        """
        if not isinstance(repeats, (int, np.integer)) or isinstance(repeats, bool) or repeats < 0:
            raise TypeError(f"repeat: repeats must be a whole number of times (one count per row would need "
                            f"the rows' positions), got {repeats!r}")
        return self._method("repeat", int(repeats))

    def infer_objects(self):
        """``object`` columns in the dtype their values have (numbers, times...), as pandas'
        ``infer_objects``: each partition is looked at now (one pass over the data) and a column
        gets the dtype that holds every partition's, so that all partitions agree.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"a": pd.Series([1, 2, 3], dtype=object)}), npartitions=2)
        >>> df.infer_objects().dtypes.to_dict()
        {'a': dtype('int64')}
        """
        return _inferred(self, "infer_objects", {})

    def convert_dtypes(self, infer_objects: bool = True, convert_string: bool = True,
                       convert_integer: bool = True, convert_boolean: bool = True,
                       convert_floating: bool = True, dtype_backend: str = "numpy_nullable"):
        """Columns in pandas' nullable dtypes (``Int64``, ``Float64``, ``boolean``, ``string``),
        as pandas' ``convert_dtypes``: each partition is looked at now (one pass over the data)
        and a column gets the dtype that holds every partition's (whole floats in one partition
        and fractions in another: ``Float64``, as pandas gives the whole column).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"a": [1.0, None, 3.0], "b": [1.0, 2.5, None]}), npartitions=2)
        >>> df.convert_dtypes().dtypes.astype(str).to_dict()
        {'a': 'Int64', 'b': 'Float64'}
        """
        given = {"infer_objects": infer_objects, "convert_string": convert_string, "convert_integer": convert_integer,
                 "convert_boolean": convert_boolean, "convert_floating": convert_floating,
                 "dtype_backend": dtype_backend}
        defaults = {"dtype_backend": "numpy_nullable"}
        # (only the keywords given otherwise than pandas' defaults reach pandas, which deprecates some)
        return _inferred(self, "convert_dtypes", {k: v for k, v in given.items() if v != defaults.get(k, True)})

    for f in (get_partition, sample, random_split, memory_usage_per_partition, truncate, infer_objects,
              convert_dtypes):
        setattr(_Frame, f.__name__, f)
    Series.repeat = repeat  # type: ignore[attr-defined]
    _Frame.size = property(size)  # type: ignore[attr-defined]

    def shape(self) -> tuple:
        """``(rows, columns)``: the row count as a Scalar (it needs a computation), the
        column count as a number.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> rows, cols = xd.from_pandas(pd.DataFrame({"a": range(4), "b": 1}), npartitions=2).shape
        >>> rows.compute(), cols
        (np.int64(4), 2)
        """
        return self.map_partitions(len, meta=0).sum(), len(self._meta.columns)

    DataFrame.shape = property(shape)  # type: ignore[attr-defined]

    def series_shape(self) -> tuple:
        """``(rows,)``, the row count a Scalar (it needs a computation).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series(range(5)), npartitions=2).shape[0].compute()
        np.int64(5)
        """
        return (self.map_partitions(len, meta=0).sum(),)

    Series.shape = property(series_shape)  # type: ignore[attr-defined]
    Series.dtypes = property(lambda self: self._meta.dtype, doc="The values' dtype (as ``dtype``).")  # type: ignore[attr-defined]

    def iterrows(self):
        """``(label, row)`` pairs as pandas' ``iterrows``, a partition computed at a time (so
        memory holds one partition).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> [int(row.a) for _, row in xd.from_pandas(pd.DataFrame({"a": [1, 2]}), npartitions=2).iterrows()]
        [1, 2]
        """
        return _by_partition(self, "iterrows")

    def itertuples(self, index: bool = True, name: str | None = "Pandas"):
        """Rows as named tuples (pandas' ``itertuples``), a partition computed at a time.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> list(xd.from_pandas(pd.DataFrame({"a": [1, 2]}), npartitions=2).itertuples(index=False, name=None))
        [(1,), (2,)]
        """
        return _by_partition(self, "itertuples", index=index, name=name)

    def frame_items(self):
        """``(column, Series)`` pairs, each Series an xsched one (nothing computed).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> [(c, s.sum().compute()) for c, s in xd.from_pandas(pd.DataFrame({"a": [1], "b": [2]}), npartitions=1).items()]
        [('a', np.int64(1)), ('b', np.int64(2))]
        """
        return ((col, self[col]) for col in self.columns)

    def series_items(self):
        """``(label, value)`` pairs, a partition computed at a time.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> list(xd.from_pandas(pd.Series([5, 6], index=["x", "y"]), npartitions=2).items())
        [('x', 5), ('y', 6)]
        """
        return _by_partition(self, "items")

    DataFrame.iterrows, DataFrame.itertuples = iterrows, itertuples  # type: ignore[attr-defined]
    DataFrame.items, Series.items = frame_items, series_items  # type: ignore[attr-defined]
    Series.__iter__ = lambda self: _by_partition(self, "__iter__")  # type: ignore[attr-defined]

    def series_contains(self, key: Any) -> bool:
        """``key in s``: whether ``key`` is an index label, as pandas asks (not a value),
        computed (a partition's answer each, ``any`` of them).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> s = xd.from_pandas(pd.Series([10, 20], index=["a", "b"]), npartitions=2)
        >>> "b" in s, 10 in s
        (True, False)
        """
        return bool(self.map_partitions(_has_label, key, meta=False).any().compute())

    Series.__contains__ = series_contains  # type: ignore[attr-defined]

    def to_timestamp(self, freq: Any = None, how: str = "start"):
        """A PeriodIndex made timestamps (pandas' ``to_timestamp``), partition by partition;
        known divisions are converted alike.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> s = xd.from_pandas(pd.Series([1, 2], index=pd.period_range("2024-01", periods=2, freq="M")), npartitions=2)
        >>> s.to_timestamp().divisions
        (Timestamp('2024-01-01 00:00:00'), Timestamp('2024-02-01 00:00:00'), Timestamp('2024-02-01 00:00:00'))
        """
        if not isinstance(self._meta.index, pd.PeriodIndex):
            raise TypeError(f"to_timestamp converts a PeriodIndex; this index is {type(self._meta.index).__name__}")
        out = self._method("to_timestamp", freq=freq, how=how)
        if self.known_divisions:
            out.divisions = tuple(pd.Period(d).to_timestamp(freq=freq, how=how) for d in self.divisions)
        return out

    DataFrame.to_timestamp = Series.to_timestamp = to_timestamp  # type: ignore[attr-defined]

    def to_period(self, freq: Any = None):
        """A DatetimeIndex made periods (pandas' ``to_period``), partition by partition. The
        divisions become unknown: two partitions' times can fall in one period.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> s = xd.from_pandas(pd.Series([1, 2, 3], index=pd.date_range("2024-01-30", periods=3)), npartitions=2)
        >>> [str(p) for p in s.to_period("M").compute().index]
        ['2024-01', '2024-01', '2024-02']
        """
        if not isinstance(self._meta.index, pd.DatetimeIndex):
            raise TypeError(f"to_period converts a DatetimeIndex; this index is {type(self._meta.index).__name__}")
        if freq is None:
            raise ValueError("to_period: give freq= (e.g. 'M'); a partition's labels cannot tell the whole index's")
        return self._method("to_period", freq=freq).clear_divisions()

    DataFrame.to_period = Series.to_period = to_period  # type: ignore[attr-defined]


def _has_label(part: Any, key: Any) -> bool:
    return key in part.index


def _by_partition(frame: _Frame, method: str, **kwargs: Any):
    """pandas' ``method`` iterator over each partition, computed one after another."""
    for i in range(frame.npartitions):
        yield from getattr(frame.get_partition(i).compute(), method)(**kwargs)


def _memory_usage(part: Any, index: bool, deep: bool) -> int:
    out = part.memory_usage(index=index, deep=deep)
    return int(out.sum()) if isinstance(out, pd.Series) else int(out)


def _size(part: Any) -> int:
    return int(part.size)


def _draw(part: Any, how: str, seed: int, index: int, kwargs: dict) -> Any:
    rng = np.random.default_rng([seed, index])
    if how == "sample":
        return part.sample(frac=kwargs["frac"], replace=kwargs["replace"], random_state=rng)
    u = rng.random(len(part))
    return part[(u >= kwargs["lo"]) & (u < kwargs["hi"])]


def _seeded(frame: _Frame, how: str, seed: int, kwargs: dict):
    """A partition-wise draw whose partition ``i`` uses the generator seeded ``(seed, i)``."""
    name = f"{how}-{new_token(frame._name, how, seed, kwargs)}"
    ann = annotations_in_force()
    layer = {part_key(name, i): Task(_draw, (Ref(k), how, seed, i, kwargs), {}, per_task(ann))
             for i, k in enumerate(frame._keys())}
    return new_collection(LayeredGraph.merge(frame._graph, new={name: layer}), name, frame._meta, frame.divisions)


# --------------------------------------------------------------------------- module functions


def concat(dfs: Sequence[_Frame], axis: int = 0, join: str = "outer", ignore_index: bool = False,
           interleave_partitions: bool = False):
    """Collections end to end (``axis=0``): the partitions of the first, then of the next...
    Divisions stay known when every input's are and they follow each other.
    ``interleave_partitions=True`` keeps them known when they overlap, as in dask: each
    collection is cut at the union of all divisions and the pieces of each range are
    concatenated in one partition, sorted by label.

    ``ignore_index=True`` numbers the rows 0, 1, 2... across all partitions, as pandas does:
    partition ``i`` starts at the row count of the partitions before it, which a chain of
    small tasks adds up (as ``cumsum`` carries its totals; only the lengths travel).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> a = xd.from_pandas(pd.DataFrame({"x": [1, 2]}), npartitions=1)
    >>> b = xd.from_pandas(pd.DataFrame({"x": [3], "y": ["z"]}), npartitions=1)
    >>> xd.concat([a, b]).compute().fillna({"y": "-"}).to_dict("list")
    {'x': [1, 2, 3], 'y': ['-', '-', 'z']}
    >>> xd.concat([a, a], ignore_index=True).compute().index.tolist()
    [0, 1, 2, 3]
    >>> odd = xd.from_pandas(pd.DataFrame({"x": [1, 3, 5]}, index=[1, 3, 5]), npartitions=2)
    >>> even = xd.from_pandas(pd.DataFrame({"x": [2, 4]}, index=[2, 4]), npartitions=1)
    >>> both = xd.concat([odd, even], interleave_partitions=True)
    >>> both.npartitions, both.compute().x.tolist()
    (3, [1, 2, 3, 4, 5])

    ``axis=1`` puts the collections side by side, partition by partition, their rows
    aligned by label as pandas aligns them (``join="outer"`` or ``"inner"``): so their
    divisions must be known (when they differ, each is repartitioned to the union of them
    first), or each a single partition. With ``"outer"``, labels only a later collection has
    come within their partition's range (pandas puts them after all of the first's).

    >>> c = xd.from_pandas(pd.DataFrame({"z": [5.0]}, index=[1]), npartitions=1)
    >>> xd.concat([a, c], axis=1).compute().to_dict("list")
    {'x': [1, 2], 'z': [nan, 5.0]}
    """
    dfs = list(dfs)
    if not dfs or not all(isinstance(d, _Frame) for d in dfs):
        raise TypeError("concat takes a list of xsched DataFrames or Series")
    if axis_number(axis, "concat", none=False) == 1:
        return _side_by_side(dfs, join, ignore_index)
    if len(dfs) == 1 and not ignore_index:
        return dfs[0]
    meta = make_meta(pd.concat([_nonempty(d._meta) for d in dfs], join=join, ignore_index=ignore_index))
    if interleave_partitions and not ignore_index and all(d.known_divisions for d in dfs) and not all(
            a.divisions[-1] < b.divisions[0] for a, b in zip(dfs, dfs[1:])):
        return map_partitions(_interleaved, *unify_divisions(*dfs), like=meta, join=join, meta=meta, _name="concat")
    tok = new_token([d._name for d in dfs], join, ignore_index)
    name = f"concat-{tok}"
    ann = annotations_in_force()
    keys = [k for d in dfs for k in d._keys()]
    layers: dict[str, dict] = {}
    offsets: list[Any] = [None] * len(keys)
    if ignore_index:  # partition i starts where the rows before it end
        starts, offsets = row_starts(f"concat-rows-{tok}", keys, annotations=ann)
        layers.update(starts)
    layer = layers[name] = {}
    for key, offset in zip(keys, offsets):
        layer[part_key(name, len(layer))] = Task(_conform_concat, (Ref(key), meta, join, offset), {},
                                                 per_task(ann))
    known = all(d.known_divisions for d in dfs) and all(
        a.divisions[-1] < b.divisions[0] for a, b in zip(dfs, dfs[1:])) and not ignore_index
    divisions = tuple(x for d in dfs for x in d.divisions[:-1]) + (dfs[-1].divisions[-1],) if known \
        else (None,) * (len(layer) + 1)
    return new_collection(LayeredGraph.merge(*[d._graph for d in dfs], new=layers), name, meta, divisions)


def _side_by_side(dfs: list, join: str, ignore_index: bool = False) -> DataFrame:
    """``concat(axis=1)``: each partition's pieces side by side, aligned by pandas (the
    columns numbered 0, 1, ... with ``ignore_index``)."""
    if join not in ("outer", "inner"):
        raise ValueError(f"concat: join must be 'outer' or 'inner', got {join!r}")
    single = all(d.npartitions == 1 for d in dfs)
    if not single:
        dfs = unify_divisions(*dfs)
    if not single and not all(d.known_divisions and d.divisions[1:-1] == dfs[0].divisions[1:-1] for d in dfs):
        raise ValueError("concat(axis=1) aligns rows partition by partition, so the collections' divisions must be "
                         f"known (they are {[d.divisions[:3] for d in dfs]}...); set_index on each, or join them "
                         "(merge on the index)")
    meta = make_meta(pd.concat([d._meta for d in dfs], axis=1, join=join, ignore_index=ignore_index))
    if not single:
        return map_partitions(_columns_joined, *dfs, join=join, ignore_index=ignore_index, meta=meta,
                              _name="concat-columns")
    known = all(d.known_divisions for d in dfs)  # (one partition each: its bounds are all of theirs)
    divisions = (min(d.divisions[0] for d in dfs), max(d.divisions[-1] for d in dfs)) if known else (None, None)
    out = map_partitions(_columns_joined, *[d.clear_divisions() for d in dfs], join=join, ignore_index=ignore_index,
                         meta=meta, _name="concat-columns")
    return new_collection(out._graph, out._name, meta, divisions)


def _columns_joined(*parts: Any, join: str, ignore_index: bool = False) -> pd.DataFrame:
    return pd.concat(parts, axis=1, join=join, ignore_index=ignore_index)


def _interleaved(*parts: Any, like: Any, join: str) -> Any:
    """``concat(interleave_partitions=True)``'s partition: the pieces of one range of labels,
    sorted by label (stably: equal labels in the order of the collections), as a partition
    of known divisions is."""
    return _concat([_conform_concat(p, like, join) for p in parts]).sort_index(kind="stable")


def _conform_concat(part: Any, meta: Any, join: str, start: int | None = None) -> Any:
    """A partition in the concatenation's columns (missing ones as missing values), its rows
    numbered from ``start`` (``ignore_index``) when given."""
    if isinstance(meta, pd.DataFrame):
        if isinstance(part, pd.Series):  # a Series among frames is a column (0 when unnamed), as pandas has it
            part = part.to_frame()
        if join == "inner":
            part = part[list(meta.columns)]
        else:
            out = part.reindex(columns=meta.columns)
            part = out.astype({c: meta[c].dtype for c in meta.columns if c not in part.columns}, errors="ignore")
    part = _categories_as_meta(part, meta)
    if start is not None:
        part = part.set_axis(pd.RangeIndex(start, start + len(part)), axis=0)
    return part


def _categories_as_meta(part: Any, meta: Any) -> Any:
    """A partition's categorical columns in the meta's dtype where the meta's is not
    categorical: collections whose categories differ concatenate to pandas' plain values,
    and each partition must hold what the meta says, not its own categories."""
    if isinstance(part, pd.Series) and isinstance(meta, pd.Series):
        if isinstance(part.dtype, pd.CategoricalDtype) and not isinstance(meta.dtype, pd.CategoricalDtype):
            return part.astype(meta.dtype)
        return part
    if isinstance(part, pd.DataFrame) and isinstance(meta, pd.DataFrame):
        plain = {c: meta[c].dtype for c in meta.columns
                 if c in part.columns and isinstance(part[c].dtype, pd.CategoricalDtype)
                 and not isinstance(meta[c].dtype, pd.CategoricalDtype)}
        return part.astype(plain) if plain else part
    return part


def to_datetime(arg: _Frame, **kwargs: Any):
    """``pandas.to_datetime`` on every partition of a Series (or DataFrame of parts), in the
    unit pandas gives the stand-in, or finer where a partition's text needs it (as pandas
    gives the whole: fractions of seconds are kept). Without ``format=``, each partition's
    format is inferred from its own first date (pandas infers one for the whole column):
    give ``format=`` (or ``dayfirst=``) where the text could read two ways, "01/02/2000".

    >>> import pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series(["2000-01-02", "2001-03-04"]), npartitions=2)
    >>> xd.to_datetime(s).dt.year.tolist()
    [2000, 2001]
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (pandas guessing the made-up text's format)
            meta = make_meta(pd.to_datetime(_nonempty(arg._meta), **kwargs))
    except (ValueError, TypeError):  # the stand-in's made-up text is no date: one the parser reads
        meta = make_meta(pd.to_datetime(pd.Series(["2000-01-01"], name=arg._meta.name),
                                        utc=kwargs.get("utc", False)))
    return map_partitions(_datetimes, arg, meta.dtype, kwargs, meta=meta, _name="to-datetime")


def to_numeric(arg: _Frame, errors: str = "raise", **kwargs: Any):
    """``pandas.to_numeric`` on every partition of a Series; every partition comes back as
    float64 (pandas would choose int or float per partition), or as ``meta``'s dtype.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> xd.to_numeric(xd.from_pandas(pd.Series(["1", "2.5"]), npartitions=2)).tolist()
    [1.0, 2.5]
    """
    if not isinstance(arg, (Series, Index)):
        raise TypeError(f"to_numeric takes an xsched Series, got {type(arg).__name__} (for a DataFrame: "
                        "df.apply(xd.to_numeric) is not offered; convert each column, df[c] = xd.to_numeric(df[c]))")
    if kwargs.get("downcast") is not None:
        raise ValueError("to_numeric(downcast=...) picks a dtype from the values of each partition, which would "
                         "differ between them; cast to the dtype you want afterwards (.astype('int8'))")
    kwargs.pop("downcast", None)
    meta = make_meta(kwargs.pop("meta", pd.Series([], dtype="float64", name=arg._meta.name)))
    return map_partitions(_converted, arg, pd.to_numeric, meta.dtype, dict(kwargs, errors=errors), meta=meta,
                          _name="to-numeric")


def to_timedelta(arg: _Frame, unit: str | None = None, errors: str = "raise", meta: Any = None):
    """``pandas.to_timedelta`` on every partition of a Series (or Index); every partition
    comes back in the dtype pandas gives the stand-in (numbers in ``unit``; text in
    pandas' usual microseconds), or in ``meta``'s; never coarser than pandas gives the
    partition (text of nanoseconds keeps them, as pandas does).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series(["1 days", "2h", None]), npartitions=2)
    >>> xd.to_timedelta(s).compute().tolist()
    [Timedelta('1 days 00:00:00'), Timedelta('0 days 02:00:00'), NaT]
    """
    if not isinstance(arg, (Series, Index)):
        raise TypeError(f"to_timedelta takes an xsched Series or Index, got {type(arg).__name__} "
                        "(pandas.to_timedelta converts other values)")
    kwargs = {"errors": errors} if unit is None else {"errors": errors, "unit": unit}
    if meta is None:
        try:
            meta = pd.to_timedelta(_nonempty(arg._meta), **kwargs)
        except (ValueError, TypeError):  # the stand-in's made-up text is no duration: one the parser reads
            meta = pd.to_timedelta(pd.Series(["1s"], name=arg._meta.name), errors=errors)
    meta = make_meta(meta)
    return map_partitions(_timedeltas, arg, meta.dtype, kwargs, meta=meta, _name="to-timedelta")


def isna(obj: Any):
    """Which values are missing: ``obj.isna()`` of a collection, ``pandas.isna`` of anything else.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> xd.isna(xd.from_pandas(pd.Series([1, None]), npartitions=2)).tolist(), xd.isna(None)
    ([False, True], True)
    """
    return obj.isna() if isinstance(obj, _Frame) else pd.isna(obj)


def notna(obj: Any):
    """Which values are present: ``obj.notna()`` of a collection, ``pandas.notna`` of anything else.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> xd.notna(xd.from_pandas(pd.Series([1, None]), npartitions=2)).tolist(), xd.notna(1)
    ([True, False], True)
    """
    return obj.notna() if isinstance(obj, _Frame) else pd.notna(obj)


def _timedeltas(part: Any, dtype: Any, kwargs: dict) -> Any:
    out = pd.to_timedelta(part, **kwargs)
    finer = np.timedelta64(1, np.datetime_data(out.dtype)[0]) < np.timedelta64(1, np.datetime_data(dtype)[0])
    return out if out.dtype == dtype or finer else out.astype(dtype)


def _inferred(frame: _Frame, method: str, kwargs: dict) -> Any:
    """``frame`` through pandas' dtype-inferring ``method`` per partition, every partition then
    cast to one dtype per column: the common dtype of what each non-empty partition gave."""
    getattr(_nonempty(frame._meta), method)(**kwargs)  # (pandas' refusal of a keyword, now)
    found = compute_collection(reduction(frame, partial(_dtypes_of, method=method, kwargs=kwargs),
                                         _common_dtypes, _common_dtypes, meta=None, token=f"{method}-dtypes"))
    meta = getattr(frame._meta, method)(**kwargs)
    if found is not None:
        meta = meta.astype(dict(zip(meta.columns, found)) if isinstance(meta, pd.DataFrame) else found[0])
    dtypes = meta.dtypes.to_dict() if isinstance(meta, pd.DataFrame) else meta.dtype
    return map_partitions(_converted_by, frame, method, kwargs, dtypes, meta=meta, _name=method.replace("_", "-"))


def _dtypes_of(part: Any, method: str, kwargs: dict) -> list | None:
    """The dtypes pandas' ``method`` gives this partition; None for an empty one, which says nothing."""
    if not len(part):
        return None
    out = getattr(part, method)(**kwargs)
    return list(out.dtypes) if isinstance(out, pd.DataFrame) else [out.dtype]


def _common_dtypes(partials: list) -> list | None:
    """Per column, the dtype pandas' concat gives pieces of the partials' dtypes."""
    found = [p for p in partials if p is not None]
    if not found:
        return None
    return [pd.concat([pd.Series([], dtype=d) for d in column]).dtype for column in zip(*found)]


def _converted_by(part: Any, method: str, kwargs: dict, dtypes: Any) -> Any:
    return getattr(part, method)(**kwargs).astype(dtypes)


def _reversed(before: Any, after: Any) -> bool:
    """Whether ``before`` comes after ``after`` (times written as text compared as times)."""
    try:
        if isinstance(before, str) or isinstance(after, str):
            return pd.Timestamp(before) > pd.Timestamp(after)
        return bool(before > after)
    except (TypeError, ValueError):
        return False  # (left to the partitions' own comparison)


def _datetimes(part: Any, dtype: Any, kwargs: dict) -> Any:
    """``pandas.to_datetime`` of a partition in meta's dtype, but never coarser than pandas
    gives it: the unit of parsed text follows the text (``10:00:00.5`` needs more than
    seconds), and a cast to the stand-in's would cut the fractions off."""
    out = pd.to_datetime(part, **kwargs)
    have = getattr(out, "dtype", None)
    if have is None or have == dtype:
        return out
    units = [np.datetime_data(d)[0] if isinstance(d, np.dtype) else getattr(d, "unit", None) for d in (have, dtype)]
    if None in units or str(getattr(have, "tz", None)) != str(getattr(dtype, "tz", None)):
        return out  # (text that names its zone, or no times: pandas' own answer)
    finer = np.timedelta64(1, units[0]) < np.timedelta64(1, units[1])
    return out if finer else out.astype(dtype)


def _converted(part: Any, convert: Callable, dtype: Any, kwargs: dict) -> Any:
    """``convert(part)`` in the dtype announced by the collection's meta."""
    out = convert(part, **kwargs)
    return out.astype(dtype) if out.dtype != dtype else out


_install()
