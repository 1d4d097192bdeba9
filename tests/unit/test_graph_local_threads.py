"""``scheduler="threads"``: a graph run on a pool of threads of this process
(xsched/graph/local.py), against the one-task-at-a-time run: the same values, at most
``num_workers`` tasks at once, tasks truly in parallel, intermediates freed as they go, the
first error raised naming its task; and the collections' ``compute(scheduler="threads")``."""

from __future__ import annotations

import random
import threading
from operator import add

import numpy as np
import pandas as pd
import pytest

import xsched
import xsched.array as xa
import xsched.bag as xb
import xsched.dataframe as xd
from xsched.graph.local import get, pool_size
from xsched.graph.spec import Ref, Task


def _random_graph(seed: int, n: int = 60) -> dict:
    rng = random.Random(seed)
    graph: dict = {"k0": 1}
    for i in range(1, n):
        inputs = rng.sample(range(i), min(i, rng.randint(0, 3)))
        graph[f"k{i}"] = Task(sum, ([Ref(f"k{j}") for j in inputs] + [i],))
    return graph


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("num_workers", [2, 3, 8])
def test_the_same_values_as_one_task_at_a_time(seed, num_workers):
    graph = _random_graph(seed)
    keys = ["k59", ["k10", "k33"], "k0"]
    assert get(graph, keys, optimize=False, num_workers=num_workers) == get(graph, keys, optimize=False)
    assert get(graph, keys, num_workers=num_workers) == get(graph, keys)


def test_tasks_run_at_once_but_never_more_than_num_workers():
    lock, now, most = threading.Lock(), [0], [0]
    both = threading.Barrier(2, timeout=20)  # (two tasks meet only if they run together)

    def work(i, meet=False):
        with lock:
            now[0] += 1
            most[0] = max(most[0], now[0])
        if meet:
            both.wait()
        with lock:
            now[0] -= 1
        return i

    graph = {f"w{i}": Task(work, (i, i < 2)) for i in range(20)}
    graph["total"] = Task(sum, ([Ref(f"w{i}") for i in range(20)],))
    assert get(graph, "total", optimize=False, num_workers=2) == sum(range(20))
    assert most[0] == 2


class Big:
    live = 0
    most = 0
    lock = threading.Lock()

    def __init__(self) -> None:
        with Big.lock:
            Big.live += 1
            Big.most = max(Big.most, Big.live)

    def __del__(self) -> None:
        with Big.lock:
            Big.live -= 1


def test_intermediates_are_freed_as_soon_as_nothing_needs_them():
    Big.live = Big.most = 0
    graph = {}
    for i in range(40):  # forty chains: a big value, then a small one made of it
        graph[f"big{i}"] = Task(lambda i: Big(), (i,))
        graph[f"small{i}"] = Task(lambda b: 1, (Ref(f"big{i}"),))
    graph["total"] = Task(sum, ([Ref(f"small{i}") for i in range(40)],))
    assert get(graph, "total", optimize=False, num_workers=2) == 40
    assert Big.most <= 6 and Big.live == 0  # (depth first: a few at a time, not forty)


def test_the_first_error_is_raised_naming_its_task():
    def boom(_):
        raise ZeroDivisionError("boom")

    graph = {"a": 1, "b": Task(boom, (Ref("a"),)), "c": Task(add, (Ref("b"), 1)), "d": Task(add, (Ref("a"), 1))}
    with pytest.raises(ZeroDivisionError, match="boom") as err:
        get(graph, ["c", "d"], optimize=False, num_workers=2)
    assert any("raised by task 'b'" in note for note in err.value.__notes__)


def test_collections_compute_on_threads_and_other_names_are_refused():
    data = np.random.default_rng(0).random((40, 30))
    x = xa.from_array(data, chunks=7)
    np.testing.assert_allclose((x @ x.T).sum(axis=0).compute(scheduler="threads"), (data @ data.T).sum(axis=0))
    assert xsched.compute(x.max(), scheduler="threads", num_workers=3)[0] == data.max()
    frame = xd.from_pandas(pd.DataFrame({"a": range(100), "b": np.arange(100) % 7}), npartitions=5)
    pd.testing.assert_series_equal(frame.groupby("b").a.sum().compute(scheduler="threads"),
                                   frame.compute().groupby("b").a.sum())
    assert xb.from_sequence(range(10), npartitions=3).map(lambda v: v * 2).sum().compute(scheduler="threads") == 90
    assert xsched.delayed(sum)([1, 2]).compute(scheduler="threads") == 3
    where = xsched.delayed(lambda: threading.current_thread().name, pure=False)
    assert where().compute(num_workers=2).startswith("xsched-local")  # (num_workers alone: threads, as arrays')
    assert where().compute() == threading.current_thread().name
    assert x.sum().persist(scheduler="threads").compute() == pytest.approx(data.sum())
    with pytest.raises(ValueError, match="for processes start a LocalCluster"):
        x.sum().compute(scheduler="processes")
    assert pool_size("threads", 3) == 3 and pool_size("threading") >= 1 and pool_size("sync", 3) is None
    with pytest.raises(ValueError, match="num_workers must be a number of threads"):
        x.sum().compute(scheduler="threads", num_workers=0)
