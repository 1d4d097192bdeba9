"""read_csv's pyarrow path (``dataframe/csv_arrow.py``): on any CSV pandas writes it gives
pandas' own answer (values, dtypes, row numbers of filtered rows) or hands the partition
back to pandas; it never gives a different one."""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyarrow")
from hypothesis import HealthCheck, assume, event, given, settings, strategies as st  # noqa: E402

import xsched.dataframe.csv as csv_mod  # noqa: E402
from xsched.dataframe.csv import read_csv  # noqa: E402
from xsched.dataframe.planner import keep_rows  # noqa: E402
from xsched.dataframe import csv_arrow  # noqa: E402
from xsched.dataframe.csv_arrow import read_arrow  # noqa: E402

_TEXT = st.text(alphabet=st.sampled_from(list("ab ,\"'\n\r;x\u00e9\u4e2d")), max_size=6)
_WORDS = st.one_of(_TEXT, st.sampled_from(["NA", "", "null", "None", "nan", "N/A", "  ", "\t", " x ", "a,b", '"q"']))
_FLOATS = st.one_of(st.floats(allow_nan=True, width=64), st.sampled_from([0.1, -0.0, 1e300, 5e-324]))


@st.composite
def frames(draw):
    n = draw(st.integers(0, 30))
    ints = draw(st.lists(st.integers(-2**63, 2**63 - 1), min_size=n, max_size=n))
    floats = draw(st.lists(_FLOATS, min_size=n, max_size=n))
    words = draw(st.lists(_WORDS, min_size=n, max_size=n))
    frame = pd.DataFrame({"i": pd.Series(ints, dtype="int64"), "f": pd.Series(floats, dtype="float64"),
                          "s": pd.Series(words, dtype=object)})
    return frame[draw(st.sampled_from([["i", "f", "s"], ["s"], ["f"], ["s", "i"]]))]


def _pandas(data: bytes, dtypes: dict, filters=(), **kw) -> pd.DataFrame:
    with pd.read_csv(io.BytesIO(data), dtype=dtypes, chunksize=7, **kw) as chunks:
        parts = [keep_rows(c, filters) for c in chunks]
    return pd.concat(parts) if parts else None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames(), st.sampled_from([",", ";", "|"]), st.lists(
    st.tuples(st.sampled_from(["i", "f", "s"]), st.sampled_from(["<", "<=", ">", ">=", "==", "!="])),
    max_size=2), st.booleans(), st.sampled_from([1, 9, 64, csv_arrow.CHUNK_BYTES]))
def test_arrow_gives_what_pandas_gives_or_nothing(frame, sep, ops, project, chunk):
    data = frame.to_csv(index=False, sep=sep).encode()
    try:
        meta = pd.read_csv(io.BytesIO(data), sep=sep, dtype={"i": "int64", "f": "float64", "s": "str"}).iloc[:0]
    except ValueError:  # pandas misreads its own file (a lone \r in a quoted field): nothing to compare
        assume(False)
    dtypes = dict(meta.dtypes)
    kwargs = {"sep": sep}
    columns = list(meta.columns)
    if project and len(columns) > 1:
        kwargs["usecols"] = used = [c for c in (["s", "f"] if ops else ["f", "s"]) if c in columns] or columns[:1]
        columns = [c for c in meta.columns if c in used]
    pivot = {"i": 0, "f": 0.5, "s": "b"}
    filters = tuple((c, op, pivot[c]) for c, op in ops if c in columns)
    default, csv_arrow.CHUNK_BYTES = csv_arrow.CHUNK_BYTES, chunk  # lines parsed in pieces of `chunk` bytes
    try:
        got = read_arrow(io.BytesIO(data), kwargs, {c: dtypes[c] for c in columns}, columns, filters)
    finally:
        csv_arrow.CHUNK_BYTES = default
    newlines = "s" in frame and any(ch in w for w in frame.s for ch in "\n\r")
    plain = len(frame) and len(frame.columns) > 1 and not newlines
    if got is None:
        assert not plain, "a CSV pandas wrote, of rows, columns and no newlines in a field, went to pandas"
        return
    want = _pandas(data, {c: dtypes[c] for c in columns}, filters, **kwargs)
    if want is None:
        assert len(got) == 0
        return
    if not filters:
        want = want.reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want, check_index_type=False)


def test_filters_keep_row_numbers_and_missing_values_pass_not_equal():
    data = b"a,s\n1,x\n2,\n3,y\n4,NA\n"
    meta = pd.read_csv(io.BytesIO(data)).iloc[:0]
    got = read_arrow(io.BytesIO(data), {}, dict(meta.dtypes), ["a", "s"], (("s", "!=", "x"),))
    assert got.index.tolist() == [1, 2, 3] and got.a.tolist() == [2, 3, 4]
    assert math.isnan(got.s[1]) and got.s[2] == "y"
    got = read_arrow(io.BytesIO(data), {}, dict(meta.dtypes), ["a", "s"], (("s", "<", "z"), ("a", ">", 1)))
    assert got.index.tolist() == [2] and got.s.tolist() == ["y"]


@pytest.mark.parametrize("data, kwargs, dtypes", [
    (b"a,b\n+5,1.0\n", {}, {"a": "int64", "b": "float64"}),        # pandas reads "+5" its own way
    (b"a,b\n1.0,1.0\n", {}, {"a": "int64", "b": "float64"}),       # an integer written as a float
    (b"a,b\n,1.0\n", {}, {"a": "int64", "b": "float64"}),          # a missing integer: pandas' error
    (b"a,b,c\n1,2,3\n", {}, {"a": "int64", "b": "int64"}),         # a column meta does not know
    (b"b,a\n1,2\n", {}, {"a": "int64", "b": "int64"}),             # another order than meta's
    (b"a,b\n1,2,3\n", {}, {"a": "int64", "b": "int64"}),           # a row of the wrong width
    (b"a,b\nTrue,1\n", {}, {"a": "bool", "b": "int64"}),           # booleans: pandas' spellings
    (b"a,b\n1,2\n", {"thousands": ","}, {"a": "int64", "b": "int64"}),  # a keyword pyarrow lacks
    (b"a b\n1 2\n", {"sep": r"\s+"}, {"a": "int64", "b": "int64"}),     # a regular expression
    (b"a,b\n1,2.5\n", {}, {"a": "int64", "b": "float32"}),         # float32: rounding could differ
    (b"s\nx\n  \ny\n", {}, {"s": "object"}),                         # one column: pandas skips "  " as blank
    (b'i;f;s\n0;0.0;"\n;;,"\n', {"sep": ";", "usecols": ["f", "s"]},  # a line break inside quotes, which
     {"f": "float64", "s": "object"}),                               # pyarrow would read as two rows
    (b"a,b\rx,1\ry,2\r", {}, {"a": "object", "b": "int64"}),          # lines ended by a lone \r
    (b"a,b\n\xef\xbb\xbfx,1\n", {}, {"a": "object", "b": "int64"}),   # a byte-order mark starting a value
])
def test_what_pyarrow_does_not_read_as_pandas_goes_to_pandas(data, kwargs, dtypes):
    dtypes = {k: np.dtype(v) for k, v in dtypes.items()}
    assert read_arrow(io.BytesIO(data), kwargs, dtypes, list(dtypes)) is None


def test_read_csv_takes_the_arrow_path_and_falls_back_per_partition(tmp_path, monkeypatch):
    (tmp_path / "0.csv").write_text("n,v,s\n1,0.5,a\n2,1.5,b\n")
    (tmp_path / "1.csv").write_text("n,v,s\n+3,2.5,c\n4,NA,d\n")  # "+3": pandas' turn
    answers = []

    def spy(*args, **kwargs):
        out = read_arrow(*args, **kwargs)
        answers.append(out is not None)
        return out

    monkeypatch.setattr(csv_mod, "read_arrow", spy)
    monkeypatch.setattr(csv_mod, "_PANDAS_FIRST", False)  # (pandas 2: pandas 3 parses filtered ones first)
    df = read_csv(str(tmp_path / "*.csv"))
    got = df.compute()
    want = pd.concat([pd.read_csv(tmp_path / f"{i}.csv") for i in range(2)])
    pd.testing.assert_frame_equal(got, want)
    assert sorted(answers) == [False, True]
    answers.clear()
    kept = df[df.v > 1][["s"]].compute()  # the planner pushes usecols and the filter into the read
    assert kept.s.tolist() == ["b", "c"] and kept.index.tolist() == [1, 0]
    assert answers == [True, True]  # column n, which pandas had to read, is not read at all


@st.composite
def csv_texts(draw):
    """A header and rows of its width, fields drawn from characters CSV parsers disagree on
    (quotes, carriage returns, tabs, a byte-order mark, line breaks and commas inside fields)."""
    header = draw(st.sampled_from(["a,b", "a,b,c", '"a",b']))
    width = header.count(",") + 1
    field = st.text(alphabet=st.sampled_from(list("aa11 .-+eNA") + ['"', "\r", "\t", "\ufeff", "\n", ","]),
                    max_size=5)
    rows = draw(st.lists(st.lists(field, min_size=width, max_size=width), max_size=6))
    end = draw(st.sampled_from(["\n", "\r\n"]))
    return header + end + "".join(",".join(row) + end for row in rows)[:draw(st.integers(0, 200))]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(csv_texts(), st.sampled_from([1, 7, csv_arrow.CHUNK_BYTES]))
def test_arrow_on_any_text_gives_what_pandas_gives_or_nothing(text, chunk):
    """Not only files pandas wrote: any text under a header, with the dtypes pandas infers
    from it (pandas' own reading of the whole text is the answer)."""
    data = text.encode()
    try:
        want = pd.read_csv(io.BytesIO(data))
    except (ValueError, pd.errors.ParserError):
        assume(False)
    meta = want.iloc[:0]
    default, csv_arrow.CHUNK_BYTES = csv_arrow.CHUNK_BYTES, chunk
    try:
        got = read_arrow(io.BytesIO(data), {}, dict(meta.dtypes), list(meta.columns))
    finally:
        csv_arrow.CHUNK_BYTES = default
    event("pyarrow" if got is not None else "pandas")
    if got is not None:
        pd.testing.assert_frame_equal(got, want.reset_index(drop=True) if len(want) else got.iloc[:0],
                                      check_index_type=False)
