"""Findings of a review of the dataframe functions added on 2026-12-04, each run against
pandas: values at partition boundaries, JSON dtypes, merge_asof's dtypes and empty sides."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import xsched.array as xa
import xsched.dataframe as xd


def test_a_key_value_across_a_partition_boundary_moves_to_one_partition():
    pdf = pd.DataFrame({"t": [0, 1, 2, 2, 2, 3], "v": range(6)})
    ix = xd.from_pandas(pdf, npartitions=2, sort=False).set_index("t", sorted=True)
    assert ix.loc[2].compute().v.tolist() == [2, 3, 4]
    assert len(ix.repartition(divisions=[0, 2, 3]).compute()) == 6
    runs = pd.DataFrame({"t": [1, 2, 2, 2, 2, 2, 2, 3]})
    ix = xd.from_pandas(runs, npartitions=3, sort=False).set_index("t", sorted=True, drop=False)
    for i in range(3):
        part = ix.partitions[i].compute().t
        assert part.empty or (part.min() >= ix.divisions[i] and (part.max() < ix.divisions[i + 1] or i == 2))
    with pytest.raises(ValueError, match="a value lies at the end of one partition and the start of the next"):
        xd.from_pandas(pdf, npartitions=2, sort=False).compute_current_divisions("t")


def test_empty_partitions_at_the_end_leave_the_last_key_findable():
    df = xd.from_pandas(pd.DataFrame({"t": range(9), "v": range(9)}), npartitions=3)
    ix = df[df.v < 6].set_index("t", sorted=True)
    assert ix.loc[5].compute().v.tolist() == [5]
    assert ix.compute().v.tolist() == list(range(6))


def test_missing_keys_leave_the_divisions_unknown_rather_than_drop_rows():
    pdf = pd.DataFrame({"t": [1.0, 2, 3, 4, np.nan, np.nan], "v": range(6)})
    with pytest.warns(UserWarning, match="holds missing values"):
        ix = xd.from_pandas(pdf, npartitions=3, sort=False).set_index("t", sorted=True)
    assert not ix.known_divisions and len(ix.compute()) == 6
    with pytest.raises(TypeError, match="col= names a DataFrame's column"):
        xd.from_pandas(pdf, npartitions=2).t.compute_current_divisions("x")


def test_read_json_never_casts_a_value_away(tmp_path):
    flags = tmp_path / "f.jsonl"
    flags.write_text('{"flag": true, "n": 1}\n' * 20000 + '{"flag": null, "n": 2}\n{"n": 3}\n')
    with pytest.raises(ValueError, match=r"column 'flag' .* holds missing values .* meta=\{'flag': 'object'\}"):
        xd.read_json(str(flags)).compute()
    got = xd.read_json(str(flags), meta={"flag": "object"}).compute().reset_index(drop=True)
    assert got.flag.tail(2).isna().all() and got.n.dtype == np.int64  # (the other column from the sample)
    prices = tmp_path / "p.jsonl"
    prices.write_text('{"price": 10}\n' * 30000 + '{"price": 19.99}\n')
    with pytest.raises(ValueError, match=r"holds values that are not int64 \(e.g. .*19.99\)"):
        xd.read_json(str(prices)).compute()
    assert xd.read_json(str(prices), meta={"price": "float64"}).price.compute().iloc[-1] == 19.99


def test_read_json_of_empty_files_tables_dates_and_gzip(tmp_path):
    x = xd.from_pandas(pd.DataFrame({"a": range(6)}), npartitions=3)
    x[x.a > 3].to_json(str(tmp_path / "recs"), orient="records", lines=False)
    assert xd.read_json(str(tmp_path / "recs" / "*.json"), orient="records", lines=False).a.compute().tolist() == [4, 5]
    x.to_json(str(tmp_path / "tbl"), orient="table")
    assert xd.read_json(str(tmp_path / "tbl" / "*.json"), orient="table").a.compute().tolist() == list(range(6))
    x.to_json(str(tmp_path / "gz" / "p-*.json.gz"))
    assert (tmp_path / "gz" / "p-0.json.gz").read_bytes()[:2] == b"\x1f\x8b"
    assert xd.read_json(str(tmp_path / "gz" / "*.json.gz")).a.compute().tolist() == list(range(6))
    when = pd.date_range("2024-01-01", periods=2, freq="h")
    (tmp_path / "epoch.jsonl").write_text('{"when": 1704067200000}\n{"when": 1704070800000}\n')  # (milliseconds)
    got = xd.read_json(str(tmp_path / "epoch.jsonl"), meta={"when": "datetime64[ns]"}).when.compute()
    assert got.tolist() == list(when)
    ints = xd.read_json(str(tmp_path / "epoch.jsonl"), dtype={"when": "int64"})
    assert ints.when.compute().tolist() == [1704067200000, 1704070800000]
    xd.from_pandas(pd.DataFrame({"when": when}), npartitions=1).to_json(str(tmp_path / "iso"), date_format="iso")
    back = xd.read_json(str(tmp_path / "iso" / "*.json"), meta={"when": "datetime64[ns]"}).when.compute()
    assert back.tolist() == list(when)


def test_read_table_takes_delimiter_too(tmp_path):
    (tmp_path / "t.txt").write_text("a|b\n1|2\n")
    assert xd.read_table(str(tmp_path / "t.txt"), delimiter="|").b.compute().tolist() == [2]


def test_merge_asof_partitions_agree_with_the_meta_and_empty_sides_merge():
    left = xd.from_pandas(pd.DataFrame({"t": [1, 5, 10, 20]}), npartitions=2)
    right = pd.DataFrame({"t": [2, 3, 7], "y": [1, 2, 3], "ok": [True, False, True]})
    res = xd.merge_asof(left, right, on="t")
    for i in range(2):
        assert res.get_partition(i).compute().dtypes.to_dict() == res.dtypes.to_dict()
    L, R = pd.DataFrame({"t": [1, 5, 10], "x": 1.0}), pd.DataFrame({"t": [2, 7], "y": [1.0, 2.0]})
    lx = xd.from_pandas(L, npartitions=2)
    assert len(xd.merge_asof(lx[lx.x > 5], R, on="t").compute()) == 0
    got = xd.merge_asof(lx, R.iloc[:0], on="t").compute().reset_index(drop=True)
    pd.testing.assert_frame_equal(got, pd.merge_asof(L, R.iloc[:0], on="t"))


def test_groupby_by_a_series_partitioned_otherwise_is_refused():
    df = xd.from_pandas(pd.DataFrame({"v": range(10)}), npartitions=2)
    key = pd.Series(list("aabbbbbbbb"), name="k")
    ks = xd.concat([xd.from_pandas(key.iloc[:3], npartitions=1), xd.from_pandas(key.iloc[3:], npartitions=1)])
    with pytest.raises(ValueError, match=r"partitioned otherwise .* s.repartition\(divisions=df.divisions\)"):
        df.groupby(ks).v.sum()
    assert df.groupby(ks.repartition(divisions=df.divisions)).v.sum().compute().to_dict() == {"a": 1, "b": 44}


def test_map_overlap_refuses_functions_that_drop_rows():
    s = xd.from_pandas(pd.Series([1.0, 2, 3, 4, 5, 6]), npartitions=3)
    with pytest.raises(ValueError, match="must return one row per row it is given; it returned"):
        s.map_overlap(lambda x: x[x > 2], 1, 0).compute()


@pytest.mark.parametrize("n", [160_000, 200_000])
def test_nunique_approx_holds_its_accuracy_just_above_the_switch(n):
    values = np.random.default_rng(1).choice(10 ** 8, n, replace=False)  # (distinct, without a 10**8 permutation)
    got = xd.from_pandas(pd.Series(values), npartitions=4).nunique_approx().compute()
    assert abs(got - n) / n < 0.012


def test_from_array_with_an_empty_last_block_keeps_divisions_in_order():
    df = xd.from_array(xa.arange(10, chunks=((4, 0, 6, 0),)))
    assert df.divisions == (0, 4, 9)  # (the empty blocks make no partition)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert df.loc[9].compute().tolist() == [9]


def test_a_categorical_keys_missing_group_comes_last_as_in_pandas():
    pdf = pd.DataFrame({"c": pd.Categorical([None, "x", "y", "x"]), "w": range(4)})
    df = xd.from_pandas(pdf, npartitions=2)
    want = pdf.groupby("c", dropna=False, observed=True).w.sum()
    total = xd.Aggregation("total", chunk=lambda g: g.sum(), agg=lambda s: s.sum())
    for got in (df.groupby("c", dropna=False).w.sum(), df.groupby("c", dropna=False).w.agg(total)):
        assert [str(v) for v in got.compute().index] == [str(v) for v in want.index] == ["x", "y", "nan"]
