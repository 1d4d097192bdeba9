"""A Series' distinct values in shares (``dataframe/distinct.py``): ``nunique`` by default,
``unique`` and ``value_counts`` with ``split_out``, against pandas over dtypes, missing
values and partitionings; no share holds every distinct value, and a tree stays where one
is asked for (``split_out=1``, or ``nunique`` among others in ``agg``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pandas.testing as tm
import pytest

import xsched.dataframe as xd

RNG = np.random.default_rng(0)
SERIES = {
    "ints": pd.Series(RNG.integers(0, 50, 300), name="i"),
    "floats with NaN": pd.Series(np.where(RNG.random(300) < 0.1, np.nan, RNG.integers(0, 40, 300) / 4), name="f"),
    "text with missing": pd.Series(RNG.choice(np.array(["a", "b", None, "c"], dtype=object), 300)).astype("str"),
    "categorical": pd.Series(pd.Categorical(RNG.choice(list("xyz"), 300), categories=list("zyxw")), name="c"),
    "times": pd.Series(pd.to_datetime(RNG.integers(0, 20, 300), unit="D"), name="t"),
    "booleans": pd.Series(RNG.random(300) < 0.5, name="b"),
}


@pytest.mark.parametrize("label", sorted(SERIES))
@pytest.mark.parametrize("npartitions", [1, 4])
@pytest.mark.parametrize("dropna", [True, False])
@pytest.mark.parametrize("split_out", [None, 1, 3, True])
def test_distinct_values_in_shares_equal_pandas(label, npartitions, dropna, split_out):
    p = SERIES[label]
    s = xd.from_pandas(p, npartitions=npartitions)
    kw = {} if split_out is None else {"split_out": split_out}
    count = s.nunique(dropna=dropna, **kw).compute()
    assert count == p.nunique(dropna=dropna) and type(count) is int
    for normalize in (False, True):
        got = s.value_counts(dropna=dropna, normalize=normalize, **kw).compute()
        tm.assert_series_equal(got.sort_index(), p.value_counts(dropna=dropna, normalize=normalize).sort_index(),
                               check_index_type=False)
    distinct = s.unique(**kw).compute()
    assert distinct.dtype == p.dtype and len(distinct) == p.nunique(dropna=False)
    assert set(distinct.dropna()) == set(p.dropna())


def test_no_share_holds_every_distinct_value():
    p = pd.Series(np.arange(1000) % 400, name="v")
    s = xd.from_pandas(p, npartitions=8)
    shares = s.unique(split_out=4)
    sizes = [len(shares.partitions[i].compute()) for i in range(4)]
    assert sum(sizes) == 400 and max(sizes) < 400
    counts = s.value_counts(split_out=4)
    assert counts.npartitions == 4
    for i in range(4):  # (each share most frequent first)
        part = counts.partitions[i].compute()
        assert part.is_monotonic_decreasing and len(part) < 400
    in_order = s.unique()  # (by default in the Series' own partitions, in order: drop_duplicates)
    assert in_order.npartitions == 8 and not any(str(k).startswith("unique-agg") for k in dict(in_order._graph))
    tm.assert_series_equal(in_order.compute(), p.drop_duplicates())
    shares_counted = [k for k in dict(s.nunique()._graph) if str(k).startswith("nunique-shares-chunk")]
    assert len(shares_counted) == 8  # (one share per partition by default, each counted apart)


def test_a_tree_where_one_is_asked_for():
    p = pd.DataFrame({"a": np.arange(40) % 7, "b": np.arange(40) % 3})
    df = xd.from_pandas(p, npartitions=4)
    tree, shares = df.a.nunique(split_out=1), df.a.nunique()
    assert "nunique-local" not in repr(dict(tree._graph)) and "nunique-local" in repr(dict(shares._graph))
    assert tree.compute() == shares.compute() == 7
    joint = df.agg({"a": ["nunique", "sum"], "b": ["nunique"]})  # (among others: their one tree)
    assert "nunique-local" not in repr(dict(joint._graph))
    tm.assert_frame_equal(joint.compute(), p.agg({"a": ["nunique", "sum"], "b": ["nunique"]}), check_dtype=False)
    tm.assert_series_equal(df.a.value_counts().compute(), p.a.value_counts())  # (pandas' order, one partition)
    assert df.a.unique().compute().tolist() == p.a.unique().tolist()


def test_split_out_mistakes_fail_when_built():
    s = xd.from_pandas(pd.Series([1, 2, 3]), npartitions=2)
    for bad in (0, -1, 1.5, "2"):
        with pytest.raises(ValueError, match="nunique: split_out must be a whole number of at least 1"):
            s.nunique(split_out=bad)
    with pytest.raises(ValueError, match="value_counts: split_out must be"):
        s.value_counts(split_out=0)
    with pytest.raises(ValueError, match=r"value_counts\(bins=...\): the bins' counts are one partition"):
        s.value_counts(bins=2, split_out=2)


def test_a_series_named_like_the_counts():
    p = pd.Series([1, 2, 2, 3, 3, 3], name="count")
    s = xd.from_pandas(p, npartitions=3)
    assert s.nunique().compute() == 3
    assert sorted(s.unique(split_out=2).compute()) == [1, 2, 3]
    tm.assert_series_equal(s.value_counts(split_out=2).compute().sort_index(), p.value_counts().sort_index())


@pytest.mark.parametrize("kind", ["int", "float-nan", "bool", "datetime-nat", "int32"])
def test_value_counts_of_numpy_columns_merge_as_pandas_counts(kind):
    """The tree's merge of plain NumPy-typed counts (factorize once, add with bincount)
    gives what concatenating and grouping gave, in the same order, dtype and names, and the
    whole value_counts is pandas'."""
    from xsched.dataframe.reductions import _plain_counts
    rng = np.random.default_rng(len(kind))
    for trial in range(40):
        n = int(rng.integers(1, 50))
        if kind == "int":
            s = pd.Series(rng.integers(0, 8, n), name="v")
        elif kind == "float-nan":
            s = pd.Series(np.where(rng.random(n) < 0.2, np.nan, rng.integers(0, 6, n).astype(float)))
        elif kind == "bool":
            s = pd.Series(rng.random(n) < 0.5)
        elif kind == "datetime-nat":
            s = pd.Series(pd.to_datetime(rng.integers(0, 5, n), unit="D").where(rng.random(n) > 0.2))
        else:
            s = pd.Series(rng.integers(-3, 3, n).astype("int32"))
        cuts = [0, n // 3, 2 * n // 3, n]
        pieces = [s.iloc[a:b] for a, b in zip(cuts, cuts[1:])]
        partials = [p.value_counts(dropna=False, sort=False) for p in pieces]
        joined = pd.concat(partials)
        pd.testing.assert_series_equal(_plain_counts(partials),
                                       joined.groupby(level=[0], dropna=False, sort=False).sum())
        df = xd.from_pandas(s, npartitions=int(rng.integers(1, 5)))
        for dropna in (True, False):
            got, want = df.value_counts(dropna=dropna).compute(), s.value_counts(dropna=dropna)
            pd.testing.assert_series_equal(got.sort_index(), want.sort_index())
            assert got.tolist() == want.tolist()  # (most frequent first)
    assert _plain_counts([pd.Series(["a", "b"]).value_counts(sort=False)]) is None  # (text: the general merge)
