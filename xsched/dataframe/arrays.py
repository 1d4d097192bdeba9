"""A frame's values as an ``xsched.array`` Array: ``df.values`` and ``df.to_xsched_array()``.

Each partition becomes one block of rows (``part.to_numpy()``), all columns in one block, so
no data moves and the array's graph is the frame's plus one task per partition. The rows per
partition are not known until computed, so the array's row chunks are unknown (``nan``), as
after a boolean mask, unless ``lengths`` gives them: ``True`` computes them now (each
partition's length, not its data), a sequence states them. Every block has one dtype
(nullable numbers become float64 with NaN for missing). Importing this module gives
``DataFrame`` and ``Series`` the two.

>>> import pandas as pd, xsched.dataframe as xd
>>> df = xd.from_pandas(pd.DataFrame({"a": [1, 2, 3], "b": [4.0, 5.0, 6.0]}), npartitions=2)
>>> x = df.to_xsched_array(lengths=True)
>>> x.chunks, x.dtype, x.sum(axis=0).compute().tolist()
(((2, 1), (2,)), dtype('float64'), [6.0, 15.0])
>>> df.a.values.chunks
((nan, nan),)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ..graph.collection import compute_collection
from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task
from .core import DataFrame, Series, _Frame, map_partitions

__all__ = ["to_xsched_array"]


def _to_numpy(part: Any, dtype: np.dtype) -> np.ndarray:
    return part.to_numpy(dtype=dtype, na_value=np.nan) if dtype.kind == "f" else part.to_numpy(dtype=dtype)


def _length(part: Any) -> pd.Series:
    return pd.Series([len(part)], dtype="int64")


def _dtype(meta: Any) -> np.dtype:
    """One dtype for every block: NumPy's for plain columns; nullable numbers (whose NumPy
    dtype pandas picks per partition, by whether it holds a missing value) as float64 with
    NaN for missing; other extension dtypes as object.

    >>> _dtype(pd.DataFrame({"a": pd.array([], dtype="Int64"), "b": pd.array([], dtype="int8")}))
    dtype('float64')
    """
    dtypes = meta.dtypes if isinstance(meta, pd.DataFrame) else [meta.dtype]
    plain = [d if isinstance(d, np.dtype) else np.dtype("float64") if d.kind in "iuf" else np.dtype(object)
             for d in dtypes]
    return np.result_type(*plain) if plain else np.dtype("float64")


def to_xsched_array(frame: _Frame, lengths: Any = None) -> Any:
    """The values of ``frame`` as an xsched array: a block of rows per partition (see the
    module docstring); ``lengths``: None (unknown row chunks), True (computed now), or the
    rows of each partition."""
    from ..array import Array  # (the array collection, only when asked for)

    n = frame.npartitions
    if lengths is True:
        counts = map_partitions(_length, frame, meta=pd.Series([], dtype="int64"), _name="lengths")
        lengths = tuple(int(v) for v in compute_collection(counts))
    elif lengths is not None:
        lengths = tuple(int(v) for v in lengths)
        if len(lengths) != n:
            raise ValueError(f"to_xsched_array: {len(lengths)} lengths for {n} partitions; give one per partition "
                             "(or lengths=True to compute them)")
    rows = lengths if lengths is not None else (math.nan,) * n
    dtype = _dtype(frame._meta)
    name = f"values-{new_token(frame._name, lengths)}"
    ann = annotations_in_force()
    two_d = isinstance(frame._meta, pd.DataFrame)
    layer = {chunk_key(name, (i, 0) if two_d else (i,)): Task(_to_numpy, (Ref(k), dtype), {}, per_task(ann))
             for i, k in enumerate(frame._keys())}
    chunks = (rows, (len(frame._meta.columns),)) if two_d else (rows,)
    return Array(LayeredGraph.merge(frame._graph, new={name: layer}), name, chunks, dtype)


def _method(self: _Frame, lengths: Any = None) -> Any:
    """The values as an ``xsched.array`` Array, a block of rows per partition; ``lengths=True``
    computes the rows per partition now (else they are unknown until computed), or give them.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> xd.from_pandas(pd.Series([1, 2, 3]), npartitions=2).to_xsched_array(lengths=True).chunks
    ((2, 1),)
    """
    return to_xsched_array(self, lengths)


def _values(self: _Frame) -> Any:
    """The values as an ``xsched.array`` Array of unknown row chunks (``to_xsched_array()``)."""
    return to_xsched_array(self)


for _cls in (DataFrame, Series):
    _cls.to_xsched_array = _method  # type: ignore[attr-defined]
    _cls.values = property(_values)  # type: ignore[attr-defined]
