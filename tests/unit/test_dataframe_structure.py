"""to_string, to_html and axes: the structure of a collection, shown without computing it."""

from __future__ import annotations

import pandas as pd

import xsched.dataframe as xd


def _boom(part):
    raise RuntimeError("computed")


def test_to_string_shows_divisions_and_dtypes_without_computing():
    pdf = pd.DataFrame({"a": range(6), "b": list("abcdef")})
    df = xd.from_pandas(pdf, npartitions=3).map_partitions(_boom, meta=pdf.iloc[:0])
    text = df.to_string()
    lines = text.splitlines()
    assert lines[1].strip() == "npartitions=3"
    assert lines[2].split() == ["0", "int64", str(pdf.b.dtype)]
    assert [ln.split()[0] for ln in lines[3:]] == ["2", "4", "5"] and all(ln.split()[1:] == ["...", "..."]
                                                                          for ln in lines[3:])
    assert "<table" in df.to_html() and "npartitions=3" in df.to_html()


def test_to_string_of_unknown_divisions_a_series_and_many_partitions():
    s = xd.from_pandas(pd.Series(range(100), name="v"), npartitions=20).clear_divisions()
    lines = s.to_string().splitlines()
    assert lines[0].split() == ["v"] and lines[1].strip() == "npartitions=20" and lines[2].split() == ["int64"]
    assert len(lines) <= 2 + 5 + 1  # max_rows=5, pandas' ellipsis row between
    assert len(s.to_string(max_rows=30).splitlines()) == 2 + 21


def test_axes_are_the_index_and_the_columns():
    pdf = pd.DataFrame({"a": [1, 2, 3], "b": [4.0, 5, 6]}, index=[10, 20, 30])
    df = xd.from_pandas(pdf, npartitions=2)
    index, columns = df.axes
    pd.testing.assert_index_equal(columns, pdf.columns)
    pd.testing.assert_index_equal(index.compute(), pdf.index)
    pd.testing.assert_index_equal(df.a.axes[0].compute(), pdf.a.axes[0])


def test_from_dict_as_a_class_method_as_pandas():
    data = {"a": [1, 2, 3], "b": ["x", "y", "z"]}
    got = xd.DataFrame.from_dict(data, npartitions=2)
    assert got.npartitions == 2
    pd.testing.assert_frame_equal(got.compute(), pd.DataFrame.from_dict(data))
    rows = xd.DataFrame.from_dict({"r": [1, 2], "s": [3, 4]}, orient="index", columns=["u", "v"])
    pd.testing.assert_frame_equal(rows.compute(), pd.DataFrame.from_dict({"r": [1, 2], "s": [3, 4]}, orient="index",
                                                                          columns=["u", "v"]))
