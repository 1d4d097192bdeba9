"""The worker's task threads: reused while idle, unbounded while tasks block (secede),
Futures for the callers that want one, and a shutdown that ends every thread."""

import threading

import pytest

from xsched.worker.threads import TaskThreads

pytestmark = pytest.mark.timeout(30)


def test_sequential_calls_reuse_one_thread():
    pool = TaskThreads("t-reuse")
    try:
        names = []
        for _ in range(50):
            assert pool.submit(lambda: names.append(threading.current_thread().name)).result(5) is None
        assert len(set(names)) == 1 and names[0].startswith("t-reuse")
    finally:
        pool.shutdown()


def test_blocked_calls_each_get_a_thread():
    pool = TaskThreads("t-block")
    release, started = threading.Event(), threading.Semaphore(0)

    def block():
        started.release()
        release.wait(10)

    try:
        for _ in range(5):
            pool.start(block)
        for _ in range(5):  # all five run at once: none waits for a free thread
            assert started.acquire(timeout=5)
        release.set()
    finally:
        pool.shutdown()
    assert not [t for t in threading.enumerate() if t.name.startswith("t-block")]


def test_submit_carries_results_and_exceptions():
    pool = TaskThreads("t-submit")
    try:
        assert pool.submit(divmod, 17, 5).result(5) == (3, 2)
        with pytest.raises(ZeroDivisionError):
            pool.submit(divmod, 1, 0).result(5)
        errors = []
        pool.start(lambda: 1 / 0)  # nothing waits for it: logged, and the thread lives on
        assert pool.submit(errors.append, "after").result(5) is None and errors == ["after"]
    finally:
        pool.shutdown()


def test_shutdown_refuses_new_calls_lets_running_ones_finish_and_ends_every_thread():
    pool = TaskThreads("t-shut")
    gate, started = threading.Event(), threading.Event()

    def hold():
        started.set()
        return gate.wait(10)

    running = pool.submit(hold)
    assert started.wait(5)
    assert pool.submit(int, "7").result(5) == 7  # (a second, idle thread by now)
    pool.shutdown(wait=False, cancel_futures=True)
    with pytest.raises(RuntimeError, match="shut down"):
        pool.start(print)
    gate.set()
    assert running.result(5) is True
    for t in [t for t in threading.enumerate() if t.name.startswith("t-shut")]:
        t.join(5)
        assert not t.is_alive()


def test_a_call_started_in_reply_to_a_finishing_one_takes_its_thread():
    """A worker starts the next task when the last one posts its outcome, before that task's
    thread has returned to the pool: ``finishing`` counts the thread idle already, so the
    next task runs on it and a worker of one thread keeps one thread."""
    pool = TaskThreads("t-reply")
    idents, done = [], threading.Event()

    def second():
        idents.append(threading.get_ident())
        done.set()

    def first(tell: bool):
        idents.append(threading.get_ident())
        if tell:
            pool.finishing()
        pool.start(second)  # (as the worker's loop does, while this call has yet to return)
        if not tell:  # not idle: the second call has a thread of its own, and runs meanwhile
            assert done.wait(5)

    try:
        for tell, threads in ((True, 1), (False, 2)):
            idents.clear()
            done.clear()
            pool.start(first, tell)
            assert done.wait(5)
            assert len(set(idents)) == threads, (tell, idents)
        pool.finishing()  # (outside a pool thread: nothing)
        assert pool.submit(threading.get_ident).result(5) in idents
    finally:
        pool.shutdown()
    assert not [t for t in threading.enumerate() if t.name.startswith("t-reply")]
