"""Actors on a real cluster: a stateful object in one worker process, called from the
notebook, from a second client and from tasks; a raising method; a released future; a
worker killed under its actor; an asynchronous client. The worker's part without sockets
is tests/unit/test_actor_host.py."""

from __future__ import annotations

import asyncio
import os
import pickle
import signal
import threading

import pytest

from xsched import Actor, ActorError, ActorFuture, Client, get_worker

from tests.support.helpers import pid_gone, wait_until

pytestmark = pytest.mark.cluster


class Counter:
    def __init__(self, start=0):
        self.n = start

    def increment(self, by=1):
        n = self.n
        self.n = n + by  # read-modify-write: calls overlapping in threads would lose updates
        return self.n

    def where(self):
        return get_worker().address

    def fail(self):
        raise ValueError(f"refusing at {self.n}")


def bump_many(counter, times):
    """A task calling the actor it was given (a handle travels as an argument)."""
    return [counter.increment().result(timeout=60) for _ in range(times)][-1]


@pytest.mark.timeout(120)
def test_an_actor_keeps_its_state_and_its_calls_come_back(client):
    fut = client.submit(Counter, 10, actor=True)
    counter = fut.result(timeout=30)
    assert isinstance(counter, Actor) and counter.key == fut.key
    assert counter.worker in client.scheduler_info()["workers"]
    assert repr(counter) == f"<Actor Counter {fut.key!r} on {counter.worker}>"
    assert "increment" in counter._repr_html_() and "increment" in dir(counter)

    call = counter.increment(5)
    assert isinstance(call, ActorFuture)
    assert call.result(timeout=30) == 15
    assert repr(call) == "<ActorFuture Counter.increment: finished>"
    assert counter.n == 15  # an attribute reads its value
    assert counter.where().result(timeout=30) == counter.worker  # it runs in the worker that holds it

    with pytest.raises(ValueError, match="refusing at 15") as info:
        counter.fail().result(timeout=30)
    assert "in fail" in str(info.value.__cause__)  # with the remote traceback
    assert counter.increment().result(timeout=30) == 16  # and the actor serves on
    with pytest.raises(AttributeError, match="no_such_thing"):
        counter.no_such_thing

    # each submit(..., actor=True) is a new actor, even with the same arguments
    other = client.submit(Counter, 10, actor=True)
    assert other.key != fut.key and other.result(timeout=30).n == 10


@pytest.mark.timeout(180)
def test_a_thousand_calls_from_two_clients_and_tasks_lose_nothing(client, cluster):
    fut = client.submit(Counter, actor=True)
    counter = fut.result(timeout=30)
    with Client(cluster, set_as_default=False) as second:
        client.publish_dataset(shared_counter=fut)
        try:
            theirs = second.get_dataset("shared_counter").result(timeout=30)
        finally:
            client.unpublish_dataset("shared_counter")
        assert theirs == counter and theirs._client is second

        def calls(actor):
            futs = [actor.increment() for _ in range(400)]
            return [f.result(timeout=60) for f in futs]

        got: dict = {}
        threads = [threading.Thread(target=lambda a=a, name=name: got.__setitem__(name, calls(a)))
                   for name, a in (("first", counter), ("second", theirs))]
        for t in threads:
            t.start()
        tasks = client.map(bump_many, [fut] * 4, [50] * 4, pure=False)  # from inside tasks, on both workers
        client.gather(tasks)
        for t in threads:
            t.join(timeout=120)
    assert counter.n == 1000
    seen = sorted(got["first"] + got["second"])
    assert len(set(seen)) == 800  # every call saw its own count: none overlapped
    assert all(a < b for a, b in zip(got["first"], got["first"][1:]))  # one caller's calls in order


def actors_held():
    return sorted(get_worker().actors.instances)


@pytest.mark.timeout(60)
def test_an_actor_lives_while_its_future_or_fetched_handle_does(client):
    fut = client.submit(Counter, actor=True)
    counter = fut.result(timeout=30)
    unbound = pickle.loads(pickle.dumps(counter))  # a copy that holds nothing (as inside a task)
    key, worker = fut.key, counter.worker
    del fut  # the handle the client fetched still holds the actor
    assert counter.increment().result(timeout=30) == 1
    assert key in client.run(actors_held)[worker]
    del counter
    wait_until(lambda: key not in client.run(actors_held)[worker],
               msg="the worker drops the instance of a released actor")
    with pytest.raises(ActorError, match=f"holds no actor '{key}'.*actor=True"):
        unbound.increment().result(timeout=30)


@pytest.mark.timeout(120)
def test_calls_to_an_actor_whose_worker_was_killed_fail_naming_it(own_cluster):
    cluster = own_cluster(n_workers=2)
    with Client(cluster, set_as_default=False) as c:
        c.wait_for_workers(2, timeout=30)
        victim = sorted(c.scheduler_info()["workers"])[0]
        fut = c.submit(Counter, actor=True, workers=[victim])
        counter = fut.result(timeout=30)
        assert counter.worker == victim and counter.increment().result(timeout=30) == 1
        pid = c.run(os.getpid)[victim]
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: pid_gone(pid), msg="the worker is gone")
        with pytest.raises(ActorError, match=f"lived on worker {victim}.*state.*actor=True"):
            counter.increment().result(timeout=60)


@pytest.mark.timeout(60)
def test_an_asynchronous_client_awaits_calls_and_attributes(cluster):
    async def main():
        async with Client(cluster, asynchronous=True, set_as_default=False) as c:
            counter = await c.submit(Counter, 1, actor=True)
            assert await counter.increment(2) == 3
            assert await counter.n == 3
            results = await asyncio.gather(*(counter.increment() for _ in range(20)))
            assert sorted(results) == list(range(4, 24))

    asyncio.run(main())
