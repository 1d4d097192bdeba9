"""Hive-partitioned parquet datasets (``key=value`` folders, ``hive.py``): read as pandas
reads them, folders ruled out by ``filters=`` never opened, and ``to_parquet(partition_on=)``
written so that pandas and xsched read the same rows back."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import xsched.dataframe as xd
from xsched.dataframe import hive
from xsched.dataframe.parquet import read_parquet

pytest.importorskip("pyarrow.parquet")


def _data(n: int = 40, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"x": np.arange(n), "year": rng.choice([2020, 2021, 2022], n),
                         "c": rng.choice(["a", "b b", "c/d"], n), "v": rng.normal(size=n).round(6)})


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    """Rows in ``x`` order with plain (not categorical) key columns, for comparing by content."""
    out = df.sort_values("x").reset_index(drop=True)
    return out.astype({c: out[c].cat.categories.dtype for c in out.columns if out[c].dtype == "category"})


@pytest.fixture
def dataset(tmp_path):
    """A dataset pandas wrote with two folder keys, and that frame."""
    frame = _data()
    frame.to_parquet(tmp_path / "ds", partition_cols=["year", "c"])
    return str(tmp_path / "ds"), frame


def test_reads_what_pandas_reads_with_the_keys_as_categoricals(dataset):
    path, _ = dataset
    df = read_parquet(path)
    expected = pd.read_parquet(path)
    assert list(df.columns) == list(expected.columns) == ["x", "v", "year", "c"]
    assert df.npartitions == 9  # (one file in each of the 3 x 3 folders)
    got = df.compute()
    for key in ("year", "c"):
        assert df._meta[key].dtype == got[key].dtype  # (meta and partitions agree: every folder's value)
        assert got[key].cat.categories.tolist() == sorted(expected[key].cat.categories.tolist())
        assert got[key].cat.categories.dtype == expected[key].cat.categories.dtype
    pd.testing.assert_frame_equal(_sorted(got), _sorted(expected))


def test_filters_on_keys_skip_folders_without_opening_their_files(dataset):
    path, frame = dataset
    bad = os.path.join(path, "year=2030", "c=a")  # (last in order: the first file's footer gives the schema)
    os.makedirs(bad)
    with open(os.path.join(bad, "part.0.parquet"), "w") as f:
        f.write("not parquet")
    with pytest.raises(ValueError, match=r"year=2030/c=a/part.0.parquet is not a parquet file"):
        read_parquet(path, filters=[("x", ">", 0)])  # (the footer of every folder's file is read then)
    df = read_parquet(path, filters=[("year", "<=", 2021), ("v", ">", 0)])
    assert df.npartitions == 6
    expected = frame[(frame.year <= 2021) & (frame.v > 0)]
    pd.testing.assert_frame_equal(_sorted(df.compute()), _sorted(expected[["x", "v", "year", "c"]]).astype({"year": "int32"}))


def test_or_of_key_and_column_filters_keeps_pandas_rows(dataset):
    path, frame = dataset
    filters = [[("year", "==", 2020), ("c", "in", ["a", "c/d"])], [("v", "<", -0.5)], [("c", "not in", ["a"])]]
    got = read_parquet(path, filters=filters).compute()
    pd.testing.assert_frame_equal(_sorted(got), _sorted(pd.read_parquet(path, filters=filters)))
    none = read_parquet(path, filters=[("year", "==", 1999)])
    assert none.compute().empty and list(none.columns) == ["x", "v", "year", "c"]


def test_columns_and_comparisons_on_keys_and_on_file_columns(dataset):
    path, frame = dataset
    df = read_parquet(path)
    assert sorted(read_parquet(path, columns=["year"]).compute().year.tolist()) == sorted(frame.year)
    only_c = read_parquet(path, columns="c")
    assert isinstance(only_c, xd.Series) and only_c.dtype == "category"
    assert sorted(only_c.compute().tolist()) == sorted(frame.c)
    for picked, mask in ((df[df.year == 2021], frame.year == 2021), (df[df.v > 0.3], frame.v > 0.3)):
        got = picked[["x", "c"]].compute()
        assert sorted(got.x) == sorted(frame[mask].x)
    sums = df.groupby("year").v.sum().compute()
    np.testing.assert_allclose(sums.sort_index().to_numpy(), frame.groupby("year").v.sum().sort_index())


def test_refusals_name_the_key_and_what_to_do(dataset, tmp_path):
    path, _ = dataset
    with pytest.raises(ValueError, match=r"folder key 'year', which holds integers .* with str; give integers"):
        read_parquet(path, filters=[("year", "==", "2021")])
    with pytest.raises(ValueError, match=r"index='c' names a folder key.*set_index\('c'\)"):
        read_parquet(path, index="c")
    with pytest.raises(ValueError, match=r"no column 'nope'.*folders the keys \['year', 'c'\]"):
        read_parquet(path, columns=["nope"])
    uneven = tmp_path / "uneven"
    for folder in ("k=1/j=1", "k=2"):
        (uneven / folder).mkdir(parents=True)
        pd.DataFrame({"x": [1]}).to_parquet(uneven / folder / "part.0.parquet")
    with pytest.raises(ValueError, match=r"the same folder keys in the same order"):
        read_parquet(str(uneven))


def test_to_parquet_partition_on_writes_folders_pandas_reads(tmp_path):
    frame = _data(30, seed=1)
    frame.loc[[3, 7], "c"] = None
    df = xd.from_pandas(frame, npartitions=3)
    paths = df.to_parquet(tmp_path / "out", partition_on=["year", "c"])
    assert all(os.path.basename(p).startswith("part.") for p in paths)
    folders = {os.path.relpath(os.path.dirname(p), tmp_path / "out") for p in paths}
    assert "year=2020/c=b%20b" in folders or "year=2021/c=b%20b" in folders or "year=2022/c=b%20b" in folders
    assert any(f.endswith("c=__HIVE_DEFAULT_PARTITION__") for f in folders)
    back = read_parquet(tmp_path / "out").compute()
    pd.testing.assert_frame_equal(_sorted(back), _sorted(frame[["x", "v", "year", "c"]]).astype({"year": "int32"}))
    kept = frame.dropna()
    only = str(tmp_path / "no-missing")
    xd.from_pandas(kept, npartitions=2).to_parquet(only, partition_cols="c")  # (pandas' name for it)
    pd.testing.assert_frame_equal(_sorted(pd.read_parquet(only))[["x", "year", "v", "c"]],
                                  _sorted(kept)[["x", "year", "v", "c"]], check_dtype=False)


def test_to_parquet_partition_on_refuses_and_overwrites(tmp_path):
    df = xd.from_pandas(_data(12), npartitions=2)
    with pytest.raises(ValueError, match=r"no column 'nope'; the columns are \['x', 'year', 'c', 'v'\]"):
        df.to_parquet(tmp_path / "a", partition_on="nope")
    with pytest.raises(TypeError, match="partition_on or partition_cols, not both"):
        df.to_parquet(tmp_path / "a", partition_on="c", partition_cols="c")
    df.to_parquet(tmp_path / "a", partition_on="year")
    with pytest.raises(ValueError, match=r"already holds 3 key=value folders.*overwrite=True"):
        df.to_parquet(tmp_path / "a", partition_on="c")
    df.to_parquet(tmp_path / "a", partition_on="c", overwrite=True)
    assert sorted(os.listdir(tmp_path / "a")) == ["c=a", "c=b%20b", "c=c%2Fd"]
    df.to_parquet(tmp_path / "a", overwrite=True)  # (folders give way to plain part files, too)
    assert sorted(os.listdir(tmp_path / "a")) == ["part.0.parquet", "part.1.parquet"]


def test_helpers_on_their_own():
    assert hive.residual_filters([[("k", "==", 1)], [("k", "==", 2), ("v", ">", 0)]], {"k": 2}) == [[("v", ">", 0)]]
    assert hive.residual_filters([[("k", "==", 1)], [("k", "in", [2])]], {"k": 2}) is None
    assert hive.residual_filters([[("k", "not in", [1])]], {"k": None}) is None  # (missing passes `not in`)
    assert hive.residual_filters([[("k", "!=", 1)]], {"k": None}) is False
    assert hive.key_dictionaries([("a", (("k", "3000000000"),))])["k"].to_pylist() == ["3000000000"]  # (as pandas)
    assert hive.key_dictionaries([("a", (("k", "x"),)), ("b", (("k", "10"),))])["k"].to_pylist() == ["10", "x"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.integers(-3, 3), st.sampled_from(["p", "q r", "s=t", None])), min_size=1,
                     max_size=30),
       npartitions=st.integers(1, 4), pick=st.integers(-3, 3))
def test_round_trip_of_any_rows_and_a_filter(tmp_path_factory, rows, npartitions, pick):
    frame = pd.DataFrame({"x": np.arange(len(rows)), "k": [r[0] for r in rows], "s": [r[1] for r in rows]})
    out = str(tmp_path_factory.mktemp("hive"))
    xd.from_pandas(frame, npartitions=min(npartitions, len(rows))).to_parquet(out, partition_on=["k", "s"],
                                                                             overwrite=True)
    back = read_parquet(out, filters=[("k", ">=", pick)]).compute()
    expected = frame[frame.k >= pick]
    assert sorted(back.x.tolist()) == expected.x.tolist()
    got = back.sort_values("x")
    assert got.k.astype("int64").tolist() == expected.k.tolist()
    assert [None if pd.isna(v) else v for v in got.s] == [None if pd.isna(v) else v for v in expected.s]


def test_keys_read_as_pandas_reads_them_and_bad_filters_and_overwrites_are_refused(tmp_path):
    for name, values, expected in (("big", ["5", "10000000000"], ["10000000000", "5"]),
                                   ("padded", ["007", "+5"], ["+5", "007"]), ("small", ["-5", "2147483647"], [-5, 2147483647])):
        for v in values:
            (tmp_path / name / f"k={v}").mkdir(parents=True)
            pd.DataFrame({"x": [1]}).to_parquet(tmp_path / name / f"k={v}" / "part.0.parquet")
        got = read_parquet(str(tmp_path / name)).compute().k.cat.categories
        assert got.tolist() == expected == pd.read_parquet(tmp_path / name).k.cat.categories.sort_values().tolist()
    with pytest.raises(ValueError, match=r"'in' takes a list of values, e.g. \('k', 'in', \['5'\]\)"):
        read_parquet(str(tmp_path / "big"), filters=[("k", "in", "5")])
    data = xd.from_pandas(_data(12), npartitions=2)
    data.to_parquet(tmp_path / "ds", partition_on="year")
    back = read_parquet(str(tmp_path / "ds"))
    with pytest.raises(ValueError, match="holds files this dataframe is read from"):
        back.to_parquet(tmp_path / "ds", partition_on="year", overwrite=True)
    assert sorted(os.listdir(tmp_path / "ds")) == ["year=2020", "year=2021", "year=2022"]  # (nothing deleted)


def test_a_store_listing_a_folder_inside_itself_is_walked_once():
    from fsspec.implementations.memory import MemoryFileSystem

    class SelfListing(MemoryFileSystem):  # (some object stores list a folder made by hand as inside itself)
        def ls(self, path, detail=True, **kwargs):
            out = super().ls(path, detail=detail, **kwargs)
            me = {"name": path.rstrip("/") + "/", "type": "directory", "size": 0}
            return out + [me if detail else me["name"]]

    fs = SelfListing(skip_instance_cache=True)
    fs.store.clear()
    fs.pseudo_dirs.clear()
    fs.pseudo_dirs.append("")
    for year in (2020, 2021):
        with fs.open(f"/ds/year={year}/part.0.parquet", "wb") as f:
            pd.DataFrame({"x": [year]}).to_parquet(f)
    found = hive.discover(fs, "/ds", (".parquet",), "read")
    assert [pairs for _, pairs in found] == [(("year", "2020"),), (("year", "2021"),)]


def test_folder_names_are_pyarrow_s(tmp_path):
    frame = pd.DataFrame({"x": range(6), "f": [1.0, 1.5, 3.0] * 2, "b": [True, False] * 3})
    xd.from_pandas(frame, npartitions=2).to_parquet(tmp_path / "ours", partition_on=["f", "b"])
    frame.to_parquet(tmp_path / "theirs", partition_cols=["f", "b"])
    for folder in ("", "f=1"):
        assert sorted(os.listdir(tmp_path / "ours" / folder)) == sorted(os.listdir(tmp_path / "theirs" / folder))
