"""read_orc / to_orc: ORC files as partitions, checked against pandas' own read_orc and to_orc."""

from __future__ import annotations

import contextlib
import datetime as dt
import io

import numpy as np
import pandas as pd
import pytest

import xsched
import xsched.dataframe as xd
from xsched.dataframe.orc import read_orc, to_orc

orc = pytest.importorskip("pyarrow.orc")
pa = pytest.importorskip("pyarrow")


def _frame(n, seed=0):
    """Columns of most kinds ORC holds, with missing values where pandas keeps its dtype."""
    rng = np.random.default_rng(seed)
    start = pd.Timestamp("2024-01-01") + pd.Timedelta(days=100 * seed)
    return pd.DataFrame({
        "id": np.arange(n, dtype="int64") + 1000 * seed,
        "small": rng.integers(-100, 100, n).astype("int16"),
        "x": np.where(rng.random(n) < 0.2, np.nan, rng.normal(size=n).round(4)),
        "f32": rng.random(n).astype("float32"),
        "name": pd.array([None if i % 7 == 3 else f"n{i % 5}" for i in range(n)], dtype="str"),
        "flag": rng.random(n) < 0.5,
        "when": pd.date_range(start, periods=n, freq="h").astype("datetime64[ns]"),
        "utc": pd.date_range(start, periods=n, freq="min", tz="UTC").astype("datetime64[ns, UTC]"),
        "day": [dt.date(2024, 1, 1 + i % 28) for i in range(n)],
    })


def _write(path, frame, stripe_rows=None):
    """``frame`` as an ORC file (``stripe_rows``: rows per stripe), as pandas writes it; an
    empty ``_frame`` with the types of a full one (its empty ``day`` has none)."""
    table = pa.Table.from_pandas(frame if len(frame) else _frame(1)[list(frame.columns)], preserve_index=False)
    table = table.slice(0, len(frame))
    kw = {"stripe_size": 1, "batch_size": stripe_rows} if stripe_rows else {}
    orc.write_table(table, str(path), **kw)
    return path


def _files(tmp_path, sizes=(150, 0, 90), stripe_rows=40):
    return [_write(tmp_path / f"part.{i}.orc", _frame(n, seed=i), stripe_rows) for i, n in enumerate(sizes)]


def _partitions(df):
    return [d.compute() for d in df.to_delayed()]


@pytest.mark.parametrize("split_stripes, aggregate, nparts", [(1, None, 7), (2, None, 4), (2, True, 4),
                                                               (4, True, 2), (False, None, 3), (None, True, 3)])
def test_read_orc_matches_pandas_for_any_partitioning(tmp_path, split_stripes, aggregate, nparts):
    files = _files(tmp_path)  # stripes: 4, 0 (an empty file), 3
    expected = pd.concat([pd.read_orc(f) for f in files], ignore_index=True)
    df = read_orc(str(tmp_path), split_stripes=split_stripes, aggregate_files=aggregate)
    assert df.npartitions == nparts
    parts = _partitions(df)
    for part in parts:  # (every partition, the empty file's too, has meta's dtypes)
        pd.testing.assert_series_equal(part.dtypes, df._meta.dtypes)
    pd.testing.assert_frame_equal(pd.concat(parts, ignore_index=True), expected)
    pd.testing.assert_frame_equal(df.compute().reset_index(drop=True), expected)


def test_read_orc_a_glob_a_list_and_files_written_in_another_column_order(tmp_path):
    files = _files(tmp_path, sizes=(30, 20), stripe_rows=None)
    other = _write(tmp_path / "other.orc", _frame(10, seed=5)[["x", "id", "small", "f32", "name", "flag", "when",
                                                               "utc", "day"]])
    expected = pd.concat([pd.read_orc(f) for f in files] + [pd.read_orc(other)[list(_frame(0).columns)]],
                         ignore_index=True)
    got = read_orc([str(tmp_path / "part.*.orc"), str(other)]).compute()
    pd.testing.assert_frame_equal(got.reset_index(drop=True), expected)


def test_read_orc_columns_index_and_a_single_column(tmp_path):
    files = _files(tmp_path, sizes=(50, 60), stripe_rows=25)
    whole = pd.concat([pd.read_orc(f) for f in files], ignore_index=True)
    df = read_orc(str(tmp_path / "*.orc"), columns=["name", "x"], index="id")
    assert list(df.columns) == ["name", "x"] and df.divisions == (None,) * (df.npartitions + 1)
    pd.testing.assert_frame_equal(df.compute(), whole.set_index("id")[["name", "x"]])
    s = read_orc(str(tmp_path / "*.orc"), columns="when", split_stripes=False)
    pd.testing.assert_series_equal(s.compute().reset_index(drop=True), whole.when)
    pd.testing.assert_frame_equal(read_orc(str(files[0]), columns=["x", "id"], index="id").compute(),
                                  pd.read_orc(files[0], columns=["x", "id"]).set_index("id"))


def test_read_orc_reads_only_the_columns_used_and_pushes_comparisons(tmp_path):
    files = _files(tmp_path, sizes=(80, 70), stripe_rows=30)
    whole = pd.concat([pd.read_orc(f) for f in files], ignore_index=True)
    df = read_orc(str(tmp_path))
    assert df.x.sum().compute() == pytest.approx(whole.x.sum())
    plan = io.StringIO()
    with contextlib.redirect_stdout(plan):
        df.x.explain()
    assert "read read-orc-x ['x']" in plan.getvalue()
    kept = df[df.small > 10][["id", "small"]]
    plan = io.StringIO()
    with contextlib.redirect_stdout(plan):
        kept.explain()
    assert "filters=[('small', '>', 10)]" in plan.getvalue()
    parts = [pd.read_orc(f) for f in files]
    expected = [p.iloc[i:i + 30].reset_index(drop=True) for p in parts for i in range(0, len(p), 30)]  # (stripes)
    expected = pd.concat([p[p.small > 10][["id", "small"]] for p in expected])
    pd.testing.assert_frame_equal(kept.compute(), expected)
    assert len(df) == len(whole) and len(df.index.compute()) == len(whole)  # (a read of no column keeps the rows)


def test_read_orc_an_integer_column_with_missing_values_needs_a_nullable_backend(tmp_path):
    frame = pd.DataFrame({"n": pd.array([1, None, 3, 4], dtype="Int64"), "b": pd.array([True, None, False, True],
                                                                                     dtype="boolean"),
                          "s": ["a", None, "c", "d"]})
    path = tmp_path / "holes.orc"
    frame.to_orc(path)
    _write(tmp_path / "full.orc", frame.iloc[[0, 2]])
    with pytest.raises(ValueError, match=r"read_orc: column 'n' of .*holes.orc.* holds missing values.*"
                                         r"dtype_backend='numpy_nullable'"):
        read_orc([str(tmp_path / "full.orc"), str(path)]).compute()
    for backend in ("numpy_nullable", "pyarrow"):
        got = read_orc([str(path), str(tmp_path / "full.orc")], dtype_backend=backend)
        expected = pd.concat([pd.read_orc(path, dtype_backend=backend),
                              pd.read_orc(tmp_path / "full.orc", dtype_backend=backend)], ignore_index=True)
        pd.testing.assert_series_equal(got.dtypes, expected.dtypes)
        pd.testing.assert_frame_equal(got.compute().reset_index(drop=True), expected)


def test_read_orc_files_of_no_rows_give_an_empty_frame_of_the_schema(tmp_path):
    for i in range(2):
        _write(tmp_path / f"e{i}.orc", _frame(0))
    df = read_orc(str(tmp_path))
    assert df.npartitions == 1
    pd.testing.assert_frame_equal(df.compute(), pd.read_orc(tmp_path / "e0.orc"))
    pd.testing.assert_frame_equal(read_orc(str(tmp_path), split_stripes=False).compute().reset_index(drop=True),
                                  pd.read_orc(tmp_path / "e0.orc"))


@pytest.mark.parametrize("npartitions", [1, 3])
def test_to_orc_round_trips_with_the_index_named_or_not(tmp_path, npartitions):
    frame = _frame(40).drop(columns=["day"])  # (dates read back as objects, as pandas reads them)
    named = frame.set_index("id")
    ddf = xd.from_pandas(named, npartitions=npartitions)
    paths = to_orc(ddf, str(tmp_path / "named"))
    assert [p.rsplit("/", 1)[-1] for p in paths] == [f"part.{i}.orc" for i in range(npartitions)]
    pd.testing.assert_frame_equal(read_orc(paths[0]).compute(), pd.read_orc(paths[0]))  # (the same file's as pandas)
    pd.testing.assert_frame_equal(read_orc(str(tmp_path / "named"), index="id").compute(), named)
    unnamed = frame.set_axis(pd.Index(np.arange(40) * 3))
    to_orc(xd.from_pandas(unnamed, npartitions=npartitions), str(tmp_path / "unnamed"))
    back = read_orc(str(tmp_path / "unnamed"), index="__index_level_0__").compute()
    pd.testing.assert_frame_equal(back, unnamed)
    to_orc(xd.from_pandas(frame, npartitions=npartitions), str(tmp_path / "none"), write_index=False)
    pd.testing.assert_frame_equal(read_orc(str(tmp_path / "none")).compute().reset_index(drop=True), frame)


def test_to_orc_writes_what_pandas_writes_empty_partitions_and_categoricals_as_values(tmp_path):
    frame = pd.DataFrame({"k": range(10), "c": pd.Categorical(list("abcabcabca")),
                          "s": pd.array([f"v{i}" for i in range(10)], dtype="str")})
    ddf = xd.from_pandas(frame, npartitions=3)
    kept = ddf[ddf.k >= 7]  # (two empty partitions)
    paths = to_orc(kept, str(tmp_path / "out"), write_index=False)
    for i, p in enumerate(paths):
        part = frame.iloc[[0, 4, 7, 10][i]:[0, 4, 7, 10][i + 1]]
        part = part[part.k >= 7].astype({"c": "str"}).reset_index(drop=True)
        part.to_orc(tmp_path / f"pandas.{i}.orc", index=False)
        pd.testing.assert_frame_equal(pd.read_orc(p), pd.read_orc(tmp_path / f"pandas.{i}.orc"))
    back = read_orc(str(tmp_path / "out"))
    assert back.npartitions == 1  # (a file of no rows has no stripes)
    assert [len(p) for p in _partitions(read_orc(str(tmp_path / "out"), split_stripes=False))] == [0, 0, 3]
    pd.testing.assert_frame_equal(back.compute().reset_index(drop=True),
                                  frame[frame.k >= 7].astype({"c": "str"}).reset_index(drop=True))


def test_to_orc_delayed_compute_kwargs_the_method_and_a_star_name(tmp_path):
    import xsched.dataframe.orc  # noqa: F401  (attaches DataFrame.to_orc)

    ddf = xd.from_pandas(pd.DataFrame({"a": range(6), "b": np.arange(6) / 2}), npartitions=2)
    later = to_orc(ddf, str(tmp_path / "d"), compute=False)
    assert len(later) == 2 and not (tmp_path / "d" / "part.0.orc").exists()
    assert [p.rsplit("/", 1)[-1] for p in xsched.compute(*later)] == ["part.0.orc", "part.1.orc"]
    paths = ddf.to_orc(str(tmp_path / "m" / "day-*.orc"), write_index=False, compute_kwargs={"optimize_graph": False})
    assert [p.rsplit("/", 1)[-1] for p in paths] == ["day-0.orc", "day-1.orc"]
    pd.testing.assert_frame_equal(read_orc(str(tmp_path / "m")).compute().reset_index(drop=True),
                                  pd.DataFrame({"a": range(6), "b": np.arange(6) / 2}))
    pd.testing.assert_frame_equal(read_orc(str(tmp_path / "d"), index="__index_level_0__").compute(),
                                  ddf.compute())


def test_orc_through_an_fsspec_url():
    fsspec = pytest.importorskip("fsspec")
    frame = _frame(30).set_index("id")
    try:
        paths = xd.from_pandas(frame, npartitions=2).to_orc("memory://orc-test/out")
        assert paths == [f"memory:///orc-test/out/part.{i}.orc" for i in range(2)]
        back = read_orc("memory://orc-test/out", index="id", split_stripes=False)
        pd.testing.assert_frame_equal(back.compute(), frame)
    finally:
        fsspec.filesystem("memory").rm("/orc-test", recursive=True)


def test_read_orc_refuses_bad_input_when_called(tmp_path):
    _files(tmp_path, sizes=(10, 10), stripe_rows=None)
    d = str(tmp_path)
    with pytest.raises(ValueError, match=r"read_orc: no column 'nope': .*part.0.orc has the columns \['id', "):
        read_orc(d, columns=["x", "nope"])
    with pytest.raises(ValueError, match="no column 'ix'"):
        read_orc(d, index="ix")
    with pytest.raises(ValueError, match="split_stripes must be a positive number"):
        read_orc(d, split_stripes=0)
    with pytest.raises(ValueError, match="dtype_backend must be one of"):
        read_orc(d, dtype_backend="arrow")
    with pytest.raises(FileNotFoundError, match="read_orc: no file matches"):
        read_orc(str(tmp_path / "*.nothing"))
    (tmp_path / "junk.orc").write_bytes(b"not orc at all")
    with pytest.raises(ValueError, match=r"read_orc: .*junk.orc is not an ORC file"):
        read_orc(str(tmp_path / "junk.orc"))
    (tmp_path / "junk.orc").unlink()
    _write(tmp_path / "part.2.orc", _frame(5).drop(columns=["f32"]).astype({"small": "int64"}))
    with pytest.raises(ValueError, match=r"part.2.orc lacks the columns \['f32'\]; has 'small' as int64, not int16 "
                                         r"\(the first file, .*part.0.orc, has the columns id \(int64\)"):
        read_orc(d)


def test_to_orc_refuses_what_orc_cannot_hold_when_called(tmp_path):
    ddf = xd.from_pandas(pd.DataFrame({"a": np.arange(3, dtype="uint32")}), npartitions=1)
    with pytest.raises(TypeError, match=r"to_orc: ORC cannot hold the column 'a' of type uint32; .*astype\('int64'\)"):
        to_orc(ddf, str(tmp_path / "u"))
    ddf = xd.from_pandas(pd.DataFrame({"a": [1]}, index=pd.to_timedelta([1], unit="s")), npartitions=1)
    with pytest.raises(TypeError, match="ORC cannot hold the index of type duration"):
        to_orc(ddf, str(tmp_path / "t"))
    to_orc(ddf, str(tmp_path / "t"), write_index=False)  # (without the index it fits)
    with pytest.raises(TypeError, match="to_orc writes an xsched DataFrame, not DataFrame"):
        to_orc(pd.DataFrame({"a": [1]}), str(tmp_path / "p"))


def test_to_orc_skips_empty_partitions_whose_object_columns_have_no_type(tmp_path):
    pdf = pd.DataFrame({"d": [dt.date(2000, 1, i) for i in range(1, 10)], "v": range(9)})
    df = xd.from_pandas(pdf, npartitions=3)
    filtered = df[df.v > 4]  # the first partition left empty: its dates have no type to write
    paths = to_orc(filtered, str(tmp_path / "out"), write_index=False)
    assert len(paths) == 2
    back = read_orc(str(tmp_path / "out")).compute().reset_index(drop=True)
    pd.testing.assert_frame_equal(back, pd.concat([pd.read_orc(p) for p in paths], ignore_index=True))
    assert back.v.tolist() == [5, 6, 7, 8]
