"""Keywords given to ``agg`` beside reductions named, as pandas passes them: to a frame's or
Series' reductions (``agg("std", ddof=0)``; a dict of them leaves them out, as pandas'), and
to a grouping's method (``groupby(k).v.agg("sum", min_count=2)``); a reduction that does
not take them is refused naming them."""

import numpy as np
import pandas as pd
import pandas.testing as tm
import pytest

import xsched.dataframe as xd


@pytest.fixture
def pdf():
    return pd.DataFrame({"k": list("aabb"), "a": [1.0, np.nan, 3, 4], "b": [2.0, 5, 1, 0]})


def test_a_frames_and_a_series_reductions_take_keywords(pdf):
    df = xd.from_pandas(pdf, npartitions=2)
    assert float(df.a.agg("std", ddof=0).compute()) == pytest.approx(pdf.a.agg("std", ddof=0))
    tm.assert_frame_equal(df[["a", "b"]].agg(["std", "var"], ddof=0).compute(),
                          pdf[["a", "b"]].agg(["std", "var"], ddof=0))
    tm.assert_series_equal(df.agg({"a": "std"}, ddof=0).compute(), pdf.agg({"a": "std"}, ddof=0))
    with pytest.raises(TypeError, match=r"agg: the reduction 'sum' does not take \['ddof'\]"):
        df.a.agg(["sum", "std"], ddof=0)


def test_a_groupings_method_takes_its_keywords(pdf):
    df = xd.from_pandas(pdf, npartitions=2)
    tm.assert_series_equal(df.groupby("k").a.agg("sum", min_count=2).compute(),
                           pdf.groupby("k").a.agg("sum", min_count=2))
    tm.assert_frame_equal(df.groupby("k").agg("mean", numeric_only=True).compute(),
                          pdf.groupby("k").agg("mean", numeric_only=True))
    with pytest.raises(TypeError, match="has none of that name"):
        df.groupby("k").agg("nosuch", min_count=1)
