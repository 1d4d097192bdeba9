"""The worker's cache of unpickled functions is bounded by bytes, not only by entries."""

import pickle

import cloudpickle
import numpy as np

from xsched.protocol.tasks import _FunctionCache


def test_closures_with_large_captures_do_not_pile_up():
    cache = _FunctionCache(max_entries=1000, max_bytes=10 * 2**20)
    blobs = []
    for i in range(20):
        data = np.full(2**18, i, dtype=np.float64)  # 2 MiB captured by each closure
        blobs.append(cloudpickle.dumps(lambda: float(data[0]), protocol=5))
    for i, blob in enumerate(blobs):
        assert cache.get(blob)() == float(i)
    assert cache.nbytes <= 10 * 2**20 and len(cache) <= 5  # 20 x 2 MiB would be 40 MiB
    assert cache.get(blobs[-1]) is cache.get(blobs[-1])  # recent ones are kept and reused


def test_entry_bound_and_least_recently_used_order():
    cache = _FunctionCache(max_entries=3, max_bytes=2**30)
    blobs = [pickle.dumps(f) for f in (len, abs, min, max)]
    first = cache.get(blobs[0])
    cache.get(blobs[1]), cache.get(blobs[2])
    assert cache.get(blobs[0]) is first  # touched: now the most recent
    cache.get(blobs[3])  # evicts blobs[1], the least recently used
    assert len(cache) == 3 and blobs[1] not in cache._items and blobs[0] in cache._items


def test_a_blob_bigger_than_the_budget_is_not_kept():
    cache = _FunctionCache(max_entries=10, max_bytes=1000)
    data = np.zeros(10_000)
    blob = cloudpickle.dumps(lambda: data.size, protocol=5)
    assert cache.get(blob)() == 10_000 and len(cache) == 0
