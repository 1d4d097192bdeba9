"""``where`` and ``mask`` give every partition the meta's dtypes: pandas keeps int64 where
nothing was replaced and gives float64 where something was, so partitions disagreed, and a
shuffle on such a column hashed 3 and 3.0 apart (one group came back twice)."""

import pandas as pd
import pandas.testing as tm

import xsched.dataframe as xd


def test_every_partition_in_the_metas_dtype_and_groups_whole():
    pdf = pd.DataFrame({"k": [1, 2, 3, 2, 3, 1], "v": [1.0, 2, 3, 4, 5, 6], "b": [True, False] * 3})
    df = xd.from_pandas(pdf, npartitions=3)
    w = df.k.where(df.k != 2)
    assert w.dtype == "float64"
    assert {str(w.partitions[i].compute().dtype) for i in range(3)} == {"float64"}
    got = df.assign(k=w).groupby("k").apply(lambda g: g.v.sum()).compute().sort_index()
    tm.assert_series_equal(got, pdf.assign(k=pdf.k.where(pdf.k != 2)).groupby("k").apply(lambda g: g.v.sum()))
    m = df.mask(df.v > 4)
    for i in range(3):
        assert m.partitions[i].compute().dtypes.to_dict() == m.dtypes.to_dict()
    tm.assert_frame_equal(m.compute(), pdf.mask(pdf.v > 4))
    kept = df.k.where(df.k > 1, 0)  # (an integer other: int64 throughout, as pandas)
    assert kept.dtype == "int64" and kept.compute().tolist() == pdf.k.where(pdf.k > 1, 0).tolist()


def test_a_column_named_key_is_a_column():
    """(Taking a collection for a client's future asked it for ``.key``, which selected the
    column and recursed.)"""
    pdf = pd.DataFrame({"key": ["a", "b"], "v": [1, 2]})
    df = xd.from_pandas(pdf, npartitions=1)
    assert int(df.v.sum().compute()) == 3
    assert df["key"].compute().tolist() == ["a", "b"]
    tm.assert_frame_equal(df[df.v > 1].compute(), pdf[pdf.v > 1])
    assert df.merge(df, on="key").compute().shape == (2, 3)
