"""User reports, checked against pandas (and dask's API): ``.str``/``.dt`` of the wrong dtype,
``read_parquet(dtype_backend=)``, ``to_parquet(append=True)`` and ``Series.quantile(interpolation=)``."""

import os

import numpy as np
import pandas as pd
import pytest

import xsched.dataframe as xd

PDF = pd.DataFrame({"a": [3, 1, 4, 1, 5, 9, 2], "s": list("abcdefg"),
                    "t": pd.date_range("2021-01-01", periods=7, freq="D")})


# --------------------------------------------------------------------------- .str / .dt of the wrong dtype


@pytest.mark.parametrize("column, kind, pandas_words, fix", [
    ("a", "str", "Can only use .str accessor with string values", ".astype(str).str"),
    ("s", "dt", "Can only use .dt accessor with datetimelike values", ".astype('datetime64[ns]').dt"),
    ("t", "str", "Can only use .str accessor with string values", ".astype(str).str"),
    ("a", "cat", "Can only use .cat accessor with a 'category' dtype", ".astype('category').cat"),
])
def test_accessor_of_the_wrong_dtype_says_what_pandas_says(column, kind, pandas_words, fix):
    with pytest.raises(AttributeError, match=pandas_words.replace(".", r"\.")):
        getattr(PDF[column], kind)
    X = xd.from_pandas(PDF, npartitions=2)
    with pytest.raises(AttributeError) as info:  # (when the expression is built: nothing computed)
        getattr(X[column], kind)
    message = str(info.value)
    assert message.startswith(f".{kind} accessor only for ")
    assert f"column {column!r} is {PDF[column].dtype}" in message
    assert pandas_words in message and fix in message
    assert "map_partitions" not in message and "has no attribute" not in message
    assert not hasattr(X[column], kind) and hasattr(X.s, "str") and hasattr(X.t, "dt")


def test_accessor_fix_the_message_names_runs_as_pandas():
    X = xd.from_pandas(PDF, npartitions=2)
    pd.testing.assert_series_equal(X.a.astype(str).str.upper().compute(), PDF.a.astype(str).str.upper())
    pd.testing.assert_series_equal(X.s.str.upper().compute(), PDF.s.str.upper())
    pd.testing.assert_series_equal(X.t.dt.day.compute(), PDF.t.dt.day)


# --------------------------------------------------------------------------- read_parquet(dtype_backend=)


@pytest.fixture
def parquet_dir(tmp_path):
    pdf = pd.DataFrame({"i": [1, 2, 3, 4], "n": pd.array([1, None, 3, 4], dtype="Int64"),
                        "f": [1.5, np.nan, 2.0, 3.0], "s": ["a", None, "c", "d"], "b": [True, False, True, False],
                        "u": np.array([1, 2, 3, 4], dtype="uint8"), "t": pd.date_range("2020", periods=4)},
                       index=pd.Index([5, 6, 7, 8], name="k"))
    pdf.iloc[:2].to_parquet(tmp_path / "part.0.parquet")
    pdf.iloc[2:].to_parquet(tmp_path / "part.1.parquet")
    return str(tmp_path)


@pytest.mark.parametrize("backend", ["numpy_nullable", "pyarrow"])
def test_read_parquet_dtype_backend_equal_pandas(parquet_dir, backend):
    want = pd.read_parquet(parquet_dir, dtype_backend=backend)
    got = xd.read_parquet(parquet_dir, dtype_backend=backend)
    assert dict(got.dtypes) == dict(want.dtypes) and got._meta.index.dtype == want.index.dtype
    pd.testing.assert_frame_equal(got.compute(), want)
    some = xd.read_parquet(parquet_dir, columns=["n", "s"], filters=[("i", ">", 1)], dtype_backend=backend)
    pd.testing.assert_frame_equal(some.compute(), pd.read_parquet(parquet_dir, columns=["n", "s"],
                                                                  filters=[("i", ">", 1)], dtype_backend=backend))
    pd.testing.assert_frame_equal(got[got.n > 1].compute(), want[want.n > 1])  # (comparisons pushed into the read)


def test_read_parquet_dtype_backend_refuses_what_pandas_refuses(parquet_dir):
    with pytest.raises(ValueError, match="invalid"):
        pd.read_parquet(parquet_dir, dtype_backend="numpy")
    with pytest.raises(ValueError, match="dtype_backend='numpy' is invalid.*'numpy_nullable' and 'pyarrow'"):
        xd.read_parquet(parquet_dir, dtype_backend="numpy")


# --------------------------------------------------------------------------- to_parquet(append=True)


def test_to_parquet_append_adds_files_after_those_there(tmp_path):
    pdf = pd.DataFrame({"a": range(6), "b": list("abcdef")})
    X = xd.from_pandas(pdf, npartitions=2)
    out = str(tmp_path / "out")
    X.to_parquet(out)
    written = X.to_parquet(out, append=True)
    assert [os.path.basename(p) for p in written] == ["part.2.parquet", "part.3.parquet"]
    pd.testing.assert_frame_equal(xd.read_parquet(out).compute(), pd.concat([pdf, pdf]))
    pd.testing.assert_frame_equal(pd.read_parquet(out), pd.concat([pdf, pdf]))
    xd.from_pandas(pdf.iloc[:2], npartitions=1).to_parquet(out, append=True)
    for _ in range(4):  # (part.10 and on: read after part.9, in natural order, as dask reads them)
        X.to_parquet(out, append=True)
    assert sorted(os.listdir(out)) == sorted(f"part.{i}.parquet" for i in range(13))
    pd.testing.assert_frame_equal(xd.read_parquet(out).compute(), pd.concat([pdf, pdf, pdf.iloc[:2]] + [pdf] * 4))


def test_to_parquet_append_checks_the_files_there(tmp_path):
    pdf = pd.DataFrame({"a": range(6), "b": list("abcdef")})
    X = xd.from_pandas(pdf, npartitions=2)
    out = str(tmp_path / "out")
    X.to_parquet(out)
    with pytest.raises(ValueError, match=r"has the columns \['a', 'b'\], but these have \['a'\]"):
        X[["a"]].to_parquet(out, append=True)
    with pytest.raises(ValueError, match=r"'a' is int64 in .*part\.0\.parquet, but float64 in these"):
        X.assign(a=X.a.astype(float)).to_parquet(out, append=True)
    with pytest.raises(ValueError, match="holds an index.*pass write_index=True"):
        X.to_parquet(out, append=True, write_index=False)
    with pytest.raises(ValueError, match="pass one of them"):
        X.to_parquet(out, append=True, overwrite=True)
    assert sorted(os.listdir(out)) == ["part.0.parquet", "part.1.parquet"]  # (nothing written)
    pd.testing.assert_frame_equal(xd.read_parquet(out).compute(), pdf)


def test_to_parquet_append_divisions_as_dask(tmp_path):
    pdf = pd.DataFrame({"k": range(6), "v": np.arange(6.0)}).set_index("k")
    out = str(tmp_path / "out")
    xd.from_pandas(pdf, npartitions=2).to_parquet(out)
    later = pdf.set_axis(pdf.index + 10)
    xd.from_pandas(later, npartitions=2).to_parquet(out, append=True)
    back = xd.read_parquet(out, calculate_divisions=True)
    assert back.divisions == (0, 3, 10, 13, 15)
    pd.testing.assert_frame_equal(back.compute(), pd.concat([pdf, later]))
    with pytest.raises(ValueError, match=r"start at 'k' = 0, below the largest .* \(15\).*ignore_divisions=True"):
        xd.from_pandas(pdf, npartitions=2).to_parquet(out, append=True)
    xd.from_pandas(pdf, npartitions=2).to_parquet(out, append=True, ignore_divisions=True)
    pd.testing.assert_frame_equal(xd.read_parquet(out).compute(), pd.concat([pdf, later, pdf]))


def test_to_parquet_append_partitioned_on_a_column(tmp_path):
    pdf = pd.DataFrame({"a": range(6), "b": list("xxyyzz")})
    X = xd.from_pandas(pdf, npartitions=2)
    out = str(tmp_path / "out")
    X.to_parquet(out, partition_on="b", write_index=False)
    X.to_parquet(out, partition_on="b", write_index=False, append=True)
    got = xd.read_parquet(out).compute()
    want = pd.read_parquet(out)
    assert sorted(got.a.tolist()) == sorted(want.a.tolist()) == sorted(list(range(6)) * 2)
    with pytest.raises(ValueError, match=r"folders of the keys \['b'\].*partition_on=\['b'\]"):
        X.to_parquet(out, write_index=False, append=True)


# --------------------------------------------------------------------------- Series.quantile(interpolation=)


SERIES = {
    "int64": pd.Series([4, 1, 3, 2, 7, 5, 8]),
    "float64": pd.Series([1.0, 2, np.nan, 3, 4, 6.5]),
    "Int64": pd.Series([1, 2, None, 3, 5], dtype="Int64"),
    "datetime": pd.Series(pd.to_datetime(["2020-01-01", "2020-01-02", "2020-01-04", "2020-01-05"])),
    "timedelta": pd.Series(pd.to_timedelta([1, 2, 4, 5], unit="s")),
    "empty": pd.Series([], dtype="int64"),
}


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("kind", list(SERIES))
@pytest.mark.parametrize("n", [1, 3])
def test_series_quantile_interpolation_equal_pandas(kind, interpolation, n):
    s = SERIES[kind]
    x = xd.from_pandas(s, npartitions=n)
    qs = [0.1, 0.5, 0.755, 0.9]
    got = x.quantile(qs, interpolation=interpolation)
    want = s.quantile(qs, interpolation=interpolation)
    if len(s):
        assert got._meta.dtype == want.dtype  # (known when built)
    pd.testing.assert_series_equal(got.compute(), want, check_exact=True)
    one, expected = x.quantile(0.5, interpolation=interpolation).compute(), s.quantile(0.5, interpolation=interpolation)
    assert (pd.isna(one) and pd.isna(expected)) or (one == expected and type(one) is type(expected))


def test_series_quantile_refuses_other_interpolations_when_built():
    x = xd.from_pandas(SERIES["int64"], npartitions=2)
    with pytest.raises(ValueError, match=r"'linear', 'lower', 'higher', 'midpoint', 'nearest'"):
        x.quantile(0.5, interpolation="cubic")
    with pytest.raises(TypeError, match="midpoint"):
        xd.from_pandas(pd.Series([True, False]), npartitions=1).quantile(0.5, interpolation="midpoint")


def test_index_str_of_numbers_says_what_pandas_says():
    df = xd.from_pandas(pd.DataFrame({"a": [1, 2]}), npartitions=1)
    with pytest.raises(AttributeError, match=r"^\.str accessor only for string values, and this Index is int64"):
        df.index.str.upper()
    labelled = xd.from_pandas(pd.DataFrame({"a": [1, 2]}, index=["x", "y"]), npartitions=1)
    assert labelled.index.str.upper().compute().tolist() == ["X", "Y"]


@pytest.mark.parametrize("how", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("nparts", [1, 3])
def test_frame_quantile_interpolation_equal_pandas(how, nparts):
    pdf = pd.DataFrame({"a": [1.0, 7, 3, 4, 9, 2, 8], "b": [4, 3, 2, 1, 5, 6, 9]})
    df = xd.from_pandas(pdf, npartitions=nparts)
    for q in (0.3, [0.1, 0.5, 0.85]):
        got = df.quantile(q, interpolation=how)
        expected = pdf.quantile(q, interpolation=how)
        if isinstance(expected, pd.Series):
            pd.testing.assert_series_equal(got.compute(), expected)
        else:
            pd.testing.assert_frame_equal(got.compute(), expected)
    with pytest.raises(ValueError, match="interpolation='cubic'"):
        df.quantile(0.5, interpolation="cubic")


def test_calculated_divisions_pass_over_files_without_rows(tmp_path):
    """An empty file has no bounds to give; it holds no rows either, so the others' bounds
    are the divisions (they were all lost to one empty file)."""
    index = pd.Index([0, 1], name="i")
    pd.DataFrame({"a": [1, 2]}, index=index).to_parquet(tmp_path / "0.parquet")
    pd.DataFrame({"a": pd.Series([], dtype="int64")}, index=index[:0]).to_parquet(tmp_path / "1.parquet")
    pd.DataFrame({"a": [3]}, index=pd.Index([5], name="i")).to_parquet(tmp_path / "2.parquet")
    df = xd.read_parquet(tmp_path, index="i", calculate_divisions=True)
    assert df.divisions == (0, 5, 5)
    assert df.compute().a.tolist() == [1, 2, 3] and df.loc[5].compute().a.tolist() == [3]
    empty = tmp_path / "empty"
    empty.mkdir()
    pd.DataFrame({"a": pd.Series([], dtype="int64")}, index=index[:0]).to_parquet(empty / "0.parquet")
    alone = xd.read_parquet(empty, index="i", calculate_divisions=True)
    assert len(alone.compute()) == 0 and list(alone.columns) == ["a"]
