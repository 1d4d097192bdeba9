"""read_fwf: fixed-width text files as partitions, checked against pandas' own read_fwf."""

from __future__ import annotations

import contextlib
import gzip
import io

import numpy as np
import pandas as pd
import pytest

import xsched.dataframe as xd


def _write_table(path, n, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 10**6, n)
    names = rng.choice(["ann", "bo", "cyrille", "d"], n)
    values = rng.normal(size=n).round(3)
    lines = ["id      name      value"]
    lines += [f"{i:<8}{nm:<10}{v:>6}" for i, nm, v in zip(ids, names, values)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("blocksize", [None, 97, 1000, 4096])
def test_read_fwf_matches_pandas_for_any_blocksize(tmp_path, blocksize):
    path = _write_table(tmp_path / "t.txt", 300)
    df = xd.read_fwf(str(path), blocksize=blocksize)
    expected = pd.read_fwf(path)
    if blocksize:
        assert df.npartitions == -(-path.stat().st_size // blocksize)
    got = df.compute()
    pd.testing.assert_frame_equal(got.reset_index(drop=True), expected)
    assert list(df.dtypes) == list(expected.dtypes)


def test_read_fwf_cuts_every_block_alike_even_where_a_block_has_short_values(tmp_path):
    # the last rows have short names: inferred per block, their columns would shift
    lines = ["key  word      n"] + [f"{i:<5}{'w' * 9:<10}{i}" for i in range(20)] + \
            [f"{i:<5}{'w':<10}{i}" for i in range(20, 40)]
    path = tmp_path / "s.txt"
    path.write_text("\n".join(lines) + "\n")
    got = xd.read_fwf(str(path), blocksize=120).compute()
    pd.testing.assert_frame_equal(got.reset_index(drop=True), pd.read_fwf(path))


def test_read_fwf_widths_colspecs_names_usecols_dtype_and_a_glob(tmp_path):
    for k in range(3):
        _write_table(tmp_path / f"p{k}.txt", 50, seed=k)
    files = sorted(tmp_path.glob("p*.txt"))
    expected = pd.concat([pd.read_fwf(f, widths=[8, 10, 6]) for f in files], ignore_index=True)
    got = xd.read_fwf(str(tmp_path / "p*.txt"), widths=[8, 10, 6], blocksize=500)
    pd.testing.assert_frame_equal(got.compute().reset_index(drop=True), expected)
    spec = [(0, 8), (18, 24)]
    got = xd.read_fwf(str(tmp_path / "p*.txt"), colspecs=spec, dtype={"value": "float32"})
    exp = pd.concat([pd.read_fwf(f, colspecs=spec, dtype={"value": "float32"}) for f in files], ignore_index=True)
    pd.testing.assert_frame_equal(got.compute().reset_index(drop=True), exp)
    got = xd.read_fwf(str(files[0]), usecols=["name"], blocksize=300)
    pd.testing.assert_series_equal(got.name.compute().reset_index(drop=True), pd.read_fwf(files[0]).name)


def test_read_fwf_reads_only_the_columns_used_and_gzip_whole(tmp_path):
    path = _write_table(tmp_path / "t.txt", 200)
    df = xd.read_fwf(str(path), blocksize=1000)
    assert df.value.sum().compute() == pytest.approx(pd.read_fwf(path).value.sum())
    plan = io.StringIO()
    with contextlib.redirect_stdout(plan):
        df.value.explain()
    assert "read read-fwf-value ['value']" in plan.getvalue()
    gz = tmp_path / "t.txt.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    zipped = xd.read_fwf(str(gz), blocksize=1000)
    assert zipped.npartitions == 1
    pd.testing.assert_frame_equal(zipped.compute(), pd.read_fwf(path))


def test_read_fwf_a_value_that_does_not_fit_names_the_file_column_and_fix(tmp_path):
    lines = ["a    b"] + [f"{i:<5}{i}" for i in range(200)] + ["x    7"]
    path = tmp_path / "bad.txt"
    path.write_text("\n".join(lines) + "\n")
    df = xd.read_fwf(str(path), blocksize=400, sample=300)
    with pytest.raises(ValueError, match=r"read_fwf: column 'a' of .*bad.txt.*'x'.*dtype=\{'a': 'object'\}"):
        df.compute()


def test_read_fwf_refuses_widths_with_colspecs_and_a_sample_without_columns(tmp_path):
    path = _write_table(tmp_path / "t.txt", 5)
    with pytest.raises(ValueError, match="colspecs= or widths=, not both"):
        xd.read_fwf(str(path), widths=[8, 10, 6], colspecs=[(0, 8)])
    blank = tmp_path / "blank.txt"
    blank.write_text("   \n  \n")
    with pytest.raises(ValueError, match="no columns to find"):
        xd.read_fwf(str(blank))


@pytest.mark.parametrize("blocksize", [5, 12, None])
def test_a_header_after_blank_and_comment_lines_heads_every_block(tmp_path, blocksize):
    csv = tmp_path / "c.csv"
    csv.write_text("\n\n# made by hand\na,b\n1,2\n3,4\n5,6\n")
    got = xd.read_csv(str(csv), blocksize=blocksize, comment="#").compute()
    pd.testing.assert_frame_equal(got.reset_index(drop=True), pd.read_csv(csv, comment="#"))
    fwf = tmp_path / "f.txt"
    fwf.write_text("\n# made by hand\na   b\n1   2\n3   4\n5   6\n")
    got = xd.read_fwf(str(fwf), blocksize=blocksize, comment="#").compute()
    pd.testing.assert_frame_equal(got.reset_index(drop=True), pd.read_fwf(fwf, comment="#"))
