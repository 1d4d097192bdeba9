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
