"""Made-up datasets for examples and tutorials, under the names dask users know:
``xsched.datasets.timeseries()`` (a DataFrame) and ``xsched.datasets.make_people()`` (a Bag).

The collections are imported when a function is called, so ``import xsched`` needs neither
pandas nor the collections' modules.

>>> import xsched
>>> df = xsched.datasets.timeseries(end="2000-01-03", freq="1h", seed=0)
>>> df.npartitions, len(df), xsched.datasets.make_people(2, 5, seed=0).count().compute()
(2, 48, 10)
"""

from __future__ import annotations

from typing import Any

__all__ = ["timeseries", "make_people"]


def timeseries(start: Any = "2000-01-01", end: Any = "2000-01-31", freq: str = "1s",
               partition_freq: str = "1D", seed: int = 0, dtypes: dict | None = None):
    """A DataFrame of random rows every ``freq`` from ``start`` to ``end``, one partition per
    ``partition_freq`` (``xsched.dataframe.demo.timeseries``: columns ``id``, ``name``,
    ``x``, ``y`` by default, indexed by ``timestamp``, made on the workers).

    >>> import xsched
    >>> xsched.datasets.timeseries(end="2000-01-02", freq="1h").groupby("name").x.count().sum().compute()
    np.int64(24)
    """
    from .dataframe.demo import timeseries as make

    return make(start=start, end=end, freq=freq, partition_freq=partition_freq, seed=seed, dtypes=dtypes)


def make_people(npartitions: int = 10, records_per_partition: int = 1000, seed: int | None = None):
    """A Bag of made-up people (dicts of age, name, occupation, telephone, address and
    credit card; ``xsched.bag.demo.make_people``).

    >>> import xsched
    >>> xsched.datasets.make_people(npartitions=2, records_per_partition=10, seed=3).pluck("age").max().compute() <= 120
    True
    """
    from .bag.demo import make_people as make

    return make(npartitions=npartitions, records_per_partition=records_per_partition, seed=seed)
