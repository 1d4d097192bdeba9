"""Lock, MultiLock, Semaphore, Queue, Variable and Event on a real cluster: tasks and the notebook
coordinating through the scheduler. The decisions themselves are tested without processes
in tests/unit/test_coordination_state.py."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid

import pytest

from xsched import Client, Event, Lock, MultiLock, Pub, Queue, Semaphore, Sub, Variable, get_client, get_worker
from xsched.errors import FutureCancelledError

from tests.support.helpers import pid_gone, wait_until

pytestmark = pytest.mark.cluster


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _append(path, line: str) -> None:
    with open(path, "a") as f:  # one write of one line: O_APPEND keeps each line whole
        f.write(line + "\n")


def _lines(path) -> list[str]:
    try:
        with open(path) as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


def waiting_requests(client) -> int:
    return client.run_on_scheduler(lambda scheduler: len(scheduler.extensions["coordination"].state.waiting))


# ---------------------------------------------------------------------- task functions
def locked_append(i, path, lock):
    with lock:
        with open(path, "a") as f:
            f.write(f"start {i}\n")
            f.flush()
            sum(range(200_000))  # some work inside: without the lock the other worker's task would cut in
            f.write(f"end {i}\n")
    return get_worker().address


def inside_semaphore(i, path, sem):
    with sem:
        _append(path, f"in {i}")
        # stay until another holder is inside too (or a deadline): holders overlap whenever they can
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            lines = _lines(path)
            if sum(ln.startswith("in ") for ln in lines) - sum(ln.startswith("out ") for ln in lines) >= 2:
                break
            time.sleep(0.01)
        _append(path, f"out {i}")
    return i


def take_and_keep(sem, lock):
    """Take a lease and the lock and return holding them (the worker's client keeps them)."""
    return sem.acquire(timeout=30), (lock.acquire(timeout=30) if lock is not None else None)


def multilock_loop(tag, n, path, lock, go):
    """Take ``lock`` ``n`` times once ``go`` is set, writing start/end lines inside."""
    assert go.wait(timeout=60)
    for i in range(n):
        with lock:
            _append(path, f"start {tag} {i}")
            sum(range(50_000))  # some work inside: without the locks the other task would cut in
            _append(path, f"end {tag} {i}")
    return get_worker().address


def wait_for_multilock(lock):
    """Wait for ``lock`` (held by someone else when called); what it got, then let go."""
    ok = lock.acquire(timeout=60)
    held = lock.held
    if ok:
        lock.release()
    return ok, held


def take_and_keep_multilock(lock):
    """Take the locks and return holding them (the worker's client keeps them)."""
    return lock.acquire(timeout=30)


def square(x):
    return x * x


def produce(n, q):
    client = get_client()
    for i in range(n):
        q.put(client.submit(square, i, pure=False))  # futures: the queue keeps their data
    q.put({"done": n})
    return n


def count_until_stopped(stop, progress):
    n = 0
    while not stop.get(timeout=30):
        n += 1
        progress.set(n)
    return n


def wait_for_event(i, event):
    return i, event.wait(timeout=60)


def get_with_timeout(q):
    q.get(timeout=0.2)


def read_variable_plus_one(v):
    return v.get(timeout=30).result() + 1


# ---------------------------------------------------------------------- Lock
@pytest.mark.timeout(90)
def test_a_lock_serialises_tasks_on_two_workers(client, tmp_path):
    path = tmp_path / "log.txt"
    lock = Lock(unique("file"), client=client)
    where = client.gather(client.map(locked_append, range(20), path=str(path), lock=lock, pure=False))
    assert len(set(where)) == 2, "both workers ran some of the tasks"
    lines = _lines(path)
    assert len(lines) == 40
    for k in range(0, 40, 2):
        start, end = lines[k].split(), lines[k + 1].split()
        assert start[0] == "start" and end == ["end", start[1]], f"interleaved at line {k}: {lines[k:k + 4]}"
    assert sorted(int(ln.split()[1]) for ln in lines[::2]) == list(range(20))
    assert not lock.locked()


@pytest.mark.timeout(60)
def test_lock_timeouts_and_releasing_what_is_not_held(client):
    name = unique("lk")
    a, b = Lock(name, client=client), Lock(name, client=client)
    assert a.acquire(timeout=5) is True and a.locked()
    assert b.acquire(timeout=0.2) is False  # held by a: not free in time
    assert b.acquire(blocking=False) is False
    with pytest.raises(ValueError, match=f"Lock '{name}' is not held by this Lock object"):
        b.release()
    a.release()
    with pytest.raises(ValueError, match=f"Lock '{name}' is not held by this Lock object"):
        a.release()
    with b:  # the context manager takes and lets go
        assert b.locked() and a.acquire(blocking=False) is False
    assert not b.locked() and a.acquire(blocking=False) is True
    a.release()
    assert "Lock" in repr(a) and name in repr(a)


# ---------------------------------------------------------------------- MultiLock
@pytest.mark.timeout(120)
def test_multilocks_in_opposite_orders_on_two_workers_finish_without_overlap(client, tmp_path):
    path = tmp_path / "log.txt"
    a, b, n = unique("a"), unique("b"), 40
    go = Event(unique("go"), client=client)
    workers = sorted(client.scheduler_info()["workers"])
    futures = [client.submit(multilock_loop, "ab", n, str(path), MultiLock([a, b], client=client), go,
                             workers=[workers[0]], pure=False),
               client.submit(multilock_loop, "ba", n, str(path), MultiLock([b, a], client=client), go,
                             workers=[workers[1]], pure=False)]
    wait_until(lambda: waiting_requests(client) == 2, timeout=60, msg="both tasks wait for the go")
    go.set()
    assert client.gather(futures) == workers  # both finished: no deadlock
    lines = _lines(path)
    assert len(lines) == 4 * n
    for k in range(0, 4 * n, 2):
        start, end = lines[k].split(), lines[k + 1].split()
        assert start[0] == "start" and end == ["end", *start[1:]], f"overlap at line {k}: {lines[k:k + 4]}"
    tags = [ln.split()[1] for ln in lines[::2]]
    assert sorted(tags) == ["ab"] * n + ["ba"] * n
    assert sum(x != y for x, y in zip(tags, tags[1:])) >= 2, f"the two tasks took turns: {tags}"
    held = client.run_on_scheduler(lambda scheduler, names: [
        scheduler.extensions["coordination"].state.lease_count("lock", name) for name in names], names=[a, b])
    assert held == [0, 0]


@pytest.mark.timeout(60)
def test_multilock_shares_names_with_lock_times_out_and_names_what_is_not_held(client):
    a, b = unique("a"), unique("b")
    plain = Lock(a, client=client)
    both = MultiLock([a, b], client=client)
    assert plain.acquire(timeout=5)
    assert both.acquire(timeout=0.2) is False and not both.locked()  # a is held by the Lock
    assert both.acquire(blocking=False) is False
    assert waiting_requests(client) == 0  # the timed-out request left the line
    other = Lock(b, client=client)
    assert other.acquire(blocking=False) is True  # b was never held by the MultiLock
    plain.release()
    with pytest.raises(ValueError, match=rf"MultiLock \['{a}', '{b}'\] is not held by this MultiLock object"):
        both.release()
    assert both.acquire(num_locks=1, timeout=5) is True and both.held == (a,)  # a is free, b is not
    assert plain.acquire(blocking=False) is False  # a is the MultiLock's now
    both.release()
    other.release()
    with both:
        assert both.held == (a, b) and "held by this object" in repr(both)
    assert not both.locked()


@pytest.mark.timeout(120)
def test_a_multilock_of_a_killed_worker_is_handed_on(own_cluster):
    cluster = own_cluster(n_workers=2)
    with Client(cluster, set_as_default=False) as c:
        c.wait_for_workers(2, timeout=30)
        victim, other = sorted(c.scheduler_info()["workers"])
        a, b = unique("a"), unique("b")
        assert c.submit(take_and_keep_multilock, MultiLock([a, b], client=c), workers=[victim],
                        pure=False).result(timeout=30) is True
        assert MultiLock([b, a], client=c).acquire(timeout=0.2) is False
        waiter = c.submit(wait_for_multilock, MultiLock([b, a], client=c), workers=[other], pure=False)
        wait_until(lambda: waiting_requests(c) == 1, timeout=60, msg="the other worker's task waits for the locks")
        pid = c.run(os.getpid)[victim]
        os.kill(pid, signal.SIGKILL)
        # the scheduler sees the worker (and its client) go: the waiting task gets both names
        assert waiter.result(timeout=60) == (True, (b, a))
        lock = Lock(a, client=c)
        assert lock.acquire(timeout=30) is True
        lock.release()
        wait_until(lambda: victim not in c.scheduler_info()["workers"], msg="the dead worker is removed")
        assert pid_gone(pid)


# ---------------------------------------------------------------------- Semaphore
@pytest.mark.timeout(120)
def test_a_semaphore_of_two_never_lets_three_in(own_cluster, tmp_path):
    cluster = own_cluster(n_workers=2, threads_per_worker=2)  # four task threads for two leases
    path = tmp_path / "log.txt"
    with Client(cluster, set_as_default=False) as c:
        c.wait_for_workers(2, timeout=30)
        sem = Semaphore(2, name=unique("sem"), client=c)
        assert sorted(c.gather(c.map(inside_semaphore, range(6), path=str(path), sem=sem, pure=False))) == \
            list(range(6))
        inside = most = 0
        for line in _lines(path):
            inside += 1 if line.startswith("in ") else -1
            most = max(most, inside)
        assert most == 2, f"at most two holders at once, and two did overlap: {_lines(path)}"
        assert sem.get_value() == 0


@pytest.mark.timeout(120)
def test_leases_and_locks_of_a_killed_worker_are_released(own_cluster):
    cluster = own_cluster(n_workers=2)
    with Client(cluster, set_as_default=False) as c:
        c.wait_for_workers(2, timeout=30)
        victim = sorted(c.scheduler_info()["workers"])[0]
        sem = Semaphore(2, name=unique("sem"), client=c)
        lock = Lock(unique("lock"), client=c)
        held = c.gather([c.submit(take_and_keep, sem, lock, workers=[victim], pure=False),
                         c.submit(take_and_keep, sem, None, workers=[victim], pure=False)])
        assert held == [(True, True), (True, None)]
        assert sem.get_value() == 2
        assert sem.acquire(timeout=0.2) is False and lock.acquire(blocking=False) is False
        pid = c.run(os.getpid)[victim]
        os.kill(pid, signal.SIGKILL)
        # the scheduler sees the worker (and its client) go and releases what they held
        assert sem.acquire(timeout=30) is True
        assert lock.acquire(timeout=30) is True
        assert sem.get_value() == 1
        wait_until(lambda: victim not in c.scheduler_info()["workers"], msg="the dead worker is removed")
        assert pid_gone(pid)
        sem.release()
        lock.release()
        assert sem.get_value() == 0


# ---------------------------------------------------------------------- Queue
@pytest.mark.timeout(90)
def test_a_queue_between_a_producer_task_and_the_notebook(client):
    q = Queue(unique("q"), client=client)
    f = client.submit(produce, 5, q, pure=False)
    got = []
    while True:
        item = q.get(timeout=30)
        if isinstance(item, dict):
            assert item == {"done": 5}
            break
        got.append(item.result(timeout=30))  # a future the task submitted: the queue kept its data
    assert got == [0, 1, 4, 9, 16]
    assert f.result(timeout=30) == 5
    assert q.qsize() == 0
    with pytest.raises(TimeoutError):
        q.get(timeout=0.2)
    with pytest.raises(TimeoutError):  # inside a task too
        client.submit(get_with_timeout, q, pure=False).result(timeout=30)


@pytest.mark.timeout(90)
def test_queue_items_outlive_the_client_that_put_them(cluster, client):
    name = unique("q")
    with Client(cluster, set_as_default=False) as other:
        q = Queue(name, client=other)
        q.put("plain")
        q.put(other.scatter([1, 2, 3]))
        q.put(other.submit(sum, [4, 5], pure=False))
        assert q.qsize() == 3
    q = Queue(name, client=client)
    assert q.get(timeout=10) == "plain"
    batch = q.get(timeout=10, batch=True)  # a list of futures, and a future
    assert client.gather(batch) == [[1, 2, 3], 9]
    assert q.get(batch=True) == []


@pytest.mark.timeout(60)
def test_a_full_queue_makes_put_wait_and_time_out(client):
    q = Queue(unique("q"), client=client, maxsize=1)
    q.put(1)
    with pytest.raises(TimeoutError, match="full"):
        q.put(2, timeout=0.2)
    assert q.get(timeout=5) == 1
    q.put(3, timeout=5)
    assert q.get(timeout=5) == 3


# ---------------------------------------------------------------------- Variable
@pytest.mark.timeout(90)
def test_a_variable_stop_flag_ends_a_loop_in_a_task(client):
    stop, progress = Variable(unique("stop"), client=client), Variable(unique("progress"), client=client)
    stop.set(False)
    f = client.submit(count_until_stopped, stop, progress, pure=False)
    wait_until(lambda: progress.get(timeout=30) >= 3, timeout=60, msg="the task's loop ran three times")
    assert not f.done()
    stop.set(True)
    n = f.result(timeout=30)
    assert n >= 3


@pytest.mark.timeout(60)
def test_a_variable_keeps_a_future_and_times_out_when_unset(client):
    v = Variable(unique("v"), client=client)
    with pytest.raises(TimeoutError, match="was not set"):
        v.get(timeout=0.2)
    v.set(client.scatter(41))
    assert client.submit(read_variable_plus_one, v, pure=False).result(timeout=30) == 42
    v.delete()
    with pytest.raises(TimeoutError):
        v.get(timeout=0.2)


@pytest.mark.timeout(120)
def test_futures_kept_in_a_queue_or_variable_fail_at_once_after_a_restart_naming_it(own_cluster):
    # a restart forgets every task: the values stay, but their futures can never complete
    cluster = own_cluster(n_workers=1)
    with Client(cluster, set_as_default=False) as c:
        c.wait_for_workers(1, timeout=30)
        q, v = Queue(unique("q"), client=c), Variable(unique("v"), client=c)
        q.put(c.submit(sum, [1, 2], pure=False))
        q.put("plain")
        q.put(c.submit(sum, [3, 4]))  # (pure: submitted again after the restart, it has the same key)
        v.set({"data": c.scatter(5)})
        c.restart(timeout=60)

        gone = q.get(timeout=10)
        with pytest.raises(FutureCancelledError, match=r"Queue '.*' held this future when the cluster was restarted"
                                                       r" by .* \(client\.restart\(\)\)"):
            gone.result(timeout=10)  # at once: not a TimeoutError after waiting
        assert gone.status == "cancelled"
        assert q.get(timeout=10) == "plain"
        again = c.submit(sum, [3, 4])  # the same key is known again: the queue's future is that task
        assert q.get(timeout=10).result(timeout=30) == 7 and again.result(timeout=30) == 7
        value = v.get(timeout=10)
        with pytest.raises(FutureCancelledError, match=r"Variable '.*' held this future when the cluster was "
                                                       r"restarted"):
            value["data"].result(timeout=10)
        v.set(c.scatter(6))  # and afterwards the primitives work as before
        assert v.get(timeout=10).result(timeout=30) == 6


# ---------------------------------------------------------------------- Event
@pytest.mark.timeout(120)
def test_an_event_wakes_ten_waiting_tasks(own_cluster):
    cluster = own_cluster(n_workers=2, threads_per_worker=5)
    with Client(cluster, set_as_default=False) as c:
        c.wait_for_workers(2, timeout=30)
        event = Event(unique("go"), client=c)
        futures = c.map(wait_for_event, range(10), event=event, pure=False)
        wait_until(lambda: waiting_requests(c) == 10, timeout=60, msg="ten tasks wait for the event")
        assert not event.is_set() and not any(f.done() for f in futures)
        event.set()
        assert c.gather(futures) == [(i, True) for i in range(10)]
        assert event.is_set() and event.wait(timeout=1) is True
        event.clear()
        assert event.wait(timeout=0.2) is False


# ---------------------------------------------------------------------- asynchronous client
@pytest.mark.timeout(60)
def test_the_primitives_with_an_asynchronous_client(cluster):
    async def main():
        async with Client(cluster, asynchronous=True, set_as_default=False) as c:
            lock = Lock(unique("alock"), client=c)
            async with lock:
                assert lock.locked()
                assert await Lock(lock.name, client=c).acquire(timeout=0.1) is False
                both = MultiLock([lock.name, unique("b")], client=c)
                assert await both.acquire(timeout=0.1) is False  # (one name space with Lock)
            async with both:
                assert both.locked() and both.held == both.names
            assert not both.locked()
            q = Queue(unique("aq"), client=c)
            await q.put(7)
            assert await q.qsize() == 1 and await q.get(timeout=5) == 7
            ev = Event(unique("aev"), client=c)
            assert await ev.wait(timeout=0.1) is False
            await ev.set()
            assert await ev.wait(timeout=5) is True

    asyncio.run(main())


# ----------------------------------------------------------------------------- pub/sub
def publish(topic, n):
    pub = Pub(topic)  # (in the task: the worker's client)
    for i in range(n):
        pub.put({"i": i, "future": get_client().submit(square, i, pure=False)} if i % 2 else {"i": i})
    return n


def receive(topic, n, started):
    with Sub(topic) as sub:
        Event(started).set()
        return [sub.get(timeout=30) for _ in range(n)]


def test_every_subscriber_receives_what_tasks_publish_in_order_futures_included(client):
    topic = unique("topic")
    first, second = Sub(topic, client=client), Sub(topic, client=client)
    assert client.submit(publish, topic, 4, pure=False).result(timeout=30) == 4
    for sub in (first, second):
        got = [sub.get(timeout=30) for _ in range(4)]
        assert [m["i"] for m in got] == [0, 1, 2, 3]
        assert [m["future"].result(timeout=30) for m in got if "future" in m] == [1, 9]
    with pytest.raises(TimeoutError, match=f"Sub {topic!r}: no message came within 0.2s"):
        first.get(timeout=0.2)
    first.close()
    with pytest.raises(RuntimeError, match="is closed"):
        first.get(timeout=1)
    Pub(topic, client=client).put("after")  # (the closed one no longer receives; the other does)
    assert second.get(timeout=10) == "after"
    second.close()
    Pub(topic, client=client).put("nobody")  # (dropped: no subscriber)


def test_a_sub_in_a_task_receives_what_the_notebook_publishes(client):
    topic, started = unique("topic"), unique("started")
    got = client.submit(receive, topic, 3, started, pure=False)
    assert Event(started, client=client).wait(timeout=30)
    pub = Pub(topic, client=client)
    for value in ("a", "b", "c"):
        pub.put(value)
    assert got.result(timeout=30) == ["a", "b", "c"]
    with pytest.raises(TypeError, match="does not travel into tasks"):
        client.submit(len, Sub(topic, client=client))


@pytest.mark.timeout(60)
def test_pub_and_sub_with_an_asynchronous_client(cluster):
    async def main():
        async with Client(cluster, asynchronous=True, set_as_default=False) as c:
            topic = unique("atopic")
            sub = await Sub(topic, client=c)
            await Pub(topic, client=c).put(1)
            await Pub(topic, client=c).put(2)
            got = []
            async for msg in sub:
                got.append(msg)
                if len(got) == 2:
                    break
            assert got == [1, 2]
            await sub.close()
            other = await Sub(topic, client=c)
            with pytest.raises(TypeError, match="use `async with Sub"):
                with other:
                    pass
            with pytest.raises(TypeError, match="use `async for msg in sub`"):
                next(iter(other))
            await other.close()

    asyncio.run(main())


@pytest.mark.timeout(60)
def test_a_sub_whose_client_closed_says_so(cluster):
    from xsched.errors import SchedulerLostError

    with Client(cluster, set_as_default=False) as c:
        sub = Sub(unique("topic"), client=c)
    sub.close()  # (its subscription went with its client: nothing to do)
    with pytest.raises(RuntimeError, match="is closed"):
        sub.get(timeout=1)
    with Client(cluster, set_as_default=False) as c:
        live = Sub(unique("topic"), client=c)
    with pytest.raises(SchedulerLostError, match=f"Sub {live.name!r}: its client is closed"):
        live.get(timeout=1)


def test_closing_a_sub_ends_a_get_waiting_without_timeout_and_a_dropped_sub_unsubscribes(client):
    import gc
    import threading

    topic = unique("topic")
    sub = Sub(topic, client=client)
    outcome = []

    def listen():
        try:
            sub.get()
        except RuntimeError as exc:
            outcome.append(str(exc))

    waiting = threading.Thread(target=listen)
    waiting.start()
    wait_until(lambda: client.run_on_scheduler(lambda scheduler: any(
        w[0] == "getters" for w in scheduler.extensions["coordination"].state.waiting.values())),
        timeout=30, msg="the get waits on the scheduler")
    sub.close()
    waiting.join(timeout=30)
    assert outcome and "was closed while waiting" in outcome[0]

    def subscriptions(scheduler, topic=topic):
        return len(scheduler.extensions["coordination"].state.topics.get(topic, {}))

    dropped = Sub(topic, client=client)
    assert client.run_on_scheduler(subscriptions) == 1
    del dropped
    gc.collect()
    wait_until(lambda: client.run_on_scheduler(subscriptions) == 0, timeout=30, msg="the dropped Sub unsubscribed")
    assert client.submit(len, "still sends", pure=False).result(timeout=30) == 11  # (the connection still sends)
