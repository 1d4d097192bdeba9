"""read_hdf / to_hdf: HDF5 stores as partitions, checked against pandas' own read_hdf / to_hdf
on real files."""

from __future__ import annotations

import contextlib
import io
import math
import sys

import numpy as np
import pandas as pd
import pytest

import xsched
import xsched.dataframe as xd

pytest.importorskip("tables")

from xsched.dataframe.hdf import read_hdf, to_hdf  # noqa: E402


def _frame(n, seed=0, start=0):
    rng = np.random.default_rng(seed)
    f = rng.normal(size=n)
    f[rng.random(n) < 0.2] = np.nan
    s = rng.choice(["ann", "bo", "cyrille", "d"], n).astype(object)
    s[rng.random(n) < 0.2] = None
    s[:9] = None  # (a first piece whose strings are all missing reads them as objects)
    return pd.DataFrame({
        "i": np.arange(start, start + n),
        "f": f,
        "s": pd.array(s, dtype=pd.Series(["a"]).dtype),
        "t": pd.date_range("2021-03-04", periods=n, freq="37min"),
        "tz": pd.date_range("2021-03-04", periods=n, freq="h", tz="Europe/Paris"),
        "c": pd.Categorical(rng.choice(["x", "y", "z"], n)),
        "b": rng.random(n) < 0.5,
    }, index=pd.RangeIndex(start, start + n) * 10)


@pytest.mark.parametrize("chunksize", [4, 7, 50, 1000])
def test_read_hdf_matches_pandas_for_any_chunksize(tmp_path, chunksize):
    path = tmp_path / "a.h5"
    _frame(90).to_hdf(path, key="data", format="table")
    expected = pd.read_hdf(path, "data")
    df = read_hdf(str(path), "data", chunksize=chunksize)
    assert df.npartitions == math.ceil(90 / chunksize)
    assert df.dtypes.to_dict() == expected.dtypes.to_dict()
    pd.testing.assert_frame_equal(df.compute(), expected)


def test_read_hdf_columns_a_single_column_and_start_stop(tmp_path):
    path = tmp_path / "a.h5"
    _frame(80).to_hdf(path, key="/data", format="table", data_columns=["i"])
    got = read_hdf(str(path), "/data", columns=["s", "i"], chunksize=9)
    pd.testing.assert_frame_equal(got.compute(), pd.read_hdf(path, "data", columns=["s", "i"]))
    assert list(got.columns) == ["s", "i"]
    one = read_hdf(str(path), "data", columns="f", chunksize=30)
    assert isinstance(one, xd.Series) and one.npartitions == 3
    pd.testing.assert_series_equal(one.compute(), pd.read_hdf(path, "data").f)
    part = read_hdf(str(path), "data", start=5, stop=37, chunksize=10)
    assert part.npartitions == 4
    pd.testing.assert_frame_equal(part.compute(), pd.read_hdf(path, "data", start=5, stop=37))


def test_read_hdf_key_patterns_and_globs_in_natural_order(tmp_path):
    expected = []
    for f in range(2):
        path = tmp_path / f"part{f}.h5"
        for k in (2, 10, 1):
            pdf = _frame(15 + k, seed=10 * f + k)
            pdf.to_hdf(path, key=f"data{k}", format="table")  # (categoricals: pandas adds /dataK/meta/... keys)
        pd.DataFrame({"other": [1]}).to_hdf(path, key="other", format="table")
        expected += [pd.read_hdf(path, f"data{k}") for k in (1, 2, 10)]
    df = read_hdf(str(tmp_path / "part*.h5"), "/data*", chunksize=8)
    assert df.npartitions == 2 * sum(math.ceil((15 + k) / 8) for k in (1, 2, 10))
    got = df.compute()
    exp = pd.concat(expected)
    pd.testing.assert_frame_equal(got.astype({"c": exp.c.dtype}), exp)
    assert isinstance(df.c.dtype, pd.CategoricalDtype)  # (each key keeps its categories: unknown here)
    listed = read_hdf([str(tmp_path / "part1.h5"), str(tmp_path / "part0.h5")], "data1", columns=["i"])
    assert listed.compute().i.tolist() == expected[3].i.tolist() + expected[0].i.tolist()


def test_read_hdf_sorted_index_divisions_from_the_first_and_last_values(tmp_path):
    idx = pd.date_range("2022-01-01", periods=50, freq="D")
    pdf = pd.DataFrame({"v": np.arange(50.0)}, index=idx)
    pdf.iloc[:30].to_hdf(tmp_path / "a.h5", key="d", format="table")
    pdf.iloc[30:].to_hdf(tmp_path / "b.h5", key="d", format="table")
    df = read_hdf(str(tmp_path / "*.h5"), "d", chunksize=12, sorted_index=True)
    firsts = list(range(0, 30, 12)) + list(range(30, 50, 12))
    assert df.divisions == tuple(idx[firsts]) + (idx[-1],)
    pd.testing.assert_frame_equal(df.compute(), pdf, check_freq=False)
    pd.testing.assert_frame_equal(df.loc["2022-01-20":"2022-02-03"].compute(), pdf.loc["2022-01-20":"2022-02-03"],
                                  check_freq=False)
    assert read_hdf(str(tmp_path / "*.h5"), "d", chunksize=12).known_divisions is False
    assert read_hdf(str(tmp_path / "a.h5"), "d", start=3, stop=20, chunksize=10,
                    sorted_index=True).divisions == (idx[3], idx[13], idx[19])
    with pytest.raises(ValueError, match=r"sorted_index=True, but the index of '/d' of .*a.h5 rows 24-30 ends at "
                                         r"Timestamp\('2022-01-30 00:00:00'\), not before that of '/d' of .*a.h5 "
                                         r"rows 0-12 starts .*sorted_index=False"):
        read_hdf([str(tmp_path / "a.h5"), str(tmp_path / "a.h5")], "d", chunksize=12, sorted_index=True)
    runs = pd.DataFrame({"v": range(6)}, index=[1, 1, 2, 2, 2, 3])
    runs.to_hdf(tmp_path / "runs.h5", key="r", format="table")
    assert read_hdf(str(tmp_path / "runs.h5"), "r", chunksize=5, sorted_index=True).divisions == (1, 3, 3)
    with pytest.raises(ValueError, match="a value on both sides of a piece's edge needs another chunksize"):
        read_hdf(str(tmp_path / "runs.h5"), "r", chunksize=3, sorted_index=True)


def test_read_hdf_fixed_stores_are_one_partition_per_key(tmp_path):
    path = tmp_path / "f.h5"
    a, b = _frame(20).drop(columns="c"), _frame(30, seed=1, start=20).drop(columns="c")
    a.to_hdf(path, key="fa", format="fixed")
    b.to_hdf(path, key="fb", format="fixed")
    df = read_hdf(str(path), "f*", chunksize=4, sorted_index=True)
    assert df.npartitions == 2 and df.divisions == (0, 200, 490)
    pd.testing.assert_frame_equal(df.compute(), pd.concat([pd.read_hdf(path, "fa"), pd.read_hdf(path, "fb")]))
    got = read_hdf(str(path), "fb", columns=["s", "t"]).compute()
    pd.testing.assert_frame_equal(got, pd.read_hdf(path, "fb")[["s", "t"]])
    s = tmp_path / "s.h5"
    b.s.to_hdf(s, key="s", format="fixed")
    b.i.to_hdf(s, key="t", format="table")
    pd.testing.assert_series_equal(read_hdf(str(s), "s").compute(), pd.read_hdf(s, "s"))
    pd.testing.assert_series_equal(read_hdf(str(s), "t", chunksize=7).compute(), pd.read_hdf(s, "t"))


def test_read_hdf_empty_tables_give_no_partition_unless_all_are(tmp_path):
    path = tmp_path / "e.h5"
    pdf = _frame(10)
    for k in ("a", "b"):
        pdf.to_hdf(path, key=k, format="table")
    with pd.HDFStore(path) as store:
        store.remove("a", start=0, stop=10)  # (pandas writes no table of no rows: emptied instead)
    empty = read_hdf(str(path), "a", chunksize=3)
    assert empty.npartitions == 1
    got = empty.compute()
    assert len(got) == 0 and got.dtypes.to_dict() == pdf.dtypes.to_dict()
    both = read_hdf(str(path), "*", chunksize=4)
    assert both.npartitions == 3
    pd.testing.assert_frame_equal(both.compute(), pd.read_hdf(path, "b"))


def test_read_hdf_reads_only_the_columns_used(tmp_path):
    path = tmp_path / "a.h5"
    pdf = _frame(60)
    pdf.to_hdf(path, key="data", format="table")
    df = read_hdf(str(path), "data", chunksize=25)
    assert df.f.sum().compute() == pytest.approx(pdf.f.sum())
    plan = io.StringIO()
    with contextlib.redirect_stdout(plan):
        df.f.explain()
    assert "read read-hdf-f ['f']" in plan.getvalue()
    kept = df[df.i > 30][["s", "i"]]
    pd.testing.assert_frame_equal(kept.compute(), pdf[pdf.i > 30][["s", "i"]])
    plan = io.StringIO()
    with contextlib.redirect_stdout(plan):
        kept.explain()
    assert "['i', 's'] filters=[('i', '>', 30)]" in plan.getvalue()


def test_read_hdf_refuses_missing_files_keys_columns_and_keys_that_disagree(tmp_path):
    path = tmp_path / "a.h5"
    _frame(10).to_hdf(path, key="data", format="table")
    pd.DataFrame({"x": [1]}).to_hdf(path, key="other", format="table")
    with pytest.raises(FileNotFoundError, match=r"read_hdf: no such file .*nope.h5"):
        read_hdf(str(tmp_path / "nope.h5"), "data")
    with pytest.raises(KeyError, match=r"read_hdf: .*a.h5 has no key '/dat'; it has \['/data', '/other'\]"):
        read_hdf(str(path), "dat")
    with pytest.raises(KeyError, match=r"no key matches '/zz\*' in 1 files"):
        read_hdf(str(path), "zz*")
    with pytest.raises(ValueError, match=r"no column \['nope'\] in '/data' of .*a.h5: it has the columns \['i', 'f'"):
        read_hdf(str(path), "data", columns=["i", "nope"])
    with pytest.raises(ValueError, match=r"'/other' of .*a.h5 has the columns \['x'\], but '/data' of .*a.h5 has"):
        read_hdf(str(path), "*")
    with pytest.raises(ValueError, match="start= and stop= read rows of one key of one file"):
        read_hdf([str(path), str(path)], "data", stop=3)
    # (rows as a slice takes them, as pandas: past the end to the end, backwards none)
    pd.testing.assert_frame_equal(read_hdf(str(path), "data", stop=11).compute(), pd.read_hdf(path, "data", stop=11))
    backwards = read_hdf(str(path), "data", start=5, stop=2).compute()
    assert len(backwards) == 0 and list(backwards.columns) == list(pd.read_hdf(path, "data", start=5, stop=2).columns)
    with pytest.raises(ValueError, match="chunksize must be a positive number of rows"):
        read_hdf(str(path), "data", chunksize=0)
    with pytest.raises(ValueError, match="start and stop are row numbers"):
        read_hdf(str(path), "data", start=1.5)
    pd.Series([1.0], name="v").to_hdf(tmp_path / "s.h5", key="s", format="table")
    with pytest.raises(ValueError, match="holds a Series, which has no columns to pick"):
        read_hdf(str(tmp_path / "s.h5"), "s", columns=["v"])
    pd.DataFrame({"v": [1]}, index=pd.MultiIndex.from_tuples([(1, "a")])).to_hdf(tmp_path / "m.h5", key="m",
                                                                                format="table")
    with pytest.raises(ValueError, match="sorted_index=True needs an index of one level; this has 2"):
        read_hdf(str(tmp_path / "m.h5"), "m", sorted_index=True)
    (tmp_path / "text.h5").write_text("not hdf5")
    with pytest.raises(ValueError, match=r"text.h5 is not an HDF5 file pandas can open"):
        read_hdf(str(tmp_path / "text.h5"), "data")
    with pytest.raises(ValueError, match="is not on the local disk; PyTables opens HDF5 files by local path only"):
        read_hdf("memory://x/a.h5", "data")


def test_read_hdf_a_piece_that_does_not_fit_names_the_key_and_column(tmp_path):
    path = tmp_path / "a.h5"
    pd.DataFrame({"v": [1, 2]}).to_hdf(path, key="a", format="table")
    pd.DataFrame({"v": ["x", "y"]}).to_hdf(path, key="b", format="table")
    df = read_hdf(str(path), "*")
    with pytest.raises(ValueError, match=r"column 'v' of '/b' of .*a.h5 \(rows 0-2\) is str, but the first key's "
                                         r"is int64, and it does not convert"):
        df.compute()


def test_without_pytables_the_error_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tables", None)
    with pytest.raises(ImportError, match=r'pip install "xsched\[hdf\]"'):
        read_hdf(str(tmp_path / "a.h5"), "data")


# --------------------------------------------------------------------------- writing


@pytest.mark.parametrize("npartitions", [1, 3, 6])
def test_to_hdf_one_file_one_key_appends_partitions_in_order(tmp_path, npartitions):
    pdf = _frame(40)
    path = tmp_path / "out.h5"
    pd.DataFrame({"old": [1.0]}).to_hdf(path, key="data", format="table")  # (replaced: append=False)
    pd.DataFrame({"kept": [1.0]}).to_hdf(path, key="keep", format="table")
    df = xd.from_pandas(pdf, npartitions=npartitions)
    paths = to_hdf(df, str(path), "/data", min_itemsize={"s": 8})
    assert paths == [str(path)] * npartitions
    pd.testing.assert_frame_equal(pd.read_hdf(path, "data"), pdf)
    assert pd.read_hdf(path, "keep").kept.tolist() == [1.0]
    back = read_hdf(str(path), "/data", chunksize=13, sorted_index=True)
    assert back.known_divisions
    pd.testing.assert_frame_equal(back.compute(), pdf)
    to_hdf(df, str(path), "/data", append=True, min_itemsize={"s": 8})
    pd.testing.assert_frame_equal(pd.read_hdf(path, "data"), pd.concat([pdf, pdf]))
    to_hdf(df, str(path), "/data", mode="w", min_itemsize={"s": 8})
    with pd.HDFStore(path) as store:
        assert "/keep" not in store.keys()
    pd.testing.assert_frame_equal(pd.read_hdf(path, "data"), pdf)


@pytest.mark.parametrize("npartitions", [2, 5])
def test_to_hdf_a_file_or_a_key_per_partition_round_trips(tmp_path, npartitions):
    import xsched.dataframe.hdf  # noqa: F401  (DataFrame.to_hdf)

    pdf = _frame(33)
    df = xd.from_pandas(pdf, npartitions=npartitions)
    paths = df.to_hdf(str(tmp_path / "files" / "part-*.h5"), "data")
    assert paths == [str(tmp_path / "files" / f"part-{i}.h5") for i in range(npartitions)]
    for i, p in enumerate(paths):
        part = df.get_partition(i).compute()  # (pandas reads a file whose strings are all missing as objects)
        pd.testing.assert_frame_equal(pd.read_hdf(p, "data").astype({"s": part.s.dtype}), part)
    back = read_hdf(str(tmp_path / "files" / "*.h5"), "data", chunksize=4)
    pd.testing.assert_frame_equal(back.compute(), pdf, check_categorical=False)
    keyed = df.to_hdf(str(tmp_path / "keys.h5"), "/part*", name_function=lambda i: f"_{i:03d}")
    assert keyed == [str(tmp_path / "keys.h5")] * npartitions
    with pd.HDFStore(tmp_path / "keys.h5") as store:
        assert [k for k in store.keys() if "meta" not in k] == [f"/part_{i:03d}" for i in range(npartitions)]
    pd.testing.assert_frame_equal(read_hdf(str(tmp_path / "keys.h5"), "/part*").compute(), pdf,
                                  check_categorical=False)
    s = df.f.to_hdf(str(tmp_path / "series.h5"), "f")
    assert len(s) == npartitions
    pd.testing.assert_series_equal(pd.read_hdf(tmp_path / "series.h5", "f"), pdf.f)
    pd.testing.assert_series_equal(read_hdf(str(tmp_path / "series.h5"), "f", chunksize=10).compute(), pdf.f)


def test_to_hdf_fixed_format_an_empty_first_partition_compute_false_and_sync(tmp_path):
    pdf = pd.DataFrame({"a": range(6), "s": list("uvwxyz")})
    df = xd.from_pandas(pdf, npartitions=3)
    to_hdf(df, str(tmp_path / "fx-*.h5"), "d", format="fixed")
    assert pd.read_hdf(tmp_path / "fx-2.h5", "d").a.tolist() == [4, 5]
    path = tmp_path / "e.h5"
    pd.DataFrame({"a": [99], "s": ["old"]}).to_hdf(path, key="d", format="table")
    to_hdf(df[df.a > 3], str(path), "d")  # (the first two partitions hold no row)
    pd.testing.assert_frame_equal(pd.read_hdf(path, "d"), pdf[pdf.a > 3])
    later = to_hdf(df, str(tmp_path / "later.h5"), "d", compute=False)
    assert len(later) == 3 and not (tmp_path / "later.h5").exists()
    assert list(xsched.compute(*later)) == [str(tmp_path / "later.h5")] * 3
    pd.testing.assert_frame_equal(pd.read_hdf(tmp_path / "later.h5", "d"), pdf)
    assert to_hdf(df, str(tmp_path / "sync.h5"), "d", scheduler="sync") == [str(tmp_path / "sync.h5")] * 3
    pd.testing.assert_frame_equal(pd.read_hdf(tmp_path / "sync.h5", "d"), pdf)


def test_to_hdf_refuses_what_it_cannot_write_and_names_the_fix(tmp_path):
    pdf = pd.DataFrame({"a": range(6), "s": ["x", "y", "z", "longer", "u", "v"]})
    df = xd.from_pandas(pdf, npartitions=3)
    with pytest.raises(ValueError, match="one '\\*' at most"):
        to_hdf(df, str(tmp_path / "*.h5"), "d*")
    with pytest.raises(ValueError, match="format='fixed' cannot be appended to"):
        to_hdf(df, str(tmp_path / "a.h5"), "d", format="fixed")
    with pytest.raises(ValueError, match="mode must be 'a', 'w' or 'r\\+'"):
        to_hdf(df, str(tmp_path / "a.h5"), "d", mode="r")
    with pytest.raises(ValueError, match="name_function must give a different str for each partition"):
        to_hdf(df, str(tmp_path / "a-*.h5"), "d", name_function=lambda i: "same")
    with pytest.raises(TypeError, match=r"column 'n' is Int64, which HDF5 stores cannot hold.*"
                                        r"astype\(\{'n': 'float64'\}\)"):
        to_hdf(df.assign(n=df.a.astype("Int64")), str(tmp_path / "a.h5"), "d")
    with pytest.raises(ValueError, match="to_hdf: scheduler=.processes. is not one xsched runs on"):
        to_hdf(df, str(tmp_path / "a.h5"), "d", scheduler="processes")
    with pytest.raises(ValueError, match=r"(?s)to_hdf: partition 1 does not go into 'd' of .*a.h5: "
                                         r".*pass min_itemsize=\{column: width\}"):
        to_hdf(df, str(tmp_path / "a.h5"), "d")
    with pytest.raises(TypeError, match="to_hdf writes an xsched DataFrame or Series"):
        to_hdf(pdf, str(tmp_path / "a.h5"), "d")
