"""xsched.array against numpy: chunking, from_array (numpy, h5py, generic), map_blocks,
elementwise ops, slicing, reductions, to_delayed, persist, to_hdf5, annotations and the
seed-000 pipeline. Everything runs in this process through xsched.graph.local.get (no
client), except the subprocess test that reads an HDF5 block in a fresh interpreter."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap

import cloudpickle
import h5py
import numpy as np
import pytest

import xsched.array as xa
from xsched.array.core import Array, chunk_key, normalize_chunks
from xsched.graph.spec import Task, dependencies


def _delayed():
    try:
        from xsched import delayed  # the public spelling the seed uses
    except ImportError:
        from xsched.graph.delayed import delayed
    return delayed


@pytest.fixture
def movie_file(tmp_path):
    """A small stand-in for the seed's HDF5 movie: (200, 16, 16) float32 frames."""
    path = str(tmp_path / "movie_stack.h5")
    data = np.random.default_rng(0).random((200, 16, 16), dtype=np.float32)
    with h5py.File(path, "w") as f:
        f.create_dataset("/entry/data/raw_counts", data=data, chunks=(10, 16, 16))
    yield path, data
    xa.hdf5.close_files()


# --------------------------------------------------------------------------- chunks


@pytest.mark.parametrize(
    "spec, shape, expected",
    [
        (2, (5,), ((2, 2, 1),)),
        ((100, -1, -1), (250, 16, 16), ((100, 100, 50), (16,), (16,))),
        ((None, 3), (2, 7), ((2,), (3, 3, 1))),
        (((1, 4), 2), (5, 4), ((1, 4), (2, 2))),
        ({0: 2}, (4, 3), ((2, 2), (3,))),
        (10, (0,), ((0,),)),
        (100, (7,), ((7,),)),
        ((2.0, np.float32(3)), (4, 3), ((2, 2), (3,))),
    ],
)
def test_normalize_chunks(spec, shape, expected):
    assert normalize_chunks(spec, shape) == expected


def test_a_fractional_block_length_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"block length 10.5 on axis 1 must be a whole number"):
        normalize_chunks((2, 10.5), (4, 30))


def test_normalize_chunks_auto_targets_block_bytes():
    chunks = normalize_chunks("auto", (10_000, 1000), np.float64, limit=8 * 1000 * 100)
    assert sum(chunks[0]) == 10_000 and sum(chunks[1]) == 1000
    assert max(chunks[0]) * max(chunks[1]) * 8 <= 8 * 1000 * 100 * 1.01


@pytest.mark.parametrize(
    "spec, message",
    [((2,), "2 dimensions"), ((0, 2), "positive"), (((1, 1), 2), "add up"), (("x", 1), "spec")],
)
def test_normalize_chunks_errors_say_what_to_do(spec, message):
    with pytest.raises(ValueError, match=message):
        normalize_chunks(spec, (3, 4))


# --------------------------------------------------------------------------- from_array, keys


def test_from_array_numpy_roundtrip_and_geometry():
    a = np.arange(60).reshape(6, 10)
    x = xa.from_array(a, chunks=(4, 3))
    assert x.chunks == ((4, 2), (3, 3, 3, 1))
    assert (x.shape, x.ndim, x.size, x.dtype) == (a.shape, 2, 60, a.dtype)
    assert x.numblocks == (2, 4) and x.npartitions == 8 and x.chunksize == (4, 3)
    np.testing.assert_array_equal(x.compute(), a)
    np.testing.assert_array_equal(np.asarray(x), a)
    out = x.compute()
    out[0, 0] = -1
    assert a[0, 0] == 0, "computed blocks must not be views of the user's array"


def test_from_array_is_deterministic():
    a = np.arange(10)
    assert xa.from_array(a, chunks=3).name == xa.from_array(a.copy(), chunks=3).name
    assert xa.from_array(a, chunks=3).name != xa.from_array(a, chunks=4).name


def test_keys_format_and_group_names():
    x = xa.from_array(np.zeros((4, 6)), chunks=(2, 3))
    token = x.name.rsplit("-", 1)[1]
    assert x.name.startswith("from-array-") and len(token) >= 8
    assert x.chunk_key((1, 0)) == f"{x.name}-1.0" == chunk_key(x.name, (1, 0))
    assert x.__xsched_keys__() == [[f"{x.name}-0.0", f"{x.name}-0.1"],
                                   [f"{x.name}-1.0", f"{x.name}-1.1"]]
    assert set(x.__xsched_graph__()) == set(k for row in x.__xsched_keys__() for k in row)
    with pytest.raises(IndexError, match="outside the block grid"):
        x.chunk_key((2, 0))
    s = x.sum()
    assert s.__xsched_keys__() == [f"{s.name}-0"]


def _group(key: str) -> str:
    """The documented rule: drop '-<dotted index>', then '-<hex token>'."""
    import re

    return re.sub(r"-[0-9a-f]{8,}(-[0-9]+(\.[0-9]+)*)?$", "", key)


def test_group_names_read_as_the_operation():
    def sum_sub_stacks(b):
        return b

    x = xa.from_array(np.zeros((4, 6)), chunks=(2, 3))
    y = x.map_blocks(sum_sub_stacks, dtype=x.dtype)
    groups = {_group(k) for k in y.sum(axis=0, split_every=2).__xsched_graph__()}
    assert groups == {"from-array", "sum_sub_stacks", "sum-chunk", "sum-aggregate"}


def test_key_split_understands_chunk_keys():
    from xsched.tokenize import key_split

    x = xa.from_array(np.zeros((4, 6, 2)), chunks=2)
    y = x.map_blocks(lambda b: b, dtype=x.dtype, name="sum_sub_stacks")
    assert key_split(y.chunk_key((1, 2, 0))) == "sum_sub_stacks"
    assert key_split(x.chunk_key((0, 0, 0))) == "from-array"
    assert key_split(x.sum().__xsched_keys__()[0]) == "sum-aggregate"


def test_from_array_generic_sliceable_object():
    class Lazy:
        """Anything with shape, dtype and __getitem__ (like a memmap or a zarr array)."""

        shape, dtype = (5, 4), np.dtype("i4")

        def __init__(self):
            self.reads = []

        def __getitem__(self, index):
            self.reads.append(index)
            return np.arange(20, dtype="i4").reshape(5, 4)[index]

    src = Lazy()
    x = xa.from_array(src, chunks=(2, -1))
    assert src.reads == [], "from_array must not read anything"
    np.testing.assert_array_equal(x.compute(), np.arange(20).reshape(5, 4))
    assert len(src.reads) == 3


def test_repr_and_html():
    x = xa.from_array(np.zeros((20, 5, 5), np.float32), chunks=(10, -1, -1))
    r = repr(x)
    assert r.startswith(f"xsched.Array<{x.name}, shape=(20, 5, 5), dtype=float32, ")
    assert "chunksize=(10, 5, 5), chunks=2, tasks=2>" in r
    html = x._repr_html_()
    for part in ("(20, 5, 5)", "(10, 5, 5)", "float32", "2 chunks", "2.00 kB", "1.00 kB"):
        assert part in html


def test_ones_zeros():
    np.testing.assert_array_equal(xa.ones((5, 3), dtype="i2", chunks=2).compute(),
                                  np.ones((5, 3), "i2"))
    z = xa.zeros(7, chunks=3)
    assert z.chunks == ((3, 3, 1),) and z.compute().sum() == 0


# --------------------------------------------------------------------------- h5py


def test_from_h5py_dataset_reads_lazily_and_correctly(movie_file):
    path, data = movie_file
    with h5py.File(path, "r") as fh:
        movie = xa.from_array(fh["/entry/data/raw_counts"], chunks=(100, -1, -1))
        assert movie.chunks == ((100, 100), (16,), (16,)) and movie.dtype == np.float32
        np.testing.assert_array_equal(movie.compute(), data)
        np.testing.assert_array_equal(movie[150:160, 3].compute(), data[150:160, 3])


def test_from_h5py_auto_chunks_follow_storage_chunks(tmp_path):
    path = str(tmp_path / "big.h5")
    with h5py.File(path, "w") as f:  # 240 MB declared, nothing written: sparse on disk
        f.create_dataset("d", shape=(3000, 100, 100), dtype="f8", chunks=(7, 100, 100))
    with h5py.File(path, "r") as f:
        x = xa.from_array(f["d"])
    assert len(x.chunks[0]) == 2 and x.chunks[1:] == ((100,), (100,))
    assert x.chunks[0][0] % 7 == 0 and x.chunks[0][0] * 100 * 100 * 8 <= 128 * 2**20


def test_h5py_graph_pickles_while_file_is_open(movie_file):
    path, _ = movie_file
    fh = h5py.File(path, "r")
    try:
        movie = xa.from_array(fh["/entry/data/raw_counts"], chunks=(100, -1, -1))
        graph = (movie + 1).__xsched_graph__()
        blob = cloudpickle.dumps(graph)
        assert b"h5py._hl" not in blob, "no h5py object may travel in the graph"
        assert os.path.abspath(path).encode() in blob
        again = pickle.loads(blob)
        assert set(again) == set(graph)
    finally:
        fh.close()


def test_h5py_block_is_read_in_a_fresh_process(movie_file, tmp_path):
    path, data = movie_file
    fh = h5py.File(path, "r")  # the client keeps its handle open, as in the seed
    try:
        movie = xa.from_array(fh["/entry/data/raw_counts"], chunks=(100, -1, -1))
        task = movie.__xsched_graph__()[movie.chunk_key((1, 0, 0))]
        (tmp_path / "task.pkl").write_bytes(cloudpickle.dumps(task))
        script = textwrap.dedent(f"""
            import pickle, sys, numpy as np
            task = pickle.load(open({str(tmp_path / 'task.pkl')!r}, 'rb'))
            block = task.run({{}})
            assert "h5py" in sys.modules  # opened here, by path
            np.save({str(tmp_path / 'block.npy')!r}, block)
        """)
        subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    finally:
        fh.close()
    np.testing.assert_array_equal(np.load(tmp_path / "block.npy"), data[100:200])


def test_h5py_cache_reopens_a_rewritten_file(tmp_path):
    path = str(tmp_path / "f.h5")
    with h5py.File(path, "w") as f:
        f["x"] = np.arange(4.0)
    with h5py.File(path, "r") as f:
        graph = xa.from_array(f["x"], chunks=2).__xsched_graph__()
    blob = cloudpickle.dumps(graph)  # as a worker would receive it: no local handle
    first = [t.run({}) for t in pickle.loads(blob).values()]
    assert sorted(float(b.sum()) for b in first) == [1.0, 5.0]
    xa.hdf5.close_files(path)
    with h5py.File(path, "w") as f:
        f["x"] = np.arange(4.0) * 10
    second = [t.run({}) for t in pickle.loads(blob).values()]
    assert sorted(float(b.sum()) for b in second) == [10.0, 50.0]
    xa.hdf5.close_files()


# --------------------------------------------------------------------------- seed 000


def sum_sub_stacks(mov):
    # aggregation function
    sub_stk = []
    for k in range(mov.shape[0] // 10):
        sub_stk.append(mov[k * 10:k * 10 + 10, ...].sum(axis=0, keepdims=True))
    return np.concatenate(sub_stk)


def get_info(mov):
    # reduction function
    results = []
    for frame in mov:
        results.append({
            'sum': frame.sum(),
            'variance': frame.var()
        })
    return results


def test_seed_000_pipeline_runs_as_written(movie_file, monkeypatch):
    path, data = movie_file
    delayed = _delayed()
    monkeypatch.chdir(os.path.dirname(path))

    # 1: get the movie
    fh = h5py.File('movie_stack.h5')
    movie = xa.from_array(fh['/entry/data/raw_counts'], chunks=(100, -1, -1))

    # 2: sum sub-stacks within movie
    movie_aggregated = movie.map_blocks(sum_sub_stacks,
                                        chunks=(10,) + movie.chunks[1:],
                                        dtype=movie.dtype)

    # 3: create and run reduction tasks
    tasks = [delayed(get_info)(chk)
             for chk in movie_aggregated.to_delayed().ravel()]

    assert movie_aggregated.chunks == ((10, 10), (16,), (16,))
    assert len(tasks) == 2
    # read -> sum_sub_stacks is fused into one task per chunk, culled to that chunk
    for chk in movie_aggregated.to_delayed().ravel():
        assert len(chk.__xsched_graph__()) == 1
    info = [t.compute() for t in tasks]
    fh.close()

    expected = data.reshape(20, 10, 16, 16).sum(axis=1)
    flat = [row for part in info for row in part]
    assert len(flat) == 20
    for row, image in zip(flat, expected):
        assert row["sum"] == pytest.approx(float(image.sum()), rel=1e-5)
        assert row["variance"] == pytest.approx(float(image.var()), rel=1e-5)
    np.testing.assert_allclose(movie_aggregated.compute(), expected, rtol=1e-6)


# --------------------------------------------------------------------------- map_blocks


def test_map_blocks_passes_block_id_and_block_info():
    x = xa.from_array(np.arange(30.0).reshape(10, 3), chunks=(4, -1))
    seen = {}

    def f(block, offset, block_id=None, block_info=None, scale=1):
        seen[block_id] = block_info
        return (block + offset) * scale

    y = xa.map_blocks(f, x, 1.0, scale=2, dtype=x.dtype)
    np.testing.assert_array_equal(y.compute(), (np.arange(30.0).reshape(10, 3) + 1) * 2)
    assert set(seen) == {(0, 0), (1, 0), (2, 0)}
    info = seen[(1, 0)]
    assert set(info) == {None, 0}
    assert info[None] == {
        "shape": (10, 3), "num-chunks": (3, 1), "chunk-location": (1, 0),
        "array-location": [(4, 8), (0, 3)], "chunk-shape": (4, 3), "dtype": np.float64,
    }
    assert info[0]["array-location"] == [(4, 8), (0, 3)]
    assert info[0]["shape"] == (10, 3) and info[0]["num-chunks"] == (3, 1)


def test_map_blocks_infers_dtype_with_block_info():
    x = xa.from_array(np.arange(6), chunks=2)

    def shift(b, block_info=None):
        return b + block_info[None]["array-location"][0][0] * 0.5

    y = x.map_blocks(shift)
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y.compute(), np.arange(6) + np.repeat([0, 1, 2], 2))
    with pytest.raises(ValueError, match="pass dtype= explicitly"):
        x.map_blocks(lambda b: b.no_such_method())


def test_map_blocks_without_block_params_gets_none_of_them():
    x = xa.from_array(np.arange(6), chunks=2)
    y = x.map_blocks(lambda b, **kw: np.full_like(b, len(kw)), dtype=int)
    assert y.compute().tolist() == [0] * 6


def test_map_blocks_new_chunks_and_dtype_inference():
    x = xa.from_array(np.arange(12).reshape(6, 2), chunks=(3, -1))
    y = x.map_blocks(lambda b: b[::3], chunks=(1, 2))
    assert y.chunks == ((1, 1), (2,)) and y.dtype == x.dtype
    np.testing.assert_array_equal(y.compute(), [[0, 1], [6, 7]])
    z = x.map_blocks(lambda b: b / 2)
    assert z.dtype == np.float64


def test_map_blocks_drop_axis_and_new_axis():
    a = np.arange(24.0).reshape(4, 6)
    x = xa.from_array(a, chunks=(2, -1))
    s = x.map_blocks(lambda b: b.sum(axis=1), drop_axis=1, dtype=x.dtype)
    assert s.chunks == ((2, 2),)
    np.testing.assert_array_equal(s.compute(), a.sum(axis=1))

    # a dropped axis with several blocks: the function sees the blocks concatenated
    x2 = xa.from_array(a, chunks=(2, 4))
    s2 = x2.map_blocks(lambda b: b.sum(axis=1), drop_axis=1, dtype=x.dtype)
    np.testing.assert_array_equal(s2.compute(), a.sum(axis=1))

    n = x.map_blocks(lambda b: b[:, None, :] * np.ones((1, 3, 1)), new_axis=1,
                     chunks=(2, 3, 6), dtype=x.dtype)
    assert n.shape == (4, 3, 6) and n.chunks == ((2, 2), (3,), (6,))
    np.testing.assert_array_equal(n.compute(), np.broadcast_to(a[:, None, :], (4, 3, 6)))


def test_map_blocks_without_inputs_generates_blocks():
    def make(block_info=None):
        loc = block_info[None]["array-location"]
        shape = block_info[None]["chunk-shape"]
        return np.full(shape, loc[0][0] * 100 + loc[1][0])

    x = xa.map_blocks(make, chunks=((2, 3), (4,)), dtype=int)
    assert x.shape == (5, 4)
    expected = np.zeros((5, 4), int)
    expected[2:] = 200
    np.testing.assert_array_equal(x.compute(), expected)
    with pytest.raises(ValueError, match="chunks="):
        xa.map_blocks(make, dtype=int)


def test_map_blocks_two_arrays_and_chunk_mismatch():
    a, b = np.arange(8.0), np.ones(8)
    x, y = xa.from_array(a, chunks=4), xa.from_array(b, chunks=4)
    np.testing.assert_array_equal(xa.map_blocks(np.add, x, y, dtype=float).compute(), a + b)
    # arrays of the same shape cut differently are both cut wherever either is
    z = xa.map_blocks(np.add, x, xa.from_array(b, chunks=((3, 5),)), dtype=float)
    assert z.chunks == ((3, 1, 4),)
    np.testing.assert_array_equal(z.compute(), a + b)
    with pytest.raises(ValueError, match=r"argument 1 \(shape \(6,\).*it has 3 blocks there, the other 2"):
        xa.map_blocks(np.add, x, xa.from_array(np.ones(6), chunks=2), dtype=float)
    with pytest.raises(ValueError, match="block sizes"):
        x.map_blocks(lambda b: b, chunks=((1, 2, 3),))


def test_map_blocks_broadcasts_arrays_of_fewer_dimensions_and_single_blocks():
    a = np.arange(12.0).reshape(3, 4)
    x = xa.from_array(a, chunks=(2, 2))
    for other in (np.arange(4.0), np.arange(3.0).reshape(3, 1), np.arange(12.0).reshape(3, 4)):
        for chunks in (2, -1, 1):
            y = xa.from_array(other, chunks=chunks)
            got = xa.map_blocks(np.add, x, y)
            # y's blocks of one cut x's (2, 1) and (2, 2) along the axes it spans
            spans = [other.ndim == 2 and other.shape[0] == 3, other.shape[-1] == 4]
            assert got.chunks == (x.chunks if chunks != 1 else
                                  tuple((1,) * n if s else c for s, n, c in zip(spans, a.shape, x.chunks)))
            np.testing.assert_array_equal(got.compute(), a + other)
    seen = xa.map_blocks(lambda u, v, block_info=None: np.full(u.shape, block_info[1]["chunk-location"][0]),
                         x, xa.from_array(np.arange(4.0), chunks=2), dtype=int)
    np.testing.assert_array_equal(seen.compute(), [[0, 0, 1, 1]] * 3)  # (the short array's own block)


def test_map_blocks_goes_block_by_block_over_arrays_of_other_lengths_as_dask_does():
    x, y = xa.arange(1000, chunks=100), xa.arange(100, chunks=10)
    pairs = xa.map_blocks(lambda a, b: np.array([a.max(), b.max()]), x, y, chunks=(2,), dtype="i8")
    assert pairs.compute().tolist() == [v for k in range(1, 11) for v in (100 * k - 1, 10 * k - 1)]


def test_map_blocks_takes_the_dtype_from_meta():
    x = xa.from_array(np.arange(5), chunks=2)
    y = xa.map_blocks(lambda b: b * 1.5, x, meta=np.array((), dtype="f4"))
    assert y.dtype == np.float32
    with pytest.raises(TypeError, match="meta= takes an empty array"):
        xa.map_blocks(lambda b: b, x, meta="float")


def _ten():
    return 10.0


def test_map_blocks_accepts_delayed_arguments():
    offset = _delayed()(_ten)()
    x = xa.from_array(np.arange(6.0), chunks=3)
    y = x.map_blocks(np.add, offset, dtype=x.dtype)
    np.testing.assert_array_equal(y.compute(), np.arange(6.0) + 10)
    assert sum(_group(k) == "_ten" for k in y.__xsched_graph__()) == 1


# --------------------------------------------------------------------------- elementwise


def test_arithmetic_matches_numpy():
    a = np.arange(1, 13, dtype=float).reshape(3, 4)
    b = np.linspace(1, 2, 12).reshape(3, 4)
    x, y = xa.from_array(a, chunks=(2, 2)), xa.from_array(b, chunks=(2, 2))
    cases = [
        (x + y, a + b), (x - 1, a - 1), (2 * x, 2 * a), (x / y, a / b), (1 / x, 1 / a),
        (x // 2, a // 2), (x % 3, a % 3), (x ** 2, a ** 2), (2 ** y, 2 ** b), (-x, -a),
        (abs(-x), a), (x > 5, a > 5), (x == y, a == b), ((x > 2) & (y < 1.5), (a > 2) & (b < 1.5)),
        (np.sin(x), np.sin(a)), (np.add(x, y), a + b), (np.maximum(x, 6), np.maximum(a, 6)),
        (x + b, a + b), (b + x, a + b), (x * b[0], a * b[0]), (x.astype("f4"), a.astype("f4")),
        (x.T, a.T), (x.transpose(1, 0) + y.T, (a + b).T),
    ]
    for got, want in cases:
        assert isinstance(got, Array)
        assert got.dtype == want.dtype, (got, want.dtype)
        np.testing.assert_allclose(got.compute(), want)


def test_elementwise_broadcasting_against_single_block_arrays():
    a = np.arange(12.0).reshape(3, 4)
    row = np.arange(4.0)
    x = xa.from_array(a, chunks=(1, -1))
    r = xa.from_array(row, chunks=-1)
    np.testing.assert_array_equal((x - r).compute(), a - row)
    np.testing.assert_array_equal((x * a[:, :1]).compute(), a * a[:, :1])


def test_elementwise_cuts_both_operands_wherever_either_is_cut():
    x = xa.from_array(np.arange(8), chunks=4)
    y = xa.from_array(np.arange(8), chunks=((3, 5),))
    assert (x + y).chunks == (y + x).chunks == ((3, 1, 4),)
    # one operand in a block: the other's blocks, the one block split to them (never joined)
    whole = xa.from_array(np.arange(8), chunks=-1)
    assert (whole + x).chunks == (x + whole).chunks == x.chunks
    np.testing.assert_array_equal((x + y).compute(), 2 * np.arange(8))
    with pytest.raises(ValueError, match="do not broadcast"):
        x + xa.from_array(np.arange(3), chunks=3)


def test_unsupported_ufunc_methods_and_out():
    x = xa.from_array(np.arange(4.0), chunks=2)
    with pytest.raises(TypeError):
        np.subtract.reduce(x)
    with pytest.raises(TypeError, match="out="):
        np.sin(x, out=np.empty(4))


# --------------------------------------------------------------------------- slicing


@pytest.mark.parametrize(
    "index",
    [
        np.s_[2:9], np.s_[:, 1:4], np.s_[3], np.s_[-1, -3:], np.s_[1:10:3, ::2],
        np.s_[..., 2], np.s_[None, 4:6], np.s_[5:5], np.s_[0, 0], np.s_[:], np.s_[-100:100, 1],
    ],
)
def test_slicing_matches_numpy(index):
    a = np.arange(70).reshape(10, 7)
    x = xa.from_array(a, chunks=(3, 2))
    y = x[index]
    want = a[index]
    assert y.shape == want.shape
    assert all(sum(c) == n for c, n in zip(y.chunks, y.shape))
    np.testing.assert_array_equal(y.compute(), want)


def test_slicing_keeps_only_the_blocks_it_needs():
    x = xa.from_array(np.arange(100), chunks=10)
    y = x[25:45]
    assert y.chunks == ((5, 10, 5),)
    from xsched.graph.optimize import cull

    needed = cull(y.__xsched_graph__(), [k for k in y.__xsched_keys__()])
    assert sum(k.startswith("from-array") for k in needed) == 3


def test_slicing_errors():
    x = xa.from_array(np.arange(10), chunks=3)
    with pytest.raises(IndexError, match="out of bounds"):
        x[10]
    with pytest.raises(IndexError, match="too many indices"):
        x[1, 2]
    with pytest.raises(IndexError, match="field names index arrays of a structured dtype; this one is int64"):
        x["a"]
    np.testing.assert_array_equal(x[[1, 2]].compute(), [1, 2])  # (supported now: test_array_take.py)
    np.testing.assert_array_equal(x[::-1].compute(), np.arange(10)[::-1])  # (supported now)


# --------------------------------------------------------------------------- reductions


@pytest.mark.parametrize("op", ["sum", "mean", "var", "std", "min", "max"])
@pytest.mark.parametrize("axis", [None, 0, 1, 2, -1, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_match_numpy(op, axis, keepdims):
    a = np.random.default_rng(1).normal(size=(7, 6, 5))
    x = xa.from_array(a, chunks=(2, 4, 3))
    got = getattr(x, op)(axis=axis, keepdims=keepdims)
    want = getattr(np, op)(a, axis=axis, keepdims=keepdims)
    assert got.shape == np.shape(want) and got.dtype == want.dtype
    np.testing.assert_allclose(got.compute(), want, rtol=1e-12, atol=1e-12)


def test_reduction_tree_uses_split_every():
    a = np.arange(64 * 3, dtype=float).reshape(64, 3)
    x = xa.from_array(a, chunks=(1, 1))
    s = x.sum(axis=0, split_every=4)
    groups = [_group(k) for k in s.__xsched_graph__()]
    assert groups.count("sum-chunk") == 192
    assert groups.count("sum-combine") == (16 + 4) * 3  # two levels of 4-way merges
    assert groups.count("sum-aggregate") == 3
    for key, task in s.__xsched_graph__().items():
        if isinstance(task, Task) and not key.startswith("sum-chunk"):
            assert len(dependencies(task)) <= 4
    np.testing.assert_array_equal(s.compute(), a.sum(axis=0))
    np.testing.assert_array_equal(x.sum(split_every={0: 2, 1: 3}).compute(), a.sum())


def test_reduction_dtypes_and_arguments():
    a = np.arange(20, dtype=np.int32).reshape(4, 5)
    x = xa.from_array(a, chunks=2)
    assert x.sum().dtype == np.sum(a).dtype
    assert x.mean().dtype == np.float64 and float(x.mean()) == a.mean()
    assert x.sum(dtype="f4").dtype == np.float32
    assert xa.var(x, ddof=1).compute() == pytest.approx(np.var(a, ddof=1))
    assert xa.std(x, axis=0, ddof=1).compute() == pytest.approx(np.std(a, axis=0, ddof=1))
    b = xa.from_array(np.array([True, False, True]), chunks=2)
    assert int(b.sum()) == 2
    assert np.sum(x) is not None and float(np.mean(x)) == a.mean()  # numpy dispatches to us
    with pytest.raises(np.exceptions.AxisError):
        x.sum(axis=2)
    with pytest.raises(TypeError, match="out="):
        x.sum(out=np.empty(()))


def test_var_is_numerically_stable():
    rng = np.random.default_rng(2)
    a = (1e8 + rng.normal(scale=1e-1, size=(4000,))).astype(np.float64)
    x = xa.from_array(a, chunks=7)
    want = np.var(a - 1e8)  # exact up to rounding: shift first
    assert float(x.var()) == pytest.approx(want, rel=1e-6)
    assert float(x.std(ddof=1)) == pytest.approx(np.std(a - 1e8, ddof=1), rel=1e-6)
    f32 = (1000 + rng.random((50, 40), dtype=np.float32))
    y = xa.from_array(f32, chunks=(7, 9))
    assert y.var().dtype == np.float32
    np.testing.assert_allclose(y.var(axis=0).compute(),
                               np.var(f32.astype(np.float64), axis=0), rtol=1e-4)


def test_reduction_of_reduction_and_scalar_results():
    a = np.arange(24.0).reshape(2, 3, 4)
    x = xa.from_array(a, chunks=(1, 2, 2))
    r = x.sum(axis=0).max(axis=1)
    np.testing.assert_array_equal(r.compute(), a.sum(axis=0).max(axis=1))
    s = x.sum()
    assert s.shape == () and s.chunks == ()
    assert isinstance(s.compute(), np.floating) and s.compute() == a.sum()


# --------------------------------------------------------------------------- to_delayed


def test_to_delayed_gives_culled_graph_per_block():
    from xsched.graph.delayed import Delayed

    a = np.arange(40.0).reshape(8, 5)
    x = xa.from_array(a, chunks=(2, -1))
    y = (x + 1).map_blocks(lambda b: b.sum(axis=0, keepdims=True), chunks=(1, 5),
                           dtype=x.dtype)
    for optimize_graph in (True, False):
        parts = y.to_delayed(optimize_graph=optimize_graph)
        assert parts.shape == (4, 1) and parts.dtype == object
        flat = parts.ravel()
        assert all(isinstance(d, Delayed) for d in flat)
        for i, d in enumerate(flat):
            graph = d.__xsched_graph__()
            assert y.chunk_key((i, 0)) in graph
            # only this block's lineage: never another block's read
            assert not any(k.startswith("from-array") and not k.endswith(f"-{i}.0")
                           for k in graph)
            np.testing.assert_array_equal(d.compute(),
                                          (a[2 * i:2 * i + 2] + 1).sum(axis=0, keepdims=True))
    unfused = y.to_delayed(optimize_graph=False).ravel()[0].__xsched_graph__()
    assert len(unfused) == 3  # read, add, map_blocks


# --------------------------------------------------------------------------- compute/persist


class _FakeFuture:
    def __init__(self, key, value):
        self.key, self.value = key, value


class _FakeClient:
    """Implements the client side of the collection protocol, in process."""

    status = "running"

    def __init__(self):
        self.calls = []

    def _run(self, coll):
        from xsched.graph.local import get

        return get(coll.__xsched_graph__(), coll.__xsched_keys__())

    def compute(self, coll, sync=True):
        self.calls.append("compute")
        func, extra = coll.__xsched_postcompute__()
        return func(self._run(coll), *extra)

    def persist(self, coll):
        self.calls.append("persist")
        keys = coll.__xsched_keys__()
        flat = []

        def walk(k, v):
            if isinstance(k, list):
                for kk, vv in zip(k, v):
                    walk(kk, vv)
            else:
                flat.append((k, v))

        walk(keys, self._run(coll))
        func, extra = coll.__xsched_postpersist__()
        return func({k: _FakeFuture(k, v) for k, v in flat}, *extra)


@pytest.fixture
def fake_client():
    from xsched.client.default import set_default_client, unset_default_client

    client = _FakeClient()
    set_default_client(client)
    yield client
    unset_default_client(client)


def test_compute_and_persist_go_through_the_default_client(fake_client):
    a = np.arange(10.0)
    x = xa.from_array(a, chunks=4) * 2
    np.testing.assert_array_equal(x.compute(), a * 2)
    p = x.persist()
    assert fake_client.calls == ["compute", "persist"]
    assert p.name == x.name and p.chunks == x.chunks and p.dtype == x.dtype
    graph = p.__xsched_graph__()
    assert set(graph) == set(x.__xsched_keys__())
    assert all(isinstance(v, _FakeFuture) for v in graph.values())


def test_persist_without_client_holds_numpy_blocks():
    a = np.arange(10.0)
    x = (xa.from_array(a, chunks=4) + 1).persist()
    assert len(x.__xsched_graph__()) == 3
    np.testing.assert_array_equal(x.compute(), a + 1)
    np.testing.assert_array_equal((x * 2).sum().compute(), ((a + 1) * 2).sum())


def test_to_hdf5_roundtrip_chunk_by_chunk(tmp_path):
    path = str(tmp_path / "out.h5")
    a = np.random.default_rng(3).random((23, 4, 5)).astype("f4")
    x = xa.from_array(a, chunks=(5, -1, 2))
    xa.to_hdf5(path, "/results/x", x + 1, batch_size=2)
    with h5py.File(path, "r") as f:
        ds = f["/results/x"]
        assert ds.dtype == np.float32 and ds.chunks == (5, 4, 2)
        np.testing.assert_array_equal(ds[...], a + 1)
        back = xa.from_array(ds, chunks=(5, -1, -1))
        np.testing.assert_allclose(back.sum(axis=0).compute(), (a + 1).sum(axis=0), rtol=1e-5)
    # rewrite the same dataset in a file this process has read through its cache
    with h5py.File(path, "r") as f:
        graph = cloudpickle.dumps(xa.from_array(f["/results/x"], chunks=-1).__xsched_graph__())
    [t.run({}) for t in pickle.loads(graph).values()]  # fills the per-process cache
    x.to_hdf5(path, "/results/x")
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(f["/results/x"][...], a)
    with pytest.raises(TypeError, match="from_array"):
        xa.to_hdf5(path, "y", a)


def test_to_hdf5_uses_the_default_client(fake_client, tmp_path):
    path = str(tmp_path / "c.h5")
    x = xa.from_array(np.arange(9.0), chunks=2)
    xa.to_hdf5(path, "x", x, batch_size=3)
    assert fake_client.calls == ["compute", "compute"]
    with h5py.File(path, "r") as f:
        np.testing.assert_array_equal(f["x"][...], np.arange(9.0))


# --------------------------------------------------------------------------- annotations


def test_annotations_are_carried_into_tasks():
    from xsched.graph.annotate import annotate

    x = xa.from_array(np.arange(8.0), chunks=4)
    with annotate(resources={"GPU": 1}, retries=2):
        y = x.map_blocks(np.sqrt, dtype=float)
        z = y.sum()
        w = y + 1
    v = y * 2
    graph = {**z.__xsched_graph__(), **w.__xsched_graph__(), **v.__xsched_graph__()}
    for key, task in graph.items():
        group = _group(key)
        if group in ("sqrt", "sum-chunk", "sum-aggregate", "add"):
            assert task.annotations == {"resources": {"GPU": 1}, "retries": 2}, key
        else:
            assert task.annotations == {}, key
    # each task owns its annotations: changing one changes no other
    tasks = [t for k, t in graph.items() if _group(k) == "sqrt"]
    tasks[0].annotations["resources"]["GPU"] = 5
    assert tasks[1].annotations["resources"]["GPU"] == 1


def test_annotations_survive_to_delayed_fusion():
    from xsched.graph.annotate import annotate

    x = xa.from_array(np.arange(8.0), chunks=4)
    with annotate(resources={"GPU": 1}):
        y = x.map_blocks(np.sqrt, dtype=float)
    for i, d in enumerate(y.to_delayed().ravel()):
        graph = d.__xsched_graph__()
        found = [t.annotations.get("resources") for t in graph.values() if isinstance(t, Task)]
        assert {"GPU": 1} in found
        np.testing.assert_allclose(d.compute(), np.sqrt(np.arange(8.0))[4 * i:4 * i + 4])
