"""xsched.array's overlap, trim_internal and map_overlap against NumPy: padded blocks equal to
``np.pad`` of the whole array cut into blocks, for every boundary and random shapes and
chunkings in 1-3 dimensions; filters through map_overlap equal to the filter on the whole
padded array; the graph's halo tasks carry slices of neighbours only; errors when the
expression is built. Everything runs in this process (no client)."""

from __future__ import annotations

import random

import numpy as np
import pytest

import xsched
import xsched.array as xa
from xsched.graph import local
from xsched.graph.spec import Task, dependencies

# np.pad's mode for each boundary name (None: no padding at the outer edges)
NUMPY_MODE = {"reflect": "reflect", "symmetric": "symmetric", "periodic": "wrap",
              "nearest": "edge", "none": None}


def random_chunks(rng: random.Random, n: int, smallest: int) -> tuple[int, ...]:
    """Blocks of at least ``smallest`` cells adding up to ``n`` (one block if n is small)."""
    if n < 2 * smallest:
        return (n,)
    sizes, left = [], n
    while left:
        s = rng.randint(smallest, max(smallest, min(left, 2 * smallest + 2)))
        if left - s < smallest:
            s = left
        sizes.append(s)
        left -= s
    return tuple(sizes)


def pad_like_numpy(a: np.ndarray, depth, modes) -> np.ndarray:
    """np.pad axis by axis in axis order ("none" pads nothing)."""
    for axis, (d, m) in enumerate(zip(depth, modes)):
        mode = NUMPY_MODE[m] if isinstance(m, str) else "constant"
        if d == 0 or mode is None:
            continue
        pad = [(0, 0)] * a.ndim
        pad[axis] = (d, d)
        extra = {"constant_values": m} if mode == "constant" else {}
        a = np.pad(a, pad, mode=mode, **extra)
    return a


def expected_overlap(a: np.ndarray, chunks, depth, modes) -> np.ndarray:
    """What overlap's padded blocks, put side by side, must hold: slices of np.pad."""
    padded = pad_like_numpy(a, depth, modes)
    index = []
    for axis, (c, d, m) in enumerate(zip(chunks, depth, modes)):
        starts = np.cumsum((0,) + c)
        n = a.shape[axis]
        cells = []
        for b in range(len(c)):
            lo, hi = int(starts[b]), int(starts[b + 1])
            if m == "none" or d == 0:  # padded coordinates = unpadded ones
                cells.extend(range(max(lo - d, 0), min(hi + d, n)))
            else:
                cells.extend(range(lo, hi + 2 * d))
        index.append(np.array(cells, dtype=int))
    return padded[np.ix_(*index)]


def box_interior(b: np.ndarray, depth) -> np.ndarray:
    """The mean over the (2d+1)-box around each cell, for cells at least ``depth`` from the
    edge of ``b``; other cells keep their value. Same shape out as in."""
    b = np.asarray(b, dtype=float)
    out = b.copy()
    inner = tuple(slice(d, b.shape[a] - d) for a, d in enumerate(depth))
    total = np.zeros(tuple(s.stop - s.start for s in inner))
    count = 0
    for shift in np.ndindex(*[2 * d + 1 for d in depth]):
        sl = tuple(slice(s, s + b.shape[a] - 2 * d) for a, (s, d) in enumerate(zip(shift, depth)))
        total = total + b[sl]
        count += 1
    out[inner] = total / count
    return out


def box_valid(padded: np.ndarray, depth) -> np.ndarray:
    """The box mean of every cell of the array inside ``padded`` (padded by ``depth``)."""
    full = box_interior(padded, depth)
    return full[tuple(slice(d, full.shape[a] - d) for a, d in enumerate(depth))]


# --------------------------------------------------------------------------- overlap vs np.pad


@pytest.mark.parametrize("boundary", ["reflect", "symmetric", "periodic", "nearest", "none", 7.5])
def test_overlap_is_np_pad_cut_into_blocks(boundary):
    rng = random.Random(f"overlap-{boundary}")
    for case in range(40):
        ndim = rng.randint(1, 3)
        shape = tuple(rng.randint(1, 9) for _ in range(ndim))
        depth = tuple(rng.randint(0, 2) for _ in range(ndim))
        chunks = tuple(random_chunks(rng, n, max(d, 1)) for n, d in zip(shape, depth))
        depth = tuple(min(d, n) for d, n in zip(depth, shape))
        a = np.random.default_rng(case).integers(-50, 50, size=shape).astype(float)
        x = xa.from_array(a, chunks=chunks)
        got = xa.overlap(x, depth=depth, boundary=boundary)
        want = expected_overlap(a, chunks, depth, [boundary] * ndim)
        assert got.shape == want.shape, (case, shape, chunks, depth)
        np.testing.assert_array_equal(got.compute(), want,
                                      err_msg=f"case {case}: {shape} {chunks} {depth}")
        np.testing.assert_array_equal(xa.trim_internal(got, depth, boundary).compute(), a)


def test_boundary_names_follow_numpy():
    """'reflect' is np.pad's (the edge cell is not repeated); 'symmetric' repeats it."""
    x = xa.from_array(np.array([1, 2, 3, 4]), chunks=2)
    padded = {b: xa.overlap(x, depth=2, boundary=b).compute().tolist()
              for b in ["reflect", "symmetric", "periodic", "nearest", 0]}
    assert padded["reflect"][:4] == [3, 2, 1, 2] and padded["reflect"][-4:] == [3, 4, 3, 2]
    assert padded["symmetric"][:4] == [2, 1, 1, 2] and padded["symmetric"][-4:] == [3, 4, 4, 3]
    assert padded["periodic"][:4] == [3, 4, 1, 2] and padded["periodic"][-4:] == [3, 4, 1, 2]
    assert padded["nearest"][:4] == [1, 1, 1, 2] and padded["nearest"][-4:] == [3, 4, 4, 4]
    assert padded[0][:4] == [0, 0, 1, 2] and padded[0][-4:] == [3, 4, 0, 0]
    assert xa.overlap(x, depth=2, boundary="wrap").compute().tolist() == padded["periodic"]
    assert xa.overlap(x, depth=2, boundary="edge").compute().tolist() == padded["nearest"]


def test_boundary_per_axis_and_depth_as_dict():
    a = np.arange(30.0).reshape(5, 6)
    x = xa.from_array(a, chunks=(2, 3))
    got = xa.overlap(x, depth={0: 1, -1: 2}, boundary={0: "periodic", 1: -1.0})
    want = expected_overlap(a, x.chunks, (1, 2), ["periodic", -1.0])
    np.testing.assert_array_equal(got.compute(), want)
    # axes a dict does not name: depth 0, boundary "none"
    only0 = xa.overlap(x, depth={0: 1}, boundary={0: "nearest"})
    assert only0.chunks == ((4, 4, 3), (3, 3))
    edge = xa.overlap(x, depth=1, boundary={0: "nearest"})  # axis 1: "none"
    assert edge.chunks == ((4, 4, 3), (4, 4))


# --------------------------------------------------------------------------- map_overlap


@pytest.mark.parametrize("boundary", ["reflect", "symmetric", "periodic", "nearest", 7.5])
def test_map_overlap_equals_the_filter_on_the_padded_whole_array(boundary):
    rng = random.Random(f"filter-{boundary}")
    for case in range(15):
        ndim = rng.randint(1, 3)
        shape = tuple(rng.randint(2, 10) for _ in range(ndim))
        depth = tuple(rng.randint(0, 2) for _ in range(ndim))
        depth = tuple(min(d, n) for d, n in zip(depth, shape))
        chunks = tuple(random_chunks(rng, n, max(d, 1)) for n, d in zip(shape, depth))
        a = np.random.default_rng(case).random(shape)
        x = xa.from_array(a, chunks=chunks)
        y = x.map_overlap(lambda b: box_interior(b, depth), depth=depth, boundary=boundary)
        assert y.chunks == x.chunks
        want = box_valid(pad_like_numpy(a, depth, [boundary] * ndim), depth)
        np.testing.assert_allclose(y.compute(), want, rtol=1e-12,
                                   err_msg=f"case {case}: {shape} {chunks} {depth}")


def test_boundary_none_gives_the_function_the_true_edge():
    """With 'none', a filter that handles its own edges gives what it gives on the whole
    array (here: the whole array's edge cells keep their values)."""
    a = np.random.default_rng(3).random((12, 7))
    x = xa.from_array(a, chunks=(3, 4))
    y = xa.map_overlap(box_interior, x, (2, 1), depth=(2, 1), boundary="none")
    np.testing.assert_allclose(y.compute(), box_interior(a, (2, 1)), rtol=1e-12)


def test_the_issue_example_a_filter_over_neighbouring_frames():
    """``xa.map_overlap(filter, movie, depth=(2, 0, 0), ...)``: frames from the blocks
    before and after, nothing borrowed along the image axes."""
    rng = np.random.default_rng(0)
    movie_np = rng.random((40, 6, 5)).astype("f4")
    movie = xa.from_array(movie_np, chunks=(10, 3, 5))

    def frame_filter(frames, weight):  # a 5-frame weighted mean along axis 0
        out = frames.copy()
        out[2:-2] = (weight * frames[2:-2] + frames[:-4] + frames[1:-3] + frames[3:-1]
                     + frames[4:]) / (weight + 4)
        return out

    z = xa.map_overlap(frame_filter, movie, depth=(2, 0, 0), boundary="nearest", weight=2.0)
    assert z.dtype == np.float32 and z.chunks == movie.chunks
    assert z.name.startswith("frame_filter-")  # progress bars show the function
    padded = np.pad(movie_np, ((2, 2), (0, 0), (0, 0)), mode="edge")
    np.testing.assert_allclose(z.compute(), frame_filter(padded, 2.0)[2:-2], rtol=1e-6)
    # halo pieces only along axis 0, each of 2 frames: 2 per block (one per side)
    halos = {k: t for k, t in z.__xsched_graph__().items() if k.startswith("overlap-halo")}
    assert len(halos) == 2 * movie.npartitions
    values = local.get(z.__xsched_graph__(), sorted(halos))
    assert {v.shape[1:] for v in values} <= {(3, 5)} and {v.shape[0] for v in values} == {2}


def test_several_arrays_are_padded_alike_and_rechunked_to_the_first():
    a = np.arange(20.0)
    b = np.arange(20.0) * 10
    x = xa.from_array(a, chunks=5)
    y = xa.from_array(b, chunks=((8, 12),))  # rechunked to x's blocks

    def diff(u, v, scale):
        out = np.zeros_like(u)
        out[1:-1] = (u[2:] - u[:-2]) * scale + v[1:-1]
        return out

    z = xa.map_overlap(diff, x, y, 0.5, depth=1, boundary="periodic")
    up = np.pad(a, 1, mode="wrap")
    np.testing.assert_allclose(z.compute(), (up[2:] - up[:-2]) * 0.5 + b)
    with pytest.raises(ValueError, match=r"shapes \[\(20,\), \(19,\)\] do not broadcast"):
        xa.map_overlap(diff, x, x[1:], 1.0, depth=1)


def test_map_overlap_broadcasts_arrays_of_other_shapes_as_dask_does():
    x = xa.arange(8, chunks=4).reshape(2, 4).rechunk((1, 2))
    y = xa.arange(4, chunks=2)
    got = xa.map_overlap(lambda a, b: a + b, x, y, depth=1, boundary="reflect")
    assert got.compute().tolist() == [[0, 2, 4, 6], [4, 6, 8, 10]]
    plain = xa.map_overlap(lambda b: b * 2, xa.arange(6, chunks=3))  # (no depth: the blocks as they are)
    assert plain.compute().tolist() == [0, 2, 4, 6, 8, 10]
    with pytest.raises(ValueError, match="align_arrays=False the arrays must be cut alike"):
        xa.map_overlap(lambda a, b: a + b, xa.arange(8, chunks=4), xa.arange(8, chunks=2), depth=1,
                       align_arrays=False)


def test_trim_false_keeps_the_padded_blocks():
    x = xa.from_array(np.arange(9), chunks=3)
    y = x.map_overlap(lambda b: b * 1, depth=1, boundary="none", trim=False)
    assert y.chunks == ((4, 5, 4),)
    assert y.compute().tolist() == [0, 1, 2, 3, 2, 3, 4, 5, 6, 5, 6, 7, 8]


def test_dtype_from_meta_and_inferred():
    x = xa.from_array(np.arange(6), chunks=3)
    assert x.map_overlap(lambda b: b / 2, depth=1).dtype == np.float64
    y = xa.map_overlap(lambda b: (b > 2), x, depth=1, meta=np.empty((0,), bool))
    assert y.dtype == np.bool_ and y.compute().tolist() == [False] * 3 + [True] * 3


def test_a_block_of_the_wrong_shape_names_the_block_and_both_shapes():
    x = xa.from_array(np.arange(8.0), chunks=4)
    y = x.map_overlap(lambda b: b[1:], depth=1, boundary="reflect", dtype=float)
    with pytest.raises(ValueError, match=r"block \(0,\).*shape \(5,\).*expects \(6,\)"):
        y.compute()


def test_depth_zero_is_map_blocks():
    x = xa.from_array(np.arange(6), chunks=2)
    y = x.map_overlap(lambda b: b + 1, depth=0)
    assert y.compute().tolist() == [1, 2, 3, 4, 5, 6]
    assert not any(k.startswith(("overlap", "trim")) for k in y._graph.layers)


# --------------------------------------------------------------------------- the graph


def test_join_tasks_read_whole_blocks_only_their_own():
    """Each block's join task depends on its own block and on halo tasks; each halo task
    on one neighbour, and returns a copy no larger than the halo."""
    a = np.arange(100.0).reshape(10, 10)
    x = xa.from_array(a, chunks=(4, 3))
    y = xa.overlap(x, depth=(2, 1), boundary="reflect")
    graph = y.__xsched_graph__()
    inputs = set(x.__xsched_graph__())
    halo_keys = [k for k in graph if k.startswith("overlap-halo")]
    for index in np.ndindex(*x.numblocks):
        join = graph[y.chunk_key(index)]
        deps = dependencies(join)
        assert deps & inputs == {x.chunk_key(index)}, index
        assert all(d.startswith("overlap-halo") for d in deps - inputs)
    values = local.get(graph, halo_keys)
    for key, value in zip(halo_keys, values):
        task = graph[key]
        assert len(dependencies(task)) == 1
        assert value.base is None  # a copy: the neighbour block is not kept alive
        # a face of depth cells on one axis at least (corners on both)
        assert value.shape[0] <= 2 or value.shape[1] <= 1, (key, value.shape)
    # face pieces for inner blocks: 2 along axis 0, 2 along axis 1, 4 corners
    per_block = {}
    for key in halo_keys:
        block = tuple(int(i) for i in key.rsplit("-", 1)[1].split(".")[:2])
        per_block[block] = per_block.get(block, 0) + 1
    assert per_block[(1, 1)] == 8


def test_tasks_carry_annotations():
    x = xa.from_array(np.arange(12.0), chunks=4)
    with xsched.annotate(priority=5):
        y = x.map_overlap(lambda b: b, depth=1, dtype=float)
    new = {k: t for k, t in y.__xsched_graph__().items() if k not in x.__xsched_graph__()}
    assert new and all(t.annotations.get("priority") == 5 for t in new.values()
                       if isinstance(t, Task))


def test_keys_are_deterministic():
    x = xa.from_array(np.arange(12.0), chunks=4)
    assert xa.overlap(x, 1).name == xa.overlap(x, 1).name
    assert xa.overlap(x, 1).name != xa.overlap(x, 1, boundary="nearest").name


# --------------------------------------------------------------------------- errors


def test_depth_larger_than_a_chunk_names_axis_depth_chunk_and_rechunk():
    x = xa.from_array(np.zeros((10, 12)), chunks=(5, (6, 4, 2)))
    with pytest.raises(ValueError) as info:
        x.map_overlap(lambda b: b, depth=(1, 3), allow_rechunk=False)
    msg = str(info.value)
    assert "depth 3 on axis 1" in msg and "smallest chunk" in msg and "(2;" in msg
    assert "rechunk" in msg and "x.rechunk({1: 6})" in msg
    with pytest.raises(ValueError, match="depth 3 on axis 1"):
        xa.overlap(x, depth={1: 3})
    with pytest.raises(ValueError, match="larger than the axis itself"):
        xa.overlap(xa.from_array(np.zeros(3), chunks=-1), depth=4)
    # the suggestion works
    ok = x.rechunk({1: 6}).map_overlap(lambda b: b, depth=(1, 3))
    assert ok.shape == x.shape


def test_map_overlap_joins_blocks_shorter_than_the_depth_with_a_neighbour_as_dask_does():
    data = np.arange(60.0).reshape(5, 12)
    x = xa.from_array(data, chunks=(5, (6, 4, 1, 1)))

    def mean3(b):  # (a moving mean along axis 1; the array's outer edges stay as they are)
        out = b.copy()
        out[:, 1:-1] = (b[:, :-2] + b[:, 1:-1] + b[:, 2:]) / 3
        return out

    got = x.map_overlap(mean3, depth=(0, 2), boundary="none")
    assert got.chunks[1] == (6, 4, 2) and got.shape == data.shape  # (the two of 1 joined: each at least 2)
    np.testing.assert_allclose(got.compute(), mean3(data))
    last = xa.from_array(data, chunks=(5, (6, 5, 1))).map_overlap(mean3, depth=(0, 2), boundary="none")
    assert last.chunks[1] == (6, 6)  # (a short last block joins the one before it)
    np.testing.assert_allclose(last.compute(), mean3(data))


def test_bad_arguments_fail_when_the_expression_is_built():
    x = xa.from_array(np.zeros((4, 4)), chunks=2)
    with pytest.raises(ValueError, match="2 entries but the array has 2|has 3 entries"):
        xa.overlap(x, depth=(1, 1, 1))
    with pytest.raises(ValueError, match="non-negative"):
        xa.overlap(x, depth=-1)
    with pytest.raises(ValueError, match="unknown boundary 'mirror'"):
        xa.overlap(x, depth=1, boundary="mirror")
    with pytest.raises(ValueError, match="axis 5"):
        xa.overlap(x, depth={5: 1})
    with pytest.raises(TypeError, match="depth= is required"):
        xa.overlap(x, depth=None)
    with pytest.raises(TypeError, match="at least one xsched array"):
        xa.map_overlap(lambda b: b, np.zeros(3), depth=1)
    with pytest.raises(TypeError, match="must be a function"):
        xa.map_overlap(x, depth=1)


def test_a_thinly_padded_block_is_trimmed_to_a_view_and_a_thickly_padded_one_copied():
    from xsched.array.overlapping import _trim

    padded = np.zeros((27, 4))
    thin = _trim(padded, (slice(1, 26), slice(None)), (27, 4), "block (0, 0)")
    assert thin.shape == (25, 4) and thin.base is padded  # 25 of 27 rows: copying would cost a pass
    thick = _trim(np.zeros((7, 4)), (slice(2, 5), slice(None)), (7, 4), "block (0, 0)")
    assert thick.shape == (3, 4) and thick.base is None  # 3 of 7 rows: the padding is not kept alive


def test_dask_s_module_path_works_and_the_module_is_the_function_too():
    import cloudpickle

    from xsched.array.overlap import overlap, sliding_window_view, trim_internal  # (dask's import lines)

    data = np.arange(24.0).reshape(4, 6)
    x = xa.from_array(data, chunks=(2, 3))
    g = xa.overlap.overlap(x, depth={0: 2, 1: 1}, boundary={0: 100, 1: "symmetric"})
    np.testing.assert_array_equal(g.compute()[:2, 1:4], np.full((2, 3), 100.0))
    np.testing.assert_array_equal(xa.overlap(x, {0: 2, 1: 1}, {0: 100, 1: "symmetric"}).compute(), g.compute())
    assert overlap is xa.overlap.overlap and trim_internal is xa.trim_internal
    np.testing.assert_array_equal(xa.overlap.trim_internal(g, {0: 2, 1: 1}, {0: 100, 1: "symmetric"}).compute(), data)
    np.testing.assert_array_equal(xa.overlap.trim_overlap(xa.overlap(x, 1), 1).compute(), data)
    assert sliding_window_view(x, 2, axis=1).shape == (4, 5, 2)
    assert cloudpickle.loads(cloudpickle.dumps(xa.overlap)) is xa.overlap


def test_unknown_block_lengths_take_depth_only_along_known_axes():
    """After a boolean mask (rows of unknown lengths), overlapping along the known axes
    runs as on the computed array; a depth along the unknown axis is refused when built,
    naming the axis and compute_chunk_sizes."""
    import scipy.ndimage as ndi

    x = xa.from_array(np.arange(48.0).reshape(6, 8), chunks=(2, 3))
    masked = x[x[:, 0] % 12 != 0]
    known = xa.from_array(masked.compute(), chunks=(2, 3))
    smooth = lambda b: ndi.uniform_filter(b, size=(1, 3), mode="constant")  # noqa: E731
    for depth, boundary in [({1: 1}, "none"), ({1: 1}, "reflect"), ((0, 2), "nearest"), (0, "none")]:
        got = xa.map_overlap(smooth, masked, depth=depth, boundary=boundary)
        want = xa.map_overlap(smooth, known, depth=depth, boundary=boundary).compute()
        np.testing.assert_array_equal(got.compute(), want)
        np.testing.assert_array_equal(xa.map_overlap(lambda a, b: a + b, masked, masked * 2, depth=depth,
                                                     boundary=boundary).compute(), known.compute() * 3)
    deep = xa.map_overlap(lambda b: b, masked, depth={1: 4}, boundary="none")  # (deeper than a block: joined)
    np.testing.assert_array_equal(deep.compute(), known.compute())
    padded = xa.overlap(masked, depth={1: 1}, boundary="reflect")
    np.testing.assert_array_equal(xa.trim_internal(padded, {1: 1}, boundary="reflect").compute(), known.compute())
    for build in (lambda: xa.map_overlap(smooth, masked, depth=1), lambda: masked.map_overlap(smooth, depth=(1, 0)),
                  lambda: xa.overlap(masked, depth=1), lambda: xa.trim_internal(padded, 1),
                  lambda: xa.sliding_window_view(masked, 2, axis=0)):
        with pytest.raises(ValueError, match="along axis 0 needs the lengths.*compute_chunk_sizes"):
            build()
    other = x[:4][x[:4, 1] > 20]  # (another mask's result, of other blocks)
    with pytest.raises(ValueError, match="the arrays must be cut alike .* array 1 has chunks"):
        xa.map_overlap(lambda a, b: a + b, masked, other, depth={1: 1})
