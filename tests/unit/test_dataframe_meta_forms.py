"""A meta may be given as ``(name, dtype)`` or ``{column: dtype}`` with pandas' own dtypes
(``pd.StringDtype()``, ``pd.Int64Dtype()``, a ``CategoricalDtype``) as well as NumPy's."""

import pandas as pd
import pandas.testing as tm
import pytest

import xsched.dataframe as xd

PDF = pd.DataFrame({"y": [1.0, 2, 3, 4, 5, 6], "k": list("abcabc")},
                   index=pd.Index([f"r{i}" for i in range(6)], name="rid"))


@pytest.mark.parametrize("dtype", [pd.StringDtype(), PDF.index.dtype, "str"])
def test_groupby_apply_with_a_pandas_dtype_in_its_meta(dtype):
    got = xd.from_pandas(PDF, npartitions=2).groupby("k").y.apply(lambda g: g.index.max(), meta=("y", dtype))
    assert isinstance(got, xd.Series) and got.dtype == pd.Series([], dtype=dtype).dtype
    tm.assert_series_equal(got.compute().sort_index(), PDF.groupby("k").y.apply(lambda g: g.index.max()),
                           check_dtype=False)


def test_map_partitions_meta_dict_of_pandas_dtypes():
    x = xd.from_pandas(PDF, npartitions=2)
    meta = {"n": pd.Int64Dtype(), "c": pd.CategoricalDtype(list("abc"))}
    got = x.map_partitions(lambda p: pd.DataFrame({"n": p.y.astype("Int64"), "c": p.k.astype(meta["c"])}),
                           meta=meta)
    assert got.dtypes.to_dict() == meta
    assert got.compute().n.tolist() == [1, 2, 3, 4, 5, 6]


def test_map_partitions_meta_as_a_list_of_column_dtype_pairs():
    """dask's third spelling: the columns in order, each with its dtype."""
    x = xd.from_pandas(PDF, npartitions=2)
    got = x.map_partitions(lambda p: p.assign(z=p.y * 2)[["z", "y"]], meta=[("z", "f8"), ("y", "f8")])
    assert list(got.columns) == ["z", "y"]
    tm.assert_frame_equal(got.compute(), PDF.assign(z=PDF.y * 2)[["z", "y"]])
