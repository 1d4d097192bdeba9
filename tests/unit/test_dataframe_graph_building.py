"""Graph building of many partitions: the cyclic collector stays paused while tasks are made
and planned (a full collection scans every live task), and is left as it was found."""

import gc

import numpy as np
import pandas as pd
import pytest

import xsched.dataframe as xd
from xsched.dataframe import planner


@pytest.fixture
def eager_collector():
    """Collections after every allocation, counted: what a pause must hold off."""
    thresholds, seen = gc.get_threshold(), []

    def count(phase, info):
        if phase == "start":
            seen.append(info["generation"])

    gc.set_threshold(1, 1, 1)
    gc.callbacks.append(count)
    try:
        yield seen
    finally:
        gc.callbacks.remove(count)
        gc.set_threshold(*thresholds)


def _pipeline(n=400):
    df = xd.from_pandas(pd.DataFrame({"k": np.arange(2 * n) % 3, "x": np.arange(2.0 * n)}), npartitions=n)
    return df[df.x > 1].assign(y=lambda d: d.x * 2).y.sum()


def test_no_collection_while_steps_are_fused(eager_collector, monkeypatch):
    out = _pipeline()
    fuse, during = planner.fuse_blockwise, []

    def watched(*args):
        before = len(eager_collector)
        planned = fuse(*args)
        during.append((len(eager_collector) - before, len(planned.layers)))
        return planned

    monkeypatch.setattr(planner, "fuse_blockwise", watched)
    planner.plan(out._graph, out.__xsched_keys__())
    assert len(during) == 1 and during[0][0] == 0 and during[0][1] < len(out._graph.layers)


def test_the_collector_is_left_as_found():
    assert gc.isenabled()
    assert float(_pipeline(20).compute(scheduler="sync")) == float(sum(2 * x for x in range(2, 40)))
    assert gc.isenabled()
    gc.disable()
    try:
        _pipeline(20).__xsched_graph__()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_fused_steps_release_as_without_the_dependencies_given():
    out = _pipeline(4)
    graph = out._graph
    deps: dict = {}
    planner._consumers(graph, planner._owners(graph), deps)
    fused = [t.args[0] for layer in planner.fuse_blockwise(graph, out.__xsched_keys__()).layers.values()
             for t in layer.values() if getattr(t, "func", None) is planner.run_fused]
    assert fused
    for f in fused:
        assert planner.Fused(f.tasks, f.out).release == planner.Fused(f.tasks, f.out, deps).release == f.release
