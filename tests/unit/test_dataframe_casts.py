"""Casts of text columns to numbers and dates (``astype``) build whatever the stand-in's
made-up text would do (the dtypes come from the empty frame's own cast), and arguments pandas'
own methods refuse fail when built with pandas' exception type, naming the method."""

import pandas as pd
import pytest

import xsched.dataframe as xd

PDF = pd.DataFrame({"n": ["1", "20", "300"], "f": ["1.5", "2", "nan"], "t": ["2024-01-01", "2024-02-01", "2024-03-05"]})


@pytest.mark.parametrize("dtype", [int, "int64", "Int64", "float32"])
def test_numbers_held_as_text_cast_as_pandas_casts_them(dtype):
    df = xd.from_pandas(PDF, npartitions=2)
    pd.testing.assert_series_equal(df.n.astype(dtype).compute(), PDF.n.astype(dtype))
    pd.testing.assert_frame_equal(df.astype({"n": dtype, "f": float}).compute(), PDF.astype({"n": dtype, "f": float}))


def test_dates_held_as_text_cast_to_datetimes():
    df = xd.from_pandas(PDF, npartitions=2)
    out = df.t.astype("datetime64[ns]")
    assert out.dtype == "datetime64[ns]"
    pd.testing.assert_series_equal(out.compute(), PDF.t.astype("datetime64[ns]"))


def test_a_cast_pandas_refuses_fails_when_built_with_pandas_exception():
    df = xd.from_pandas(PDF, npartitions=2)
    with pytest.raises(TypeError, match=r"astype: pandas refuses Series.astype with these .*data type 'nonsense'"):
        df.n.astype("nonsense")
    with pytest.raises(KeyError, match="astype: pandas refuses DataFrame.astype with these arguments"):
        df.astype({"missing": int})


def test_pandas_own_methods_refusing_their_arguments_say_so():
    df = xd.from_pandas(PDF.assign(x=[1.0, 2.0, 3.0]), npartitions=2)
    with pytest.raises(TypeError, match=r"isin: pandas refuses Series.isin with these arguments .*list-like"):
        df.x.isin(3)
    with pytest.raises(KeyError, match=r"dropna: pandas refuses DataFrame.dropna with these arguments"):
        df.dropna(subset=["missing"])
