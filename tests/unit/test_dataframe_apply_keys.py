"""``groupby(..., as_index=False).apply`` and ``groupby(..., group_keys=False).apply`` as
pandas': a result per group has its keys as columns (as_index=False), a result per row keeps
the rows' labels without the keys (either). The rows' order and a numbered index differ by
partition (each partition numbers its own from 0), so results are compared sorted."""

import pandas as pd
import pandas.testing as tm
import pytest

import xsched.dataframe as xd


@pytest.fixture
def pdf():
    return pd.DataFrame({"k": [1, 2, 1, 3, 2, 1, 3], "v": [1.0, 2, 3, 4, 5, 6, 7], "w": [7, 6, 5, 4, 3, 2, 1]},
                        index=[10, 11, 12, 13, 14, 15, 16])


def _by_columns(frame, cols):
    return frame.sort_values(cols).reset_index(drop=True)


@pytest.mark.parametrize("nparts", [1, 3])
@pytest.mark.parametrize("func, on", [
    (lambda g: g.v.sum(), None),
    (lambda g: g.sum(), ["v"]),
    (lambda g: pd.Series({"top": g.v.max(), "n": len(g)}), None),
])
def test_as_index_false_gives_the_keys_as_columns(pdf, nparts, func, on):
    df = xd.from_pandas(pdf, npartitions=nparts)
    got = (df.groupby("k", as_index=False)[on] if on else df.groupby("k", as_index=False)).apply(func).compute()
    want = (pdf.groupby("k", as_index=False)[on] if on else pdf.groupby("k", as_index=False)).apply(func)
    assert list(got.columns) == list(want.columns)
    tm.assert_frame_equal(_by_columns(got, ["k"]), _by_columns(want, ["k"]))


def test_as_index_false_of_a_column_and_of_a_series_key(pdf):
    df = xd.from_pandas(pdf, npartitions=2)
    got = df.groupby("k", as_index=False).v.apply(lambda s: s.max()).compute()
    tm.assert_frame_equal(_by_columns(got, ["k"]),
                          _by_columns(pdf.groupby("k", as_index=False).v.apply(lambda s: s.max()), ["k"]))
    z = pdf.w % 2
    z.name = "z"
    got = df.groupby(xd.from_pandas(z, npartitions=2), as_index=False).apply(lambda g: g.v.sum()).compute()
    want = pdf.groupby(z, as_index=False).apply(lambda g: g.v.sum())
    # (the key's column renamed from the hidden one it ran as: pandas 3 makes such an Index of
    # str, where the unnamed column's None is NaN)
    assert got.columns[0] == want.columns[0] == "z" and pd.isna(got.columns[1]) and want.columns[1] is None
    tm.assert_frame_equal(_by_columns(got, ["z"]), _by_columns(want, ["z"]).set_axis(got.columns, axis=1))


@pytest.mark.parametrize("kw", [{"as_index": False}, {"group_keys": False}])
def test_a_result_per_row_keeps_the_rows_labels_without_the_keys(pdf, kw):
    df = xd.from_pandas(pdf, npartitions=3)
    got = df.groupby("k", **kw)[["v"]].apply(lambda g: g * 2).compute().sort_index()
    want = pdf.groupby("k", **kw)[["v"]].apply(lambda g: g * 2).sort_index()
    tm.assert_frame_equal(got, want)
    assert got.index.tolist() == pdf.index.tolist()


def test_group_keys_false_leaves_a_result_per_group_keyed(pdf):
    df = xd.from_pandas(pdf, npartitions=2)
    got = df.groupby("k", group_keys=False).v.apply(lambda s: s.sum()).compute().sort_index()
    tm.assert_series_equal(got, pdf.groupby("k", group_keys=False).v.apply(lambda s: s.sum()))
    # (kept by the column selected from the grouping, as pandas keeps it)
    got = df.groupby("k", group_keys=False).v.apply(lambda s: s.head(1)).compute().sort_index()
    tm.assert_series_equal(got, pdf.groupby("k", group_keys=False).v.apply(lambda s: s.head(1)).sort_index())


def test_group_keys_must_be_a_bool(pdf):
    with pytest.raises(TypeError, match="group_keys must be True or False, got 'no'"):
        xd.from_pandas(pdf, npartitions=1).groupby("k", group_keys="no")


def test_group_keys_false_with_a_meta_and_with_bins_of_time():
    pdf = pd.DataFrame({"k": [1, 2, 1, 2], "v": [1.0, 2, 3, 4]}, index=pd.date_range("2020", periods=4, freq="12h"))
    df = xd.from_pandas(pdf, npartitions=2)
    got = df.groupby("k", group_keys=False).apply(lambda g: g[["v"]] * 2, meta={"v": "f8"}).reset_index()
    assert list(got.columns) == list(got.compute().columns) == ["index", "v"]  # (no key in the meta's index)
    assert df.groupby(pd.Grouper(freq="1D"), group_keys=False).v.sum().compute().tolist() == \
        pdf.groupby(pd.Grouper(freq="1D"), group_keys=False).v.sum().tolist()


@pytest.mark.parametrize("select", ["v", None])
def test_grouped_shift_with_freq_moves_the_labels(select):
    """(It ran as the row-for-row shift, which returns rows to their own labels: freq was lost.)"""
    pdf = pd.DataFrame({"k": list("abab"), "v": [1.0, 2, 3, 4]}, index=pd.date_range("2024-01-01", periods=4,
                                                                                       freq="h"))
    df = xd.from_pandas(pdf, npartitions=2)
    grouped, pgrouped = (f.groupby("k") if select is None else f.groupby("k")[select] for f in (df, pdf))
    got = grouped.shift(1, freq="30min").compute().sort_index()
    want = pgrouped.shift(1, freq="30min").sort_index()
    (tm.assert_series_equal if select else tm.assert_frame_equal)(got, want)


@pytest.mark.parametrize("method", ["describe", "ohlc", "unique"])
def test_as_index_false_of_whole_group_methods_gives_the_keys_as_columns(method):
    pdf = pd.DataFrame({"k": list("aabbc"), "v": [1.0, 2, 3, 4, 5]})
    df = xd.from_pandas(pdf, npartitions=2)
    got = getattr(df.groupby("k", as_index=False).v, method)().compute()
    want = getattr(pdf.groupby("k", as_index=False).v, method)()
    tm.assert_frame_equal(_by_columns(got, ["k"]), _by_columns(want, ["k"]))
