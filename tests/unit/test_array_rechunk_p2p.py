"""The p2p rechunk's graph without a cluster: each input block's split and each output
block's combine, run here by hand as the exchange would (pieces grouped by output, in input
order), give NumPy's array for any two chunkings; the graph has n + 1 + m tasks, and
``method="auto"`` chooses the exchange only where the task route would hold too much at
once. On workers: tests/cluster/test_array_api_cluster.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xsched.array as xa
from xsched import config
from xsched.array.rechunking import together_bytes, use_p2p
from xsched.graph.p2p import barrier, transfer, unpack
from xsched.graph.spec import Ref


def _chunks(draw, n):
    sizes, left = [], n
    while left > 0:
        s = draw(st.integers(1, max(left, 1)))
        sizes.append(s)
        left -= s
    return tuple(sizes) or (0,)


@st.composite
def two_chunkings(draw):
    shape = tuple(draw(st.lists(st.integers(0, 9), min_size=1, max_size=3)))
    return shape, tuple(_chunks(draw, n) for n in shape), tuple(_chunks(draw, n) for n in shape)


def exchange(y, blocks_in: dict) -> dict:
    """Run y's p2p layers by hand: every transfer's split, pieces grouped per output in
    input order, every output's combine. {output key: block}."""
    layers = y._graph.layers
    transfers = next(tasks for name, tasks in layers.items() if name.startswith("shuffle-transfer-"))
    outputs = layers[y.name]
    received: dict[int, list] = {}
    for tkey in sorted(transfers, key=lambda k: int(k.rsplit("-", 1)[1])):
        task = transfers[tkey]
        assert task.func is transfer
        ref, _sid, _i, _n_in, n_out, _out, split, _grid = task.args
        pieces = split(blocks_in[ref.key], n_out)
        for j in sorted(pieces):
            received.setdefault(j, []).append(pieces[j])
    done = {}
    for key, task in outputs.items():
        assert task.func is unpack
        bref, _sid, j, n_pieces, combine = task.args
        assert isinstance(bref, Ref) and len(received.get(j, [])) == n_pieces
        done[key] = combine(received[j])
    return done


@settings(max_examples=150, deadline=None)
@given(two_chunkings())
def test_any_chunking_to_any_other_is_exact(case):
    shape, old, new = case
    a = np.arange(math.prod(shape), dtype="i8").reshape(shape)
    x = xa.from_array(a, chunks=old)
    y = x.rechunk(new, method="p2p")
    if y is x:  # (the same chunking: nothing to do)
        return
    assert y.chunks == new
    blocks_in = dict(zip(_keys(x), _blocks(a, old)))
    blocks_out = exchange(y, blocks_in)
    assert sorted(blocks_out) == sorted(_keys(y))
    for key, want in zip(_keys(y), _blocks(a, new)):
        np.testing.assert_array_equal(blocks_out[key], want)
    n_in, n_out = math.prod(map(len, old)), math.prod(map(len, new))
    assert len(y._graph.layers[y.name]) == n_out
    assert sum(len(t) for name, t in y._graph.layers.items() if name.startswith("shuffle-")) == n_in + 1


def _keys(x):
    from xsched.graph.layers import chunk_key
    return [chunk_key(x.name, i) for i in np.ndindex(*map(len, x.chunks))]


def _blocks(a, chunks):
    starts = [np.cumsum((0,) + c) for c in chunks]
    for index in np.ndindex(*map(len, chunks)):
        yield a[tuple(slice(s[i], s[i + 1]) for s, i in zip(starts, index))]


def test_the_output_keys_are_the_array_blocks_and_the_barrier_carries_the_grid():
    x = xa.from_array(np.zeros((6, 6)), chunks=(1, 6))
    y = x.rechunk((6, 2), method="p2p")
    assert sorted(y._graph.layers[y.name]) == [f"{y.name}-0.{j}" for j in range(3)]
    (btask,) = next(t for n, t in y._graph.layers.items() if n.startswith("shuffle-barrier-")).values()
    assert btask.func is barrier and btask.kwargs == {"grid": (1, 3)}
    assert all(t.annotations.get("shuffle") for t in y._graph.layers[y.name].values())


def test_auto_exchanges_only_what_the_task_route_would_hold_at_once():
    rows, cols = ((1000,) * 8, (8000,)), ((8000,), (1000,) * 8)
    limit = 256 * 2**20
    # rows to columns: every block needs every other, 512 MB at once
    assert together_bytes(rows, cols, 8) == 8000 * 8000 * 8
    # (1000, 1000) to column strips: one column of blocks at a time, 64 MB
    squares, strips = ((1000,) * 8, (1000,) * 8), ((8000,), (125,) * 64)
    assert together_bytes(squares, strips, 8) == 8000 * 1000 * 8
    with config.set({"array.rechunk.method": "p2p"}):
        assert use_p2p(None, squares, strips, 8, limit)
    with config.set({"array.rechunk.method": "tasks"}):
        assert not use_p2p(None, rows, cols, 8, limit)
        assert use_p2p("p2p", rows, cols, 8, limit)  # (the argument wins)
    # auto without a default Client: the task route (runs anywhere)
    assert not use_p2p(None, rows, cols, 8, limit)
    with pytest.raises(ValueError, match="not one of"):
        use_p2p("disk", rows, cols, 8, limit)


def test_a_p2p_rechunk_computed_without_a_cluster_runs_in_this_process():
    x = np.arange(16.0).reshape(4, 4)
    y = xa.from_array(x, chunks=(1, 4)).rechunk((4, 1), method="p2p")
    assert y.chunks == ((4,), (1, 1, 1, 1)) and (y.compute() == x).all()
    assert (xa.from_array(np.eye(4), chunks=(1, 4)).rechunk((4, 1), method="tasks").compute() == np.eye(4)).all()


def test_balance_evens_out_the_blocks_and_block_size_limit_sizes_auto_axes():
    x = xa.ones((1000, 1000), chunks=(100, 100))
    assert x.rechunk(chunks=(400, -1), balance=True).chunks == ((500, 500), (1000,))
    for n in (3, 7, 9):
        got = x.rechunk(len(x) // n, balance=True).chunks[0]
        assert len(got) == n and max(got) - min(got) <= 1 and sum(got) == 1000
    assert x.rechunk(300).chunks[0] == (300, 300, 300, 100)  # (not asked: the leftover block stays)
    y = x.rechunk({0: -1, 1: "auto"}, block_size_limit=1e6)
    assert y.chunks[0] == (1000,) and max(y.chunks[1]) * 1000 * 8 <= 1e6
    assert float(y.sum().compute()) == 1e6


def test_none_keeps_an_axis_blocks_in_a_tuple_or_a_dict_as_dask():
    x = xa.ones((10, 12), chunks=(3, 5))
    assert x.rechunk((None, 3)).chunks == ((3, 3, 3, 1), (3, 3, 3, 3))
    assert x.rechunk({0: None, 1: -1}).chunks == ((3, 3, 3, 1), (12,))
    assert x.rechunk((-1, None)).chunks == ((10,), (5, 5, 2))
