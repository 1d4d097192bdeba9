"""Dataframe statistics, reshaping, operators and windows against pandas on small frames over
1, 2 and 3 partitions: constant columns, truth values, empty partitions, missing values."""

import numpy as np
import pandas as pd
import pytest

import xsched.dataframe as xd

PARTS = [1, 2, 3]


# --------------------------------------------------------------------------- statistics


@pytest.mark.parametrize("n", PARTS)
def test_corr_of_a_column_constant_over_the_pairs_rows_is_missing(n):
    # over the rows where both are present, "f" is 1.0 twice: no spread, so no correlation
    pdf = pd.DataFrame({"f": [np.nan, 0.0, 1.0, np.nan, 1.0], "g": [0.0, 2.0, np.nan, 1.0, 2.0]},
                       index=[3, 1, 4, 2, 0])
    pdf2 = pd.DataFrame({"a": [0.1] * 5, "b": np.arange(5.0)})
    for frame in (pdf, pdf2):
        df = xd.from_pandas(frame, npartitions=n, sort=False)
        pd.testing.assert_frame_equal(df.corr().compute(), frame.corr())
        x, y = frame.columns
        assert np.isnan(df[x].corr(df[y]).compute()) and np.isnan(frame[x].corr(frame[y]))


@pytest.mark.parametrize("n", PARTS)
def test_median_of_truth_values(n):
    pdf = pd.DataFrame({"b": [True, False, True, False], "n": pd.array([True, None, False, False], dtype="boolean"),
                        "x": [1.0, 2, 3, 4]})
    df = xd.from_pandas(pdf, npartitions=n)
    assert df.b.median().compute() == pdf.b.median() == 0.5
    assert df.n.median().compute() == pdf.n.median()
    pd.testing.assert_series_equal(df.median().compute(), pdf.median())
    # no truth value present: NA of nullable ones, as pandas (NaN of NumPy's)
    none = pd.DataFrame({"n": pd.array([None] * 4, dtype="boolean"), "x": [1.0, 2, 3, 4]})
    assert xd.from_pandas(none, npartitions=n).n.median().compute() is pd.NA is none.n.median()
    pd.testing.assert_series_equal(xd.from_pandas(none, npartitions=n).median().compute(), none.median())


# --------------------------------------------------------------------------- operators


@pytest.mark.parametrize("n", PARTS)
def test_named_operator_with_a_pandas_object_matched_by_label(n):
    pdf = pd.DataFrame({"x": [1.0, 2, None], "y": [4.0, None, 6]})
    df = xd.from_pandas(pdf, npartitions=n)
    other = pd.Series([1.0, 2, 3])
    if n == 1:
        pd.testing.assert_frame_equal(df.add(other, axis=0).compute(), pdf.add(other, axis=0))
        pd.testing.assert_series_equal(df.x.sub(other, fill_value=0).compute(), pdf.x.sub(other, fill_value=0))
    else:  # (each partition would meet all of other's rows: refused when built, not rows repeated)
        with pytest.raises(ValueError, match="matched to the rows by label"):
            df.add(other, axis=0)
        with pytest.raises(ValueError, match="matched to the rows by label"):
            df.x.sub(other, fill_value=0)
    # along the columns, a pandas Series is fine at any partitioning
    pd.testing.assert_frame_equal(df.sub(pd.Series({"x": 1, "y": 2})).compute(), pdf.sub(pd.Series({"x": 1, "y": 2})))


@pytest.mark.parametrize("n", PARTS)
def test_mode_keeps_object_dtype_and_takes_numeric_only(n):
    text = pd.Series(["b", "a", "b", "a", None], dtype=object)
    pd.testing.assert_series_equal(xd.from_pandas(text, npartitions=n).mode().compute(), text.mode())
    pdf = pd.DataFrame({"a": [1, 1, 2], "b": [1, 2, 3], "s": list("xyx")})
    df = xd.from_pandas(pdf, npartitions=n)
    pd.testing.assert_frame_equal(df.mode(numeric_only=True).compute(), pdf.mode(numeric_only=True))
    with pytest.raises(NotImplementedError, match="number of columns"):
        df.mode(axis=1)


@pytest.mark.parametrize("n", [1, 2])
def test_arithmetic_with_a_pandas_object_matched_by_row_label(n):
    """s + pandas Series matches rows by label: over several partitions each would meet all of
    them (the rows repeated), so it is refused when built; by columns it is partition-wise."""
    s = xd.from_pandas(pd.Series([1.0, 2, 3]), npartitions=n)
    other = pd.Series([10.0, 20, 30])
    frame = xd.from_pandas(pd.DataFrame({"a": [1, 2, 3], "b": [4, 5, 6]}), npartitions=n)
    if n == 1:
        pd.testing.assert_series_equal((s + other).compute(), pd.Series([11.0, 22, 33]))
    else:
        with pytest.raises(ValueError, match="matched to the rows by label"):
            s + other
        with pytest.raises(ValueError, match="matched to the rows by label"):
            frame - pd.DataFrame({"a": [1, 2, 3]})
    pd.testing.assert_frame_equal((frame + pd.Series({"a": 1, "b": 2})).compute(),
                                  pd.DataFrame({"a": [2, 3, 4], "b": [6, 7, 8]}))
