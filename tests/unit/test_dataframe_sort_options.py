"""pandas' options of sorting and indexing beside the keys: ``sort_values(key=, ignore_index=,
kind=)`` and by the index's name, ``set_index`` of a Series, ``join`` of a named Series;
computed in this process, against pandas (ties compared with pandas' stable sort: xsched's
sort is stable, pandas' default quicksort leaves ties in an order of its own)."""

import numpy as np
import pandas as pd
import pytest

import xsched.dataframe as xd

RNG = np.random.default_rng(9)
PDF = pd.DataFrame({"a": RNG.integers(0, 6, 40), "b": np.where(RNG.random(40) < 0.15, np.nan, RNG.normal(size=40)),
                    "s": RNG.choice(["x", "Y", "z", "W"], 40)}, index=pd.Index(RNG.permutation(40) * 3, name="i"))


@pytest.fixture(params=[1, 4])
def df(request):
    return xd.from_pandas(PDF, npartitions=request.param, sort=False)


def test_sort_values_with_key_ignore_index_and_kind_as_pandas(df):
    pd.testing.assert_frame_equal(df.sort_values("s", key=lambda s: s.str.lower()).compute(),
                                  PDF.sort_values("s", key=lambda s: s.str.lower(), kind="stable"))
    pd.testing.assert_frame_equal(df.sort_values(["a", "b"], key=lambda s: -s if s.dtype.kind == "f" else s).compute(),
                                  PDF.sort_values(["a", "b"], key=lambda s: -s if s.dtype.kind == "f" else s,
                                                  kind="stable"))
    pd.testing.assert_frame_equal(df.sort_values("b", ignore_index=True).compute(),
                                  PDF.sort_values("b", ignore_index=True, kind="stable"))
    pd.testing.assert_frame_equal(df.sort_values("a", kind="mergesort").compute(), PDF.sort_values("a", kind="stable"))
    pd.testing.assert_series_equal(df.b.sort_values(ascending=False, key=abs, ignore_index=True).compute(),
                                   PDF.b.sort_values(ascending=False, key=abs, ignore_index=True, kind="stable"))
    with pytest.raises(ValueError, match="kind must be one of"):
        df.sort_values("a", kind="bubble")


def test_sort_values_by_the_index_name(df):
    pd.testing.assert_frame_equal(df.sort_values("i").compute(), PDF.sort_values("i"))
    pd.testing.assert_frame_equal(df.sort_values("i", ascending=False).compute(), PDF.sort_values("i", ascending=False))
    with pytest.raises(NotImplementedError, match="the index's name 'i' among other keys"):
        df.sort_values(["i", "a"])


def test_set_index_of_a_series_and_join_of_a_named_series(df):
    got = df.set_index(df.b * 2).compute()
    assert got.index.name == "b" and got.index.dropna().is_monotonic_increasing
    got, want = got.rename_axis("key"), PDF.set_index(PDF.b * 2).rename_axis("key")
    pd.testing.assert_frame_equal(got.sort_values(["key", "a", "s"], kind="stable"),
                                  want.sort_values(["key", "a", "s"], kind="stable"))
    means = df.groupby("a").b.mean().rename("m")
    joined = df.set_index("a").join(means).compute()
    expected = PDF.set_index("a").join(PDF.groupby("a").b.mean().rename("m"))
    def rows(frame):
        return frame.reset_index().sort_values(["a", "b", "s"], kind="stable").reset_index(drop=True)
    pd.testing.assert_frame_equal(rows(joined), rows(expected))
    with pytest.raises(ValueError, match="a Series joins as a column of its name, and this one has none"):
        df.set_index("a").join(means.rename(None))
