"""``groupby(...).first(skipna=False)`` and ``last(skipna=False)``: each group's first or last
row as it is, across partitions, as pandas."""

import pandas as pd
import pytest

import xsched.dataframe as xd

FRAME = pd.DataFrame({"k": [1, 2, 1, 2, 1, 2, 3], "v": [None, None, 3, 4, None, 6, None],
                      "w": [6, 5, 4, 3, 2, 1, 0], "s": list("abc") + [None] * 4,
                      "t": pd.to_datetime(["2024-01-01", None, "2024-01-03", None, "2024-01-05", None, None])})


@pytest.mark.parametrize("npartitions", [1, 3, 7])
@pytest.mark.parametrize("how", ["first", "last"])
def test_each_groups_row_missing_values_and_all(npartitions, how):
    x = xd.from_pandas(FRAME, npartitions=npartitions)
    for kw in ({}, {"numeric_only": True}):
        assert getattr(x.groupby("k"), how)(skipna=False, **kw).compute().equals(
            getattr(FRAME.groupby("k"), how)(skipna=False, **kw))
    assert getattr(x.groupby("k").v, how)(skipna=False).compute().equals(getattr(FRAME.groupby("k").v, how)(skipna=False))
    split = getattr(x.groupby("k"), how)(skipna=False, split_out=2).compute().sort_index()
    assert split.equals(getattr(FRAME.groupby("k"), how)(skipna=False))


def test_skipna_false_with_min_count_is_refused_when_built():
    with pytest.raises(NotImplementedError, match="skipna=False, min_count=2"):
        xd.from_pandas(FRAME, npartitions=2).groupby("k").first(skipna=False, min_count=2)


def test_unobserved_categories_are_refused_when_built():
    frame = pd.DataFrame({"k": pd.Categorical(["a", "b", "a", "b"], categories=["a", "b", "c"]),
                          "v": [1.0, None, None, 2.0]})
    x = xd.from_pandas(frame, npartitions=2)
    with pytest.raises(NotImplementedError, match="observed=False.*with categorical keys"):
        x.groupby("k", observed=False).first(skipna=False)
    got = x.groupby("k", observed=True).last(skipna=False).compute()
    assert got.equals(frame.groupby("k", observed=True).last(skipna=False))


def test_a_series_grouped_by_a_categorical_series_with_observed_false_is_refused_too():
    pdf = pd.DataFrame({"v": [None, 1.0, 2.0, 3.0], "k": pd.Categorical(list("aaba"), categories=list("abc"))})
    df = xd.from_pandas(pdf, npartitions=2)
    for grouped in (df.v.groupby(df.k, observed=False), df.v.groupby([df.k], observed=False)):
        with pytest.raises(NotImplementedError, match=r"observed=False\)\.first\(skipna=False\) with categorical keys"):
            grouped.first(skipna=False)
    got = df.v.groupby(df.k, observed=True).last(skipna=False).compute()
    pd.testing.assert_series_equal(got, pdf.v.groupby(pdf.k, observed=True).last(skipna=False))
