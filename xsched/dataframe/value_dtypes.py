"""pandas methods whose result's dtype depends on the values they meet: ``clip`` and
``replace`` of integer columns.

``s.clip(upper=2.5)`` is float64 only if some value is above 2.5, and ``s.replace(0, 0.5)``
only if some value is 0: the two-row stand-in the meta comes from (``standin._nonempty``)
holds neither, so the meta said int64, one partition came back float64 and another int64,
and what followed (``mode()``, ``astype(str)``, a join) cut 2.5 to 2 or mixed ``"2"`` with
``"2.0"``. Here the meta comes from a stand-in whose integer columns also hold the
integers the call names and their dtype's extremes, so it is what pandas gives the whole
frame when such values are in it; every partition is then cast to that meta (integers to
float64 or object: nothing is lost that the whole frame would keep, but integers above
2**53 lose their last digits where pandas would have left a partition without such values
in int64: one dtype for every partition has that price).

>>> import pandas as pd, xsched.dataframe as xd
>>> s = xd.from_pandas(pd.Series([1, 2, 3, 4]), npartitions=2)
>>> s.clip(upper=2.5).dtype, s.clip(upper=2.5).compute().tolist()
(dtype('float64'), [1.0, 2.0, 2.5, 2.5])
>>> s.replace(4, 0.5).compute().tolist()
[1.0, 2.0, 3.0, 0.5]
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import pandas as pd

from .standin import _nonempty, make_meta, on_stand_ins

__all__ = ["VALUE_DEPENDENT", "reaching_meta", "call_as_meta", "in_dtypes_of"]

#: the methods whose dtypes come from ``reaching_meta``
VALUE_DEPENDENT = frozenset({"clip", "replace"})


def _integers_named(obj: Any, out: list) -> list:
    """The integers among the arguments (in lists, tuples, dicts' keys and values)."""
    if isinstance(obj, bool):
        return out
    if isinstance(obj, numbers.Integral):
        out.append(int(obj))
    elif isinstance(obj, numbers.Real) and float(obj).is_integer():  # (4.0 replaces the integer 4)
        out.append(int(obj))
    elif isinstance(obj, (list, tuple, set)):
        for o in obj:
            _integers_named(o, out)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _integers_named(k, out)
            _integers_named(v, out)
    return out


def _reaching(meta: Any, named: list) -> Any:
    """A stand-in of ``meta`` whose integer columns also hold ``named`` and their extremes."""
    base = _nonempty(meta)
    frame = base.to_frame() if isinstance(base, pd.Series) else base
    if not frame.columns.is_unique:  # (columns of one name: left to the usual meta)
        return None
    extra = {}
    for col, dtype in frame.dtypes.items():
        if isinstance(dtype, np.dtype) and dtype.kind in "iu":
            info = np.iinfo(dtype)
            values = [v for v in [*named, info.min, info.max, 0] if info.min <= v <= info.max]
            extra[col] = pd.Series(values, dtype=dtype)
    if not extra:
        return None
    n = max(len(v) for v in extra.values())
    rows = frame.iloc[[0] * n].reset_index(drop=True)
    for col, values in extra.items():
        rows[col] = values.reindex(range(n), fill_value=values.iloc[0]).to_numpy()
    wide = pd.concat([frame.reset_index(drop=True), rows], ignore_index=True)
    return wide.iloc[:, 0].rename(base.name) if isinstance(base, pd.Series) else wide


def reaching_meta(meta: Any, method: str, args: tuple, kwargs: dict) -> Any:
    """The meta of ``method`` as pandas gives it where the values the call names (and the
    dtypes' extremes) are in the data; None when it is the stand-in's own (or pandas fails:
    the usual path then says so)."""
    wide = _reaching(meta, _integers_named((args, kwargs), []))
    if wide is None:
        return None
    try:
        reached = on_stand_ins(lambda: getattr(wide, method)(*args, **kwargs))
    except Exception:  # noqa: BLE001 - the usual path raises pandas' error with its own words
        return None
    before = meta.dtypes if isinstance(meta, pd.DataFrame) else pd.Series([meta.dtype])
    after = reached.dtypes if isinstance(reached, pd.DataFrame) else pd.Series([reached.dtype])
    if list(before) == list(after):  # (integers stay integers: nothing to unify)
        return None
    return make_meta(reached.iloc[:0].set_axis(meta.index[:0]))  # (the index is the frame's, not the stand-in's)


def call_as_meta(part: Any, method: str, meta: Any, /, *args: Any, **kwargs: Any) -> Any:
    """``part.<method>(...)``, in ``meta``'s dtypes where this partition's values left
    pandas' result in a narrower one (integers where another partition has floats)."""
    return in_dtypes_of(getattr(part, method)(*args, **kwargs), meta)


def in_dtypes_of(out: Any, meta: Any) -> Any:
    """A partition's result in ``meta``'s dtypes where its values left pandas' own in
    another (``s.where(cond)`` of integers stays int64 where nothing was replaced)."""
    if isinstance(out, pd.DataFrame):
        wanted = {c: d for c, d in meta.dtypes.items() if c in out.columns and out[c].dtype != d}
        return out.astype(wanted) if wanted else out
    return out if out.dtype == meta.dtype else out.astype(meta.dtype)
