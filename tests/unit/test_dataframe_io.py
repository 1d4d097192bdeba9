"""xsched.dataframe's files (csv.py, parquet.py, files.py) and demo data (demo.py), computed in
this process: every result is compared with what pandas reads from the same files."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

import xsched.dataframe as xd
from xsched.dataframe.csv import read_csv, to_csv
from xsched.dataframe.demo import NAMES, timeseries
from xsched.dataframe.parquet import read_parquet, to_parquet
from xsched.graph.delayed import Delayed
from xsched.graph.spec import Task

pq = pytest.importorskip("pyarrow.parquet")
fsspec = pytest.importorskip("fsspec")
memory = pytest.importorskip("fsspec.implementations.memory")


def _frame(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"id": np.arange(n) + 1000 * seed, "x": rng.normal(size=n).round(6),
                         "name": rng.choice(["a", "bb", "ccc, with comma", "dddd"], n)})


def _write_csvs(d, count=3, n=50) -> list[str]:
    paths = []
    for i in range(count):
        p = os.path.join(d, f"data.{i}.csv")
        _frame(n + 7 * i, seed=i).to_csv(p, index=False)
        paths.append(p)
    return paths


def _pandas_concat(paths, **kw) -> pd.DataFrame:
    return pd.concat([pd.read_csv(p, **kw) for p in paths])


# ---------------------------------------------------------------------- read_csv


def test_read_csv_glob_and_list_equal_pandas(tmp_path):
    paths = _write_csvs(tmp_path)
    df = read_csv(os.path.join(tmp_path, "*.csv"))
    assert df.npartitions == 3 and not df.known_divisions
    assert list(df.columns) == ["id", "x", "name"]
    pd.testing.assert_frame_equal(df.compute(), _pandas_concat(paths))
    listed = read_csv([paths[2], paths[0]])  # a list keeps its order
    pd.testing.assert_frame_equal(listed.compute(), _pandas_concat([paths[2], paths[0]]))
    assert df._meta.dtypes.to_dict() == pd.read_csv(paths[0]).dtypes.to_dict()


def test_glob_sorts_part_numbers_naturally(tmp_path):
    for i in (10, 2, 1):
        pd.DataFrame({"i": [i]}).to_csv(tmp_path / f"part.{i}.csv", index=False)
    assert read_csv(str(tmp_path / "part.*.csv")).i.compute().tolist() == [1, 2, 10]


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("trailing", [True, False])
@pytest.mark.parametrize("blocksize", [3, 37, 200, "1KiB"])
def test_blocksize_reads_every_row_once(tmp_path, newline, trailing, blocksize):
    paths = []
    for i in range(2):
        frame = _frame(60, seed=i)
        text = frame.to_csv(index=False, lineterminator=newline)
        if not trailing:
            text = text.rstrip("\r\n")
        p = tmp_path / f"f{i}.csv"
        p.write_bytes(text.encode())
        paths.append(str(p))
    df = read_csv(paths, blocksize=blocksize)
    got = df.compute()
    expected = _pandas_concat(paths)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), expected.reset_index(drop=True))
    assert sorted(got.id) == sorted(expected.id) and got.id.is_unique  # each row exactly once
    size = os.path.getsize(paths[0])
    if blocksize != "1KiB":
        assert df.npartitions >= 2 * (size // max(blocksize, 1)) > 2  # several partitions per file
    lengths = df.map_partitions(len).compute()
    assert lengths.sum() == len(expected)


def test_blocksize_block_inside_a_long_line_is_empty(tmp_path):
    p = tmp_path / "long.csv"
    p.write_text("a,b\n" + "1," + "x" * 100 + "\n2,y\n")
    df = read_csv(str(p), blocksize=10)
    parts = df.to_delayed()
    lengths = [len(d.compute()) for d in parts]
    assert sum(lengths) == 2 and 0 in lengths
    empty = parts[lengths.index(0)].compute()
    assert list(empty.columns) == ["a", "b"] and empty.dtypes.to_dict() == df._meta.dtypes.to_dict()


def test_dtype_mismatch_names_file_column_and_fix(tmp_path):
    good = tmp_path / "a.csv"
    bad = tmp_path / "b.csv"
    good.write_text("n,s\n1,x\n2,y\n")
    bad.write_text("n,s\n3,x\nabc,y\n")
    df = read_csv(str(tmp_path / "*.csv"))
    assert df._meta.n.dtype == np.int64
    with pytest.raises(ValueError) as info:
        df.compute()
    msg = str(info.value)
    assert "b.csv" in msg and "'n'" in msg and "dtype={'n': 'object'}" in msg and "'abc'" in msg
    assert read_csv(str(tmp_path / "*.csv"), dtype={"n": "object"}).n.compute().tolist() == ["1", "2", "3", "abc"]


@pytest.mark.parametrize("blocksize", [None, 40])
def test_a_file_lacking_a_column_read_is_named_with_its_columns(tmp_path, blocksize):
    """dask's messy-data notebook: one file of a glob lost its column ``y``; a read of the
    columns (``usecols``, or pushed by the planner for ``describe``) named pandas' "Usecols
    do not match columns", not the file's columns and the way out."""
    (tmp_path / "a.csv").write_text("x,y,z\n" + "1,2,3\n" * 20)
    (tmp_path / "b.csv").write_text("x,z\n" + "4,6\n" * 20)
    df = read_csv(str(tmp_path / "*.csv"), blocksize=blocksize)
    for expr in (df[["x", "y"]], df.describe(), read_csv(str(tmp_path / "*.csv"), usecols=["x", "y"])):
        with pytest.raises(ValueError, match=r"b.csv( \(bytes \d+-\d+\))? has columns \['x', 'z'\], .*the first .* "
                                             r"of .*a.csv had.*files read together must share their header"):
            expr.compute()
    assert read_csv(str(tmp_path / "*.csv"), usecols=["x", "z"]).x.sum().compute() == 20 + 80


def test_dtype_mismatch_later_in_one_file_with_blocksize_and_missing_ints(tmp_path):
    p = tmp_path / "one.csv"
    p.write_text("n,v\n" + "".join(f"{i},{i}.5\n" for i in range(200)) + ",1.0\n")
    df = read_csv(str(p), blocksize=500, sample=100)
    with pytest.raises(ValueError, match=r"column 'n' of .*one.csv \(bytes \d+-\d+\) has missing values.*"
                                         r"dtype=\{'n': 'float64'\}"):
        df.compute()
    got = read_csv(str(p), blocksize=500, sample=100, dtype={"n": "float64"}).compute()
    assert len(got) == 201 and got.n.isna().sum() == 1


def test_usecols_and_parse_dates(tmp_path):
    frame = pd.DataFrame({"when": pd.date_range("2001-02-03", periods=30, freq="h").astype(str),
                          "a": range(30), "b": np.arange(30) * 0.5, "c": list("xyz") * 10})
    p = tmp_path / "d.csv"
    frame.to_csv(p, index=False)
    df = read_csv(str(p), usecols=["when", "b"], parse_dates=["when"], blocksize=300)
    assert list(df.columns) == ["when", "b"] and df.npartitions > 1
    assert pd.api.types.is_datetime64_any_dtype(df._meta.when.dtype)
    expected = pd.read_csv(p, usecols=["when", "b"], parse_dates=["when"])
    pd.testing.assert_frame_equal(df.compute().reset_index(drop=True), expected)


def test_empty_files_give_empty_partitions(tmp_path):
    (tmp_path / "0.csv").write_text("a,b\n1,x\n")
    (tmp_path / "1.csv").write_text("")
    (tmp_path / "2.csv").write_text("a,b\n")
    df = read_csv(str(tmp_path / "*.csv"))
    parts = [d.compute() for d in df.to_delayed()]
    assert [len(p) for p in parts] == [1, 0, 0]
    assert all(list(p.columns) == ["a", "b"] and p.dtypes.to_dict() == df._meta.dtypes.to_dict() for p in parts)
    with pytest.raises(ValueError, match="names="):
        read_csv(str(tmp_path / "1.csv"))


def test_include_path_column_and_index_col(tmp_path):
    paths = _write_csvs(tmp_path, count=2, n=5)
    df = read_csv(paths, include_path_column=True, index_col="id")
    got = df.compute()
    assert got.index.name == "id" and isinstance(got.path.dtype, pd.CategoricalDtype)
    assert got.path.tolist() == [paths[0]] * 5 + [paths[1]] * 12
    pd.testing.assert_frame_equal(got.drop(columns="path"), _pandas_concat(paths, index_col="id"))


def test_missing_files_are_named_with_the_directory(tmp_path):
    (tmp_path / "here.csv").write_text("a\n1\n")
    with pytest.raises(FileNotFoundError,
                       match=r"no file matches '.*\*\.tsv' \(searched .*; it holds 1 entries: here.csv"):
        read_csv(str(tmp_path / "*.tsv"))
    with pytest.raises(FileNotFoundError, match=r"no such file '.*nope.csv' \(searched "):
        read_csv(str(tmp_path / "nope.csv"))
    with pytest.raises(FileNotFoundError, match="that directory does not exist"):
        read_csv(str(tmp_path / "nodir" / "*.csv"))


def test_compressed_csv_is_read_whole(tmp_path):
    frame = _frame(40)
    frame.to_csv(tmp_path / "z.csv.gz", index=False)
    df = read_csv(str(tmp_path / "z.csv.gz"), blocksize=100)
    assert df.npartitions == 1
    pd.testing.assert_frame_equal(df.compute(), frame)


def test_read_csv_tasks_carry_annotations(tmp_path):
    from xsched.graph.annotate import annotate

    paths = _write_csvs(tmp_path, count=2)
    with annotate(priority=5, resources={"IO": 1}):
        df = read_csv(paths, blocksize=300)
    tasks = [t for t in df.__xsched_graph__().values() if isinstance(t, Task)]
    assert tasks and all(t.annotations == {"priority": 5, "resources": {"IO": 1}} for t in tasks)
    assert len({id(t.annotations["resources"]) for t in tasks}) == len(tasks)  # none shared


# ---------------------------------------------------------------------- to_csv


def test_to_csv_read_csv_round_trip(tmp_path):
    frame = _frame(30)
    df = xd.from_pandas(frame, npartitions=3)
    paths = df.to_csv(str(tmp_path / "out"), index=False)
    assert [os.path.basename(p) for p in paths] == ["part.0.csv", "part.1.csv", "part.2.csv"]
    back = read_csv(str(tmp_path / "out" / "*.csv")).compute()
    pd.testing.assert_frame_equal(back.reset_index(drop=True), frame)

    star = to_csv(df, str(tmp_path / "star" / "p-*.csv"))
    assert [os.path.basename(p) for p in star] == ["p-0.csv", "p-1.csv", "p-2.csv"]
    back = read_csv(star, index_col=0).compute()
    pd.testing.assert_frame_equal(back, frame, check_names=False)

    single = df.x.to_csv(str(tmp_path / "one.csv"), single_file=True, index=False)
    assert single == [str(tmp_path / "one.csv")]
    assert pd.read_csv(single[0]).x.tolist() == frame.x.tolist()


def test_to_csv_compute_false_writes_nothing_until_computed(tmp_path):
    df = xd.from_pandas(_frame(10), npartitions=2)
    parts = to_csv(df, str(tmp_path / "lazy" / "*.csv"), compute=False)
    assert len(parts) == 2 and all(isinstance(p, Delayed) for p in parts)
    assert not list((tmp_path / "lazy").iterdir())
    assert parts[1].compute() == str(tmp_path / "lazy" / "1.csv")
    assert sorted(os.listdir(tmp_path / "lazy")) == ["1.csv"]


# ---------------------------------------------------------------------- parquet


def test_parquet_round_trip_with_index(tmp_path):
    frame = _frame(40).set_index("id")
    df = xd.from_pandas(frame, npartitions=4)
    paths = df.to_parquet(str(tmp_path / "pq"))
    assert [os.path.basename(p) for p in paths] == [f"part.{i}.parquet" for i in range(4)]
    back = read_parquet(str(tmp_path / "pq"))
    assert back.npartitions == 4 and back._meta.index.name == "id"
    assert back._meta.dtypes.to_dict() == frame.dtypes.to_dict()
    pd.testing.assert_frame_equal(back.compute(), frame)
    assert not back.known_divisions
    sorted_back = read_parquet(str(tmp_path / "pq"), index="id")  # the stored index's statistics
    assert sorted_back.divisions == df.divisions
    pd.testing.assert_frame_equal(sorted_back.compute(), frame)
    no_index = read_parquet(str(tmp_path / "pq"), index=False).compute()
    assert list(no_index.columns) == ["id", "x", "name"]
    with pytest.raises(ValueError, match="overwrite=True"):
        df.to_parquet(str(tmp_path / "pq"))
    xd.from_pandas(frame, npartitions=2).to_parquet(str(tmp_path / "pq"), overwrite=True)
    assert read_parquet(str(tmp_path / "pq")).npartitions == 2


def test_parquet_write_index_false_and_empty_partitions(tmp_path):
    frame = _frame(10)
    df = xd.from_pandas(frame, npartitions=3)
    df = df[df.id > 5]  # the first partitions are empty
    to_parquet(df, str(tmp_path / "pq"), write_index=False)
    back = read_parquet(str(tmp_path / "pq")).compute()
    pd.testing.assert_frame_equal(back.reset_index(drop=True), frame[frame.id > 5].reset_index(drop=True))


def _wide_file(fs, path: str, ncols: int = 20, nrows: int = 20_000) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({f"c{i}": rng.normal(size=nrows) for i in range(ncols)})
    with fs.open(path, "wb") as f:
        frame.to_parquet(f, index=False, compression=None)
    return frame


def test_parquet_columns_reads_fewer_bytes(counting_fs):
    frame = _wide_file(counting_fs, "/wide/data.parquet")
    CountingFileSystem.bytes_read = 0
    all_cols = read_parquet("countmem://wide/data.parquet").compute()
    everything = CountingFileSystem.bytes_read
    CountingFileSystem.bytes_read = 0
    two = read_parquet("countmem://wide/data.parquet", columns=["c3", "c17"])
    assert list(two.columns) == ["c3", "c17"]
    got = two.compute()
    some = CountingFileSystem.bytes_read
    pd.testing.assert_frame_equal(all_cols, frame)
    pd.testing.assert_frame_equal(got, frame[["c3", "c17"]])
    print(f"read_parquet bytes read: 20 columns {everything}, 2 columns {some}")
    assert everything > 20 * 8 * 20_000 * 0.9  # (the float64 data, uncompressed)
    assert some < everything / 5


def test_parquet_columns_errors_list_the_columns(tmp_path):
    _frame(5).to_parquet(tmp_path / "f.parquet")
    with pytest.raises(ValueError, match=r"no column 'nope': .*f.parquet has the columns \['id', 'x', 'name'\]"):
        read_parquet(str(tmp_path / "f.parquet"), columns=["x", "nope"])
    with pytest.raises(ValueError, match=r"filters name no column 'zz'"):
        read_parquet(str(tmp_path / "f.parquet"), filters=[("zz", ">", 1)])
    s = read_parquet(str(tmp_path / "f.parquet"), columns="x")
    assert isinstance(s, xd.Series) and s.compute().tolist() == _frame(5).x.tolist()


def _split_files(d, count=4, n=25) -> pd.DataFrame:
    frames = []
    for i in range(count):
        frame = pd.DataFrame({"k": np.arange(i * n, (i + 1) * n), "v": np.arange(n) * 1.5,
                              "g": [f"g{j % 3}" for j in range(n)]})
        pq.write_table(__import__("pyarrow").Table.from_pandas(frame, preserve_index=False),
                       os.path.join(d, f"part.{i}.parquet"), row_group_size=10)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def test_parquet_filters_skip_files_and_rows(tmp_path):
    full = _split_files(tmp_path)
    df = read_parquet(str(tmp_path), filters=[("k", ">=", 60)])
    assert df.npartitions == 2  # files 0 and 1 ruled out by their statistics
    expected = full[full.k >= 60]
    pd.testing.assert_frame_equal(df.compute().reset_index(drop=True), expected.reset_index(drop=True))
    ors = read_parquet(str(tmp_path), filters=[[("k", "<", 3)], [("k", ">", 97), ("g", "==", "g1")]],
                       columns=["v"])
    assert ors.npartitions == 2 and list(ors.columns) == ["v"]
    exp = full[(full.k < 3) | ((full.k > 97) & (full.g == "g1"))][["v"]]
    pd.testing.assert_frame_equal(ors.compute().reset_index(drop=True), exp.reset_index(drop=True))
    none = read_parquet(str(tmp_path), filters=[("k", ">", 10_000)])
    assert len(none.compute()) == 0 and list(none.columns) == ["k", "v", "g"]


def test_parquet_split_row_groups_and_divisions(tmp_path):
    full = _split_files(tmp_path)
    rg = read_parquet(str(tmp_path), split_row_groups=True)
    assert rg.npartitions == 4 * 3  # 25 rows in groups of 10
    pd.testing.assert_frame_equal(rg.compute().reset_index(drop=True), full)
    rgf = read_parquet(str(tmp_path), split_row_groups=True, filters=[("k", "in", [5, 55])], index="k")
    assert rgf.npartitions == 2 and rgf.divisions == (0, 50, 59)
    assert rgf.compute().index.tolist() == [5, 55]
    divided = read_parquet(str(tmp_path), index="k")
    assert divided.divisions == (0, 25, 50, 75, 99)
    assert divided.loc[30:31].compute().v.tolist() == [7.5, 9.0]
    overlapping = read_parquet([str(tmp_path / "part.0.parquet")] * 2, index="k")
    assert not overlapping.known_divisions


def test_parquet_tasks_read_files_in_a_glob(tmp_path):
    _split_files(tmp_path, count=2)
    (tmp_path / "_SUCCESS").write_text("")
    assert read_parquet(str(tmp_path)).npartitions == 2
    assert read_parquet(str(tmp_path / "*.parquet")).npartitions == 2


# ---------------------------------------------------------------------- memory:// URLs


@pytest.fixture
def memfs():
    fs = fsspec.filesystem("memory")
    root = "/xsched-io-test"
    try:
        yield fs, root
    finally:
        if fs.exists(root):
            fs.rm(root, recursive=True)


def test_memory_urls_csv_and_parquet(memfs):
    fs, root = memfs
    frame = _frame(33)
    for i, chunk in enumerate([frame.iloc[:10], frame.iloc[10:20], frame.iloc[20:]]):
        with fs.open(f"{root}/in/{i}.csv", "wb") as f:
            chunk.to_csv(f, index=False)
    df = read_csv(f"memory://{root}/in/*.csv", blocksize=200)
    assert df.npartitions > 3
    pd.testing.assert_frame_equal(df.compute().reset_index(drop=True), frame)
    written = df.to_csv(f"memory://{root}/out", index=False)
    assert written[0] == f"memory://{root}/out/part.0.csv"
    pd.testing.assert_frame_equal(read_csv(written).compute().reset_index(drop=True), frame)
    paths = xd.from_pandas(frame, npartitions=2).to_parquet(f"memory://{root}/pq")
    assert paths == [f"memory://{root}/pq/part.0.parquet", f"memory://{root}/pq/part.1.parquet"]
    pd.testing.assert_frame_equal(read_parquet(f"memory://{root}/pq", columns=["name", "id"]).compute(),
                                  frame[["name", "id"]])


# ---------------------------------------------------------------------- timeseries


def test_timeseries_divisions_and_columns():
    df = timeseries("2000-01-01", "2000-01-05", freq="10min", partition_freq="1D")
    assert df.npartitions == 4 and df.known_divisions
    assert df.divisions == tuple(pd.date_range("2000-01-01", "2000-01-04", freq="1D")) + (
        pd.Timestamp("2000-01-04 23:50"),)  # (the last row's time: "2000-01-05" has no row)
    assert df.dtypes.to_dict() == {"id": np.dtype("int64"), "name": pd.StringDtype(na_value=np.nan),
                                   "x": np.dtype("float64"), "y": np.dtype("float64")}
    got = df.compute()
    assert len(got) == 4 * 144 and got.index.is_monotonic_increasing and got.index.name == "timestamp"
    for i, part in enumerate(d.compute() for d in df.to_delayed()):
        last = i == df.npartitions - 1  # (the last division is closed, and is that partition's last row)
        assert (part.index >= df.divisions[i]).all()
        assert (part.index <= df.divisions[i + 1]).all() if last else (part.index < df.divisions[i + 1]).all()
    assert got.index[-1] == df.divisions[-1]
    for rule in ("1h", "6h", "1D", "2D"):  # (no bin past the last row)
        pd.testing.assert_frame_equal(df[["x", "y"]].resample(rule).mean().compute(),
                                      got[["x", "y"]].resample(rule).mean(), check_freq=False)
    assert got.x.between(-1, 1).all() and got.y.between(-1, 1).all() and set(got.name) <= set(NAMES)
    assert 900 < got.id.mean() < 1100


def test_timeseries_is_reproducible_per_partition():
    a = timeseries("2000-01-01", "2000-01-04", freq="1min", seed=3)
    b = timeseries("2000-01-01", "2000-01-04", freq="1min", seed=3)
    pd.testing.assert_frame_equal(a.compute(), b.compute())
    alone = timeseries("2000-01-01", "2000-01-04", freq="1min", seed=3).partitions[2].compute()
    pd.testing.assert_frame_equal(alone, a.compute().loc["2000-01-03":])
    other = timeseries("2000-01-01", "2000-01-04", freq="1min", seed=4).compute()
    assert not np.allclose(other.x.values, a.compute().x.values)
    cat = timeseries(end="2000-01-02", freq="1h", dtypes={"name": "category", "v": np.float32})
    assert isinstance(cat._meta.name.dtype, pd.CategoricalDtype) and cat._meta.v.dtype == np.float32
    with pytest.raises(ValueError, match="no generator for column 'b'"):
        timeseries(dtypes={"b": bool})


# ---------------------------------------------------------------------- a counting filesystem


class CountingFileSystem(memory.MemoryFileSystem):
    """memory:// that counts the bytes its files hand out (``countmem://``)."""

    protocol = "countmem"
    bytes_read = 0

    @classmethod
    def _strip_protocol(cls, path):
        if isinstance(path, str) and path.startswith("countmem://"):
            path = path[len("countmem://"):]
        return super()._strip_protocol(path)

    def _open(self, path, mode="rb", **kwargs):
        f = super()._open(path, mode, **kwargs)
        return _CountingFile(f) if "r" in mode else f


class _CountingFile:
    def __init__(self, f):
        self._f = f

    def read(self, n=-1):
        data = self._f.read(n)
        CountingFileSystem.bytes_read += len(data)
        return data

    def readinto(self, buf):
        n = self._f.readinto(buf)
        CountingFileSystem.bytes_read += n or 0
        return n

    def __getattr__(self, name):
        return getattr(self._f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.fixture
def counting_fs():
    fsspec.register_implementation("countmem", CountingFileSystem, clobber=True)
    fs = CountingFileSystem()
    try:
        yield fs
    finally:
        if fs.exists("/wide"):
            fs.rm("/wide", recursive=True)


def test_a_block_streams_from_its_file_the_lines_it_owns(tmp_path):
    """Blocks are parsed from the file as it streams (csv._Block), with the same lines as
    ``files.line_block`` gives and the header in front; every line in exactly one block."""
    import io
    import random

    import fsspec

    from xsched.dataframe import csv as C
    from xsched.files import line_block

    path = tmp_path / "x.csv"
    lines = [b"a,b\n"] + [f"{i},{'x' * (i % 7)}\n".encode() for i in range(300)]
    path.write_bytes(b"".join(lines))
    size = path.stat().st_size
    fs = fsspec.filesystem("file")
    rng = random.Random(0)
    for _ in range(50):
        blocksize = rng.randint(1, 400)
        got = []
        for start in range(0, size, blocksize):
            end = min(start + blocksize, size)
            with C._source(fs, str(path), start, end, lines[0], None) as src:
                with open(path, "rb") as f:
                    expected = line_block(f, start, end)
                if src is None:
                    assert not expected.strip()
                    continue
                assert not isinstance(src, io.BytesIO)  # (not read whole into memory first)
                text = src.read()
                assert text == lines[0] + expected
                got.append(text[len(lines[0]):])
        assert b"".join(got) == b"".join(lines)  # (the first block holds the file's own header line)


def test_read_csv_with_converters_parses_without_pandas_warning(tmp_path):
    import warnings

    pdf = pd.DataFrame({"a": range(6), "b": list("abcdef")})
    for i in range(2):
        pdf.to_csv(tmp_path / f"f{i}.csv", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (a dtype beside a converter made pandas warn in every partition)
        got = read_csv(str(tmp_path / "f*.csv"), converters={"b": str.upper}).compute()
    assert got.b.tolist() == list("ABCDEF") * 2


def test_to_parquet_refuses_options_pyarrow_refuses_when_built(tmp_path):
    df = xd.from_pandas(pd.DataFrame({"a": range(4), "b": list("xyxy")}), npartitions=2)
    with pytest.raises(TypeError, match=r"pyarrow refuses the option bogus=1, which it does not have"):
        df.to_parquet(tmp_path / "bogus", bogus=1)
    with pytest.raises(ValueError, match="compression='nope'"):
        df.to_parquet(tmp_path / "nope", compression="nope")
    assert not any((tmp_path / d).exists() for d in ("bogus", "nope"))  # (refused before anything is made)
    assert len(df.to_parquet(tmp_path / "ok", row_group_size=1)) == 2
    assert xd.read_parquet(tmp_path / "ok").a.sum().compute() == 6


@pytest.mark.parametrize("blocksize", [None, 300])
def test_read_csv_booleans_with_gaps_are_booleans_as_pandas_reads_them(tmp_path, blocksize):
    path = tmp_path / "flags.csv"
    pd.DataFrame({"b": pd.array([True, False, None, True] * 50, dtype="boolean"), "x": range(200),
                  "s": ["True", "a", None, "b"] * 50}).to_csv(path, index=False)
    want = pd.read_csv(path)
    assert want.b.dtype == object and want.b.iloc[0] is True  # (pandas: Python booleans, NaN in the gaps)
    df = read_csv(str(path), blocksize=blocksize)
    pd.testing.assert_frame_equal(df.compute().reset_index(drop=True), want)
    picked = df[df.b == True]  # noqa: E712  (pandas' comparison, pushed into the read)
    pd.testing.assert_frame_equal(picked.compute().reset_index(drop=True), want[want.b == True].reset_index(drop=True))
    asked = read_csv(str(path), blocksize=blocksize, dtype={"x": "float64"}).compute().reset_index(drop=True)
    pd.testing.assert_frame_equal(asked, pd.read_csv(path, dtype={"x": "float64"}))
    as_text = read_csv(str(path), blocksize=blocksize, dtype=str).compute().reset_index(drop=True)
    pd.testing.assert_frame_equal(as_text, pd.read_csv(path, dtype=str))


@pytest.mark.parametrize("write", ["to_parquet", "to_csv", "to_json", "to_csv_single"])
def test_a_folder_that_cannot_be_made_is_named_when_written(tmp_path, write):
    in_the_way = tmp_path / "a-file"
    in_the_way.write_text("not a folder")
    df = xd.from_pandas(_frame(6), npartitions=2)
    target = str(in_the_way / "out")
    call = {"to_parquet": lambda: df.to_parquet(target), "to_csv": lambda: df.to_csv(target),
            "to_json": lambda: df.to_json(target),
            "to_csv_single": lambda: df.to_csv(os.path.join(target, "one.csv"), single_file=True)}[write]
    with pytest.raises(NotADirectoryError, match=f"{write.replace('_single', '')}: cannot make the folder "
                                                 f"'.*a-file/out' to write into"):
        call()
    assert in_the_way.read_text() == "not a folder"


# ---------------------------------------------------------------------- names of written files, options


def test_writers_name_files_by_name_function(tmp_path):
    """dask's name_function: the tutorial writes a file per day with it (to_csv('data/*.csv',
    name_function=name)); the names are checked before anything is written."""
    frame = _frame(30)
    df = xd.from_pandas(frame, npartitions=3)
    day = lambda i: f"2000-01-{i + 1:02d}"  # noqa: E731
    paths = df.to_csv(str(tmp_path / "csv" / "*.csv"), name_function=day, index=False)
    assert sorted(os.listdir(tmp_path / "csv")) == ["2000-01-01.csv", "2000-01-02.csv", "2000-01-03.csv"]
    assert [os.path.basename(p) for p in paths] == sorted(os.listdir(tmp_path / "csv"))
    pd.testing.assert_frame_equal(read_csv(str(tmp_path / "csv" / "2000-*-*.csv")).compute().reset_index(drop=True),
                                  frame)
    df.to_json(str(tmp_path / "json" / "day-*.json"), name_function=day)
    assert sorted(os.listdir(tmp_path / "json")) == ["day-2000-01-01.json", "day-2000-01-02.json", "day-2000-01-03.json"]
    df.to_csv(str(tmp_path / "dir"), name_function=lambda i: f"f{i}.csv")  # (a directory: the whole file name)
    assert sorted(os.listdir(tmp_path / "dir")) == ["f0.csv", "f1.csv", "f2.csv"]

    names = [f"b{i}.parquet" for i in (2, 1, 0)]
    written = df.to_parquet(tmp_path / "pq", name_function=lambda i: names[i], write_index=False)
    assert sorted(os.path.basename(p) for p in written) == sorted(names)
    assert sorted(read_parquet(tmp_path / "pq").id.compute()) == frame.id.tolist()
    hive = df.to_parquet(tmp_path / "hive", partition_on="name", name_function=lambda i: f"n{i}.parquet")
    assert {os.path.basename(p) for p in hive} == {"n0.parquet", "n1.parquet", "n2.parquet"}

    with pytest.raises(ValueError, match=r"name_function must give a different str for each partition, gave "
                                         r"\['x', 'x', 'x'\]"):
        df.to_csv(str(tmp_path / "same" / "*.csv"), name_function=lambda i: "x")
    with pytest.raises(ValueError, match="each ending '.parquet'.*it gave 'p0.csv'"):
        df.to_parquet(tmp_path / "badpq", name_function=lambda i: f"p{i}.csv")
    with pytest.raises(ValueError, match="single_file=True writes one file"):
        df.to_csv(str(tmp_path / "one.csv"), single_file=True, name_function=day)
    assert not any((tmp_path / d).exists() for d in ("same", "badpq", "one.csv"))


def test_writer_options_pandas_refuses_fail_when_built(tmp_path):
    """An option pandas' writer does not take fails when the write is built, naming it (it
    failed in every worker's task before)."""
    df = xd.from_pandas(_frame(10), npartitions=2)
    with pytest.raises(TypeError, match=r"to_csv: pandas' to_csv refuses the option seperator=';', which it does "
                                        r"not have.*unexpected keyword argument 'seperator'"):
        df.to_csv(str(tmp_path / "a" / "*.csv"), seperator=";")
    with pytest.raises(TypeError, match="to_json: pandas' to_json refuses the option indnt=2.*'indnt'"):
        df.to_json(str(tmp_path / "b" / "*.json"), indnt=2)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    assert len(df.to_csv(str(tmp_path / "c" / "*.csv"), sep=";", columns=["x"])) == 2
    assert pd.read_csv(tmp_path / "c" / "1.csv", sep=";", index_col=0).columns.tolist() == ["x"]


def test_parquet_engine_is_pyarrow_by_any_of_its_names(tmp_path):
    df = xd.from_pandas(_frame(10), npartitions=2)
    df.to_parquet(tmp_path / "e", engine="pyarrow")
    assert read_parquet(tmp_path / "e", engine="pyarrow").id.sum().compute() == _frame(10).id.sum()
    assert read_parquet(tmp_path / "e", engine="auto").npartitions == 2
    for call in (lambda: read_parquet(tmp_path / "e", engine="fastparquet"),
                 lambda: df.to_parquet(tmp_path / "f", engine="fastparquet")):
        with pytest.raises(ValueError, match="engine='fastparquet' is not available; xsched reads and writes "
                                             "parquet with pyarrow"):
            call()


def test_to_csv_appends_with_mode_a_and_compresses_by_the_file_name(tmp_path):
    pdf = pd.DataFrame({"a": range(6), "b": list("abcdef")})
    df = xd.from_pandas(pdf, npartitions=2)
    one = str(tmp_path / "all.csv")
    df.to_csv(one, index=False, single_file=True)
    df.to_csv(one, index=False, single_file=True, mode="a", header=False)
    pd.testing.assert_frame_equal(pd.read_csv(one), pd.concat([pdf, pdf], ignore_index=True))
    df.to_csv(str(tmp_path / "p-*.csv"), index=False)
    df.to_csv(str(tmp_path / "p-*.csv"), index=False, mode="a", header=False)
    assert len(pd.read_csv(tmp_path / "p-0.csv")) == 6
    with pytest.raises(ValueError, match="mode must be 'w'.*or 'a'"):
        df.to_csv(str(tmp_path / "q-*.csv"), mode="x")
    df.to_csv(str(tmp_path / "z-*.csv.gz"), index=False)
    df.to_csv(str(tmp_path / "one.csv.bz2"), index=False, single_file=True)
    assert (tmp_path / "z-0.csv.gz").read_bytes()[:2] == b"\x1f\x8b"  # (gzip's magic number)
    pd.testing.assert_frame_equal(xd.read_csv(str(tmp_path / "z-*.csv.gz")).compute().reset_index(drop=True), pdf)
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "one.csv.bz2"), pdf)


def test_read_parquet_refuses_files_whose_values_the_first_files_dtype_would_change(tmp_path):
    for name, frames in (("cut", [pd.DataFrame({"a": [1, 2]}), pd.DataFrame({"a": [3.5, 4.5]})]),
                         ("wrapped", [pd.DataFrame({"a": np.array([1, 2], "int32")}),
                                      pd.DataFrame({"a": [3_000_000_000, -1]})]),
                         ("whole", [pd.DataFrame({"a": [1, 2]}), pd.DataFrame({"a": [3.0, 4.0]})])):
        (tmp_path / name).mkdir()
        for i, frame in enumerate(frames):
            frame.to_parquet(tmp_path / name / f"p{i}.parquet")
    with pytest.raises(ValueError, match=r"does not convert \(the value 3.5 would become 3\)"):
        xd.read_parquet(str(tmp_path / "cut")).compute()
    with pytest.raises(ValueError, match=r"the value 3000000000 would become -1294967296"):
        xd.read_parquet(str(tmp_path / "wrapped")).compute()
    assert xd.read_parquet(str(tmp_path / "whole")).compute().a.tolist() == [1, 2, 3, 4]


def test_read_parquet_columns_naming_the_stored_index_keep_it_the_index_as_pandas(tmp_path):
    path = str(tmp_path / "x.parquet")
    pdf = pd.DataFrame({"a": range(5), "b": list("abcde")}, index=pd.Index([10, 12, 11, 20, 30], name="ix"))
    pdf.to_parquet(path)
    pd.testing.assert_frame_equal(xd.read_parquet(path, columns=["ix", "a"]).compute(),
                                  pd.read_parquet(path, columns=["ix", "a"]))
    assert xd.read_parquet(path, columns=[]).compute().index.tolist() == [10, 12, 11, 20, 30]
    assert xd.read_parquet(path, columns=["ix"], index=False).compute().ix.tolist() == [10, 12, 11, 20, 30]
    with pytest.raises(ValueError, match="columns='ix' is the stored index"):
        xd.read_parquet(path, columns="ix")


def test_to_parquet_schema_infer_or_by_column_and_no_metadata_file(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    df = xd.from_pandas(pd.DataFrame({"a": range(6), "b": [1.5] * 6}), npartitions=2)
    df.to_parquet(str(tmp_path / "i"), schema="infer")
    assert xd.read_parquet(str(tmp_path / "i")).compute().b.dtype == np.float64
    df.to_parquet(str(tmp_path / "j"), schema={"b": pa.float32()})
    assert pq.read_schema(tmp_path / "j" / "part.0.parquet").field("b").type == pa.float32()
    assert xd.read_parquet(str(tmp_path / "j")).compute().b.tolist() == [1.5] * 6
    with pytest.raises(ValueError, match="no _metadata file is written here"):
        df.to_parquet(str(tmp_path / "k"), write_metadata_file=True)
    with pytest.raises(ValueError, match="no column 'zz'"):
        df.to_parquet(str(tmp_path / "k"), schema={"zz": pa.int8()})


def test_a_cast_between_signed_and_unsigned_that_wraps_is_refused_and_zip_is_not_appended(tmp_path):
    from xsched.dataframe.io import _unchanged

    with pytest.raises(ValueError, match="the value -1 would become 18446744073709551615"):
        _unchanged(pd.Series([-1]), pd.Series([-1]).astype("uint64"), np.dtype("uint64"))
    _unchanged(pd.Series([3]), pd.Series([3]).astype("uint64"), np.dtype("uint64"))
    df = xd.from_pandas(pd.DataFrame({"a": range(4)}), npartitions=2)
    with pytest.raises(ValueError, match="a zip or tar archive cannot be added to"):
        df.to_csv(str(tmp_path / "one.csv.zip"), single_file=True)


def test_read_parquet_file_extensions_and_a_given_filesystem(tmp_path):
    """``parquet_file_extension`` picks a directory's data files (None: all of them);
    ``filesystem=`` reads on an fsspec filesystem given, the local one as the local disk."""
    fsspec = pytest.importorskip("fsspec")
    pdf = pd.DataFrame({"k": [1, 2, 1, 2, 1, 2], "v": np.arange(6.0)})
    pdf.iloc[:3].to_parquet(tmp_path / "a.data")
    pdf.iloc[3:].to_parquet(tmp_path / "b.data")
    (tmp_path / "notes.txt").write_text("not parquet")
    got = xd.read_parquet(str(tmp_path), parquet_file_extension=(".data",))
    assert got.npartitions == 2
    pd.testing.assert_frame_equal(got.compute(), pdf)
    with pytest.raises(ValueError, match="notes.txt is not a parquet file"):
        xd.read_parquet(str(tmp_path), parquet_file_extension=None)
    with pytest.raises(TypeError, match="parquet_file_extension takes a file ending"):
        xd.read_parquet(str(tmp_path), parquet_file_extension=3)
    memory = fsspec.filesystem("memory")
    with memory.open("/xsched-test/x.parquet", "wb") as f:
        pdf.to_parquet(f)
    try:
        pd.testing.assert_frame_equal(xd.read_parquet("/xsched-test/x.parquet", filesystem=memory).compute(), pdf)
    finally:
        memory.rm("/xsched-test", recursive=True)
    local = xd.read_parquet(str(tmp_path / "a.data"), filesystem=fsspec.filesystem("file"))
    pd.testing.assert_frame_equal(local.compute(), pdf.iloc[:3])
    with pytest.raises(TypeError, match="filesystem= takes an fsspec filesystem"):
        xd.read_parquet(str(tmp_path), filesystem="arrow")


def test_csv_times_finer_than_the_first_files_are_not_cut_off(tmp_path):
    """A later file whose times need a finer unit than the first file's: an error naming the
    file, the column, the value and the fix (which works), not times cut to the coarser unit;
    finer-unit text of whole values converts as before."""
    (tmp_path / "a.csv").write_text("t,v\n2024-01-01 00:00:00,1\n2024-01-02 00:00:00,2\n")
    (tmp_path / "b.csv").write_text("t,v\n2024-01-03 00:00:00.123456789,3\n")
    with pytest.raises(ValueError, match=r"b.csv is datetime64\[ns\].*would become.*leave it out of parse_dates"):
        read_csv(str(tmp_path / "*.csv"), parse_dates=["t"]).compute()
    got = read_csv(str(tmp_path / "*.csv")).t.astype("datetime64[ns]").compute()
    assert got.tolist() == [pd.Timestamp(v) for v in ("2024-01-01", "2024-01-02", "2024-01-03 00:00:00.123456789")]
    (tmp_path / "b.csv").write_text("t,v\n2024-01-03 00:00:00.000000000,3\n")
    assert read_csv(str(tmp_path / "*.csv"), parse_dates=["t"]).compute().t.iloc[-1] == pd.Timestamp("2024-01-03")
    (tmp_path / "a.csv").write_text("t,v\n2024-01-01 00:00:00+00:00,1\n")  # (with a zone too)
    (tmp_path / "b.csv").write_text("t,v\n2024-01-01 00:00:00.000000500+00:00,2\n")
    with pytest.raises(ValueError, match=r"datetime64\[ns, UTC\].*astype\('datetime64\[ns, UTC\]'\)"):
        read_csv(str(tmp_path / "*.csv"), parse_dates=["t"]).compute()


def test_csv_index_of_times_finer_than_the_first_files_is_not_cut_off(tmp_path):
    """The same for an index of times (index_col): it was cast to the first file's unit
    quietly; the fix the error gives works (set_index on nanosecond times included)."""
    (tmp_path / "a.csv").write_text("t,v\n2024-01-01 00:00:00,1\n")
    (tmp_path / "b.csv").write_text("t,v\n2024-01-03 00:00:00.123456789,3\n")
    with pytest.raises(ValueError, match=r"the index 't' of .*b.csv is datetime64\[ns\], not datetime64\[us\].*"
                                         r"would become.*astype\('datetime64\[ns\]'\), then set_index it"):
        read_csv(str(tmp_path / "*.csv"), parse_dates=["t"], index_col="t").compute()
    df = read_csv(str(tmp_path / "*.csv"))
    got = df.assign(t=df.t.astype("datetime64[ns]")).set_index("t").compute()
    assert got.index.tolist() == [pd.Timestamp("2024-01-01"), pd.Timestamp("2024-01-03 00:00:00.123456789")]


def test_read_parquet_on_a_pyarrow_filesystem(tmp_path):
    """filesystem= takes pyarrow's filesystems as pandas does: its local one reads the local
    disk, another (here a sub-tree of the local disk) reads through fsspec's wrapper of it."""
    import pyarrow.fs as pafs

    pdf = pd.DataFrame({"a": range(6), "b": list("abcdef")})
    (tmp_path / "sub").mkdir()
    pdf.iloc[:3].to_parquet(tmp_path / "sub" / "p0.parquet")
    pdf.iloc[3:].to_parquet(tmp_path / "sub" / "p1.parquet")
    local = xd.read_parquet(str(tmp_path / "sub"), filesystem=pafs.LocalFileSystem())
    pd.testing.assert_frame_equal(local.compute().reset_index(drop=True), pdf)
    tree = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    got = xd.read_parquet("sub", filesystem=tree)
    assert got.npartitions == 2
    pd.testing.assert_frame_equal(got.compute().reset_index(drop=True), pd.read_parquet("sub", filesystem=tree))
