"""xsched.bag against plain Python where the two disagreed: groupby keys that are equal
across types or time zones, text files with "\r" line ends or compressed, var/std of
Decimal and Fraction values, remove/accumulate/product, and to_dataframe's error for a
value that does not fit. Each compares with what builtins, itertools and statistics give
on the concatenated sequence, over 1, 2 and 3 partitions and with empty partitions."""

from __future__ import annotations

import datetime as dt
import itertools
import operator

import numpy as np
import pandas as pd
import pytest

import xsched
import xsched.bag as xb

NPARTS = [1, 2, 3]


def _bags(seq: list) -> list:
    """The sequence over 1, 2 and 3 partitions, and with empty partitions around it."""
    half = len(seq) // 2
    pieces = [[], seq[:half], [], seq[half:], []]
    return ([xb.from_sequence(seq, npartitions=n) for n in NPARTS]
            + [xb.from_delayed([xsched.delayed(list)(p) for p in pieces])])


def _groups(seq: list) -> list:
    """Plain Python's groups of equal elements, first seen first, with their counts."""
    out: dict = {}
    for x in seq:
        out[x] = out.get(x, 0) + 1
    return list(out.items())


# ---------------------------------------------------------------------- groupby keys

UTC, PLUS1 = dt.timezone.utc, dt.timezone(dt.timedelta(hours=1))
EQUAL_KEYS = {
    "time zones": [dt.datetime(2024, 1, 1, tzinfo=UTC), dt.datetime(2024, 1, 1, 1, tzinfo=PLUS1)],
    "Timestamp and datetime": [pd.Timestamp("2024-01-01 12:00"), dt.datetime(2024, 1, 1, 12)],
    "Timestamps in two zones": [pd.Timestamp("2024-01-01", tz="Europe/Paris"),
                                pd.Timestamp("2023-12-31 23:00", tz="UTC")],
    "Timedelta and timedelta": [pd.Timedelta(hours=36), dt.timedelta(days=1, hours=12)],
    "datetime64 and Timestamp": [np.datetime64("2024-01-01"), pd.Timestamp("2024-01-01")],
    "numpy and Python bool": [np.True_, True, 1],
}


@pytest.mark.parametrize("case", list(EQUAL_KEYS))
@pytest.mark.parametrize("n_out", NPARTS)
def test_groupby_puts_equal_keys_of_other_types_in_one_group(case, n_out):
    keys = EQUAL_KEYS[case] * 3
    expected = [n for _, n in _groups(keys)]
    assert len(expected) == 1
    for b in _bags(keys):
        got = b.groupby(lambda x: x, npartitions=n_out).map(lambda kv: len(kv[1])).compute()
        assert got == expected


@pytest.mark.parametrize("case", list(EQUAL_KEYS))
def test_stable_hash_agrees_where_equality_and_hash_do(case):
    from xsched.bag.reductions import stable_hash

    keys = EQUAL_KEYS[case]
    assert len({hash(k) for k in keys}) == 1 and all(k == keys[0] for k in keys)
    assert len({stable_hash(k) for k in keys}) == 1
    assert stable_hash(pd.NaT) == stable_hash(pd.NaT)  # (not equal to itself, still one hash)


# ---------------------------------------------------------------------- text files

LINE_ENDS = {
    "\\n": b"a\nbb\nccc\n",
    "\\r\\n": b"a\r\nbb\r\nccc\r\n",
    "\\r": b"a\rbb\rccc\r",
    "mixed, no last end": b"a\r\nbb\rc\n\ndd",
    "empty": b"",
}


@pytest.mark.parametrize("case", list(LINE_ENDS))
@pytest.mark.parametrize("blocksize", [None, 1, 2, 3, 5, 100])
def test_read_text_lines_are_open_s_lines_whatever_the_blocksize(tmp_path, case, blocksize):
    path = tmp_path / "f.txt"
    path.write_bytes(LINE_ENDS[case])
    with open(path, encoding="utf-8") as f:
        expected = list(f)
    assert xb.read_text(str(path), blocksize=blocksize).compute() == expected


@pytest.mark.parametrize("ext", ["gz", "bz2", "xz"])
@pytest.mark.parametrize("n", NPARTS)
def test_to_textfiles_compresses_by_name_and_read_text_reads_back(tmp_path, ext, n):
    import bz2
    import gzip
    import lzma

    opener = {"gz": gzip.open, "bz2": bz2.open, "xz": lzma.open}[ext]
    lines = ["é", "b\n", "", "last"]
    xb.from_sequence(lines, npartitions=n).to_textfiles(str(tmp_path / f"*.txt.{ext}"))
    files = sorted(tmp_path.iterdir())
    assert len(files) == n
    written = b"".join(opener(p).read() for p in files).decode()
    assert written == "é\nb\n\nlast\n"
    for blocksize in (None, 2):
        assert xb.read_text(str(tmp_path / f"*.{ext}"), blocksize=blocksize).compute() == ["é\n", "b\n", "\n", "last\n"]


def test_read_text_and_to_textfiles_check_compression_when_built(tmp_path):
    (tmp_path / "a.txt").write_text("x\n")
    with pytest.raises(ValueError, match="compression 'snappy'"):
        xb.read_text(str(tmp_path / "a.txt"), compression="snappy")
    with pytest.raises(ValueError, match="compression 'zip'"):
        xb.from_sequence(["x"]).to_textfiles(str(tmp_path / "out" / "*.zip"))
    xb.from_sequence(["x"]).to_textfiles(str(tmp_path / "raw" / "*.gz"), compression=None)
    assert (tmp_path / "raw" / "0.gz").read_bytes() == b"x\n"


# ---------------------------------------------------------------------- var and std


@pytest.mark.parametrize("ddof", [0, 1])
def test_var_and_std_of_decimals_and_fractions_keep_their_type(ddof):
    import decimal
    import fractions
    import statistics

    var = statistics.pvariance if ddof == 0 else statistics.variance
    std = statistics.pstdev if ddof == 0 else statistics.stdev
    for data in ([decimal.Decimal(s) for s in ("1.5", "2.5", "4", "-0.25")],
                 [fractions.Fraction(1, 3), fractions.Fraction(2, 3), fractions.Fraction(5, 2), fractions.Fraction(-7, 4)]):
        for b in _bags(data):
            got_var, got_std = b.var(ddof=ddof).compute(), b.std(ddof=ddof).compute()
            assert type(got_var) is type(var(data)) and type(got_std) is type(std(data))
            np.testing.assert_allclose(float(got_var), float(var(data)), rtol=1e-15)
            np.testing.assert_allclose(float(got_std), float(std(data)), rtol=1e-15)


# ---------------------------------------------------------------------- remove, accumulate, product


def test_remove_is_filter_s_complement():
    data = list(range(-5, 12))
    for b in _bags(data):
        assert b.remove(lambda x: x % 3 == 0).compute() == list(itertools.filterfalse(lambda x: x % 3 == 0, data))


@pytest.mark.parametrize("data", [[3, 1, 4, 1, 5, 9, 2, 6], [7], []])
def test_accumulate_is_itertools_accumulate(data):
    for b in _bags(data):
        assert b.accumulate(operator.add).compute() == list(itertools.accumulate(data, operator.add))
        assert b.accumulate(max, initial=2).compute() == list(itertools.accumulate(data, max, initial=2))
        assert b.accumulate(operator.add, initial=None).npartitions == b.npartitions


@pytest.mark.parametrize("n_other", NPARTS)
def test_product_gives_every_pair_once_in_partition_pair_order(n_other):
    left, right = [1, 2, 3, 4, 5], ["a", "b", "c"]
    other = xb.from_sequence(right, npartitions=n_other)
    for b in _bags(left):
        pairs = b.product(other)
        assert pairs.npartitions == b.npartitions * other.npartitions
        expected = [list(itertools.product(p.compute(), q.compute()))
                    for p in b.to_delayed() for q in other.to_delayed()]
        assert [d.compute() for d in pairs.to_delayed()] == expected
        assert sorted(pairs.compute()) == sorted(itertools.product(left, right))
    with pytest.raises(TypeError, match="product: expected a Bag"):
        xb.from_sequence(left).product(right)


# ---------------------------------------------------------------------- to_dataframe

RECORDS = [{"x": 1, "y": "a"}, {"x": 2, "y": None}, {"x": None, "y": "c"}]


@pytest.mark.parametrize("n", NPARTS)
def test_to_dataframe_names_the_column_a_later_value_does_not_fit(n):
    b = xb.from_sequence(RECORDS, npartitions=n)
    with pytest.raises(ValueError, match=r"column 'x' .* dtype int64 .* pass meta="):
        b.to_dataframe().compute()
    got = b.to_dataframe(meta={"x": "float64", "y": "string"}).compute()
    pd.testing.assert_frame_equal(got.reset_index(drop=True), pd.DataFrame(RECORDS).astype({"y": "string"}))
