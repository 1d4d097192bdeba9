"""Review of read_fwf's columns and of read_orc / to_orc, checked against pandas."""

from __future__ import annotations

import decimal

import pandas as pd
import pytest

import xsched.dataframe as xd
from xsched.dataframe.orc import read_orc


@pytest.mark.parametrize("text, blocksize", [("a   b\n# a whole comment line\n1   2\n3   4\n", None),
                                             ("a   b\n# a whole comment line\n1   2\n3   4\n", 10),
                                             ("#\na   b\n1   2\n", None)])
def test_read_fwf_a_line_that_is_all_comment(tmp_path, text, blocksize):
    path = tmp_path / "c.txt"
    path.write_text(text)
    got = xd.read_fwf(str(path), comment="#", blocksize=blocksize).compute()
    pd.testing.assert_frame_equal(got.reset_index(drop=True), pd.read_fwf(path, comment="#"))


@pytest.mark.parametrize("blocksize", [None, 7, 1000])
def test_read_fwf_blank_lines_count_among_infer_nrows(tmp_path, blocksize):
    path = tmp_path / "b.txt"
    path.write_text("a  b\n\n\n\n1  2   3\n4  5   6\n")
    got = xd.read_fwf(str(path), infer_nrows=3, blocksize=blocksize).compute()
    pd.testing.assert_frame_equal(got.reset_index(drop=True), pd.read_fwf(path, infer_nrows=3))


@pytest.mark.parametrize("skiprows", [[0], [0, 2], 1])
def test_read_fwf_skiprows_as_a_list_leaves_those_lines_out_of_the_columns(tmp_path, skiprows):
    path = tmp_path / "s.txt"
    path.write_text("a long line to skip, xxxxxxxxxxxxxxxxxxxxxxxxxx\nab    cd\n1     2\n33    44\n")
    got = xd.read_fwf(str(path), skiprows=skiprows).compute()
    pd.testing.assert_frame_equal(got.reset_index(drop=True), pd.read_fwf(path, skiprows=skiprows))


def test_read_fwf_lines_ending_in_a_lone_carriage_return(tmp_path):
    path = tmp_path / "r.txt"
    path.write_bytes(b"a    b\r1    2\r33   4\r")
    got = xd.read_fwf(str(path)).compute()
    pd.testing.assert_frame_equal(got.reset_index(drop=True), pd.read_fwf(path))


@pytest.mark.parametrize("npartitions", [1, 2, 3])
@pytest.mark.parametrize("backend", [None, "pyarrow"])
def test_orc_decimals_round_trip_whatever_precision_each_partition_needs(tmp_path, npartitions, backend):
    pytest.importorskip("pyarrow.orc")
    frame = pd.DataFrame({"d": [decimal.Decimal(v) for v in ("1.5", "-2.25", "0.125", "310.5", "7")],
                          "i": range(5)})
    xd.from_pandas(frame, npartitions=npartitions).to_orc(str(tmp_path / "out"), write_index=False)
    frame.to_orc(tmp_path / "one.orc", index=False)
    got = read_orc(str(tmp_path / "out"), dtype_backend=backend)
    expected = pd.read_orc(tmp_path / "one.orc", **({"dtype_backend": backend} if backend else {}))
    assert got._meta.dtypes.equals(expected.dtypes)
    pd.testing.assert_frame_equal(got.compute().reset_index(drop=True), expected)
    pd.testing.assert_frame_equal(got[got.i > 1][["d"]].compute().reset_index(drop=True),
                                  expected[expected.i > 1][["d"]].reset_index(drop=True))
    assert [str(v) for v in got.d.compute()] == [str(v) for v in expected.d]


def test_read_orc_still_refuses_files_whose_other_types_differ(tmp_path):
    pa = pytest.importorskip("pyarrow")
    orc = pytest.importorskip("pyarrow.orc")
    orc.write_table(pa.table({"d": pa.array([decimal.Decimal("1.5")]), "i": pa.array([1], pa.int32())}),
                    str(tmp_path / "a.orc"))
    orc.write_table(pa.table({"d": pa.array([decimal.Decimal("10.25")]), "i": pa.array([1], pa.int64())}),
                    str(tmp_path / "b.orc"))
    with pytest.raises(ValueError, match="has 'i' as int64, not int32"):
        read_orc(str(tmp_path))
