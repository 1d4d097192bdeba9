"""groupby's methods giving a row per row (transform, shift, diff, pct_change, rank, ffill,
bfill) come back in the frame's partitions and order, so they line up with the frame as in
pandas: ``df.v - df.groupby("k").v.transform("mean")``, a column assigned from them, masks made
of them, on frames of any labels. Computed in this process, against pandas, unsorted."""

import numpy as np
import pandas as pd
import pytest

import xsched.dataframe as xd

RNG = np.random.default_rng(12)
N = 30
BASE = pd.DataFrame({"k": RNG.choice(list("abc"), N), "v": np.where(RNG.random(N) < 0.2, np.nan, RNG.normal(size=N)),
                     "w": RNG.integers(0, 5, N)})
LABELS = {"int": None, "text": pd.Index([f"r{(i * 7) % N:02d}" for i in range(N)], name="s"),
          "time": pd.date_range("2024", periods=N, freq="h", name="t")}


@pytest.fixture(params=list(LABELS))
def frames(request):
    pdf = BASE if LABELS[request.param] is None else BASE.set_axis(LABELS[request.param])
    return pdf, xd.from_pandas(pdf, npartitions=3, sort=False)


@pytest.mark.parametrize("call", [
    lambda d: d.groupby("k").v.transform("mean"), lambda d: d.groupby("k").transform("max"),
    lambda d: d.groupby("k").v.shift(), lambda d: d.groupby("k").v.diff(2), lambda d: d.groupby("k").w.pct_change(),
    lambda d: d.groupby("k").v.rank(), lambda d: d.groupby("k").v.ffill(), lambda d: d.groupby("k")[["v", "w"]].bfill(),
    lambda d: d.groupby(d.w % 2).v.transform(lambda s: s - s.mean()),
])
def test_a_row_per_row_comes_back_in_the_frames_order(frames, call):
    pdf, df = frames
    got, want = call(df), call(pdf)
    assert got.divisions == df.divisions
    if isinstance(want, pd.DataFrame):
        pd.testing.assert_frame_equal(got.compute(), want, check_freq=False)
    else:
        pd.testing.assert_series_equal(got.compute(), want, check_freq=False)


def test_they_line_up_with_the_frame(frames):
    pdf, df = frames
    pd.testing.assert_series_equal((df.v - df.groupby("k").v.transform("mean")).compute(),
                                   pdf.v - pdf.groupby("k").v.transform("mean"), check_freq=False)
    pd.testing.assert_frame_equal(df[df.groupby("k").v.rank() == 1].compute(), pdf[pdf.groupby("k").v.rank() == 1],
                                  check_freq=False)
    df["lag"] = df.groupby("k").w.shift()
    pdf = pdf.assign(lag=pdf.groupby("k").w.shift())
    pd.testing.assert_frame_equal(df.compute(), pdf, check_freq=False)


def test_an_unnamed_series_results_are_unnamed_as_in_pandas():
    s, k = pd.Series([1.0, 2, 3, 4, 5, 6]), pd.Series(list("ababab"))
    xs, xk = xd.from_pandas(s, npartitions=2), xd.from_pandas(k, npartitions=2)
    for call in (lambda a, b: a.groupby(b).transform("mean"), lambda a, b: a.groupby(b).shift(),
                 lambda a, b: a.groupby(b).median(), lambda a, b: a.groupby(b).apply(lambda g: g.max() - g.min())):
        got, want = call(xs, xk).compute().sort_index(), call(s, k).sort_index()
        pd.testing.assert_series_equal(got, want)


def test_a_series_keys_name_comes_back_with_a_meta_given():
    s, k = pd.Series([1.0, 2, 3, 4]), pd.Series(list("abab"))
    got = xd.from_pandas(s, npartitions=2).groupby(xd.from_pandas(k, npartitions=2)).apply(lambda g: g.max(),
                                                                                           meta=("x", "f8"))
    assert got.compute().index.name is None
    df = xd.from_pandas(pd.DataFrame({"v": [1.0, 2, 3, 4]}), npartitions=2)
    got = df.groupby((df.v % 2).rename("p")).v.apply(lambda g: g.max(), meta=("v", "f8"))
    assert got.compute().index.name == "p"


def test_meta_is_taken_as_given_as_dask_takes_it():
    pdf = BASE.assign(i=np.arange(N))
    df = xd.from_pandas(pdf, npartitions=3)
    got = df.groupby("k").shift(1, meta={"v": float, "w": float, "i": float})
    assert got.dtypes.to_dict() == {"v": np.float64, "w": np.float64, "i": np.float64}
    pd.testing.assert_frame_equal(got.compute(), pdf.groupby("k").shift(1))
    lagged = df.groupby("k").w.diff(meta=("w", "f8"))
    assert lagged.name == "w" and lagged.dtype == np.float64
    pd.testing.assert_series_equal(lagged.compute(), pdf.groupby("k").w.diff())
    heads = df.groupby("k").head(2, meta=pdf.iloc[:0])
    pd.testing.assert_frame_equal(heads.compute().sort_index(), pdf.groupby("k").head(2).sort_index())
