"""``client.forward_logging`` on real clusters: what tasks log on a named logger (or the root
logger) reaches the client's logger of the same name, through its logging configuration
(``caplog``, a handler attached here), naming the worker; filtered by level on the worker;
from workers that join later; until ``unforward_logging`` or the client closes. Tracebacks
arrive as text, messages formatted on the worker. Without processes: tests/unit/test_log_forwarding.py.

No sleeps: a task's records reach its client before its result does, and a request's reply
comes after everything the scheduler sent that client before it.
"""

from __future__ import annotations

import logging
import uuid

import pytest

from xsched import Client
from xsched.log_forwarding import FORWARDED

from tests.support.helpers import wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


class Unpicklable:
    """An argument of a log call that cannot travel: only its formatted text can."""

    def __init__(self, n):
        self.n = n

    def __reduce__(self):
        raise TypeError("Unpicklable does not pickle")

    def __repr__(self):
        return f"<unpicklable {self.n}>"


def log_at(name, levels, message, *args):
    """A task: log ``message % args`` at each of ``levels`` on the logger ``name``, which lets
    every level through on the worker (so only the forwarding's own level filters)."""
    log = logging.getLogger(name)
    log.setLevel(logging.DEBUG)
    for level in levels:
        log.log(level, message, *args)
    return len(levels)


def log_unpicklable(name, n):
    logging.getLogger(name).warning("value %r and %s", Unpicklable(n), Unpicklable(n + 1))
    return n


def log_exception(name):
    try:
        {}["missing"]
    except KeyError:
        logging.getLogger(name).exception("lookup failed")
    return "logged"


def log_machinery_and_own(name):
    logging.getLogger("xsched.user").warning("kept by the worker, never forwarded")
    logging.getLogger(name).warning("from the task")
    return 2


class Keep(logging.Handler):
    """The records a logger of this process handles."""

    def __init__(self):
        super().__init__(logging.NOTSET)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture
def logger_name():
    """A logger name of this test alone (workers of the shared cluster keep their loggers)."""
    return f"xsched-test-app-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def kept(logger_name):
    handler = Keep()
    log = logging.getLogger(logger_name)
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)  # this side lets everything through: only the forwarding filters
    try:
        yield handler
    finally:
        log.removeHandler(handler)
        log.setLevel(logging.NOTSET)


def _forwarding_plugins(c: Client, of: Client | None = None) -> dict:
    """{worker: names of the forwarding plugins of client ``of`` (default ``c``) there}."""
    prefix = f"forward-logging-{(of or c).id}-"
    return c.run(lambda worker: sorted(n for n in worker.plugins if n.startswith(prefix)))


def test_a_tasks_warning_reaches_caplog_naming_its_worker_and_info_is_filtered(client, caplog, logger_name):
    caplog.set_level(logging.DEBUG, logger=logger_name)  # INFO would show here: only the worker filters it
    addr = sorted(client.scheduler_info()["workers"])[0]
    assert client.forward_logging(logger_name, level=logging.WARNING) is None
    fut = client.submit(log_at, logger_name, [logging.INFO, logging.WARNING, logging.DEBUG], "step %d of %s", 3,
                        "sums", workers=[addr])
    assert fut.result(timeout=30) == 3
    # (before the result: no waiting)
    records = [r for r in caplog.records if r.name == logger_name]
    assert [(r.levelname, r.getMessage()) for r in records] == [("WARNING", f"[{addr}] step 3 of sums")]
    [record] = records
    assert record.worker == addr and record.task_key == fut.key and getattr(record, FORWARDED)
    assert record.funcName == "log_at" and record.process != __import__("os").getpid()
    assert f"[{addr}] step 3 of sums" in caplog.text


def test_levels_by_name_and_again_replaces_the_level(client, kept, logger_name):
    client.forward_logging(logger_name, level="info")
    assert client.submit(log_at, logger_name, [logging.DEBUG, logging.INFO], "a").result(timeout=30) == 2
    assert [r.levelname for r in kept.records] == ["INFO"]
    client.forward_logging(logger_name, level="ERROR")  # the same logger again: its new level
    assert client.submit(log_at, logger_name, [logging.WARNING, logging.ERROR], "b").result(timeout=30) == 2
    assert [r.levelname for r in kept.records] == ["INFO", "ERROR"]
    assert set(map(len, _forwarding_plugins(client).values())) == {1}
    with pytest.raises(ValueError, match="not a logging level"):
        client.forward_logging(logger_name, level="LOUD")
    with pytest.raises(TypeError, match="logger's name"):
        client.forward_logging(42)


def test_unforward_stops_it_on_every_worker(client, kept, logger_name):
    client.forward_logging(logger_name)
    assert client.submit(log_at, logger_name, [logging.WARNING], "before").result(timeout=30) == 1
    assert [r.getMessage().split("] ")[1] for r in kept.records] == ["before"]
    assert client.unforward_logging(logger_name) is None
    assert _forwarding_plugins(client) == {a: [] for a in client.scheduler_info()["workers"]}
    futures = client.map(log_at, [logger_name] * 4, [[logging.WARNING]] * 4, [f"after {i}" for i in range(4)])
    assert client.gather(futures) == [1] * 4
    client.get_events("nothing")  # (a round trip: anything sent to us before it has been handled)
    assert [r.getMessage().split("] ")[1] for r in kept.records] == ["before"]
    with pytest.raises(ValueError, match=f"does not forward the logger '{logger_name}'"):
        client.unforward_logging(logger_name)


def test_an_exception_logged_with_exc_info_arrives_with_its_traceback_text(client, kept, logger_name):
    client.forward_logging(logger_name)
    assert client.submit(log_exception, logger_name).result(timeout=30) == "logged"
    [record] = kept.records
    assert record.levelname == "ERROR" and record.exc_info is None
    assert record.exc_text.startswith("Traceback (most recent call last)")
    assert "KeyError: 'missing'" in record.exc_text and "log_exception" in record.exc_text
    shown = logging.Formatter("%(name)s %(message)s").format(record)
    assert shown.splitlines()[0].endswith("lookup failed") and shown.endswith("KeyError: 'missing'")


def test_an_unpicklable_argument_arrives_formatted(client, kept, logger_name):
    client.forward_logging(logger_name)
    assert client.submit(log_unpicklable, logger_name, 7).result(timeout=30) == 7
    [record] = kept.records
    assert record.getMessage().endswith("] value <unpicklable 7> and <unpicklable 8>")
    assert record.args is None


def test_the_root_logger_forwards_a_tasks_records_but_not_xscheds_own(client):
    seen = Keep()
    root = logging.getLogger()
    root.addHandler(seen)
    try:
        client.forward_logging()  # the root logger: every logger's records, by propagation
        name = f"xsched-test-root-{uuid.uuid4().hex[:8]}"
        fut = client.submit(log_machinery_and_own, name)
        assert fut.result(timeout=30) == 2
        forwarded = [r for r in seen.records if getattr(r, FORWARDED, False)]
        assert [(r.name, r.getMessage().split("] ")[1]) for r in forwarded] == [(name, "from the task")]
        client.unforward_logging()
    finally:
        root.removeHandler(seen)


@pytest.mark.timeout(90)
def test_a_worker_that_joins_later_forwards_too_and_closing_the_client_ends_it(own_cluster, kept, logger_name):
    cluster = own_cluster(n_workers=1)
    with Client(cluster, set_as_default=False) as watcher:
        c = Client(cluster, set_as_default=False)
        try:
            c.wait_for_workers(1, timeout=30)
            [first] = c.scheduler_info()["workers"]
            c.forward_logging(logger_name, level=logging.WARNING)
            cluster.scale(2)
            c.wait_for_workers(2, timeout=30)
            [later] = set(c.scheduler_info()["workers"]) - {first}
            assert c.submit(log_at, logger_name, [logging.INFO, logging.ERROR], "late %s", "joiner",
                            workers=[later]).result(timeout=30) == 2
            assert [(r.levelname, r.worker, r.getMessage()) for r in kept.records] == [
                ("ERROR", later, f"[{later}] late joiner")]
            assert all(len(names) == 1 for names in _forwarding_plugins(watcher, c).values())
        finally:
            c.close()
        # the client went: the scheduler unregisters its forwarding on every worker
        wait_until(lambda: _forwarding_plugins(watcher, c) == {first: [], later: []}, timeout=30,
                   msg="the closed client's forwarding removed from the workers")
        assert watcher.submit(log_at, logger_name, [logging.ERROR], "no one listens").result(timeout=30) == 1
        assert len(kept.records) == 1


@pytest.mark.timeout(60)
def test_a_worker_in_this_process_shows_its_records_once_and_nothing_loops(own_cluster, kept, logger_name):
    cluster = own_cluster(n_workers=2, processes=False)
    with Client(cluster, set_as_default=False) as c:
        c.wait_for_workers(2, timeout=30)
        c.forward_logging(logger_name)
        futures = c.map(log_at, [logger_name] * 3, [[logging.WARNING]] * 3, [f"in process {i}" for i in range(3)])
        assert c.gather(futures) == [1] * 3
        c.get_events("nothing")  # (a round trip: anything re-emitted would have been by now)
        # the workers share this process's loggers: each record shows once, as the task logged it
        assert sorted(r.getMessage() for r in kept.records) == [f"in process {i}" for i in range(3)]
        assert not any(getattr(r, FORWARDED, False) for r in kept.records)
        c.unforward_logging(logger_name)
