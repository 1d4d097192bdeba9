"""A DataFrame with a Series of one value per column (``df - df.mean()``, pandas' rule of
matching the Series' labels to the columns), NumPy's element-wise functions on collections,
and pandas or NumPy objects on the left of an operator: computed in this process, each
against pandas."""

import numpy as np
import pandas as pd
import pytest

import xsched.dataframe as xd
from xsched.dataframe.core import DataFrame, Series

PDF = pd.DataFrame({"a": [1.0, 4.0, np.nan, 2.0, 8.0, 5.0], "b": np.arange(6) * 3, "c": np.linspace(-1, 1, 6)})


@pytest.fixture(params=[1, 2, 3])
def df(request):
    return xd.from_pandas(PDF, npartitions=request.param)


def test_a_reduction_is_set_against_every_partition_by_column(df):
    pd.testing.assert_frame_equal(((df - df.mean()) / df.std()).compute(), (PDF - PDF.mean()) / PDF.std())
    pd.testing.assert_frame_equal((df == df.max()).compute(), PDF == PDF.max())
    pd.testing.assert_frame_equal((df.max() - df).compute(), PDF.max() - PDF)
    pd.testing.assert_frame_equal(df.div(df.sum()).compute(), PDF.div(PDF.sum()))
    pd.testing.assert_frame_equal(df.sub(df.mean(), axis="columns", fill_value=0).compute(),
                                  PDF.sub(PDF.mean(), axis="columns", fill_value=0))
    pd.testing.assert_frame_equal(df.lt(df.median(), axis=1).compute(), PDF.lt(PDF.median(), axis=1))


def test_a_series_of_rows_against_the_columns_is_refused_naming_axis_0():
    df = xd.from_pandas(PDF, npartitions=2)
    for call in (lambda: df + df.a, lambda: df.a * df, lambda: df.add(df.a)):
        with pytest.raises(ValueError, match=r"2 partitions of rows; to match rows by label, df\.\w+\(s, axis=0\)"):
            call()
    pd.testing.assert_frame_equal(df.add(df.a, axis=0).compute(), PDF.add(PDF.a, axis=0))


def test_a_one_partition_series_whose_labels_are_not_the_columns_fails_naming_them():
    df = xd.from_pandas(PDF, npartitions=2)
    other = xd.from_pandas(pd.Series([1.0, 2.0], index=["a", "z"]), npartitions=1)
    out = df + other
    assert list(out.columns) == ["a", "b", "c"]
    with pytest.raises(ValueError, match=r"has the labels \['a', 'z'\], not its columns \['a', 'b', 'c'\]"):
        out.compute()


def test_numpy_elementwise_functions_stay_lazy_and_match_pandas(df):
    for got, want in ((np.sin(df), np.sin(PDF)), (np.float32(2) * df, np.float32(2) * PDF),
                      (np.maximum(df, 2.0), np.maximum(PDF, 2.0)), (np.array([1.0, 2.0, 3.0]) + df,
                                                                      np.array([1.0, 2.0, 3.0]) + PDF)):
        assert isinstance(got, DataFrame)
        pd.testing.assert_frame_equal(got.compute(), want)
    assert isinstance(np.log1p(df.b), Series)
    pd.testing.assert_series_equal(np.log1p(df.b).compute(), np.log1p(PDF.b))
    pd.testing.assert_series_equal((np.int64(3) - df.b).compute(), np.int64(3) - PDF.b)


def test_numpy_arrays_along_the_rows_and_other_ufunc_methods_are_refused(df):
    with pytest.raises(ValueError, match=r"NumPy array of shape \(6,\) is matched to the rows by position"):
        np.arange(6) + df.b
    with pytest.raises(ValueError, match=r"NumPy array of shape \(6,\) is matched to the rows by position"):
        df.b + np.arange(6)
    with pytest.raises(ValueError, match=r"NumPy array of shape \(6, 3\)"):
        df * np.ones((6, 3))
    with pytest.raises(TypeError, match=r"numpy's add\.reduce does not run on an xsched DataFrame"):
        np.add.reduce(df)


def test_pandas_objects_on_the_left_defer_to_the_collection(df):
    row = pd.Series({"a": 1.0, "b": 2, "c": -1.0})
    pd.testing.assert_frame_equal((row + df).compute(), row + PDF)
    pd.testing.assert_frame_equal((row < df).compute(), row < PDF)
    if df.npartitions > 1:
        with pytest.raises(ValueError, match="a pandas DataFrame is matched to the rows by label"):
            PDF + df
    else:
        pd.testing.assert_frame_equal((PDF + df).compute(), PDF + PDF)
