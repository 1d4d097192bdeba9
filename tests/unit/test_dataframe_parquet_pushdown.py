"""A comparison filter pushed into read_parquet keeps exactly the rows, values and index labels
that filtering the partitions read whole keeps (property test): missing values, stored
indexes of every kind, row groups, the reader's own ``filters=`` before it, and reads a
few rows at a time."""

import operator
import os
import tempfile

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyarrow")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

import xsched.dataframe as xd  # noqa: E402
from xsched.dataframe import parquet as P  # noqa: E402

OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
       "!=": operator.ne}
WORDS = ["a", "b", "c", None]


@st.composite
def cases(draw):
    n = draw(st.integers(0, 40))
    floats = draw(st.lists(st.sampled_from([0.0, 1.0, -1.0, 2.5, np.nan, None]), min_size=n, max_size=n))
    pdf = pd.DataFrame({
        "f": pd.array(floats, dtype="float64"),
        "i": np.asarray(draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n)), dtype="int64"),
        "s": pd.array(draw(st.lists(st.sampled_from(WORDS), min_size=n, max_size=n)), dtype="str"),
    })
    index = draw(st.sampled_from(["range", "stored", "none"]))
    if index == "range":
        start = draw(st.integers(-5, 5))
        pdf.index = pd.RangeIndex(start, start + 2 * n, 2)
    elif index == "stored":
        pdf.index = pd.Index(np.arange(n)[::-1] * 10, name="k")
    files = draw(st.integers(1, 3))
    rows_per_group = draw(st.integers(1, 12))
    col = draw(st.sampled_from(["f", "i", "s"]))
    value = draw(st.sampled_from(["a", "b"])) if col == "s" else draw(st.sampled_from([0, 1, 0.5, -1]))
    op = draw(st.sampled_from(sorted(OPS)))
    user_filter = draw(st.sampled_from([None, [("i", ">=", 0)], [("i", "!=", 1)]]))
    read_index = draw(st.sampled_from([None, False]))
    split = draw(st.booleans())
    batch = draw(st.sampled_from([1, 3, 65_536]))
    return pdf, index, files, rows_per_group, (col, op, value), user_filter, read_index, split, batch


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_a_pushed_comparison_keeps_what_filtering_the_whole_read_keeps(case):
    pdf, index, files, rows_per_group, (col, op, value), user_filter, read_index, split, batch = case
    before = P.PUSHED_BATCH_ROWS
    P.PUSHED_BATCH_ROWS = batch
    try:
        with tempfile.TemporaryDirectory() as d:
            bounds = np.linspace(0, len(pdf), files + 1).astype(int)
            for k in range(files):
                pdf.iloc[bounds[k]:bounds[k + 1]].to_parquet(os.path.join(d, f"part.{k}.parquet"),
                                                             index={"range": None, "stored": True, "none": False}[index],
                                                             row_group_size=rows_per_group)
            df = xd.read_parquet(d, filters=user_filter, index=read_index, split_row_groups=split)
            whole = df.compute(scheduler="sync")  # read whole (nothing pushed: it is the output)
            expr = df[OPS[op](df[col], value)]
            pushed = [t for t in _reads(expr) if t.kwargs.get("pushed")]
            assert pushed or not _reads(expr)
            got = expr.compute(scheduler="sync")
            expected = whole[OPS[op](whole[col], value)]
            pd.testing.assert_frame_equal(got, expected)
            # a step after the filter reads the same rows (the filter itself is gone from the plan)
            total = expr.groupby("s").i.sum().compute(scheduler="sync")
            pd.testing.assert_series_equal(total, expected.groupby("s").i.sum())
    finally:
        P.PUSHED_BATCH_ROWS = before


def _reads(coll):
    from xsched.dataframe.planner import Fused

    out = []
    for t in coll.__xsched_graph__().values():
        inner = t.args[0].tasks.values() if t.args and isinstance(t.args[0], Fused) else [t]
        out += [x for x in inner if getattr(x, "func", None) is P._read_piece]
    return out
