"""Columns named by numbers (``pd.DataFrame(array)`` gives 0, 1, 2...) are labels like any
other: grouping by them, choosing rows by them, and the methods that carry time columns."""

import numpy as np
import pandas as pd
import pandas.testing as tm
import pytest

import xsched.dataframe as xd

RNG = np.random.default_rng(3)
DF = pd.DataFrame({0: RNG.integers(0, 3, 24), 1: RNG.random(24), 2: RNG.integers(0, 4, 24),
                   3: pd.date_range("2000", periods=24, freq="h")})

CASES = {
    "groupby sum": lambda d: d.groupby(0)[[1, 2]].sum(),
    "groupby one column mean": lambda d: d.groupby(0)[1].mean(),
    "groupby two keys": lambda d: d.groupby([0, 2])[1].max(),
    "groupby agg dict": lambda d: d.groupby(0).agg({1: "sum", 2: "max"}),
    "groupby named agg": lambda d: d.groupby(2).agg(lo=(1, "min"), n=(0, "count")),
    "groupby mean with a time column": lambda d: d.groupby(0).mean(),
    "groupby std with a time column": lambda d: d.groupby([0, 2]).std(),
    "groupby median": lambda d: d.groupby(0)[1].median(),
    "groupby cumsum": lambda d: d.groupby(0)[1].cumsum(),
    "groupby nunique": lambda d: d.groupby(0)[2].nunique(),
    "nlargest": lambda d: d.nlargest(5, 1),
    "nsmallest of two": lambda d: d.nsmallest(5, [0, 1]),
}


@pytest.mark.parametrize("npartitions", [1, 3])
@pytest.mark.parametrize("case", sorted(CASES))
def test_columns_named_by_numbers_as_pandas(case, npartitions):
    got = CASES[case](xd.from_pandas(DF, npartitions=npartitions)).compute()
    expected = CASES[case](DF)
    if isinstance(expected, pd.DataFrame):
        tm.assert_frame_equal(got.sort_index(), expected.sort_index(), check_dtype=False)
    else:
        tm.assert_series_equal(got.sort_index(), expected.sort_index(), check_dtype=False)


def test_a_number_that_names_no_column_is_refused_naming_the_columns():
    with pytest.raises((KeyError, ValueError), match="7"):
        xd.from_pandas(DF, npartitions=2).groupby(7)


def test_a_function_whose_partitions_disagree_with_its_meta_fails_naming_the_partition():
    """map_partitions checks each partition's type and columns against the meta it was given,
    as dask does by default; enforce_metadata=False leaves them unchecked."""
    df = xd.from_pandas(DF, npartitions=3)
    wrong = df.map_partitions(lambda p: p[[0, 1]] if p.index[0] > 0 else p[[0]], meta=DF[[0, 1]])
    with pytest.raises(ValueError, match=r"partition 0 has columns \[0\] but meta says \[0, 1\]"):
        wrong.compute()
    kind = xd.map_partitions(lambda p: p[0], df, meta=DF[[0]])
    with pytest.raises(TypeError, match="partition 0 is a Series but meta says DataFrame"):
        kind.compute()
    unchecked = df.map_partitions(lambda p: p[0], meta=DF[[0]], enforce_metadata=False)
    assert isinstance(unchecked.compute(), pd.Series)
