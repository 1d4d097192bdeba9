"""Every method's ``axis`` read as pandas reads it: 0 / "index" / "rows" the rows, 1 / "columns"
a DataFrame's columns, anything else refused when the expression is built (one ``axis_number``)."""

import numpy as np
import pandas as pd
import pytest

import xsched.dataframe as xd
from xsched.dataframe.core import axis_number

PDF = pd.DataFrame({"a": [1.0, 5, 3, 2, np.nan, 4], "b": [4.0, 1, 2, 2, 6, 0]}, index=list("uvwxyz"))

METHODS = {
    "sum": lambda o, a: o.sum(axis=a), "mean": lambda o, a: o.mean(axis=a), "std": lambda o, a: o.std(axis=a),
    "min": lambda o, a: o.min(axis=a), "any": lambda o, a: o.any(axis=a), "median": lambda o, a: o.median(axis=a),
    "sem": lambda o, a: o.sem(axis=a), "skew": lambda o, a: o.skew(axis=a), "idxmax": lambda o, a: o.idxmax(axis=a),
    "quantile": lambda o, a: o.quantile(0.5, axis=a), "rank": lambda o, a: o.rank(axis=a),
    "cumsum": lambda o, a: o.cumsum(axis=a), "ffill": lambda o, a: o.ffill(axis=a),
    "add": lambda o, a: o.add(1, axis=a), "truncate": lambda o, a: o.truncate(axis=a),
    "set_axis": lambda o, a: o.set_axis(["p", "q"], axis=a), "clip": lambda o, a: o.clip(1, 3, axis=a),
}


@pytest.fixture(scope="module")
def frames():
    df = xd.from_pandas(PDF, npartitions=2)
    return {"frame": (PDF, df), "series": (PDF.a, df.a)}


@pytest.mark.parametrize("name, kind", [(n, k) for n in sorted(METHODS) for k in ("frame", "series")
                                        if (n, k) not in (("quantile", "series"), ("set_axis", "series"))])
@pytest.mark.parametrize("axis", [2, "col"])
def test_an_axis_pandas_has_not_is_refused_when_built(frames, name, kind, axis):
    p, x = frames[kind]
    with pytest.raises(ValueError, match="No axis named"):
        METHODS[name](p, axis)
    with pytest.raises(ValueError, match=f"{name}: no axis named"):
        METHODS[name](x, axis)


@pytest.mark.parametrize("name", ["sum", "mean", "idxmax", "rank", "cumsum", "add", "squeeze"])
def test_a_series_has_no_columns_axis(frames, name):
    method = METHODS.get(name, lambda o, a: o.squeeze(axis=a))
    with pytest.raises(ValueError, match="for a Series: its only axis is 0"):
        method(frames["series"][1], "columns")


@pytest.mark.parametrize("axis", ["rows", np.int64(0), "index"])
def test_rows_by_any_name(frames, axis):
    p, x = frames["frame"]
    pd.testing.assert_frame_equal(xd.concat([x, x], axis=axis).compute(), pd.concat([p, p], axis=axis))
    pd.testing.assert_series_equal(x.sum(axis=axis).compute(), p.sum(axis=axis))
    pd.testing.assert_frame_equal(x.rank(axis=axis).compute(), p.rank(axis=axis))
    with pytest.raises(NotImplementedError, match="squeeze"):
        x.squeeze(axis=axis)


@pytest.mark.parametrize("axis", ["columns", np.int64(1)])
def test_columns_by_any_name(frames, axis):
    p, x = frames["frame"]
    pd.testing.assert_series_equal(x.mean(axis=axis).compute(), p.mean(axis=axis))
    pd.testing.assert_frame_equal(x.drop("a", axis=axis).compute(), p.drop("a", axis=axis))
    pd.testing.assert_series_equal(x[["a"]].squeeze(axis=axis).compute(), p[["a"]].squeeze(axis=axis))


def test_none_where_pandas_takes_it_and_not_elsewhere(frames):
    p, x = frames["frame"]
    assert x.sum(axis=None).compute() == p.sum(axis=None)
    pd.testing.assert_frame_equal(x.add(1, axis=None).compute(), p.add(1, axis=None))
    pd.testing.assert_series_equal(x.a.add(1, None, None, None).compute(), p.a.add(1, None, None, None))
    for method in (lambda o: o.idxmax(axis=None), lambda o: o.rank(axis=None), lambda o: o.quantile(axis=None)):
        with pytest.raises(ValueError, match="No axis named None"):
            method(p)
        with pytest.raises(ValueError, match="no axis named None"):
            method(x)


def test_a_series_operator_reads_its_axis_third(frames):
    p, x = frames["series"]
    with pytest.raises(ValueError, match="No axis named 1"):
        p.add(1, None, None, 1)
    with pytest.raises(ValueError, match="add: no axis named 1 for a Series"):
        x.add(1, None, None, 1)


def test_axis_number():
    assert [axis_number(a, "f") for a in (0, "index", "rows", 1, "columns", None)] == [0, 0, 0, 1, 1, None]
    with pytest.raises(ValueError, match="f: no axis named None for a DataFrame"):
        axis_number(None, "f", none=False)
    with pytest.raises(ValueError, match="f: no axis named 'columns' for a Series"):
        axis_number("columns", "f", columns=False)


@pytest.mark.parametrize("kind", ["frame", "series"])
@pytest.mark.parametrize("call", [lambda o: o.count(skipna=False), lambda o: o.any(numeric_only=True),
                                  lambda o: o.all(numeric_only=False)])
def test_keywords_pandas_reductions_have_not_are_refused_when_built(frames, kind, call):
    p, x = frames[kind]
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        call(p)
    with pytest.raises(TypeError, match=r"\.(count|any|all)\(\) got an unexpected keyword argument .* \(as pandas'\)"):
        call(x)


def test_a_series_count_takes_no_keyword_and_a_frames_its_own(frames):
    p, x = frames["series"]
    for keyword in ({"numeric_only": True}, {"axis": 0}):
        with pytest.raises(TypeError):
            p.count(**keyword)
        with pytest.raises(TypeError, match="Series.count"):
            x.count(**keyword)
    pf, xf = frames["frame"]
    pd.testing.assert_series_equal(xf.count(axis=0, numeric_only=True).compute(), pf.count(axis=0, numeric_only=True))
    assert x.count().compute() == p.count()
