"""Quantiles and describe of pandas' nullable numbers keep pandas' dtypes (Float64), and
record-less JSON files read as pandas reads them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import xsched.dataframe as xd


@pytest.mark.parametrize("npartitions", [1, 2, 3])
@pytest.mark.parametrize("dtype", ["Int64", "Float64", "UInt8", "Int32", "int64", "float64"])
def test_series_quantiles_in_pandas_dtype(npartitions, dtype):
    values = [1, None, 3, 4, 5, 8] if dtype[0].isupper() or dtype == "float64" else [1, 2, 3, 4, 5, 8]
    s = pd.Series(values, dtype=dtype)
    x = xd.from_pandas(s, npartitions=npartitions)
    got = x.quantile([0.25, 0.5, 0.9])
    assert got._meta.dtype == s.quantile([0.25, 0.5, 0.9]).dtype  # known when built
    pd.testing.assert_series_equal(got.compute(), s.quantile([0.25, 0.5, 0.9]))
    # pandas gives nullable integers back in their dtype when every quantile is whole
    pd.testing.assert_series_equal(x.quantile([0.5, 0.75]).compute(), s.quantile([0.5, 0.75]))
    assert x.quantile(0.5).compute() == s.quantile(0.5)
    empty = pd.Series([None, None], dtype=dtype) if dtype[0].isupper() else s.iloc[:0]
    pd.testing.assert_series_equal(xd.from_pandas(empty, npartitions=1).quantile([0.5]).compute(),
                                   empty.quantile([0.5]))


@pytest.mark.parametrize("npartitions", [1, 2, 3])
def test_describe_of_nullable_columns_is_float64_nullable_as_pandas(npartitions):
    df = pd.DataFrame({"a": pd.Series([1, None, 3, 4], dtype="Int64"), "b": np.arange(4.0),
                       "c": pd.Series([1.5, None, None, None], dtype="Float64")})
    x = xd.from_pandas(df, npartitions=npartitions)
    assert list(x.describe()._meta.dtypes) == list(df.describe().dtypes)
    pd.testing.assert_frame_equal(x.describe().compute(), df.describe())
    for col in "abc":
        pd.testing.assert_series_equal(x[col].describe().compute(), df[col].describe())


@pytest.mark.parametrize("lines, text", [(True, ""), (False, "[]")])
def test_read_json_of_files_without_records_gives_meta_columns_or_none(tmp_path, lines, text):
    path = tmp_path / ("e.jsonl" if lines else "e.json")
    path.write_text(text)
    pd.testing.assert_frame_equal(xd.read_json(str(path), lines=lines).compute(), pd.read_json(path, lines=lines))
    got = xd.read_json(str(path), lines=lines, meta={"a": "int64", "b": "object"})
    assert got._meta.dtypes.to_dict() == {"a": np.dtype("int64"), "b": np.dtype("object")}
    assert got.compute().shape == (0, 2)


def test_read_json_samples_a_first_record_longer_than_the_sample(tmp_path):
    path = tmp_path / "long.jsonl"
    records = [{"id": i, "text": "x" * 5000} for i in range(3)]
    pd.DataFrame(records).to_json(path, orient="records", lines=True)
    got = xd.read_json(str(path), sample=100).compute()
    pd.testing.assert_frame_equal(got, pd.read_json(path, lines=True))


@pytest.mark.parametrize("npartitions", [1, 2])
@pytest.mark.parametrize("values, dtype", [([1, None, 3, 4], "Int64"), ([None, None], "Int64"), ([1, 2, 3], "Int64"),
                                           ([1, None, 2, 3], "UInt8"), ([1.5, None, 3], "Float64"), ([None], "Float64"),
                                           ([1.0, 2, 3], "float64")])
def test_quantiles_of_nullable_numbers_as_pandas_whole_or_not_with_missing_values_or_not(values, dtype, npartitions):
    # (pandas gives a nullable integer back in its dtype only when it held NA and every quantile is whole)
    s = pd.Series(values, dtype=dtype)
    x = xd.from_pandas(s, npartitions=npartitions)
    for q in (0.5, 0.3):
        got, want = x.quantile(q).compute(), s.quantile(q)
        assert type(got) is type(want) and (got == want if not pd.isna(want) else pd.isna(got))
    for q in ([0.5], [0.5, 0.25]):
        pd.testing.assert_series_equal(x.quantile(q).compute(), s.quantile(q))


@pytest.mark.parametrize("npartitions", [1, 2])
@pytest.mark.parametrize("values", [[1, None, 3], [None, None], [5], [2, 2, 2, 2], [1, 2, 3, 4, 5]])
@pytest.mark.parametrize("dtype", ["Int64", "Float64", "float64"])
def test_reductions_of_nullable_numbers_give_pandas_scalars_and_na(values, dtype, npartitions):
    s = pd.Series(values, dtype=dtype)
    x = xd.from_pandas(s, npartitions=min(npartitions, len(values)))
    for method in ("sum", "mean", "min", "max", "var", "std", "sem", "skew", "kurt", "median"):
        got, want = getattr(x, method)().compute(), getattr(s, method)()
        assert type(got) is type(want) or (isinstance(got, float) and isinstance(want, float)), (method, got, want)
        assert (pd.isna(got) and pd.isna(want)) if pd.isna(want) else got == pytest.approx(want), (method, got, want)


@pytest.mark.parametrize("dtype", ["string", "str", "Int64", "boolean"])
@pytest.mark.parametrize("skipna", [True, False])
def test_min_max_of_a_column_with_a_missing_value_give_its_dtypes_missing_value(dtype, skipna):
    """pandas' "string" gives NA and "str" NaN where a value is missing (skipna=False)."""
    values = [True, None, False, True] if dtype == "boolean" else [1, None, 3, 4] if dtype == "Int64" else \
        ["a", None, "c", "d"]
    s = pd.Series(values, dtype=dtype)
    x = xd.from_pandas(s, npartitions=2)
    for method in ("min", "max"):
        got, want = getattr(x, method)(skipna=skipna).compute(), getattr(s, method)(skipna=skipna)
        assert repr(got) == repr(want), (method, got, want)
