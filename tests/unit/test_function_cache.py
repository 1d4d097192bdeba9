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


def test_specs_of_notebook_code_load_where_main_differs(tmp_path):
    """A task spec naming a class or function of ``__main__`` (a notebook) travels by value:
    it loads in a process whose ``__main__`` has neither, and ordinary specs stay plain pickle."""
    import subprocess
    import sys

    made = tmp_path / "specs.bin"
    subprocess.run([sys.executable, "-c", f"""
import pickle
from xsched.graph.spec import Ref, Task
from xsched.protocol.tasks import dumps_task
class Point:
    def __init__(self, x): self.x = x
def scale(p, k): return p.x * k
def twice(f, v): return f(v) * 2
specs = [dumps_task(Task(scale, (Point(3), 5))), dumps_task(Task(twice, (lambda v: v + 1, 4))),
         dumps_task(Task(max, (Task(scale, (Point(2), 2)), 1))), dumps_task(Task(max, (Ref("k-1"), 7)))]
open({str(made)!r}, "wb").write(pickle.dumps(specs))
"""], check=True)
    out = subprocess.run([sys.executable, "-c", f"""
import pickle
from xsched.protocol.tasks import loads_task
specs = pickle.loads(open({str(made)!r}, "rb").read())
print([loads_task(s).run({{"k-1": 9}}) for s in specs], b"cloudpickle" in specs[3])
"""], check=True, capture_output=True, text=True).stdout
    assert out.split() == ["[15,", "10,", "4,", "9]", "False"]
