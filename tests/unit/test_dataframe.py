"""xsched.dataframe in this process (no cluster): every operation against pandas' own answer,
on random data with several partitionings, plus the errors raised when an expression is built."""

import warnings

import numpy as np
import pandas as pd
import pytest

import xsched
import xsched.dataframe as xd

from tests.support.helpers import as_merged
from xsched.graph.spec import Task

NAMES = ["Alice", "Bob", "Carol", "Dan", "Eve", None]


def frame(seed=0, n=200):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "id": rng.integers(0, 20, n),
        "name": pd.array([NAMES[i] for i in rng.integers(0, len(NAMES), n)], dtype="str"),
        "x": rng.normal(size=n),
        "y": rng.integers(-5, 5, n).astype("float64"),
        "t": pd.date_range("2000-01-01", periods=n, freq="h"),
    })


@pytest.fixture(params=[1, 3, 7])
def data(request):
    pdf = frame(request.param)
    return pdf, xd.from_pandas(pdf, npartitions=request.param)


def eq(a, b, **kw):
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b, **kw)
    elif isinstance(a, pd.Series):
        pd.testing.assert_series_equal(a, b, **kw)
    else:
        assert a == pytest.approx(b) if isinstance(b, float) else a == b


# ---------------------------------------------------------------------- partition-wise


def test_selection_filters_and_arithmetic_match_pandas(data):
    pdf, df = data
    eq(df[["x", "y"]].compute(), pdf[["x", "y"]])
    eq(df[df.x > 0].compute(), pdf[pdf.x > 0])
    eq((df.x * 2 + df.y - 1).compute(), pdf.x * 2 + pdf.y - 1)
    eq((df.y >= 0).compute(), pdf.y >= 0)
    eq(df[(df.x > 0) & (df.y < 2)].compute(), pdf[(pdf.x > 0) & (pdf.y < 2)])
    eq((-df.x).abs().compute(), (-pdf.x).abs())
    eq((1 - df.y).compute(), 1 - pdf.y)


def test_column_methods_match_pandas(data):
    pdf, df = data
    eq(df.assign(z=df.x + df.y, w=3).compute(), pdf.assign(z=pdf.x + pdf.y, w=3))
    eq(df.astype({"y": "int64"}).compute(), pdf.astype({"y": "int64"}))
    eq(df.rename(columns={"x": "xx"}).compute(), pdf.rename(columns={"x": "xx"}))
    eq(df.drop(columns=["t"]).compute(), pdf.drop(columns=["t"]))
    eq(df.dropna().compute(), pdf.dropna())
    eq(df.fillna({"name": "?"}).compute(), pdf.fillna({"name": "?"}))
    eq(df.id.isin([1, 2, 3]).compute(), pdf.id.isin([1, 2, 3]))
    eq(df.x.where(df.x > 0, 0).compute(), pdf.x.where(pdf.x > 0, 0))
    eq(df.x.clip(-1, 1).round(2).compute(), pdf.x.clip(-1, 1).round(2))
    eq(df.id.map(lambda v: v * 2).compute(), pdf.id.map(lambda v: v * 2))
    eq(df.apply(lambda r: r.x + r.y, axis=1, meta=(None, "float64")).compute(),
       pdf.apply(lambda r: r.x + r.y, axis=1))


def test_setitem_adds_a_column():
    pdf = frame()
    df = xd.from_pandas(pdf, npartitions=4)
    df["z"] = df.x * 10
    pdf["z"] = pdf.x * 10
    eq(df.compute(), pdf)


def test_str_dt_accessors_match_pandas(data):
    pdf, df = data
    eq(df.name.str.upper().compute(), pdf.name.str.upper())
    eq(df.name.str.len().compute(), pdf.name.str.len())
    eq(df.t.dt.hour.compute(), pdf.t.dt.hour)
    eq(df.t.dt.floor("D").compute(), pdf.t.dt.floor("D"))


def test_dt_freq_and_to_pytimedelta_as_pandas_or_refused_naming_the_way():
    periods = pd.Series(pd.period_range("2020-01", periods=6, freq="M"))
    assert xd.from_pandas(periods, npartitions=3).dt.freq == periods.dt.freq  # (the dtype's: no compute)
    times = xd.from_pandas(pd.Series(pd.date_range("2020", periods=6)), npartitions=3)
    with pytest.raises(ValueError, match=r"inferred from all its values in order .* pd.infer_freq\(s.compute\(\)\)"):
        times.dt.freq
    spans = pd.Series(pd.to_timedelta([1, 2, 30, 4], unit="h"), index=list("abcd"))
    got = xd.from_pandas(spans, npartitions=2).dt.to_pytimedelta()  # (a value per row, kept with its row)
    assert got.compute().tolist() == list(spans.dt.to_pytimedelta()) and list(got.compute().index) == list("abcd")


def test_map_partitions_with_and_without_meta(data):
    pdf, df = data
    out = df.map_partitions(lambda p: p.assign(s=p.x.cumsum()))
    assert list(out.columns) == list(pdf.columns) + ["s"]
    assert len(out.compute()) == len(pdf)
    lengths = df.map_partitions(len).compute()
    assert lengths.sum() == len(pdf) and len(lengths) == df.npartitions


def test_head_tail_len_and_partitions():
    pdf = frame()
    df = xd.from_pandas(pdf, npartitions=4)
    eq(df.head(3), pdf.head(3))
    eq(df.tail(3), pdf.tail(3))
    assert len(df) == len(pdf)
    eq(df.partitions[1].compute(), pdf.iloc[50:100])
    assert df.partitions[::2].npartitions == 2
    with pytest.warns(UserWarning, match="npartitions=-1"):
        assert len(df.head(80)) == 50
    assert len(df.head(80, npartitions=-1)) == 80


def test_loc_uses_divisions_to_read_only_what_can_match():
    pdf = frame().set_index("t")
    df = xd.from_pandas(pdf, npartitions=8)
    assert df.known_divisions
    lo, hi = pd.Timestamp("2000-01-03"), pd.Timestamp("2000-01-04 05:00")
    sub = df.loc[lo:hi]
    assert sub.npartitions < df.npartitions
    eq(sub.compute(), pdf.loc[lo:hi])
    eq(df.loc[df.x > 1].compute(), pdf.loc[pdf.x > 1])
    eq(df.loc[:, ["x"]].compute(), pdf.loc[:, ["x"]])


@pytest.mark.parametrize("labels", [[0, 1, 3, 4, 6, 8], [8, 6, 4, 3, 1, 0], [3, 4, 5, 0, 1, 2], [5, 3, 1, 4, 2, 0],
                                    [1, 3, 1, 4, 2, 0], list("dbface")])
@pytest.mark.parametrize("npartitions", [1, 2, 3, 6])
def test_loc_between_labels_with_unknown_divisions_is_pandas(labels, npartitions):
    """Divisions unknown: the rows between two labels as pandas gives them on the whole, sorted
    or not (each partition's own slice was taken, unlike pandas where the whole is unsorted),
    and pandas' KeyError where an unsorted index lacks a label or holds it twice."""
    pdf = pd.DataFrame({"x": range(6)}, index=labels)
    df = xd.from_pandas(pdf, npartitions=npartitions, sort=False)
    assert not df.known_divisions
    bounds = [None] + sorted(set(labels)) + (["z", "0"] if isinstance(labels[0], str) else [2.5, 9, -1])
    for a in bounds:
        for b in bounds:
            try:
                want = pdf.loc[a:b]
            except KeyError:
                with pytest.raises(KeyError):
                    df.loc[a:b].compute()
                continue
            eq(df.loc[a:b].compute(), want)
    eq(df.loc[labels[2]].compute(), pdf.loc[[labels[2]]])


def test_loc_between_labels_of_large_sorted_partitions_that_overlap_is_refused():
    """Each partition sorted but the whole not, partitions too large to send their labels to
    one task: refused at compute, saying why and what to do (pandas' rows depend on positions)."""
    pdf = pd.DataFrame({"x": range(3000)}, index=np.r_[np.arange(1500), np.arange(1500)])
    df = xd.from_pandas(pdf, npartitions=2, sort=False)
    with pytest.raises(ValueError, match="each sorted but overlap"):
        df.loc[10:20].compute()
    eq(df.loc[df.index.isin(range(10, 21))].compute(),
       pdf[(pdf.index >= 10) & (pdf.index <= 20)])


def test_repartition_keeps_every_row_in_order(data):
    pdf, df = data
    for n in (1, 2, 5, 11):
        out = df.repartition(npartitions=n)
        assert out.npartitions == n
        eq(out.compute(), pdf)


# ---------------------------------------------------------------------- reductions


def test_reductions_match_pandas(data):
    pdf, df = data
    num = ["id", "x", "y"]
    eq(df[num].sum().compute(), pdf[num].sum())
    eq(df[num].mean().compute(), pdf[num].mean())
    eq(df[num].std().compute(), pdf[num].std())
    eq(df[num].var(ddof=0).compute(), pdf[num].var(ddof=0))
    eq(df.count().compute(), pdf.count())
    eq(df[num].min().compute(), pdf[num].min())
    eq(df[num].max().compute(), pdf[num].max())
    assert df.x.sum().compute() == pytest.approx(pdf.x.sum())
    assert df.x.std().compute() == pytest.approx(pdf.x.std())
    assert df.id.nunique().compute() == pdf.id.nunique()
    assert df.name.nunique().compute() == pdf.name.nunique()
    eq(df.name.value_counts().compute().sort_index(), pdf.name.value_counts().sort_index())
    assert df.t.min().compute() == pdf.t.min()
    assert bool(df.x.gt(5).any().compute() if hasattr(df.x, "gt") else (df.x > 5).any().compute()) is False


def test_variance_stays_accurate_with_a_large_mean():
    values = pd.Series(1e9 + np.arange(1000) % 7, dtype="float64")
    s = xd.from_pandas(values, npartitions=10)
    assert s.var().compute() == pytest.approx(values.var(), rel=1e-9)


def test_empty_partitions_change_no_dtype():
    s = xd.from_pandas(pd.Series([1, 2, 3, 4]), npartitions=2)
    filtered = s[s > 2]
    assert filtered.min().compute() == 3 and filtered.max().compute() == 4
    assert isinstance(filtered.min().compute(), (int, np.integer))


def test_describe_and_quantile_are_exact_on_small_data():
    pdf = frame(n=300)
    df = xd.from_pandas(pdf, npartitions=4)
    d = df.x.describe().compute()
    expected = pdf.x.describe()
    assert d["count"] == expected["count"]
    assert d["min"] == expected["min"] and d["max"] == expected["max"]
    assert d["mean"] == pytest.approx(expected["mean"])
    assert d["50%"] == pytest.approx(expected["50%"], rel=0.05)
    table = df[["x", "y"]].describe().compute()
    assert list(table.columns) == ["x", "y"] and table.loc["count", "y"] == 300


def test_tree_reduction_depth_follows_split_every():
    s = xd.from_pandas(pd.Series(range(64)), npartitions=32)
    graph = s.sum(split_every=4).__xsched_graph__()
    combines = {k.rsplit("-", 1)[0] for k in graph if "-combine-" in k}  # the layers, one per level
    assert len(combines) == 2  # 32 -> 8 -> 2 -> agg
    assert s.sum(split_every=4).compute() == sum(range(64))


# ---------------------------------------------------------------------- groupby


@pytest.mark.parametrize("how", ["sum", "mean", "count", "min", "max", "std", "var", "size", "first", "last"])
def test_groupby_aggregations_match_pandas(data, how):
    pdf, df = data
    expected = getattr(pdf.groupby("id")[["x", "y"]], how)()
    got = getattr(df.groupby("id")[["x", "y"]], how)().compute()
    eq(got, expected, check_exact=False)
    eq(getattr(df.groupby("name").x, how)().compute(), getattr(pdf.groupby("name").x, how)(), check_exact=False)


def test_groupby_agg_specs_split_out_and_multiple_keys(data):
    pdf, df = data
    spec = {"x": ["sum", "mean"], "y": "max"}
    eq(df.groupby("name").agg(spec).compute(), pdf.groupby("name").agg(spec))
    eq(df.groupby(["id", "name"]).x.sum().compute(), pdf.groupby(["id", "name"]).x.sum())
    out = df.groupby("id").x.sum(split_out=3)
    assert out.npartitions == 3
    eq(out.compute().sort_index(), pdf.groupby("id").x.sum())
    eq(df.groupby("id").x.nunique().compute(), pdf.groupby("id").x.nunique())


def test_groupby_apply_and_transform_through_the_shuffle(data):
    pdf, df = data
    got = df.groupby("id").apply(lambda g: g.x.max() - g.x.min(), meta=(None, "float64")).compute()
    expected = pdf.groupby("id").apply(lambda g: g.x.max() - g.x.min())
    eq(got.sort_index(), expected, check_names=False)
    eq(df.groupby("id").x.transform("mean").compute().sort_index(), pdf.groupby("id").x.transform("mean"))


# ---------------------------------------------------------------------- shuffles


def test_hash_shuffle_puts_equal_keys_together(data):
    pdf, df = data
    parts = [p.compute() for p in df.shuffle("id", npartitions=4).to_delayed()]
    owners = {}
    for i, p in enumerate(parts):
        for k in set(p.id):
            assert owners.setdefault(k, i) == i
    eq(pd.concat(parts).sort_values(["t"]), pdf.sort_values(["t"]))


@pytest.mark.parametrize("n", [1, 7, 256, 257, 3000])
def test_split_groups_rows_by_output_in_their_order(n):
    # (up to 256 outputs the numbers sort as one byte, then as two: both must keep row order)
    from xsched.dataframe.shuffle import _split_by

    pdf = frame(n, n=500).set_index("t")
    where = np.random.default_rng(n).integers(0, n, len(pdf))
    pieces = _split_by(pdf, where, n)
    assert len(pieces) == n
    for j, piece in enumerate(pieces):
        eq(piece, pdf[where == j])
    assert [len(p) for p in _split_by(pdf.iloc[:0], where[:0], n)] == [0] * n


@pytest.mark.parametrize("how", ["inner", "left", "right", "outer"])
def test_merge_on_columns_matches_pandas(how):
    left = frame(1, 300)
    right = pd.DataFrame({"id": np.arange(0, 30, 2), "w": np.arange(15) * 1.5})
    lx, rx = xd.from_pandas(left, npartitions=5), xd.from_pandas(right, npartitions=3)
    got = lx.merge(rx, on="id", how=how).compute()
    expected = left.merge(right, on="id", how=how)
    key = ["id", "t"]
    eq(got.sort_values(key).reset_index(drop=True), expected.sort_values(key).reset_index(drop=True))


def test_merge_broadcasts_a_one_partition_side_and_needs_no_shuffle():
    left = frame(2, 100)
    right = pd.DataFrame({"id": range(20), "w": range(20)})
    out = xd.from_pandas(left, npartitions=4).merge(xd.from_pandas(right, npartitions=1), on="id")
    assert not any(k.startswith("split-") for k in out.__xsched_graph__())
    eq(out.compute().sort_values("t").reset_index(drop=True),
       left.merge(right, on="id").sort_values("t").reset_index(drop=True))


def test_merge_keys_of_different_integer_and_float_types_still_meet():
    left = pd.DataFrame({"k": np.arange(50, dtype="int64"), "a": 1})
    right = pd.DataFrame({"k": np.arange(0, 50, 5, dtype="float64"), "b": 2})
    got = xd.from_pandas(left, npartitions=3).merge(xd.from_pandas(right, npartitions=2), on="k",
                                                     broadcast=False).compute()
    assert sorted(got.k) == list(range(0, 50, 5))


def test_join_on_aligned_indexes_runs_partition_by_partition():
    a = pd.DataFrame({"x": range(40)}, index=range(40))
    b = pd.DataFrame({"y": range(40)}, index=range(40))
    ax, bx = xd.from_pandas(a, npartitions=4), xd.from_pandas(b, npartitions=4)
    out = ax.join(bx)
    assert not any(k.startswith("split-") for k in out.__xsched_graph__())
    eq(out.compute(), as_merged(a.join(b), out))


def test_set_index_sorts_and_knows_divisions(data):
    pdf, df = data
    out = df.set_index("x")
    assert out.known_divisions
    got = out.compute()
    eq(got, pdf.set_index("x").sort_index())
    for i, part in enumerate(out.to_delayed()):
        values = part.compute().index
        if len(values):
            assert out.divisions[i] <= values.min() and values.max() <= out.divisions[i + 1]


def test_set_index_sorted_reads_only_minima_and_maxima():
    pdf = pd.DataFrame({"k": range(100), "v": range(100)})
    out = xd.from_pandas(pdf, npartitions=5, sort=False).set_index("k", sorted=True)
    assert out.divisions == (0, 20, 40, 60, 80, 99)
    assert not any(k.startswith("split-") for k in out.__xsched_graph__())


def test_set_index_sorted_over_overlapping_ranges_forgets_the_old_divisions():
    pdf = pd.DataFrame({"k": [5, 6, 1, 2], "v": range(4)})
    with pytest.warns(UserWarning, match="divisions stay unknown"):
        out = xd.from_pandas(pdf, npartitions=2).set_index("k", sorted=True)
    assert not out.known_divisions  # (it kept the RangeIndex's (0, 2, 3), and loc[1:2] read nothing)
    eq(out.loc[1:2].compute(), pdf.set_index("k").loc[[1, 2]])


def test_set_index_sorted_with_empty_partitions_knows_the_divisions():
    pdf = pd.DataFrame({"k": range(40), "v": range(40)})
    df = xd.from_pandas(pdf, npartitions=4)
    out = df[(df.k < 5) | (df.k > 28)].set_index("k", sorted=True)  # (partition 1 left empty)
    assert out.divisions == (0, 29, 29, 30, 39)
    want = pdf[(pdf.k < 5) | (pdf.k > 28)].set_index("k")
    eq(out.loc[3:30].compute(), want.loc[3:30])
    eq(out.compute(), want)


def test_sort_values_and_drop_duplicates_match_pandas(data):
    pdf, df = data
    eq(df.sort_values("x").compute().reset_index(drop=True), pdf.sort_values("x").reset_index(drop=True))
    eq(df.sort_values("y", ascending=False).y.compute().reset_index(drop=True),
       pdf.sort_values("y", ascending=False).y.reset_index(drop=True))
    eq(df[["id", "name"]].drop_duplicates().compute(), pdf[["id", "name"]].drop_duplicates())
    got = df[["id", "name"]].drop_duplicates(split_out=3).compute()
    assert len(got) == len(pdf[["id", "name"]].drop_duplicates())
    eq(df.id.drop_duplicates().compute(), pdf.id.drop_duplicates())


@pytest.mark.parametrize("by, ascending, na_position", [
    (["a", "b"], True, "last"), (["a", "b"], [False, True], "first"),
    (["c", "a", "b"], [True, False, False], "last"), ("b", False, "first"), (["a"], True, "first"),
])
def test_sort_values_by_several_columns_and_missing_values_first_match_pandas(by, ascending, na_position):
    rng = np.random.default_rng(0)
    pdf = pd.DataFrame({"a": rng.integers(0, 5, 200).astype(float), "b": rng.normal(size=200),
                        "c": rng.integers(0, 3, 200)})
    pdf.loc[rng.choice(200, 15, replace=False), "a"] = np.nan
    pdf.loc[rng.choice(200, 10, replace=False), "b"] = np.nan
    got = xd.from_pandas(pdf, npartitions=7).sort_values(by, ascending=ascending, na_position=na_position)
    eq(got.compute(), pdf.sort_values(by, ascending=ascending, na_position=na_position, kind="stable"))


def test_sort_values_names_what_is_wrong_when_built():
    df = xd.from_pandas(pd.DataFrame({"a": [1, 2], "b": [3, 4]}), npartitions=2)
    with pytest.raises(ValueError, match="ascending has 1 values for 2 columns"):
        df.sort_values(["a", "b"], ascending=[True])
    with pytest.raises(ValueError, match="na_position must be"):
        df.sort_values("a", na_position="middle")
    with pytest.raises(KeyError, match="zz"):
        df.sort_values(["a", "zz"])


# ---------------------------------------------------------------------- errors when built


def test_a_missing_column_fails_when_built_naming_the_columns_that_exist():
    df = xd.from_pandas(frame(), npartitions=2)
    with pytest.raises(KeyError, match=r"no column 'balance'.*'id', 'name', 'x'"):
        df["balance"]
    with pytest.raises(AttributeError, match="balance"):
        df.balance
    with pytest.raises(KeyError, match="'nope'"):
        df.groupby("nope")
    with pytest.raises(KeyError, match="'k'"):
        df.merge(df, on="k")


def test_a_function_that_cannot_run_fails_when_built_and_asks_for_meta():
    df = xd.from_pandas(frame(), npartitions=2)
    with pytest.raises(ValueError, match="meta="):
        df.map_partitions(lambda p: p["missing"])
    with pytest.raises(TypeError, match="mean"):
        df.name.mean()
    with pytest.raises(ValueError, match="pandas refuses it.*'nosuch' is not a valid function"):
        df.groupby("id").agg("nosuch")


def test_partitions_must_line_up():
    a = xd.from_pandas(frame(), npartitions=2)
    b = xd.from_pandas(frame(), npartitions=3)
    with pytest.raises(ValueError, match="2 and 3 partitions"):
        a.clear_divisions().x + b.x
    pd.testing.assert_series_equal((a.x + b.x).compute(), frame().x * 2)  # (known divisions: unified first)


def test_enforce_metadata_names_the_partition_that_differs():
    df = xd.from_pandas(pd.DataFrame({"a": range(4)}), npartitions=2)

    def odd(p):
        return p if p.a.iloc[0] == 0 else p.rename(columns={"a": "b"})

    out = df.map_partitions(odd, meta=df._meta, enforce_metadata=True)
    with pytest.raises(ValueError, match="partition 1 has columns"):
        out.compute()


# ---------------------------------------------------------------------- graphs, repr, delayed


def test_keys_name_the_operation_and_annotations_reach_every_task():
    df = xd.from_pandas(frame(), npartitions=3)
    with xsched.annotate(priority=7):
        out = df[df.x > 0].groupby("id").x.sum()
    graph = out.__xsched_graph__()
    mine = [t for k, t in graph.items() if isinstance(t, Task) and not k.startswith("from-pandas")]
    assert mine and all(t.annotations.get("priority") == 7 for t in mine)
    assert any(k.startswith("groupby-sum-agg-") for k in graph)


def test_repr_and_html_show_columns_and_partitions_without_computing():
    df = xd.from_pandas(frame(), npartitions=3)
    assert repr(df).startswith("xsched.DataFrame<from-pandas-")
    assert "npartitions=3" in repr(df)
    page = df._repr_html_()
    assert "npartitions=3" in page and "<th>name</th>" in page and "float64" in page
    assert "dtype=float64" in repr(df.x)


def test_to_delayed_and_from_delayed_round_trip():
    pdf = frame()
    df = xd.from_pandas(pdf, npartitions=4)
    parts = df.to_delayed()
    assert len(parts) == 4
    back = xd.from_delayed(parts, meta=df._meta)
    eq(back.compute(), pdf)
    again = xd.from_delayed(parts)  # meta from the first partition
    assert list(again.columns) == list(pdf.columns)


def test_persist_without_a_client_keeps_values():
    df = xd.from_pandas(frame(), npartitions=3)
    kept = (df.x * 2).persist()
    assert all(not isinstance(v, Task) for v in kept.__xsched_graph__().values())
    assert kept.sum().compute() == pytest.approx(frame().x.sum() * 2)


def test_no_warnings_on_plain_operations():
    df = xd.from_pandas(frame(), npartitions=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        df.groupby("name").x.mean().compute()
        df.x.describe().compute()


# ---------------------------------------------------------------------- rolling


@pytest.mark.parametrize("window", [1, 3, 10])
def test_rolling_count_windows_match_pandas(window):
    pdf = frame(4, 120)
    df = xd.from_pandas(pdf, npartitions=6)
    eq(df.x.rolling(window).sum().compute(), pdf.x.rolling(window).sum())
    eq(df[["x", "y"]].rolling(window, min_periods=1).mean().compute(),
       pdf[["x", "y"]].rolling(window, min_periods=1).mean())
    eq(df.x.rolling(window).std().compute(), pdf.x.rolling(window).std())


def test_rolling_time_windows_match_pandas_and_move_only_the_overlap():
    pdf = frame(5, 240).set_index("t")
    df = xd.from_pandas(pdf, npartitions=5)
    out = df.x.rolling("3h").mean()
    eq(out.compute(), pdf.x.rolling("3h").mean())
    tails = [k for k in out.__xsched_graph__() if k.startswith("rolling-tail-")]
    assert len(tails) == 4


@pytest.mark.parametrize("window", [1, 2, 3, 4, 8])
def test_centred_count_windows_match_pandas_and_read_only_the_neighbours_edges(window):
    pdf = frame(4, 120)
    df = xd.from_pandas(pdf, npartitions=6)
    out = df.x.rolling(window, center=True).sum()
    eq(out.compute(), pdf.x.rolling(window, center=True).sum())
    eq(df[["x", "y"]].rolling(window, center=True, min_periods=1).mean().compute(),
       pdf[["x", "y"]].rolling(window, center=True, min_periods=1).mean())
    heads = [k for k in out.__xsched_graph__() if k.startswith("rolling-head-")]
    assert len(heads) == 5  # the first rows of every partition but the first


def test_centred_time_windows_match_pandas():
    pdf = frame(5, 240).set_index("t")
    df = xd.from_pandas(pdf, npartitions=5)
    for window in ("3h", "90min"):
        eq(df.x.rolling(window, center=True).mean().compute(), pdf.x.rolling(window, center=True).mean())


def test_rolling_window_longer_than_a_partition_reaches_the_ones_before():
    pser = pd.Series(np.arange(20.0))
    s = xd.from_pandas(pser, npartitions=10)
    pd.testing.assert_series_equal(s.rolling(5).sum().compute(), pser.rolling(5).sum())
    pd.testing.assert_series_equal(s.rolling(5, center=True).sum().compute(), pser.rolling(5, center=True).sum())
    with pytest.raises(TypeError, match="DatetimeIndex"):
        s.rolling("1h")
    # partitions a filter emptied or shortened, count and time windows
    kept = (pser.index < 3) | (pser.index >= 9)
    pd.testing.assert_series_equal(s[s.index.isin(pser.index[kept])].rolling(3).mean().compute(),
                                   pser[kept].rolling(3).mean())
    idx = pd.date_range("2000-01-01", periods=20, freq="10min")
    tser = pd.Series(np.arange(20.0), index=idx)
    t = xd.from_pandas(tser, npartitions=10)
    pd.testing.assert_series_equal(t.rolling("1h").sum().compute(), tser.rolling("1h").sum())
    pd.testing.assert_series_equal(t.rolling("1h", closed="both").max().compute(),
                                   tser.rolling("1h", closed="both").max())
    tkept = tser[(tser.index.minute != 10) & (tser.index.hour != 1)]
    pd.testing.assert_series_equal(t[t.index.isin(tkept.index)].rolling("40min").count().compute(),
                                   tkept.rolling("40min").count())


# ---------------------------------------------------------------------- the planner


def _read_tasks(graph, prefix):
    """The reader tasks of a graph, inside fused tasks too."""
    from xsched.dataframe.planner import Fused
    out = []
    for k, t in graph.items():
        fused = t.args[0] if isinstance(t, Task) and t.args and isinstance(t.args[0], Fused) else None
        inner = fused.tasks.items() if fused is not None else [(k, t)]
        out += [task for key, task in inner if key.startswith(prefix)]
    return out


def test_columns_used_downstream_are_pushed_into_read_parquet(tmp_path):
    pdf = pd.DataFrame({f"c{i}": np.arange(100.0) + i for i in range(20)})
    pdf["name"] = pd.array(["a", "b"] * 50, dtype="str")
    for i in range(4):
        pdf.iloc[i * 25:(i + 1) * 25].to_parquet(tmp_path / f"part.{i}.parquet")
    df = xd.read_parquet(str(tmp_path))
    expr = df[df.c3 > 10].groupby("name").c17.sum()
    reads = _read_tasks(expr.__xsched_graph__(), "read-parquet-")
    assert len(reads) == 4
    assert all(sorted(t.args[4]) == ["c17", "c3", "name"] for t in reads)
    expected = pdf[pdf.c3 > 10].groupby("name").c17.sum()
    eq(expr.compute(), expected)
    # the frame itself, computed whole, reads everything
    assert all(t.args[4] is None for t in _read_tasks(df.__xsched_graph__(), "read-parquet-"))
    assert "read read-parquet-c3-c17-name ['c3', 'c17', 'name']" in _explain(expr)


def test_optimize_makes_the_plan_now_with_or_without_fusing(tmp_path):
    pdf = pd.DataFrame({f"c{i}": np.arange(40.0) + i for i in range(6)})
    for i in range(2):
        pdf.iloc[i * 20:(i + 1) * 20].to_parquet(tmp_path / f"part.{i}.parquet")
    expr = xd.read_parquet(str(tmp_path))[lambda d: d.c1 > 5].c4 * 2
    expected = pdf[pdf.c1 > 5].c4 * 2
    fused, unfused = expr.optimize(), expr.optimize(fuse=False)
    for opt in (fused, unfused):
        assert type(opt) is type(expr) and opt.divisions == expr.divisions and opt.name == expr.name
        eq(opt.compute(), expected)
        reads = _read_tasks(opt.__xsched_graph__(), "read-parquet-")
        assert len(reads) == 2 and all(sorted(t.args[4]) == ["c1", "c4"] for t in reads)
    # fused: one task per partition; not fused: the reader and each step its own task
    assert len(fused.__xsched_graph__()) == 2 < len(unfused.__xsched_graph__())
    assert len(unfused.__xsched_graph__()) == len(expr.optimize(fuse=False).__xsched_graph__())
    total = expr.sum().optimize()
    assert total.compute() == expected.sum() and len(total.__xsched_graph__()) == len(expr.sum().__xsched_graph__())


def _explain(coll):
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        coll.explain()
    return out.getvalue()


def test_columns_pushed_into_read_csv_usecols(tmp_path):
    pdf = pd.DataFrame({"a": range(10), "b": range(10), "c": list("xyxyxyxyxy")})
    pdf.to_csv(tmp_path / "f.csv", index=False)
    df = xd.read_csv(str(tmp_path / "f.csv"))
    expr = df.assign(d=df.a * 2)[["d", "c"]]
    reads = _read_tasks(expr.__xsched_graph__(), "read-csv-")
    assert reads and all(t.args[7].get("usecols") == ["a", "c"] for t in reads)
    eq(expr.compute(), pdf.assign(d=pdf.a * 2)[["d", "c"]])


def test_an_opaque_step_keeps_every_column(tmp_path):
    pdf = pd.DataFrame({"a": range(10), "b": range(10)})
    pdf.to_parquet(tmp_path / "f.parquet")
    df = xd.read_parquet(str(tmp_path / "f.parquet"))
    expr = df.map_partitions(lambda p: p.assign(s=p.a + p.b)).s
    assert all(t.args[4] is None for t in _read_tasks(expr.__xsched_graph__(), "read-parquet-"))
    eq(expr.compute(), (pdf.a + pdf.b).rename("s"))


def test_loc_with_partial_date_strings():
    pdf = frame(6, 300).set_index("t")
    df = xd.from_pandas(pdf, npartitions=6)
    for start, stop in [("2000-01-03", "2000-01-05"), ("2000-01-02 05:00", "2000-01-02 07:00"), (None, "2000-01-02")]:
        eq(df.loc[start:stop].compute(), pdf.loc[start:stop])


@pytest.mark.parametrize("blocksize", [None, 700])
def test_a_comparison_filter_on_a_csv_read_is_parsed_chunk_by_chunk(tmp_path, monkeypatch, blocksize):
    from xsched.dataframe import csv as C

    monkeypatch.setattr(C, "FILTER_CHUNK_ROWS", 7)  # many chunks per partition
    rng = np.random.default_rng(2)
    pdf = pd.DataFrame({"x": rng.integers(0, 100, 300), "y": rng.random(300),
                        "name": rng.choice(["alice", "bob", "carol"], 300)})
    for i in range(3):
        pdf.iloc[i * 100:(i + 1) * 100].to_csv(tmp_path / f"{i}.csv", index=False)
    df = xd.read_csv(str(tmp_path / "*.csv"), blocksize=blocksize)
    expected = df.compute()  # read whole, unfiltered (its index: each block numbers its rows from 0)
    assert len(expected) == 300 and expected.x.sum() == pdf.x.sum()
    expr = df[df.x > 40]
    reads = _read_tasks(expr.__xsched_graph__(), "read-csv-")
    assert reads and all(t.kwargs.get("filters") == (("x", ">", 40),) for t in reads)
    assert "filters=[('x', '>', 40)]" in _explain(expr)
    eq(expr.compute(), expected[expected.x > 40])  # the same rows and index labels as unfiltered-then-filtered
    eq(df[df.name == "bob"].y.sum().compute(), expected[expected.name == "bob"].y.sum())
    # the read is used unfiltered elsewhere too: nothing is pushed
    both = df[df.x > 40].y.sum() + df.y.sum()
    assert all(not t.kwargs.get("filters") for t in _read_tasks(both.__xsched_graph__(), "read-csv-"))
    assert np.isclose(both.compute(), expected[expected.x > 40].y.sum() + expected.y.sum())


def test_a_comparison_filter_on_a_parquet_read_is_pushed_into_its_filters(tmp_path):
    pdf = pd.DataFrame({"x": np.arange(1000), "y": np.arange(1000.0) * 2}, index=pd.Index(np.arange(1000), name="i"))
    for i in range(4):
        pdf.iloc[i * 250:(i + 1) * 250].to_parquet(tmp_path / f"part.{i}.parquet")
    df = xd.read_parquet(str(tmp_path))
    expr = df[df.x >= 600].y
    reads = _read_tasks(expr.__xsched_graph__(), "read-parquet-")
    assert len(reads) == 4 and all(t.kwargs == {"pushed": (("x", ">=", 600),)} for t in reads)
    eq(expr.compute(), pdf[pdf.x >= 600].y)
    # the filter, its mask and the column compared are gone from the plan: the read keeps the rows
    assert "read read-parquet-rows ['x', 'y'] filters=[('x', '>=', 600)] + select getitem ['y']" in _explain(expr)
    # the read is used unfiltered elsewhere too: nothing is pushed
    whole = df[df.x >= 600].y.sum() + df.y.sum()
    assert all("pushed" not in t.kwargs for t in _read_tasks(whole.__xsched_graph__(), "read-parquet-"))
    assert whole.compute() == pdf[pdf.x >= 600].y.sum() + pdf.y.sum()
    # a RangeIndex kept as metadata only: the rows keep the labels they had in the whole file
    ranged_pdf = pdf.reset_index(drop=True)
    ranged_pdf.index = pd.RangeIndex(100, 3100, 3, name="r")
    ranged_pdf.to_parquet(tmp_path / "ranged.parquet")
    ranged = xd.read_parquet(str(tmp_path / "ranged.parquet"))
    expr = ranged[ranged.x >= 600].y
    assert all(t.kwargs for t in _read_tasks(expr.__xsched_graph__(), "read-parquet-"))
    eq(expr.compute(), ranged_pdf[ranged_pdf.x >= 600].y, check_index_type=False)


def test_a_pushed_comparison_of_a_categorical_sees_each_file_s_own_categories(tmp_path):
    pd.DataFrame({"c": pd.Categorical(["a", "b", "a"]), "v": [1, 2, 3]}).to_parquet(tmp_path / "0.parquet", index=False)
    pd.DataFrame({"c": pd.Categorical(["z", "b", "z"]), "v": [4, 5, 6]}).to_parquet(tmp_path / "1.parquet", index=False)
    df = xd.read_parquet(str(tmp_path))
    expr = df[df.c == "z"]
    assert all(t.kwargs for t in _read_tasks(expr.__xsched_graph__(), "read-parquet-"))
    got = expr.compute()  # "z" is not among the first file's categories
    assert got.v.tolist() == [4, 6] and got.c.astype(str).tolist() == ["z", "z"] and got.index.tolist() == [0, 2]
    assert expr.v.sum().compute() == 10


def test_a_pushed_not_equal_keeps_missing_values_as_pandas_does(tmp_path):
    pdf = pd.DataFrame({"x": [1.0, np.nan, 0.0, 2.0, None], "s": pd.array(["a", None, "b", "a", "c"], dtype="str")})
    pdf.to_parquet(tmp_path / "f.parquet", index=False)
    df = xd.read_parquet(str(tmp_path / "f.parquet"))
    back = pd.read_parquet(tmp_path / "f.parquet")
    for col, value in (("x", 0), ("s", "a")):
        expr = df[df[col] != value]
        assert all(t.kwargs for t in _read_tasks(expr.__xsched_graph__(), "read-parquet-"))
        eq(expr.compute(), back[back[col] != value])  # the missing values kept, rows 1 and 4 too


# ---------------------------------------------------------------------- across neighbours, and more methods


@pytest.mark.parametrize("method", ["cumsum", "cumprod", "cummax", "cummin"])
def test_cumulative_methods_match_pandas(data, method):
    pdf, df = data
    small = pdf[["y"]].assign(y=pdf.y.where(pdf.y.abs() < 3) / 2 + 1)  # small values, some missing
    dsmall = df[["y"]].assign(y=df.y.where(df.y.abs() < 3) / 2 + 1)
    eq(getattr(dsmall, method)().compute(), getattr(small, method)())
    eq(getattr(dsmall.y, method)().compute(), getattr(small.y, method)())


@pytest.mark.parametrize("periods", [1, 3, -2])
def test_shift_and_diff_match_pandas(data, periods):
    pdf, df = data
    eq(df.x.shift(periods).compute(), pdf.x.shift(periods))
    eq(df[["x", "y"]].diff(periods).compute(), pdf[["x", "y"]].diff(periods))


def test_more_pandas_methods(data):
    pdf, df = data
    eq(df.query("x > 0 and y < 2").compute(), pdf.query("x > 0 and y < 2"))
    eq(df.eval("s = x + y").compute(), pdf.eval("s = x + y"))
    eq(df.select_dtypes("number").compute(), pdf.select_dtypes("number"))
    eq(df.nlargest(5, "x").compute(), pdf.nlargest(5, "x"))
    eq(df.y.nsmallest(4).compute(), pdf.y.nsmallest(4))
    assert df.size.compute() == pdf.size
    rows, cols = df.shape
    assert (rows.compute(), cols) == pdf.shape
    parts = df.random_split([0.7, 0.3], random_state=3)
    assert sum(len(p) for p in parts) == len(pdf)
    eq(pd.concat([p.compute() for p in parts]).sort_index(), pdf)
    s1, s2 = df.sample(frac=0.3, random_state=5), df.sample(frac=0.3, random_state=5)
    eq(s1.compute(), s2.compute())
    eq(xd.concat([df, df]).compute(), pd.concat([pdf, pdf]))
    eq(xd.to_datetime(df.t.astype(str)).compute(), pd.to_datetime(pdf.t.astype(str)))


@pytest.mark.parametrize("rule", ["1h", "3h", "1D", "7min"])
@pytest.mark.parametrize("method", ["sum", "mean", "count", "max", "first", "size", "std"])
def test_resample_matches_pandas_across_partition_boundaries(rule, method):
    rng = np.random.default_rng(7)
    idx = pd.DatetimeIndex(np.sort(pd.Timestamp("2000-01-01").value + rng.integers(0, 3 * 86400e9, 400)))
    pdf = pd.DataFrame({"x": rng.normal(size=400), "n": rng.integers(0, 10, 400)}, index=idx)
    pdf.index.name = "t"
    df = xd.from_pandas(pdf, npartitions=9)
    got = getattr(df.resample(rule), method)().compute()
    expected = getattr(pdf.resample(rule), method)()
    eq(got, expected, check_freq=False)
    eq(df.x.resample(rule).agg(["min", "max"]).compute(), pdf.x.resample(rule).agg(["min", "max"]),
       check_freq=False)


@pytest.mark.parametrize("rule", ["ME", "MS", "W", "W-WED", "B", "QS"])
@pytest.mark.parametrize("method", ["sum", "mean", "count", "max", "first"])
def test_calendar_resample_matches_pandas_with_empty_bins_between_partitions(rule, method):
    rng = np.random.default_rng(3)
    idx = pd.date_range("2000-01-15", periods=300, freq="13h").append(
        pd.date_range("2000-11-03", periods=100, freq="7h"))  # months with no rows between
    pdf = pd.DataFrame({"x": rng.normal(size=400), "n": rng.integers(0, 10, 400)}, index=idx)
    df = xd.from_pandas(pdf, npartitions=9)
    eq(getattr(df.resample(rule), method)().compute(), getattr(pdf.resample(rule), method)(), check_freq=False)


def _two_stretches():
    rng = np.random.default_rng(5)
    idx = pd.date_range("2000-01-19 05:00", periods=300, freq="13h").append(
        pd.date_range("2000-11-03", periods=100, freq="7h"))  # months with no rows between
    return pd.DataFrame({"x": rng.normal(size=400), "n": rng.integers(0, 10, 400)}, index=idx)


@pytest.mark.parametrize("rule", ["2W", "3MS", "2ME", "2QS", "3B", "2W-WED"])
@pytest.mark.parametrize("method", ["sum", "size", "first", "mean"])
def test_calendar_resample_of_several_units_is_placed_from_the_first_row(rule, method):
    pdf = _two_stretches()
    for nparts in (1, 9):
        df = xd.from_pandas(pdf, npartitions=nparts)
        eq(getattr(df.resample(rule), method)().compute(), getattr(pdf.resample(rule), method)(), check_freq=False)


@pytest.mark.parametrize("rule", ["2W", "3MS", "3B"])
def test_calendar_resample_of_several_units_ohlc_and_agg(rule):
    pdf = _two_stretches()
    df = xd.from_pandas(pdf, npartitions=6)
    eq(df.x.resample(rule).ohlc().compute(), pdf.x.resample(rule).ohlc(), check_freq=False)
    eq(df.resample(rule).agg({"x": ["min", "sum"], "n": "max"}).compute(),
       pdf.resample(rule).agg({"x": ["min", "sum"], "n": "max"}), check_freq=False)


def test_resample_needs_a_sorted_time_index():
    df = xd.from_pandas(frame(), npartitions=3)
    with pytest.raises(TypeError, match="DatetimeIndex"):
        df.resample("1h")
    with pytest.raises(ValueError, match="not a frequency"):
        df.set_index("t", sorted=True).resample("fortnightly")


def test_partitions_by_a_mask_of_bools_and_in_any_order():
    """dask's indexing guide: ``ddf.partitions[mask]`` with a mask computed per partition.
    A list of bools was read as the numbers 1 and 0 (partitions 1 and 0, silently), and
    partitions out of order kept divisions that were no longer sorted."""
    pdf = pd.DataFrame({"a": range(9)}, index=list("abcdefghi"))
    df = xd.from_pandas(pdf, npartitions=3)
    mask = df.a.map_partitions(lambda p: bool(p.sum() > 5)).compute()
    assert mask.tolist() == [False, True, True]
    pd.testing.assert_frame_equal(df.partitions[mask].compute(), pdf.iloc[3:])
    assert df.partitions[[True, False, True]].compute().a.tolist() == [0, 1, 2, 6, 7, 8]
    assert df.partitions[np.array([False, True, False])].divisions == df.divisions[1:3]
    backwards = df.partitions[[2, 0]]
    assert backwards.compute().a.tolist() == [6, 7, 8, 0, 1, 2] and not backwards.known_divisions
    assert df.partitions[[0, 2]].divisions == ("a", "g", "i")
    with pytest.raises(IndexError, match="the mask has 2 values and the collection 3 partitions"):
        df.partitions[[True, False]]


def test_loc_by_a_pandas_mask_or_a_pandas_series_of_labels():
    """``ddf.loc[df["A"] > 1, ["B"]]`` with the pandas frame's own mask (dask's indexing
    guide): matched to the rows by label, as pandas matches it."""
    pdf = pd.DataFrame({"A": [1, 2, 3], "B": [3, 4, 5]}, index=["a", "b", "c"])
    df = xd.from_pandas(pdf, npartitions=2)
    pd.testing.assert_frame_equal(df.loc[pdf["A"] > 1, ["B"]].compute(), pdf.loc[pdf["A"] > 1, ["B"]])
    pd.testing.assert_series_equal(df.A.loc[pdf["A"] != 2].compute(), pdf.A.loc[pdf["A"] != 2])
    pd.testing.assert_frame_equal(df.loc[pd.Series(["c", "a"])].compute(), pdf.loc[["c", "a"]])
    with pytest.raises(Exception, match="Unalignable boolean Series"):
        df.loc[pd.Series([True], index=["a"])].compute()
