"""xd.assert_eq: equal values pass; values, a result that disagrees with its meta, and
partitions outside their divisions fail, each saying what differs."""

from __future__ import annotations

import pandas as pd
import pytest

import xsched.dataframe as xd
from xsched.dataframe.core import new_collection

PDF = pd.DataFrame({"k": [3, 1, 2, 1, 3, 2], "v": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]}, index=[5, 0, 3, 1, 4, 2])


@pytest.mark.parametrize("npartitions", [1, 2, 3])
def test_equal_values_pass_in_any_partitioning(npartitions):
    df = xd.from_pandas(PDF, npartitions=npartitions)
    assert xd.assert_eq(df, PDF)
    assert xd.assert_eq(df.v.sum(), PDF.v.sum())
    assert xd.assert_eq(df.groupby("k").v.mean(), PDF.groupby("k").v.mean())
    assert xd.assert_eq(df.index, PDF.index)
    assert xd.assert_eq(df[df.v > 2].k, PDF[PDF.v > 2].k)
    assert xd.assert_eq(df.clear_divisions(), PDF.iloc[::-1])  # rows sorted before comparing
    assert xd.assert_eq(df, df)


def test_different_values_fail():
    df = xd.from_pandas(PDF, npartitions=2)
    with pytest.raises(AssertionError):
        xd.assert_eq(df.v + 1, PDF.v)
    with pytest.raises(AssertionError):
        xd.assert_eq(df.v.sum(), PDF.v.sum() + 1)
    with pytest.raises(AssertionError, match="float64 against a DataFrame"):
        xd.assert_eq(df.v.sum(), PDF)  # a number against a frame
    assert xd.assert_eq(df.v, PDF.v.astype("float32"), check_dtype=False)


def test_a_result_that_breaks_its_meta_fails_naming_the_columns():
    df = xd.from_pandas(PDF, npartitions=2)
    lying = df.map_partitions(lambda p: p.assign(k=p.k.astype("float64")), meta=PDF.iloc[:0])
    with pytest.raises(AssertionError, match=r"dtype differs from the meta's.*'k': \('float64', 'int64'\)"):
        xd.assert_eq(lying, PDF.assign(k=PDF.k.astype("float64")))
    # (a meta= given says the Series' name: its partitions are renamed so; a collection
    # whose meta lies about it is made by hand here)
    assert df.v.map_partitions(lambda s: s.rename("w"), meta=PDF.v.iloc[:0]).compute().name == "v"
    named_w = df.v.rename("w")
    lying_name = new_collection(named_w._graph, named_w._name, PDF.v.iloc[:0], named_w.divisions)
    with pytest.raises(AssertionError, match="named 'w', its meta 'v'"):
        xd.assert_eq(lying_name, PDF.v.rename("w"))


def test_partitions_outside_their_divisions_fail():
    df = xd.from_pandas(PDF, npartitions=2)
    shifted = df.map_partitions(lambda p: p.set_axis(p.index + 10), meta=PDF.iloc[:0])
    assert shifted.known_divisions
    with pytest.raises(AssertionError, match="partition 0 holds index labels 10 to 12, outside its division"):
        xd.assert_eq(shifted, PDF.set_axis(PDF.index + 10))
    assert xd.assert_eq(shifted, PDF.set_axis(PDF.index + 10), check_divisions=False)


def test_a_scalar_that_breaks_its_meta_fails():
    s = xd.from_pandas(PDF.v, npartitions=2)
    as_text = s.reduction(lambda p: str(p.sum()), lambda parts: str(sum(float(t) for t in parts)), meta=0.0)
    with pytest.raises(AssertionError, match="the result is '21.0', a str, where its meta is a float"):
        xd.assert_eq(as_text, "21.0")
    assert xd.assert_eq(as_text, "21.0", check_dtype=False)
    whole = pd.Series([1, None, 3], dtype="Int64")
    assert xd.assert_eq(xd.from_pandas(whole, npartitions=2).quantile(0.5), whole.quantile(0.5))  # (int or float)
