"""Partitioned pandas dataframes for xsched: ``import xsched.dataframe as xd``.

A ``DataFrame`` is many pandas DataFrames (partitions) computed by a task graph; the
operations build the graph and ``compute()`` runs it on the default client, or in this
process when there is none. Needs pandas (and pyarrow for parquet): ``pip install
"xsched[dataframe]"``.

>>> import pandas as pd, xsched.dataframe as xd
>>> df = xd.from_pandas(pd.DataFrame({"name": list("abab"), "balance": [5, -1, -3, 2]}), npartitions=2)
>>> df[df.balance < 0].groupby("name").balance.sum().compute().to_dict()
{'a': -3, 'b': -1}
"""

try:
    import pandas  # noqa: F401
except ImportError as exc:  # pragma: no cover - the extra is installed by `make test`
    raise ImportError('xsched.dataframe needs pandas: pip install "xsched[dataframe]"') from exc

from . import arrays as _arrays  # noqa: F401  (df.values, df.to_xsched_array)
from . import csv as _csv  # noqa: F401  (gives DataFrame and Series their to_csv)
from . import cumulative as _cumulative  # noqa: F401  (cumsum, cumprod, cummax, cummin)
from . import demo  # noqa: F401  (xd.demo.timeseries)
from . import indexing as _indexing  # noqa: F401  (loc, partitions, .str/.dt/.cat)
from . import methods as _methods  # noqa: F401  (partition-wise pandas methods, nlargest, sample)
from . import index as _index  # noqa: F401  (the Index's own methods: unique, value_counts, fields of times)
from . import labels as _labels  # noqa: F401  (filter, reindex and set_axis of columns, levels)
from . import groupby as _groupby  # noqa: F401  (gives DataFrame and Series their groupby)
from . import groupby_whole as _groupby_whole  # noqa: F401  (grouped methods needing whole groups)
from . import grouper as _grouper  # noqa: F401  (groupby(pd.Grouper(...)), alone or among other keys)
from . import times as _times  # noqa: F401  (pct_change, valid index ends, time of day, time zones)
from . import expanding as _expanding  # noqa: F401  (expanding windows across partitions)
from . import ewm as _ewm  # noqa: F401  (exponentially weighted means and sums across partitions)
from . import rank as _rank  # noqa: F401  (ranks over all partitions: a sort, offsets, the ranks sent back)
from . import reductions as _reductions  # noqa: F401  (gives the collections their reductions)
from . import describe as _describe  # noqa: F401  (describe: pandas' summary table, one tree)
from . import parquet as _parquet  # noqa: F401  (gives DataFrame its to_parquet)
from . import resample as _resample  # noqa: F401  (time bins across partition boundaries)
from . import rolling as _rolling  # noqa: F401  (rolling windows across partition boundaries)
from . import shuffle as _shuffle  # noqa: F401  (merge, join, set_index, sort_values, drop_duplicates)
from . import distinct as _distinct  # noqa: F401  (nunique, and unique and value_counts with split_out)
from . import statistics as _statistics  # noqa: F401  (corr, cov, idxmax, idxmin, mode, median)
from . import reshaping as _reshaping  # noqa: F401  (melt, categorize, pivot_table)
from . import operators as _operators  # noqa: F401  (add, eq... with fill_value; isnull, product, pipe)
from . import memory as _memory  # noqa: F401  (memory_usage, nbytes, info)
from . import asof as _asof  # noqa: F401  (merge_asof)
from . import bags as _bags  # noqa: F401  (to_bag)
from . import jsonfiles as _jsonfiles  # noqa: F401  (gives DataFrame and Series their to_json)
from . import repartition as _repartition  # noqa: F401  (repartition by count, divisions, freq, size)
from . import orc as _orc  # noqa: F401  (gives DataFrame its to_orc)
from . import sql as _sql  # noqa: F401  (gives DataFrame and Series their to_sql)
from . import hdf as _hdf  # noqa: F401  (gives DataFrame and Series their to_hdf)
from .core import DataFrame, Index, Scalar, Series, map_partitions
from .asof import merge_asof
from .binning import cut, qcut
from .bags import to_bag
from .csv import read_csv, read_fwf, read_table, to_csv
from ..graph.delayed import compute
from .aggregation import Aggregation
from .arrays import from_array, to_records
from .io import from_delayed, from_dict, from_map, from_pandas
from .jsonfiles import read_json, to_json
from .orc import read_orc, to_orc
from .hdf import read_hdf, to_hdf
from .sql import read_sql, read_sql_query, read_sql_table, to_sql
from .methods import concat, isna, notna, to_datetime, to_numeric, to_timedelta

isnull, notnull = isna, notna  # (pandas' other names for them)
from .parquet import read_parquet, to_parquet
from .repartition import repartition
from .testing import assert_eq
from .rolling import map_overlap
from .reshaping import crosstab, get_dummies, melt, pivot_table
from .shuffle import merge


def _name_installed_methods() -> None:
    """Name the methods the modules above install on the collections after what a user
    calls: each was defined inside an ``_install`` function, so Python's own errors read
    ``_install.<locals>.df_drop_duplicates() got an unexpected keyword argument ...``; now
    ``DataFrame.drop_duplicates() got ...`` (a function two classes share: its attribute
    name alone)."""
    import inspect
    import sys

    owners: dict = {}
    for name, module in list(sys.modules.items()):
        if name == __name__ or name.startswith(__name__ + "."):
            for cls in list(vars(module).values()):
                if inspect.isclass(cls) and cls.__module__.startswith(__name__):
                    for attr, value in vars(cls).items():
                        func = value.fget if isinstance(value, property) else value
                        if inspect.isfunction(func) and "<locals>" in func.__qualname__:
                            owners.setdefault(id(func), (func, attr, set()))[2].add(cls.__qualname__)
    for func, attr, classes in owners.values():
        func.__qualname__ = f"{next(iter(classes))}.{attr}" if len(classes) == 1 else attr


_name_installed_methods()

__all__ = [
    "DataFrame",
    "Series",
    "Index",
    "Scalar",
    "Aggregation",
    "map_partitions",
    "map_overlap",
    "from_pandas",
    "from_dict",
    "from_delayed",
    "from_map",
    "from_array",
    "to_records",
    "compute",
    "merge",
    "merge_asof",
    "read_csv",
    "read_fwf",
    "read_table",
    "to_bag",
    "to_csv",
    "read_parquet",
    "read_json",
    "read_orc",
    "to_orc",
    "read_hdf",
    "to_hdf",
    "read_sql",
    "read_sql_query",
    "read_sql_table",
    "to_sql",
    "to_json",
    "to_parquet",
    "demo",
    "concat",
    "to_datetime",
    "to_numeric",
    "to_timedelta",
    "isna",
    "notna",
    "isnull",
    "notnull",
    "cut",
    "qcut",
    "melt",
    "crosstab",
    "get_dummies",
    "pivot_table",
    "repartition",
    "assert_eq",
]
