"""Groupby results that must match pandas: column layout of dict aggregations, the names of
a Series grouped by a Series, a frame grouped by one of its own columns, variances of
values with a large mean, and aggregations that select the key column itself."""

import warnings

import numpy as np
import pandas as pd
import pandas.testing as tm
import pytest

import xsched.dataframe as xd
from tests.support.helpers import assert_frames_agree

warnings.filterwarnings("ignore", category=FutureWarning)

NPARTS = [1, 2, 3]


@pytest.fixture
def frame():
    return pd.DataFrame({"k": [1, 2, 1, 2, 3, 1], "v": [1.0, 2, 3, 4, 5, 6], "w": [5, 6, 7, 8, 9, 10]})


check = assert_frames_agree


@pytest.mark.parametrize("n", NPARTS)
def test_agg_dict_columns_as_pandas(frame, n):
    df = xd.from_pandas(frame, npartitions=n)
    # flat columns when every value is one name; (column, how) as soon as one is a list
    for spec in [{"v": "sum"}, {"v": "sum", "w": "mean"}, {"k": "count", "v": "var"}, {"v": ["sum"]},
                 {"v": "sum", "w": ["min", "max"]}, {"v": ("sum", "mean"), "w": "count"}]:
        check(df.groupby("k").agg(spec), frame.groupby("k").agg(spec))


@pytest.mark.parametrize("n", NPARTS)
@pytest.mark.parametrize("how", ["sum", "mean", "count", "size", "nunique", "var", "max"])
def test_series_grouped_by_series_keeps_names(frame, n, how):
    df = xd.from_pandas(frame, npartitions=n)
    check(getattr(df.v.groupby(df.k), how)(), getattr(frame.v.groupby(frame.k), how)())
    # unnamed Series by an unnamed Series: no name, no index name
    values, keys = pd.Series(frame.v.to_numpy()), pd.Series(frame.k.to_numpy())
    xv, xk = xd.from_pandas(values, npartitions=n), xd.from_pandas(keys, npartitions=n)
    check(getattr(xv.groupby(xk), how)(), getattr(values.groupby(keys), how)())
    # a named Series by an unnamed one, and one named like the stand-in key
    check(getattr(df.v.groupby(xk), how)(), getattr(frame.v.groupby(keys), how)())
    odd = frame.v.rename("__by__")
    check(getattr(xd.from_pandas(odd, npartitions=n).groupby(df.k), how)(), getattr(odd.groupby(frame.k), how)())


@pytest.mark.parametrize("n", NPARTS)
def test_series_grouped_by_series_agg_list(frame, n):
    df = xd.from_pandas(frame, npartitions=n)
    check(df.v.groupby(df.k).agg(["sum", "std"]), frame.v.groupby(frame.k).agg(["sum", "std"]))


@pytest.mark.parametrize("n", NPARTS)
@pytest.mark.parametrize("how", ["sum", "mean", "var", "count", "max"])
def test_frame_grouped_by_its_own_column(frame, n, how):
    df = xd.from_pandas(frame, npartitions=n)
    # the column itself: pandas leaves it out of the aggregated columns
    check(getattr(df.groupby(df.k), how)(), getattr(frame.groupby(frame.k), how)())
    check(getattr(df.groupby(df["k"]), how)(), getattr(frame.groupby(frame["k"]), how)())
    check(getattr(df.groupby(df[["k", "v"]].k), how)(), getattr(frame.groupby(frame[["k", "v"]].k), how)())
    # a Series computed from it (even under the same name): pandas keeps every column
    check(getattr(df.groupby(df.k * 2), how)(), getattr(frame.groupby(frame.k * 2), how)())
    check(getattr(df.groupby(df.k.rename("v")), how)(), getattr(frame.groupby(frame.k.rename("v")), how)())


@pytest.mark.parametrize("n", NPARTS)
def test_frame_grouped_by_its_own_column_explicit_columns(frame, n):
    df = xd.from_pandas(frame, npartitions=n)
    check(df.groupby(df.k).agg({"k": "sum", "v": "mean"}), frame.groupby(frame.k).agg({"k": "sum", "v": "mean"}))
    check(df.groupby(df.k)[["k", "v"]].sum(), frame.groupby(frame.k)[["k", "v"]].sum())
    check(df.groupby(df.k).agg(["sum", "var"]), frame.groupby(frame.k).agg(["sum", "var"]))


def large_mean(rows: int = 12) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    v = 1e9 + rng.uniform(0, 10, rows)  # (a spread far above the values' precision, as pandas needs too)
    v[3] = np.nan
    return pd.DataFrame({"k": np.arange(rows) % 3, "v": v, "w": -2e9 + rng.uniform(0, 10, rows)})


@pytest.mark.parametrize("n", NPARTS)
@pytest.mark.parametrize("ddof", [0, 1, 2])
def test_var_std_keep_precision_with_a_large_mean(n, ddof):
    b = pd.DataFrame({"k": [0] * 6, "v": 1e9 + np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])})
    xb = xd.from_pandas(b, npartitions=n)
    check(xb.groupby("k").v.var(ddof=ddof), b.groupby("k").v.var(ddof=ddof), rtol=1e-5)
    p = large_mean()
    df = xd.from_pandas(p, npartitions=n)
    for how in ("var", "std"):
        check(getattr(df.groupby("k"), how)(ddof=ddof), getattr(p.groupby("k"), how)(ddof=ddof), rtol=1e-5)
        check(getattr(df.groupby("k").v, how)(ddof=ddof, split_every=2),
              getattr(p.groupby("k").v, how)(ddof=ddof), rtol=1e-5)


@pytest.mark.parametrize("n", NPARTS)
def test_var_with_few_values_nan_keys_and_split_out(n):
    p = large_mean()
    p.loc[p.k == 2, "v"] = [np.nan, np.nan, np.nan, 1e9 + 0.5]  # one value: NaN variance (count <= ddof)
    p["k"] = p.k.astype("float64")
    p.loc[[1, 7], "k"] = np.nan
    df = xd.from_pandas(p, npartitions=n)
    check(df.groupby("k").v.var(), p.groupby("k").v.var(), rtol=1e-5)
    check(df.groupby("k", dropna=False).agg({"v": ["var", "mean"], "w": "std"}),
          p.groupby("k", dropna=False).agg({"v": ["var", "mean"], "w": "std"}), rtol=1e-5)
    got = df.groupby("k").std(split_out=2).compute().sort_index()
    tm.assert_frame_equal(got, p.groupby("k").std(), rtol=1e-5)


@pytest.mark.parametrize("n", NPARTS)
def test_selecting_the_key_column_itself(n):
    g = pd.DataFrame({"s": list("abcab"), "x": [1, 2, 3, 4, 5]})
    g["n"] = [1.0, 2, 1, 2, 3]
    df = xd.from_pandas(g, npartitions=n)
    for how in ["nunique", "sum", "count", "var", "max"]:
        if how in ("nunique", "count", "max"):
            check(getattr(df.groupby("s").s, how)(), getattr(g.groupby("s").s, how)())
        check(getattr(df.groupby("n").n, how)(), getattr(g.groupby("n").n, how)())
        check(getattr(df.groupby(["s", "n"]).n, how)(), getattr(g.groupby(["s", "n"]).n, how)())


@pytest.mark.parametrize("n", [1, 2, 3])
def test_groupby_mean_and_std_of_times_like_pandas(n):
    """Means of datetimes, standard deviations of datetimes and timedeltas (zone and NaT
    included) per group: pandas' answers, in the column's unit, where a task used to fail."""
    rng = np.random.default_rng(0)
    pdf = pd.DataFrame({"s": list("abababab"),
                        "t": pd.to_datetime(rng.integers(0, 10**6, 8), unit="us").astype("M8[us]"),
                        "d": pd.to_timedelta(rng.integers(0, 10**6, 8), unit="us").astype("m8[us]"),
                        "v": rng.random(8)})
    pdf.loc[2, "t"] = pd.NaT
    pdf["z"] = pdf.t.dt.tz_localize("UTC").dt.tz_convert("Europe/Paris")
    df = xd.from_pandas(pdf, npartitions=n)
    for col, how in [("t", "mean"), ("t", "std"), ("z", "mean"), ("z", "std"), ("d", "mean"), ("d", "std")]:
        pd.testing.assert_series_equal(getattr(df.groupby("s")[col], how)().compute(),
                                       getattr(pdf.groupby("s")[col], how)())
    spec = {"t": ["mean", "std"], "v": "mean", "d": ["mean", "std"]}
    pd.testing.assert_frame_equal(df.groupby("s").agg(spec).compute(), pdf.groupby("s").agg(spec))
    pd.testing.assert_frame_equal(df[["s", "t", "z", "v"]].groupby("s").std().compute(),
                                  pdf[["s", "t", "z", "v"]].groupby("s").std())


@pytest.mark.parametrize("n", [1, 2])
def test_grouping_by_a_column_taken_before_assigning_others_leaves_it_out(n):
    """pandas shares a column's values through an assign of other columns, so grouping the new
    frame by the old frame's column leaves that column out (and keeps it when it was reassigned)."""
    pdf = pd.DataFrame({"k": [1, 2, 1, 2], "w": [1, 2, 3, 4]})
    df = xd.from_pandas(pdf, npartitions=n)
    tm.assert_frame_equal(df.assign(z=1).groupby(df.k).sum().compute(), pdf.assign(z=1).groupby(pdf.k).sum())
    tm.assert_frame_equal(df.assign(z=df.w + 1).assign(y=2).groupby(df.k).sum().compute(),
                          pdf.assign(z=pdf.w + 1).assign(y=2).groupby(pdf.k).sum())
    tm.assert_frame_equal(df.assign(k=df.k * 10).groupby(df.k).sum().compute(),
                          pdf.assign(k=pdf.k * 10).groupby(pdf.k).sum())
