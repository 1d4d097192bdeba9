"""pandas parity of core collections, indexing and methods: index masks, concat(ignore_index),
a Series among frames in concat, categorical unions, str.cat/cat.categories, loc with label lists, setitem of any hashable
name, keyword pass-through to pandas, and tail after a filter."""

import warnings

import numpy as np
import pandas as pd
import pytest

import xsched.dataframe as xd

NPARTS = [1, 2, 3]


@pytest.mark.parametrize("n", NPARTS)
def test_index_comparison_filters(n):
    pdf = pd.DataFrame({"a": range(6)}, index=[10, 11, 12, 13, 14, 15])
    df = xd.from_pandas(pdf, npartitions=n)
    mask = df.index > 11
    np.testing.assert_array_equal(np.asarray(mask.compute()), pdf.index > 11)
    pd.testing.assert_frame_equal(df[df.index > 11].compute(), pdf[pdf.index > 11])
    pd.testing.assert_frame_equal(df.loc[df.index > 11].compute(), pdf.loc[pdf.index > 11])
    pd.testing.assert_frame_equal(df[(df.index <= 13) & (df.a > 0)].compute(),
                                  pdf[(pdf.index <= 13) & (pdf.a > 0)])
    pd.testing.assert_frame_equal(df[~(11 < df.index)].compute(), pdf[~(11 < pdf.index)])
    assert mask.sum().compute() == (pdf.index > 11).sum()
    pd.testing.assert_series_equal(df.a[df.a.index >= 14].compute(), pdf.a[pdf.a.index >= 14])


@pytest.mark.parametrize("n", NPARTS)
def test_index_isin_filters(n):
    pdf = pd.DataFrame({"a": range(6)}, index=list("abcdef"))
    df = xd.from_pandas(pdf, npartitions=n)
    np.testing.assert_array_equal(np.asarray(df.index.isin(["b", "e"]).compute()), pdf.index.isin(["b", "e"]))
    pd.testing.assert_frame_equal(df[df.index.isin(["b", "e"])].compute(), pdf[pdf.index.isin(["b", "e"])])
    pd.testing.assert_frame_equal(df.loc[~df.index.isin(["a"])].compute(), pdf.loc[~pdf.index.isin(["a"])])


def test_concat_interleaves_overlapping_divisions_into_sorted_partitions():
    a = pd.DataFrame({"x": range(10)}, index=range(0, 20, 2))
    b = pd.DataFrame({"x": range(10, 20), "y": 1.0}, index=range(1, 20, 2))
    c = pd.DataFrame({"x": [99]}, index=[4])  # (a label the first has too: after it, as pandas' order)
    out = xd.concat([xd.from_pandas(a, 3), xd.from_pandas(b, 2), xd.from_pandas(c, 1)], interleave_partitions=True)
    expected = pd.concat([a, b, c]).sort_index(kind="stable")
    assert out.known_divisions and out.divisions[0] == 0 and out.divisions[-1] == 19
    pd.testing.assert_frame_equal(out.compute(), expected)
    pd.testing.assert_frame_equal(out.loc[3:7].compute(), expected.loc[3:7])
    plain = xd.concat([xd.from_pandas(a, 3), xd.from_pandas(b, 2)])  # (without it: divisions unknown)
    assert not plain.known_divisions
    ordered = xd.concat([xd.from_pandas(a.iloc[:5], 1), xd.from_pandas(a.iloc[5:], 1)], interleave_partitions=True)
    assert ordered.npartitions == 2 and ordered.known_divisions  # (already in order: end to end)


@pytest.mark.parametrize("n", NPARTS)
def test_concat_ignore_index_numbers_globally(n):
    a = pd.DataFrame({"x": [1, 2, 3]}, index=[5, 6, 7])
    b = pd.DataFrame({"x": [4], "y": ["q"]})
    da, db = xd.from_pandas(a, npartitions=n), xd.from_pandas(b, npartitions=1)
    pd.testing.assert_frame_equal(xd.concat([da, db, da], ignore_index=True).compute(),
                                  pd.concat([a, b, a], ignore_index=True))
    pd.testing.assert_series_equal(xd.concat([da.x, da.x], ignore_index=True).compute(),
                                   pd.concat([a.x, a.x], ignore_index=True))
    pd.testing.assert_frame_equal(xd.concat([da], ignore_index=True).compute(), pd.concat([a], ignore_index=True))
    filtered = xd.concat([da[da.x > 1], da[da.x < 3]], ignore_index=True)  # (empty partitions too)
    pd.testing.assert_frame_equal(filtered.compute(), pd.concat([a[a.x > 1], a[a.x < 3]], ignore_index=True))


@pytest.mark.parametrize("join", ["outer", "inner"])
@pytest.mark.parametrize("ignore_index", [False, True])
def test_concat_of_frames_and_series_makes_each_series_a_column(join, ignore_index):
    pdf = pd.DataFrame({"a": range(6), "b": np.arange(6.0)})
    other = pd.DataFrame({"b": [1.5, 2.5], "c": ["x", "y"]}, index=[10, 11])
    for parts in ([pdf, pdf.a], [pdf.b, pdf], [pdf, pdf.a.rename(None)], [other, pdf.a, other.c]):
        got = xd.concat([xd.from_pandas(p, npartitions=2) for p in parts], join=join, ignore_index=ignore_index)
        pd.testing.assert_frame_equal(got.compute(), pd.concat(parts, join=join, ignore_index=ignore_index),
                                      check_column_type=False)


@pytest.mark.parametrize("n", NPARTS)
def test_astype_category_keeps_categorical(n):
    pdf = pd.DataFrame({"c": ["x", "y", "x", "z", "w", "y"], "d": list("ababab")})
    df = xd.from_pandas(pdf, npartitions=n)
    pd.testing.assert_series_equal(df.c.astype("category").compute(), pdf.c.astype("category"))
    pd.testing.assert_frame_equal(df.astype("category").compute(), pdf.astype("category"))
    c, pc = df.c.astype("category"), pdf.c.astype("category")
    pd.testing.assert_series_equal(c[c != "w"].compute(), pc[pc != "w"])  # (filtered values' categories kept)
    ordered = pd.CategoricalDtype(ordered=True)
    pd.testing.assert_series_equal(df.c.astype(ordered).compute(), pdf.c.astype(ordered))


@pytest.mark.parametrize("n", NPARTS)
def test_str_cat_without_others_is_one_string(n):
    s = pd.Series(["x", None, "y", "", "z", None])
    xs = xd.from_pandas(s, npartitions=n)
    assert xs.str.cat(sep=",").compute() == s.str.cat(sep=",")
    assert xs.str.cat(sep=",", na_rep="-").compute() == s.str.cat(sep=",", na_rep="-")
    assert xs.str.cat().compute() == s.str.cat()
    assert xs[xs == "q"].str.cat(sep=",").compute() == ""
    assert xs[xs == "z"].str.cat(sep=",").compute() == "z"  # (empty partitions left out)
    pd.testing.assert_series_equal(xs.str.cat(xs, sep="+").compute(), s.str.cat(s, sep="+"))


@pytest.mark.parametrize("n", NPARTS)
def test_cat_categories_once(n):
    s = pd.Series(["x", "y", "x", "z"])
    known = xd.from_pandas(s.astype("category"), npartitions=n)
    pd.testing.assert_index_equal(known.cat.categories.compute(), s.astype("category").cat.categories)
    inferred = xd.from_pandas(s, npartitions=n).astype("category")
    pd.testing.assert_index_equal(inferred.cat.categories.compute(), s.astype("category").cat.categories)
    assert inferred.cat.ordered is False


@pytest.mark.parametrize("n", NPARTS)
def test_loc_list_of_labels(n):
    pdf = pd.DataFrame({"s": list("abababab"), "v": range(8)})
    df = xd.from_pandas(pdf, npartitions=n)
    for key in ([0, 3], [3, 0, 3], [7], [], list(range(8)), np.array([5, 2])):
        pd.testing.assert_frame_equal(df.loc[key].compute(), pdf.loc[key])
        pd.testing.assert_series_equal(df.v.loc[key].compute(), pdf.v.loc[key])
        pd.testing.assert_frame_equal(df.loc[key, ["v"]].compute(), pdf.loc[key, ["v"]])
    with pytest.raises(KeyError, match="9"):
        df.loc[[1, 9]]


def test_loc_list_of_labels_unknown_divisions_says_what_to_do():
    df = xd.from_pandas(pd.DataFrame({"v": range(4)}), npartitions=2).clear_divisions()
    with pytest.raises(ValueError, match="isin"):
        df.loc[[0, 3]]


@pytest.mark.parametrize("n", NPARTS)
def test_setitem_any_hashable_column_name(n):
    pdf = pd.DataFrame({0: [1, 2, 3], 1: [4, 5, 6]})
    df = xd.from_pandas(pdf, npartitions=n)
    df[2] = df[0] + 1
    df[("t", 1)] = 7
    pdf[2] = pdf[0] + 1
    pdf[("t", 1)] = 7
    pd.testing.assert_frame_equal(df.compute(), pdf)
    df[["p", "q"]] = df[[0, 1]]
    pdf[["p", "q"]] = pdf[[0, 1]]
    df[["x", "y"]] = 0
    pdf[["x", "y"]] = 0
    pd.testing.assert_frame_equal(df.compute(), pdf)
    with pytest.raises(ValueError, match="one per column"):
        df[["m", "n"]] = df[[0]]


def test_fillna_method_keyword_reaches_pandas():
    xs = xd.from_pandas(pd.Series([1.0, None, 3.0]), npartitions=2)
    with pytest.raises(Exception) as got:
        xs.fillna(method="ffill")
    assert "multiple values" not in str(got.value)
    assert "unexpected keyword argument 'method'" in str(got.value)  # pandas 3's own refusal
    pd.testing.assert_series_equal(xs.fillna(value=0.0).compute(), pd.Series([1.0, 0.0, 3.0]))


@pytest.mark.parametrize("n", [2, 3])
def test_tail_after_filter_warns_and_looks_back(n):
    pdf = pd.DataFrame({"a": range(6)})
    df = xd.from_pandas(pdf, npartitions=n)
    kept = df[df.a < 2]
    with pytest.warns(UserWarning, match="tail"):
        kept.tail(2)
    pd.testing.assert_frame_equal(kept.tail(2, npartitions=-1), pdf[pdf.a < 2].tail(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pd.testing.assert_frame_equal(df.tail(1), pdf.tail(1))


@pytest.mark.parametrize("n", NPARTS)
def test_from_pandas_multiindex_into_partitions(n):
    """A MultiIndex frame splits into any number of partitions (with unknown divisions: its
    labels are tuples) and computes back to pandas' frame, sorted by the index."""
    index = pd.MultiIndex.from_product([[2, 1], list("xzy")], names=["a", "b"])
    pdf = pd.DataFrame({"v": range(6), "w": np.arange(6.0)}, index=index)
    df = xd.from_pandas(pdf, npartitions=n)
    assert df.npartitions == n and not df.known_divisions
    pd.testing.assert_frame_equal(df.compute(), pdf.sort_index())
    pd.testing.assert_frame_equal(df[df.v > 2].compute(), pdf.sort_index()[pdf.sort_index().v > 2])
    assert df.v.sum().compute() == 15
    pd.testing.assert_frame_equal(xd.from_pandas(pdf, npartitions=n, sort=False).compute(), pdf)


def test_groupby_level_groups_by_the_index_labels():
    pdf = pd.DataFrame({"v": [1, 2, 5]}, index=pd.Index([1, 2, 1], name="a"))
    df = xd.from_pandas(pdf, npartitions=1)
    pd.testing.assert_series_equal(df.groupby(level="a").v.sum().compute(), pdf.groupby(level="a").v.sum())
    assert df.reset_index().groupby("a").v.sum().compute().tolist() == [6, 2]


@pytest.mark.parametrize("n", NPARTS)
def test_object_labels_stay_object(n):
    """Stand-ins and results keep an object column or index object, as pandas does (pandas 3
    infers str from made-up or appended labels)."""
    pdf = pd.DataFrame({"k": pd.Series(list("bacedf"), dtype=object), "v": range(6)})
    indexed = xd.from_pandas(pdf, npartitions=n).set_index("k")
    assert indexed._meta.index.dtype == object
    pd.testing.assert_frame_equal(indexed.compute(), pdf.set_index("k").sort_index())
    assert xd.from_pandas(pdf.set_index("k"), npartitions=n).compute().index.dtype == object


def test_tail_takes_compute_second():
    s = xd.from_pandas(pd.Series(range(6)), npartitions=2)
    lazy = s.tail(2, False)
    assert lazy.compute().tolist() == [4, 5]
    assert s.tail(2, npartitions=2).tolist() == [4, 5]


@pytest.mark.parametrize("n", NPARTS)
def test_getitem_calls_a_callable_with_the_collection(n):
    pdf = pd.DataFrame({"x": [3, 1, 4, 1, 5], "y": list("abcde")})
    df = xd.from_pandas(pdf, npartitions=n)
    pd.testing.assert_frame_equal(df[lambda d: d.x > 1].compute(), pdf[lambda d: d.x > 1])
    pd.testing.assert_series_equal(df.x[lambda s: s < 4].compute(), pdf.x[lambda s: s < 4])
    pd.testing.assert_series_equal(df[lambda d: "y"].compute(), pdf[lambda d: "y"])


@pytest.mark.parametrize("n", [1, 3])
def test_str_split_expanded_has_n_plus_one_columns_in_every_partition(n):
    pdf = pd.Series(["a b", "c d e", "f", None, "g h i j"], name="t")
    s = xd.from_pandas(pdf, npartitions=n)
    for method, splits in (("split", 2), ("rsplit", 1), ("split", 3)):
        out = getattr(s.str, method)(" ", n=splits, expand=True)
        assert list(out.columns) == list(range(splits + 1))
        pd.testing.assert_frame_equal(out.compute(), getattr(pdf.str, method)(" ", n=splits, expand=True))
    pd.testing.assert_series_equal(s.str.split(" ").compute(), pdf.str.split(" "))
    with pytest.raises(ValueError, match="give n="):
        s.str.split(" ", expand=True)


@pytest.mark.parametrize("n", [1, 2, 4, 6])
@pytest.mark.parametrize("dtype", ["str", "string[python]", object])  # (an empty value is a token for the first only)
def test_str_get_dummies_has_every_token_in_every_partition(n, dtype):
    pdf = pd.Series(["a|b", "c", None, "b|d", "", "e|a|a"], name="t", dtype=dtype)
    s = xd.from_pandas(pdf, npartitions=n)
    out = s.str.get_dummies()
    assert list(out.columns) == list(pdf.str.get_dummies().columns)  # (the tokens, computed when built)
    pd.testing.assert_frame_equal(out.compute(), pdf.str.get_dummies())
    pd.testing.assert_frame_equal(s.str.get_dummies(sep="|", dtype=bool).compute(), pdf.str.get_dummies(dtype=bool))


def test_a_slice_of_whole_numbers_is_positional_in_pandas_and_refused():
    pdf = pd.DataFrame({"a": range(8)}, index=[1, 3, 4, 6, 7, 9, 10, 12])
    df = xd.from_pandas(pdf, npartitions=3)
    for call, shown in ((lambda: df[2:5], r"df\[2:5\]"), (lambda: df.a[:3], r"s\[:3\]"), (lambda: df[::2], r"df\[::2\]")):
        with pytest.raises(NotImplementedError, match=shown + " takes rows by position in pandas"):
            call()
    pd.testing.assert_frame_equal(df[:].compute(), pdf[:])
    pd.testing.assert_frame_equal(df.loc[2:5].compute(), pdf.loc[2:5])  # (labels: the way named)
    times = pd.DataFrame({"a": range(5)}, index=pd.date_range("2024", periods=5, freq="D"))
    pd.testing.assert_frame_equal(xd.from_pandas(times, npartitions=2)["2024-01-02":"2024-01-04"].compute(),
                                  times["2024-01-02":"2024-01-04"], check_freq=False)
    floats = pd.Series([1, 2, 3], index=[0.5, 1.5, 2.5])
    pd.testing.assert_series_equal(xd.from_pandas(floats, npartitions=2)[1:3].compute(), floats[1:3])


@pytest.mark.parametrize("n", NPARTS)
def test_isin_of_an_xsched_series_tests_against_all_its_values(n):
    s = pd.Series([1, 2, 3, 4, 5, 6, 1, 2])
    values = pd.Series([1, 2, 6, 9], index=[10, 11, 12, 13])  # (labels unlike the series': no alignment)
    got = xd.from_pandas(s, npartitions=n).isin(xd.from_pandas(values, npartitions=2))
    pd.testing.assert_series_equal(got.compute(), s.isin(values))
    index_got = xd.from_pandas(s, npartitions=n).index.isin(xd.from_pandas(values, npartitions=2))
    assert index_got.compute().tolist() == s.index.isin(values).tolist()
    with pytest.raises(TypeError, match="compute them first"):
        xd.from_pandas(s.to_frame("a"), npartitions=n).isin({"a": xd.from_pandas(values, npartitions=1)})


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_fillna_limit_counts_missing_values_over_the_whole_column(n):
    pdf = pd.DataFrame({"x": [np.nan, 1, 2, np.nan, 3, np.nan, 4, 5, np.nan],
                        "y": [np.nan] * 3 + [1.0] * 3 + [np.nan] * 3})
    df = xd.from_pandas(pdf, npartitions=n)
    for limit in (1, 2, 3, 10):
        pd.testing.assert_series_equal(df.x.fillna(0, limit=limit).compute(), pdf.x.fillna(0, limit=limit))
        pd.testing.assert_frame_equal(df.fillna(0, limit=limit).compute(), pdf.fillna(0, limit=limit))
        pd.testing.assert_frame_equal(df.fillna({"y": 7}, limit=limit).compute(), pdf.fillna({"y": 7}, limit=limit))
    if n > 1:
        with pytest.raises(NotImplementedError, match="scalar value or a dict"):
            df.fillna(df.mean(), limit=1)


def test_set_index_refuses_divisions_out_of_order_when_built():
    df = xd.from_pandas(pd.DataFrame({"k": [0, 1, 2, 3, 4] * 4, "v": range(20)}), npartitions=2)
    for divisions in ([3, 1, 0], [1], [0, "a"]):
        with pytest.raises(ValueError, match="divisions must be (sorted, at least two values, the first and last|values of one type)"):
            df.set_index("k", divisions=divisions)
    assert df.set_index("k", divisions=[0, 2, 4]).loc[0].compute().v.tolist() == [0, 5, 10, 15]


def test_map_partitions_gives_partition_info_to_a_function_that_asks_for_it():
    df = xd.from_pandas(pd.DataFrame({"a": range(6)}), npartitions=3)
    seen = df.map_partitions(lambda part, partition_info=None: part.assign(
        number=partition_info["number"], division=partition_info["division"]))
    out = seen.compute()
    assert out.number.tolist() == [0, 0, 1, 1, 2, 2] and out.division.tolist() == [0, 0, 2, 2, 4, 4]
    assert xd.map_partitions(lambda part, partition_info=None: part.a * 0 + partition_info["number"],
                             df).compute().tolist() == [0, 0, 1, 1, 2, 2]
    assert df.map_partitions(lambda part, partition_info=None: part.a * 0, partition_info=7).compute().sum() == 0


def test_str_cat_takes_a_list_of_xsched_series():
    a, b, c = pd.Series(["a", "b", None, "d"]), pd.Series(["x", "y", "z", None]), pd.Series(["1", "2", "3", "4"])
    xa_, xb_, xc_ = (xd.from_pandas(s, npartitions=2) for s in (a, b, c))
    pd.testing.assert_series_equal(xa_.str.cat([xb_, xc_], sep="-", na_rep="?").compute(),
                                   a.str.cat([b, c], sep="-", na_rep="?"))
    with pytest.raises(TypeError, match="a list of xsched Series"):
        xa_.str.cat(["p", "q", "r", "s"])


def test_loc_setting_a_value_pandas_refuses_for_the_dtype_is_refused_when_built():
    df = xd.from_pandas(pd.DataFrame({"a": [1, 2, 3], "b": [1.0, 2, 3]}), npartitions=2)
    with pytest.raises(TypeError, match=r"loc\[..., 'a'\] = 0.5: Invalid value '0.5' for dtype 'int64'"):
        df.loc[df.a > 1, "a"] = 0.5
    with pytest.raises(TypeError, match="Invalid value"):
        s = df.a
        s.loc[s > 1] = 0.5
    df.loc[df.a > 1, "a"] = 7
    df.loc[df.a > 1, "b"] = 0.5
    assert df.compute().to_dict("list") == {"a": [1, 7, 7], "b": [1.0, 0.5, 0.5]}


@pytest.mark.parametrize("optimize_graph", [True, False])
def test_a_frame_rebuilt_from_its_own_delayed_parts_combines_with_the_original(optimize_graph):
    pdf = pd.DataFrame({"a": np.arange(10), "b": np.arange(10) * 0.5})
    part = xd.from_pandas(pdf, npartitions=3)
    part = part[part.a > 2]
    again = xd.from_delayed(part.to_delayed(optimize_graph=optimize_graph), meta=part._meta, divisions=part.divisions)
    want = pdf[pdf.a > 2]
    pd.testing.assert_series_equal((again.b + part.b).compute(), want.b + want.b)
    pd.testing.assert_frame_equal(xd.concat([again, part.rename(columns={"a": "c", "b": "d"})], axis=1).compute(),
                                  pd.concat([want, want.rename(columns={"a": "c", "b": "d"})], axis=1))


def test_lazy_values_inside_list_and_dict_arguments_are_computed_first():
    from xsched import delayed

    pdf = pd.DataFrame({"a": np.arange(10), "b": np.arange(10) * 0.5})
    df = xd.from_pandas(pdf, npartitions=3)
    assert df.a.isin([df.a.max()]).compute().tolist() == pdf.a.isin([9]).tolist()
    assert df.a.isin([delayed(lambda: 9)()]).compute().tolist() == pdf.a.isin([9]).tolist()
    holes = pd.DataFrame({"a": [1.0, np.nan, 3.0, np.nan]})
    f = xd.from_pandas(holes, npartitions=2)
    pd.testing.assert_frame_equal(f.fillna({"a": df.a.max()}).compute(), holes.fillna({"a": 9}))
    pd.testing.assert_frame_equal(f.fillna({"a": df.a.max()}, limit=1).compute(), holes.fillna({"a": 9}, limit=1))
    pd.testing.assert_series_equal(f.a.fillna(df.a.max(), limit=1).compute(), holes.a.fillna(9, limit=1))
    got = df.map_partitions(lambda part, bounds: part[part.a.between(*bounds)], [df.a.min() + 2, df.a.max() - 2])
    assert got.compute().a.tolist() == list(range(2, 8))


def test_a_bag_item_is_passed_by_value_and_lazy_operands_are_refused_when_built():
    import operator

    import xsched.bag as xb
    from xsched import delayed

    pdf = pd.DataFrame({"a": np.arange(10), "b": np.arange(10) * 0.5})
    df = xd.from_pandas(pdf, npartitions=3)
    total = xb.from_sequence([1, 2, 3], npartitions=2).sum()
    assert df.a.map_partitions(operator.add, total, meta=("a", "i8")).compute().tolist() == (pdf.a + 6).tolist()
    later = delayed(lambda: 2.5)()
    got = df.a.map_partitions(operator.mul, later, meta=("a", "f8"))
    pd.testing.assert_series_equal(got.compute(), pdf.a * 2.5)
    for value in (later, total):
        with pytest.raises(TypeError, match=f"add: the value of this {type(value).__name__} is not known until "
                                            r"computed.*map_partitions\(lambda part, v: operator.add\(part, v\), "
                                            r"value, meta=\(s.name"):
            df.a + value
        if value is total:  # (a Delayed takes ``value - df`` itself: a Delayed of the whole frame)
            with pytest.raises(TypeError, match=r"operator.sub\(v, part\), value, meta=df._meta"):
                value - df
        with pytest.raises(TypeError, match="gt: the value of this"):
            df[df.b > value]
    with pytest.raises(ValueError, match="received a Delayed itself .* Pass meta="):
        df.a.clip(upper=later)


def test_to_xsched_array_lengths_are_checked_when_built_and_against_the_partitions():
    df = xd.from_pandas(pd.DataFrame({"a": np.arange(10), "b": np.arange(10) * 0.5}), npartitions=3)
    assert np.isnan(df.to_xsched_array(lengths=False).chunks[0]).all()
    for bad in ([-1, 5, 6], [3.5, 4, 3], "yes"):
        with pytest.raises(ValueError, match="lengths must be True, False/None, or a whole number"):
            df.to_xsched_array(lengths=bad)
    known = df.to_xsched_array(lengths=True)
    assert known.compute().shape == (10, 2)
    real = known.chunks[0]
    wrong = df.to_xsched_array(lengths=(real[0] + 1, real[1] - 1) + real[2:])  # (the right total, cut wrong)
    with pytest.raises(ValueError, match="holds .* rows, but lengths= said"):
        wrong.compute()


def test_from_delayed_checks_dtypes_and_names_and_takes_one_delayed():
    df = xd.from_pandas(pd.DataFrame({"a": np.arange(10), "b": np.arange(10) * 0.5}), npartitions=3)
    with pytest.raises(ValueError, match="partition 0 does not match meta: 'a' is int64, not str"):
        xd.from_delayed(df.to_delayed(), meta={"a": "str", "b": "f8"}).compute()
    with pytest.raises(ValueError, match="it is named 'a', not 'zz'"):
        xd.from_delayed(df.a.to_delayed(), meta=("zz", "i8")).compute()
    assert xd.from_delayed(df.to_delayed(), meta={"a": "str", "b": "f8"}, verify_meta=False).compute().shape == (10, 2)
    assert xd.from_delayed(df.to_delayed()[0]).compute().shape[1] == 2
    with pytest.raises(ValueError, match="divisions must be sorted"):
        xd.from_delayed(df.to_delayed(), meta=df._meta, divisions=[9, 5, 3, 0])


def test_from_array_takes_meta_columns_and_dtypes_and_a_list_of_one_name_for_1d():
    import xsched.array as xa

    x = xa.from_array(np.arange(20.0).reshape(10, 2), chunks=3)
    named = xd.from_array(x, meta=pd.DataFrame({"x": [1.0], "y": [1.0]}).iloc[:0])
    assert named.compute().columns.tolist() == ["x", "y"] and named.x.sum().compute() == 90.0
    cast = xd.from_array(x, meta={"x": "i8", "y": "f4"})
    assert cast.dtypes.to_dict() == cast.compute().dtypes.to_dict() == {"x": np.dtype("int64"), "y": np.dtype("float32")}
    for one_d in (np.arange(5.0), xa.arange(5.0, chunks=2)):
        assert xd.from_array(one_d, columns=["x"]).compute().columns.tolist() == ["x"]
    with pytest.raises(TypeError, match="from_array takes a NumPy or an xsched array, not a DataFrame"):
        xd.from_array(xd.from_pandas(pd.DataFrame({"a": [1]}), npartitions=1))


def test_values_take_pandas_dtype_for_the_columns_together():
    for pdf in (pd.DataFrame({"a": [1, 2], "b": [True, False]}),
                pd.DataFrame({"a": [1.5, 2.0], "b": pd.to_datetime(["2020-01-01", "2020-01-02"])}),
                pd.DataFrame({"a": [1, 2], "b": [0.5, 1.0]})):
        values = xd.from_pandas(pdf, npartitions=2).values
        assert values.dtype == pdf.values.dtype and values.compute().tolist() == pdf.values.tolist()


def test_quantile_of_text_is_refused_when_built_as_pandas_has_none():
    with pytest.raises(TypeError, match="quantile of str values: pandas has none"):
        xd.from_pandas(pd.Series(["foo", "bar baz", "qux"]), npartitions=2).quantile(0.5)
    numbers = xd.from_pandas(pd.Series([1.0, 2.0, 3.0], dtype=object), npartitions=2)
    assert numbers.quantile(0.5).compute() == 2.0


def test_review_mends_loc_rank_from_delayed_isin_and_fillna():
    df = xd.from_pandas(pd.DataFrame({"a": np.arange(10), "b": np.arange(10) * 0.5}), npartitions=3)
    d = xd.from_pandas(pd.DataFrame({"a": range(6)}), npartitions=2)
    d.loc[d.a > 3, "a"] = df.a.max()  # (a lazy value: its dtype decides once computed)
    assert d.compute().a.tolist() == [0, 1, 2, 3, 9, 9]
    ints = pd.Series(pd.Categorical([3, None, 1, 2, 1]))
    pd.testing.assert_series_equal(xd.from_pandas(ints, npartitions=2).rank().compute(), ints.rank())
    unknown = xd.from_delayed(df.to_delayed(), meta=df._meta, divisions=(None,) * 4)
    assert unknown.npartitions == 3 and unknown.compute().shape == (10, 2)
    floats = xd.from_delayed(df.to_delayed(), meta={"a": "f8", "b": "f8"})  # (numbers with numbers, as dask)
    assert floats.compute().shape == (10, 2)
    assert df.a.isin({df.a.max()}).compute().tolist()[-2:] == [False, True]
    times = pd.Series(pd.to_datetime(["2020-01-01", None, None, "2020-01-04", None]))
    pd.testing.assert_series_equal(xd.from_pandas(times, npartitions=2).fillna(pd.Timestamp("2021"), limit=2).compute(),
                                   times.fillna(pd.Timestamp("2021"), limit=2))
    twice = pd.DataFrame([[np.nan, 1.0], [np.nan, np.nan], [2.0, np.nan]], columns=["x", "x"])
    pd.testing.assert_frame_equal(xd.from_pandas(twice, npartitions=2).fillna(0, limit=1).compute(),
                                  twice.fillna(0, limit=1))
