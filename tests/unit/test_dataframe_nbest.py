"""``nlargest`` / ``nsmallest`` through a tree, and ``drop_duplicates(keep=False)``, against
pandas on any partitioning: the same rows in the same order, ties decided by the rows' order
in the whole frame (``keep="last"`` prefers later rows), missing values where pandas puts them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

import xsched.dataframe as xd

KEEPS = st.sampled_from(["first", "last", "all"])


@settings(max_examples=150, deadline=None)
@given(values=st.lists(st.one_of(st.none(), st.integers(0, 4)), min_size=1, max_size=25), n=st.integers(1, 30),
       keep=KEEPS, largest=st.booleans(), npartitions=st.integers(1, 6), split_every=st.sampled_from([2, 8]))
def test_series_nlargest_and_nsmallest_are_pandas_exactly(values, n, keep, largest, npartitions, split_every):
    s = pd.Series([np.nan if v is None else float(v) for v in values], index=np.arange(len(values)) % 7)
    ds = xd.from_pandas(s, npartitions=min(npartitions, len(values)), sort=False)
    method = "nlargest" if largest else "nsmallest"
    got = getattr(ds, method)(n, keep=keep, split_every=split_every).compute()
    pd.testing.assert_series_equal(got, getattr(s, method)(n, keep=keep))


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=25), n=st.integers(1, 30),
       keep=KEEPS, largest=st.booleans(), npartitions=st.integers(1, 6), split_every=st.sampled_from([2, 8]))
def test_frame_nlargest_and_nsmallest_choose_pandas_rows(rows, n, keep, largest, npartitions, split_every):
    frame = pd.DataFrame(rows, columns=["a", "b"])
    df = xd.from_pandas(frame, npartitions=min(npartitions, len(rows)))
    method = "nlargest" if largest else "nsmallest"
    got = getattr(df, method)(n, ["a", "b"], keep=keep, split_every=split_every).compute()
    want = getattr(frame, method)(n, ["a", "b"], keep=keep)
    assert sorted(got.index) == sorted(want.index)
    assert got.to_numpy().tolist() == want.to_numpy().tolist()


def test_nlargest_refuses_what_pandas_refuses_when_built():
    s = xd.from_pandas(pd.Series(list("abc")), npartitions=2)
    with pytest.raises(TypeError, match="nlargest"):
        s.nlargest(2)


@pytest.mark.parametrize("npartitions", [1, 3, 5])
@pytest.mark.parametrize("subset", [None, "a", ["a", "b"]])
def test_drop_duplicates_keep_false_drops_every_repeated_key(npartitions, subset):
    rng = np.random.default_rng(npartitions)
    frame = pd.DataFrame({"a": rng.integers(0, 6, 40), "b": rng.integers(0, 2, 40), "v": np.arange(40)})
    df = xd.from_pandas(frame, npartitions=npartitions)
    got = df.drop_duplicates(subset=subset, keep=False).compute()
    pd.testing.assert_frame_equal(got, frame.drop_duplicates(subset=subset, keep=False))
    got = df.a.drop_duplicates(keep=False).compute()
    pd.testing.assert_series_equal(got, frame.a.drop_duplicates(keep=False))
