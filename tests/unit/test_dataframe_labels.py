"""Methods on labels, partition by partition, against pandas: filter (columns and rows),
reindex and set_axis of the columns, the levels of a MultiIndex of either axis, stack; and
the row-relabelling forms refused when built."""

import numpy as np
import pandas as pd
import pandas.testing as tm
import pytest

import xsched.dataframe as xd


def frame():
    return pd.DataFrame({"temp_a": np.arange(12.0), "temp_b": np.arange(12) * 2, "wind": list("abcdefghijkl")},
                        index=[f"r{i:02d}" for i in range(12)])


@pytest.mark.parametrize("n", [1, 3, 5])
@pytest.mark.parametrize("kwargs", [{"like": "temp"}, {"regex": "_b$|wind"}, {"items": ["wind", "temp_a", "zzz"]},
                                    {"like": "1", "axis": 0}, {"regex": "r0[2-5]", "axis": "index"},
                                    {"items": ["r03", "r11"], "axis": 0}])
def test_filter_like_pandas(n, kwargs):
    pdf = frame()
    df = xd.from_pandas(pdf, npartitions=n)
    out = df.filter(**kwargs)
    tm.assert_frame_equal(out.compute(), pdf.filter(**kwargs))
    assert out.divisions == df.divisions  # (rows kept by label: the bounds still hold)
    if kwargs.get("axis") is not None:
        tm.assert_series_equal(df.wind.filter(**{k: v for k, v in kwargs.items() if k != "axis"}).compute(),
                               pdf.wind.filter(**{k: v for k, v in kwargs.items() if k != "axis"}))


@pytest.mark.parametrize("n", [1, 4])
def test_reindex_and_set_axis_of_the_columns_like_pandas(n):
    pdf = frame()
    df = xd.from_pandas(pdf, npartitions=n)
    for kwargs in ({"columns": ["wind", "new", "temp_a"]}, {"columns": ["new"], "fill_value": 0},
                   {"labels": ["temp_b"], "axis": 1}, {"labels": ["temp_b", "x"], "axis": "columns"}):
        tm.assert_frame_equal(df.reindex(**kwargs).compute(), pdf.reindex(**kwargs))
    tm.assert_frame_equal(df.set_axis(["a", "b", "c"], axis=1).compute(), pdf.set_axis(["a", "b", "c"], axis=1))
    with pytest.raises(NotImplementedError, match="loc"):
        df.reindex(["r01"])
    with pytest.raises(NotImplementedError, match="loc"):
        df.reindex(index=["r01"])
    with pytest.raises(NotImplementedError, match="set_index"):
        df.set_axis(list(range(12)), axis=0)


@pytest.mark.parametrize("n", [1, 3])
def test_levels_of_either_axis_like_pandas(n):
    rows = pd.MultiIndex.from_product([["a", "b", "c"], [1, 2], [True, False]], names=["k", "j", "f"])
    cols = pd.MultiIndex.from_tuples([("x", "one"), ("x", "two"), ("y", "one")])
    pdf = pd.DataFrame(np.arange(36).reshape(12, 3), index=rows, columns=cols)
    df = xd.from_pandas(pdf, npartitions=n, sort=False)
    for method, args in (("droplevel", ("j",)), ("swaplevel", ()), ("swaplevel", ("k", "f")),
                         ("reorder_levels", (["f", "k", "j"],))):
        out = getattr(df, method)(*args)
        tm.assert_frame_equal(out.compute(), getattr(pdf, method)(*args))
        assert not out.known_divisions  # (new row labels)
        tm.assert_series_equal(getattr(df[("x", "one")], method)(*args).compute(),
                               getattr(pdf[("x", "one")], method)(*args))
    tm.assert_frame_equal(df.droplevel(0, axis=1).compute(), pdf.droplevel(0, axis=1))
    tm.assert_frame_equal(df.swaplevel(axis=1).compute(), pdf.swaplevel(axis=1))
    with pytest.raises(ValueError, match="no axis named 1 for a Series"):
        df[("x", "one")].droplevel(0, axis=1)


@pytest.mark.parametrize("n", [1, 4])
def test_stack_moves_the_columns_into_the_index_like_pandas(n):
    rng = np.random.default_rng(0)
    pdf = pd.DataFrame(rng.normal(size=(12, 3)), columns=list("abc"), index=[f"r{i:02d}" for i in range(12)])
    pdf.iloc[2, 1] = np.nan
    df = xd.from_pandas(pdf, npartitions=n)
    out = df.stack()
    assert not out.known_divisions  # (the index gained a level)
    tm.assert_series_equal(out.compute(), pdf.stack())
    cols = pd.MultiIndex.from_tuples([("x", "one"), ("x", "two"), ("y", "one")])
    wide = pd.DataFrame(rng.normal(size=(6, 3)), columns=cols)
    frame2 = xd.from_pandas(wide, npartitions=n)
    tm.assert_frame_equal(frame2.stack().compute(), wide.stack())
    tm.assert_frame_equal(frame2.stack(0).compute(), wide.stack(0))
