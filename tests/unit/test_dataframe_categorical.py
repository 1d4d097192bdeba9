"""Categories each partition infers for itself (astype("category"), csv, parquet): codes
against the union as pandas gives them, known and unknown metas, and as_known()."""

import pandas as pd
import pandas.testing as tm
import pytest

import xsched.dataframe as xd
from xsched.dataframe.categorical import UNKNOWN_CATEGORIES, has_known_categories

PDF = pd.DataFrame({"s": ["b", "a", "c", "a", "d", "b"], "v": range(6)})


@pytest.mark.parametrize("n", [1, 2, 3])
def test_codes_after_astype_category_are_pandas_codes(n):
    """Each partition sees only some categories; the codes are those of the whole column."""
    s = xd.from_pandas(PDF, npartitions=n).s.astype("category")
    assert not s.cat.known and not has_known_categories(s)
    expected = PDF.s.astype("category")
    tm.assert_series_equal(s.cat.codes.compute(), expected.cat.codes)
    tm.assert_series_equal(s.compute(), expected)
    df = xd.from_pandas(PDF, npartitions=n).astype({"s": "category"})
    assert not df.s.cat.known
    tm.assert_series_equal(df.s.cat.codes.compute(), expected.cat.codes)
    kept = df[df.v > 3]
    tm.assert_series_equal(kept.s.cat.codes.compute(), PDF.astype({"s": "category"})[PDF.v > 3].s.cat.codes)


@pytest.mark.parametrize("n", [1, 3])
def test_known_categories_stay_known(n):
    s = xd.from_pandas(PDF.astype({"s": "category"}), npartitions=n).s
    assert s.cat.known
    tm.assert_series_equal(s.cat.codes.compute(), PDF.s.astype("category").cat.codes)
    given = xd.from_pandas(PDF, npartitions=n).s.astype(pd.CategoricalDtype(list("dcba")))
    assert given.cat.known
    assert given.cat.codes.compute().tolist() == [2, 3, 1, 3, 0, 2]


def test_methods_by_position_need_known_categories_and_as_known_gives_them():
    s = xd.from_pandas(PDF, npartitions=2).s.astype("category")
    with pytest.raises(ValueError, match=r"as_known\(\)"):
        s.cat.rename_categories(list("ABCD"))
    with pytest.raises(ValueError, match="reorder_categories needs the categories"):
        s.cat.reorder_categories(list("dcba"))
    known = s.cat.as_known()
    assert known.cat.known and known._meta.cat.categories.tolist() == list("abcd")
    tm.assert_series_equal(known.cat.rename_categories(list("ABCD")).compute(),
                           PDF.s.astype("category").cat.rename_categories(list("ABCD")))
    assert s.cat.remove_unused_categories().compute().cat.categories.tolist() == list("abcd")


def test_readers_mark_categories_of_their_files_unknown(tmp_path):
    """Parquet files keep the categories of their own rows; csv blocks infer theirs."""
    xd.from_pandas(PDF, npartitions=2).astype({"s": "category"}).to_parquet(str(tmp_path / "pq"))
    read = xd.read_parquet(str(tmp_path / "pq"))
    assert not read.s.cat.known
    expected = PDF.s.astype("category").cat.codes
    assert read.s.cat.codes.compute().tolist() == expected.tolist()
    PDF.to_csv(tmp_path / "a.csv", index=False)
    for dtype in ({"s": "category"}, "category"):
        csv = xd.read_csv(str(tmp_path / "a.csv"), dtype=dtype, blocksize=20, include_path_column=True)
        assert csv.npartitions == 2 and not csv.s.cat.known and csv.path.cat.known
        assert csv.s.cat.codes.compute().tolist() == expected.tolist()
    assert xd.read_csv(str(tmp_path / "a.csv"), blocksize=20).s.dtype != "category"


def test_pieces_made_from_the_meta_add_no_category():
    from xsched.dataframe.pieces import _union_categories

    marked = pd.CategoricalDtype([UNKNOWN_CATEGORIES])
    assert _union_categories([marked, pd.CategoricalDtype([2, 1])]).categories.tolist() == [2, 1]
    union = _union_categories([pd.CategoricalDtype([3]), marked, pd.CategoricalDtype([2, 1])])
    assert union.categories.tolist() == [1, 2, 3]
    assert _union_categories([marked, marked]).categories.tolist() == []
    df = xd.from_pandas(PDF, npartitions=2).astype({"s": "category"})
    out = xd.concat([df, df[df.v > 100]]).compute()
    assert out.s.cat.categories.tolist() == list("abcd")


@pytest.mark.parametrize("n", [1, 2, 3])
def test_categorical_keys_stay_categorical_across_partitions(n):
    """Counts and groups of a column whose partitions inferred their own categories keep a
    CategoricalIndex of the union, as pandas gives for the whole column."""
    s = xd.from_pandas(PDF.s, npartitions=n).astype("category")
    tm.assert_series_equal(s.value_counts().compute(), PDF.s.astype("category").value_counts())
    df = xd.from_pandas(PDF, npartitions=n).astype({"s": "category"})
    whole = PDF.astype({"s": "category"})
    for observed in (True, False):
        tm.assert_series_equal(df.groupby("s", observed=observed).v.sum().compute(),
                               whole.groupby("s", observed=observed).v.sum())


def test_concat_of_different_explicit_categories_gives_what_pandas_gives():
    """Categories that differ from the start (two collections) are not unified: pandas'
    concat makes the column str, and so does the meta."""
    a = pd.DataFrame({"c": pd.Categorical(["b", "a"], categories=["b", "a"], ordered=True)})
    b = pd.DataFrame({"c": pd.Categorical(["c"], ordered=True)})
    out = xd.concat([xd.from_pandas(a, 1), xd.from_pandas(b, 1)])
    expected = pd.concat([a, b])
    assert out._meta.c.dtype == expected.c.dtype
    tm.assert_frame_equal(out.compute(), expected)
    for part in out.to_delayed():  # (each partition as the meta says, not in its own categories)
        assert part.compute().c.dtype == expected.c.dtype
    series = xd.concat([xd.from_pandas(a.c, 1), xd.from_pandas(b.c, 1)])
    assert [p.compute().dtype for p in series.to_delayed()] == [expected.c.dtype] * 2


@pytest.mark.parametrize("n", [1, 3])
def test_sorting_by_unknown_categories_ranks_by_value_with_no_code_step(n):
    """Unknown categories are each partition's own, sorted: values rank as they sort, so the
    sort needs no step turning them into codes (only known categories rank by code)."""
    from xsched.dataframe.shuffle import _categories

    df = xd.from_pandas(PDF, npartitions=n).astype({"s": "category"})
    assert _categories(df, "s") is None
    expected = PDF.astype({"s": "category"}).sort_values("s", kind="stable")
    got = df.sort_values("s").compute()
    tm.assert_series_equal(got.s.astype(str), expected.s.astype(str))
    known = xd.from_pandas(PDF.astype({"s": pd.CategoricalDtype(list("dcba"))}), npartitions=n)
    assert _categories(known, "s").tolist() == list("dcba")
    assert known.sort_values("s").compute().s.tolist() == list("dcbbaa")


@pytest.mark.parametrize("n", [1, 3])
def test_ordered_categories_reduce_and_accumulate_in_their_order(n):
    """min/max/cummax/cummin of an ordered categorical go by the categories' order across
    partitions too (their values as text would rank 'a' < 'm' < 'z')."""
    s = pd.Series(pd.Categorical(["m", "a", "m", "z", "m", "a", None], categories=["z", "m", "a"], ordered=True))
    x = xd.from_pandas(s, npartitions=n)
    assert (x.max().compute(), x.min().compute()) == (s.max(), s.min()) == ("a", "z")
    assert x.agg(["min", "max"]).compute().tolist() == ["z", "a"]
    for method in ("cummax", "cummin"):
        for skipna in (True, False):
            tm.assert_series_equal(getattr(x, method)(skipna=skipna).compute(), getattr(s, method)(skipna=skipna))
    pdf = pd.DataFrame({"c": s, "d": range(7)})
    df = xd.from_pandas(pdf, npartitions=n)
    assert df[["c"]].max().compute().tolist() == pdf[["c"]].max().tolist() == ["a"]
    tm.assert_frame_equal(df.cummax().compute(), pdf.cummax())
    tm.assert_frame_equal(df.cummin().compute(), pdf.cummin())


@pytest.mark.parametrize("n", [1, 3])
def test_values_carried_across_partitions_keep_categories_each_partition_inferred(n):
    """shift and ffill/bfill bring a value from a neighbouring partition, which may not be one
    of this partition's own categories (after astype("category")): still categorical, and
    filled, as pandas gives them."""
    p = pd.Series(["a", None, "b", None, None, None, "c", None, None])
    x = xd.from_pandas(p, npartitions=n).astype("category")
    want = p.astype("category")
    for got, expected in [(x.shift(1), want.shift(1)), (x.shift(-2), want.shift(-2)), (x.ffill(), want.ffill()),
                          (x.bfill(), want.bfill()), (x.ffill(limit=1), want.ffill(limit=1)),
                          (x.fillna("a"), want.fillna("a")), (x.fillna("c", limit=2), want.fillna("c", limit=2))]:
        tm.assert_series_equal(got.compute(), expected)
    frame = xd.from_pandas(pd.DataFrame({"s": p, "v": range(9)}), npartitions=n).astype({"s": "category"})
    tm.assert_frame_equal(frame.fillna({"s": "b"}).compute(),
                          pd.DataFrame({"s": p, "v": range(9)}).astype({"s": "category"}).fillna({"s": "b"}))
