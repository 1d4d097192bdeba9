"""Joins, groupings and duplicates as a user's comparison with pandas found them: ``merge``
on index level names (``on``, ``left_on``, ``right_on``), ``groupby`` by the index's name among
columns, iterating a grouping (refused, with what to do), ``drop_duplicates(ignore_index=True)``
and ``merge(validate=...)``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pandas.testing as tm
import pytest

import xsched.dataframe as xd


def _rows(df: pd.DataFrame, index: bool = True) -> pd.DataFrame:
    """``df`` in a set order, its index kept as columns (``index=False``: left out), as a
    merge's rows come in no set order."""
    names = [n if n is not None else "__index__" for n in df.index.names]
    flat = df.rename_axis(names).reset_index(drop=not index)
    return flat.sort_values(list(flat.columns), kind="stable").reset_index(drop=True)


# --------------------------------------------------------------------------- merge on index level names

LEFT = pd.DataFrame({"k": list("abcdaeb"), "j": [0, 1, 2, 0, 1, 2, 0], "x": range(7)})
RIGHT = pd.DataFrame({"k": list("abcf"), "j": [0, 1, 1, 0], "y": [10., 20., 30., 40.]})


def _sides(where: str) -> tuple:
    """LEFT and RIGHT with ``k`` the index (named ``k``) on the side(s) ``where`` names."""
    left = LEFT.set_index("k") if where in ("left", "both") else LEFT
    right = RIGHT.set_index("k") if where in ("right", "both") else RIGHT
    return left, right


@pytest.mark.parametrize("how", ["inner", "left"])
@pytest.mark.parametrize("npartitions", [1, 3])
@pytest.mark.parametrize("where", ["right", "left", "both"])
def test_merge_on_names_an_index_level(how, npartitions, where):
    pleft, pright = _sides(where)
    left, right = xd.from_pandas(pleft, npartitions, sort=False), xd.from_pandas(pright, npartitions, sort=False)
    expected = pd.merge(pleft, pright, on="k", how=how)
    got = left.merge(right, on="k", how=how)
    assert list(got.columns) == list(expected.columns)
    assert list(got._meta.index.names) == list(expected.index.names)  # (k is the index where both sides had it)
    result = got.compute()
    if npartitions == 1:  # (one partition: pandas' merge itself, index and all)
        tm.assert_frame_equal(result, expected)
    else:
        both = where == "both"  # (else pandas numbers the rows: here each partition's from 0, as dask's)
        tm.assert_frame_equal(_rows(result, both), _rows(expected, both), check_dtype=False)
        assert list(result.index.names) == list(expected.index.names)


@pytest.mark.parametrize("how", ["inner", "left"])
@pytest.mark.parametrize("npartitions", [1, 3])
def test_merge_on_an_index_level_among_columns_and_left_on_right_on(how, npartitions):
    pleft, pright = LEFT, RIGHT.set_index(["k", "j"])  # (both levels named by on=)
    to = (lambda p: xd.from_pandas(p, npartitions, sort=False))
    tm.assert_frame_equal(_rows(to(pleft).merge(to(pright), on=["k", "j"], how=how).compute(), False),
                          _rows(pd.merge(pleft, pright, on=["k", "j"], how=how), False), check_dtype=False)
    pright = RIGHT.set_index("k").rename_axis("key")  # (a level named otherwise than the left's column)
    got = to(pleft).merge(to(pright), left_on="k", right_on="key", how=how).compute()
    tm.assert_frame_equal(_rows(got, False), _rows(pd.merge(pleft, pright, left_on="k", right_on="key", how=how),
                                                   False), check_dtype=False)
    pleft = LEFT.set_index("k")  # (the level on the left, a column on the right)
    got = to(pleft).merge(to(RIGHT.rename(columns={"k": "kk"})), left_on="k", right_on="kk", how=how).compute()
    tm.assert_frame_equal(_rows(got, False), _rows(pd.merge(pleft, RIGHT.rename(columns={"k": "kk"}), left_on="k",
                                                            right_on="kk", how=how), False), check_dtype=False)


def test_merge_on_a_name_neither_column_nor_level_says_both():
    left, right = xd.from_pandas(LEFT, 2), xd.from_pandas(RIGHT.set_index("k"), 2)
    with pytest.raises(KeyError, match=r"right side\): 'z' is neither a column nor an index level.*levels \['k'\]"):
        left.merge(right, left_on="k", right_on="z")


# --------------------------------------------------------------------------- groupby by the index's name among columns

GROUPED = pd.DataFrame({"k": list("aabbcabca"), "m": [1, 2, 1, 1, 2, 1, 2, 2, 1],
                        "v": [1., 2., 3., 4., 5., 6., 7., 8., 9.], "w": range(9)}).set_index("k")


@pytest.mark.parametrize("npartitions", [1, 2, 3])
@pytest.mark.parametrize("run", [
    lambda g: g.v.sum(), lambda g: g.sum(), lambda g: g.mean(), lambda g: g.size(), lambda g: g.w.max(),
    lambda g: g.agg({"v": "mean", "w": ["min", "count"]}), lambda g: g.agg(total=("v", "sum")),
    lambda g: g.v.median(),
], ids=["v.sum", "sum", "mean", "size", "w.max", "agg-dict", "agg-named", "median"])
def test_groupby_the_index_name_among_columns(npartitions, run):
    df = xd.from_pandas(GROUPED, npartitions, sort=False)
    for by in (["k", "m"], ["m", "k"], ["k"]):
        expected = run(GROUPED.groupby(by))
        got = run(df.groupby(by)).compute()
        if isinstance(expected, pd.Series):
            tm.assert_series_equal(got, expected)
        else:
            tm.assert_frame_equal(got, expected)


def test_groupby_the_index_name_among_columns_reported_case():
    p = pd.DataFrame({"k": ["a", "a", "b"], "m": [1, 2, 1], "v": [1., 2., 3.]}).set_index("k")
    got = xd.from_pandas(p, 2).groupby(["k", "m"]).v.sum().compute()
    tm.assert_series_equal(got, p.groupby(["k", "m"]).v.sum())
    assert got.tolist() == [1.0, 2.0, 3.0] and list(got.index.names) == ["k", "m"]
    flat = xd.from_pandas(p, 2).groupby(["k", "m"], as_index=False).v.sum().compute()
    tm.assert_frame_equal(flat.reset_index(drop=True), p.groupby(["k", "m"], as_index=False).v.sum())


# --------------------------------------------------------------------------- iterating a grouping


@pytest.mark.parametrize("make", [
    lambda df: df.groupby("a"), lambda df: df.groupby("a").b, lambda df: df.groupby("a", as_index=False),
    lambda df: df.set_index("a").groupby(["a", "b"]), lambda df: df.b.groupby(df.a),
], ids=["frame", "column", "as_index=False", "index-name-among-keys", "series-by-series"])
def test_iterating_a_grouping_is_refused_saying_what_to_do(make):
    df = xd.from_pandas(pd.DataFrame({"a": [1, 1, 2], "b": [3, 4, 5]}), npartitions=2)
    with pytest.raises(TypeError, match=r"iterating over the groups of groupby\(.*\) is not offered.*"
                                        r"\.apply\(func, meta=\.\.\.\).*\.get_group\(key\).*df\.compute\(\)"):
        for _key, _group in make(df):
            pass
    grouped = df.groupby("a")  # (what the message names exists)
    assert callable(grouped.apply) and callable(grouped.get_group)


# --------------------------------------------------------------------------- drop_duplicates(ignore_index=True)


@pytest.mark.parametrize("npartitions", [1, 3])
@pytest.mark.parametrize("keep", ["first", "last", False])
def test_drop_duplicates_ignore_index_numbers_the_rows_as_pandas(npartitions, keep):
    pdf = pd.DataFrame({"a": [3, 1, 3, 2, 1, 5, 3], "b": list("xyzwvut")}, index=[9, 8, 7, 6, 5, 4, 3])
    df = xd.from_pandas(pdf, npartitions, sort=False)
    expected = pdf.drop_duplicates(subset="a", keep=keep, ignore_index=True)
    tm.assert_frame_equal(df.drop_duplicates(subset="a", keep=keep, ignore_index=True).compute(), expected)
    tm.assert_series_equal(df.a.drop_duplicates(keep=keep, ignore_index=True).compute(),
                           pdf.a.drop_duplicates(keep=keep, ignore_index=True))
    shuffled = df.drop_duplicates(subset="a", keep=keep, ignore_index=True, split_out=2).compute()
    assert shuffled.index.tolist() == list(range(len(expected)))  # (0..n-1 across partitions, not each's own)
    assert sorted(shuffled.a) == sorted(expected.a)


# --------------------------------------------------------------------------- merge(validate=...)

UNIQUE = pd.DataFrame({"a": [1, 2, 3, 4], "u": list("pqrs")})
REPEATED = pd.DataFrame({"a": [1, 2, 2, 3, 4, 4], "r": range(6)})


def _pandas_says(left, right, validate):
    try:
        return pd.merge(left, right, on="a", validate=validate)
    except pd.errors.MergeError as exc:
        return exc


@pytest.mark.parametrize("validate", ["one_to_one", "1:1", "one_to_many", "1:m", "many_to_one", "m:1",
                                      "many_to_many", "m:m"])
@pytest.mark.parametrize("parts", [(3, 2), (1, 3), (3, 1), (1, 1)])
@pytest.mark.parametrize("sides", ["unique-repeated", "repeated-unique", "repeated-repeated", "unique-unique"])
def test_merge_validate_checks_the_keys_as_pandas(validate, parts, sides):
    pleft, pright = (UNIQUE if side == "unique" else REPEATED for side in sides.split("-"))
    left, right = xd.from_pandas(pleft, parts[0], sort=False), xd.from_pandas(pright, parts[1], sort=False)
    expected = _pandas_says(pleft, pright, validate)
    got = left.merge(right, on="a", validate=validate)
    if isinstance(expected, Exception):
        with pytest.raises(pd.errors.MergeError, match="Merge keys are not unique"):
            got.compute()
    else:
        tm.assert_frame_equal(_rows(got.compute(), False), _rows(expected, False))


def test_merge_validate_refuses_an_unknown_value_when_built():
    df = xd.from_pandas(UNIQUE, 2)
    with pytest.raises(ValueError, match=r"validate must be one of .*'1:1'.*got 'x'"):
        df.merge(df, on="a", validate="x")


def test_merge_validate_reported_case():
    X = xd.from_pandas(REPEATED, 2)
    tm.assert_frame_equal(_rows(X.merge(X, on="a", validate="m:m").compute(), False),
                          _rows(REPEATED.merge(REPEATED, on="a", validate="m:m"), False))
    with pytest.raises(pd.errors.MergeError):
        X.merge(X, on="a", validate="1:1", sort=True).compute()
    big = pd.DataFrame({"a": np.arange(40) % 20, "r": range(40)})  # (the repeats in different partitions)
    with pytest.raises(pd.errors.MergeError, match="not unique in left dataset"):
        xd.from_pandas(big, 4).merge(xd.from_pandas(UNIQUE, 1), on="a", validate="1:1", broadcast=True).compute()


# --------------------------------------------------------------------------- a merge's dtypes

A = pd.DataFrame({"k": [1, 2, 3, 4, 5, 6], "x": np.arange(6, dtype="int32"), "b": [True, False] * 3})
B = pd.DataFrame({"k": [1, 3, 5, 7], "y": [10, 30, 50, 70], "c": [True, True, False, True]})


@pytest.mark.parametrize("how", ["inner", "left", "right", "outer"])
@pytest.mark.parametrize("method", ["broadcast", "tasks"])
def test_merge_meta_has_the_dtypes_of_rows_without_a_match(how, method):
    """The meta says what the result holds (int64 becomes float64, bool object, on the side
    that may lack a match), and every output has it, those whose rows all matched too (the
    p2p exchange's outputs: ``tests/cluster/test_p2p_shuffle.py``)."""
    right = xd.from_pandas(B, npartitions=1 if method == "broadcast" else 2)
    left = xd.from_pandas(A, npartitions=1 if method == "broadcast" and how == "right" else 3)
    kw = {} if method == "broadcast" else {"broadcast": False, "shuffle_method": method}
    m = xd.merge(left, right, on="k", how=how, **kw)
    expected = pd.merge(A, B, on="k", how=how)  # (rows without a match on both sides: pandas' upcast dtypes)
    assert dict(m.dtypes) == dict(expected.dtypes)
    got = m.compute()
    assert dict(got.dtypes) == dict(expected.dtypes)
    tm.assert_frame_equal(_rows(got, index=False), _rows(expected, index=False))
    for i in range(m.npartitions):
        assert dict(m.partitions[i].compute().dtypes) == dict(expected.dtypes), i


def test_merge_dtypes_do_not_depend_on_whether_every_row_matched():
    """pandas keeps int64 when every row of a left join matched; here the dtypes are known
    when the merge is built, so the right side's ints are float64 whatever the data."""
    left = xd.from_pandas(A[A.k % 2 == 1], npartitions=2)
    m = left.merge(xd.from_pandas(B, npartitions=1), on="k", how="left")
    assert m.dtypes["y"] == np.float64 and m.dtypes["c"] == object
    got = m.compute()
    assert got.dtypes["y"] == np.float64 and got.y.tolist() == [10.0, 30.0, 50.0]
