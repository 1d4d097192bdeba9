"""The user-facing API of the engine, against real scheduler and worker processes.

Every call in the engine issue's "What a user can do" block: futures, map, gather,
scatter, delayed, compute/persist, as_completed, wait, run, run_on_scheduler,
scheduler_info, wait_for_workers, pure keys, reference counting, the asynchronous
client, LocalCluster scale/close and processes=False.
"""

from __future__ import annotations

import asyncio
import gc
import os
import re
import threading
import traceback
import urllib.parse

import numpy as np
import psutil
import pytest

import xsched
from xsched import Client, Executor, LocalCluster, as_completed, delayed, wait
from xsched.errors import FutureCancelledError

from tests.support.helpers import Gate, pid_gone, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(60)]


def inc(x):
    return x + 1


def add(x, y):
    return x + y


def where():
    from xsched.worker.server import get_worker

    return get_worker().address


def record(tag):
    """Append ``tag`` to a list kept on the worker running the task (execution order)."""
    from xsched.worker.server import get_worker

    get_worker().extensions.setdefault("order", []).append(tag)
    return tag


def scheduler_has(client, key):
    return client.run_on_scheduler(lambda scheduler, k=key: k in scheduler.tasks)


def worker_addresses(client):
    return sorted(client.scheduler_info()["workers"])


# ---------------------------------------------------------------------- futures
def test_submit_result_and_status(client):
    fut = client.submit(inc, 1)
    assert fut.result(timeout=30) == 2
    assert fut.done() and fut.status == "finished"
    assert fut.type == "int"
    assert fut.exception() is None and fut.traceback() is None
    assert "finished" in repr(fut) and fut.key in repr(fut)


def test_result_timeout_then_result(client, tmp_path):
    gate = Gate(tmp_path)
    fut = client.submit(gate.wait, 7)
    with pytest.raises(TimeoutError, match="still pending"):
        fut.result(timeout=0.2)
    with pytest.raises(TimeoutError):
        fut.exception(timeout=0.05)
    assert not fut.done() and fut.status == "pending"
    gate.open()
    assert fut.result(timeout=30) == 7
    assert fut.done()


def test_exception_and_traceback_accessors(client):
    def fails_loudly(x):
        raise ValueError(f"bad value {x}")

    fut = client.submit(fails_loudly, 3)
    exc = fut.exception(timeout=30)
    assert isinstance(exc, ValueError) and "bad value 3" in str(exc)
    assert fut.status == "error" and fut.done()
    tb = fut.traceback()  # a traceback object, as dask's, for the traceback module
    assert [frame.name for frame in traceback.extract_tb(tb)] == ["fails_loudly"]
    assert "ValueError: bad value 3" in str(exc.__cause__)
    assert "bad value 3" in repr(fut)


def divide_by_the_last(xs):
    return sum(xs) / xs[-1]


def test_a_rebuilt_traceback_shows_the_source_line_without_column_marks(client):
    """The function's file is readable here: its line shows, and no column marks of the
    stub that stands for the remote frame (they fell under the wrong columns)."""
    fut = client.submit(divide_by_the_last, [1, 2, 0])
    fut.exception(timeout=30)
    shown = "".join(traceback.format_tb(fut.traceback()))
    assert "return sum(xs) / xs[-1]" in shown and __file__ in shown
    assert "^" not in shown and "~" not in shown


def test_cancel_pending_future(client, tmp_path):
    gate = Gate(tmp_path)
    blocker = client.submit(gate.wait, 1, pure=False)
    blocked = client.submit(inc, blocker)
    assert not blocked.done()
    assert not blocked.cancelled()
    blocked.cancel()
    assert blocked.status == "cancelled" and blocked.done() and blocked.cancelled()
    with pytest.raises(FutureCancelledError):
        blocked.result(timeout=5)
    assert isinstance(blocked.exception(timeout=5), FutureCancelledError)
    key = blocked.key
    wait_until(lambda: not scheduler_has(client, key), msg=f"scheduler forgets cancelled {key}")
    gate.open()
    assert blocker.result(timeout=30) == 1


def test_a_forced_cancel_cancels_another_clients_future(client, cluster, tmp_path):
    gate = Gate(tmp_path)

    def wanted_by(scheduler, key="shared-gate"):
        ts = scheduler.state.tasks.get(key)
        return 0 if ts is None else len(ts.who_wants)

    try:
        with Client(cluster, set_as_default=False) as other:
            mine = client.submit(gate.wait, "x", key="shared-gate")
            theirs = other.submit(gate.wait, "x", key="shared-gate")
            wait_until(lambda: client.run_on_scheduler(wanted_by) == 2, msg="both clients want the key")
            mine.cancel()
            wait_until(lambda: client.run_on_scheduler(wanted_by) == 1, msg="the plain cancel is in")
            assert mine.cancelled() and not theirs.done()  # (the other client still wants it)
            again = client.submit(gate.wait, "x", key="shared-gate")
            wait_until(lambda: client.run_on_scheduler(wanted_by) == 2, msg="wanted by both again")
            client.cancel([again], force=True)
            wait_until(lambda: theirs.cancelled(), msg="the other client's future cancelled")
            assert "force=True" in theirs._state.text and client.run_on_scheduler(wanted_by) == 0
    finally:
        gate.open()


def test_cancel_then_resubmit_the_same_call(client, tmp_path):
    gate = Gate(tmp_path)
    blocker = client.submit(gate.wait, 2, pure=False)
    first = client.submit(inc, blocker)
    first.cancel()
    again = client.submit(inc, blocker)  # same key as the cancelled one
    assert again.key == first.key and again.status == "pending"
    gate.open()
    assert again.result(timeout=30) == 3


def test_numpy_priority_is_accepted(client):
    assert client.submit(inc, 41, priority=np.int64(3), pure=False).result(timeout=30) == 42


def test_add_done_callback(client, tmp_path):
    gate = Gate(tmp_path)
    called = []
    done = threading.Event()

    def cb(f):
        called.append((f.key, f.status))
        done.set()

    fut = client.submit(gate.wait, 5, pure=False)
    fut.add_done_callback(cb)
    assert not called
    gate.open()
    assert done.wait(30)
    assert called == [(fut.key, "finished")]
    # a callback added after completion runs at once
    late = []
    fut.add_done_callback(lambda f: late.append(f.result()))
    wait_until(lambda: late == [5])


def test_keys_are_named_and_deterministic(client):
    a = client.submit(inc, 10)
    b = client.submit(inc, 10)
    c = client.submit(inc, 11)
    assert re.fullmatch(r"inc-[0-9a-f]+", a.key), a.key
    assert a.key == b.key and a.key != c.key
    assert a == b
    # one task on the scheduler for the two identical calls
    assert client.gather([a, b, c]) == [11, 11, 12]
    n = client.run_on_scheduler(lambda scheduler, k=a.key: sum(1 for t in scheduler.tasks if t == k))
    assert n == 1
    # pure=False: a new task each call
    d = client.submit(inc, 10, pure=False)
    e = client.submit(inc, 10, pure=False)
    assert len({a.key, d.key, e.key}) == 3
    assert d.key.startswith("inc-") and e.key.startswith("inc-")
    assert client.gather([d, e]) == [11, 11]
    # a lambda is named too
    f = client.submit(lambda x: x * 2, 4)
    assert f.key.startswith("lambda-") and f.result(timeout=30) == 8


def test_submit_explicit_key(client):
    fut = client.submit(add, 1, 2, key="my-key")
    assert fut.key == "my-key"
    assert fut.result(timeout=30) == 3
    assert scheduler_has(client, "my-key")


def test_submit_workers_restriction(client):
    addrs = worker_addresses(client)
    assert len(addrs) == 2
    for addr in addrs:
        futs = [client.submit(where, pure=False, workers=[addr]) for _ in range(4)]
        assert client.gather(futs) == [addr] * 4
    # a worker's name works as well as its address
    info = client.scheduler_info()["workers"]
    name = info[addrs[1]]["name"]
    assert client.submit(where, pure=False, workers=[name]).result(timeout=30) == addrs[1]


def test_submit_priority_orders_queued_tasks(client, tmp_path):
    addr = worker_addresses(client)[0]
    client.run(lambda worker: worker.extensions.pop("order", None), workers=[addr])
    gate = Gate(tmp_path)
    blocker = client.submit(gate.wait, None, pure=False, workers=[addr])
    wait_until(lambda: client.run_on_scheduler(lambda scheduler, k=blocker.key: scheduler.tasks[k].state)
               == "processing")
    low = [client.submit(record, f"low-{i}", workers=[addr], priority=-5, pure=False) for i in range(3)]
    high = [client.submit(record, f"high-{i}", workers=[addr], priority=10, pure=False) for i in range(3)]
    mid = client.submit(record, "mid", workers=[addr], pure=False)
    wait_until(lambda: client.run_on_scheduler(lambda scheduler: scheduler.state.n_queued) >= 7,
               msg="seven tasks queued behind the blocker")
    gate.open()
    client.gather(low + high + [mid])
    order = client.run(lambda worker: worker.extensions.get("order"), workers=[addr])[addr]
    assert order[:3] == ["high-0", "high-1", "high-2"]
    assert order[3] == "mid"
    assert order[4:] == ["low-0", "low-1", "low-2"]


# ---------------------------------------------------------------------- map
def test_compute_with_scheduler_sync_runs_here_beside_a_client(client):
    """``scheduler="sync"`` (and ``"threads"``) runs the graph in this process although a
    Client is the default (a debugger stops in the task); ``scheduler=client`` runs it
    there; other names fail when the compute is asked, naming what xsched takes."""
    import os

    import pandas as pd

    import xsched.array as xa
    import xsched.dataframe as xd
    from xsched.graph.delayed import compute, persist

    pid = delayed(os.getpid, pure=False)()
    assert pid.compute(scheduler="sync") == os.getpid() != pid.compute()
    assert compute(pid, scheduler="sync") == (os.getpid(),)
    assert compute(pid, scheduler=client)[0] != os.getpid() != compute(pid, scheduler="distributed")[0]
    (held,) = persist(pid, scheduler="sync")
    assert list(held.__xsched_graph__().values()) == [os.getpid()]  # (the value itself, no future)
    df = xd.from_pandas(pd.DataFrame({"a": range(6)}), npartitions=3)
    pids = df.map_partitions(lambda p: pd.Series([os.getpid()] * len(p)), meta=("pid", "int64"))
    assert set(pids.compute(scheduler="sync")) == {os.getpid()} and os.getpid() not in set(pids.compute())
    assert xa.ones(4, chunks=2).sum().compute(scheduler="single-threaded") == 4.0
    assert set(pids.compute(scheduler="threads")) == {os.getpid()} and df.a.sum().compute(scheduler="threads") == 15
    with pytest.raises(ValueError, match="scheduler='processes' is not one xsched runs on.*LocalCluster"):
        df.a.sum().compute(scheduler="processes")


def test_map_and_gather(client):
    futs = client.map(inc, range(1000))
    assert len(futs) == 1000
    assert client.gather(futs) == list(range(1, 1001))
    assert all(re.fullmatch(r"inc-[0-9a-f]+", f.key) for f in futs[:10])
    assert len({f.key for f in futs}) == 1000
    # deterministic: the same map twice gives the same keys
    again = client.map(inc, range(1000))
    assert [f.key for f in again] == [f.key for f in futs]


def test_map_keywords(client):
    addr = worker_addresses(client)[1]
    futs = client.map(add, [1, 2, 3], [10, 20, 30], key="adder", workers=[addr], priority=3)
    assert all(f.key.startswith("adder-") for f in futs)
    assert client.gather(futs) == [11, 22, 33]
    placed = client.who_has(futs)
    assert all(placed[f.key] == [addr] for f in futs)
    # pure=False: new tasks each time
    a = client.map(inc, [1, 2], pure=False)
    b = client.map(inc, [1, 2], pure=False)
    assert len({f.key for f in a + b}) == 4
    assert client.gather(a + b) == [2, 3, 2, 3]
    # a list of keys
    c = client.map(inc, [5, 6], key=["five", "six"])
    assert [f.key for f in c] == ["five", "six"] and client.gather(c) == [6, 7]
    # keyword arguments are passed to every call
    d = client.map(lambda x, y=0: x + y, [1, 2], y=100)
    assert client.gather(d) == [101, 102]
    with pytest.raises(ValueError, match="2 keys for 3 calls"):
        client.map(inc, [1, 2, 3], key=["a", "b"])


def test_map_futures_as_inputs(client):
    xs = client.map(inc, range(10))
    ys = client.map(inc, xs)
    total = client.submit(sum, ys)
    assert total.result(timeout=30) == sum(range(2, 12))


# ---------------------------------------------------------------------- gather
def test_gather_structures(client):
    a, b, c = client.submit(inc, 1), client.submit(inc, 2), client.submit(inc, 3)
    assert client.gather([a, b, c]) == [2, 3, 4]
    assert client.gather({"x": a, "y": b}) == {"x": 2, "y": 3}
    nested = {"list": [a, (b, c)], "dict": {"inner": [c, "plain", 5]}}
    assert client.gather(nested) == {"list": [2, (3, 4)], "dict": {"inner": [4, "plain", 5]}}
    assert client.gather(a) == 2


# ---------------------------------------------------------------------- scatter
def test_scatter_list_and_dict(client):
    futs = client.scatter([1, 2, 3])
    assert isinstance(futs, list) and len(futs) == 3
    assert client.gather(futs) == [1, 2, 3]
    assert client.submit(sum, futs).result(timeout=30) == 6
    named = client.scatter({"alpha": 10, "beta": 20})
    assert set(named) == {"alpha", "beta"} and named["alpha"].key == "alpha"
    assert client.submit(add, named["alpha"], named["beta"]).result(timeout=30) == 30
    # scattered data is spread over the workers
    holders = {w for ws in client.who_has(futs).values() for w in ws}
    assert holders == set(worker_addresses(client))


def test_scatter_broadcast(client):
    [fut] = client.scatter([{"table": list(range(5))}], broadcast=True)
    assert sorted(client.who_has([fut])[fut.key]) == worker_addresses(client)
    addrs = worker_addresses(client)
    results = client.gather([client.submit(lambda d: sum(d["table"]), fut, workers=[a], pure=False) for a in addrs])
    assert results == [10, 10]


def test_scatter_large_numpy_array(client):
    big = np.ones(10**7)
    [fut] = client.scatter([big])
    assert fut.key.startswith("ndarray-")
    total = client.submit(np.sum, fut)
    assert total.result(timeout=60) == 10**7
    info = client.scheduler_info()["workers"]
    holder = client.who_has([fut])[fut.key][0]
    assert info[holder]["nbytes"] >= big.nbytes
    back = fut.result(timeout=60)
    assert back.shape == big.shape and back.dtype == big.dtype and back.sum() == 10**7


# ---------------------------------------------------------------------- delayed and collections
def test_delayed_compute_persist(client):
    total = delayed(sum)([delayed(inc)(i) for i in range(100)])
    assert total.compute() == 5050
    fut = client.compute(total)
    assert isinstance(fut, xsched.Future)
    assert fut.result(timeout=30) == 5050
    persisted = client.persist(total)
    assert isinstance(persisted, xsched.Delayed)
    assert persisted.key == total.key
    wait_until(lambda: client.run_on_scheduler(
        lambda scheduler, k=total.key: k in scheduler.tasks and scheduler.tasks[k].state == "memory"),
        msg="persisted key in memory")
    assert persisted.compute() == 5050


def test_compute_list_sync(client):
    d1 = delayed(inc)(1)
    d2 = delayed(add)(d1, 10)
    assert client.compute([d1, d2], sync=True) == [2, 12]
    f1, f2 = client.compute([d1, d2])
    assert (f1.result(timeout=30), f2.result(timeout=30)) == (2, 12)


def test_xsched_compute_uses_the_default_client(client):
    a = delayed(inc)(1)
    b = delayed(add)(a, 100)
    # where() runs only inside a worker task (it raises ValueError in this process), and
    # returns the address of the worker that ran it: one of this client's cluster
    x, y, ran_on = xsched.compute(a, b, delayed(where, pure=False)())
    assert (x, y) == (2, 102)
    assert ran_on in worker_addresses(client), (ran_on, worker_addresses(client))
    assert xsched.compute({"b": b}, "as is") == ({"b": 102}, "as is")


def test_delayed_pure_keys(client):
    assert delayed(inc, pure=True)(1).key == delayed(inc, pure=True)(1).key
    assert client.compute(delayed(inc, pure=True)(41), sync=True) == 42


# ---------------------------------------------------------------------- waiting
def test_as_completed(client, tmp_path):
    futs = client.map(inc, range(20))
    seen = [f for f in as_completed(futs)]
    assert sorted(f.key for f in seen) == sorted(f.key for f in futs)
    assert all(f.done() for f in seen)
    pairs = list(as_completed(client.map(inc, range(5)), with_results=True))
    assert sorted(r for _, r in pairs) == [1, 2, 3, 4, 5]
    # the first to finish comes first; more can be added while iterating
    gate = Gate(tmp_path)
    slow = client.submit(gate.wait, "slow", pure=False)
    fast = client.submit(inc, 1000)
    ac = as_completed([slow, fast])
    first = next(ac)
    assert first is fast or first.key == fast.key
    ac.add(client.submit(inc, 2000))
    assert next(ac).result() == 2001
    gate.open()
    assert next(ac).result() == "slow"
    with pytest.raises(StopIteration):
        next(ac)
    batches = list(as_completed(client.map(inc, range(30, 40))).batches())
    assert sorted(f.result() for batch in batches for f in batch) == list(range(31, 41))
    wait(futs)
    together = as_completed(futs, with_results=True).next_batch()  # (all done: one batch, as pairs)
    assert sorted(r for _, r in together) == list(range(1, 21))


def test_as_completed_errors(client):
    def boom(x):
        raise KeyError(x)

    futs = [client.submit(boom, 1), client.submit(inc, 1)]
    results = list(as_completed(futs, with_results=True, raise_errors=False))
    assert len(results) == 2
    values = [r for _, r in results]
    assert 2 in values and any(isinstance(r, KeyError) for r in values)


def test_wait(client, tmp_path):
    futs = client.map(inc, range(10))
    done, not_done = wait(futs, timeout=30)
    assert len(done) == 10 and not not_done
    gate = Gate(tmp_path)
    slow = client.submit(gate.wait, 1, pure=False)
    fast = client.submit(inc, 99)
    done, not_done = wait([slow, fast], return_when="FIRST_COMPLETED", timeout=30)
    assert fast in done and slow in not_done
    with pytest.raises(TimeoutError, match="still pending"):
        wait([slow], timeout=0.2)
    gate.open()
    done, not_done = wait(slow, timeout=30)
    assert done == {slow}
    with pytest.raises(ValueError, match="return_when"):
        wait([slow], return_when="SOMETIMES")


# ---------------------------------------------------------------------- run functions
def test_run_on_workers(client):
    pids = client.run(os.getpid)
    addrs = worker_addresses(client)
    assert sorted(pids) == addrs
    assert len(set(pids.values())) == 2 and os.getpid() not in pids.values()
    assert all(psutil.pid_exists(p) for p in pids.values())
    info = client.scheduler_info()["workers"]
    assert {a: info[a]["pid"] for a in addrs} == pids
    # a `worker` parameter receives the live Worker
    assert client.run(lambda worker: worker.address) == {a: a for a in addrs}
    assert client.run(lambda worker: worker.nthreads) == {a: 1 for a in addrs}
    # arguments, keyword arguments and one worker only
    assert client.run(add, 1, y=2, workers=[addrs[0]]) == {addrs[0]: 3}


def test_run_without_waiting_returns_at_once_and_logs_a_failure(client, tmp_path, caplog):
    def mark(worker, path):
        open(os.path.join(path, worker.address.replace("/", "_").replace(":", "_")), "w").close()

    assert client.run(mark, path=str(tmp_path), wait=False) is None
    wait_until(lambda: len(os.listdir(tmp_path)) == 2, msg="both workers ran it")

    def broken():
        raise KeyError("nope")

    with caplog.at_level("WARNING", logger="xsched.client"):
        assert client.run(broken, wait=False) is None
        wait_until(lambda: "client.run(broken, wait=False) failed: KeyError" in caplog.text, msg="the failure logged")


def test_run_raises_remote_error(client):
    def broken():
        raise RuntimeError("nope from run")

    with pytest.raises(RuntimeError, match="nope from run") as info:
        client.run(broken)
    assert "broken" in str(info.value.__cause__)


def test_run_on_scheduler(client):
    assert client.run_on_scheduler(lambda: 1) == 1
    assert client.run_on_scheduler(add, 2, y=3) == 5
    assert client.run_on_scheduler(lambda scheduler: scheduler.address) == client.scheduler_address
    pid = client.run_on_scheduler(os.getpid)
    assert pid != os.getpid() and pid not in client.run(os.getpid).values()

    async def coro(scheduler):
        return len(scheduler.workers)

    assert client.run_on_scheduler(coro) == 2


def test_scheduler_info(client):
    info = client.scheduler_info()
    assert info["address"] == client.scheduler_address
    workers = info["workers"]
    assert len(workers) == 2
    assert sorted(str(w["name"]) for w in workers.values()) == ["0", "1"]
    for addr, w in workers.items():
        assert addr.startswith("tcp://127.0.0.1:")
        assert w["nthreads"] == 1
        assert isinstance(w["pid"], int) and psutil.pid_exists(w["pid"])
        assert w["memory_limit"] > 0
        assert set(w["memory"]) >= {"rss", "managed", "unmanaged", "spilled"}
    # dask's totals and services
    assert info["n_workers"] == 2 and info["total_threads"] == 2
    assert info["total_memory"] == sum(w["memory_limit"] for w in workers.values())
    link = client.dashboard_link
    assert info["services"] == ({"dashboard": urllib.parse.urlsplit(link).port} if link else {})
    assert client.scheduler_info(n_workers=1)["n_workers"] == 2  # (all of them, as dask's, however many shown)
    # memory figures arrive with heartbeats: the process's RSS is real
    wait_until(lambda: all(w["memory"]["rss"] > 10_000_000
                           for w in client.scheduler_info()["workers"].values()), msg="heartbeat memory figures")
    assert client.nthreads() == {a: 1 for a in workers}


def test_wait_for_workers(client):
    client.wait_for_workers(2, timeout=30)
    client.wait_for_workers(1)
    with pytest.raises(TimeoutError, match="workers"):
        client.wait_for_workers(3, timeout=0.3)


def test_executor_alias(client):
    assert Executor is Client


def test_repr_of_client(client):
    r = repr(client)
    assert client.scheduler_address in r and "workers=2" in r and "threads=2" in r


# ---------------------------------------------------------------------- futures travel
def test_future_pickled_into_task(client):
    x = client.submit(inc, 41)

    def use_future():
        return x.result() + 1  # the closure carries the Future, pickled by key

    assert client.submit(use_future, pure=False).result(timeout=30) == 43


def test_future_inside_container_argument(client):
    x = client.submit(inc, 1)

    class Box:
        def __init__(self, fut):
            self.fut = fut

    assert client.submit(lambda box: box.fut.result() * 10, Box(x), pure=False).result(timeout=30) == 20


def test_task_submits_tasks(client):
    def spawner(n):
        c = xsched.get_client()
        futs = c.map(inc, range(n), pure=False)
        return sum(c.gather(futs))

    assert client.submit(spawner, 5).result(timeout=60) == sum(range(1, 6))


# ---------------------------------------------------------------------- reference counting
def test_garbage_collected_future_releases_key(client):
    fut = client.submit(inc, 123, pure=False)
    assert fut.result(timeout=30) == 124
    key = fut.key
    assert scheduler_has(client, key)
    holders = client.who_has([fut])[key]
    assert holders
    del fut
    gc.collect()
    wait_until(lambda: not scheduler_has(client, key), msg=f"{key} forgotten by the scheduler")
    wait_until(lambda: not any(client.run(lambda worker, k=key: k in worker.data).values()),
               msg=f"{key} freed on the workers")


def test_futures_dropped_before_their_graph_left_the_client_are_forgotten(client):
    """Releases wait a little and travel with the next graph; one must still never reach
    the scheduler before the graph that made its key (the key would stay wanted forever).
    A thread submits and drops each future at once, before the loop has sent its graph."""
    keys = []

    def burst():
        for i in range(50):
            f = client.submit(inc, i, pure=False)
            keys.append(f.key)
            del f

    t = threading.Thread(target=burst)
    t.start()
    t.join(30)
    assert len(keys) == 50
    wait_until(lambda: not client.run_on_scheduler(lambda scheduler, ks=tuple(keys): [k for k in ks
                                                                                      if k in scheduler.tasks]),
               msg="every dropped key forgotten by the scheduler")


def test_shared_key_kept_while_one_future_lives(client):
    a = client.submit(inc, 555)
    b = client.submit(inc, 555)
    assert a.key == b.key and a.result(timeout=30) == 556
    key = a.key
    del a
    gc.collect()
    # b still holds the key: give the release a moment to (wrongly) happen, then check
    client.run_on_scheduler(lambda: None)
    assert scheduler_has(client, key)
    assert b.result(timeout=30) == 556
    del b
    gc.collect()
    wait_until(lambda: not scheduler_has(client, key), msg=f"{key} forgotten")


def test_closing_a_client_releases_its_keys(cluster):
    c = Client(cluster, set_as_default=False)
    fut = c.submit(inc, 777, pure=False)
    key = fut.key
    assert fut.result(timeout=30) == 778
    with Client(cluster, set_as_default=False) as observer:
        assert scheduler_has(observer, key)
        c.close()
        wait_until(lambda: not scheduler_has(observer, key), msg=f"{key} released on close")
    assert c.status == "closed"


# ---------------------------------------------------------------------- asynchronous client
def test_an_asynchronous_cluster_is_awaited_to_start_and_to_close():
    """``await LocalCluster(..., asynchronous=True)`` and ``await cluster.close()``, as dask's:
    closing waits in a thread, so the loop goes on meanwhile; outside a loop it closes at once."""
    async def main():
        cluster = await LocalCluster(n_workers=1, threads_per_worker=1, asynchronous=True, dashboard_address=None)
        async with Client(cluster, asynchronous=True, set_as_default=False) as c:
            assert await c.submit(inc, 1, pure=False) == 2
            pids = list((await c.run(os.getpid)).values())
        beats = []
        ticking = asyncio.ensure_future(_tick(beats))
        assert await cluster.close() is None
        ticking.cancel()
        return cluster, pids, beats

    cluster, pids, beats = asyncio.run(main())
    assert cluster.status == "closed" and all(pid_gone(p) for p in pids)
    assert beats  # (the loop ran while the cluster closed)
    outside = LocalCluster(n_workers=0, asynchronous=True, dashboard_address=None)
    assert outside.close() is None and outside.status == "closed"


async def _tick(beats: list) -> None:
    while True:
        beats.append(1)
        await asyncio.sleep(0.01)


def test_async_client(cluster):
    async def main():
        async with Client(cluster.scheduler_address, security=cluster.security, asynchronous=True,
                          set_as_default=False) as c:
            fut = c.submit(inc, 1)
            assert await fut == 2
            futs = c.map(inc, range(10))
            assert await c.gather(futs) == list(range(1, 11))
            info = await c.scheduler_info()
            assert len(info["workers"]) == 2
            assert await c.run_on_scheduler(lambda: "hi") == "hi"
            [s] = await c.scatter([5])
            assert await c.submit(inc, s).result() == 6
            total = delayed(sum)([delayed(inc)(i) for i in range(10)])
            assert await c.compute(total) == 55
            await c.wait_for_workers(2, timeout=10)
            return c.status

    assert asyncio.run(main()) == "running"


def test_async_client_datasets_and_admin(cluster):
    """The methods written once (client/dual.py) return what to await in an asynchronous client;
    their checks in the caller's thread still raise at once."""
    async def main():
        async with Client(cluster.scheduler_address, security=cluster.security, asynchronous=True,
                          set_as_default=False) as c:
            [x] = await c.scatter([41])
            with pytest.raises(TypeError, match="needs a name"):
                c.publish_dataset(x)  # not awaited: refused when called
            await c.publish_dataset(x, name="async-ds")
            assert "async-ds" in await c.list_datasets()
            y = await c.get_dataset("async-ds")
            assert y.key == x.key and await y == 41
            assert await c.get_dataset("async-nothing", default=None) is None
            who = await c.who_has([x])
            assert list(who) == [x.key] and who[x.key]
            assert isinstance(await c.who_can_run([x]), dict)
            assert len(await c.run(os.getpid)) == 2
            await c.unpublish_dataset("async-ds")
            with pytest.raises(KeyError, match="async-ds"):
                await c.unpublish_dataset("async-ds")

    asyncio.run(main())


# ---------------------------------------------------------------------- LocalCluster lifecycle
def test_scale_up_and_down(own_cluster):
    cluster = own_cluster(n_workers=1)
    with Client(cluster, set_as_default=False) as c:
        assert len(c.scheduler_info()["workers"]) == 1
        cluster.scale(3)
        c.wait_for_workers(3, timeout=30)
        pids = c.run(os.getpid)
        assert len(pids) == 3
        assert c.gather(c.map(inc, range(30), pure=False)) == list(range(1, 31))
        cluster.scale(1)
        wait_until(lambda: len(c.scheduler_info()["workers"]) == 1, msg="scaled down to one worker")
        survivors = c.run(os.getpid)
        assert len(survivors) == 1
        removed = set(pids.values()) - set(survivors.values())
        assert len(removed) == 2
        wait_until(lambda: all(pid_gone(p) for p in removed), msg="removed worker processes exit")
        assert c.submit(inc, 1, pure=False).result(timeout=30) == 2


def test_close_leaves_nothing(own_cluster):
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    cluster = own_cluster(memory_limit="2GB")
    directory = os.path.dirname(cluster.scheduler_file)
    assert os.path.isdir(directory)
    with Client(cluster, set_as_default=False) as c:
        worker_pids = set(c.run(os.getpid).values())
        scheduler_pid = c.run_on_scheduler(os.getpid)
        assert c.submit(inc, 1).result(timeout=30) == 2
        assert {w["memory_limit"] for w in c.scheduler_info()["workers"].values()} == {2 * 10**9}
    started = {p.pid for p in psutil.Process().children(recursive=True)} - before
    # the scheduler, each worker and whatever supervises them (nannies) are our descendants
    assert worker_pids | {scheduler_pid} <= started
    assert all(psutil.pid_exists(p) for p in started)
    cluster.close()
    assert cluster.status == "closed"
    assert not any(psutil.pid_exists(p) for p in started)
    assert not os.path.exists(directory)
    cluster.close()  # idempotent


LEAVER = """
import json, os, sys
from xsched import Client, LocalCluster
cluster = LocalCluster(n_workers=2, threads_per_worker=1)
client = Client(cluster)
assert client.submit(sum, [1, 2]).result() == 3
import psutil
pids = [p.pid for p in psutil.Process().children(recursive=True)]
print(json.dumps({"pids": pids, "dir": os.path.dirname(cluster.scheduler_file)}), flush=True)
if sys.argv[1] == "wait":
    sys.stdin.read()  # until the test kills this process, as a kernel restart would
"""


@pytest.mark.parametrize("how", ["exit", "sigkill"])
def test_nothing_survives_interpreter_exit_or_kill(tmp_path, how):
    """Leaving Python without close() (atexit), or being SIGKILLed (a notebook kernel restart)."""
    import json
    import signal
    import subprocess
    import sys

    script = tmp_path / "leaver.py"
    script.write_text(LEAVER)
    p = subprocess.Popen([sys.executable, str(script), "wait" if how == "sigkill" else "exit"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = p.stdout.readline()
        assert line, p.stderr.read().decode()[-2000:]
        info = json.loads(line)
        assert len(info["pids"]) >= 3  # scheduler + 2 workers (+ their nannies)
        if how == "sigkill":
            os.kill(p.pid, signal.SIGKILL)
        assert p.wait(30) == (-signal.SIGKILL if how == "sigkill" else 0)
        wait_until(lambda: all(pid_gone(q) for q in info["pids"]), timeout=20,
                   msg="the cluster's processes exit after their parent is gone")
        wait_until(lambda: not os.path.exists(info["dir"]), timeout=10, msg="the cluster's directory is removed")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stdout.close()
        p.stderr.close()
        p.stdin.close()


def test_cluster_context_manager():
    with LocalCluster(n_workers=1, threads_per_worker=1) as cluster:
        with Client(cluster, set_as_default=False) as c:
            pid = c.run_on_scheduler(os.getpid)
            assert c.submit(inc, 2).result(timeout=30) == 3
    assert cluster.status == "closed" and not psutil.pid_exists(pid)


def test_local_cluster_in_process():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False) as cluster:
        with Client(cluster, set_as_default=False) as c:
            assert c.gather(c.map(inc, range(50))) == list(range(1, 51))
            assert set(c.run(os.getpid).values()) == {os.getpid()}
            assert c.run_on_scheduler(os.getpid) == os.getpid()
            total = delayed(sum)([delayed(inc)(i) for i in range(100)])
            assert c.compute(total, sync=True) == 5050
            [big] = c.scatter([np.arange(1000)])
            assert c.submit(np.sum, big).result(timeout=30) == 499500
        directory = os.path.dirname(cluster.scheduler_file)
    assert not os.path.exists(directory)


def _warn_from_task(x):
    import logging
    logging.getLogger("xsched.user").warning("task %d says hello", x)
    return x


def test_cluster_get_logs_gives_the_scheduler_and_each_worker_records():
    """dask's ``cluster.get_logs()`` (its distributed tutorial): the scheduler's and each
    worker's recent records by name, without a client of the user's own."""
    with LocalCluster(n_workers=2, threads_per_worker=1) as cluster:
        with Client(cluster, set_as_default=False) as c:
            c.gather(c.map(_warn_from_task, range(4)))
            addresses = sorted(c.scheduler_info()["workers"])
        logs = cluster.get_logs()
        assert sorted(logs) == sorted(["Scheduler", *addresses])
        said = [(level, m) for a in addresses for level, m in logs[a] if "says hello" in m]
        assert sorted(int(m.split("task ")[1].split()[0]) for _, m in said) == [0, 1, 2, 3]  # (each once)
        assert {level for level, _ in said} == {"WARNING"}
        assert list(cluster.get_logs(scheduler=False, n=1)) == addresses
        assert all(len(v) <= 1 for v in cluster.get_logs(n=1).values())
    with pytest.raises(RuntimeError, match="is not running"):
        cluster.get_logs()


def test_get_executor_runs_standard_library_executor_code(client, tmp_path):
    import concurrent.futures

    with client.get_executor() as ex:
        assert isinstance(ex, concurrent.futures.Executor)
        assert list(ex.map(pow, [2, 3, 4], [5, 2, 0])) == [32, 9, 1]
        assert ex.submit(add, 1, y=2).result(timeout=30) == 3
        bad = ex.map(lambda v: 1 / v, [1, 0])
        assert next(bad) == 1.0
        with pytest.raises(ZeroDivisionError):
            next(bad)
    with pytest.raises(RuntimeError, match="after shutdown"):
        ex.submit(inc, 1)
    gate = Gate(tmp_path)
    ex = client.get_executor(workers=worker_addresses(client)[:1])
    slow = ex.map(gate.wait, [1])
    with pytest.raises(TimeoutError):
        list(ex.map(gate.wait, [2], timeout=0.2))
    held = ex.submit(gate.wait, 3)
    ex.shutdown(wait=False, cancel_futures=True)
    assert held.cancelled()
    gate.open()
    with pytest.raises(TypeError, match="'key' is not an option"):
        client.get_executor(key="x")
    del slow


def test_scheduler_info_of_some_workers(client):
    every = client.scheduler_info()["workers"]
    assert len(every) == 2 and list(client.scheduler_info(n_workers=1)["workers"]) == sorted(every)[:1]
    with pytest.raises(ValueError, match="n_workers is a number of workers"):
        client.scheduler_info(n_workers=-2)


def test_cluster_get_client_and_client_current(cluster):
    made = cluster.get_client()
    try:
        assert cluster.get_client() is made and Client.current() is made
        assert made.submit(inc, 1).result(timeout=30) == 2
    finally:
        made.close()
    again = cluster.get_client()
    try:
        assert again is not made and again.status == "running"
    finally:
        again.close()


def test_cluster_waits_for_the_workers_it_asked_for(cluster):
    cluster.wait_for_workers(timeout=30)  # (-1: all it asked for)
    cluster.wait_for_workers(n_workers=2, timeout=30)
    with pytest.raises(ValueError, match="n_workers must be a number of workers"):
        cluster.wait_for_workers(n_workers="two")
