"""pandas' other spellings of operations the collections have: ``add``, ``eq``... and aliases;
element-wise operations of two collections or with a pandas object: ``combine_first``,
``combine``, ``align``, ``case_when``, ``DataFrame.map``, ``dot``.

The named operator methods (``df.add(other, fill_value=0)``, ``s.lt(3)``...) take the same
keywords as pandas' (``fill_value``, ``axis``, ``level``) and run partition by partition, an
``other`` collection partitioned alike or both with known divisions (as for ``+``: repartitioned
to the union of them first when they differ); a pandas ``other`` matched to the rows
by label is refused with several partitions (each would meet all its rows). ``isnull``/
``notnull`` are ``isna``/``notna``, ``product`` is ``prod``, and ``pipe`` calls a function
with the collection.

pandas' rule of a DataFrame meeting a Series (``df - df.mean()``, ``df.div(s)``): the Series'
labels are set against the columns, a value per column; a Series of one partition (what a
reduction gives) goes whole to every partition (``by_columns``, ``per_column``), one of several
is refused, naming ``axis=0``. NumPy's element-wise functions run partition by partition
(``np.sin(df)``, ``np.float32(2) * df``: ``_Frame.__array_ufunc__``); this module installs both.

``combine_first``, ``combine`` and ``align`` match rows by index label, so they run partition by partition
when both collections' divisions are known (both are first repartitioned to the union of their
divisions when those differ: partition ``i`` of each then holds the same labels) or both have one
partition; otherwise they fail when built. ``dot``
with a pandas object multiplies every partition by it (a DataFrame's rows), or sums the
partitions' products (a Series').

>>> import pandas as pd, xsched.dataframe as xd
>>> a = xd.from_pandas(pd.Series([1.0, None, 3.0]), npartitions=2)
>>> a.add(5, fill_value=10).tolist(), a.isnull().sum().compute()
([6.0, 15.0, 8.0], np.int64(1))
"""

from __future__ import annotations

from typing import Any, Callable

import operator
from functools import partial

import numpy as np
import pandas as pd

from ..graph.spec import funcname
from .core import (_COMPARISONS, _NO_META, DataFrame, Scalar, Series, _call_method, _checked_array, _Frame, _nonempty,
                   check_pandas_rows, elemwise, map_partitions, unify_divisions)
from .reductions import reduction

__all__: list[str] = []

#: pandas' named binary operators, each the operator it spells
OPERATORS = ("add", "sub", "mul", "div", "truediv", "floordiv", "mod", "pow", "radd", "rsub", "rmul", "rdiv",
             "rtruediv", "rfloordiv", "rmod", "rpow", "eq", "ne", "lt", "le", "gt", "ge")


def _operator(name: str) -> Callable:
    def method(self, other: Any, *args: Any, **kwargs: Any):
        frame = isinstance(self, DataFrame)  # (pandas: a DataFrame's axis comes first, a Series' third)
        axis = kwargs.get("axis", (args[0] if args else None) if frame else (args[2] if len(args) > 2 else None))
        axis = self._axis(("columns" if frame else 0) if axis is None else axis, name)
        if frame and isinstance(other, Series) and axis == 1:
            return by_columns(self, name, other, kwargs=dict(zip(("axis", "level", "fill_value"), args), **kwargs))
        other = _checked_array(other, self, name, column=axis == 0)
        check_pandas_rows(self, other, name, isinstance(other, pd.DataFrame) or not frame or axis == 0)
        return self._method(name, other, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = (f"``{name}`` as pandas' (``fill_value=``, ``axis=``, ``level=``), partition by "
                      f"partition; a collection ``other`` is partitioned alike or both have known divisions.\n\n"
                      f">>> import pandas as pd, xsched.dataframe as xd\n"
                      f">>> s = pd.Series([1.0, None, 3.0])\n"
                      f">>> xd.from_pandas(s, npartitions=2).{name}(2, fill_value=1).tolist() == "
                      f"s.{name}(2, fill_value=1).tolist()\nTrue")
    return method


def pipe(self, func: Any, *args: Any, **kwargs: Any):
    """``func(self, *args, **kwargs)``; ``func`` may be ``(callable, keyword)``, the keyword
    naming the argument that receives the collection, as pandas' ``pipe``.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> xd.from_pandas(pd.Series([1, 2]), npartitions=1).pipe(lambda s, k: s * k, 3).tolist()
    [3, 6]
    """
    if isinstance(func, tuple):
        func, target = func
        if target in kwargs:
            raise ValueError(f"pipe: {target!r} is both the pipe target and a keyword argument")
        kwargs[target] = self
        return func(*args, **kwargs)
    return func(self, *args, **kwargs)


def _matched(frame: _Frame, other: Any, what: str) -> tuple:
    """``frame`` and ``other`` ready to pair partition by partition, and the result's
    divisions: rows matched by label pair up only where partition ``i`` of both holds the same
    labels, i.e. their inner divisions are equal (known divisions that differ are unified
    first: ``unify_divisions``) or both have one partition."""
    if not isinstance(other, (DataFrame, Series)):
        raise TypeError(f"{what}: other must be an xsched DataFrame or Series, got {type(other).__name__}")
    frame, other = unify_divisions(frame, other)
    if frame.npartitions == other.npartitions == 1:
        known = frame.known_divisions and other.known_divisions
    elif frame.known_divisions and other.known_divisions and frame.divisions[1:-1] == other.divisions[1:-1]:
        known = True
    else:
        raise ValueError(
            f"{what} matches rows by index label, so it needs both collections' divisions known "
            f"(got {frame.divisions[:3]}... and {other.divisions[:3]}...): set_index on both (or "
            "set_index(..., sorted=True) where the index is sorted already), or repartition both to npartitions=1")
    if not known:
        return frame, other.clear_divisions(), (None,) * 2
    divisions = (min(frame.divisions[0], other.divisions[0]),) + frame.divisions[1:-1] + \
        (max(frame.divisions[-1], other.divisions[-1]),)
    return frame, other.clear_divisions(), divisions


def _paired(frame: _Frame, other: Any, what: str, func: Any, *args: Any) -> Any:
    """``func(part, other_part, *args)`` partition by partition (see ``_matched``)."""
    frame, other, divisions = _matched(frame, other, what)
    out = map_partitions(func, frame.clear_divisions(), other, *args, _name=what.replace("_", "-"))
    out.divisions = divisions
    return out


def combine_first(self, other: Any):
    """Missing values filled from ``other`` at the same label (its extra labels and columns
    added), partition by partition: both need the same known (inner) divisions.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> a = xd.from_pandas(pd.Series([1.0, None, 3.0]), npartitions=2)
    >>> b = xd.from_pandas(pd.Series([9.0, 2.0, 9.0]), npartitions=2)
    >>> a.combine_first(b).tolist()
    [1.0, 2.0, 3.0]
    """
    return _paired(self, other, "combine_first", _combine_first)


def _combine_first(part: Any, other: Any) -> Any:
    return part.combine_first(other)


def combine(self, other: Any, func: Callable, fill_value: Any = None, overwrite: bool = True):
    """``func`` of the two at each label (a Series' values, a DataFrame's columns), as pandas'
    ``combine``, partition by partition: both need the same known (inner) divisions.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> a = xd.from_pandas(pd.Series([1, 5, 3]), npartitions=2)
    >>> b = xd.from_pandas(pd.Series([4, 2, 6]), npartitions=2)
    >>> a.combine(b, max).tolist()
    [4, 5, 6]
    """
    kwargs = {"fill_value": fill_value} if isinstance(self, Series) else {"fill_value": fill_value,
                                                                       "overwrite": overwrite}
    return _paired(self, other, "combine", _combined, func, kwargs)


def _combined(part: Any, other: Any, func: Callable, kwargs: dict) -> Any:
    return part.combine(other, func, **kwargs)


def align(self, other: Any, join: str = "outer", axis: Any = None, fill_value: Any = None):
    """Both collections on the union (``join="outer"``) or intersection... of their labels
    and columns, partition by partition: both need the same known (inner) divisions.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> a = xd.from_pandas(pd.DataFrame({"x": [1, 2]}), npartitions=2)
    >>> b = xd.from_pandas(pd.DataFrame({"y": [3, 4]}), npartitions=2)
    >>> [p.columns.tolist() for p in a.align(b)]
    [['x', 'y'], ['x', 'y']]
    """
    kwargs = {"join": join, "axis": axis, "fill_value": fill_value}
    return tuple(_paired(self, other, "align", _aligned_side, side, kwargs) for side in (0, 1))


def _aligned_side(part: Any, other: Any, side: int, kwargs: dict) -> Any:
    return part.align(other, **kwargs)[side]


def frame_map(self, func: Callable, na_action: Any = None, meta: Any = _NO_META, **kwargs: Any):
    """``func`` on every value (pandas' ``DataFrame.map``), per partition; ``meta=`` skips
    the trial run on stand-in values.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> xd.from_pandas(pd.DataFrame({"a": [1, 2]}), npartitions=2).map(lambda v: v * 10).a.tolist()
    [10, 20]
    """
    return map_partitions(_call_method, self, "map", func, na_action=na_action, meta=meta, _name="map", **kwargs)


def case_when(self, caselist: list):
    """The first replacement whose condition holds, else the value (pandas' ``Series.case_when``);
    conditions and replacements are Series partitioned alike, callables of the Series, or scalars
    (replacements).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series([1, 5, 9]), npartitions=2)
    >>> s.case_when([(s < 3, 0), (lambda v: v > 6, s * 10)]).tolist()
    [0, 5, 90]
    """
    if not isinstance(caselist, list) or not caselist:
        raise TypeError(f"case_when: caselist must be a non-empty list of (condition, replacement) tuples, "
                        f"got {caselist!r}")
    pieces: list = []
    for case in caselist:
        if not isinstance(case, tuple) or len(case) != 2:
            raise TypeError(f"case_when: each case must be a (condition, replacement) tuple, got {case!r}")
        for value in case:
            value = value(self) if callable(value) and not isinstance(value, _Frame) else value
            if not isinstance(value, _Frame) and np.ndim(value) != 0:
                raise TypeError(f"case_when: a {type(value).__name__} does not split by partition; give an "
                                "xsched Series partitioned alike (from_pandas it with the same divisions)")
            pieces.append(value)
    return map_partitions(_case_when, self, *pieces, _name="case-when")


def _case_when(part: pd.Series, *pieces: Any) -> pd.Series:
    return part.case_when(list(zip(pieces[0::2], pieces[1::2])))


def dot(self, other: Any, split_every: int | None = None):
    """The matrix product with a pandas ``other``: of a DataFrame, every partition's rows
    times ``other`` (indexed by the columns); of a Series, the sum over the rows of the values
    times ``other``'s row of the same label (a Scalar, or a Series for a DataFrame ``other``),
    whose labels must be the Series' (pandas' ``matrices are not aligned``, found when computed).

    >>> import pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series([1, 2, 3]), npartitions=2)
    >>> s.dot(pd.Series([4, 5, 6])).compute(), s.to_frame().dot(pd.Series([2], index=[0])).tolist()
    (np.int64(32), [2, 4, 6])
    """
    if not isinstance(other, (pd.Series, pd.DataFrame)):
        raise TypeError(f"dot: other must be a pandas Series or DataFrame, got {type(other).__name__}; "
                        "of two xsched Series, (a * b).sum() is the product")
    meta = _nonempty(self._meta).iloc[:0]
    if isinstance(self, DataFrame):
        if not (set(self.columns) == set(other.index) and len(self.columns) == len(other.index)):
            raise ValueError(f"dot: matrices are not aligned: the columns {list(self.columns)} are not "
                             f"other's index {list(other.index)}")
        return map_partitions(_call_method, self, "dot", other, meta=meta.dot(other), _name="dot")
    if not other.index.is_unique:
        raise ValueError("dot: other's index has duplicate labels, so rows cannot be matched")
    out = pd.Series([0] * len(other), index=other.index, dtype=meta.dtype).dot(other)
    return reduction(self, _dot_chunk, _dot_final, _dot_merge, meta=out.iloc[:0] if isinstance(out, pd.Series)
                     else out, token="dot", split_every=split_every, chunk_kwargs={"other": other},
                     aggregate_kwargs={"rows": len(other)})


def _dot_chunk(part: pd.Series, other: Any) -> tuple:
    if not part.index.isin(other.index).all():
        raise ValueError("dot: matrices are not aligned: labels of the Series are not in other's index")
    return part.dot(other.loc[part.index]), len(part)


def _dot_merge(partials: list) -> tuple:
    return sum(p[0] for p in partials[1:]) + partials[0][0], sum(p[1] for p in partials)


def _dot_final(partials: list, rows: int) -> Any:
    out, n = _dot_merge(partials)
    if n != rows:
        raise ValueError(f"dot: matrices are not aligned: the Series has {n} rows, other {rows}")
    return out


#: the operators in which pandas matches a Series' labels to a DataFrame's columns
_BY_COLUMNS = frozenset({operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
                         operator.pow, operator.and_, operator.or_, operator.xor, *_COMPARISONS})
#: NumPy's ufuncs that are those operators (``np.float32(2) + df`` calls ``np.add``)
_UFUNC_OPERATORS = {np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul,
                    np.true_divide: operator.truediv, np.floor_divide: operator.floordiv,
                    np.remainder: operator.mod, np.power: operator.pow, np.bitwise_and: operator.and_,
                    np.bitwise_or: operator.or_, np.bitwise_xor: operator.xor, np.less: operator.lt,
                    np.less_equal: operator.le, np.greater: operator.gt, np.greater_equal: operator.ge,
                    np.equal: operator.eq, np.not_equal: operator.ne}


def by_columns(frame: "DataFrame", op: Callable | str, row: "Series", reflected: bool = False,
               kwargs: dict | None = None) -> "DataFrame":
    """pandas' ``frame <op> series``: the Series' labels matched to the frame's columns, a value
    per column, as in ``(df - df.mean()) / df.std()``. A Series of one partition (what a
    reduction gives) goes whole to every partition; one of several is rows of data, which
    pandas would set against the columns too: refused, naming ``axis=0``. ``op`` is an
    operator, or the name of pandas' method (``"add"``...) called with ``kwargs``.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": [1.0, 3.0], "b": [10.0, 30.0]}), npartitions=2)
    >>> (df - df.mean()).compute().to_dict("list")
    {'a': [-1.0, 1.0], 'b': [-10.0, 10.0]}
    """
    what = op if isinstance(op, str) else funcname(op).rstrip("_")
    way = f"to match rows by label, df.{what}(s, axis=0)" if op not in (operator.and_, operator.or_, operator.xor) \
        else "to match rows by label, df.apply(..., axis=1) or map_partitions"
    return map_partitions(_by_columns, frame, per_column(frame, row, what, way), op, reflected,
                          list(frame._meta.columns), kwargs or {}, what, _name=what)


def per_column(frame: "DataFrame", row: "Series", what: str,
               way: str = "give a Series of a value per column, or work column by column (df[c])") -> "Scalar":
    """A Series of one partition, whose labels pandas sets against ``frame``'s columns, as one
    value given whole to each of ``frame``'s tasks (its stand-in labelled by the columns); a
    Series of several partitions is rows of data: refused, naming ``what`` and the ``way``."""
    if row.npartitions != 1:
        raise ValueError(f"{what}: pandas matches a Series' labels to a DataFrame's columns here (a value per "
                         f"column, as in df - df.mean()), and this Series has {row.npartitions} partitions of rows; "
                         f"{way}")
    stand = _nonempty(row._meta)
    stand = pd.Series([stand.iloc[0]] * len(frame._meta.columns), index=frame._meta.columns, dtype=row._meta.dtype,
                      name=row._meta.name)
    return Scalar(row._graph, row._name, stand)


def _by_columns(part: pd.DataFrame, row: pd.Series, op: Callable | str, reflected: bool, columns: list,
                kwargs: dict, what: str) -> pd.DataFrame:
    if isinstance(op, str):
        out = getattr(part, op)(row, **kwargs)
    else:
        out = op(row, part) if reflected else op(part, row)
    if list(out.columns) != columns:
        raise ValueError(f"{what}: the Series set against this DataFrame's columns (pandas' rule) has the labels "
                         f"{list(row.index)[:8]}, not its columns {columns[:8]}, which would make new columns; to "
                         "match rows by label, use the method with axis=0")
    return out


def array_ufunc(self: _Frame, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
    """NumPy's element-wise functions (``np.sin(df)``, ``np.float32(2) * df``) run partition
    by partition, as pandas runs them on a frame; anything else is refused, naming the way,
    where NumPy would compute the whole collection into this process."""
    if method == "__call__" and ufunc.nout == 1 and "out" not in kwargs:
        inputs = tuple(_checked_array(x, self, ufunc.__name__) for x in inputs)
        frames = [x for x in inputs if isinstance(x, _Frame)]
        if len(inputs) == 2 and not kwargs and ufunc in _UFUNC_OPERATORS:  # (operators' rules: by columns...)
            op = _UFUNC_OPERATORS[ufunc]
            return inputs[0]._binary(op, inputs[1]) if inputs[0] is frames[0] else \
                inputs[1]._binary(op, inputs[0], reflected=True)
        return elemwise(partial(ufunc, **kwargs) if kwargs else ufunc, *inputs, _name=ufunc.__name__)
    raise TypeError(f"numpy's {ufunc.__name__}.{method} does not run on an xsched {type(self).__name__}: "
                    f"use its methods (sum, cumsum, ...), or map_partitions(np.{ufunc.__name__}...) per "
                    "partition")


def _frame_binary(plain: Any) -> Any:
    """``_Frame._binary`` with pandas' rule of columns first: a DataFrame and a Series meet by
    the Series' labels against the columns (``by_columns``), whichever side each is on."""
    def binary(self: _Frame, op: Any, other: Any, reflected: bool = False) -> Any:
        if op in _BY_COLUMNS and isinstance(self, Series) and isinstance(other, DataFrame):
            return other._binary(op, self, not reflected)  # (pandas: the frame's operator decides)
        if op in _BY_COLUMNS and isinstance(self, DataFrame) and isinstance(other, Series):
            return by_columns(self, op, other, reflected)
        return plain(self, op, other, reflected)
    binary.__doc__ = plain.__doc__
    return binary


def _install() -> None:
    _Frame._binary = _frame_binary(_Frame._binary)  # type: ignore[method-assign]
    _Frame.__array_ufunc__ = array_ufunc  # type: ignore[attr-defined]
    for name in OPERATORS:
        setattr(_Frame, name, _operator(name))
    _Frame.divide = _Frame.div  # type: ignore[attr-defined]
    _Frame.multiply, _Frame.subtract = _Frame.mul, _Frame.sub  # type: ignore[attr-defined]  (pandas' other names)
    _Frame.pipe = pipe  # type: ignore[attr-defined]
    for cls in (DataFrame, Series):
        cls.combine_first, cls.align, cls.dot = combine_first, align, dot  # type: ignore[attr-defined]
        cls.combine = combine  # type: ignore[attr-defined]
    DataFrame.map = frame_map  # type: ignore[attr-defined]
    frame_map.__name__ = "map"
    Series.case_when = case_when  # type: ignore[attr-defined]

    def isnull(self):
        """Which values are missing (``isna``).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> xd.from_pandas(pd.Series([1.0, None, 3.0]), npartitions=2).isnull().tolist()
        [False, True, False]
        """
        return self.isna()

    def notnull(self):
        """Which values are present (``notna``).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> df = xd.from_pandas(pd.DataFrame({"a": [1, 2, 3], "b": [4.0, None, 6.0]}), npartitions=2)
        >>> df.notnull().sum().compute().to_dict()
        {'a': 3, 'b': 2}
        """
        return self.notna()

    def product(self, *args: Any, **kwargs: Any):
        """The product (``prod``).

        >>> import pandas as pd, xsched.dataframe as xd
        >>> float(xd.from_pandas(pd.Series([2.0, None, 3.0, 4.0]), npartitions=2).product().compute())
        24.0
        """
        return self.prod(*args, **kwargs)

    for cls in (DataFrame, Series):
        for f in (isnull, notnull, product):
            setattr(cls, f.__name__, f)

    def divmod_(self, other: Any, *args: Any, **kwargs: Any) -> tuple:
        """The quotient and the remainder (``floordiv`` and ``mod``, with pandas' keywords), as
        two collections, like pandas' ``divmod`` and Python's ``divmod(s, 4)``.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> q, r = divmod(xd.from_pandas(pd.Series([7, 9, 10]), npartitions=2), 4)
        >>> q.compute().tolist(), r.compute().tolist()
        ([1, 2, 2], [3, 1, 2])
        """
        return self.floordiv(other, *args, **kwargs), self.mod(other, *args, **kwargs)

    def rdivmod(self, other: Any, *args: Any, **kwargs: Any) -> tuple:
        """``divmod(other, self)``: ``rfloordiv`` and ``rmod``, as two collections.

        >>> import pandas as pd, xsched.dataframe as xd
        >>> q, r = divmod(10, xd.from_pandas(pd.Series([3, 4]), npartitions=2))
        >>> q.compute().tolist(), r.compute().tolist()
        ([3, 2], [1, 2])
        """
        return self.rfloordiv(other, *args, **kwargs), self.rmod(other, *args, **kwargs)

    divmod_.__name__ = "divmod"
    Series.divmod, Series.rdivmod = divmod_, rdivmod  # type: ignore[attr-defined]
    for cls in (DataFrame, Series):
        cls.__divmod__ = lambda self, other: divmod_(self, other)  # type: ignore[attr-defined]
        cls.__rdivmod__ = lambda self, other: rdivmod(self, other)  # type: ignore[attr-defined]


_install()
