"""A large file does not silently become one partition that must fit a worker's memory: a
parquet file is cut into runs of row groups (``split_row_groups="infer"`` and ``blocksize``,
or a number of row groups per partition), every row once, in order; a large CSV file read
whole (quoted fields may hold newlines, so it is not cut unless asked) is named in a warning
when the read is built."""

import gzip
import warnings

import numpy as np
import pandas as pd
import pandas.testing as tm
import pytest

import xsched.dataframe as xd

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _one_file(path, rows=2000, row_group_size=100):
    df = pd.DataFrame({"k": np.arange(rows), "v": np.arange(rows) * 0.5, "g": np.arange(rows) % 7})
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path, row_group_size=row_group_size)
    return df, pq.ParquetFile(path).metadata


def test_a_file_larger_than_blocksize_is_cut_into_runs_of_row_groups(tmp_path):
    df, md = _one_file(tmp_path / "big.parquet")
    group = md.row_group(0).total_byte_size
    x = xd.read_parquet(str(tmp_path / "big.parquet"), blocksize=3 * group)
    assert x.npartitions == -(-md.num_row_groups // 3)  # (three row groups of equal size per partition)
    tm.assert_frame_equal(x.compute().reset_index(drop=True), df)
    whole = xd.read_parquet(str(tmp_path / "big.parquet"))  # (256 MiB: far more than this file)
    assert whole.npartitions == 1
    assert xd.read_parquet(str(tmp_path / "big.parquet"), blocksize=None).npartitions == 1


def test_runs_keep_divisions_filters_and_columns(tmp_path):
    df, md = _one_file(tmp_path / "big.parquet")
    group = md.row_group(0).total_byte_size
    x = xd.read_parquet(str(tmp_path / "big.parquet"), index="k", blocksize=4 * group)
    assert x.divisions == (0, 400, 800, 1200, 1600, 1999)
    assert x.loc[805:806].compute().v.tolist() == [402.5, 403.0]
    kept = xd.read_parquet(str(tmp_path / "big.parquet"), blocksize=4 * group, filters=[("k", ">=", 1750)])
    assert kept.npartitions == 1  # (the statistics rule out every other row group)
    tm.assert_frame_equal(kept.compute().reset_index(drop=True), df[df.k >= 1750].reset_index(drop=True))
    some = xd.read_parquet(str(tmp_path / "big.parquet"), columns=["v"], blocksize=4 * group)
    assert some.npartitions == 5
    tm.assert_series_equal(some.v.compute().reset_index(drop=True), df.v)


@pytest.mark.parametrize("n, parts", [(True, 20), (1, 20), (3, 7), (20, 1), (False, 1)])
def test_a_number_of_row_groups_per_partition(tmp_path, n, parts):
    df, _ = _one_file(tmp_path / "big.parquet")
    x = xd.read_parquet(str(tmp_path / "big.parquet"), split_row_groups=n)
    assert x.npartitions == parts
    tm.assert_frame_equal(x.compute().reset_index(drop=True), df)


def test_bad_cutting_options_are_refused_when_built(tmp_path):
    _one_file(tmp_path / "big.parquet")
    with pytest.raises(ValueError, match="split_row_groups='rows'"):
        xd.read_parquet(str(tmp_path / "big.parquet"), split_row_groups="rows")
    with pytest.raises(ValueError, match="blocksize=0 must be positive"):
        xd.read_parquet(str(tmp_path / "big.parquet"), blocksize=0)


def _csv(path, rows):
    path.write_text("x,y\n" + "".join(f"{i},{i * 2}\n" for i in range(rows)))


def test_a_large_csv_file_read_whole_is_named_in_a_warning(tmp_path, monkeypatch):
    import xsched.dataframe.csv as csv

    monkeypatch.setattr(csv, "LARGE_FILE", 1000)
    _csv(tmp_path / "big.csv", 500)
    _csv(tmp_path / "small.csv", 5)
    with pytest.warns(UserWarning, match=r"big\.csv is .* MiB and is read whole.*\(1 such file\).*blocksize="):
        df = xd.read_csv(str(tmp_path / "*.csv"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (computing it, the planner's narrower read, says nothing more)
        assert df.x.sum().compute() == sum(range(500)) + sum(range(5))
        assert xd.read_csv(str(tmp_path / "big.csv"), blocksize=1000).npartitions > 1
        with gzip.open(tmp_path / "big.csv.gz", "wt") as f:  # (a compressed file cannot be cut)
            f.write((tmp_path / "big.csv").read_text())
        xd.read_csv(str(tmp_path / "big.csv.gz"))
