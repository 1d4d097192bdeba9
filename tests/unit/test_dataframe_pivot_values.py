"""``xd.pivot_table`` of several values, as pandas': a table per value side by side under its
name (columns ``(value, category)``), each aggfunc, fill_value and dropna (a row missing in
one value's table but not another's stays, as in pandas' one table)."""

import numpy as np
import pandas as pd
import pandas.testing as tm
import pytest

import xsched.dataframe as xd


@pytest.fixture
def pdf():
    return pd.DataFrame({"k": list("abcabd"), "c": pd.Categorical(list("xxyyxy")),
                         "v": [1.0, 2, 3, 4, np.nan, np.nan], "w": [5, 6, 7, 8, 9, 1]})


@pytest.mark.parametrize("aggfunc", ["sum", "mean", "count", "min", "max", "first", "last"])
@pytest.mark.parametrize("nparts", [1, 3])
def test_several_values_as_pandas(pdf, aggfunc, nparts):
    df = xd.from_pandas(pdf, npartitions=nparts)
    got = xd.pivot_table(df, index="k", columns="c", values=["v", "w"], aggfunc=aggfunc).compute()
    want = pd.pivot_table(pdf, index="k", columns="c", values=["v", "w"], aggfunc=aggfunc, observed=True)
    tm.assert_frame_equal(got, want)


def test_fill_value_and_order_of_values(pdf):
    df = xd.from_pandas(pdf, npartitions=2)
    got = xd.pivot_table(df, index="k", columns="c", values=("w", "v"), aggfunc="sum", fill_value=0).compute()
    want = pd.pivot_table(pdf, index="k", columns="c", values=["w", "v"], aggfunc="sum", fill_value=0,
                          observed=True)
    tm.assert_frame_equal(got, want)
    assert list(got.columns.get_level_values(0).unique()) == ["v", "w"]  # (pandas sorts them)
