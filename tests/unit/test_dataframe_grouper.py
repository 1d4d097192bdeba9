"""``groupby([pd.Grouper(freq=...), "name"])``: a Grouper's bins among other keys, against
pandas on the same rows in one and in several partitions: fixed-length, calendar and
zoned bins, every origin, bins of a key column with missing times, and the grouped
methods of every kind (trees, whole groups, row-wise), their results named as pandas'."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pandas.testing as tm
import pytest

import xsched.dataframe as xd
from xsched.dataframe.grouper import GrouperKeys

G = pd.Grouper


def frame(n: int = 300, tz: str | None = None, start: str = "2024-01-01 05:17") -> pd.DataFrame:
    rng = np.random.default_rng(3)
    pdf = pd.DataFrame({"name": rng.choice(["alice", "bob", "carol"], n), "x": rng.normal(size=n),
                        "y": rng.integers(0, 100, n), "when": pd.date_range("2023-06-01", periods=n, freq="5h")},
                       index=pd.date_range(start, periods=n, freq="37min", tz=tz, name="ts"))
    pdf.loc[pdf.index[::17], "when"] = pd.NaT
    return pdf


def same(got, expected, sort: bool = False) -> None:
    got = got.compute()
    if sort:
        got, expected = got.sort_index(), expected.sort_index()
    (tm.assert_frame_equal if isinstance(expected, pd.DataFrame) else tm.assert_series_equal)(got, expected,
                                                                                            check_freq=False)


@pytest.mark.parametrize("npartitions", [1, 5])
@pytest.mark.parametrize("expr", [
    "groupby([G(freq='1D'), 'name']).x.sum()",
    "groupby(['name', G(freq='6h')]).agg({'x': 'mean', 'y': ['min', 'max']})",
    "groupby([G(freq='7h'), 'name']).x.mean()",
    "groupby([G(freq='ME'), 'name']).x.max()",
    "groupby([G(freq='W'), 'name']).size()",
    "groupby([G(freq='2D', closed='right', label='right'), 'name'])[['x', 'y']].sum()",
    "groupby([G(freq='12h', offset='2h'), 'name']).x.var()",
    "groupby([G(key='when', freq='1D'), 'name']).x.sum()",
    "groupby([G(key='when', freq='ME'), 'name']).sum()",
    "groupby([G(key='when', freq='1D'), 'name'], dropna=False).y.count()",
    "groupby([G(key='name'), G(freq='1D')]).y.sum()",
    "groupby([G(freq='1D'), 'name']).agg(total=('x', 'sum'), most=('y', 'max'))",
    "groupby([G(freq='1D'), 'name']).x.median()",
    "groupby([G(freq='1D'), 'name']).x.nunique()",
    "groupby([G(freq='1D'), 'name']).x.idxmax()",
])
def test_a_grouper_among_keys_groups_as_pandas(npartitions, expr):
    pdf = frame()
    same(eval("xd.from_pandas(pdf, npartitions=npartitions)." + expr), eval("pdf." + expr))


@pytest.mark.parametrize("expr", [
    "groupby([G(freq='1D'), 'name']).x.transform('sum')",
    "groupby([G(freq='1D'), 'name']).x.cumsum()",
    "groupby([G(freq='1D'), 'name']).x.shift()",
    "groupby([G(freq='1D'), 'name']).x.rolling(2).sum()",
    "groupby([G(freq='1D'), 'name']).x.apply(lambda s: s.max() - s.min())",
    "groupby([G(freq='1D'), 'name'], sort=False).x.sum()",
])
def test_row_wise_and_whole_group_methods_of_a_grouper_among_keys(expr):
    pdf = frame()
    same(eval("xd.from_pandas(pdf, npartitions=4)." + expr), eval("pdf." + expr), sort=True)


@pytest.mark.filterwarnings("ignore:.*'origin'.*:RuntimeWarning")  # (calendar bins ignore it: pandas says so)
@pytest.mark.parametrize("tz", [None, "America/New_York"])
@pytest.mark.parametrize("freq", ["1D", "2D", "7h", "90min", "MS"])
@pytest.mark.parametrize("origin", ["start_day", "start", "end", "end_day", "epoch"])
def test_every_origin_binned_as_the_whole_frame_is(tz, freq, origin):
    """Bins of fixed length anchored to the data's first (or last) day or time are those of
    the whole frame in every partition, not of each partition's own first time; zoned days
    (calendar days, anchored by pandas to the first day whatever the origin) across a change
    of the clocks too."""
    pdf = frame(900, tz=tz, start="2024-03-05 05:17")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = xd.from_pandas(pdf, npartitions=6).groupby([G(freq=freq, origin=origin, closed="right"), "name"]).x.sum()
    if freq == "MS" and origin != "start_day":
        assert any("does not take effect with calendar bins" in str(w.message) for w in caught)
    same(got, pdf.groupby([G(freq=freq, origin=origin, closed="right"), "name"]).x.sum())


def test_a_time_missing_from_a_key_column_is_in_no_bin():
    pdf = frame()
    df = xd.from_pandas(pdf, npartitions=3)
    for dropna in (True, False):
        same(df.groupby([G(key="when", freq="1D"), "name"], dropna=dropna).x.sum(),
             pdf.groupby([G(key="when", freq="1D"), "name"], dropna=dropna).x.sum())


def test_results_take_the_groupers_names_back():
    pdf = frame().rename_axis(None)
    df = xd.from_pandas(pdf, npartitions=3)
    grouped = df.groupby([G(freq="1D"), "name"])
    assert isinstance(grouped, GrouperKeys) and isinstance(grouped.x, GrouperKeys)
    assert repr(grouped).startswith("<xsched grouping by [pd.Grouper(freq='D'), 'name']: ")
    assert {"sum", "agg", "x"} <= set(dir(grouped))
    out = grouped.x.sum()
    assert list(out._meta.index.names) == [None, "name"]  # (as pandas names them, before computing)
    same(out, pdf.groupby([G(freq="1D"), "name"]).x.sum())
    by_column = df.groupby([G(key="when", freq="1D"), "name"]).sum()
    assert list(by_column.columns) == ["x", "y"]  # (the binned column is a key, not aggregated)


def test_what_cannot_be_binned_alike_is_refused_when_built():
    pdf = frame()
    df = xd.from_pandas(pdf, npartitions=3)
    with pytest.raises(NotImplementedError, match=r"origin='start_day'\), \.\.\.\]\): bins of that length start "
                                                  r"at the column's first day.*origin='epoch'"):
        df.groupby([G(key="when", freq="7h"), "name"])
    with pytest.raises(NotImplementedError, match="index's first day.*set_index\\(sorted=True\\)"):
        df.clear_divisions().groupby([G(freq="7h"), "name"])
    zoned = xd.from_pandas(frame(tz="Europe/Paris"), npartitions=3).clear_divisions()
    with pytest.raises(NotImplementedError, match=r"freq='48h'\) or tz_convert\(None\)"):
        zoned.groupby([G(freq="2D"), "name"])
    with pytest.raises(TypeError, match="bins of time need a column of times, and 'name' is str"):
        df.groupby([G(key="name", freq="1D"), "y"])
    with pytest.raises(TypeError, match="bins of time need an index of times, and the index is int64"):
        df.reset_index(drop=True).groupby([G(freq="1D"), "name"])
    with pytest.raises(KeyError, match="no column 'nope'"):
        df.groupby([G(key="nope", freq="1D"), "name"])
    with pytest.raises(NotImplementedError, match="as_index=False\\): the bins are the index"):
        df.groupby([G(freq="1D"), "name"], as_index=False)
    with pytest.raises(NotImplementedError, match="among other keys of a Series"):
        df.x.groupby([G(freq="1D"), df.name])
    with pytest.raises(NotImplementedError, match="Grouper\\(level=...\\)"):
        df.groupby([G(level=0), "name"])
    # Fixed-length bins a day holds a whole number of, calendar bins, and a given origin
    # need nothing known: the same in every partition
    same(df.clear_divisions().groupby([G(freq="6h"), "name"]).y.sum(),
         pdf.groupby([G(freq="6h"), "name"]).y.sum())
    same(df.groupby([G(key="when", freq="7h", origin="epoch"), "name"]).y.max(),
         pdf.groupby([G(key="when", freq="7h", origin="epoch"), "name"]).y.max())


@pytest.mark.parametrize("grouper", [G(freq="1D"), G(key="when", freq="1D")])
@pytest.mark.parametrize("expr", ["head(1)", "tail(2)", "nth(0)", "filter(lambda g: len(g) > 3)", "x.head(1)"])
def test_methods_giving_rows_give_them_whole_without_the_bins(grouper, expr):
    """head, filter... give the frame's own rows: a binned key column among them, the bins
    not (they are the grouping's, hidden)."""
    pdf = frame()
    got = eval(f"xd.from_pandas(pdf, npartitions=4).groupby([grouper, 'name']).{expr}")
    same(got, eval(f"pdf.groupby([grouper, 'name']).{expr}"), sort=True)
    key = (pd.Timestamp("2024-01-02") if grouper.key is None else pd.Timestamp("2023-06-03"), "bob")
    same(xd.from_pandas(pdf, npartitions=4).groupby([grouper, "name"]).get_group(key),
         pdf.groupby([grouper, "name"]).get_group(key))
