"""xsched.array's zarr input and output in this process (no client): round trips, files
written by zarr itself, other chunks than the stored ones, sharded arrays, groups, the
error for irregular chunks, compute=False, tasks that carry a path and no data, and
``import xsched.array`` without zarr. The cluster round trip: tests/cluster/test_array_overlap_zarr_cluster.py."""

from __future__ import annotations

import itertools
import pickle
import subprocess
import sys
import textwrap

import cloudpickle
import numpy as np
import pytest

import xsched.array as xa
from xsched.graph.delayed import Delayed

from tests.support.helpers import literal_arrays

zarr = pytest.importorskip("zarr", minversion="3")


def test_round_trip_keeps_values_dtype_and_chunks(tmp_path):
    a = np.random.default_rng(0).random((30, 17)).astype("f4")
    x = xa.from_array(a, chunks=(8, 5))
    path = str(tmp_path / "x.zarr")
    assert xa.to_zarr(x + 1, path) is None
    z = zarr.open_array(path, mode="r")
    assert z.shape == (30, 17) and z.dtype == np.float32 and z.chunks == (8, 5)
    np.testing.assert_array_equal(z[:], a + 1)
    y = xa.from_zarr(path)
    assert y.chunks == x.chunks and y.dtype == np.float32
    np.testing.assert_array_equal(y.compute(), a + 1)


def test_from_zarr_of_a_file_written_by_zarr(tmp_path):
    path = str(tmp_path / "movie.zarr")
    data = np.arange(40 * 6 * 5, dtype="i2").reshape(40, 6, 5)
    z = zarr.create_array(path, shape=data.shape, chunks=(10, 6, 5), dtype="i2")
    z[:] = data
    movie = xa.from_zarr(path)
    assert movie.chunks == ((10,) * 4, (6,), (5,)) and movie.dtype == np.int16
    np.testing.assert_array_equal(movie.compute(), data)
    np.testing.assert_array_equal(movie[13:27, 2].compute(), data[13:27, 2])


def test_chunks_other_than_the_stored_ones(tmp_path):
    path = str(tmp_path / "a.zarr")
    data = np.arange(120.0).reshape(12, 10)
    zarr.create_array(path, shape=data.shape, chunks=(4, 4), dtype="f8")[:] = data
    for chunks, want in [((5, -1), ((5, 5, 2), (10,))), (3, ((3,) * 4, (3, 3, 3, 1))),
                         ({0: 6}, ((6, 6), (10,))), ("auto", ((12,), (10,)))]:
        y = xa.from_zarr(path, chunks=chunks)
        assert y.chunks == want, chunks
        np.testing.assert_array_equal(y.compute(), data)


def test_sharded_arrays_are_read_a_shard_per_task(tmp_path):
    path = str(tmp_path / "s.zarr")
    z = zarr.create_array(path, shape=(10, 6), chunks=(2, 3), shards=(4, 6), dtype="i4")
    z[:] = np.arange(60).reshape(10, 6)
    y = xa.from_zarr(path)
    assert y.chunks == ((4, 4, 2), (6,))
    np.testing.assert_array_equal(y.compute(), np.arange(60).reshape(10, 6))


def test_components_groups_stores_and_zarr_arrays(tmp_path):
    path = str(tmp_path / "g.zarr")
    x = xa.from_array(np.arange(10), chunks=5)
    xa.to_zarr(x, path, component="raw/counts")
    x.map_blocks(lambda b: b * 3, dtype=x.dtype).to_zarr(path, component="raw/tripled")
    group = zarr.open_group(path, mode="r")
    assert sorted(group["raw"].array_keys()) == ["counts", "tripled"]
    assert xa.from_zarr(path, component="raw/tripled").compute().tolist() == list(range(0, 30, 3))
    # a zarr.Array or a local store travel as their path
    for given, component in [(group["raw/counts"], None), (zarr.storage.LocalStore(path),
                                                           "raw/counts")]:
        y = xa.from_zarr(given, component=component)
        source = next(iter(y.__xsched_graph__().values())).args[0]
        assert source.store == path and source.component == "raw/counts"
        assert y.compute().tolist() == list(range(10))


def test_fsspec_urls(tmp_path):
    x = xa.from_array(np.arange(12.0).reshape(3, 4), chunks=(2, 2))
    xa.to_zarr(x, "memory://xsched-test/x.zarr")  # fsspec's in-process file system
    np.testing.assert_array_equal(xa.from_zarr("memory://xsched-test/x.zarr").compute(),
                                  np.arange(12.0).reshape(3, 4))
    url = (tmp_path / "f.zarr").as_uri()  # file:// URLs are local paths
    xa.to_zarr(x, url)
    np.testing.assert_array_equal(xa.from_zarr(url).compute(), np.arange(12.0).reshape(3, 4))


def test_irregular_chunks_are_refused_naming_rechunk(tmp_path):
    x = xa.from_array(np.arange(20.0).reshape(10, 2), chunks=((3, 5, 2), 2))
    path = str(tmp_path / "bad.zarr")
    with pytest.raises(ValueError) as info:
        xa.to_zarr(x, path)
    msg = str(info.value)
    assert "axis 0" in msg and "(3, 5, 2)" in msg and "rechunk" in msg and "racing" in msg
    assert not (tmp_path / "bad.zarr").exists()  # refused before creating anything
    xa.to_zarr(x.rechunk({0: 5}), path)  # the named fix
    assert zarr.open_array(path, mode="r").chunks == (5, 2)
    # a shorter last block is regular
    xa.to_zarr(xa.from_array(np.arange(7), chunks=3), str(tmp_path / "ok.zarr"))
    assert zarr.open_array(str(tmp_path / "ok.zarr"), mode="r")[:].tolist() == list(range(7))


def test_an_existing_array_needs_overwrite(tmp_path):
    path = str(tmp_path / "x.zarr")
    xa.to_zarr(xa.ones(4, chunks=2), path)
    with pytest.raises(FileExistsError, match="overwrite=True"):
        xa.to_zarr(xa.zeros(4, chunks=2), path)
    xa.to_zarr(xa.zeros(6, chunks=3), path, overwrite=True)
    assert zarr.open_array(path, mode="r")[:].tolist() == [0.0] * 6


def test_compute_false_writes_when_the_delayed_is_computed(tmp_path):
    path = str(tmp_path / "lazy.zarr")
    x = xa.from_array(np.arange(1, 9), chunks=2)
    d = xa.to_zarr(x, path, compute=False, attributes={"units": "counts"})
    assert isinstance(d, Delayed)
    z = zarr.open_array(path, mode="r")  # created now, holding the fill value
    assert z[:].tolist() == [0] * 8 and z.attrs["units"] == "counts"
    assert d.compute() is None
    assert zarr.open_array(path, mode="r")[:].tolist() == list(range(1, 9))


def test_a_block_of_the_wrong_shape_is_not_written(tmp_path):
    x = xa.from_array(np.arange(8), chunks=4)
    liar = x.map_blocks(lambda b: b[:-1], dtype=x.dtype)  # promises blocks of 4
    with pytest.raises(ValueError, match=r"block \(0,\).*shape \(3,\).*promised \(4,\)"):
        xa.to_zarr(liar, str(tmp_path / "x.zarr"))


def test_read_tasks_carry_the_path_and_no_data(tmp_path):
    path = str(tmp_path / "big.zarr")
    data = np.random.default_rng(1).random((200, 100))
    zarr.create_array(path, shape=data.shape, chunks=(50, 100), dtype="f8")[:] = data
    y = xa.from_zarr(path, chunks=(25, 50))
    graph = y.__xsched_graph__()
    assert len(graph) == 16 and not literal_arrays(graph)
    for task in graph.values():
        assert len(cloudpickle.dumps(task)) < 600  # a path and a region, not 20 kB of data
    assert len(cloudpickle.dumps(graph)) < data.nbytes / 50
    # the write tasks carry the path too, and refer to the blocks by key
    d = xa.to_zarr(y, str(tmp_path / "copy.zarr"), compute=False)
    assert not literal_arrays(d.__xsched_graph__())


def test_a_read_task_runs_in_a_fresh_process(tmp_path):
    path = str(tmp_path / "x.zarr")
    zarr.create_array(path, shape=(6, 2), chunks=(3, 2), dtype="i8")[:] = np.arange(12).reshape(6, 2)
    y = xa.from_zarr(path)
    task = y.__xsched_graph__()[y.chunk_key((1, 0))]
    (tmp_path / "task.pkl").write_bytes(cloudpickle.dumps(task))
    script = textwrap.dedent(f"""
        import pickle, numpy as np
        block = pickle.load(open({str(tmp_path / 'task.pkl')!r}, 'rb')).run({{}})
        assert block.tolist() == [[6, 7], [8, 9], [10, 11]], block
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)


def test_xsched_imports_without_zarr_and_names_the_extra():
    script = textwrap.dedent("""
        import sys
        sys.modules["zarr"] = None  # as if zarr were not installed
        import xsched, xsched.array as xa
        try:
            xa.from_zarr("somewhere.zarr")
        except ImportError as exc:
            assert "pip install 'xsched[array]'" in str(exc), exc
        else:
            raise AssertionError("from_zarr worked without zarr")
        try:
            xa.ones(3, chunks=1).to_zarr("somewhere.zarr")
        except ImportError as exc:
            assert "xsched[array]" in str(exc), exc
        else:
            raise AssertionError("to_zarr worked without zarr")
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)


def test_source_pickles_small():
    from xsched.array.zarr import ZarrSource

    s = ZarrSource("rel/x.zarr", "a/b")
    again = pickle.loads(pickle.dumps(s))
    assert again.store == s.store and again.store.endswith("/rel/x.zarr")
    assert again.component == "a/b"


# ---------------------------------------------------------------- region= and append_dim=
def _write_regions(d: Delayed) -> list[tuple[slice, ...]]:
    """The region each write task of a to_zarr(..., compute=False) stores into."""
    from xsched.array.zarr import _write_region

    return [t.args[2] for t in d.__xsched_graph__().values()
            if getattr(t, "func", None) is _write_region]


def _chunks_touched(region: tuple[slice, ...], unit: tuple[int, ...]) -> set:
    return set(itertools.product(*(range(r.start // u, (r.stop - 1) // u + 1) for r, u in zip(region, unit))))


def _no_chunk_written_twice(d: Delayed, unit: tuple[int, ...]) -> None:
    _no_chunk_written_twice_of(_write_regions(d), unit)


def _no_chunk_written_twice_of(regions, unit: tuple[int, ...]) -> None:
    seen: dict = {}
    for region in regions:
        for chunk in _chunks_touched(region, unit):
            assert chunk not in seen, f"zarr chunk {chunk} written by {seen[chunk]} and {region}"
            seen[chunk] = region


def test_a_region_on_the_stored_grid_is_written_block_by_block(tmp_path):
    path = str(tmp_path / "r.zarr")
    stored = np.arange(120.0).reshape(12, 10)
    zarr.create_array(path, shape=stored.shape, chunks=(4, 5), dtype="f8")[:] = stored
    x = xa.from_array(-np.ones((8, 5)), chunks=(4, 5))
    d = xa.to_zarr(x, path, region=(slice(4, 12), slice(5, 10)), compute=False)
    assert sorted(r[0].start for r in _write_regions(d)) == [4, 8]  # x's own two blocks, no rechunk
    assert not any(k.startswith("rechunk") for k in d.__xsched_graph__())
    d.compute()
    expected = stored.copy()
    expected[4:12, 5:10] = -1
    np.testing.assert_array_equal(zarr.open_array(path, mode="r")[:], expected)
    # {axis: slice}, the other axes whole; negative bounds count from the end
    xa.to_zarr(xa.zeros((2, 10), chunks=(2, 5)), path, region={0: slice(-2, None)})
    expected[-2:] = 0
    np.testing.assert_array_equal(zarr.open_array(path, mode="r")[:], expected)


def test_a_region_off_the_stored_grid_is_rechunked_so_no_chunk_has_two_writers(tmp_path):
    path = str(tmp_path / "r.zarr")
    zarr.create_array(path, shape=(20,), chunks=(4,), dtype="i8")[:] = np.arange(20)
    x = xa.from_array(np.full(13, -1), chunks=5)  # blocks at 3, 8, 13 would share chunks 2 and 3
    d = xa.to_zarr(x, path, region=(slice(3, 16),), compute=False)
    _no_chunk_written_twice(d, (4,))
    assert [r[0].start for r in sorted(_write_regions(d), key=lambda r: r[0].start)] == [3, 4, 8, 12]
    d.compute()
    assert zarr.open_array(path, mode="r")[:].tolist() == [0, 1, 2] + [-1] * 13 + [16, 17, 18, 19]


def _store_regions(d: Delayed) -> list[tuple[slice, ...]]:
    """The region each write task of a store(..., compute=False) stores into."""
    from xsched.array.store import _write

    return [t.args[2] for t in d.__xsched_graph__().values() if getattr(t, "func", None) is _write]


def test_store_without_a_lock_puts_the_blocks_on_a_zarr_arrays_grid(tmp_path):
    """store(compute=False) into a zarr array whose chunks the blocks straddle: two tasks
    writing parts of one chunk each write the whole chunk, and one part was lost (26-40 of
    400 values, on a cluster). The source is rechunked onto the grid; a region too."""
    values = np.arange(400.0).reshape(20, 20)
    z = zarr.create_array(str(tmp_path / "s.zarr"), shape=(20, 20), chunks=(4, 4), dtype="f8", fill_value=-1)
    d = xa.store(xa.from_array(values, chunks=(6, 5)), z, compute=False)
    _no_chunk_written_twice_of(_store_regions(d), (4, 4))
    d.compute()
    np.testing.assert_array_equal(z[:], values)
    region = (slice(3, 16), slice(0, 20))
    d = xa.store(xa.from_array(values[:13], chunks=(5, 20)), z, regions=region, compute=False)
    _no_chunk_written_twice_of(_store_regions(d), (4, 4))
    assert sorted({r[0].start for r in _store_regions(d)}) == [3, 4, 8, 12]
    # a lock given: the blocks as they are (the lock keeps the writes apart)
    locked = xa.store(xa.from_array(values, chunks=(6, 5)), z, lock=_SharedLock(), compute=False)
    assert sorted({r[0].start for r in _store_regions(locked)}) == [0, 6, 12, 18]


class _SharedLock:
    """A lock that pickles (what store(compute=False) needs of one), for the graph's sake."""

    def acquire(self):
        return True

    def release(self):
        pass


def test_appending_grows_the_array_and_writes_at_its_end(tmp_path):
    path = str(tmp_path / "a.zarr")
    frames = np.arange(7 * 3 * 2).reshape(7, 3, 2)
    xa.to_zarr(xa.from_array(frames[:5], chunks=(3, 3, 2)), path)  # 5 frames: chunk 1 half full
    for piece in (frames[5:6], frames[6:7]):
        d = xa.to_zarr(xa.from_array(piece, chunks=(1, 3, 2)), path, append_dim=0, compute=False)
        _no_chunk_written_twice(d, (3, 3, 2))
        d.compute()
    more = np.arange(100, 100 + 7 * 3 * 2).reshape(7, 3, 2)
    d = xa.to_zarr(xa.from_array(more, chunks=(4, 3, 2)), path, append_dim=-3, compute=False)
    _no_chunk_written_twice(d, (3, 3, 2))  # blocks at 7 and 11 would share chunk 3 (frames 9-11)
    d.compute()
    z = zarr.open_array(path, mode="r")
    assert z.shape == (14, 3, 2) and z.chunks == (3, 3, 2)
    np.testing.assert_array_equal(z[:], np.concatenate([frames, more]))
    np.testing.assert_array_equal(xa.from_zarr(path).compute(), z[:])


def test_region_and_append_errors_name_what_is_wrong(tmp_path):
    path = str(tmp_path / "e.zarr")
    xa.to_zarr(xa.zeros((4, 6), chunks=2, dtype="i4"), path)
    x = xa.ones((2, 6), chunks=2, dtype="i4")
    with pytest.raises(ValueError, match=r"along axis 0 .*length 4.* covers 3 .*has 2 there"):
        xa.to_zarr(x, path, region=(slice(0, 3),))
    with pytest.raises(ValueError, match="step 2"):
        xa.to_zarr(x, path, region=(slice(0, 4, 2),))
    with pytest.raises(TypeError, match="a slice per axis"):
        xa.to_zarr(x, path, region=(0, slice(None)))
    with pytest.raises(ValueError, match=r"along axis 1 the stored array has 6, the appended one 5"):
        xa.to_zarr(xa.ones((2, 5), chunks=2, dtype="i4"), path, append_dim=0)
    with pytest.raises(ValueError, match="not both"):
        xa.to_zarr(x, path, region=(slice(0, 2),), append_dim=0)
    with pytest.raises(ValueError, match=r"overwrite=True.*keeps its settings"):
        xa.to_zarr(x, path, append_dim=0, overwrite=True)
    with pytest.raises(TypeError, match=r"holds int32.*float64.*astype\('int32'\)"):
        xa.to_zarr(xa.ones((2, 6), chunks=2), path, append_dim=0)
    with pytest.raises(ValueError, match="append_dim=2 is not an axis"):
        xa.to_zarr(x, path, append_dim=2)
    with pytest.raises(FileNotFoundError, match="no zarr array"):
        xa.to_zarr(x, str(tmp_path / "none.zarr"), append_dim=0)
    assert zarr.open_array(path, mode="r").shape == (4, 6)  # nothing grew on the way
    assert zarr.open_array(path, mode="r")[:].sum() == 0


hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies


@hypothesis.settings(max_examples=40, deadline=None)
@hypothesis.given(data=st.data())
def test_any_region_of_any_grid_equals_numpy_and_no_chunk_has_two_writers(tmp_path_factory, data):
    n = data.draw(st.integers(1, 30), label="stored length")
    unit = data.draw(st.integers(1, 8), label="stored chunk")
    start = data.draw(st.integers(0, n - 1), label="region start")
    stop = data.draw(st.integers(start + 1, n), label="region stop")
    block = data.draw(st.integers(1, 9), label="written block")
    path = str(tmp_path_factory.mktemp("h") / "h.zarr")
    zarr.create_array(path, shape=(n, 2), chunks=(unit, 2), dtype="i8")[:] = -1
    values = np.arange((stop - start) * 2).reshape(-1, 2)
    d = xa.to_zarr(xa.from_array(values, chunks=(block, 2)), path, region=(slice(start, stop),),
                   compute=False)
    _no_chunk_written_twice(d, (unit, 2))
    d.compute()
    expected = np.full((n, 2), -1)
    expected[start:stop] = values
    np.testing.assert_array_equal(zarr.open_array(path, mode="r")[:], expected)


def test_a_store_region_open_at_its_end_must_fit_the_target():
    x = xa.arange(50.0, chunks=10)
    target = np.zeros(60)
    with pytest.raises(ValueError, match=r"spans 45 elements on axis 0 but the source has 50"):
        xa.store(x, target, regions=(slice(15, None),))
    assert not target.any()  # (refused before a block was written)
    xa.store(x, target, regions=(slice(10, None),))
    assert target[10:].tolist() == list(range(50))


def test_only_writes_of_part_of_a_stored_chunk_take_the_array_s_lock():
    from xsched.array.store import partial_chunks_lock

    assert partial_chunks_lock(("/data/a.zarr",), (slice(10, 20), slice(0, 7)), (30, 7), (10, 5)).__class__.__name__ == \
        "nullcontext"  # (whole chunks, the last one ending with the array)
    lock = partial_chunks_lock(("/data/a.zarr",), (slice(5, 10),), (30,), (10,))
    assert lock is partial_chunks_lock(("/data/a.zarr",), (slice(25, 30),), (30,), (10,))  # one lock per array
    assert lock is not partial_chunks_lock(("/data/b.zarr",), (slice(5, 10),), (30,), (10,))
    with lock:
        assert lock.locked()


def test_writing_into_a_narrower_integer_array_is_refused(tmp_path):
    """int64 into int8 passed the same-kind check and wrapped 300 round to 44."""
    path = str(tmp_path / "narrow.zarr")
    xa.to_zarr(xa.zeros(3, chunks=3, dtype="i1"), path)
    with pytest.raises(TypeError, match=r"holds int8, which int64 does not cast to safely; write arr.astype\('int8'\)"):
        xa.to_zarr(xa.from_array(np.array([300, 1000, -500])), path, region=(slice(0, 3),))
    xa.to_zarr(xa.from_array(np.array([1, -2, 3], dtype="i1")), path, region=(slice(0, 3),))
    floats = str(tmp_path / "f4.zarr")
    xa.to_zarr(xa.zeros(3, chunks=3, dtype="f4"), floats)
    xa.to_zarr(xa.from_array(np.array([0.5, 1.5, 2.5])), floats, region=(slice(0, 3),))  # (floats narrow, as NumPy)
    assert xa.from_zarr(floats).compute().tolist() == [0.5, 1.5, 2.5]
