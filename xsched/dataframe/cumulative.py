"""Cumulative sums, products, maxima and minima, and ``ffill``/``bfill``: a running value
carried across partitions.

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
from ..graph.partials import chain_layer
from ..graph.spec import Ref, Task
from .core import DataFrame, Series, _Frame, _nonempty, map_partitions, new_collection, part_key
from .pieces import with_category

__all__ = ["cumulative", "fill"]

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
    if _ranked(acc):  # (the carry is a category's code: see _total)
        codes = acc.cat.codes.to_numpy()
        kept = (np.maximum if method == "cummax" else np.minimum)(codes, int(carry))
        return pd.Series(pd.Categorical.from_codes(np.where(codes < 0, codes, kept), dtype=acc.dtype),
                         index=acc.index, name=acc.name)
    return acc.clip(lower=carry) if method == "cummax" else acc.clip(upper=carry)


def _ranked(column: pd.Series) -> bool:
    """Whether a column's maxima and minima go by its categories' order, not by value."""
    return isinstance(column.dtype, pd.CategoricalDtype) and column.dtype.ordered


def _accumulate(part: Any, method: str, skipna: bool) -> Any:
    return getattr(part, method)(skipna=skipna)


def _total(part: Any, method: str, skipna: bool) -> Any:
    """The partition's total: for a DataFrame one per column, by position, each of its column's
    dtype (a total Series would make an int column float next to a float one); None when
    the partition is empty, which changes nothing."""
    if len(part) == 0:
        return None
    if isinstance(part, pd.DataFrame):
        return [_column_total(part.iloc[:, i], method, skipna) for i in range(part.shape[1])]
    return _column_total(part, method, skipna)


def _column_total(column: pd.Series, method: str, skipna: bool) -> Any:
    """A column's total; of an ordered categorical, its category's code (NaN for a missing
    value), which compares in the categories' order where their values would not."""
    total = getattr(column, _TOTAL[method])(skipna=skipna)
    if method in ("cummax", "cummin") and _ranked(column):
        return np.nan if pd.isna(total) else column.dtype.categories.get_loc(total)
    return total


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


def _chain(frame: _Frame, name: str, meta: Any, token: Any, accumulate: Any, total: Any, carry: Any,
           apply: Any, args: tuple, backwards: bool = False):
    """The graph of the module docstring: ``accumulate(part, *args)`` per partition,
    ``total(part, *args)`` of each but the last (first, ``backwards``), a chain of
    ``carry(before, total, *args)`` from partition to partition, and ``apply(acc, carry, *args)``."""
    tok = new_token(frame._name, name, token, backwards)
    acc_name, tot_name, carry_name, out_name = (f"{name}-part-{tok}", f"{name}-total-{tok}",
                                                f"{name}-carry-{tok}", f"{name}-{tok}")
    ann = annotations_in_force()
    keys = frame._keys()
    order = list(range(len(keys)))[::-1] if backwards else list(range(len(keys)))  # (the carry's way)
    acc = {part_key(acc_name, i): Task(accumulate, (Ref(k), *args), {}, per_task(ann)) for i, k in enumerate(keys)}
    tot = {part_key(tot_name, i): Task(total, (Ref(keys[i]), *args), {}, per_task(ann)) for i in order[:-1]}
    # the value carried into partition i: from the one carried into the partition before and its total
    chain = chain_layer(carry_name, order[1:], {i: part_key(tot_name, prev) for prev, i in zip(order, order[1:])},
                        carry, args, annotations=ann)
    out = {part_key(out_name, i): Task(apply, (Ref(part_key(acc_name, i)),
                                               Ref(part_key(carry_name, i)) if i != order[0] else None, *args),
                                       {}, per_task(ann)) for i in range(len(keys))}
    graph = LayeredGraph.merge(frame._graph, new={acc_name: acc, tot_name: tot, carry_name: chain, out_name: out})
    return new_collection(graph, out_name, meta, frame.divisions)


def cumulative(frame: _Frame, method: str, skipna: bool = True):
    """``frame.<method>()`` for one of cumsum, cumprod, cummax, cummin (see the module docstring)."""
    try:
        meta = getattr(frame._meta, method)(skipna=skipna)
    except Exception as exc:
        raise TypeError(f"{method}() fails in pandas on this {type(frame).__name__}: {exc}") from exc
    return _chain(frame, method, meta, skipna, _accumulate, _total, _carry, _apply_carry, (method, skipna))


# --------------------------------------------------------------------------- ffill, bfill
# The carry is, per column, the last valid value and how many rows came after it (the
# first, and how many rows before it, filling backwards): a limit counts across partitions.


def _fill_part(part: Any, method: str, limit: int | None) -> Any:
    return getattr(part, method)(limit=limit)


def _columns(part: Any) -> list:
    return [part.iloc[:, i] for i in range(part.shape[1])] if isinstance(part, pd.DataFrame) else [part]


def _edge_value(part: Any, method: str, limit: int | None) -> list:
    """Per column, (the valid value nearest the edge the fill moves away from, rows beyond
    it): the last one and the rows after it (``ffill``), or the first and the rows before."""
    out = []
    for col in _columns(part):
        valid = np.flatnonzero(col.notna().to_numpy())
        if not len(valid):
            out.append((None, len(col)))
        elif method == "ffill":
            out.append((col.iloc[valid[-1]], len(col) - 1 - valid[-1]))
        else:
            out.append((col.iloc[valid[0]], valid[0]))
    return out


def _fill_carry(before: list | None, edge: list, method: str, limit: int | None) -> list:
    if before is None:
        return edge
    return [(v, gap) if v is not None else (b, bgap + gap) for (b, bgap), (v, gap) in zip(before, edge)]


def _fill_apply(filled: Any, carry: list | None, method: str, limit: int | None) -> Any:
    """The partition, filled on its own, with its run of missing values at the edge the carry
    comes from filled by the carried value (within ``limit`` rows of where it was)."""
    if carry is None:
        return filled
    out = filled.copy()
    columns = _columns(out)
    for i, ((value, gap), col) in enumerate(zip(carry, columns)):
        if value is None:
            continue
        missing = col.isna().to_numpy()
        run = len(col) if missing.all() else int(np.argmin(missing if method == "ffill" else missing[::-1]))
        take = run if limit is None else max(0, min(run, limit - gap))
        if not take:
            continue
        rows = np.arange(take) if method == "ffill" else np.arange(len(col) - take, len(col))
        fixed = with_category(col.copy(), value)
        fixed.iloc[rows] = value
        if isinstance(out, pd.DataFrame):
            out.isetitem(i, fixed)
        else:
            out = fixed
    return out


def _in_area(filled: Any, original: Any, other_way: Any, inside: bool) -> Any:
    """``filled`` where the other way's fill found a value (``inside``: a gap with values on
    both sides) or found none (outside), else the original."""
    return filled.where(other_way.notna() if inside else other_way.isna(), original)


def fill(frame: _Frame, method: str, limit: int | None = None, limit_area: str | None = None):
    """``frame.ffill(limit)`` or ``frame.bfill(limit)`` down the rows: each partition filled on
    its own, then its edge run of missing values from the value carried from the partitions
    before (after, for ``bfill``). ``limit_area`` ("inside": only gaps with values on both
    sides; "outside": only the runs at the ends) keeps the fill where the fill the other way
    finds a value (or none)."""
    if limit is not None and (not isinstance(limit, (int, np.integer)) or isinstance(limit, bool) or limit < 1):
        raise ValueError(f"{method}: limit must be a positive whole number, got {limit!r}")
    if limit_area not in (None, "inside", "outside"):
        raise ValueError(f"{method}: limit_area must be None, 'inside' or 'outside', got {limit_area!r}")
    meta = getattr(frame._meta, method)()
    filled = _chain(frame, method, meta, limit, _fill_part, _edge_value, _fill_carry, _fill_apply,
                    (method, limit), backwards=method == "bfill")
    if limit_area is None:
        return filled
    other_way = fill(frame, "bfill" if method == "ffill" else "ffill")
    return map_partitions(_in_area, filled, frame, other_way, limit_area == "inside", meta=meta,
                          _name=f"{method}-{limit_area}")


def _install() -> None:
    def method(name: str):
        def run(self, axis: Any = None, skipna: bool = True, numeric_only: bool = False):
            axis = self._axis(axis, name)  # (an axis this object has not: refused at once, as pandas)
            if numeric_only:
                if not isinstance(self, DataFrame):
                    raise TypeError(f"{name}(numeric_only=True) is a DataFrame's, as in pandas: a Series has "
                                    "one column")
                self = self[list(getattr(_nonempty(self._meta), name)(numeric_only=True).columns)]
            if axis == 1:
                return self._method(name, axis=1, skipna=skipna)
            return cumulative(self, name, skipna)
        run.__name__ = name
        run.__doc__ = (f"The {name[3:]} so far, down the rows (of the numeric columns with ``numeric_only``); "
                       "only one value per column travels from a "
                       "partition to the next.\n\n>>> import pandas as pd, xsched.dataframe as xd\n"
                       f">>> xd.from_pandas(pd.Series([2, 1, 3]), npartitions=2).{name}().tolist() == "
                       f"pd.Series([2, 1, 3]).{name}().tolist()\nTrue")
        return run

    for name in _TOTAL:
        setattr(DataFrame, name, method(name))
        setattr(Series, name, method(name))

    def filler(name: str):
        def run(self, *, axis: Any = None, limit: int | None = None, limit_area: str | None = None):
            if self._axis(axis, name) == 1:
                return self._method(name, axis=1, limit=limit, limit_area=limit_area)
            return fill(self, name, limit, limit_area)
        run.__name__ = name
        run.__doc__ = (f"Missing values filled with the {'last' if name == 'ffill' else 'next'} valid one "
                       f"(within ``limit`` rows; ``limit_area`` 'inside' or 'outside' as pandas'), across "
                       f"partitions.\n\n>>> import pandas as pd, xsched.dataframe "
                       f"as xd\n>>> xd.from_pandas(pd.Series([1, None, None, 4]), npartitions=3).{name}().compute()"
                       f".tolist()\n{pd.Series([1, None, None, 4]).__getattr__(name)().tolist()}")
        return run

    for name in ("ffill", "bfill"):
        setattr(DataFrame, name, filler(name))
        setattr(Series, name, filler(name))


_install()
