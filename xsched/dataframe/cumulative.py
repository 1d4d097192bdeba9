"""Cumulative sums, products, maxima and minima, which carry a running value across partitions.

Each partition is accumulated on its own (``cumsum-part``) and reduced to its total
(``cumsum-total``); a chain of small tasks adds the totals up (``cumsum-carry``: what came
before partition ``i``); partition ``i`` of the result is its own accumulation combined
with that carry. Only one value (per column) travels between partitions::

    part i -> cumsum-part i ------------------------------\\
    part i -> cumsum-total i -> cumsum-carry i+1 ---------> cumsum i
                                 (carry i + total i)

>>> import pandas as pd, xsched.dataframe as xd
>>> xd.from_pandas(pd.Series([1, 2, 3, 4, 5]), npartitions=3).cumsum().tolist()
[1, 3, 6, 10, 15]
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..graph.layers import LayeredGraph, annotations_in_force, new_token, per_task
from ..graph.spec import Ref, Task
from .core import DataFrame, Series, _Frame, new_collection, part_key

__all__ = ["cumulative"]

#: method -> (the partition's total, how two totals combine)
_TOTAL = {"cumsum": "sum", "cumprod": "prod", "cummax": "max", "cummin": "min"}


def _combine(method: str, a: Any, b: Any, skipna: bool) -> Any:
    """Two totals (scalars) into one. A missing sum or product wins (a string cannot be added
    to one). A missing max/min total means no values when skipping (it loses) and a missing
    value otherwise (it wins, as in pandas everything after it is missing)."""
    if pd.isna(a) or pd.isna(b):
        wins = not skipna or method in ("cumsum", "cumprod")
        return (a if pd.isna(a) else b) if wins else (b if pd.isna(a) else a)
    if method == "cumsum":
        return a + b
    if method == "cumprod":
        return a * b
    return max(a, b) if method == "cummax" else min(a, b)


def _apply_one(acc: pd.Series, carry: Any, method: str, skipna: bool) -> pd.Series:
    """A column's accumulation with what came before it; pandas' operators with a scalar of the
    column's own dtype, so the dtype stays. ``clip`` leaves the missing places missing."""
    if pd.isna(carry):  # a missing value before: all missing (NaN cannot be added to a string), or
        #   for a max/min skipping them, no values before
        keep = skipna and method in ("cummax", "cummin")
        return acc if keep else acc.where(np.zeros(len(acc), dtype=bool))
    if method == "cumsum":
        return carry + acc  # (carry first: strings add up in order)
    if method == "cumprod":
        return carry * acc
    return acc.clip(lower=carry) if method == "cummax" else acc.clip(upper=carry)


def _accumulate(part: Any, method: str, skipna: bool) -> Any:
    return getattr(part, method)(skipna=skipna)


def _total(part: Any, method: str, skipna: bool) -> Any:
    """The partition's total: for a DataFrame one per column, by position, each of its column's
    dtype (a total Series would make an int column float next to a float one); None when
    the partition is empty, which changes nothing."""
    if len(part) == 0:
        return None
    if isinstance(part, pd.DataFrame):
        return [getattr(part.iloc[:, i], _TOTAL[method])(skipna=skipna) for i in range(part.shape[1])]
    return getattr(part, _TOTAL[method])(skipna=skipna)


def _carry(before: Any, total: Any, method: str, skipna: bool) -> Any:
    if before is None or total is None:
        return total if before is None else before
    if isinstance(total, list):
        return [_combine(method, a, b, skipna) for a, b in zip(before, total)]
    return _combine(method, before, total, skipna)


def _apply_carry(acc: Any, carry: Any, method: str, skipna: bool) -> Any:
    if carry is None:
        return acc
    if isinstance(acc, pd.DataFrame):
        out = acc.copy(deep=False)
        for i, c in enumerate(carry):
            out.isetitem(i, _apply_one(acc.iloc[:, i], c, method, skipna))
        return out
    return _apply_one(acc, carry, method, skipna)


def cumulative(frame: _Frame, method: str, skipna: bool = True):
    """``frame.<method>()`` for one of cumsum, cumprod, cummax, cummin (see the module docstring)."""
    try:
        meta = getattr(frame._meta, method)(skipna=skipna)
    except Exception as exc:
        raise TypeError(f"{method}() fails in pandas on this {type(frame).__name__}: {exc}") from exc
    tok = new_token(frame._name, method, skipna)
    acc_name, tot_name, carry_name, out_name = (f"{method}-part-{tok}", f"{method}-total-{tok}",
                                                f"{method}-carry-{tok}", f"{method}-{tok}")
    ann = annotations_in_force()
    keys = frame._keys()
    acc = {part_key(acc_name, i): Task(_accumulate, (Ref(k), method, skipna), {}, per_task(ann))
           for i, k in enumerate(keys)}
    tot = {part_key(tot_name, i): Task(_total, (Ref(k), method, skipna), {}, per_task(ann))
           for i, k in enumerate(keys[:-1])}
    carry: dict = {}
    for i in range(1, len(keys)):
        before = Ref(part_key(carry_name, i - 1)) if i > 1 else None
        carry[part_key(carry_name, i)] = Task(_carry, (before, Ref(part_key(tot_name, i - 1)), method, skipna),
                                              {}, per_task(ann))
    out = {part_key(out_name, i): Task(_apply_carry, (Ref(part_key(acc_name, i)),
                                                      Ref(part_key(carry_name, i)) if i else None, method,
                                                      skipna),
                                       {}, per_task(ann)) for i in range(len(keys))}
    graph = LayeredGraph.merge(frame._graph, new={acc_name: acc, tot_name: tot, carry_name: carry, out_name: out})
    return new_collection(graph, out_name, meta, frame.divisions)


def _install() -> None:
    def method(name: str):
        def run(self, axis: Any = None, skipna: bool = True):
            if axis is not None:  # (pandas' own error for an axis this object has not, at once)
                axis = self._meta._get_axis_number(axis)
            if axis == 1:
                return self._method(name, axis=1, skipna=skipna)
            return cumulative(self, name, skipna)
        run.__name__ = name
        run.__doc__ = (f"The {name[3:]} so far, down the rows; only one value per column travels from a "
                       "partition to the next.\n\n>>> import pandas as pd, xsched.dataframe as xd\n"
                       f">>> xd.from_pandas(pd.Series([2, 1, 3]), npartitions=2).{name}().tolist() == "
                       f"pd.Series([2, 1, 3]).{name}().tolist()\nTrue")
        return run

    for name in _TOTAL:
        setattr(DataFrame, name, method(name))
        setattr(Series, name, method(name))


_install()
