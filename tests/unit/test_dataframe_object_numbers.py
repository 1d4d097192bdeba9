"""Numbers kept in an ``object`` column (ints and None, as mixed data reads or ``where``
makes them) go through element-wise operations, windows, statistics and groupby as in
pandas: the stand-in's made-up text is no reason to refuse them when built."""

import pandas as pd
import pandas.testing as tm
import pytest

import xsched.dataframe as xd
from xsched.dataframe.standin import _nonempty, on_stand_ins

S = pd.Series([1, 2, None, 4, 5, 6], dtype=object, name="a")
DF = pd.DataFrame({"a": S, "b": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "k": ["x", "y", "x", "y", "x", "z"]})

CASES = {
    "add": lambda d: d.a + 1,
    "divide": lambda d: d.a / 2,
    "compare": lambda d: d.a > 2,
    "power": lambda d: d.a ** 2,
    "frame product": lambda d: d.a * d.b,
    "astype": lambda d: d.a.astype("float64"),
    "clip": lambda d: d.a.clip(2, 4),
    "where": lambda d: d.a.where(d.b > 2, 0),
    "row sums": lambda d: d[["a", "b"]].sum(axis=1),
    "rolling sum": lambda d: d.a.rolling(2).sum(),
    "expanding sum": lambda d: d.a.expanding().sum(),
    "ewm mean": lambda d: d.a.ewm(alpha=0.5).mean(),
    "diff": lambda d: d.a.fillna(0).diff(),
    "median": lambda d: d.a.median(),
    "sem": lambda d: d.a.sem(),
    "skew": lambda d: d.a.skew(),
    "frame quantile": lambda d: d[["a", "b"]].quantile(0.5),
    "frame median": lambda d: d[["a", "b"]].median(),
    "corr": lambda d: d[["a", "b"]].fillna(0).corr(),
    "groupby mean": lambda d: d.groupby("k").a.mean(),
    "groupby std": lambda d: d.groupby("k").a.std(),
    "groupby prod": lambda d: d.groupby("k").a.prod(),
    "groupby median": lambda d: d.groupby("k").a.median(),
    "groupby agg": lambda d: d.groupby("k").agg({"a": ["sum", "mean"], "b": "max"}),
    "agg": lambda d: d[["a", "b"]].agg(["sum", "mean"]),
    "quantiles": lambda d: d.a.quantile([0.25, 0.5, 0.9]),
    "cut": lambda d: (pd.cut if isinstance(d, pd.DataFrame) else xd.cut)(d.a.fillna(1), [0, 3, 6]).cat.codes,
}


@pytest.mark.parametrize("npartitions", [1, 2, 3])
@pytest.mark.parametrize("method", ["sum", "mean", "max"])
def test_numbers_in_an_object_column_resample_as_pandas(npartitions, method):
    df = DF[["a", "b"]].set_axis(pd.date_range("2000", periods=len(DF), freq="h"))
    got = getattr(xd.from_pandas(df, npartitions=npartitions).resample("2h"), method)().compute()
    _same(got, getattr(df.resample("2h"), method)())


def _same(got, expected):
    if isinstance(expected, pd.DataFrame):
        tm.assert_frame_equal(got.astype("float64"), expected.astype("float64"), check_index_type=False)
    elif isinstance(expected, pd.Series):
        tm.assert_series_equal(got.astype("float64"), expected.astype("float64"), check_index_type=False)
    else:
        assert float(got) == pytest.approx(float(expected))


@pytest.mark.parametrize("npartitions", [1, 2, 3])
@pytest.mark.parametrize("case", sorted(CASES))
def test_numbers_in_an_object_column_as_pandas(case, npartitions):
    got = CASES[case](xd.from_pandas(DF, npartitions=npartitions)).compute()
    _same(got, CASES[case](DF))


def test_text_of_pandas_string_dtype_is_still_refused_when_built():
    """A text column (pandas' ``str``) cannot hold numbers: its refusal stays at build time."""
    x = xd.from_pandas(pd.DataFrame({"t": ["p", "q"]}), npartitions=1)
    assert x.t.dtype != object
    with pytest.raises(ValueError, match="two-row stand-in"):
        x.t / 2


def test_text_in_an_object_column_fails_in_its_task_naming_pandas_error():
    """Text held as ``object`` builds (the column could have held numbers) and fails when
    computed with pandas' own error."""
    x = xd.from_pandas(pd.DataFrame({"t": pd.Series(["p", "q"], dtype=object)}), npartitions=1)
    with pytest.raises(TypeError):
        (x.t / 2).compute()


def test_on_stand_ins_tries_again_only_for_object_columns():
    calls = []

    def failing(meta):
        def run():
            calls.append(1)
            stand_in = _nonempty(meta)
            return stand_in / 2
        return run

    with pytest.raises(TypeError):  # (a str column: once, pandas' own error)
        on_stand_ins(failing(pd.Series([], dtype="str")))
    assert len(calls) == 1
    calls.clear()
    out = on_stand_ins(failing(pd.Series([], dtype=object)))  # (text fails, numbers pass)
    assert len(calls) == 2 and list(out) == [0.5, 1.0]


def test_a_failure_of_both_tries_raises_the_first():
    def run():
        stand_in = _nonempty(pd.Series([], dtype=object))
        if isinstance(stand_in.iloc[0], str):
            raise KeyError("text")
        raise IndexError("numbers")
    with pytest.raises(KeyError, match="text"):
        on_stand_ins(run)
    # nothing is left in force: the next stand-in is text again
    assert isinstance(_nonempty(pd.Series([], dtype=object)).iloc[0], str)


def test_frame_apply_takes_pandas_default_axis_and_refuses_it_naming_the_ways():
    """pandas' ``df.apply(f)`` runs ``f`` on each whole column; running it per partition would
    give a value per partition and column, so it is refused, not run row-wise."""
    x = xd.from_pandas(DF[["b"]], npartitions=2)
    with pytest.raises(NotImplementedError, match="axis=1.*reduction.*map_partitions"):
        x.apply(lambda c: c.max())
    got = x.apply(lambda r: r.b * 2, axis=1, meta=(None, "float64")).compute()
    tm.assert_series_equal(got, DF[["b"]].apply(lambda r: r.b * 2, axis=1))
