"""Forwarded logging without processes: the worker's handler (what it forwards, what it
leaves alone, batches, the rate and its count of dropped records), the plugin installing it,
and the client's re-emission. On real clusters: tests/cluster/test_forward_logging.py."""

from __future__ import annotations

import logging
import uuid

import pytest

from xsched import log_forwarding as lf
from xsched.task_context import process_token, thread_state


class FakeWorker:
    """What the handler uses of a worker: its address and ``_log_event(topic, producer)``."""

    def __init__(self, address="tcp://10.0.0.5:4000"):
        self.address = address
        self.armed: list = []  # (topic, producer) per batch started

    def _log_event(self, topic, msg):
        self.armed.append((topic, msg))


@pytest.fixture
def logger():
    log = logging.getLogger(f"xsched-unit-forwarding-{uuid.uuid4().hex[:8]}")
    log.setLevel(logging.DEBUG)
    log.propagate = False
    yield log
    for h in list(log.handlers):
        log.removeHandler(h)


@pytest.fixture
def in_task():
    """Make this thread look like a task thread of the worker given: ``in_task(worker, key)``."""
    def enter(worker, key="task-1"):
        thread_state.worker, thread_state.key = worker, key

    yield enter
    thread_state.worker, thread_state.key = None, None


def handler_for(logger, worker, **kwargs):
    handler = lf.ForwardingHandler(worker, "topic-1", "fid-1", logger.name, **kwargs)
    logger.addHandler(handler)
    return handler


def test_only_the_records_of_this_workers_tasks_go_in_one_batch_per_drain(logger, in_task):
    worker, other = FakeWorker(), FakeWorker("tcp://10.0.0.6:4000")
    handler = handler_for(logger, worker, level=logging.INFO)
    logger.warning("outside any task")
    in_task(other)
    logger.warning("a task of another worker in this process")
    in_task(worker, "inc-1")
    logger.debug("below the level")
    logger.info("one %s", "fine")
    logger.error("two")
    again = logger.makeRecord(logger.name, logging.ERROR, "f.py", 1, "re-emitted by a client here", (), None)
    setattr(again, lf.FORWARDED, True)
    logger.handle(again)
    assert [topic for topic, _ in worker.armed] == ["topic-1"]  # one producer for the batch
    batch = worker.armed[0][1]()
    assert [(r["levelname"], r["msg"], r["key"]) for r in batch["records"]] == [("INFO", "one fine", "inc-1"),
                                                                                ("ERROR", "two", "inc-1")]
    assert (batch["worker"], batch["fid"], batch["logger"], batch["dropped"]) == (worker.address, "fid-1",
                                                                                  logger.name, 0)
    assert batch["process"] == process_token()
    assert handler.take() is None  # nothing waits
    logger.warning("three")
    assert len(worker.armed) == 2 and [r["msg"] for r in worker.armed[1][1]()["records"]] == ["three"]


def test_xscheds_own_records_go_only_when_an_xsched_logger_is_forwarded(in_task):
    worker = FakeWorker()
    in_task(worker)
    root_handler = lf.ForwardingHandler(worker, "t", "f", None)
    own_handler = lf.ForwardingHandler(worker, "t", "f", "xsched.user")
    record = logging.makeLogRecord({"name": "xsched.user", "levelno": logging.WARNING, "msg": "m"})
    root_handler.handle(record)
    own_handler.handle(record)
    assert root_handler.take() is None
    assert [r["msg"] for r in own_handler.take()["records"]] == ["m"]


def test_a_record_made_while_forwarding_is_not_forwarded(logger, in_task):
    class Chatty:
        def __str__(self):
            logger.warning("logged by __str__ while the handler formats")
            return "chatty"

    worker = FakeWorker()
    handler = handler_for(logger, worker)
    in_task(worker)
    # (straight to the handler: other handlers of the logger, formatting the record in turn,
    # would run Chatty.__str__ again, outside the forwarding -- a task's record like any)
    handler.handle(logger.makeRecord(logger.name, logging.WARNING, "f.py", 1, "value %s", (Chatty(),), None))
    assert [r["msg"] for r in handler.take()["records"]] == ["value chatty"]


def test_records_beyond_the_rate_are_counted_and_the_count_reported(logger, in_task, monkeypatch):
    worker = FakeWorker()
    handler = handler_for(logger, worker, rate=0.0, burst=3)  # 3 records, then none
    in_task(worker)
    for i in range(10):
        logger.warning("r%d", i)
    batch = handler.take()
    assert [r["msg"] for r in batch["records"]] == ["r0", "r1", "r2"] and batch["dropped"] == 7
    assert (batch["rate"], batch["burst"]) == (0.0, 3)
    monkeypatch.setattr(lf, "REPORT_INTERVAL", 3600.0)
    logger.warning("r10")
    assert handler.take() is None and handler._dropped == 1  # counted, kept for the next report
    monkeypatch.setattr(lf, "REPORT_INTERVAL", 0.0)
    assert handler.take()["dropped"] == 1


def test_records_waiting_for_the_loop_are_bounded_the_oldest_go(logger, in_task):
    worker = FakeWorker()
    handler = handler_for(logger, worker, rate=float("inf"), burst=3)
    in_task(worker)
    for i in range(5):
        logger.warning("r%d", i)
    batch = handler.take()
    assert [r["msg"] for r in batch["records"]] == ["r2", "r3", "r4"] and batch["dropped"] == 2


def test_messages_and_tracebacks_are_text_cut_to_size_and_extras_plain():
    try:
        raise ValueError("x" * 50)
    except ValueError:
        import sys

        exc_info = sys.exc_info()
    record = logging.makeLogRecord({"name": "app", "levelno": 40, "levelname": "ERROR", "msg": "%s and %d",
                                    "args": ("y" * 50, 3), "exc_info": exc_info, "payload": object(),
                                    "big": 2**70, "note": "n"})
    item = lf.record_to_dict(record, "k", limit=20)
    assert item["msg"] == "y" * 20 + "... [36 more characters cut]"
    assert item["exc_text"].startswith("Traceback (most rece") and item["exc_text"].endswith("characters cut]")
    assert item["extra"]["payload"].startswith("<object object at") and item["extra"]["big"] == repr(2**70)
    assert item["extra"]["note"] == "n"
    bad = logging.makeLogRecord({"name": "app", "levelno": 30, "msg": "%d items", "args": ("many",)})
    assert lf.record_to_dict(bad)["msg"] == "%d items (with arguments ('many',), which do not format: " \
                                            "TypeError: %d format: a real number is required, not str)"


def test_the_plugin_installs_and_removes_its_handler(logger):
    plugin = lf.ForwardLogging(logger.name, logging.WARNING, "t")
    worker = FakeWorker()
    plugin.setup(worker)
    [handler] = [h for h in logger.handlers if isinstance(h, lf.ForwardingHandler)]
    assert isinstance(handler, lf.ForwardingHandler) and handler.level == logging.WARNING and handler.fid == plugin.fid
    plugin.teardown(worker)
    assert handler not in logger.handlers and handler.closed and handler.take() is None


def test_the_client_reemits_live_batches_from_other_processes_only(logger):
    seen = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append(record)

    logger.addHandler(Keep())
    item = {"name": logger.name, "levelno": logging.WARNING, "levelname": "WARNING", "msg": "hello", "key": "k-1",
            "lineno": 12, "extra": {"batch": 4, "levelno": 99, "worker": "spoofed"}}
    batch = {"worker": "tcp://10.0.0.5:4000", "process": "elsewhere", "fid": "f1", "logger": logger.name,
             "records": [item, "not a record", {"levelno": "loud"}], "dropped": 0}
    assert lf.reemit(batch, {logger.name: "f1"}) == 2  # (the malformed one: made of what it has, on root)
    [record] = seen
    assert (record.getMessage(), record.levelno, record.worker, record.task_key, record.batch, record.lineno) == (
        "[tcp://10.0.0.5:4000] hello", logging.WARNING, "tcp://10.0.0.5:4000", "k-1", 4, 12)
    assert lf.reemit(batch, {logger.name: "f2"}) == 0  # a forwarding stopped (or replaced)
    assert lf.reemit(batch, {}) == 0
    assert lf.reemit(dict(batch, process=process_token()), {logger.name: "f1"}) == 0  # from this process
    assert lf.reemit("garbage", {logger.name: "f1"}) == 0
    logger.setLevel(logging.ERROR)  # the client's own level applies too
    assert lf.reemit(batch, {logger.name: "f1"}) == 2 and len(seen) == 1
