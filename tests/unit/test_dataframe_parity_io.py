"""read_parquet / read_csv / to_parquet / to_csv through the planner (columns and filters pushed
into the reads) compared with pandas reading the same files: every expression must give what
pandas gives on ``pd.read_parquet`` / ``pd.read_csv`` of the files, whatever was pushed."""

from __future__ import annotations

import glob
import os

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyarrow")
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import xsched.dataframe as xd  # noqa: E402
from xsched.dataframe import csv as C, parquet as P  # noqa: E402
from xsched.dataframe.csv import read_csv  # noqa: E402
from xsched.dataframe.parquet import read_parquet  # noqa: E402


def _split(pdf: pd.DataFrame, n: int) -> list[pd.DataFrame]:
    bounds = np.linspace(0, len(pdf), n + 1).round().astype(int)
    return [pdf.iloc[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:])]


def _csvs(d, pdf: pd.DataFrame, n: int) -> list[str]:
    paths = []
    for i, part in enumerate(_split(pdf, n)):
        paths.append(os.path.join(d, f"part.{i}.csv"))
        part.to_csv(paths[-1], index=False)
    return paths


# --------------------------------------------------------------------------- read_csv projections

DATES = pd.DataFrame({"x": [1.0, np.nan, 3.0, 4.0, 5.0, 6.0], "y": list("abcdef"),
                      "t": pd.date_range("2021-01-01", periods=6, freq="D").astype(str)})


@pytest.mark.parametrize("n", [1, 2, 3])
def test_csv_columns_without_a_parse_dates_column(tmp_path, n):
    paths = _csvs(tmp_path, DATES, n)
    df = read_csv(str(tmp_path / "*.csv"), parse_dates=["t"])
    expected = pd.concat([pd.read_csv(p, parse_dates=["t"]) for p in paths])
    pd.testing.assert_frame_equal(df[["x", "y"]].compute(), expected[["x", "y"]])
    pd.testing.assert_series_equal(df[df.x > 2].y.compute(), expected[expected.x > 2].y)
    pd.testing.assert_series_equal(df.t.compute(), expected.t)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_csv_expression_using_no_column_keeps_the_rows(tmp_path, n):
    paths = _csvs(tmp_path, DATES, n)
    df = read_csv(str(tmp_path / "*.csv"))
    expected = pd.concat([pd.read_csv(p) for p in paths])
    pd.testing.assert_series_equal(df.assign(z=1).z.compute(), expected.assign(z=1).z)
    assert len(df[[]]) == len(expected)


@pytest.mark.parametrize("n", [2, 3])
def test_csv_dtypes_come_from_a_file_with_rows(tmp_path, n):
    # (the first partitions written are empty: their files hold the header alone)
    pdf = pd.DataFrame({"a": [1, 2, 3], "b": [0.5, 1.5, 2.5]}, index=pd.Index([7, 8, 9], name="i"))
    src = xd.from_pandas(pdf, npartitions=n)
    src[src.a > 2].to_csv(str(tmp_path))
    got = read_csv(str(tmp_path / "*.csv"), index_col="i").compute()
    pd.testing.assert_frame_equal(got, pdf[pdf.a > 2])


@pytest.mark.parametrize("n", [1, 2])
def test_csv_pushed_filter_keeps_categories_of_the_whole_read(tmp_path, monkeypatch, n):
    monkeypatch.setattr(C, "FILTER_CHUNK_ROWS", 2)  # (the parse of a partition in several pieces)
    pdf = pd.DataFrame({"x": [1.0, np.nan, 3.0, 4.0, np.nan, 6.0], "y": list("aabbcc"), "n": range(6)})
    paths = _csvs(tmp_path, pdf, n)
    df = read_csv(str(tmp_path / "*.csv"), dtype={"y": "category"})
    whole = [pd.read_csv(p, dtype={"y": "category"}) for p in paths]
    for keep in (lambda d: d.n != 2, lambda d: d.y == "a", lambda d: d.x > 3):
        got = [df[keep(df)].partitions[i].compute() for i in range(n)]
        for g, w in zip(got, whole):
            pd.testing.assert_frame_equal(g, w[keep(w)])


@pytest.mark.parametrize("n", [1, 2, 3])
def test_csv_with_the_pyarrow_engine_and_a_pushed_filter(tmp_path, n):
    paths = _csvs(tmp_path, DATES, n)
    df = read_csv(str(tmp_path / "*.csv"), engine="pyarrow")
    expected = pd.concat([pd.read_csv(p, engine="pyarrow") for p in paths])  # (t: dates, as objects)
    pd.testing.assert_frame_equal(df.compute(), expected)
    pd.testing.assert_frame_equal(df[df.x != 3].compute(), expected[expected.x != 3])


@pytest.mark.parametrize("sample", [3, 5, 9])
@pytest.mark.parametrize("text", [b"a,b\n1,2\n3,4\n", b"a,b\n1,2"])
def test_csv_sample_smaller_than_a_row_still_reads_a_row(tmp_path, sample, text):
    (tmp_path / "x.csv").write_bytes(text)
    got = read_csv(str(tmp_path / "x.csv"), sample=sample, blocksize=5)
    pd.testing.assert_frame_equal(got.compute().reset_index(drop=True), pd.read_csv(tmp_path / "x.csv"))


# --------------------------------------------------------------------------- read_parquet pushdown

@pytest.mark.parametrize("batch", [2, 65_536])
def test_parquet_pushed_filter_keeps_the_categories_of_the_whole_read(tmp_path, batch):
    pdf = pd.DataFrame({"n": range(6), "c": pd.Categorical(["a", "a", "b", "b", "z", "z"])})
    pq.write_table(pa.Table.from_pandas(pdf, preserve_index=False), str(tmp_path / "part.0.parquet"),
                   row_group_size=2)
    whole = pd.read_parquet(tmp_path / "part.0.parquet")
    before = P.PUSHED_BATCH_ROWS
    P.PUSHED_BATCH_ROWS = batch
    try:
        df = read_parquet(str(tmp_path))
        for value in (2, -1):  # (some rows kept, and none)
            pd.testing.assert_frame_equal(df[df.n < value].compute(), whole[whole.n < value])
    finally:
        P.PUSHED_BATCH_ROWS = before


@pytest.mark.parametrize("n", [1, 2, 3])
def test_parquet_round_trip_of_names_that_are_not_strings(tmp_path, n):
    pdf = pd.DataFrame({0: [1.0, 2.0, 3.0, 4.0], 1: list("abcd"), 2: [5, 6, 7, 8]})
    xd.from_pandas(pdf, npartitions=n).to_parquet(str(tmp_path))
    files = sorted(glob.glob(str(tmp_path / "*.parquet")))
    expected = pd.concat([pd.read_parquet(f) for f in files])
    pd.testing.assert_frame_equal(expected, pdf)  # (pandas reads back the names it wrote)
    df = read_parquet(str(tmp_path))
    pd.testing.assert_frame_equal(df.compute(), expected)
    pd.testing.assert_frame_equal(df[[2]].compute(), expected[[2]])
    pd.testing.assert_frame_equal(df[df[0] > 1].compute(), expected[expected[0] > 1])


@pytest.mark.parametrize("filters", [[("s", ">", 3)], [("x", "==", "1")], [("u", ">", "2020-01-02")]])
def test_parquet_filters_of_the_wrong_type_fail_when_the_read_is_built(tmp_path, filters):
    pdf = pd.DataFrame({"u": pd.date_range("2020-01-01", periods=4), "s": list("abcd"), "x": range(4)})
    pdf.to_parquet(tmp_path / "part.0.parquet")
    with pytest.raises(Exception):
        pd.read_parquet(tmp_path / "part.0.parquet", filters=filters)
    with pytest.raises(ValueError, match="do not apply to"):
        read_parquet(str(tmp_path), filters=filters)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_an_annotated_filter_is_not_pushed_into_a_read_without_them(tmp_path, n):
    import xsched
    from xsched.dataframe.planner import plan

    pdf = pd.DataFrame({"x": [1.0, np.nan, 3.0, 4.0, 5.0, 6.0], "n": range(6)})
    for i, part in enumerate(_split(pdf, n)):
        part.to_parquet(tmp_path / f"part.{i}.parquet", index=False)
    df = read_parquet(str(tmp_path))
    with xsched.annotate(resources={"GPU": 1}):
        filtered = df[df.x != 3]
    out = filtered.n + 1
    planned = plan(out._graph, out._keys())
    annotated = [k for layer in planned.layers.values() for k, task in layer.items()
                 if getattr(task, "annotations", {}).get("resources") == {"GPU": 1}]
    assert len(annotated) >= n  # (the filter's tasks, still run as asked)
    expected = pd.concat([pd.read_parquet(tmp_path / f"part.{i}.parquet") for i in range(n)])
    pd.testing.assert_series_equal(out.compute(), expected[expected.x != 3].n + 1)



@pytest.mark.parametrize("filters", [[("s", "not in", ["a"])], [("s", "not in", ["a", "b"])], [("s", "!=", "a")]])
@pytest.mark.parametrize("split_row_groups", [False, True])
def test_parquet_statistics_do_not_rule_out_missing_values(tmp_path, filters, split_row_groups):
    # (s's statistics: min == max == "a", and a null they leave out, which passes "not in")
    pq.write_table(pa.table({"x": [1.0, 2.0, 3.0], "s": pa.array(["a", None, "a"])}), str(tmp_path / "part.0.parquet"))
    pd.DataFrame({"x": [4.0, 5.0], "s": ["b", "c"]}).to_parquet(tmp_path / "part.1.parquet", index=False)
    expected = pd.concat([pd.read_parquet(tmp_path / f"part.{i}.parquet", filters=filters) for i in range(2)])
    got = read_parquet(str(tmp_path), filters=filters, split_row_groups=split_row_groups).compute()
    pd.testing.assert_frame_equal(got, expected)



@pytest.mark.parametrize("n", [1, 2])
def test_parquet_integer_and_boolean_columns_with_missing_values(tmp_path, n):
    # (as other writers than pandas leave them: int64 and bool with nulls, no pandas metadata)
    table = pa.table({"i": pa.array([1, None, 3, 4]), "b": pa.array([True, None, False, True]), "x": [1.0, 2, 3, 4]})
    for k, rows in enumerate(np.array_split(np.arange(4), n)):
        pq.write_table(table.take(rows), str(tmp_path / f"part.{k}.parquet"))
    files = sorted(glob.glob(str(tmp_path / "*.parquet")))
    expected = pd.concat([pd.read_parquet(f) for f in files])
    df = read_parquet(str(tmp_path))
    pd.testing.assert_frame_equal(df.compute(), expected)
    pd.testing.assert_frame_equal(df[["i"]].compute(), expected[["i"]])
    pd.testing.assert_series_equal(df[df.x > 1].b.compute(), expected[expected.x > 1].b)


def test_a_directory_of_key_value_folders_reads_as_pandas_reads_it(tmp_path):
    pd.DataFrame({"x": [1, 2], "p": [1, 2]}).to_parquet(tmp_path, partition_cols=["p"])
    got = xd.read_parquet(str(tmp_path)).compute()
    pd.testing.assert_frame_equal(got.reset_index(drop=True), pd.read_parquet(tmp_path))


def test_other_readers_name_the_folders_they_do_not_read(tmp_path):
    for p in (1, 2):
        (tmp_path / f"p={p}").mkdir()
        (tmp_path / f"p={p}" / "part.0.csv").write_text("x\n1\n")
    with pytest.raises(FileNotFoundError, match=r"its folders \(p=1, p=2\) are not read here.*glob"):
        xd.read_csv(str(tmp_path))


def test_a_directory_of_plain_folders_reads_their_files_as_pandas(tmp_path):
    """Folders that are not key=value ones, at any depth: their files in the order of their
    paths, as pandas (pyarrow's datasets) reads them."""
    pdf = pd.DataFrame({"k": range(8), "v": np.arange(8.0)})
    for i, name in enumerate(["c/p.parquet", "a/b/p.parquet", "b/x/y/p.parquet", "a/q.parquet"]):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        pdf.iloc[2 * i:2 * i + 2].to_parquet(tmp_path / name)
    got = xd.read_parquet(str(tmp_path))
    assert got.npartitions == 4  # (each file's stored index kept, as a flat directory's are)
    pd.testing.assert_frame_equal(got.compute().reset_index(drop=True), pd.read_parquet(tmp_path))
    pdf.iloc[:1].to_parquet(tmp_path / "top.parquet")  # (a file of its own beside the folders: all read)
    pd.testing.assert_frame_equal(xd.read_parquet(str(tmp_path)).compute().reset_index(drop=True),
                                  pd.read_parquet(tmp_path).reset_index(drop=True))
    (tmp_path / "_temporary" / "0").mkdir(parents=True)  # (skipped, as pyarrow skips _ and . folders)
    pdf.to_parquet(tmp_path / "_temporary" / "0" / "part.parquet")
    (tmp_path / "_delta_log").mkdir()
    (tmp_path / "_delta_log" / "0.json").write_text("{}")
    pd.testing.assert_frame_equal(xd.read_parquet(str(tmp_path)).compute().reset_index(drop=True),
                                  pd.read_parquet(tmp_path).reset_index(drop=True))
