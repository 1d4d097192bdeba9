"""read_sql_table, read_sql_query and read_hdf against pandas on the cases a first look at
them missed: columns NULL in every row of the head, query parameters, a closing ';',
``columns=[]`` and ``sa.column`` names, and rows of an HDF5 store counted from its end."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from xsched.dataframe.hdf import read_hdf
from xsched.dataframe.sql import read_sql_query, read_sql_table

sa = pytest.importorskip("sqlalchemy")


def _sparse_db(tmp_path) -> str:
    """A table whose first six rows (the head and more) hold NULL in every column but the id;
    datetimes to the microsecond."""
    uri = f"sqlite:///{tmp_path / 'db.sqlite'}"
    null = [None] * 6
    pd.DataFrame({"id": np.arange(12)[::-1], "i": pd.array(null + [3, -4, 5, 6, 7, 8], dtype="Int64"),
                  "f": [np.nan] * 6 + list(np.arange(6.0) - 2.5), "s": null + list("abcdef"),
                  "dt": pd.to_datetime(null + list(pd.date_range("2020", periods=6, freq="1234567us"))),
                  }).to_sql("t", uri, index=False)
    return uri


@pytest.mark.parametrize("npartitions", [1, 2, 3])
def test_read_sql_table_dates_null_in_the_head_keep_their_microseconds(tmp_path, npartitions):
    uri = _sparse_db(tmp_path)
    got = read_sql_table("t", uri, "id", npartitions=npartitions).compute()
    pd.testing.assert_frame_equal(got, pd.read_sql_table("t", uri, index_col="id").sort_index())


@pytest.mark.parametrize("npartitions", [1, 2, 3])
def test_read_sql_query_columns_null_in_the_head_take_pandas_dtypes(tmp_path, npartitions):
    uri = _sparse_db(tmp_path)
    got = read_sql_query("select * from t", uri, "id", npartitions=npartitions)
    want = pd.read_sql_query("select * from t", uri, index_col="id").sort_index()
    pd.testing.assert_series_equal(got.dtypes, want.dtypes)
    pd.testing.assert_frame_equal(got.compute(), want)


@pytest.mark.parametrize("npartitions", [1, 3])
def test_read_sql_query_params_reach_every_query(tmp_path, npartitions):
    uri = _sparse_db(tmp_path)
    table = sa.Table("t", sa.MetaData(), autoload_with=sa.create_engine(uri))
    selectable = sa.select(table.c.id, table.c.f).where(table.c.id >= sa.bindparam("lo"))
    for sql in ("select id, f from t where id >= :lo", selectable):
        got = read_sql_query(sql, uri, "id", npartitions=npartitions, params={"lo": 4}).compute()
        pd.testing.assert_frame_equal(got, pd.read_sql_query(sql, uri, index_col="id", params={"lo": 4}).sort_index())
    with pytest.raises(TypeError, match="params must be a dict of the values of the query's :name placeholders"):
        read_sql_query("select id, f from t where id >= ?", uri, "id", params=(4,))


def test_read_sql_query_takes_a_closing_semicolon(tmp_path):
    uri = _sparse_db(tmp_path)
    got = read_sql_query("select id, s from t where id > 2 ;\n", uri, "id", npartitions=2).compute()
    pd.testing.assert_frame_equal(got, pd.read_sql_query("select id, s from t where id > 2;", uri,
                                                         index_col="id").sort_index())


def test_read_sql_table_columns_empty_reads_every_column(tmp_path):
    uri = _sparse_db(tmp_path)
    whole = pd.read_sql_table("t", uri, index_col="id", columns=[]).sort_index()
    pd.testing.assert_frame_equal(read_sql_table("t", uri, "id", npartitions=2, columns=[]).compute(), whole)


def test_read_sql_table_columns_named_by_sa_column(tmp_path):
    uri = _sparse_db(tmp_path)
    whole = pd.read_sql_table("t", uri, index_col="id").sort_index()
    got = read_sql_table("t", uri, sa.column("id"), npartitions=2, columns=[sa.column("s"), sa.column("f")])
    pd.testing.assert_frame_equal(got.compute(), whole[["s", "f"]])


@pytest.mark.parametrize("chunksize", [2, 4, 100])
@pytest.mark.parametrize(("start", "stop"), [(-5, None), (2, -3), (None, 4), (-30, -2), (None, None)])
def test_read_hdf_rows_counted_from_the_end(tmp_path, chunksize, start, stop):
    pytest.importorskip("tables")
    path = tmp_path / "a.h5"
    pdf = pd.DataFrame({"i": np.arange(10) - 4, "s": list("abcdefghij")}, index=np.arange(10)[::-1])
    pdf.to_hdf(path, key="t", format="table")
    pdf.s.to_hdf(path, key="f", format="fixed")
    got = read_hdf(str(path), "t", start=start, stop=stop, chunksize=chunksize).compute()
    pd.testing.assert_frame_equal(got, pd.read_hdf(path, "t", start=start, stop=stop))
    got = read_hdf(str(path), "f", start=start, stop=stop, chunksize=chunksize).compute()
    pd.testing.assert_series_equal(got, pd.read_hdf(path, "f", start=start, stop=stop))
