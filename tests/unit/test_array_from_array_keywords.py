"""from_array's keywords a dask notebook passes: lock (a lock per worker process, or the
user's own if it can travel), asarray, inline_array (the source under one key of its
own), getitem and meta, each checked when the array is built."""

from __future__ import annotations

import pickle
import threading

import cloudpickle
import numpy as np
import pytest

import xsched.array as xa
from xsched.graph.spec import Ref

X = np.arange(24.0).reshape(4, 6)


class Reader:
    """A sliceable object that is not a NumPy array (as a file variable is)."""

    def __init__(self, data):
        self.data, self.shape, self.dtype = data, data.shape, data.dtype

    def __getitem__(self, index):
        return self.data[index].tolist()  # (not an array: from_array makes it one)


ENTERED: list[int] = []


class CountingLock:
    """A lock of the user's own that pickles (it holds no OS lock)."""

    def acquire(self):
        ENTERED.append(1)
        return True

    def release(self):
        pass


class Marked(np.ndarray):
    """An ndarray subclass, to see whether blocks are kept as the source gives them."""


class MarkedReader(Reader):
    def __getitem__(self, index):
        return self.data[index].view(Marked)


def test_lock_true_is_one_lock_per_process_that_travels_by_name():
    x = xa.from_array(Reader(X), chunks=2, lock=True)
    np.testing.assert_array_equal(x.compute(), X)
    locks = {t.args[2] for t in x.__xsched_graph__().values() if len(t.args) > 2}
    assert len(locks) == 1
    lock = locks.pop()
    back = pickle.loads(cloudpickle.dumps(lock))
    assert back.name == lock.name == x.name and back._lock() is lock._lock()
    assert xa.from_array(Reader(X), chunks=2, lock=True).name != x.name


def test_a_users_lock_is_taken_for_each_read_and_one_that_cannot_travel_is_refused():
    ENTERED.clear()
    x = xa.from_array(Reader(X), chunks=(2, 3), lock=CountingLock())
    np.testing.assert_array_equal(x.compute(), X)
    assert len(ENTERED) == 4
    with pytest.raises(TypeError, match=r"^from_array: lock=<unlocked _thread.lock object .*> cannot travel "
                                        r"to the workers .*Pass lock=True for one lock per worker process"):
        xa.from_array(Reader(X), chunks=2, lock=threading.Lock())
    with pytest.raises(TypeError, match=r"^from_array: lock='yes' is neither a bool nor a lock"):
        xa.from_array(Reader(X), chunks=2, lock="yes")


def test_asarray_false_keeps_the_blocks_the_source_gives():
    x = xa.from_array(MarkedReader(X), chunks=2, asarray=False)
    graph = x.__xsched_graph__()
    block = graph[next(k for k in graph if k.startswith(x.name))].run({})
    assert type(block) is Marked
    kept = xa.from_array(MarkedReader(X), chunks=2)  # (default: NumPy blocks)
    graph = kept.__xsched_graph__()
    assert type(graph[next(iter(graph))].run({})) is np.ndarray
    np.testing.assert_array_equal(x.compute(), X)


def test_inline_array_false_keeps_the_source_once_under_its_own_key():
    reader = Reader(X)
    x = xa.from_array(reader, chunks=2, inline_array=False)
    graph = x.__xsched_graph__()
    source_key = f"{x.name}-source"
    assert source_key in graph and len(graph) == 1 + 2 * 3
    reads = [t for k, t in graph.items() if k != source_key]
    assert all(t.args[0] == Ref(source_key) for t in reads)
    np.testing.assert_array_equal(x.compute(), X)
    inline = xa.from_array(reader, chunks=2).__xsched_graph__()
    assert len(inline) == 6 and all(t.args[0] is reader for t in inline.values())
    # numpy data is cut now either way: there is no source to keep
    assert len(xa.from_array(X, chunks=2, inline_array=False).__xsched_graph__()) == 6


def test_getitem_reads_each_block_for_objects_and_numpy_arrays():
    twice = lambda a, index: np.asarray(a[index]) * 2  # noqa: E731
    for source in (Reader(X), X):
        x = xa.from_array(source, chunks=(3, 4), getitem=twice)
        np.testing.assert_array_equal(x.compute(), X * 2)
    with pytest.raises(TypeError, match=r"^from_array: getitem=3 is not callable"):
        xa.from_array(X, chunks=2, getitem=3)


def test_meta_is_a_numpy_array_of_the_sources_dtype():
    assert xa.from_array(X, chunks=2, meta=np.empty((0, 0), X.dtype)).dtype == X.dtype
    with pytest.raises(ValueError, match=r"^from_array: meta's dtype float32 is not x's float64, .*"
                                         r"from_array\(x\).astype\('float32'\)"):
        xa.from_array(X, chunks=2, meta=np.empty(0, "f4"))
    with pytest.raises(NotImplementedError, match=r"^from_array: meta=list; xsched arrays hold NumPy blocks"):
        xa.from_array(X, chunks=2, meta=[])
    assert xa.from_array(X, chunks=2, fancy=False).shape == X.shape


def test_blocks_read_otherwise_have_another_name_and_getitem_gets_the_h5py_dataset(tmp_path):
    plain = xa.from_array(X, chunks=2)
    tenfold = xa.from_array(X, chunks=2, getitem=lambda a, index: a[index] * 10)
    assert plain.name != tenfold.name  # (one name would have merged them into one graph key)
    np.testing.assert_array_equal((plain + tenfold).compute(), X * 11)
    h5py = pytest.importorskip("h5py")
    path = str(tmp_path / "data.h5")
    with h5py.File(path, "w") as f:
        f["d"] = X
    with h5py.File(path, "r") as f:
        as_f4 = xa.from_array(f["d"], chunks=2, getitem=lambda d, index: d.astype("f4")[index])
        np.testing.assert_array_equal(as_f4.compute(), X)
        assert xa.from_array(f["d"], chunks=2, lock=np.bool_(True)).compute().sum() == X.sum()
