"""Collections whose known divisions differ meet by label as pandas aligns them: both are
repartitioned to the union of their divisions first (``core.unify_divisions``), for
arithmetic, ``assign``, ``where``, ``concat(axis=1)`` and ``combine_first``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pandas.testing as tm
import pytest
from hypothesis import given, settings, strategies as st

import xsched.dataframe as xd
from xsched.dataframe.core import unify_divisions


def _frame(labels, column: str, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({column: rng.normal(size=len(labels))}, index=pd.Index(sorted(labels), dtype="int64"))


labels = st.sets(st.integers(0, 60), min_size=1, max_size=25)


@settings(max_examples=40, deadline=None)
@given(labels, labels, st.integers(1, 4), st.integers(1, 4))
def test_two_frames_of_other_divisions_meet_as_pandas_aligns_them(left, right, n, m):
    a, b = _frame(left, "x", 1), _frame(right, "y", 2)
    da, db = xd.from_pandas(a, npartitions=n), xd.from_pandas(b, npartitions=m)
    pd.testing.assert_series_equal((da.x + db.y).compute().sort_index(), (a.x + b.y).sort_index())
    pd.testing.assert_frame_equal(da.assign(z=db.y * 2).compute().sort_index(), a.assign(z=b.y * 2).sort_index())
    pd.testing.assert_series_equal(da.x.where(db.y > 0).compute().sort_index(), a.x.where(b.y > 0).sort_index())
    for join in ("outer", "inner"):
        got = xd.concat([da, db], axis=1, join=join).compute().sort_index()
        pd.testing.assert_frame_equal(got, pd.concat([a, b], axis=1, join=join).sort_index())
    pd.testing.assert_series_equal(da.x.combine_first(db.y).compute().sort_index(),
                                   a.x.combine_first(b.y).sort_index())


def test_unified_divisions_are_the_union_and_equal_ones_stay():
    a = xd.from_pandas(_frame(range(10), "x", 0), npartitions=2)
    b = xd.from_pandas(_frame(range(5, 20), "y", 0), npartitions=3)
    ua, ub = unify_divisions(a, b)
    assert ua.divisions == ub.divisions == tuple(sorted(set(a.divisions) | set(b.divisions)))
    assert unify_divisions(a, a.x)[0] is a  # (equal divisions: nothing to do)
    assert unify_divisions(a, b.clear_divisions())[0] is a  # (unknown divisions: left to the caller's check)


def test_times_unify_and_unknown_divisions_still_refuse():
    t = pd.date_range("2026-01-01", periods=48, freq="h")
    a = pd.DataFrame({"x": np.arange(48.0)}, index=t)
    b = pd.DataFrame({"y": np.arange(30.0)}, index=t[10:40])
    da, db = xd.from_pandas(a, npartitions=3), xd.from_pandas(b, npartitions=4)
    pd.testing.assert_series_equal((da.x - db.y).compute(), a.x - b.y)
    with pytest.raises(ValueError, match="3 and 4 partitions"):
        da.clear_divisions().x + db.y


@pytest.mark.parametrize("how", ["left", "inner", "outer", "right"])
def test_joining_indexes_of_other_known_divisions_keeps_order_and_divisions(how):
    """Known but different divisions went through a hash shuffle: rows out of order, the
    divisions lost (a resample after refused). Each side is now cut at the union first."""
    a = pd.DataFrame({"x": np.arange(12.0)}, index=pd.date_range("2024-01-01", periods=12, freq="h", name="ts"))
    b = pd.DataFrame({"z": np.arange(10)}, index=pd.date_range("2024-01-01 03:00", periods=10, freq="h", name="ts"))
    left, right = xd.from_pandas(a, npartitions=3), xd.from_pandas(b, npartitions=2)
    for joined, expected in ((left.join(right, how=how), a.join(b, how=how)),
                             (xd.merge(left, right, how=how, left_index=True, right_index=True),
                              pd.merge(a, b, how=how, left_index=True, right_index=True))):
        assert joined.known_divisions
        pd.testing.assert_frame_equal(joined.compute(), expected, check_freq=False)
    assert len(left.join(right, how=how).resample("2h").x.sum().compute())  # (it refused: divisions unknown)


def test_labels_moved_by_a_calendar_step_do_not_pair_with_the_frame():
    """shift(freq="B") moves labels across partition bounds and leaves the divisions unknown:
    paired partition by partition with the frame, a Friday's value shifted to Monday met the
    wrong row (pandas aligns by label). Refused, naming sort_index; after it, as pandas."""
    pdf = pd.DataFrame({"v": np.arange(10.0)}, index=pd.bdate_range("2024-01-01", periods=10))
    df = xd.from_pandas(pdf, npartitions=2)
    moved = df.v.shift(1, freq="B")
    for build in (lambda: df.assign(prev=moved), lambda: df.v - moved, lambda: df[moved > 3],
                  lambda: df.v - moved.rename("p") * 2):
        with pytest.raises(ValueError, match="moved by a calendar step .* sort_index"):
            build()
    assert (moved + 1).compute().tolist() == (pdf.v.shift(1, freq="B") + 1).tolist()  # (alone: as pandas)
    tm.assert_series_equal((df.v - moved.sort_index()).compute(), pdf.v - pdf.v.shift(1, freq="B"), check_freq=False)
