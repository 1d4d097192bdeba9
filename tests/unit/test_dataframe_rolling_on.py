"""``rolling(window, on=column)`` as pandas': a time window runs along a column of times
instead of the index (which may be anything), across partition boundaries, windows longer
than a partition and empty partitions included; a count window keeps the column as it is."""

import numpy as np
import pandas as pd
import pandas.testing as tm
import pytest

import xsched.dataframe as xd


@pytest.fixture
def pdf():
    rng = np.random.default_rng(0)
    gaps = rng.integers(1, 20, 40).cumsum()
    return pd.DataFrame({"t": pd.Timestamp("2024-01-01") + pd.to_timedelta(gaps, unit="h"),
                         "v": rng.normal(size=40), "w": rng.integers(0, 9, 40)},
                        index=rng.permutation(40))  # (an index that says nothing of order)


@pytest.mark.parametrize("nparts", [1, 4, 9])
@pytest.mark.parametrize("window, kw", [("1D", {}), ("3D", {"closed": "both"}), ("12h", {"min_periods": 2}),
                                        ("2D", {"center": True}), (3, {})])
def test_rolling_along_a_column_as_pandas(pdf, nparts, window, kw):
    df = xd.from_pandas(pdf, npartitions=nparts, sort=False)
    tm.assert_frame_equal(df.rolling(window, on="t", **kw).sum().compute(), pdf.rolling(window, on="t", **kw).sum())
    tm.assert_series_equal(df.rolling(window, on="t", **kw).v.mean().compute(),
                           pdf.rolling(window, on="t", **kw).v.mean())
    tm.assert_frame_equal(df.rolling(window, on="t", **kw)[["w"]].max().compute(),
                          pdf.rolling(window, on="t", **kw)[["w"]].max())


def test_empty_partitions_between(pdf):
    df = xd.from_pandas(pdf, npartitions=6, sort=False)
    kept = df[(df.w > 2) | (df.index % 2 == 0)]  # (rows spread unevenly; some partitions may empty)
    kept = kept[~kept.index.isin(list(pdf.index[7:20]))]
    want = pdf[(pdf.w > 2) | (pdf.index % 2 == 0)]
    want = want[~want.index.isin(list(pdf.index[7:20]))]
    tm.assert_frame_equal(kept.rolling("2D", on="t").sum().compute(), want.rolling("2D", on="t").sum())


def test_times_that_go_back_across_partitions_are_refused_by_pandas(pdf):
    backwards = pd.concat([pdf.iloc[20:], pdf.iloc[:20]])
    df = xd.from_pandas(backwards, npartitions=2, sort=False)
    with pytest.raises(ValueError, match="monotonic"):
        df.rolling("1D", on="t").sum().compute()


def test_bad_on_is_refused_when_built(pdf):
    df = xd.from_pandas(pdf, npartitions=2, sort=False)
    with pytest.raises(TypeError, match=r"rolling\('1D', on='w'\): a time window runs along a column of times"):
        df.rolling("1D", on="w")
    with pytest.raises(ValueError, match="a Series has none"):
        df.v.rolling("1D", on="t")
    with pytest.raises((KeyError, ValueError), match="nope"):
        df.rolling("1D", on="nope")


@pytest.mark.parametrize("select", [None, "v", ["v"], ["w", "v"]])
def test_grouped_rolling_on_a_column_as_pandas(pdf, select):
    """pandas indexes a selection made from the grouped window by the key and the times."""
    frame = pdf.assign(k=pdf.w % 3)
    df = xd.from_pandas(frame, npartitions=4, sort=False)

    def run(d):
        window = d.groupby("k").rolling("2D", on="t")
        return (window if select is None else window[select]).sum()

    got, want = run(df).compute().sort_index(), run(frame).sort_index()
    (tm.assert_series_equal if isinstance(want, pd.Series) else tm.assert_frame_equal)(got, want)
    assert df.groupby("k").rolling("2D", on="t").v.sum().compute().sort_index().equals(
        frame.groupby("k").rolling("2D", on="t").v.sum().sort_index())


def test_a_column_selected_along_on_pairs_with_another_series_and_counts_the_times(pdf):
    df = xd.from_pandas(pdf, npartitions=4, sort=False)
    for stat in ("corr", "cov"):
        tm.assert_series_equal(getattr(df.rolling("2D", on="t").v, stat)(df.w.astype("f8")).compute(),
                               getattr(pdf.rolling("2D", on="t").v, stat)(pdf.w.astype("f8")))
    tm.assert_series_equal(df.rolling("2D", on="t").v.corr().compute(), pdf.rolling("2D", on="t").v.corr())
    tm.assert_series_equal(df.rolling("1D", on="t")["t"].count().compute(), pdf.rolling("1D", on="t")["t"].count())
