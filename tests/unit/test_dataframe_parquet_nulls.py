"""Integer and boolean parquet columns that hold missing values in some files only: read
as pandas reads the files together (float64 and object in every partition), from every
file's statistics; where those are not read (many files in a remote store) a partition
that holds one fails naming ``dtype_backend=``, instead of casting None to False."""

from __future__ import annotations

import pathlib

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import xsched.dataframe as xd
from xsched.dataframe import parquet


def _files(folder, *tables):
    folder.mkdir()
    for i, table in enumerate(tables):
        pq.write_table(table, folder / f"part.{i}.parquet")
    return str(folder)


def test_missing_values_in_a_later_file_are_read_as_pandas_reads_all_files(tmp_path):
    bools = _files(tmp_path / "b", pa.table({"b": [True, False]}), pa.table({"b": [None, True]}))
    ints = _files(tmp_path / "i", pa.table({"v": pa.array([10, 20], pa.int64())}),
                  pa.table({"v": pa.array([None, 30], pa.int64())}))
    for folder, col in ((bools, "b"), (ints, "v")):
        got = xd.read_parquet(folder)
        want = pd.concat([pd.read_parquet(f) for f in sorted(pathlib.Path(folder).glob("*.parquet"))],
                         ignore_index=True)
        assert got.dtypes.tolist() == want.dtypes.tolist()
        pd.testing.assert_frame_equal(got.compute().reset_index(drop=True), want)
    assert float(xd.read_parquet(ints).v.sum().compute()) == 60.0
    assert (xd.read_parquet(bools).b == False).sum().compute() == 1  # noqa: E712 (None is not False)


def test_xscheds_own_round_trip_of_booleans_with_missing_values(tmp_path):
    df = pd.DataFrame({"b": pd.Series([True, False, None, True], dtype=object)})
    xd.from_pandas(df, npartitions=2).to_parquet(str(tmp_path / "w"))
    assert xd.read_parquet(str(tmp_path / "w")).compute().b.tolist() == [True, False, None, True]


def test_a_file_whose_statistics_were_not_read_fails_naming_dtype_backend(monkeypatch):
    pytest.importorskip("fsspec")
    import fsspec

    fs = fsspec.filesystem("memory")
    for i, values in enumerate(([True, False], [None, True])):
        with fs.open(f"/nulls-later/part.{i}.parquet", "wb") as f:
            pq.write_table(pa.table({"b": values}), f)
    monkeypatch.setattr(parquet, "FOOTERS_READ_REMOTE", 0)
    with pytest.raises(ValueError, match=r"column 'b' of .*part.1.parquet is object, but the first file's is bool, "
                                         r"and it does not convert \(a missing value would become False\); "
                                         r"dtype_backend='numpy_nullable'"):
        xd.read_parquet("memory://nulls-later").compute()
    monkeypatch.undo()
    assert xd.read_parquet("memory://nulls-later").compute().b.tolist() == [True, False, None, True]
    fs.rm("/nulls-later", recursive=True)


def test_a_later_file_of_a_finer_time_unit_is_not_cut_to_the_first_files(tmp_path):
    first = pd.DataFrame({"t": pd.to_datetime(["2024-01-01 00:00:00.123"]).astype("datetime64[ms]")})
    finer = pd.DataFrame({"t": pd.to_datetime(["2024-01-01 00:00:00.123456"]).astype("datetime64[us]")})
    whole = pd.DataFrame({"t": pd.to_datetime(["2024-01-01 00:00:00.456"]).astype("datetime64[us]")})
    for name, later in (("cut", finer), ("whole", whole)):
        (tmp_path / name).mkdir()
        first.to_parquet(tmp_path / name / "part.0.parquet")
        later.to_parquet(tmp_path / name / "part.1.parquet")
    with pytest.raises(ValueError, match=r"the value 2024-01-01 00:00:00.123456 would become "
                                         r"2024-01-01 00:00:00.123000 \(the first file's unit, ms, is coarser\)"):
        xd.read_parquet(str(tmp_path / "cut")).compute()
    assert xd.read_parquet(str(tmp_path / "whole")).compute().t.tolist() == [
        pd.Timestamp("2024-01-01 00:00:00.123"), pd.Timestamp("2024-01-01 00:00:00.456")]
