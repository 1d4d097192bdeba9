"""A user's report on the client, compared with dask.distributed, on the shared 2-worker
cluster: sets of futures in submit and gather, dask's keywords (``fifo_timeout=``,
``batch_size=``, ``actors=``, ``direct=``) taken rather than passed to the user's function,
and errors raised where the wrong value was given, saying what is wrong.
"""

from __future__ import annotations

import pytest

import xsched
from xsched import Queue
from xsched.errors import FutureCancelledError
from xsched.protocol.schemas import MAX_KEY

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def inc(x):
    return x + 1


def no_keywords(*args):
    return sorted(args)


def identity(x):
    return x


class Counter:
    n = 0

    def increment(self):
        self.n += 1
        return self.n


# ---------------------------------------------------------------- 1. sets and frozensets


@pytest.mark.parametrize("kind", [set, frozenset])
def test_submit_takes_the_values_of_futures_in_a_set(client, kind):
    a, b = client.submit(inc, 0), client.submit(inc, 1)
    assert client.submit(sorted, kind({a, b})).result() == sorted(kind({1, 2}))
    got = client.submit(identity, [kind({a, 5})]).result()
    assert got == [kind({1, 5})] and type(got[0]) is kind


def test_gather_of_a_set_of_futures_is_the_set_of_results(client):
    a, b = client.submit(inc, 0), client.submit(inc, 1)
    assert client.gather({a, b}) == {1, 2}
    assert client.gather([{a}, (b,)]) == [{1}, (2,)]


@pytest.mark.parametrize("kind", [set, frozenset])
def test_delayed_set_computes_on_the_cluster(client, kind):
    x = xsched.delayed(inc)(2)
    assert xsched.delayed(sorted)(kind({x, 7})).compute() == sorted(kind({3, 7}))


# ---------------------------------------------------------------- 2. dask's keywords


def test_dask_keywords_do_not_reach_the_function(client):
    assert client.submit(no_keywords, 2, 1, fifo_timeout="10ms").result() == [1, 2]
    assert client.gather(client.map(no_keywords, [3, 4], fifo_timeout="1s")) == [[3], [4]]
    assert xsched.delayed(no_keywords)(1, dask_key_name="named-1").compute() == [1]
    total = xsched.delayed(sum)([1, 2])
    assert client.compute(total, fifo_timeout="10ms").result() == 3


def test_map_in_batches_gives_the_same_futures(client):
    xs = list(range(5))
    futures = client.map(inc, xs, batch_size=2)
    assert [f.key for f in futures] == [f.key for f in client.map(inc, xs)]
    assert client.gather(futures) == [x + 1 for x in xs]
    keys = [f"b-{i}" for i in xs]
    assert client.gather(client.map(inc, xs, key=keys, batch_size=2)) == [x + 1 for x in xs]
    with pytest.raises(ValueError, match="batch_size must be None or an int >= 1"):
        client.map(inc, xs, batch_size=0)


def test_actors_is_actor(client):
    counter = client.submit(Counter, actors=True).result()
    assert counter.increment().result() == 1
    assert counter.increment().result() == 2


def test_scatter_direct_is_taken(client):
    fut = client.scatter(5, direct=True)
    assert fut.result() == 5


def test_scatter_of_a_generator_is_a_list_of_futures(client):
    futures = client.scatter(x * x for x in range(3))
    assert isinstance(futures, list) and client.gather(futures) == [0, 1, 4]


# ---------------------------------------------------------------- 3. errors where given


def test_tuple_key_is_refused_in_the_client(client):
    with pytest.raises(TypeError, match=r"key \('x', 1\) is a tuple: keys are strings here .*'x-1'"):
        client.submit(inc, 1, key=("x", 1))
    with pytest.raises(TypeError, match=r"key \('x', 2\) is a tuple"):
        client.map(inc, [1, 2], key=["x-1", ("x", 2)])
    assert client.submit(inc, 1, key="x-1").result() == 2


def test_long_key_says_its_length(client):
    with pytest.raises(ValueError, match=rf"1,000,000 characters long: keys are at most {MAX_KEY:,}"):
        client.submit(inc, 1, key="k" * 1_000_000)


def test_negative_retries_is_refused_in_the_client(client):
    with pytest.raises(ValueError, match=r"retries=-1 is invalid: expected an int >= 0"):
        client.submit(inc, 1, retries=-1)
    with pytest.raises(ValueError, match=r"retries=-1 is invalid"):
        client.compute(xsched.delayed(inc)(1), retries=-1)


def test_workers_takes_a_string_or_a_list(client):
    with pytest.raises(TypeError, match=r"workers= takes a worker address or name .* not an int \(5\)"):
        client.submit(inc, 1, workers=5)
    with pytest.raises(TypeError, match=r"not an int \(5\)"):
        client.compute(xsched.delayed(inc)(1), workers=5)
    addr = sorted(client.scheduler_info()["workers"])[0]
    assert client.submit(inc, 1, workers=addr).result() == 2
    assert client.submit(inc, 2, workers=[addr]).result() == 3


def test_scatter_to_unknown_workers_names_them(client):
    with pytest.raises(ValueError, match=r"no connected worker matches workers=\['nope'\]; the 2 connected: tcp://"):
        client.scatter([1], workers=["nope"])


# ---------------------------------------------------------------- 4. messages


def test_queue_get_timeout_reads_in_english(client):
    q = Queue("user-reports-q", client=client)
    with pytest.raises(TimeoutError, match=r"no item came within 0.2s"):
        q.get(timeout=0.2)
    q.put(1)
    with pytest.raises(TimeoutError, match=r"fewer than 2 items came within 0.2s"):
        q.get(timeout=0.2, batch=2)


def test_gather_of_a_frozenset_of_futures_is_the_frozenset_of_results(client):
    a, b = client.submit(int, 1, pure=False), client.submit(int, 2, pure=False)
    assert client.gather(frozenset({a, b})) == frozenset({1, 2})


# ---------------------------------------------------------------- scatter again, done callbacks


@pytest.mark.parametrize("kind", ["list", "dict"])
def test_data_scattered_again_after_its_future_went_is_there(client, kind):
    """Scattering the same value right after dropping its future gave a future that never
    finished (the scheduler still held the key), or data the workers then freed."""
    for i in range(10):
        if kind == "list":
            [f] = client.scatter([[1, 2, 3]])
        else:
            f = client.scatter({f"scattered-again-{kind}": [1, 2, 3]})[f"scattered-again-{kind}"]
        assert f.result(timeout=10) == [1, 2, 3]
        assert client.submit(sum, f, pure=False).result(timeout=10) == 6
        del f


def test_done_callbacks_run_in_a_thread_may_wait_and_one_failing_stops_nothing(client):
    import threading

    seen, done = [], threading.Event()
    f = client.submit(inc, 1, pure=False)
    f.add_done_callback(lambda fut: 1 / 0)
    f.add_done_callback(lambda fut: seen.append((fut.result(), threading.current_thread().name)))
    f.add_done_callback(lambda fut: done.set())
    assert [g.result() for g in xsched.as_completed([f])] == [2]
    assert done.wait(10)
    assert seen == [(2, seen[0][1])] and seen[0][1].startswith("xsched-callback")
    with pytest.raises(TypeError, match="add_done_callback takes a function"):
        f.add_done_callback(None)


# ---------------------------------------------------------------- gather, wait, as_completed


def fail(x):
    raise ValueError(f"bad {x}")


def test_gather_raises_the_first_failure_while_others_still_run(client, tmp_path):
    from tests.support.helpers import Gate

    gate = Gate(tmp_path)
    held = client.submit(gate.wait, 1, pure=False)
    failing = client.submit(fail, 2, pure=False)
    with pytest.raises(ValueError, match="bad 2"):
        client.gather([held, failing])  # (before: waited for the held task, for ever here)
    assert held.status == "pending"
    gate.open()
    assert held.result(timeout=30) == 1


def test_gather_skip_leaves_failures_out_and_errors_is_checked(client):
    ok1, bad, ok2 = client.submit(inc, 1), client.submit(fail, 0, pure=False), client.submit(inc, 3)
    assert client.gather([ok1, bad, ok2], errors="skip") == [2, 4]
    assert client.gather({"a": ok1, "b": bad}, errors="skip") == {"a": 2}
    with pytest.raises(ValueError, match="errors must be 'raise' or 'skip', not 'bogus'"):
        client.gather([ok1], errors="bogus")


def test_wait_and_timeouts_read_as_dask_takes_them(client, tmp_path):
    from tests.support.helpers import Gate

    a, b = client.submit(inc, 1), client.submit(inc, 2)
    with pytest.raises(TypeError, match=r"wait\(\[x, y, z\]\), not wait\(x, y, z\)"):
        xsched.wait(a, b)
    with pytest.raises(TypeError, match="wait takes futures .* got int 3"):
        xsched.wait([a, 3])
    assert len(xsched.wait([a, b], timeout="10s").done) == 2
    assert a.result(timeout="10s") == 2 and a.exception(timeout="1s") is None
    with pytest.raises(ValueError, match="Future.result: the timeout 'soon' is not a duration"):
        a.result(timeout="soon")
    gate = Gate(tmp_path)
    held = client.submit(gate.wait, 1, pure=False)
    ac = xsched.as_completed([a, held], timeout="1s")
    assert next(ac) is a and not ac.has_ready()
    with pytest.raises(TimeoutError, match="1 futures still pending 1s after"):
        next(ac)
    ac.clear()
    assert ac.is_empty() and list(ac) == []
    gate.open()
    assert held.result(timeout=30) == 1  # (done after clear(): not yielded)
    later = client.submit(inc, 5, pure=False)
    assert later.result(timeout=30) == 6  # (done before its step: the 1 s since as_completed have passed)
    ac.add(later)
    assert list(ac) == [later]


def test_workers_given_as_int_names_match_a_local_cluster_s_workers(client):
    names = {info["name"] for info in client.scheduler_info()["workers"].values()}
    assert "0" in {str(n) for n in names}
    assert client.submit(inc, 1, workers=[0], pure=False).result(timeout=30) == 2


def add(a, b):
    return a + b


def test_cancelling_a_future_cancels_its_dependents_as_dask(client, tmp_path):
    from tests.support.helpers import Gate

    gate = Gate(tmp_path)
    a = client.submit(gate.wait, 1, pure=False)
    b = client.submit(add, a, 1, pure=False)
    client.cancel([a])
    with pytest.raises(FutureCancelledError, match="it needs .*, which .* cancelled"):
        b.result(timeout=30)
    gate.open()
    assert client.submit(add, 1, 1, pure=False).result(timeout=30) == 2


def fails_here():
    raise ValueError("no")


def test_run_takes_dask_s_on_error_and_nanny_and_names_unknown_workers(client):
    out = client.run(fails_here, on_error="return")
    assert len(out) == 2 and all(isinstance(v, ValueError) for v in out.values())
    assert client.run(fails_here, on_error="ignore") == {}
    with pytest.raises(ValueError, match="no"):
        client.run(fails_here)
    with pytest.raises(ValueError, match="on_error must be"):
        client.run(fails_here, on_error="skip")
    with pytest.raises(NotImplementedError, match="nanny=True"):
        client.run(inc, 1, nanny=True)
    with pytest.raises(ValueError, match=r"no connected worker is \['tcp://1.2.3.4:5'\]"):
        client.run(inc, 1, workers=["tcp://1.2.3.4:5"])
    one = next(iter(client.nthreads()))
    assert list(client.run(inc, 1, workers=[one])) == [one]
    assert client.ncores(workers=[one]) == {one: 1}


def test_a_collection_persisted_with_a_closed_client_says_so(own_cluster):
    """Computed here afterwards, NumPy met the futures themselves (AxisError, 'zero-dimensional
    arrays cannot be concatenated')."""
    import xsched.array as xa

    cluster = own_cluster(n_workers=1)
    with xsched.Client(cluster):
        persisted = (xa.arange(10.0, chunks=5) * 2).persist()
    for compute in (persisted.compute, persisted.sum().compute):
        with pytest.raises(RuntimeError, match="persisted on a cluster .* its client closed"):
            compute()


def test_cancel_says_the_message_or_the_reason_given(client, tmp_path):
    from tests.support.helpers import Gate

    gate = Gate(tmp_path)
    a, b, c = (client.submit(gate.wait, i, pure=False) for i in range(3))
    client.cancel([a], msg="stopped: the input was wrong")
    client.cancel(b, reason="superseded by a newer run")
    c.cancel()
    with pytest.raises(FutureCancelledError, match="stopped: the input was wrong"):
        a.result(timeout=10)
    with pytest.raises(FutureCancelledError, match=f"{b.key} was cancelled: superseded by a newer run"):
        b.result(timeout=10)
    with pytest.raises(FutureCancelledError, match=f"{c.key} was cancelled"):
        c.result(timeout=10)
    gate.open()


@pytest.mark.timeout(90)
def test_scatter_with_a_timeout_waits_for_a_first_worker(own_cluster):
    import threading

    cluster = own_cluster(n_workers=0)
    with xsched.Client(cluster, set_as_default=False) as c:
        with pytest.raises(ValueError, match="pass timeout= to wait for one"):
            c.scatter([1])
        with pytest.raises(TimeoutError, match="0 of 1 workers"):
            c.scatter([1], timeout=0.3)
        got = []
        waiting = threading.Thread(target=lambda: got.append(c.scatter([1, 2], timeout=60)))
        waiting.start()
        cluster.scale(1)
        waiting.join(60)
        assert c.gather(got[0]) == [1, 2]
        assert c.submit(sum, got[0]).result() == 3


def test_wait_takes_a_list_of_persisted_collections(client):
    import numpy as np
    import pandas as pd
    import xsched.array as xa
    import xsched.dataframe as xd

    df = client.persist(xd.from_pandas(pd.DataFrame({"a": range(6)}), npartitions=2))
    x = client.persist(xa.from_array(np.arange(6), chunks=3))
    done, not_done = xsched.wait([df, x], timeout=30)
    assert len(done) == 4 and not not_done
    with pytest.raises(TypeError):
        xsched.wait([df, 5], timeout=30)


def test_a_bag_from_scattered_futures(client):
    import xsched.bag as xb

    parts = client.scatter([[1, 2], [3]])
    assert xb.from_delayed(parts).compute() == [1, 2, 3]
    assert xb.from_delayed(parts[1]).map(lambda v: v * 10).compute() == [30]


def test_a_future_handed_back_by_a_queue_or_variable_right_after_its_own_was_dropped(client):
    # (the dropped future's release went out after the get, reached the scheduler after the
    # hand-over, and let go of the key: about one round in ten waited for ever)
    q, v = Queue("handed-back", client=client), xsched.Variable("handed-back", client=client)
    for i in range(30):
        q.put(client.submit(inc, i, pure=False))
        assert q.get(timeout=10).result(timeout=10) == i + 1
        v.set(client.submit(inc, -i, pure=False))
        assert v.get(timeout=10).result(timeout=10) == 1 - i


# ---------------------------------------------------------------- notebook globals, bad inputs


def test_a_notebook_function_sees_a_global_rebound_since_it_was_last_sent(client):
    """The edit-a-parameter-and-run-again cell: a function of ``__main__`` carries the globals
    it reads; after ``threshold = 20`` its tasks (pure or not) see 20, not the 5 of before."""
    scope = {"__name__": "__main__"}
    exec("threshold = 5\ndef above(v):\n    return v > threshold\n", scope)
    above = scope["above"]
    assert client.submit(above, 10).result() is True and client.submit(above, 10, pure=False).result() is True
    scope["threshold"] = 20
    assert client.submit(above, 10).result() is False
    assert client.submit(above, 10, pure=False).result() is False
    assert client.gather(client.map(above, [10, 30])) == [False, True]


def test_a_cancelled_future_is_refused_as_an_input_when_submitted(client):
    gate = xsched.Event(f"gate-{id(client)}")
    a = client.submit(lambda name: xsched.Event(name).wait(), gate.name, pure=False)
    a.cancel()
    with pytest.raises(FutureCancelledError, match=f"future {a.key!r}, was cancelled; submit its task again"):
        client.submit(inc, a)
    gate.set()
    again = client.submit(inc, 1)
    assert again.result() == 2


def test_a_pending_future_of_another_client_is_refused_as_an_input(client):
    gate = xsched.Event(f"other-{id(client)}")
    with xsched.Client(client.scheduler_address, security=client.security, set_as_default=False) as other:
        waiting = other.submit(lambda name: xsched.Event(name).wait(), gate.name, pure=False)
        with pytest.raises(ValueError, match="belongs to another client and is still pending"):
            client.submit(identity, waiting)
        gate.set()
        assert waiting.result() is True
        assert client.submit(identity, waiting).result() is True  # (finished: the scheduler has it)
