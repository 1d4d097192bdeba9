"""Frames and arrays, both ways: ``df.values``, ``df.to_xsched_array()`` and ``df.to_records()``
give an ``xsched.array`` Array; ``xd.from_array`` makes a frame of a NumPy or xsched array.

Each partition becomes one block of rows (``part.to_numpy()``), all columns in one block, so
no data moves and the array's graph is the frame's plus one task per partition. The rows per
partition are not known until computed, so the array's row chunks are unknown (``nan``), as
after a boolean mask, unless ``lengths`` gives them: ``True`` computes them now (each
partition's length, not its data), a sequence states them. Every block has one dtype
(nullable numbers become float64 with NaN for missing). Importing this module gives
``DataFrame`` and ``Series`` the methods. The other way, each block of rows of an xsched
array becomes a partition (its columns in one block first), labelled by row number, so the
divisions are known where the row chunks are; ``df["z"] = x`` of a 1-d array puts block i
beside partition i (their lengths checked when computed).

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
import numbers
from typing import Any

import numpy as np
import pandas as pd

from ..graph.collection import compute_collection
from ..graph.layers import LayeredGraph, annotations_in_force, chunk_key, new_token, per_task
from ..graph.spec import Ref, Task
from . import core as _core
from .core import DataFrame, Series, _Frame, make_meta, map_partitions, new_collection, part_key
from .io import from_pandas

__all__ = ["to_xsched_array", "from_array", "to_records"]


def _to_numpy(part: Any, dtype: np.dtype, length: int | None = None, i: int = 0) -> np.ndarray:
    """Partition ``i``'s values; a ValueError when it does not hold the ``length`` rows declared."""
    if length is not None and len(part) != length:
        raise ValueError(f"to_xsched_array: partition {i} holds {len(part)} rows, but lengths= said {length}; "
                         "give the partitions' own lengths, or lengths=True to count them")
    return part.to_numpy(dtype=dtype, na_value=np.nan) if dtype.kind == "f" else part.to_numpy(dtype=dtype)


def _length(part: Any) -> pd.Series:
    return pd.Series([len(part)], dtype="int64")


def _dtype(meta: Any) -> np.dtype:
    """One dtype for every block: NumPy's for plain columns; nullable numbers (whose NumPy
    dtype pandas picks per partition, by whether it holds a missing value) as float64 with
    NaN for missing; other extension dtypes as object.

    >>> _dtype(pd.DataFrame({"a": pd.array([], dtype="Int64"), "b": pd.array([], dtype="int8")}))
    dtype('float64')
    >>> _dtype(pd.DataFrame({"a": pd.Series([], dtype="int64"), "b": pd.Series([], dtype=bool)}))
    dtype('O')
    """
    dtypes = meta.dtypes if isinstance(meta, pd.DataFrame) else [meta.dtype]
    plain = [d if isinstance(d, np.dtype) else np.dtype("float64") if d.kind in "iuf" else np.dtype(object)
             for d in dtypes]
    if not plain:
        return np.dtype("float64")
    # (pandas' own rule for the columns together: integers and booleans make objects, not integers)
    return pd.DataFrame({i: pd.Series([], dtype=d) for i, d in enumerate(plain)}).to_numpy().dtype


def to_xsched_array(frame: _Frame, lengths: Any = None) -> Any:
    """The values of ``frame`` as an xsched array: a block of rows per partition (see the
    module docstring); ``lengths``: None (unknown row chunks), True (computed now), or the
    rows of each partition."""
    from ..array import Array  # (the array collection, only when asked for)

    n = frame.npartitions
    declared = False
    if lengths is True:
        counts = map_partitions(_length, frame, meta=pd.Series([], dtype="int64"), _name="lengths")
        lengths = tuple(int(v) for v in compute_collection(counts))
    elif lengths is False:  # (as dask takes it: not known)
        lengths = None
    elif lengths is not None:
        if isinstance(lengths, (str, bytes)) or not np.iterable(lengths) or any(
                isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0 for v in lengths):
            raise ValueError(f"to_xsched_array: lengths must be True, False/None, or a whole number of rows "
                             f"(0 or more) per partition, got {lengths!r}")
        lengths, declared = tuple(int(v) for v in lengths), True
        if len(lengths) != n:
            raise ValueError(f"to_xsched_array: {len(lengths)} lengths for {n} partitions; give one per partition "
                             "(or lengths=True to compute them)")
    rows = lengths if lengths is not None else (math.nan,) * n
    dtype = _dtype(frame._meta)
    name = f"values-{new_token(frame._name, lengths)}"
    ann = annotations_in_force()
    two_d = isinstance(frame._meta, pd.DataFrame)
    layer = {chunk_key(name, (i, 0) if two_d else (i,)): Task(_to_numpy, (Ref(k), dtype) + ((lengths[i], i) if declared
                                                                                          else ()), {}, per_task(ann))
             for i, k in enumerate(frame._keys())}
    chunks = (rows, (len(frame._meta.columns),)) if two_d else (rows,)
    return Array(LayeredGraph.merge(frame._graph, new={name: layer}), name, chunks, dtype)


def _records(part: pd.DataFrame, index: bool) -> np.ndarray:
    return part.to_records(index=index)


def to_records(frame: DataFrame, index: bool = True) -> Any:
    """The rows as a 1-d xsched array of NumPy records (``pandas.DataFrame.to_records``), a
    block per partition, of lengths unknown until computed.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> r = xd.from_pandas(pd.DataFrame({"a": [1, 2], "b": [0.5, 1.5]}), npartitions=2).to_records()
    >>> r.dtype.names, r.compute()["b"].tolist()
    (('index', 'a', 'b'), [0.5, 1.5])
    """
    from ..array import Array

    if not isinstance(frame, DataFrame):
        raise TypeError(f"to_records is a DataFrame's, not a {type(frame).__name__}'s; use .to_frame() first")
    dtype = _records(frame._meta, index).dtype
    name = f"to-records-{new_token(frame._name, index)}"
    ann = annotations_in_force()
    layer = {chunk_key(name, (i,)): Task(_records, (Ref(k), index), {}, per_task(ann))
             for i, k in enumerate(frame._keys())}
    return Array(LayeredGraph.merge(frame._graph, new={name: layer}), name, ((math.nan,) * frame.npartitions,),
                 dtype)


def _block_frame(block: np.ndarray, start: Any, columns: Any, dtypes: Any = None) -> Any:
    """A block as a partition: a Series of a 1-d block (a DataFrame when ``columns`` is a
    list of one name), else a DataFrame; cast to ``dtypes`` (meta's) when given."""
    index = pd.RangeIndex(start, start + len(block)) if start is not None else None
    if block.ndim == 1 and block.dtype.names is None and not isinstance(columns, (list, tuple, pd.Index)):
        out = pd.Series(block, index=index, name=columns)
    else:
        out = pd.DataFrame(block[:, None] if block.ndim == 1 and block.dtype.names is None else block,
                           index=index, columns=columns)
    return out if dtypes is None else out.astype(dtypes)


def from_array(x: Any, chunksize: int = 50_000, columns: Any = None, meta: Any = None) -> _Frame:
    """A frame of a 1-d (a Series), 2-d or structured (a DataFrame) NumPy or xsched array:
    NumPy's in partitions of ``chunksize`` rows, an xsched array's a partition per block of
    rows; ``columns`` names the columns (the Series, for 1-d), by default 0, 1, ... or the
    record fields. Rows are numbered from 0, so divisions are known unless the array's row
    chunks are not (after a boolean mask).

    >>> import numpy as np, xsched.array as xa, xsched.dataframe as xd
    >>> df = xd.from_array(xa.arange(12.0, chunks=4).reshape(6, 2), columns=["x", "y"])
    >>> df.npartitions, df.divisions, df.y.sum().compute()
    (3, (0, 2, 4, 5), np.float64(36.0))
    """
    from ..array import Array

    dtypes = None
    if meta is not None:  # (its columns name them, its dtypes are the partitions')
        meta = make_meta(meta)
        if columns is None:
            columns = list(meta.columns) if isinstance(meta, pd.DataFrame) else meta.name
        dtypes = dict(meta.dtypes.items()) if isinstance(meta, pd.DataFrame) else meta.dtype
    if hasattr(x, "__xsched_graph__") and not isinstance(x, Array):
        raise TypeError(f"from_array takes a NumPy or an xsched array, not a {type(x).__name__}; for a dataframe's "
                        "values use .to_xsched_array(), for a Delayed or a bag make an array of it first")
    if not isinstance(x, Array):
        x = np.asarray(x)
        if x.ndim not in (1, 2):
            raise ValueError(f"from_array: a frame is made of a 1-d or 2-d array, not of shape {x.shape}")
        return from_pandas(_block_frame(x, 0, columns, dtypes), chunksize=chunksize)
    if x.ndim not in (1, 2):
        raise ValueError(f"from_array: a frame is made of a 1-d or 2-d array, not of shape {x.shape}")
    if x.ndim == 2 and len(x.chunks[1]) > 1:
        x = x.rechunk({1: -1})  # (a partition holds every column)
    width = x.shape[1] if x.ndim == 2 else None
    if columns is not None and width is not None and len(columns) != width:
        raise ValueError(f"from_array: {len(columns)} column names for an array of {width} columns "
                         f"(shape {x.shape})")
    rows = x.chunks[0]
    known = all(r == r for r in rows)
    blocks = list(range(len(rows)))
    if known and x.shape[0]:  # (empty blocks make no partition: no division could name them)
        blocks = [i for i in blocks if rows[i]]
    starts = [int(sum(rows[:i])) for i in blocks] if known else [None] * len(blocks)
    frame_meta = _block_frame(np.empty((0,) + x.shape[1:], x.dtype), 0, columns, dtypes)
    name = f"from-array-{new_token(x.name, columns, dtypes)}"
    ann = annotations_in_force()
    layer = {chunk_key(name, (j,)): Task(_block_frame, (Ref(chunk_key(x.name, (i, 0) if x.ndim == 2 else (i,))),
                                                         s, columns, dtypes), {}, per_task(ann))
             for j, (i, s) in enumerate(zip(blocks, starts))}
    if known and x.shape[0]:
        divisions = tuple(starts) + (int(x.shape[0]) - 1,)
    else:
        divisions = (None,) * (len(blocks) + 1)
    return new_collection(LayeredGraph.merge(x._graph, new={name: layer}), name, frame_meta, divisions)


def _beside(part: pd.DataFrame, name: Any, block: np.ndarray, i: int) -> pd.DataFrame:
    if len(block) != len(part):
        raise ValueError(f"column {name!r} from an xsched array: its block {i} has {len(block)} rows but "
                         f"partition {i} of the frame has {len(part)}; give the array the frame's rows per "
                         "partition, e.g. x.rechunk((tuple(df.map_partitions(len).compute()),))")
    out = part.copy(deep=False)
    out[name] = block
    return out


def array_column(frame: DataFrame, name: Any, x: Any) -> DataFrame:
    """``frame`` with the 1-d xsched array ``x`` as column ``name`` (``df["z"] = x``,
    ``df.assign(z=x)``): block i of ``x`` beside partition i, as NumPy values beside rows,
    so the array needs a block per partition; a block of another length than its
    partition fails when computed, naming both.

    >>> import numpy as np, pandas as pd, xsched.dataframe as xd
    >>> df = xd.from_pandas(pd.DataFrame({"a": [1, 2, 3, 4, 5]}), npartitions=2)
    >>> df["b"] = df.a.to_xsched_array() * 10
    >>> df.compute().b.tolist()
    [10, 20, 30, 40, 50]
    """
    if x.ndim != 1:
        raise ValueError(f"a column from an xsched array takes a 1-d array, not shape {x.shape}; "
                         "for several columns assign them one by one (x[:, 0], x[:, 1], ...)")
    if x.numblocks[0] != frame.npartitions:
        raise ValueError(f"a column from an xsched array pairs its blocks with the frame's partitions, but the "
                         f"array has {x.numblocks[0]} blocks and the frame {frame.npartitions} partitions; "
                         "rechunk the array to the frame's rows per partition, e.g. "
                         "x.rechunk((tuple(df.map_partitions(len).compute()),))")
    meta = _core._assign_one(frame._meta, name, np.empty(0, x.dtype))
    token = f"assign-array-{new_token(frame._name, name, x.name)}"
    ann = annotations_in_force()
    layer = {part_key(token, i): Task(_beside, (Ref(part_key(frame._name, i)), name, Ref(chunk_key(x.name, (i,))), i),
                                      {}, per_task(ann)) for i in range(frame.npartitions)}
    return new_collection(LayeredGraph.merge(frame._graph, x._graph, new={token: layer}), token, meta,
                          frame.divisions)


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


DataFrame.to_records = to_records  # type: ignore[attr-defined]
for _cls in (DataFrame, Series):
    _cls.to_xsched_array = _method  # type: ignore[attr-defined]
    _cls.values = property(_values)  # type: ignore[attr-defined]
_core.ARRAY_COLUMN.append(array_column)
