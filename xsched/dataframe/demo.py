"""Made-up data for examples, tests and benchmarks: ``timeseries()``, a dataframe of random rows.

Why generate on the workers: a month of one-second rows is 2.6 million rows, and shipping
them from the client would measure the network, not the computation. So each partition
is a small task (its time range and a seed) that makes its rows where it runs. The seed
of partition ``i`` is derived from the base seed and ``i`` alone, so a partition is the
same wherever, whenever and in whatever order it is computed, and the same call gives the
same data.

>>> from xsched.dataframe.demo import timeseries
>>> df = timeseries("2000-01-01", "2000-01-03", freq="1h")
>>> df.npartitions, list(df.columns), len(df.compute())
(2, ['id', 'name', 'x', 'y'], 48)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..graph.layers import annotations_in_force, new_token, per_task
from ..graph.spec import Task
from .io import from_tasks

__all__ = ["timeseries", "make_timeseries", "NAMES"]

#: The first names the ``name`` column draws from (one per letter).
NAMES = ["Alice", "Bob", "Charlie", "Dan", "Edith", "Frank", "George", "Hannah", "Ingrid", "Jerry",
         "Kevin", "Laura", "Michael", "Norbert", "Oliver", "Patricia", "Quinn", "Ray", "Sarah", "Tim",
         "Ursula", "Victor", "Wendy", "Xavier", "Yvonne", "Zelda"]

_DEFAULT_DTYPES = {"id": int, "name": str, "x": float, "y": float}


def timeseries(start: Any = "2000-01-01", end: Any = "2000-01-31", freq: str = "1s",
               partition_freq: str = "1D", seed: int = 0, dtypes: dict | None = None):
    """A dataframe of random rows every ``freq`` from ``start`` to ``end`` (excluded), one
    partition per ``partition_freq``, with known divisions (the last is the last row's time).

    Columns by dtype (``dtypes`` maps names to them; the default is ``{"id": int, "name":
    str, "x": float, "y": float}``): integers are Poisson around 1000, strings are first
    names from ``NAMES`` (``"category"`` makes them categorical), floats are uniform in
    ``[-1, 1]``. The index is a DatetimeIndex named ``timestamp``.

    >>> df = timeseries(end="2000-01-11", seed=1)
    >>> df.npartitions, df.divisions[:2]
    (10, (Timestamp('2000-01-01 00:00:00'), Timestamp('2000-01-02 00:00:00')))
    >>> a, b = df.partitions[3].compute(), timeseries(end="2000-01-11", seed=1).partitions[3].compute()
    >>> a.equals(b), bool(a.x.between(-1, 1).all()), a.name.isin(NAMES).all()
    (True, True, np.True_)
    """
    start, end = pd.Timestamp(start), pd.Timestamp(end)
    if end <= start:
        raise ValueError(f"timeseries: end ({end}) must be after start ({start})")
    dtypes = dict(_DEFAULT_DTYPES if dtypes is None else dtypes)
    for col, dt in dtypes.items():
        _kind(col, dt)  # fail now on a dtype it cannot make
    bounds = list(pd.date_range(start, end, freq=partition_freq))
    if not bounds or bounds[0] != start:
        bounds.insert(0, start)
    if bounds[-1] != end:
        bounds.append(end)
    name = f"timeseries-{new_token(str(start), str(end), freq, partition_freq, seed, repr(dtypes))}"
    ann = annotations_in_force()
    tasks = [Task(_make_partition, (lo, hi, freq, dtypes, seed, i), {}, per_task(ann))
             for i, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:]))]
    meta = _make_partition(start, start, freq, dtypes, seed, 0)
    # (the last division is the last row's time, as divisions are: ``end`` has no row, and a
    # division past the data would give resample a bin after it)
    last_rows = pd.date_range(bounds[-2], end, freq=freq, inclusive="left")
    last = last_rows[-1] if len(last_rows) else bounds[-2]
    return from_tasks(name, tasks, meta, tuple(bounds[:-1]) + (last,))


def make_timeseries(start: Any = "2000-01-01", end: Any = "2000-12-31", dtypes: dict | None = None,
                    freq: str = "10s", partition_freq: str = "1ME", seed: int | None = None):
    """``timeseries`` under the older name and defaults dask's guides use
    (``dd.demo.make_timeseries()``: a year of rows every 10 seconds, a partition per month,
    a seed drawn when none is given).

    >>> df = make_timeseries("2000-01-01", "2000-03-01", freq="1D", seed=0)
    >>> df.npartitions, len(df), str(df.divisions[1].date())  # (a partition ends at each month's end)
    (3, 60, '2000-01-31')
    """
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % 2**32)
    return timeseries(start=start, end=end, freq=freq, partition_freq=partition_freq, seed=seed, dtypes=dtypes)


def _kind(col: str, dtype: Any) -> str:
    """What a column of ``dtype`` holds: "int", "float", "name" or "category"."""
    if dtype == "category" or isinstance(dtype, pd.CategoricalDtype):
        return "category"
    if dtype in (str, object, "str", "object", "string"):
        return "name"
    dt = np.dtype(dtype)
    if np.issubdtype(dt, np.integer):
        return "int"
    if np.issubdtype(dt, np.floating):
        return "float"
    raise ValueError(f"timeseries: no generator for column {col!r} of dtype {dtype!r}; use int, float, str "
                     "or 'category'")


def _make_partition(lo: pd.Timestamp, hi: pd.Timestamp, freq: str, dtypes: dict, seed: int,
                    number: int) -> pd.DataFrame:
    """Run on the workers: the rows of ``[lo, hi)``, from a generator seeded by ``(seed, number)``."""
    index = pd.date_range(lo, hi, freq=freq, inclusive="left", name="timestamp")
    rng = np.random.default_rng([int(seed), int(number)])
    n = len(index)
    columns = {}
    for col, dt in dtypes.items():
        kind = _kind(col, dt)
        if kind == "int":
            columns[col] = rng.poisson(1000, n).astype(dt)
        elif kind == "float":
            columns[col] = rng.uniform(-1, 1, n).astype(dt)
        else:
            values = np.asarray(NAMES, dtype=object)[rng.integers(0, len(NAMES), n)]
            columns[col] = (pd.Categorical(values, categories=NAMES) if kind == "category"
                            else pd.array(values, dtype="str"))
    return pd.DataFrame(columns, index=index)
