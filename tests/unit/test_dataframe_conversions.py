"""Frames from functions and arrays, and frames as records, bags and tab-separated files:
from_map, from_array (NumPy and xsched arrays), to_records, to_bag, read_table, xd.compute."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import xsched.array as xa
import xsched.dataframe as xd


def _load(i, scale, offset=0):
    return pd.DataFrame({"i": [i] * 4, "v": np.arange(4) * scale + offset})


def test_from_map_calls_the_function_once_per_element():
    df = xd.from_map(_load, [1, 2, 3], args=(10,), offset=1)
    assert df.npartitions == 3 and list(df.columns) == ["i", "v"]
    want = pd.concat([_load(i, 10, 1) for i in (1, 2, 3)])
    pd.testing.assert_frame_equal(df.compute(), want)
    pairs = xd.from_map(lambda a, b: pd.DataFrame({"s": [a + b]}), [1, 2], [10, 20],
                        meta=pd.DataFrame({"s": pd.Series([], dtype="int64")}), divisions=[0, 1, 2])
    assert pairs.s.compute().tolist() == [11, 22] and pairs.known_divisions


def test_from_map_checks_each_partition_and_its_arguments():
    bad = xd.from_map(lambda i: pd.DataFrame({"a": [i]}) if i else pd.DataFrame({"b": [i]}), [1, 0])
    with pytest.raises(ValueError, match=r"partition 1 has columns \['b'\] but meta says \['a'\]"):
        bad.compute()
    with pytest.raises(ValueError, match="must be as long"):
        xd.from_map(_load, [1, 2], [3])
    with pytest.raises(TypeError, match="expected a function first"):
        xd.from_map([1, 2], _load)


@pytest.mark.parametrize("chunks", [(4, 3), (5, 1), ((3, 7), (2, 1))])
def test_from_xsched_array_as_pandas_frames_it(chunks):
    data = np.arange(30.0).reshape(10, 3)
    x = xa.from_array(data, chunks=chunks)
    df = xd.from_array(x, columns=["a", "b", "c"])
    assert df.npartitions == len(x.chunks[0])
    pd.testing.assert_frame_equal(df.compute(), pd.DataFrame(data, columns=["a", "b", "c"]))
    for i in range(df.npartitions):
        part = df.partitions[i].compute()
        assert df.divisions[i] == part.index[0] and part.index[-1] <= df.divisions[i + 1]
    s = xd.from_array(x[:, 1], columns="b")
    pd.testing.assert_series_equal(s.compute(), pd.Series(data[:, 1], name="b"))


def test_from_array_numpy_structured_and_masked():
    rec = np.array([(1, 2.0), (3, 4.0), (5, 6.0)], dtype=[("k", "i8"), ("w", "f8")])
    df = xd.from_array(rec, chunksize=2)
    assert df.npartitions == 2
    pd.testing.assert_frame_equal(df.compute(), pd.DataFrame(rec))
    x = xa.from_array(np.arange(10), chunks=5)
    masked = xd.from_array(x[x % 3 == 0])
    assert not masked.known_divisions and masked.compute().tolist() == [0, 3, 6, 9]
    with pytest.raises(ValueError, match="2 column names for an array of 3 columns"):
        xd.from_array(xa.ones((4, 3), chunks=2), columns=["a", "b"])
    with pytest.raises(ValueError, match="1-d or 2-d"):
        xd.from_array(np.ones((2, 2, 2)))


def test_to_records_and_to_bag_round_trip():
    pdf = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]}, index=[10, 20, 30])
    df = xd.from_pandas(pdf, npartitions=2)
    rec = df.to_records()
    np.testing.assert_array_equal(rec.compute(), pdf.to_records())
    assert df.to_bag().compute() == list(pdf.itertuples(index=False, name=None))
    assert xd.to_bag(df, index=True, format="dict").compute() == pdf.reset_index().to_dict(orient="records")
    assert df.a.to_bag().compute() == [1, 2, 3]
    with pytest.raises(ValueError, match="format must be 'tuple' or 'dict'"):
        df.to_bag(format="json")
    total, rows = xd.compute(df.a.sum(), df)
    assert total == 6 and rows.equals(pdf)


def test_read_table_reads_tabs_by_default(tmp_path):
    pdf = pd.DataFrame({"a": range(500), "b": [f"w {i}" for i in range(500)]})
    pdf.to_csv(tmp_path / "t.tsv", sep="\t", index=False)
    df = xd.read_table(str(tmp_path / "t.tsv"), blocksize=2000)
    assert df.npartitions > 1
    pd.testing.assert_frame_equal(df.compute().reset_index(drop=True), pdf)
