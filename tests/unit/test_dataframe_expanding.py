"""``expanding`` across partitions against pandas: count, min and max exactly, the sums and
moments to rounding, on random gaps, values, partitionings and min_periods."""

import warnings

import numpy as np
import pandas as pd
import pandas.testing as tm
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xsched.dataframe as xd

EXACT = ("count", "min", "max")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.floats(-1e3, 1e3, allow_subnormal=False)), st.integers(-5, 5)),
                min_size=1, max_size=30),
       st.integers(1, 6), st.integers(0, 4),
       st.sampled_from(["count", "sum", "mean", "min", "max", "var", "std"]))
def test_expanding_across_partitions_like_pandas(rows, n, min_periods, stat):
    pdf = pd.DataFrame({"a": [r[0] for r in rows], "i": [r[1] for r in rows]}).astype({"a": "float64"})
    df = xd.from_pandas(pdf, npartitions=min(n, len(rows)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = getattr(pdf.expanding(min_periods=min_periods), stat)()
    got = getattr(df.expanding(min_periods=min_periods), stat)()
    # (the sums and moments add in another order than pandas' compensated ones: equal to rounding,
    # which near-cancelling values make absolute; any mistake of the merging is far larger)
    tm.assert_frame_equal(got.compute(), expected, check_exact=stat in EXACT, rtol=1e-7, atol=1e-6)
    tm.assert_series_equal(getattr(df.a.expanding(min_periods=min_periods), stat)().compute(), expected.a,
                           check_exact=stat in EXACT, rtol=1e-7, atol=1e-6)


def test_expanding_var_and_std_take_ddof():
    pdf = pd.DataFrame({"a": np.random.default_rng(0).normal(size=20)})
    df = xd.from_pandas(pdf, npartitions=4)
    tm.assert_frame_equal(df.expanding().var(ddof=0).compute(), pdf.expanding().var(ddof=0), rtol=1e-12)
    tm.assert_frame_equal(df.expanding(min_periods=2).std(ddof=2).compute(),
                          pdf.expanding(min_periods=2).std(ddof=2), rtol=1e-12)


def test_expanding_refuses_what_it_does_not_run_when_built():
    df = xd.from_pandas(pd.DataFrame({"a": [1.0, 2.0], "s": ["x", "y"]}), npartitions=2)
    with pytest.raises(Exception, match="non-numeric|numeric"):  # (pandas' own refusal, when built)
        df.expanding().sum()
    with pytest.raises(AttributeError, match=r"no 'median' across partitions.*part.expanding\(\).median\(\)"):
        df.a.expanding().median()
    with pytest.raises(ValueError, match="min_periods must be an int"):
        df.a.expanding(min_periods=-1)
    with pytest.raises(NotImplementedError, match="axis=1"):
        df.expanding(axis=1)


def test_only_the_moments_take_ddof():
    s = xd.from_pandas(pd.Series([1.0, 2.0]), npartitions=1)
    with pytest.raises(TypeError, match="expanding\\(\\).sum\\(\\) takes no ddof"):
        s.expanding().sum(ddof=0)
