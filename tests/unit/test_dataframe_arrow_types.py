"""Frames with pyarrow types pandas cannot make from numbers or words (durations, lists,
structs, maps) build expressions: their stand-ins once made every operation fail, whatever
column it touched ("unit must not be specified if the input contains a str")."""

from __future__ import annotations

import pandas as pd
import pytest

import xsched.dataframe as xd

pa = pytest.importorskip("pyarrow")


@pytest.fixture
def pdf():
    start = pd.Series(pd.date_range("2024-01-01", periods=6, freq="h")).astype("timestamp[ns][pyarrow]")
    return pd.DataFrame({
        "k": list("abcabc"),
        "n": [1, 2, 3, 4, 5, 6],
        "start": start,
        "end": start + pd.Series(pd.to_timedelta([1, 2, 3, 4, 5, 6], unit="min")).astype("duration[ns][pyarrow]"),
        "tags": pd.Series([[1], [2, 3], [], [4], [5], [6]], dtype=pd.ArrowDtype(pa.list_(pa.int64()))),
        "point": pd.Series([{"x": i} for i in range(6)], dtype=pd.ArrowDtype(pa.struct([("x", pa.int64())]))),
    })


@pytest.mark.parametrize("nparts", [1, 3])
def test_frames_with_durations_lists_and_structs_compute_as_pandas(pdf, nparts):
    df = xd.from_pandas(pdf, npartitions=nparts)
    assert df.n.sum().compute() == 21
    with_dur = df.assign(dur=df.end - df.start)
    expected = pdf.assign(dur=pdf.end - pdf.start)
    assert with_dur._meta.dtypes.to_dict() == expected.dtypes.to_dict()
    pd.testing.assert_frame_equal(with_dur.compute(), expected)
    pd.testing.assert_series_equal(with_dur.groupby("k").n.sum().compute().sort_index(), expected.groupby("k").n.sum())
    assert with_dur.dur.max().compute() == pd.Timedelta(minutes=6)
    pd.testing.assert_frame_equal(df[df.n > 2].compute(), pdf[pdf.n > 2])
