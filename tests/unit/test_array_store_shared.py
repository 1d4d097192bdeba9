"""``store`` computing blocks in batches computes what several batches need once (a mean
every block subtracts, the neighbours an overlap reads, an input of several sources),
counted by the calls of a block function; the values written stay NumPy's."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import xsched.array as xa
from xsched.graph.optimize import shared_frontier
from xsched.graph.spec import Ref, Task

store_module = importlib.import_module("xsched.array.store")  # (xsched.array.store is the function)
DATA = np.arange(640.0).reshape(64, 10)


def counted():
    calls = []

    def f(block):
        calls.append(block.shape)
        return block

    return xa.from_array(DATA, chunks=(4, 10)).map_blocks(f), calls


def test_a_mean_every_batch_subtracts_is_computed_once():
    x, calls = counted()  # 16 blocks
    out = np.zeros_like(DATA)
    xa.store(x - x.mean(), out, batch_size=2)
    np.testing.assert_allclose(out, DATA - DATA.mean())
    # the mean reads each block once, the batches each theirs once (and one call for the
    # block function's output type); batch by batch it was 8 x (16 + 2)
    assert len(calls) <= 2 * 16 + 1


def test_overlap_neighbours_and_an_input_of_several_sources_are_read_once():
    x, calls = counted()
    out = np.zeros_like(DATA)
    xa.store(x.map_overlap(lambda b: b, depth=(1, 0), boundary="none"), out, batch_size=2)
    np.testing.assert_array_equal(out, DATA)
    assert len(calls) <= 16 + 1
    x, calls = counted()
    outs = [np.zeros_like(DATA) for _ in range(3)]
    xa.store([x + 1, x * 2, x - x.sum()], outs)
    np.testing.assert_allclose(outs[2], DATA - DATA.sum())
    assert outs[0][0, 0] == 1 and outs[1][1, 0] == 20
    assert len(calls) <= 2 * 16 + 1  # (the sum's reads, then each block once for all three)


def test_shared_values_past_the_budget_are_computed_per_batch(monkeypatch):
    monkeypatch.setattr(store_module, "SHARED_BYTES", 0)
    x, calls = counted()
    out = np.zeros_like(DATA)
    xa.store(x - x.mean(), out, batch_size=8)
    np.testing.assert_allclose(out, DATA - DATA.mean())
    assert len(calls) > 2 * 16 + 1  # (each batch read every block for its own mean)


@pytest.mark.parametrize("n_groups", [1, 2, 3])
def test_the_frontier_leaves_no_task_needed_by_two_groups(n_groups):
    """A chain of tasks all groups need, fanning out: only its end is the frontier."""
    g = {"a": Task(int, ("1",)), "b": Task(abs, (Ref("a"),)), "c": Task(abs, (Ref("b"),))}
    groups = []
    for i in range(n_groups):
        g[f"out{i}"] = Task(max, (Ref("c"), i))
        groups.append([f"out{i}"])
    assert shared_frontier(g, groups) == (["c"] if n_groups > 1 else [])


def test_a_source_of_unknown_block_lengths_names_compute_chunk_sizes():
    x = xa.from_array(DATA.ravel(), chunks=100)
    masked = x[x > 300]
    with pytest.raises(ValueError, match=r"store \(source 0\) needs the lengths .*compute_chunk_sizes\(\)"):
        xa.store(masked, np.zeros(339))
    out = np.zeros(339)
    xa.store(masked.compute_chunk_sizes(), out)
    assert out.tolist() == [float(v) for v in range(301, 640)]
