"""``cut`` and ``qcut``: values into bins, as pandas' functions of the same names.

``pandas.cut`` of an xsched Series would turn it into one in-memory array first (pandas reads
it through ``__array__``), so these run pandas' own functions on every partition with the
same bin edges. Edges the user gives are known when the expression is built, and so are the
result's categories. Edges that come from the data (``cut(s, bins=10)`` spreads them between
its minimum and maximum, ``qcut`` takes its quantiles) are one small task over the min and max
(or the quantiles, exact as pandas'), computed with the graph and sent to every partition::

    cut-edges-<t>     the edges pandas would take from the whole Series (min, max / quantiles)
    cut-<t>-i         pandas.cut(partition i, edges, ...)

Those categories are then unknown until computed (``s.cat.known`` is False; ``labels=`` names
them, ``s.cat.as_known()`` computes them), and ``retbins=True`` gives the edges as a lazy
``Scalar``. ``labels=False`` (integer bin numbers, whose dtype pandas makes float64 when a
value falls outside every bin and int64 otherwise, partition by partition) is refused, naming
``.cat.codes``.

>>> import pandas as pd, xsched.dataframe as xd
>>> s = xd.from_pandas(pd.Series([1, 7, 5, 4, 6, 3]), npartitions=2)
>>> xd.cut(s, [0, 3, 6, 9]).compute().astype(str).tolist()
['(0, 3]', '(6, 9]', '(3, 6]', '(3, 6]', '(3, 6]', '(0, 3]']
>>> xd.qcut(s, 2, labels=["low", "high"]).compute().tolist()
['low', 'high', 'high', 'low', 'high', 'low']
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task
from .categorical import mark_unknown
from .core import Scalar, Series, _nonempty, map_partitions, part_key
from .reductions import BINNED_COUNTS
from .standin import on_stand_ins

__all__ = ["cut", "qcut"]


def _cut(part: pd.Series, bins: Any, **kwargs: Any) -> pd.Series:
    return pd.cut(part, bins, **kwargs)


def _edges_from_range(low: Any, high: Any, bins: int, right: bool) -> Any:
    """The edges pandas spreads between a Series' minimum and maximum (its only inputs)."""
    return pd.cut(pd.Series([low, high]), bins, right=right, retbins=True)[1]


def _edges_from_quantiles(quantiles: pd.Series, duplicates: str) -> np.ndarray:
    """The quantiles as edges; repeated ones dropped as pandas drops them (not from two)."""
    edges = np.asarray(quantiles)
    return np.asarray(pd.unique(edges)) if duplicates == "drop" and len(edges) != 2 else edges


def _scalar(op: str, func: Any, inputs: list, *args: Any, graphs: list) -> Scalar:
    """A lazy value: ``func`` of the keys ``inputs`` and ``args``, one task."""
    name = f"{op}-{new_token(op, inputs, args)}"
    task = Task(func, (*(Ref(k) for k in inputs), *args), {}, per_task(annotations_in_force()))
    return Scalar(LayeredGraph.merge(*graphs, new={name: {chunk_key(name, (0,)): task}}), name, np.empty(0))


def _checked(x: Any, labels: Any, op: str) -> Series:
    if not isinstance(x, Series):
        raise TypeError(f"{op}: x must be an xsched Series (df.column), got {type(x).__name__}; for a pandas or "
                        f"NumPy object use pandas.{op}")
    if labels is False:
        raise ValueError(f"{op}: labels=False (integer bin numbers) is not offered: pandas gives them as int64 or "
                         f"float64 depending on the values; use xd.{op}(...).cat.codes (-1 outside every bin)")
    return x


def _binnable(x: Series, op: str, call: Any) -> None:
    """pandas' refusal of values it cannot bin (text, say), when built: ``call`` on a stand-in
    of two rows of ``x``'s dtype (errors that depend on the values are left to the data)."""
    try:
        on_stand_ins(lambda: call(_nonempty(x._meta)))
    except (TypeError, NotImplementedError) as exc:  # (pyarrow's text: NotImplementedError)
        raise TypeError(f"{op}: the values of {x._meta.name!r} ({x._meta.dtype}) cannot be binned: {exc}") from None
    except ValueError:
        pass


def _binned(x: Series, edges: Any, labels: Any, ordered: bool, op: str, retbins: bool, **kwargs: Any) -> Any:
    """pandas' cut of every partition with ``edges`` (known values, or a lazy ``Scalar``)."""
    if isinstance(edges, Scalar):
        categories = pd.Index(labels) if labels is not None else pd.Index([], dtype=object)
        meta = pd.Series(pd.Categorical([], categories=categories, ordered=ordered), name=x._meta.name,
                         index=x._meta.index)
        if labels is None:
            meta = mark_unknown(meta)
    else:
        meta, edges = pd.cut(x._meta, edges, labels=labels, ordered=ordered, retbins=True, **kwargs)
    out = map_partitions(_cut, x, edges, labels=labels, ordered=ordered, meta=meta, _name=op, **kwargs)
    return (out, edges) if retbins else out


def cut(x: Series, bins: Any, right: bool = True, labels: Any = None, retbins: bool = False, precision: int = 3,
        include_lowest: bool = False, duplicates: str = "raise", ordered: bool = True) -> Any:
    """The bin of every value, as ``pandas.cut``: ``bins`` a number of equal bins between the
    Series' minimum and maximum (computed with the graph), a sequence of edges, or a
    ``pandas.IntervalIndex``. The result is a categorical Series with ``x``'s index.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series([0.0, 10.0, 4.0, 6.0]), npartitions=2)
    >>> xd.cut(s, 2, labels=["low", "high"]).compute().tolist()
    ['low', 'high', 'low', 'high']
    """
    x = _checked(x, labels, "cut")
    options = dict(right=right, precision=precision, include_lowest=include_lowest, duplicates=duplicates)
    if np.ndim(bins) == 0 and not isinstance(bins, pd.IntervalIndex):
        if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins < 1:
            raise ValueError(f"cut: bins must be a positive number of bins, a sequence of edges or an IntervalIndex; "
                             f"got {bins!r}")
        _binnable(x, "cut", lambda sample: pd.cut(sample, int(bins), right=right))
        low, high = x.min(), x.max()
        edges: Any = _scalar("cut-edges", _edges_from_range, [low.key, high.key], int(bins), right,
                             graphs=[low._graph, high._graph])
    else:
        _binnable(x, "cut", lambda sample: pd.cut(sample, bins, **options))
        edges = bins
    return _binned(x, edges, labels, ordered, "cut", retbins, **options)


def binned_counts(x: Series, bins: Any, sort: bool = True, ascending: bool = False, dropna: bool = True,
                  normalize: bool = False, split_every: int | None = None) -> Series:
    """``x.value_counts(bins=...)``: the values cut into ``bins`` as pandas cuts them (the
    lowest value included), every bin counted, in the bins' order or by count (``sort``),
    as shares of all values, missing ones too, with ``normalize``.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series([1.0, 2, 5, 9, 9]), npartitions=2)
    >>> s.value_counts(bins=[0, 3, 10], sort=False).compute().tolist()
    [2, 3]
    """
    on_stand_ins(lambda: _nonempty(x._meta).value_counts(bins=bins))  # (pandas' own refusals, when built)
    counts = cut(x, bins, include_lowest=True).value_counts(sort=False, dropna=False, split_every=split_every)
    meta = pd.Series([], dtype="float64" if normalize else "int64", name="proportion" if normalize else "count",
                     index=pd.IntervalIndex.from_breaks([0.0]))
    return map_partitions(_binned_counts, counts, x.size, sort, ascending, dropna, normalize, meta=meta,
                          _name="value-counts-bins")


def _binned_counts(counts: pd.Series, n: int, sort: bool, ascending: bool, dropna: bool,
                   normalize: bool) -> pd.Series:
    out = counts[counts.index.notna()]
    out.index = out.index.astype("interval").rename(None)  # (pandas counts the cut's bare values: no name)
    out = out.sort_index()
    if dropna and (out.to_numpy() == 0).all():
        out = out.iloc[0:0]
    if sort:
        out = out.sort_values(ascending=ascending, kind="stable")
    out = out / n if normalize else out
    return out.rename("proportion" if normalize else "count")


BINNED_COUNTS.append(binned_counts)


def qcut(x: Series, q: Any, labels: Any = None, retbins: bool = False, precision: int = 3,
         duplicates: str = "raise") -> Any:
    """The quantile bin of every value, as ``pandas.qcut``: ``q`` a number of bins of equal
    counts, or the quantiles of the edges (``[0, .25, .5, .75, 1]``). The edges are the
    Series' exact quantiles, computed with the graph; the bins' categories are known when
    ``labels`` names them.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series(range(8)), npartitions=3)
    >>> xd.qcut(s, [0, 0.5, 1], labels=False)
    Traceback (most recent call last):
    ...
    ValueError: qcut: labels=False (integer bin numbers) is not offered: pandas gives them as int64 or float64 depending on the values; use xd.qcut(...).cat.codes (-1 outside every bin)
    >>> xd.qcut(s, [0, 0.5, 1]).cat.codes.compute().tolist()
    [0, 0, 0, 0, 1, 1, 1, 1]
    """
    x = _checked(x, labels, "qcut")
    if np.ndim(q) == 0:
        if isinstance(q, bool) or not isinstance(q, (int, np.integer)) or q < 1:
            raise ValueError(f"qcut: q must be a positive number of bins or a sequence of quantiles; got {q!r}")
        quantiles = np.linspace(0, 1, int(q) + 1)
    else:
        quantiles = np.asarray(q, dtype=float)
        if quantiles.ndim != 1 or ((quantiles < 0) | (quantiles > 1)).any():
            raise ValueError(f"qcut: the quantiles must be a list of numbers from 0 to 1; got {q!r}")
    _binnable(x, "qcut", lambda sample: pd.qcut(sample, list(quantiles), duplicates="drop"))
    edges = x.quantile(list(quantiles))
    if edges.npartitions != 1:  # (a quantile's tree ends in one task)
        raise RuntimeError(f"qcut: the quantiles came in {edges.npartitions} partitions, not one")
    lazy = _scalar("qcut-edges", _edges_from_quantiles, [part_key(edges._name, 0)], duplicates,
                   graphs=[edges._graph])
    return _binned(x, lazy, labels, True, "qcut", retbins, precision=precision, include_lowest=True,
                   duplicates=duplicates)
