"""Events on a real cluster: ``xsched.log_event`` from tasks and clients, ``get_events``,
``subscribe_topic`` handlers, and ``xsched.print`` / ``xsched.warn`` in tasks reaching the
process of the client that waits for them. No sleeps: a task's events reach its client
before its result does, and a request's reply comes after everything the scheduler sent
that client before it."""

from __future__ import annotations

import sys
import uuid
import warnings

import pytest

import xsched
from xsched import Client

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def chatty(x):
    xsched.print("hello from task", x)
    xsched.print("to stderr", x, file=sys.stderr)
    return x + 1


def careful(x):
    xsched.warn(f"careful with {x}", RuntimeWarning)
    return x


def logs_events(topic, x):
    xsched.log_event(topic, {"x": x})
    return x


def logs_unpackable(topic):
    xsched.log_event(topic, {1, 2})


def test_print_in_a_task_reaches_the_waiting_clients_stdout_only(client, cluster, capsys):
    other = Client(cluster, set_as_default=False)  # wants nothing: must print nothing
    try:
        capsys.readouterr()
        fut = client.submit(chatty, 41)
        assert fut.result(timeout=30) == 42
        other.get_events("nothing")  # (a round trip: anything sent to `other` before it has been handled)
        captured = capsys.readouterr()
        assert captured.out.count("hello from task 41\n") == 1
        assert captured.err.count("to stderr 41\n") == 1
    finally:
        other.close()


def test_warn_in_a_task_is_issued_in_the_waiting_client(client):
    with pytest.warns(RuntimeWarning, match="careful with 7") as record:
        assert client.submit(careful, 7).result(timeout=30) == 7
    assert any(w.filename.startswith("<task careful-") for w in record)


def test_log_event_from_tasks_is_kept_and_pushed_to_a_subscriber(client):
    topic = f"training-{uuid.uuid4().hex}"
    seen = []
    client.subscribe_topic(topic, seen.append)
    futures = client.map(logs_events, [topic] * 4, range(4))
    assert client.gather(futures) == [0, 1, 2, 3]
    events = client.get_events(topic)
    assert sorted(msg["x"] for _, msg in events) == [0, 1, 2, 3]
    assert all(isinstance(t, float) for t, _ in events)
    assert sorted(msg["x"] for _, msg in seen) == [0, 1, 2, 3]  # (each arrived before its task's result)
    assert topic in client.get_events()

    client.unsubscribe_topic(topic)
    client.log_event(topic, {"x": 99})  # from the client: kept, no longer pushed here
    assert [msg["x"] for _, msg in client.get_events(topic)][-1] == 99
    assert len(seen) == 4


def test_log_event_outside_a_task_uses_the_default_client(client):
    topic = f"notes-{uuid.uuid4().hex}"
    xsched.log_event(topic, "started")
    xsched.log_event([topic, topic + "-copy"], "both")
    assert [m for _, m in client.get_events(topic)] == ["started", "both"]
    assert [m for _, m in client.get_events(topic + "-copy")] == ["both"]


def test_another_client_subscribed_hears_events_of_tasks_it_did_not_submit(client, cluster):
    topic = f"shared-{uuid.uuid4().hex}"
    seen = []
    with Client(cluster, set_as_default=False) as watcher:
        watcher.subscribe_topic(topic, seen.append)
        assert client.submit(logs_events, topic, 5).result(timeout=30) == 5
        watcher.get_events(topic)  # (a round trip: the event was sent to the watcher before its reply)
        assert [msg for _, msg in seen] == [{"x": 5}]


def test_messages_msgpack_cannot_carry_are_refused_where_they_are_made(client):
    with pytest.raises(TypeError, match="msgpack"):
        client.log_event("t", object())
    with pytest.raises(TypeError, match="msgpack"):
        client.submit(logs_unpackable, "t").result(timeout=30)
    with pytest.raises(TypeError, match="topic"):
        client.subscribe_topic("", print)


@pytest.mark.timeout(60)
def test_print_in_a_task_on_a_worker_in_this_process_shows_once(own_cluster, capsys):
    # processes=False: the worker shares this process's stdout and stderr, so its own print
    # is the one showing; the client must not write the text a second time
    cluster = own_cluster(n_workers=1, processes=False)
    with Client(cluster, set_as_default=False) as c:
        c.wait_for_workers(1, timeout=30)
        capsys.readouterr()
        assert c.submit(chatty, 9).result(timeout=30) == 10
        c.get_events("nothing")  # (a round trip: a second copy would have been written by now)
        captured = capsys.readouterr()
        assert captured.out.count("hello from task 9\n") == 1
        assert captured.err.count("to stderr 9\n") == 1


@pytest.mark.timeout(60)
def test_warn_in_a_task_on_a_worker_in_this_process_shows_once_naming_the_task(own_cluster):
    # processes=False: the worker shares this process's stderr and warnings; it leaves the
    # warning to the client, whose copy names the task (and shows in the cell waiting now)
    cluster = own_cluster(n_workers=1, processes=False)
    with Client(cluster, set_as_default=False) as c:
        c.wait_for_workers(1, timeout=30)
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            assert c.submit(careful, 9).result(timeout=30) == 9
            c.get_events("nothing")  # (a round trip: a second copy would have been issued by now)
        mine = [w for w in record if "careful with 9" in str(w.message)]
        assert len(mine) == 1, [(w.filename, str(w.message)) for w in mine]
        assert mine[0].filename.startswith("<task careful-") and mine[0].category is RuntimeWarning
