"""repartition by divisions, freq and partition_size, and memory_usage_per_partition: the
rows stay as pandas has them, in order; each new partition holds what its divisions say."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xsched.dataframe as xd
from xsched.graph.repartition import plan_by_size


def _parts(frame) -> list:
    return [frame.partitions[i].compute() for i in range(frame.npartitions)]


def _check_divisions(frame) -> None:
    """Every partition's index lies within its divisions (the last one closed)."""
    parts = _parts(frame)
    d = frame.divisions
    for j, part in enumerate(parts):
        if len(part):
            assert part.index.min() >= d[j]
            assert part.index.max() <= d[j + 1] if j == len(parts) - 1 else part.index.max() < d[j + 1]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 30), min_size=1, max_size=40), st.integers(1, 5),
       st.lists(st.integers(0, 30), max_size=6))
def test_divisions_keep_every_row_where_its_index_says(values, nparts, inner):
    pdf = pd.DataFrame({"v": range(len(values))}, index=sorted(values))
    df = xd.from_pandas(pdf, npartitions=nparts, sort=True)
    lo, hi = df.divisions[0], df.divisions[-1]
    cuts = sorted({c for c in inner if lo < c < hi})
    out = df.repartition(divisions=[lo, *cuts, hi])
    assert out.divisions == (lo, *cuts, hi)
    pd.testing.assert_frame_equal(out.compute(), pdf)
    _check_divisions(out)


def test_divisions_by_position_and_on_a_series():
    s = pd.Series(np.arange(10.0), index=range(0, 20, 2))
    out = xd.from_pandas(s, npartitions=3).repartition([0, 5, 10, 18])
    assert out.npartitions == 3
    assert [len(p) for p in _parts(out)] == [3, 2, 5]
    pd.testing.assert_series_equal(out.compute(), s)
    assert xd.from_pandas(s, npartitions=3).repartition(2).npartitions == 2  # (an int: a count)
    assert xd.repartition(xd.from_pandas(s, npartitions=3), [0, 18]).npartitions == 1


def test_force_reaches_beyond_the_old_ends_and_never_inside():
    pdf = pd.DataFrame({"a": range(6)}, index=range(10, 16))
    df = xd.from_pandas(pdf, npartitions=2)
    out = df.repartition(divisions=[0, 10, 13, 100], force=True)
    assert [len(p) for p in _parts(out)] == [0, 3, 3]
    pd.testing.assert_frame_equal(out.compute(), pdf)
    with pytest.raises(ValueError, match=r"start and end where the old ones do \(10 and 15\).*force=True"):
        df.repartition(divisions=[0, 13, 15])
    with pytest.raises(ValueError, match="not inside them, which would drop rows"):
        df.repartition(divisions=[11, 13, 15], force=True)
    with pytest.raises(ValueError, match="sorted and unique"):
        df.repartition(divisions=[10, 14, 12, 15])


def test_errors_name_what_to_do():
    df = xd.from_pandas(pd.DataFrame({"a": range(4)}), npartitions=2).clear_divisions()
    with pytest.raises(ValueError, match=r"divisions are unknown.*set_index"):
        df.repartition(divisions=[0, 3])
    with pytest.raises(ValueError, match="one of divisions=, npartitions=, partition_size= or freq=, got none"):
        df.repartition()
    with pytest.raises(ValueError, match="got npartitions and freq"):
        df.repartition(npartitions=2, freq="1D")
    with pytest.raises(TypeError, match=r"repartition\(freq=.1D.\) needs a DatetimeIndex"):
        xd.from_pandas(pd.DataFrame({"a": range(4)}), npartitions=2).repartition(freq="1D")
    with pytest.raises(ValueError, match="Cannot parse 'big'"):
        df.repartition(partition_size="big")


@pytest.mark.parametrize("freq", ["1D", "6h", "MS", "W"])
def test_freq_cuts_at_each_step_and_keeps_the_ends(freq):
    index = pd.date_range("2024-01-01 05:30", periods=60, freq="7h")
    pdf = pd.DataFrame({"v": range(60)}, index=index)
    out = xd.from_pandas(pdf, npartitions=4).repartition(freq=freq)
    d = out.divisions
    assert d[0] == index[0] and d[-1] == index[-1]
    inner = pd.DatetimeIndex(d[1:-1])
    step = pd.tseries.frequencies.to_offset(freq)
    assert all(step.is_on_offset(t) for t in inner)
    assert len(inner) == len([t for t in pd.date_range(index[0].floor("D"), index[-1], freq=step)
                              if index[0] < t <= index[-1]])
    pd.testing.assert_frame_equal(out.compute(), pdf)
    _check_divisions(out)


def test_freq_in_a_time_zone_and_date_strings_as_divisions():
    index = pd.date_range("2024-03-30", periods=48, freq="2h", tz="Europe/Paris")
    pdf = pd.DataFrame({"v": range(48)}, index=index)
    df = xd.from_pandas(pdf, npartitions=3)
    pd.testing.assert_frame_equal(df.repartition(freq="1D").compute(), pdf)
    out = df.repartition(divisions=[index[0], "2024-03-31", index[-1]])
    assert out.divisions[1] == pd.Timestamp("2024-03-31", tz="Europe/Paris")
    assert len(out.partitions[0]) == 12


def test_partition_size_cuts_big_and_joins_small_partitions():
    pdf = pd.DataFrame({"x": np.arange(4000.0)})
    df = xd.from_pandas(pdf, npartitions=8)  # 500 rows, 4,000 bytes of values each
    per = df.memory_usage_per_partition(deep=True).compute().tolist()
    assert per == [int(p.memory_usage(deep=True).sum()) for p in _parts(df)]
    bigger = df.repartition(partition_size="10kB")
    assert bigger.npartitions < 8 and bigger.known_divisions
    smaller = df.repartition(partition_size=1500)
    assert smaller.npartitions > 8 and not smaller.known_divisions
    for out, limit in ((bigger, 10_000), (smaller, 1500)):
        pd.testing.assert_frame_equal(out.compute(), pdf)
        assert out.memory_usage_per_partition(deep=True).compute().max() <= limit


def test_plan_by_size_never_exceeds_the_size_unless_one_row_does():
    plan, cut = plan_by_size([10, 10, 45, 5], 20)
    assert cut and [sum(45 / 3 if i == 2 else [10, 10, 45, 5][i] for i, _, _ in items) for items in plan] \
        == [20, 15, 15, 20]
    assert plan_by_size([3, 4], 100) == ([[(0, 0, 1), (1, 0, 1)]], False)


def test_enforce_runtime_divisions_names_the_partition_that_strays():
    df = xd.from_pandas(pd.DataFrame({"a": range(9)}), npartitions=3)
    checked = df.enforce_runtime_divisions()
    assert checked.divisions == df.divisions and checked.compute().a.tolist() == list(range(9))
    assert df.a.enforce_runtime_divisions().sum().compute() == 36
    moved = df.map_partitions(lambda p: p.set_axis(p.index + 2), meta=df._meta)
    moved.divisions = df.divisions  # (claims the old bounds: labels 2-4 in [0, 3))
    with pytest.raises(ValueError, match=r"partition 0 has labels \[3, 4\] outside its divisions \[0, 3\)"):
        moved.enforce_runtime_divisions().compute()
    with pytest.raises(ValueError, match="divisions are unknown"):
        df.clear_divisions().enforce_runtime_divisions()
