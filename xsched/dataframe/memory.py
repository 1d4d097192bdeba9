"""What the partitions hold: ``memory_usage`` and ``nbytes`` as tree sums, and ``info()``.

Every partition is measured by pandas and the measures are added up, so the answer is the
memory the partitions hold: each partition's own index, and each its own copy of a
categorical's categories, count once per partition (a whole pandas object holds one
``RangeIndex`` of 132 bytes and one set of categories, where ``n`` partitions hold ``n``).

``info()`` prints pandas' summary, its counts of non-missing values computed (one pass, with
the length, the index's first and last labels and the memory).

>>> import pandas as pd, xsched.dataframe as xd
>>> df = xd.from_pandas(pd.DataFrame({"a": [1.0, None, 3.0]}, index=[10, 20, 30]), npartitions=2)
>>> df.memory_usage().compute().to_dict()
{'Index': 24, 'a': 24}
"""

from __future__ import annotations

import sys
from typing import Any

import pandas as pd

from ..graph.delayed import compute
from .core import DataFrame, Index, Series, _Frame
from .reductions import reduction

__all__ = ["memory_usage", "info"]


def _usage(part: Any, index: bool, deep: bool) -> Any:
    if isinstance(part, pd.Index):
        return part.memory_usage(deep=deep)
    return part.memory_usage(index=index, deep=deep)


def _nbytes(part: Any) -> int:
    return part.nbytes


def _add(partials: list) -> Any:
    out = partials[0]
    for p in partials[1:]:
        out = out + p
    return out


def memory_usage(frame: _Frame, index: bool = True, deep: bool = False, split_every: int | None = None):
    """Bytes held (see the module's docstring): per column (and ``"Index"``) of a DataFrame,
    a Series of one partition; of a Series or Index, a Scalar. ``deep`` counts the Python
    objects' own bytes, as pandas'.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> s = xd.from_pandas(pd.Series([1, 2, 3], index=[1, 2, 3]), npartitions=2)
    >>> s.memory_usage().compute(), s.memory_usage(index=False).compute()
    (48, 24)
    """
    meta: Any = 0
    if isinstance(frame, DataFrame):
        meta = frame._meta.memory_usage(index=index).iloc[:0]
    return reduction(frame, _usage, _add, meta=meta, token="memory-usage", split_every=split_every,
                     chunk_kwargs={"index": index, "deep": deep})


def nbytes(frame: _Frame):
    """Bytes of the values (not the index), as pandas' ``nbytes``: a Scalar.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> xd.from_pandas(pd.Series([1, 2, 3]), npartitions=2).nbytes.compute()
    24
    """
    return reduction(frame, _nbytes, _add, meta=0, token="nbytes")


def _index_ends(part: pd.DataFrame) -> tuple:
    return (len(part), part.index[0], part.index[-1]) if len(part) else (0, None, None)


def _index_ends_merge(partials: list) -> tuple:
    present = [p for p in partials if p[0]]
    if not present:
        return 0, None, None
    return sum(p[0] for p in present), present[0][1], present[-1][2]


def _size(nbytes: float, exact: bool) -> str:
    """pandas' way of writing a size: ``1.2 KB``, with ``+`` where objects were not measured."""
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if nbytes < 1024.0:
            return f"{nbytes:3.1f}{'' if exact else '+'} {unit}"
        nbytes /= 1024.0
    return f"{nbytes:3.1f}{'' if exact else '+'} PB"


def info(frame: DataFrame, verbose: bool | None = None, buf: Any = None, memory_usage: Any = None,
         show_counts: bool | None = None) -> None:
    """Print pandas' summary of the DataFrame (class, partitions, index range, a line per
    column with its count of non-missing values and dtype, the dtypes, the memory held),
    computed in one pass; ``memory_usage="deep"`` measures the Python objects too.

    >>> import pandas as pd, xsched.dataframe as xd
    >>> xd.from_pandas(pd.DataFrame({"a": [1.0, None, 3.0]}), npartitions=2).info()
    <class 'xsched.dataframe.core.DataFrame'>
    RangeIndex: 3 entries, 0 to 2, in 2 partitions
    Data columns (total 1 columns):
     #   Column  Non-Null Count  Dtype  
    ---  ------  --------------  -----  
     0   a       2 non-null      float64
    dtypes: float64(1)
    memory usage: 288.0 bytes
    """
    memory_usage = True if memory_usage is None else memory_usage
    deep = memory_usage == "deep"
    show_counts = True if show_counts is None else show_counts
    wanted = {"ends": reduction(frame, _index_ends, _index_ends_merge, meta=(0, None, None), token="index-ends")}
    if show_counts and verbose is not False:
        wanted["counts"] = frame.count()
    if memory_usage:
        wanted["memory"] = frame.memory_usage(deep=deep).sum()
    got = dict(zip(wanted, compute(*wanted.values())))
    n, first, last = got["ends"]
    lines = [str(type(frame)), f"{type(frame._meta.index).__name__}: {n} entries"
             + (f", {first} to {last}" if n else "") + f", in {frame.npartitions} partitions"]
    columns = frame.columns
    if not len(columns):
        lines.append(f"Empty {type(frame).__name__}")
    elif verbose is False:
        lines.append(f"Columns: {len(columns)} entries, {columns[0]} to {columns[-1]}")
    else:
        lines.append(f"Data columns (total {len(columns)} columns):")
        rows = [[f" {i}", str(c)] + ([f"{got['counts'].iloc[i]} non-null"] if "counts" in got else [])
                + [str(d)] for i, (c, d) in enumerate(frame.dtypes.items())]
        header = [" #", "Column"] + (["Non-Null Count"] if "counts" in got else []) + ["Dtype"]
        table = [header, ["---"] + ["-" * len(h) for h in header[1:]]] + rows
        widths = [max(len(r[k]) for r in table) for k in range(len(header))]
        lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)) for row in table]
    counts = frame.dtypes.value_counts().groupby(lambda d: str(d)).sum().sort_index()
    lines.append("dtypes: " + ", ".join(f"{d}({k})" for d, k in counts.items()))
    if memory_usage:
        exact = deep or not (any(d == object for d in frame.dtypes)
                             or frame._meta.index._is_memory_usage_qualified)
        lines.append(f"memory usage: {_size(got['memory'], exact)}")
    (buf or sys.stdout).write("\n".join(lines) + "\n")


def _install() -> None:
    for cls in (DataFrame, Series):
        cls.memory_usage = memory_usage  # type: ignore[attr-defined]

    def index_memory_usage(self, deep: bool = False, split_every: int | None = None):
        return memory_usage(self, True, deep, split_every)

    index_memory_usage.__doc__, index_memory_usage.__name__ = memory_usage.__doc__, "memory_usage"
    Index.memory_usage = index_memory_usage  # type: ignore[attr-defined]
    for cls in (Series, Index):
        cls.nbytes = property(nbytes, doc=nbytes.__doc__)  # type: ignore[attr-defined]
    DataFrame.info = info  # type: ignore[attr-defined]


_install()
