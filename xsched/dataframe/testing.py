"""``assert_eq`` for one's own tests: an xsched collection against pandas (or another
collection), checking what pandas' comparison cannot see.

Besides the values, a collection's computed result must agree with what it promised when
it was built: the columns, dtypes and name of its ``meta`` (a mismatch there breaks the
operations chained after it, far from the cause), and with known divisions, every
partition's index inside its division, as ``loc`` and joins assume.

>>> import pandas as pd, xsched.dataframe as xd
>>> pdf = pd.DataFrame({"a": [3, 1, 2]})
>>> xd.assert_eq(xd.from_pandas(pdf, npartitions=2).a * 2, pdf.a * 2)
True
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..graph.delayed import compute, delayed
from .core import Scalar, _Frame

__all__ = ["assert_eq"]


def _index_ends(part: Any) -> tuple | None:
    index = part if isinstance(part, pd.Index) else part.index
    return (index.min(), index.max()) if len(index) else None


def _check_divisions(frame: _Frame, what: str) -> None:
    """Each partition's index within its division (the last one's top included)."""
    ends = compute(*[delayed(_index_ends)(part) for part in frame.to_delayed()])
    divisions = frame.divisions
    for i, span in enumerate(ends):
        if span is None:
            continue
        lo, hi = span
        top_ok = hi <= divisions[i + 1] if i == frame.npartitions - 1 else hi < divisions[i + 1]
        if not (lo >= divisions[i] and top_ok):
            raise AssertionError(f"{what}: partition {i} holds index labels {lo} to {hi}, outside its "
                                 f"division [{divisions[i]}, {divisions[i + 1]}"
                                 f"{']' if i == frame.npartitions - 1 else ')'}")


def _kind(obj: Any) -> type | None:
    return next((t for t in (pd.DataFrame, pd.Series, pd.Index) if isinstance(obj, t)), None)


def _check_meta(result: Any, meta: Any, what: str) -> None:
    if _kind(result) is not _kind(meta):
        raise AssertionError(f"{what}: the result is a {type(result).__name__}, its meta a {type(meta).__name__}")
    if isinstance(meta, pd.DataFrame):
        if list(result.columns) != list(meta.columns):
            raise AssertionError(f"{what}: the result has the columns {list(result.columns)}, its meta "
                                 f"{list(meta.columns)}")
        # (by position: column labels may repeat)
        wrong = {c: (str(g), str(d)) for c, g, d in zip(meta.columns, result.dtypes, meta.dtypes)
                 if not _same_dtype(g, d)}
        if wrong:
            raise AssertionError(f"{what}: columns whose dtype differs from the meta's (result, meta): {wrong}")
    elif isinstance(meta, (pd.Series, pd.Index)):
        if not _same_dtype(result.dtype, meta.dtype):
            raise AssertionError(f"{what}: the result's dtype is {result.dtype}, its meta's {meta.dtype}")
        if result.name != meta.name:
            raise AssertionError(f"{what}: the result is named {result.name!r}, its meta {meta.name!r}")


def _same_dtype(got: Any, meta: Any) -> bool:
    """Equal dtypes; a categorical's categories may differ (meta may not know them)."""
    if isinstance(meta, pd.CategoricalDtype) and isinstance(got, pd.CategoricalDtype):
        return True
    return got == meta


def _computed(obj: Any, what: str, check_dtype: bool, check_divisions: bool) -> Any:
    if isinstance(obj, _Frame):
        if check_divisions and obj.known_divisions:
            _check_divisions(obj, what)
        result = obj.compute()
        if check_dtype:
            _check_meta(result, obj._meta, what)
        return result
    if isinstance(obj, Scalar):
        result = obj.compute()
        if check_dtype:
            _check_scalar(result, obj._meta, what)
        return result
    return obj


def _check_scalar(result: Any, meta: Any, what: str) -> None:
    """A Scalar's value against its meta: the same dtype (integers and floats alike, as the
    dtype of some reductions follows the values: pandas' quantile of nullable integers), or a
    number where meta is one (a missing value carries no dtype)."""
    if result is None or (pd.api.types.is_scalar(result) and pd.isna(result)):
        return
    want, have = getattr(meta, "dtype", None), getattr(result, "dtype", None)
    numbers_both = getattr(want, "kind", "") in "iuf" and getattr(have, "kind", "") in "iuf"
    if want is not None and have is not None and want != have and not numbers_both:
        raise AssertionError(f"{what}: the result's dtype is {have}, its meta's {want}")
    if pd.api.types.is_number(meta) != pd.api.types.is_number(result):
        raise AssertionError(f"{what}: the result is {result!r}, a {type(result).__name__}, where its meta is a "
                             f"{type(meta).__name__}")


def _sorted(obj: Any, by_index: bool) -> Any:
    """Rows in one order whatever the partitions gave: by index labels (and values where
    labels repeat), or by values alone when the index is not compared."""
    if isinstance(obj, pd.Index):
        return obj.sort_values()
    if not isinstance(obj, (pd.Series, pd.DataFrame)):
        return obj
    if by_index and obj.index.is_unique:
        return obj.sort_index(kind="stable")
    frame = obj.to_frame() if isinstance(obj, pd.Series) else obj
    positions = pd.RangeIndex(len(frame))
    # (keys by position: an index level may share a column's name, and labels may repeat)
    keys = [frame.index.get_level_values(i).to_series(index=positions) for i in range(frame.index.nlevels)
            ] if by_index else []
    keys += [frame.iloc[:, j].set_axis(positions) for j in range(frame.shape[1])]
    try:
        table = pd.concat(keys, axis=1, ignore_index=True)
        order = table.sort_values(list(table.columns), kind="stable").index
    except TypeError:  # values that do not order (mixed types, dicts): by index, or as given
        return obj.sort_index(kind="stable") if by_index else obj
    return obj.iloc[order]


def assert_eq(a: Any, b: Any, check_names: bool = True, check_dtype: bool = True, check_divisions: bool = True,
              check_index: bool = True, sort_results: bool = True, **kwargs: Any) -> bool:
    """Raise ``AssertionError`` unless ``a`` and ``b`` (xsched collections, pandas objects or
    scalars) hold the same values, as ``pandas.testing`` compares them; an xsched side is
    computed and must also match its own meta (``check_dtype``) and divisions
    (``check_divisions``). ``sort_results`` sorts both by index (and values where labels
    repeat) first, since partitions may give rows in another order; ``check_index=False``
    compares the values only (sorted by values). Arrays (NumPy's or xsched's) are compared
    by ``xsched.array.assert_eq``. Other keywords (``rtol``, ``check_exact``...) go to pandas.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> pdf = pd.DataFrame({"k": [1, 2, 1], "v": [1.0, 2.0, 3.0]})
    >>> xd.assert_eq(xd.from_pandas(pdf, npartitions=2).groupby("k").v.sum(), pdf.groupby("k").v.sum())
    True
    """
    from ..array import Array, assert_eq as assert_array_eq  # (the array collection, only when asked for)

    if isinstance(a, (Array, np.ndarray)) or isinstance(b, (Array, np.ndarray)):
        return assert_array_eq(a, b, check_dtype=check_dtype, rtol=kwargs.get("rtol", 1e-7),
                               atol=kwargs.get("atol", 0.0))
    a = _computed(a, "the first argument", check_dtype, check_divisions)
    b = _computed(b, "the second argument", check_dtype, check_divisions)
    if _kind(a) is not _kind(b):
        raise AssertionError(f"a {type(a).__name__} against a {type(b).__name__}")
    if sort_results:
        a, b = _sorted(a, check_index), _sorted(b, check_index)
    if not check_index and isinstance(a, (pd.Series, pd.DataFrame)):
        a, b = a.reset_index(drop=True), b.reset_index(drop=True)
    options = dict(check_dtype=check_dtype, check_names=check_names, **kwargs)
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b, **options)
    elif isinstance(a, pd.Series):
        pd.testing.assert_series_equal(a, b, **options)
    elif isinstance(a, pd.Index):
        options.pop("check_dtype")
        pd.testing.assert_index_equal(a, b, exact=check_dtype, **options)
    elif not _same_scalar(a, b, kwargs.get("rtol", 1e-7), kwargs.get("atol", 0.0)):
        raise AssertionError(f"{a!r} != {b!r}")
    return True


def _same_scalar(a: Any, b: Any, rtol: float, atol: float) -> bool:
    if a is b or (pd.api.types.is_scalar(a) and pd.api.types.is_scalar(b) and pd.isna(a) and pd.isna(b)):
        return True
    # (within rtol only where a side is inexact: whole numbers past 2**53 would round equal)
    inexact = any(isinstance(v, (float, complex, np.inexact)) for v in (a, b))
    try:
        return bool(a == b) or (inexact and bool(np.isclose(a, b, rtol=rtol, atol=atol)))
    except (TypeError, ValueError):
        return False
