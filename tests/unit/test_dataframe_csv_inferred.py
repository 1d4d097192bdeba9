"""read_csv's pandas path with text columns left for pandas to infer (``csv._inferred``,
where pandas infers text as ``str``; first for filtered partitions, after pyarrow's
``csv_arrow.py`` for whole ones): on any CSV pandas writes, parsed in pieces of any size
with or without a pushed filter, it gives what pandas gives with every dtype named, and
where pandas took a text column's values for numbers or flags it parses again."""

from __future__ import annotations

import io
import os
import tempfile

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import xsched.dataframe as xd
import xsched.dataframe.csv as csv_mod
from xsched.dataframe.planner import keep_rows
from xsched.files import filesystem_for

pytestmark = pytest.mark.skipif(not csv_mod._PANDAS_FIRST, reason="pandas infers text as object here")

_WORDS = st.one_of(
    st.text(alphabet=st.sampled_from(list("ab ,\"'\n;x\u00e9")), max_size=5),
    st.sampled_from(["NA", "", "nan", "None", "007", "1", "-2.5", "1e3", "True", "false", " 7 ", "0x1"]))


@st.composite
def frames(draw):
    n = draw(st.integers(0, 25))
    words = draw(st.lists(_WORDS, min_size=n, max_size=n))
    ints = draw(st.lists(st.integers(-2**63, 2**63 - 1), min_size=n, max_size=n))
    floats = draw(st.lists(st.floats(allow_nan=True, width=64), min_size=n, max_size=n))
    return pd.DataFrame({"i": pd.Series(ints, dtype="int64"), "s": pd.Series(words, dtype=object),
                         "f": pd.Series(floats, dtype="float64")})


def _no_arrow(*args, **kwargs):
    return None


def _read(data: bytes, dtypes: dict, meta: pd.DataFrame, kwargs: dict, filters: tuple) -> pd.DataFrame:
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "part.csv")
        with open(path, "wb") as f:
            f.write(data)
        fs, path = filesystem_for(path)
        return csv_mod._read_block(fs, path, path, 0, None, b"", None, kwargs, dtypes, meta, None, "the sample",
                                   filters)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames(), st.sampled_from([1, 3, 7, csv_mod.FILTER_CHUNK_ROWS]),
       st.lists(st.tuples(st.sampled_from(["i", "f", "s"]), st.sampled_from(["<", ">=", "==", "!="])), max_size=2),
       st.booleans())
def test_inferred_text_gives_what_pandas_gives_with_every_dtype(frame, rows, ops, project):
    data = frame.to_csv(index=False).encode()
    try:
        meta = pd.read_csv(io.BytesIO(data), dtype={"i": "int64", "f": "float64", "s": "str"}).iloc[:0]
    except ValueError:  # (pandas misreads its own file: nothing to compare)
        assume(False)
    kwargs = {"usecols": ["s", "f"]} if project else {}
    meta = meta[kwargs.get("usecols", list(meta.columns))]
    dtypes = dict(meta.dtypes)
    pivot = {"i": 0, "f": 0.5, "s": "b"}
    filters = tuple((c, op, pivot[c]) for c, op in ops if c in meta.columns)
    default, csv_mod.FILTER_CHUNK_ROWS = csv_mod.FILTER_CHUNK_ROWS, rows
    arrow, csv_mod.read_arrow = csv_mod.read_arrow, _no_arrow  # (unfiltered: pandas' turn only after it)
    try:
        got = _read(data, dtypes, meta, kwargs, filters)
    finally:
        csv_mod.FILTER_CHUNK_ROWS, csv_mod.read_arrow = default, arrow
    with pd.read_csv(io.BytesIO(data), dtype=dtypes, chunksize=rows, **kwargs) as chunks:
        parts = [keep_rows(c, filters) for c in chunks]
    want = pd.concat(parts) if parts else meta
    if not filters and len(want):
        want = want.reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want, check_index_type=False)


@pytest.fixture
def attempts(monkeypatch):
    """The text columns each pandas parse of a partition left to inference, in order."""
    seen = []
    parse = csv_mod._parse

    def spy(parser, src, dtypes, inferred, *args):
        seen.append(list(inferred))
        return parse(parser, src, dtypes, inferred, *args)

    monkeypatch.setattr(csv_mod, "_parse", spy)
    return seen


def test_text_taken_for_numbers_is_parsed_again_and_missing_text_is_not(monkeypatch, attempts):
    monkeypatch.setattr(csv_mod, "FILTER_CHUNK_ROWS", 2)
    meta = pd.DataFrame({"n": pd.Series([], dtype="int64"), "s": pd.Series([], dtype="str")})
    dtypes = dict(meta.dtypes)
    # rows 0-1: codes pandas would read as the numbers 7 and 10; rows 2-3: text
    got = _read(b"n,s\n1,007\n2,010\n3,ab\n4,cd\n", dtypes, meta, {}, (("n", ">", 0),))
    assert got.s.tolist() == ["007", "010", "ab", "cd"] and got.s.dtype == meta.s.dtype
    assert attempts == [["s"], []]  # inferred first, then every dtype named
    attempts.clear()
    # rows 0-1: no text at all (pandas infers float64 of NaN), kept as missing text, one parse
    got = _read(b"n,s\n1,\n2,NA\n3,ab\n", dtypes, meta, {}, (("n", ">", 0),))
    assert got.s.isna().tolist() == [True, True, False] and got.s.dtype == meta.s.dtype
    assert attempts == [["s"]]
    attempts.clear()
    monkeypatch.setattr(csv_mod, "read_arrow", _no_arrow)  # (unfiltered: pyarrow's turn first)
    got = _read(b"n,s\n1,007\n", dtypes, meta, {}, ())  # (whole, no filter: the same)
    assert got.s.tolist() == ["007"] and attempts == [["s"], []]
    assert np.array_equal(got.n, [1])


def test_text_named_by_dtype_is_parsed_as_named_once(tmp_path, monkeypatch, attempts):
    """``dtype=str`` or ``dtype={"code": str}`` is asked for text that looks like numbers:
    parsed with its dtype named, never inferred first and parsed again."""
    from xsched.dataframe import read_csv

    for i in range(2):
        (tmp_path / f"{i}.csv").write_text("code,label,v\n" + "".join(f"00{j},x{j},{j - 2}\n" for j in range(5)))
    # text named: pyarrow first (pandas, told the dtype, is the slower); not named: pandas first
    answered = []
    arrow = csv_mod.read_arrow

    def arrow_spy(*args, **kwargs):
        out = arrow(*args, **kwargs)
        answered.append(out is not None)
        return out

    monkeypatch.setattr(csv_mod, "read_arrow", arrow_spy)
    for dtype, pyarrow, pandas in (({"code": str}, [True, True], []), ({"v": float}, [], [["label"]] * 2)):
        answered.clear()
        attempts.clear()
        read_csv(str(tmp_path / "*.csv"), dtype=dtype).pipe(lambda df: df[df.label >= "x2"]).compute()
        assert (answered, attempts) == (pyarrow, pandas), dtype
    # pandas' turn (pyarrow refusing): text named is parsed as named, the rest inferred
    monkeypatch.setattr(csv_mod, "read_arrow", _no_arrow)
    for dtype, inferred in ((str, []), ({"code": str}, ["label"]), (None, ["label"])):
        attempts.clear()
        df = read_csv(str(tmp_path / "*.csv"), dtype=dtype)
        got = df[df.label >= "x2"].compute()  # (a filter: pandas' parser first)
        assert attempts == [inferred, inferred], dtype
        if dtype is not None:
            assert got.code.tolist() == ["002", "003", "004"] * 2
        assert got.label.tolist() == ["x2", "x3", "x4"] * 2


def test_a_quoted_newline_cut_by_a_block_says_to_read_files_whole(tmp_path):
    path = tmp_path / "notes.csv"
    path.write_text("id,text\n" + "".join(f'{i},"line one\nline two {i}"\n' for i in range(400)))
    with pytest.raises(ValueError, match="quoted value holding a newline.*blocksize=None"):
        xd.read_csv(str(path), blocksize=2000).compute()
    assert len(xd.read_csv(str(path), blocksize=None).compute()) == 400


def test_a_two_byte_encoding_with_blocksize_is_refused_when_built(tmp_path):
    path = str(tmp_path / "u.csv")
    pd.DataFrame({"a": range(50), "b": ["x"] * 50}).to_csv(path, index=False, encoding="utf-16")
    with pytest.raises(ValueError, match="encoding='utf-16' writes a newline as more than the byte.*blocksize=None"):
        xd.read_csv(path, encoding="utf-16", blocksize=100)
    assert len(xd.read_csv(path, encoding="utf-16").compute()) == 50
    latin = str(tmp_path / "l.csv")
    pd.DataFrame({"a": range(50), "b": ["é"] * 50}).to_csv(latin, index=False, encoding="latin-1")
    assert xd.read_csv(latin, encoding="latin-1", blocksize=100).compute().b.tolist() == ["é"] * 50


def test_utf8_with_a_byte_order_mark_reads_in_blocks(tmp_path):
    path = str(tmp_path / "bom.csv")
    pdf = pd.DataFrame({"a": range(50), "b": ["é"] * 50})
    pdf.to_csv(path, index=False, encoding="utf-8-sig")
    got = xd.read_csv(path, encoding="utf-8-sig", blocksize=100).compute()
    assert got.a.tolist() == list(range(50)) and got.b.tolist() == ["é"] * 50
