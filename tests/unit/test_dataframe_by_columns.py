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
    pd.testing.assert_frame_equal(np.add(df, 1, dtype="float32").compute(), np.add(PDF, 1, dtype="float32"))
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


def test_methods_take_a_value_per_column_from_a_reduction(df):
    pd.testing.assert_frame_equal(df.fillna(df.mean()).compute(), PDF.fillna(PDF.mean()))
    pd.testing.assert_frame_equal(df.fillna(value=df.median()).compute(), PDF.fillna(value=PDF.median()))
    lo, hi = df.quantile(0.2), df.quantile(0.8)
    pd.testing.assert_frame_equal(df.clip(lo, hi, axis=1).compute(),
                                  PDF.clip(PDF.quantile(0.2), PDF.quantile(0.8), axis=1))
    pd.testing.assert_frame_equal(df.clip(upper=df.mean(), axis="columns").compute(),
                                  PDF.clip(upper=PDF.mean(), axis="columns"))
    pd.testing.assert_frame_equal(df.where(df > 2, df.max(), axis=1).compute(), PDF.where(PDF > 2, PDF.max(), axis=1))
    pd.testing.assert_frame_equal(df.mask(df > 2, other=df.min(), axis=1).compute(),
                                  PDF.mask(PDF > 2, other=PDF.min(), axis=1))
    pd.testing.assert_frame_equal(df[["a", "c"]].clip(df.c, axis=0).compute(),  # (rows: paired)
                                  PDF[["a", "c"]].clip(PDF.c, axis=0))
    if df.npartitions > 1:
        with pytest.raises(ValueError, match=r"fillna\(value=\.\.\.\): pandas matches a Series' labels to a "
                                             r"DataFrame's columns"):
            df.fillna(df.a)


def test_numpy_arrays_along_the_rows_are_refused_by_methods_when_built():
    df = xd.from_pandas(PDF, npartitions=2)
    rows = np.arange(6.0)
    for call in (lambda: df.a.where(df.a > 2, rows), lambda: df.clip(rows, axis=0), lambda: df.assign(c=rows),
                 lambda: df.a.between(rows, 10), lambda: df.mul(rows, axis=0), lambda: df.mask(df > 1, rows, axis=0)):
        with pytest.raises(ValueError, match=r"NumPy array of shape \(6,\) is matched to the rows by position"):
            call()
    pd.testing.assert_frame_equal(df.clip(np.array([2.0, 3, 0])).compute(), PDF.clip(np.array([2.0, 3, 0])))
    with pytest.raises(ValueError, match="a pandas Series is matched to the rows by label"):
        df.a.between(PDF.b, 10)
