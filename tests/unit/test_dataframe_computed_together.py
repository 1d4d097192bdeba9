"""Dataframe collections computed together (``xsched.compute(a, b)``, ``client.compute([a, b])``,
``persist``) are planned as one graph: a file read by several of them is read once, and their
reductions of the same partitions share one tree; other collections computed beside them
keep their own graphs."""

import numpy as np
import pandas as pd
import pytest

import xsched
import xsched.array as xa
import xsched.dataframe as xd
from xsched.graph.layers import collections_graph


@pytest.fixture
def files(tmp_path):
    pdf = pd.DataFrame({"x": np.arange(400.0), "y": np.arange(400) % 7, "s": ["a", "b"] * 200})
    for i in range(4):
        pdf.iloc[i * 100:(i + 1) * 100].to_parquet(tmp_path / f"p{i}.parquet")
    return str(tmp_path / "*.parquet"), pdf


def _reads(graph):
    """Tasks of the graph that read a file (a read step fused into them, or a read alone)."""
    from xsched.dataframe.planner import Fused

    out = 0
    for task in graph.values():
        fused = next((a for a in getattr(task, "args", ()) if isinstance(a, Fused)), None)
        keys = fused.tasks if fused is not None else []
        out += any(k.startswith("read-parquet") for k in keys)
    return out + sum(k.startswith("read-parquet") for k in graph)


def test_reductions_computed_together_read_each_file_once(files):
    path, pdf = files
    df = xd.read_parquet(path)
    a, b, c = df.x.sum(), df.y.mean(), df[df.x > 100].x.max()
    separately = {}
    for coll in (a, b, c):
        separately.update(coll.__xsched_graph__())
    assert _reads(separately) == 12
    assert _reads(collections_graph([a, b, c])) == 4
    got = xsched.compute(a, b, c, scheduler="sync")
    assert got == (pdf.x.sum(), pdf.y.mean(), pdf.x[pdf.x > 100].max())


def test_collections_of_other_kinds_beside_them_keep_their_graphs(files):
    path, pdf = files
    df = xd.read_parquet(path)
    arr = xa.arange(10, chunks=5)
    late = xsched.delayed(len)("abc")
    got = xsched.compute(df.x.sum(), arr.sum(), late, df.s, scheduler="sync")
    assert got[:3] == (pdf.x.sum(), 45, 3)
    pd.testing.assert_series_equal(got[3], pdf.s)


def test_persisted_together_they_keep_every_output(files):
    path, pdf = files
    df = xd.read_parquet(path)
    kept, total = xsched.persist(df[df.y > 2], df.x.sum(), scheduler="sync")
    pd.testing.assert_frame_equal(kept.compute(), pdf[pdf.y > 2])
    assert total.compute() == pdf.x.sum()


def test_reductions_of_a_filter_pushed_into_the_read_still_share_a_tree(files):
    path, pdf = files
    df = xd.read_parquet(path)
    kept = df[df.x > 100]  # (the filter goes into the read: the reductions then read the reader)
    a, b = kept.sum(numeric_only=True), kept.count()
    graph = collections_graph([a, b])
    assert sum(k.startswith("joint-chunk-") for k in graph) == 4
    assert not [k for k in graph if k.startswith(("sum-chunk-", "count-chunk-"))]
    got_a, got_b = xsched.compute(a, b, scheduler="sync")
    want = pdf[pdf.x > 100]
    pd.testing.assert_series_equal(got_a, want.sum(numeric_only=True))
    pd.testing.assert_series_equal(got_b, want.count())
