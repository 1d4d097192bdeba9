"""What a dask.dataframe user met: sample's n/frac/random_state as dask takes them,
to_numeric's downcast and a DataFrame argument refused, quantiles outside [0, 1] refused when
built, apply over categorical keys with observed=False refused (each partition answered for
every category none of its rows held), clip/replace of integers in one dtype, and dask's
writer and reader keywords (header_first_partition_only, assume_missing, include_path_column)."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

import xsched.dataframe as xd

FRAME = pd.DataFrame({"a": range(100)})


def test_sample_takes_a_fraction_by_position_or_name_and_a_numpy_random_state():
    df = xd.from_pandas(FRAME, npartitions=4)
    assert len(df.sample(frac=0.2, random_state=np.random.RandomState(0))) == 20
    assert len(df.sample(0.2, random_state=np.random.default_rng(1))) == 20
    assert df.sample(0.1, random_state=3).a.tolist() == df.sample(frac=0.1, random_state=3).a.tolist()
    with pytest.raises(ValueError, match=r"^sample\(n=...\) is not offered: .* give frac="):
        df.sample(n=3)
    with pytest.raises(TypeError, match="give frac="):
        df.sample()


def test_to_numeric_refuses_downcast_and_a_frame_saying_what_to_do():
    df = xd.from_pandas(pd.DataFrame({"s": ["1", "2"]}), npartitions=2)
    with pytest.raises(ValueError, match=r"^to_numeric\(downcast=...\) picks a dtype from the values of each "
                                         r"partition"):
        xd.to_numeric(df.s, downcast="integer")
    with pytest.raises(TypeError, match=r"^to_numeric takes an xsched Series, got DataFrame"):
        xd.to_numeric(df)
    assert xd.to_numeric(df.s).compute().tolist() == [1.0, 2.0]


@pytest.mark.parametrize("q", [1.5, [0.1, -0.2], "a"])
def test_a_quantile_outside_zero_to_one_is_refused_when_built(q):
    s = xd.from_pandas(pd.Series([1.0, 2, 3]), npartitions=2)
    with pytest.raises(ValueError, match=r"^quantile: Quantiles must be in the range \[0, 1\]"):
        s.quantile(q)
    assert s.quantile([0, 0.5, 1]).compute().tolist() == [1.0, 2.0, 3.0]


def test_apply_over_categorical_keys_with_observed_false_is_refused():
    pdf = pd.DataFrame({"c": pd.Categorical(list("ababab"), categories=["a", "b", "z"]), "x": [1.0, 2, 3, 4, 5, 6]})
    df = xd.from_pandas(pdf, npartitions=3)
    with pytest.raises(ValueError, match=r"^groupby\(..., observed=False\).apply: .* pass observed=True"):
        df.groupby("c", observed=False).x.apply(lambda s: s.sum())
    got = df.groupby("c", observed=True).x.apply(lambda s: s.sum()).compute().sort_index()
    pd.testing.assert_series_equal(got, pdf.groupby("c", observed=True).x.apply(lambda s: s.sum()))


def test_clip_and_replace_of_integers_take_the_dtype_the_values_they_name_give():
    """The meta was the two-row stand-in's (int64): one partition came back float64, another
    int64, and mode() cut 2.5 to 2, astype(str) mixed '2' with '2.0'."""
    s = pd.Series([1, 2, 3, 4, 5, 6])
    ds = xd.from_pandas(s, npartitions=2)
    clipped = ds.clip(upper=2.5)
    assert clipped.dtype == s.clip(upper=2.5).dtype == np.float64
    assert clipped.mode().compute().tolist() == s.clip(upper=2.5).mode().tolist() == [2.5]
    replaced = ds.replace(1, 0.5)
    assert replaced.astype(str).compute().tolist() == s.replace(1, 0.5).astype(str).tolist()
    frame = pd.DataFrame({"k": list("aabbcc"), "i": range(6)})
    got = xd.from_pandas(frame, npartitions=3).assign(i=lambda d: d.i.replace(0, 0.5)).groupby("k").i.transform("min")
    assert got.compute().tolist() == frame.assign(i=frame.i.replace(0, 0.5)).groupby("k").i.transform("min").tolist()
    by_column = pd.DataFrame({"a": [1, 2, 3, 4], "b": [1.5, 2, 3, 4]})
    both = xd.from_pandas(by_column, npartitions=2).clip(lower=1.5, upper=3)
    pd.testing.assert_frame_equal(both.compute(), by_column.clip(lower=1.5, upper=3))
    assert xd.from_pandas(by_column, npartitions=2).a.clip(1, 3).dtype == np.int64  # (integers stay integers)


def test_to_csv_header_in_the_first_file_only_and_an_unknown_option_named_alone(tmp_path):
    df = xd.from_pandas(pd.DataFrame({"a": range(4)}), npartitions=2)
    paths = df.to_csv(str(tmp_path / "part-*.csv"), header_first_partition_only=True, index=False)
    assert [open(p).read() for p in paths] == ["a\n0\n1\n", "2\n3\n"]
    with pytest.raises(TypeError, match=r"^to_csv: pandas' to_csv refuses the option seperator=';', which it does "
                                        r"not have"):
        df.to_csv(str(tmp_path / "x" / "*.csv"), seperator=";")
    with pytest.raises(TypeError, match=r"^to_parquet: pyarrow refuses the option custom_metadata=.*, which it does "
                                        r"not have"):
        df.to_parquet(str(tmp_path / "pq"), custom_metadata={b"k": b"v"})


def test_read_csv_assume_missing_reads_the_samples_integers_as_floats(tmp_path):
    (tmp_path / "m1.csv").write_text("a,b,s\n1,2,x\n3,4,y\n")
    (tmp_path / "m2.csv").write_text("a,b,s\n,6,z\n7,,w\n")
    files = [str(tmp_path / "m1.csv"), str(tmp_path / "m2.csv")]
    with pytest.raises(ValueError, match=r"has missing values that do not fit dtype int64.*assume_missing=True"):
        xd.read_csv(files).compute()
    got = xd.read_csv(files, assume_missing=True)
    want = pd.concat([pd.read_csv(f) for f in files])
    assert got.dtypes.tolist() == want.dtypes.tolist()
    pd.testing.assert_frame_equal(got.compute(), want)
    assert xd.read_csv(files, assume_missing=True, dtype={"a": "Int64"}).dtypes.tolist()[:2] == ["Int64", "float64"]


def test_read_json_adds_each_rows_file_as_dask_does(tmp_path):
    (tmp_path / "j1.jsonl").write_text('{"a": 1}\n{"a": 2}\n')
    (tmp_path / "j2.jsonl").write_text('{"a": 3}\n')
    files = [str(tmp_path / "j1.jsonl"), str(tmp_path / "j2.jsonl")]
    df = xd.read_json(files, include_path_column=True)
    assert isinstance(df.dtypes["path"], pd.CategoricalDtype)
    assert df.compute().path.tolist() == [files[0], files[0], files[1]]
    named = xd.read_json(files, include_path_column="src", path_converter=os.path.basename, blocksize=5)
    got = named.compute()
    assert named.npartitions > 2 and got.src.tolist() == ["j1.jsonl", "j1.jsonl", "j2.jsonl"]
    assert got.a.tolist() == [1, 2, 3]
    with pytest.raises(ValueError, match="already have a column 'a'"):
        xd.read_json(files, include_path_column="a")


def test_clip_keeps_the_index_and_a_float_that_is_an_integer_is_replaced_alike():
    s = xd.from_pandas(pd.Series([1, 2, 3, 4], index=pd.date_range("2000", periods=4, name="t")), npartitions=2)
    clipped = s.clip(upper=2.5)
    assert clipped._meta.index.name == "t" and clipped._meta.index.dtype.kind == "M"
    assert clipped.resample("2D").sum().compute().tolist() == [3.0, 5.0]
    ints = xd.from_pandas(pd.Series([1, 2, 3, 4]), npartitions=2)
    assert ints.replace(4.0, 0.5).dtype == np.float64
    assert ints.replace(4.0, 0.5).astype(str).compute().tolist() == ["1.0", "2.0", "3.0", "0.5"]
    same_names = pd.DataFrame([[1, 2], [3, 4], [5, 6]], columns=["a", "a"])
    got = xd.from_pandas(same_names, npartitions=2).clip(upper=2.5).compute()
    assert got.values.tolist() == same_names.clip(upper=2.5).values.tolist()


def test_positional_reset_index_and_sample_keep_their_meaning():
    df = xd.from_pandas(pd.DataFrame({"a": [5, 6]}, index=[10, 20]), npartitions=1)
    assert df.reset_index(True).columns.tolist() == ["a"]  # (drop, dask's first parameter)
    assert df.a.reset_index(True).compute().tolist() == [5, 6]
    with pytest.raises(TypeError, match=r"^sample: give the fraction by name"):
        df.sample(0.5, True, 1)
