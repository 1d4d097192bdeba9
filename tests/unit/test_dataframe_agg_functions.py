"""``agg`` with NumPy's and Python's functions that are reductions by name, and
``value_counts(bins=)``: computed in this process, against pandas."""

import numpy as np
import pandas as pd
import pytest

import xsched.dataframe as xd

PDF = pd.DataFrame({"a": [1.0, 2, 4, np.nan, 7, 3], "b": [3, 5, 9, 1, 2, 2]})


@pytest.mark.parametrize("func", [np.sum, np.mean, min, [np.min, max, "mean"], {"a": np.max, "b": [sum, np.prod]},
                                  [np.any, all]])
def test_agg_of_numpy_and_python_functions_as_pandas(func):
    df = xd.from_pandas(PDF, npartitions=3)
    want = PDF.agg(func)
    if isinstance(want, pd.DataFrame):
        pd.testing.assert_frame_equal(df.agg(func).compute(), want)
    else:
        pd.testing.assert_series_equal(df.agg(func).compute(), want)
    assert df.a.agg(np.max).compute() == PDF.a.agg(np.max)


def test_numpys_std_is_refused_naming_its_ddof():
    df = xd.from_pandas(PDF, npartitions=2)
    with pytest.raises(TypeError, match=r"np.std is NumPy's, with ddof=0; ask for .std\(ddof=0\)"):
        df.agg(np.std)
    with pytest.raises(TypeError, match=r"np.var is NumPy's"):
        df.b.agg(["sum", np.var])


@pytest.mark.parametrize("kwargs", [dict(bins=3), dict(bins=[0, 3, 10], normalize=True, sort=False),
                                    dict(bins=4, ascending=True), dict(bins=3, dropna=False, normalize=True),
                                    dict(bins=pd.IntervalIndex.from_breaks([0, 5, 10]))])
def test_value_counts_in_bins_as_pandas(kwargs):
    s = pd.Series([1.0, 2, 5, np.nan, 9, 9, 4, 4.5], name="b")
    x = xd.from_pandas(s, npartitions=3)
    pd.testing.assert_series_equal(x.value_counts(**kwargs).compute(), s.value_counts(**kwargs))


def test_value_counts_in_bins_refuses_text_when_built():
    with pytest.raises(TypeError, match="bins argument only works with numeric data"):
        xd.from_pandas(pd.Series(list("ab")), npartitions=1).value_counts(bins=2)
