"""to_sql / read_sql_table on a real cluster: the workers open the SQLite database file from its
URI, write the partitions one after another and all at once after the first, and read ranges of
the index column back (the queries travel to them), compared with pandas."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import xsched.dataframe as xd
from xsched.dataframe.sql import read_sql_query, read_sql_table, to_sql

sa = pytest.importorskip("sqlalchemy")

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(60)]


def test_sql_written_and_read_by_the_workers(client, tmp_path):
    rng = np.random.default_rng(0)
    n = 300
    frame = pd.DataFrame({"x": rng.normal(size=n).round(5), "name": rng.choice(["ann", "bob", None], n),
                          "when": pd.date_range("2024-01-01", periods=n, freq="min")},
                         index=pd.Index(np.arange(n) * 2, name="id"))
    uri = f"sqlite:///{tmp_path / 'db.sqlite'}"
    df = xd.from_pandas(frame, npartitions=4)
    assert to_sql(df[df.x > -5], "chained", uri) is None
    df.to_sql("parallel", uri, parallel=True)
    engine = sa.create_engine(uri)
    frame.to_sql("want", engine)
    want = pd.read_sql_table("want", engine, index_col="id")
    pd.testing.assert_frame_equal(pd.read_sql_table("chained", engine, index_col="id"), want)
    engine.dispose()
    back = read_sql_table("parallel", uri, "id", npartitions=5)
    assert back.known_divisions and back.divisions[-1] == 2 * (n - 1)
    pd.testing.assert_frame_equal(back.compute(), want)
    sums = back[back.x > 0].groupby("name").x.sum().compute()
    pd.testing.assert_series_equal(sums, want[want.x > 0].groupby("name").x.sum())
    by_time = read_sql_query("select id, [when], x from chained where x > 0", uri, "when", npartitions=3,
                             parse_dates=["when"])
    pd.testing.assert_series_equal(by_time.x.compute(), want[want.x > 0].set_index("when").x)
