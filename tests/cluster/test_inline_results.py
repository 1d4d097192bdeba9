"""Small results a client waits for come back inline with key-in-memory: the client asks
no worker for them, and everything else (large results, lost data, several clients,
values only the worker can unpickle) behaves as before."""

import numpy as np
import pytest

from xsched import Client, annotate, delayed, wait

from tests.support.helpers import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def inc(x):
    return x + 1


def test_small_results_arrive_inline_and_large_ones_are_fetched(client):
    small = client.submit(inc, 1)
    assert small.result(timeout=30) == 2
    assert small._state.inline is not None  # came with key-in-memory: no get-data was needed
    big = client.submit(lambda n: "x" * n, 10_000)
    assert big.result(timeout=30) == "x" * 10_000
    assert big._state.inline is None  # above INLINE_RESULT_BYTES: fetched from its worker
    arr = client.submit(np.arange, 10)
    assert (arr.result(timeout=30) == np.arange(10)).all()  # out-of-band buffers: fetched
    many = client.map(inc, range(200))
    assert client.gather(many) == list(range(1, 201))
    assert sum(f._state.inline is not None for f in many) == 200


def test_an_intermediate_result_nobody_waits_for_is_not_kept_by_the_client(client):
    a = client.submit(inc, 10, key="inline-a-1")
    b = client.submit(inc, a, key="inline-b-1")
    del a
    assert b.result(timeout=30) == 12
    assert b._state.inline is not None


def test_a_second_client_that_starts_waiting_later_fetches_as_before(client, cluster):
    f = client.submit(inc, 41, key="inline-late-1")
    assert f.result(timeout=30) == 42
    with Client(cluster) as c2:
        g = c2.submit(inc, 41, key="inline-late-1")  # same key: already in memory
        assert g.result(timeout=30) == 42


def test_a_recomputed_key_does_not_keep_an_old_inline_value(client):
    f = client.submit(inc, 1, key="inline-reset-1")
    assert f.result(timeout=30) == 2
    f._state.reset()  # as when the scheduler reports the key lost
    assert f._state.inline is None


def test_an_inline_value_the_client_cannot_load_falls_back_to_the_fetch(client):
    f = client.submit(inc, 5)
    wait([f], timeout=30)
    f._state.inline = b"not a pickle"
    assert f.result(timeout=30) == 6  # fetched from the worker instead


def add(a, b):
    return a + b


def test_small_inputs_travel_with_their_tasks_and_no_worker_fetches_them(client):
    """Inputs computed on one worker and needed on the other came inside the compute-task
    (no peer fetch); the receiving worker is a holder from then on, and once the result is
    released neither worker keeps anything."""
    w0, w1 = sorted(client.scheduler_info()["workers"])

    def counts():  # (the session's cluster has run other tests' tasks: compare with before)
        return {w: dict(c) for w, c in client.run(lambda worker: dict(worker.state.counts)).items()}

    before = counts()
    # (one graph: the scheduler keeps a small value only while a dependent waits for it, so
    # c must be known when a and b finish; submitted one by one, a could finish first)
    with annotate(workers=[w0]):
        da = delayed(inc)(1, xsched_key_name="dep-inline-a")
        db = delayed(inc)(2, xsched_key_name="dep-inline-b")
    with annotate(workers=[w1]):
        dc = delayed(add)(da, db, xsched_key_name="dep-inline-c")
    a, b, c = client.compute([da, db, dc])
    assert c.result(timeout=30) == 5
    now = counts()
    grew = {k: now[w1].get(k, 0) - before[w1].get(k, 0) for k in ("inlined", "fetched")}
    assert grew == {"inlined": 2, "fetched": 0}
    assert set(client.who_has([a])["dep-inline-a"]) == {w0, w1}
    big = client.submit(lambda n: b"x" * n, 10_000, workers=[w0], key="dep-inline-big")
    d = client.submit(len, big, workers=[w1], key="dep-inline-d")
    assert d.result(timeout=30) == 10_000
    later = counts()
    grew = {k: later[w1].get(k, 0) - now[w1].get(k, 0) for k in ("inlined", "fetched")}
    assert grew == {"inlined": 0, "fetched": 1}  # too large to travel with the task: fetched
    del a, b, c, big, d
    wait_until(lambda: not any(client.run(lambda worker: [k for k in worker.data if k.startswith("dep-inline")])
                               .values()), timeout=30, msg="workers to free every copy")


class _Tail:
    reduced = 0

    def __reduce__(self):
        _Tail.reduced += 1
        return (_Tail, ())


class _Holder:  # sizeof sees a small object; its pickle is 10 MB, then the tail
    def __init__(self):
        self.big = b"x" * 10_000_000
        self.tail = _Tail()


def test_the_inline_pickle_stops_at_its_limit_for_an_object_sizeof_underestimates():
    from xsched.protocol.serialize import loads
    from xsched.worker.server import _inline

    assert _inline(_Holder(), 48) is None and _Tail.reduced == 0  # stopped before reaching the tail
    assert loads([_inline((1, "two", 3.0), 64)]) == (1, "two", 3.0)
    assert _inline(np.arange(3), 24) is None  # an out-of-band buffer: fetched as usual
