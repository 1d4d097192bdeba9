"""Zip and tar archives of one file read as compressed files, as pandas reads them: what
``to_csv(compression="zip")`` writes reads back (by the name's ``.zip`` or by
``compression=``), a tar of one CSV, a bag's lines of a zip; an archive of several files is
refused naming them."""

import zipfile

import pandas as pd
import pandas.testing as tm
import pytest

import xsched.bag as xb
import xsched.dataframe as xd


@pytest.fixture
def pdf():
    return pd.DataFrame({"a": range(7), "b": list("abcdefg")})


def test_what_to_csv_writes_as_zip_reads_back(tmp_path, pdf):
    xd.from_pandas(pdf, npartitions=3).to_csv(str(tmp_path / "out-*.csv.zip"), index=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out-0.csv.zip", "out-1.csv.zip", "out-2.csv.zip"]
    got = xd.read_csv(str(tmp_path / "out-*.csv.zip"))
    assert got.npartitions == 3
    tm.assert_frame_equal(got.compute().reset_index(drop=True), pdf)
    first = got.partitions[0].compute()
    named = tmp_path / "renamed"
    (tmp_path / "out-0.csv.zip").rename(named)
    tm.assert_frame_equal(xd.read_csv(str(named), compression="zip").compute(), pdf.iloc[:len(first)])


def test_a_tar_of_one_file(tmp_path, pdf):
    pdf.to_csv(tmp_path / "t.csv.tar", compression="tar", index=False)
    tm.assert_frame_equal(xd.read_csv(str(tmp_path / "t.csv.tar")).compute(), pdf)


def test_a_bags_lines_of_a_zip(tmp_path):
    with zipfile.ZipFile(tmp_path / "lines.zip", "w") as z:
        z.writestr("lines.txt", "one\ntwo\n")
    assert xb.read_text(str(tmp_path / "lines.zip")).compute() == ["one\n", "two\n"]


def test_an_archive_of_several_files_is_refused_naming_them(tmp_path):
    with zipfile.ZipFile(tmp_path / "two.zip", "w") as z:
        z.writestr("a.csv", "a\n1\n")
        z.writestr("b.csv", "a\n2\n")
    with pytest.raises(ValueError, match="must hold exactly one file, and this one holds 2: a.csv, b.csv"):
        xd.read_csv(str(tmp_path / "two.zip")).compute()


@pytest.mark.parametrize("ending", ["tar.gz", "tar.xz", "tar.bz2"])
def test_compressed_tars_read_as_tars(tmp_path, pdf, ending):
    path = tmp_path / f"p.csv.{ending}"
    pdf.to_csv(path, index=False)  # (pandas: a tar, compressed as its name says)
    tm.assert_frame_equal(xd.read_csv(str(path)).compute(), pdf)


@pytest.mark.parametrize("ending", ["tar.gz", "tar.xz"])
def test_compressed_tars_written_as_pandas_writes_them(tmp_path, pdf, ending):
    xd.from_pandas(pdf, npartitions=2).to_csv(str(tmp_path / f"w-*.csv.{ending}"), index=False)
    second = pd.read_csv(tmp_path / f"w-1.csv.{ending}")  # (pandas reads what was written)
    assert len(second) and second.a.tolist() == pdf.a.tolist()[-len(second):]
    tm.assert_frame_equal(xd.read_csv(str(tmp_path / f"w-*.csv.{ending}")).compute().reset_index(drop=True), pdf)
    with pytest.raises(ValueError, match="pandas cannot write a bz2-compressed tar archive"):
        xd.from_pandas(pdf, npartitions=2).to_csv(str(tmp_path / "b-*.csv.tar.bz2"))
