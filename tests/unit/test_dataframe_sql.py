"""read_sql_table, read_sql_query, read_sql and to_sql on SQLite database files, computed in this
process: every read is compared with what pandas reads from the same database, every write
with what pandas wrote or reads back."""

from __future__ import annotations

import contextlib
import io
import sqlite3

import numpy as np
import pandas as pd
import pytest

import xsched.dataframe as xd
from xsched.dataframe.planner import project_columns
from xsched.dataframe.sql import read_sql, read_sql_query, read_sql_table, to_sql
from xsched.graph.delayed import Delayed

sa = pytest.importorskip("sqlalchemy")


def _frame(n: int = 40, seed: int = 0) -> pd.DataFrame:
    """Integers with NULLs only after the first rows (the head shows none), text with NULLs,
    floats, booleans and datetimes, in an order the ids do not follow."""
    rng = np.random.default_rng(seed)
    ids = rng.permutation(n) * 3
    count = pd.array([None if i % 7 == 6 else i for i in range(n)], dtype="Int64")
    return pd.DataFrame({"id": ids, "count": count, "name": [None if i % 5 == 4 else f"n{i}" for i in range(n)],
                         "x": rng.normal(size=n).round(6), "flag": rng.random(n) > 0.5,
                         "t": pd.date_range("2021-03-01", periods=n, freq="37min")[rng.permutation(n)]})


def _db(tmp_path, pdf=None, table="t", name="db.sqlite") -> str:
    uri = f"sqlite:///{tmp_path / name}"
    engine = sa.create_engine(uri)
    (_frame() if pdf is None else pdf).to_sql(table, engine, index=False)
    engine.dispose()
    return uri


def _plan(df) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        df.explain()
    return out.getvalue()


@pytest.mark.parametrize("parts", [dict(npartitions=1), dict(npartitions=3), dict(npartitions=7),
                                   dict(divisions=[0, 10, 11, 50, 117]), dict(bytes_per_chunk=400),
                                   dict(limits=(0, 117), npartitions=4)])
def test_read_sql_table_matches_pandas_for_any_partitioning(tmp_path, parts):
    uri = _db(tmp_path)
    df = read_sql_table("t", uri, "id", **parts)
    want = pd.read_sql_table("t", uri, index_col="id").sort_index()
    assert df.known_divisions and df.divisions[0] == 0 and df.divisions[-1] == 117
    if "divisions" in parts:
        assert df.divisions == (0, 10, 11, 50, 117)
    elif "bytes_per_chunk" in parts:
        assert df.npartitions > 3
    else:
        assert df.npartitions == parts["npartitions"]
    assert df.dtypes.to_dict() == want.dtypes.to_dict()  # (count: float64, NULLs only after the head)
    got = df.compute()
    pd.testing.assert_frame_equal(got, want)
    for i, lo in enumerate(df.divisions[:-1]):
        part = df.get_partition(i).compute()
        assert part.index.is_monotonic_increasing and (part.index >= lo).all()


def test_read_sql_table_by_a_datetime_column_and_selected_columns(tmp_path):
    uri = _db(tmp_path)
    df = read_sql_table("t", uri, "t", npartitions=5, columns=["name", "id", "flag"])
    want = pd.read_sql_table("t", uri, index_col="t", columns=["name", "id", "flag"]).sort_index()
    assert df.npartitions == 5 and isinstance(df.divisions[0], pd.Timestamp)
    assert df.divisions[0] == want.index.min() and df.divisions[-1] == want.index.max()
    pd.testing.assert_frame_equal(df.compute(), want)
    cut = read_sql_table("t", uri, "t", divisions=[pd.Timestamp("2021-03-01 05:00"), pd.Timestamp("2021-03-01 12:00")])
    pd.testing.assert_frame_equal(cut.compute(), pd.read_sql_table("t", uri, index_col="t").sort_index()
                                  .loc["2021-03-01 05:00":"2021-03-01 12:00"])


def test_a_table_of_dates_and_a_table_with_no_rows_read_as_pandas_reads_them(tmp_path):
    uri = f"sqlite:///{tmp_path / 'db.sqlite'}"
    with sqlite3.connect(tmp_path / "db.sqlite") as c:
        c.execute("create table d (k integer, day date, at timestamp, ok boolean, note text)")
        c.executemany("insert into d values (?, ?, ?, ?, ?)",
                      [(i, f"2020-01-{i + 1:02d}", f"2020-02-01 10:00:{i:02d}.000000", i % 2, None if i == 3 else "x")
                       for i in range(9)])
        c.execute("create table e (k integer, v real, s text, at timestamp)")
    got = read_sql_table("d", uri, "k", npartitions=3).compute()
    pd.testing.assert_frame_equal(got, pd.read_sql_table("d", uri, index_col="k"))
    assert got.day.dtype.kind == "M" and got.ok.dtype == bool
    empty = read_sql_table("e", uri, "k")
    assert empty.npartitions == 1 and not empty.known_divisions
    pd.testing.assert_frame_equal(empty.compute(), pd.read_sql_table("e", uri, index_col="k"))
    assert empty.dtypes.to_dict() == pd.read_sql_table("e", uri, index_col="k").dtypes.to_dict()


def test_the_planner_selects_only_the_columns_used(tmp_path):
    uri = _db(tmp_path)
    df = read_sql_table("t", uri, "id", npartitions=3)
    assert df.x.sum().compute() == pytest.approx(pd.read_sql_table("t", uri).x.sum())
    assert "read read-sql-table-x ['x']" in _plan(df.x)
    projected = project_columns(df.x._graph, df.x._keys())
    (reader,) = [layer for layer in projected.layers.values() if getattr(layer, "kind", None) == "read"]
    sql = str(next(iter(reader.values())).args[2])
    assert sql.startswith("SELECT t.id, t.x \nFROM t") and "name" not in sql
    pd.testing.assert_series_equal(df[df.x > 0].name.compute(),
                                   pd.read_sql_table("t", uri, index_col="id").sort_index().query("x > 0").name)
    q = read_sql_query("select id, x, name from t", uri, "id", npartitions=2)
    assert "read read-sql-query-name ['name']" in _plan(q.name)
    assert q.name.count().compute() == pd.read_sql_table("t", uri).name.count()


def test_read_sql_query_of_a_string_and_of_a_selectable_matches_pandas(tmp_path):
    uri = _db(tmp_path)
    text = "select id, x * 2 as x2, name, count from t where id >= 30"
    got = read_sql_query(text, uri, "id", npartitions=4)
    want = pd.read_sql_query(text, uri, index_col="id").sort_index()
    assert got.divisions[0] == want.index.min() and got.npartitions == 4
    assert got.dtypes.to_dict() == want.dtypes.to_dict() and got["count"].dtype == "float64"
    pd.testing.assert_frame_equal(got.compute(), want)
    table = sa.Table("t", sa.MetaData(), autoload_with=sa.create_engine(uri))
    query = sa.select(table.c.id, table.c.t, table.c.flag).where(table.c.flag)
    got = read_sql_query(query, uri, "t", npartitions=3)
    want = pd.read_sql_query(query, uri, index_col="t").sort_index()
    pd.testing.assert_frame_equal(got.compute(), want)
    with pytest.raises(TypeError, match="index_col 't' of the query .* holds str values.*parse_dates="):
        read_sql_query("select * from t", uri, "t", npartitions=4)
    got = read_sql_query("select * from t", uri, "t", npartitions=4, parse_dates=["t"])
    assert isinstance(got.divisions[1], pd.Timestamp)
    want = pd.read_sql_query("select * from t", uri, index_col="t", parse_dates=["t"]).sort_index()
    pd.testing.assert_frame_equal(got.compute(), want)  # (dates held as text, compared as dates)
    grouped = "select name, count(*) as n, max(id) as top from t group by name"
    got = read_sql_query(grouped, uri, "top", divisions=[0, 60, 200])
    pd.testing.assert_frame_equal(got.compute(), pd.read_sql_query(grouped, uri, index_col="top").sort_index())


def test_read_sql_reads_a_table_by_name_and_anything_else_as_a_query(tmp_path):
    uri = _db(tmp_path)
    assert read_sql("t", uri, "id")._name.startswith("read-sql-table-")
    query = read_sql("select id, x from t", uri, "id", npartitions=2)
    assert query._name.startswith("read-sql-query-") and list(query.columns) == ["x"]
    assert len(query) == 40


def test_meta_head_rows_zero_and_the_callers_dtypes(tmp_path):
    uri = _db(tmp_path)
    meta = pd.read_sql_table("t", uri, index_col="id").iloc[:0]
    df = read_sql_table("t", uri, "id", divisions=[0, 60, 117], head_rows=0, meta=meta)
    pd.testing.assert_frame_equal(df.compute(), pd.read_sql_table("t", uri, index_col="id").sort_index())
    typed = read_sql_table("t", uri, "id", npartitions=2, dtype={"count": "Int64"}, parse_dates=["x"])
    pd.testing.assert_frame_equal(typed.compute(), pd.read_sql_table("t", uri, index_col="id", parse_dates=["x"])
                                  .sort_index().astype({"count": "Int64"}))
    with pytest.raises(ValueError, match=r"meta has the columns \['x'\], but the read gives \['count', 'name'"):
        read_sql_table("t", uri, "id", meta=meta[["x"]])
    with pytest.raises(ValueError, match="head_rows=0 .* pass meta= and divisions= or npartitions="):
        read_sql_table("t", uri, "id", head_rows=0)


def test_a_partition_that_does_not_fit_meta_names_the_table_column_and_fix(tmp_path):
    uri = _db(tmp_path, pd.DataFrame({"k": range(10), "v": [1] * 9 + [2.5]}))
    meta = pd.DataFrame({"v": pd.Series([], dtype="int64")}, index=pd.Index([], dtype="int64", name="k"))
    df = read_sql_table("t", uri, "k", npartitions=2, meta=meta)
    assert df.divisions == (0, 4, 9) and df.get_partition(0).v.sum().compute() == 4
    with pytest.raises(ValueError, match=r"read_sql_table: column 'v' of the table 't' \(rows 4 <= k <= 9\).*"
                                         r"not int64.*meta= with 'v' as float64"):
        df.compute()


def test_bad_arguments_fail_when_the_read_is_built(tmp_path):
    uri = _db(tmp_path)
    engine = sa.create_engine(uri)
    with pytest.raises(TypeError, match="con must be a database URI string.*not a Engine.*pass the URI"):
        read_sql_table("t", engine, "id")
    with pytest.raises(TypeError, match="con must be a database URI string"):
        read_sql_query("select * from t", engine.connect(), "id")
    with pytest.raises(ValueError, match="'db.sqlite' is not a database URI SQLAlchemy can open"):
        read_sql_table("t", "db.sqlite", "id")
    with pytest.raises(ValueError, match=r"no table 'nope' in sqlite:///.*db.sqlite: it has the tables \['t'\]"):
        read_sql_table("nope", uri, "id")
    with pytest.raises(ValueError, match=r"index_col names no column 'ID' of table 't': it has the columns "
                                         r"\['id', 'count', 'name', 'x', 'flag', 't'\]"):
        read_sql_table("t", uri, "ID")
    with pytest.raises(ValueError, match="columns names no column 'y' of table 't'"):
        read_sql_table("t", uri, "id", columns=["x", "y"])
    with pytest.raises(ValueError, match=r"index_col names no column 'k' of the query .*: it has the columns \['id'"):
        read_sql_query("select id, x from t", uri, "k")
    with pytest.raises(ValueError, match="index_col 'count' of the table 't' is NULL in 5 rows"):
        read_sql_table("t", uri, "count")
    _db(tmp_path, pd.DataFrame({"k": ["a", "b"], "x": [1.0, 2.0]}), table="s")
    with pytest.raises(TypeError, match="index_col 'k' of the table 's' holds str values.*pass divisions="):
        read_sql_table("s", uri, "k", npartitions=2)
    assert read_sql_table("s", uri, "k", divisions=["a", "b"]).x.sum().compute() == 3
    with pytest.raises(TypeError, match="divisions= or npartitions=, not both"):
        read_sql_table("t", uri, "id", divisions=[0, 5], npartitions=2)
    with pytest.raises(TypeError, match="chunksize= is not supported"):
        read_sql_table("t", uri, "id", chunksize=10)
    with pytest.raises(ValueError, match="divisions must be sorted"):
        read_sql_table("t", uri, "id", divisions=[5, 0])
    with pytest.raises(ValueError, match="the database refuses the query"):
        read_sql_query("select nothing from nowhere", uri, "id")
    engine.dispose()


@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("npartitions", [1, 4])
def test_to_sql_then_read_sql_table_round_trips(tmp_path, parallel, npartitions):
    pdf = _frame().set_index("id").sort_index()
    uri = f"sqlite:///{tmp_path / 'out.sqlite'}"
    df = xd.from_pandas(pdf, npartitions=npartitions)
    assert to_sql(df, "w", uri, parallel=parallel) is None
    engine = sa.create_engine(uri)
    pdf.to_sql("want", engine)
    want = pd.read_sql_table("want", engine, index_col="id")
    pd.testing.assert_frame_equal(pd.read_sql_table("w", engine, index_col="id"), want)
    back = read_sql_table("w", uri, "id", npartitions=3).compute()
    pd.testing.assert_frame_equal(back, want)
    engine.dispose()


def test_to_sql_method_compute_false_and_if_exists(tmp_path):
    import xsched.dataframe.sql  # noqa: F401  (gives DataFrame its to_sql)

    uri = f"sqlite:///{tmp_path / 'out.sqlite'}"
    pdf = pd.DataFrame({"a": range(10), "s": list("abcdefghij")})
    df = xd.from_pandas(pdf, npartitions=3)
    later = df.to_sql("t", uri, index=False, compute=False)
    assert isinstance(later, Delayed) and not sa.inspect(sa.create_engine(uri)).has_table("t")
    assert later.compute() is None
    pd.testing.assert_frame_equal(pd.read_sql_table("t", uri), pdf)
    with pytest.raises(ValueError, match="table 't' already exists in sqlite:///.*nothing was written.*if_exists="):
        df.to_sql("t", uri, index=False)
    df.to_sql("t", uri, index=False, if_exists="append", parallel=True)
    pd.testing.assert_frame_equal(pd.read_sql_table("t", uri).sort_values("a", kind="stable", ignore_index=True),
                                  pd.concat([pdf, pdf]).sort_values("a", kind="stable", ignore_index=True))
    df[df.a > 6].to_sql("t", uri, index=False, if_exists="replace")
    pd.testing.assert_frame_equal(pd.read_sql_table("t", uri), pdf[pdf.a > 6].reset_index(drop=True))
    df.a.to_sql("only_a", uri, index_label="i")
    assert pd.read_sql_table("only_a", uri).columns.tolist() == ["i", "a"]
    with pytest.raises(ValueError, match=r"if_exists must be one of \['fail', 'replace', 'append'\]"):
        df.to_sql("t", uri, if_exists="overwrite")
    with pytest.raises(TypeError, match="uri must be a database URI string.*pass the URI"):
        to_sql(df, "t", sa.create_engine(uri))


@pytest.mark.parametrize("npartitions", [1, 4])
def test_datetimes_sqlite_stores_as_text_lose_no_row_at_the_ends(tmp_path, npartitions):
    # (pandas' sqlite3 path stores '2020-01-01 00:00:00'; a bound bound as '... 00:00:00.000000'
    # compares above it as text: the first row was left out)
    path = tmp_path / "t.db"
    pdf = pd.DataFrame({"t": pd.date_range("2020-01-01", periods=200, freq="h"), "v": np.arange(200)})
    with contextlib.closing(sqlite3.connect(path)) as con:
        pdf.to_sql("tbl", con, index=False)
        con.commit()
    got = read_sql_table("tbl", f"sqlite:///{path}", index_col="t", npartitions=npartitions)
    out = got.compute()
    assert len(out) == 200 and out.v.tolist() == list(range(200))
    assert got.divisions[0] == pdf.t.iloc[0] and got.divisions[-1] == pdf.t.iloc[-1]
