"""Grouped methods that need whole groups (median, quantile, idxmax, value_counts, shift,
rank, head, rolling, ...) against pandas: exact results, one-row-per-group results in the
keys' order, row-wise ones equal once put back in the frame's order."""

import doctest
import pickle
import warnings

import numpy as np
import pandas as pd
import pandas.testing as tm
import pytest

import xsched.dataframe as xd
from xsched.dataframe import groupby_whole
from xsched.dataframe.groupby import GroupBy


def frame(rows=60):
    rng = np.random.default_rng(0)
    pdf = pd.DataFrame({"k": rng.choice(list("abcde"), rows), "j": rng.integers(0, 3, rows),
                        "v": rng.normal(size=rows), "w": rng.integers(0, 5, rows).astype(float)})
    pdf.loc[::7, "v"] = np.nan
    return pdf


def same(got, expected, what):
    (tm.assert_frame_equal if isinstance(expected, pd.DataFrame) else tm.assert_series_equal)(got, expected, obj=what)


@pytest.mark.parametrize("n", [1, 3, 5])
@pytest.mark.parametrize("what", ["median()", "quantile(0.3)", "quantile([0.25, 0.75])", "idxmax()", "idxmin()",
                                  "skew()", "kurt()", "sem()", "nunique()"])
@pytest.mark.parametrize("sel", ["", ".v", "[['v', 'w']]"])
@pytest.mark.parametrize("by", ['"k"', '["k", "j"]'])
def test_one_row_per_group_like_pandas_in_the_keys_order(n, what, sel, by):
    pdf = frame()
    df = xd.from_pandas(pdf, npartitions=n)
    expr = f"groupby({by}){sel}.{what}"
    out = eval("df." + expr)
    assert out.npartitions == 1
    same(out.compute(), eval("pdf." + expr), expr)


@pytest.mark.parametrize("expr", ['groupby("k").describe()', 'groupby("k").v.describe()', 'groupby("k").v.ohlc()',
                                  'groupby("k").all()', 'groupby("k").b.any()', 'groupby("k").corr()',
                                  'groupby("k")[["v", "w"]].cov()'])
def test_more_per_group_results_like_pandas_without_warnings(expr):
    pdf = frame().assign(b=lambda d: d.w > 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (the stand-in's tiny groups warn in pandas; nothing reaches the user)
        out = eval("xd.from_pandas(pdf, npartitions=4)." + expr)
    same(out.compute(), eval("pdf." + expr), expr)


def test_filter_sample_and_pipe_per_group():
    pdf = frame()
    df = xd.from_pandas(pdf, npartitions=4)
    same(df.groupby("k").filter(lambda g: len(g) > 12).compute().sort_index(),
         pdf.groupby("k").filter(lambda g: len(g) > 12), "filter")
    same(df.groupby("k").v.filter(lambda g: g.mean() > 0).compute().sort_index(),
         pdf.groupby("k").v.filter(lambda g: g.mean() > 0), "filter a column")
    drawn = df.groupby("k").sample(n=2, random_state=1).compute()
    assert drawn.groupby("k").size().tolist() == [2] * pdf.k.nunique() and list(drawn.columns) == list(pdf.columns)
    assert drawn.index.isin(pdf.index).all()
    same(df.groupby("k").pipe(lambda g: g.v.max() - g.v.min()).compute(),
         pdf.groupby("k").pipe(lambda g: g.v.max() - g.v.min()), "pipe")


def same_counts(got, expected, keys: int = 1) -> None:
    """pandas' grouped value counts: the same counts, keys in order, each group's counts
    falling; equal counts in any order (pandas' own order of them comes from an unstable sort
    of the whole result, which no partition sees)."""
    tm.assert_series_equal(got.sort_index(), expected.sort_index())
    assert list(dict.fromkeys(got.index.droplevel(-1))) == list(dict.fromkeys(expected.index.droplevel(-1)))
    assert all(g.is_monotonic_decreasing for _, g in got.groupby(level=list(range(keys)), sort=False))


@pytest.mark.parametrize("n", [1, 4])
@pytest.mark.parametrize("expr", ['groupby("k").w.value_counts()', 'groupby(["k", "j"]).w.value_counts()',
                                  'groupby("k").w.value_counts(normalize=True)'])
def test_value_counts_per_group_like_pandas(expr, n):
    pdf = frame(400)
    same_counts(eval(f"xd.from_pandas(pdf, npartitions={n})." + expr).compute(), eval("pdf." + expr),
                2 if "j" in expr else 1)


@pytest.mark.parametrize("what", ["shift()", "shift(-2)", "diff()", "pct_change(fill_method=None)", "rank()", "ffill()",
                                  "bfill()", "head(2)", "tail(2)", "nth(1)", "rolling(2).sum()",
                                  "rolling(3, min_periods=1).mean()", "expanding().max()", "ewm(com=0.5).mean()"])
@pytest.mark.parametrize("sel", [".v", "[['v', 'w']]", ""])
def test_row_wise_like_pandas_once_in_the_frames_order(what, sel):
    pdf = frame()
    expr = f'groupby("k"){sel}.{what}'
    got = eval("xd.from_pandas(pdf, npartitions=4)." + expr).compute()
    same(got.sort_index(), eval("pdf." + expr).sort_index(), expr)


def test_missing_and_categorical_keys_as_pandas():
    pdf = frame().assign(k=lambda d: d.k.where(d.index % 5 != 0))
    df = xd.from_pandas(pdf, npartitions=3)
    same(df.groupby("k", dropna=False).v.median().compute(), pdf.groupby("k", dropna=False).v.median(), "dropna")
    cat = pdf.assign(k=pdf.k.astype(pd.CategoricalDtype(list("edcbaz"))))
    dc = xd.from_pandas(cat, npartitions=3)
    same(dc.groupby("k").v.median().compute(), cat.groupby("k").v.median(), "categorical")
    same(dc.groupby("k", observed=False).v.shift().compute().sort_index(), cat.groupby("k", observed=False).v.shift(),
         "observed=False, row-wise")
    same(dc.groupby("k", observed=False).v.median().compute(), cat.groupby("k", observed=False).v.median(),
         "observed=False, a row per category")
    same(df.groupby("k", sort=False).v.median().compute().sort_index(), pdf.groupby("k").v.median(), "sort=False")


def test_get_group_keeps_one_keys_rows_without_a_shuffle():
    pdf = frame()
    df = xd.from_pandas(pdf, npartitions=3)
    got = df.groupby("k").get_group("b")
    assert not any(k.startswith("shuffle") for k in map(str, got.__xsched_graph__()))
    same(got.compute(), pdf.groupby("k").get_group("b"), "get_group")
    same(df.groupby(["k", "j"]).v.get_group(("b", 1)).compute(), pdf.groupby(["k", "j"]).v.get_group(("b", 1)),
         "2 keys")
    with pytest.raises(ValueError, match="a key has 2 values"):
        df.groupby(["k", "j"]).get_group("b")


def test_mistakes_fail_when_built():
    df = xd.from_pandas(frame().assign(s="x"), npartitions=2)
    with pytest.raises(TypeError, match=r"groupby\(...\).median: pandas refuses it on columns .*'s': 'str'"):
        df.groupby("k").s.median()
    with pytest.raises(ValueError):
        df.groupby("k").v.rolling(-1)
    with pytest.raises(AttributeError, match="has no 'nonsense'; it has sum"):
        df.groupby("k").v.rolling(2).nonsense()
    tm.assert_series_equal(df.groupby(df.k).v.median().compute(), df.compute().groupby("k").v.median())  # (a Series key too)


def test_a_missing_name_says_what_to_do():
    df = xd.from_pandas(pd.DataFrame({"amount": [1.0, 2.0]}), npartitions=1)
    with pytest.raises(AttributeError, match="xsched calls it 'to_xsched_array'"):
        df.to_dask_array
    with pytest.raises(AttributeError, match=r"Series.factorize is not run across partitions here.*"
                                             r"map_partitions\(lambda part: part.factorize\(...\)\)"):
        df.amount.factorize
    with pytest.raises(AttributeError, match=r"did you mean 'amount'\?\); its columns are \['amount'\]"):
        df.ammount
    with pytest.raises(AttributeError, match=r"'sume' \(did you mean 'sum'\?\)"):
        df.amount.sume
    with pytest.raises(AttributeError, match=r"apply\(lambda group: group.take\(...\)\)"):
        df.groupby("amount").take
    assert not hasattr(df.amount, "_secret") and not hasattr(df, "__array_priority__x")
    with pytest.raises(AttributeError) as caught:  # (sent from a worker, it reads the same)
        df.amount.sume
    assert str(pickle.loads(pickle.dumps(caught.value))) == str(caught.value)


@pytest.mark.parametrize("method", sorted(groupby_whole.EXAMPLES))
def test_each_generated_method_shows_a_runnable_example(method):
    """The docstring of every method made from a pandas name carries an example (doctest does
    not find methods set on a class of another module, so it runs here)."""
    doc = getattr(groupby_whole.SeriesGroupBy if method in groupby_whole.SERIES_ONLY else GroupBy, method).__doc__
    assert ">>> df = xd.from_pandas" in doc and "df.groupby(" in doc
    test = doctest.DocTestParser().get_doctest(doc, {}, method, None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.failures == 0 and runner.tries >= 3


@pytest.mark.parametrize("n", [1, 4])
@pytest.mark.parametrize("by", ['"k"', '["k", "j"]'])
@pytest.mark.parametrize("what", ["nlargest(3)", "nsmallest(2)", "nlargest(2, keep='last')", "nsmallest(4, keep='all')"])
def test_a_groups_largest_and_smallest_like_pandas(n, by, what):
    pdf = frame(200).assign(w=lambda d: d.w.round())  # (ties, which keep= decides among as pandas)
    expr = f"groupby({by}).w.{what}"
    out = eval(f"xd.from_pandas(pdf, npartitions={n})." + expr)
    assert out.npartitions == 1
    same(out.compute(), eval("pdf." + expr), expr)


@pytest.mark.parametrize("n", [1, 4])
def test_a_groups_unique_values_in_order_like_pandas(n):
    pdf = frame(200)
    for expr in ('groupby("k").w.unique()', 'groupby(["k", "j"]).v.unique()'):
        got, expected = eval(f"xd.from_pandas(pdf, npartitions={n})." + expr).compute(), eval("pdf." + expr)
        tm.assert_index_equal(got.index, expected.index)
        for a, b in zip(got, expected):
            np.testing.assert_array_equal(a, b)  # (each group's values in their first appearance)


@pytest.mark.parametrize("n", [1, 4])
@pytest.mark.parametrize("expr", ['groupby("k")[["j", "w"]].value_counts()', 'groupby("k").value_counts()',
                                  'groupby(["k", "j"])[["w"]].value_counts(normalize=True)'])
def test_a_frames_value_counts_per_group_like_pandas(n, expr):
    pdf = frame(300).drop(columns="v")
    got, expected = eval(f"xd.from_pandas(pdf, npartitions={n})." + expr).compute(), eval("pdf." + expr)
    keys = 2 if '["k", "j"]' in expr else 1
    tm.assert_series_equal(got.sort_index(), expected.sort_index())  # (equal counts in an order of their own)
    key_order = list(dict.fromkeys(expected.index.droplevel(list(range(keys, expected.index.nlevels)))))
    assert list(dict.fromkeys(got.index.droplevel(list(range(keys, got.index.nlevels))))) == key_order
    assert all(g.is_monotonic_decreasing for _, g in got.groupby(level=list(range(keys)), sort=False))


@pytest.mark.parametrize("n", [1, 3, 6])
@pytest.mark.parametrize("kwargs", [{}, {"sort": False}, {"dropna": False}, {"sort": False, "dropna": False}])
@pytest.mark.parametrize("by", ["k", ["k", "j"]])
def test_ngroup_and_ngroups_like_pandas(n, kwargs, by):
    pdf = frame(90).assign(k=lambda d: d.k.where(d.index % 11 != 3))  # (missing keys: NaN numbers with dropna)
    df = xd.from_pandas(pdf, npartitions=n)
    for ascending in (True, False):
        tm.assert_series_equal(df.groupby(by, **kwargs).ngroup(ascending).compute(),
                               pdf.groupby(by, **kwargs).ngroup(ascending))
    assert df.groupby(by, **kwargs).ngroups.compute() == pdf.groupby(by, **kwargs).ngroups


def test_ngroup_of_a_categorical_key_in_its_categories_order():
    pdf = frame(50).assign(c=lambda d: pd.Categorical(d.k, categories=list("edcbaz")))
    df = xd.from_pandas(pdf, npartitions=3)
    tm.assert_series_equal(df.groupby("c", observed=True).ngroup().compute(),
                           pdf.groupby("c", observed=True).ngroup())
    assert df.groupby("c", observed=True).ngroups.compute() == 5
    with pytest.raises(NotImplementedError, match="observed=True"):
        df.groupby("c", observed=False).ngroups
    tm.assert_series_equal(df.groupby(df.k).ngroup().compute(), pdf.groupby(pdf.k).ngroup())  # (a Series key too)


@pytest.mark.parametrize("n", [1, 4])
@pytest.mark.parametrize("dropna", [True, False])
@pytest.mark.parametrize("expr", ['.v.median()', '[["v", "w"]].quantile([0.2, 0.9])', '.v.nlargest(2)', '.describe()',
                                  '.w.unique()'])
def test_whole_group_results_with_sort_false_keep_the_keys_first_appearance(n, dropna, expr):
    rng = np.random.default_rng(3)
    pdf = pd.DataFrame({"k": rng.choice([f"key{i}" for i in range(25)] + [None], 300), "j": rng.integers(0, 2, 300),
                        "v": rng.normal(size=300), "w": rng.integers(0, 4, 300)})
    df = xd.from_pandas(pdf, npartitions=n)
    for by in ('"k"', '["k", "j"]'):
        full = f"groupby({by}, sort=False, dropna={dropna}){expr}"
        got, expected = eval("df." + full).compute(), eval("pdf." + full)
        if "unique" in expr:
            tm.assert_index_equal(got.index, expected.index)
        else:
            same(got, expected, full)


@pytest.mark.parametrize("n", [1, 4])
@pytest.mark.parametrize("sort", [True, False])
@pytest.mark.parametrize("expr", ['.agg(["sum", "median"])', '.agg({"v": "median", "w": ["nunique", "sum"]})',
                                  '.v.agg(["mean", "skew", "sem"])', '.agg(m=("v", "median"), t=("w", "sum"))',
                                  '.agg(lambda s: s.max() - s.min())', '.v.agg("median")',
                                  '.v.agg(mid="median", top="max")', '[["v", "w"]].agg("kurt")'])
def test_agg_with_names_no_tree_merges_runs_on_whole_groups_like_pandas(n, sort, expr):
    pdf = frame(120)
    full = f"groupby('k', sort={sort}){expr}"
    out = eval(f"xd.from_pandas(pdf, npartitions={n})." + full)
    assert out.npartitions == 1
    same(out.compute(), eval("pdf." + full), full)


def test_agg_on_whole_groups_gives_one_partition():
    df = xd.from_pandas(frame(), npartitions=3)
    with pytest.raises(ValueError, match="'median' runs on whole groups.*drop split_out"):
        df.groupby("k").agg(["sum", "median"], split_out=2)


@pytest.mark.parametrize("n", [1, 4])
@pytest.mark.parametrize("what", ["sum()", "mean()", "count()", "ohlc()", "size()", "v.agg(['min', 'max'])",
                                  "v.first()"])
def test_grouped_resample_on_whole_groups_like_pandas(n, what):
    rng = np.random.default_rng(0)
    pdf = pd.DataFrame({"k": rng.choice(list("abc"), 200), "v": rng.normal(size=200)},
                       index=pd.date_range("2024-01-01", periods=200, freq="17min"))
    expr = f"groupby('k').resample('2h').{what}" if not what.startswith("v.") else \
        f"groupby('k').v.resample('1D').{what[2:]}"
    got = eval(f"xd.from_pandas(pdf, npartitions={n})." + expr).compute().sort_index()
    expected = eval("pdf." + expr).sort_index()
    (tm.assert_frame_equal if isinstance(expected, pd.DataFrame) else tm.assert_series_equal)(got, expected,
                                                                                            check_freq=False)


@pytest.mark.parametrize("expr", ["resample('1D').v.sum()", "resample('1D')[['v', 'w']].mean()",
                                  "resample('6h')['v'].max()", "rolling(3).w.sum()", "expanding()[['v']].max()",
                                  "ewm(alpha=0.5).v.mean()"])
def test_a_grouped_window_selects_columns_as_pandas(expr):
    """``df.groupby(k).resample(...).v``: columns picked after the window, as pandas allows."""
    pdf = frame(120).set_index(pd.date_range("2024-01-01", periods=120, freq="53min"))
    got = eval(f"xd.from_pandas(pdf, npartitions=4).groupby('k').{expr}").compute().sort_index()
    expected = eval(f"pdf.groupby('k').{expr}").sort_index()
    same(got, expected, expr)


def test_a_grouped_windows_selection_names_what_is_wrong():
    df = xd.from_pandas(frame().set_index(pd.date_range("2024-01-01", periods=60, freq="h")), npartitions=2)
    with pytest.raises(KeyError, match="no column 'zz'.*its columns are"):
        df.groupby("k").resample("1D")["zz"]
    with pytest.raises(KeyError, match=r"of one column already \('v'\)"):
        df.groupby("k").v.resample("1D")["w"]
    with pytest.raises(AttributeError, match="has no 'zz'; it has sum"):
        df.groupby("k").rolling(2).zz


def test_rows_take_only_the_keys_and_the_selected_columns_to_their_groups():
    """``df.groupby(k).v.transform(...)`` moves k and v through its two exchanges, not every
    column of the frame; a frame-wide method moves them all, as it sees them all."""
    pdf = frame()
    df = xd.from_pandas(pdf, npartitions=3)

    def moved(out):
        tags = [t for k, t in dict(out._graph).items() if str(k).startswith("tag-in-place")]
        return {tuple(t.args[1]) for t in tags}

    one = df.groupby("k").v.transform("mean")
    assert moved(one) == {("k", "v")}
    same(one.compute(), pdf.groupby("k").v.transform("mean"), "transform")
    assert moved(df.groupby(["k", "j"])[["v", "w"]].shift()) == {("k", "j", "v", "w")}
    assert moved(df.groupby("k").shift()) == {("k", "j", "v", "w")}
    same(df.groupby("k").shift().compute(), pdf.groupby("k").shift(), "shift")


@pytest.mark.parametrize("npartitions", [1, 2])
@pytest.mark.parametrize("method", ["median", "sem", "any", "all", "mean"])
def test_unobserved_categories_pair_with_other_keys_values_of_rows_with_a_missing_category(npartitions, method):
    # (ki=1 is held only by a row whose categorical key is missing: pandas still pairs it with
    # every category)
    pdf = pd.DataFrame({"kc": pd.Categorical(["a", None, "b", "a"], categories=["a", "b", "z"]),
                        "ki": [0, 1, 0, 2], "y": [1.0, 2, 3, 4]})
    df = xd.from_pandas(pdf, npartitions=npartitions)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = getattr(pdf.groupby(["kc", "ki"], observed=False).y, method)()
    tm.assert_series_equal(getattr(df.groupby(["kc", "ki"], observed=False).y, method)().compute(), expected)


@pytest.mark.parametrize("split_out", [None, 1])
def test_groupby_nunique_dropna_false_counts_a_missing_value_as_one_more(split_out):
    pdf = pd.DataFrame({"k": [1, 1, 2, 2, 3, 1], "v": [5, np.nan, 6, 6, np.nan, np.nan]})
    df = xd.from_pandas(pdf, npartitions=3)
    for dropna in (True, False):
        tm.assert_series_equal(df.groupby("k").v.nunique(dropna=dropna, split_out=split_out).compute(),
                               pdf.groupby("k").v.nunique(dropna=dropna))


@pytest.mark.parametrize("npartitions", [1, 2, 3])
def test_rows_of_missing_keys_get_what_pandas_gives_them(npartitions):
    # (shift's fill_value, shift(0)'s own value: pandas' answer, not a missing one)
    pdf = pd.DataFrame({"k": ["a", None, "a", "b", None], "y": [1.0, 2, 3, 4, 5]})
    df = xd.from_pandas(pdf, npartitions=npartitions)
    for run in (lambda f: f.groupby("k").y.shift(1, fill_value=0), lambda f: f.groupby("k").y.shift(0),
                lambda f: f.groupby("k").y.cumsum(), lambda f: f.groupby("k").y.transform("sum")):
        tm.assert_series_equal(run(df).compute(), run(pdf))
