"""Waiting with an asynchronous Client: ``await wait(fs)``, ``await f.exception()``, queues,
``await f.result(timeout=)``, ``async for ... in as_completed(fs)`` (as in dask), and the
clear errors where waiting would block the client's event loop (``x.compute()``) or where a
future was released."""

import asyncio
import traceback

import numpy as np
import pytest

import xsched
import xsched.array as xa
import xsched.bag as xb
from xsched import Client, Event, Queue, as_completed, wait

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def gated(x, gate):
    """x + 1, once ``gate`` is set (the test decides when the task ends)."""
    gate.wait()
    return x + 1


def inc(x):
    return x + 1


def fail(x):
    return 1 / 0


def run_async(own_cluster, main, set_as_default=False):
    """``main(client)`` in a fresh event loop, with an asynchronous Client of a private cluster."""
    cluster = own_cluster(n_workers=1, threads_per_worker=4)

    async def outer():
        async with Client(cluster.scheduler_address, security=cluster.security, asynchronous=True,
                          set_as_default=set_as_default) as c:
            return await main(c)

    return asyncio.run(outer())


def test_wait_is_awaitable_with_the_same_semantics(own_cluster):
    async def main(c):
        gate = Event("wait-gate", client=c)
        fs = c.map(inc, range(3))
        done, not_done = await wait(fs, timeout=10)  # (before: blocked the loop, TimeoutError)
        assert done == set(fs) and not_done == set()
        assert [await f for f in fs] == [1, 2, 3]

        slow, quick = c.submit(gated, 10, gate), c.submit(inc, 20)
        done, not_done = await wait([slow, quick], return_when="FIRST_COMPLETED", timeout=10)
        assert done == {quick} and not_done == {slow}
        with pytest.raises(TimeoutError, match="1 of 2 futures still pending"):
            await wait([slow, quick], timeout=0.2)
        bad = c.submit(fail, 1)
        done, not_done = await wait([slow, bad], return_when="FIRST_EXCEPTION", timeout=10)
        assert done == {bad} and not_done == {slow}
        await gate.set()
        done, not_done = await wait([slow, quick, bad], timeout=10)
        assert len(done) == 3 and not not_done
        assert await slow == 11 and await quick == 21

    run_async(own_cluster, main)


def test_exception_and_traceback_are_awaitable(own_cluster):
    async def main(c):
        gate = Event("exc-gate", client=c)
        bad, good, slow = c.submit(fail, 1), c.submit(inc, 1), c.submit(gated, 1, gate)
        exc = await bad.exception(timeout=10)
        assert isinstance(exc, ZeroDivisionError)
        assert traceback.extract_tb(await bad.traceback(timeout=10))[-1].name == "fail"
        assert await good.exception(timeout=10) is None
        assert await good.traceback(timeout=10) is None
        with pytest.raises(TimeoutError, match="still pending"):
            await slow.exception(timeout=0.2)
        await gate.set()
        assert await slow.exception(timeout=10) is None
        assert await slow == 2

    run_async(own_cluster, main)


def test_awaited_result_keeps_its_timeout(own_cluster):
    async def main(c):
        gate = Event("result-gate", client=c)
        g = c.submit(gated, 41, gate)
        with pytest.raises(TimeoutError, match="still pending"):
            # (the outer bound only stops a broken timeout from hanging the test)
            await asyncio.wait_for(g.result(timeout=0.2), 30)
        assert not g.done()
        await gate.set()
        assert await g.result(timeout=10) == 42  # the future is still usable

    run_async(own_cluster, main)


def test_async_for_over_as_completed(own_cluster):
    async def main(c):
        gate = Event("ac-gate", client=c)
        slow, quick = c.submit(gated, 1, gate), c.submit(inc, 10)
        order = []
        async for fut in as_completed([slow, quick]):
            order.append(fut)
            if fut is quick:
                await gate.set()  # the slow one can end only after the quick one came
        assert order == [quick, slow]

        fs = c.map(inc, range(5))
        pairs = [(f.key, r) async for f, r in as_completed(fs, with_results=True)]
        assert sorted(r for _, r in pairs) == list(np.arange(5) + 1)
        assert dict(pairs) == {f.key: i + 1 for i, f in enumerate(fs)}

        ac = as_completed([c.submit(fail, 2)], with_results=True, raise_errors=False)
        [(_, err)] = [p async for p in ac]
        assert isinstance(err, ZeroDivisionError)
        with pytest.raises(ZeroDivisionError):
            async for _ in as_completed([c.submit(fail, 3)], with_results=True):
                pass

        added = as_completed([c.submit(inc, 100)])
        seen = []
        async for fut in added:
            seen.append(await fut)
            if len(seen) == 1:
                added.add(c.submit(inc, 200))  # more while iterating, as with ``for``
        assert seen == [101, 201]

        with pytest.raises(TypeError, match="async for"):
            next(iter(as_completed([c.submit(inc, 1)])))  # `for` would block the loop

    run_async(own_cluster, main)


def test_compute_with_an_asynchronous_default_client_says_to_await(own_cluster):
    x = xa.from_array(np.arange(6), chunks=2).sum()

    async def main(c):
        with pytest.raises(RuntimeError, match=r"await client\.compute\(x\)"):
            x.compute()
        with pytest.raises(RuntimeError, match="asynchronous"):
            xb.from_sequence([1, 2, 3], npartitions=2).sum().compute()
        d = xsched.delayed(sum)([1, 2])
        with pytest.raises(RuntimeError, match=r"await client\.compute\(x\)"):
            d.compute()
        with pytest.raises(RuntimeError, match=r"await client\.compute\(x\)"):
            xsched.compute(d)
        assert await c.compute(d) == 3
        assert await c.compute(x) == np.arange(6).sum()
        assert await wait([]) == (set(), set())  # (no futures: the default client decides)
        assert x.compute(scheduler="sync") == np.arange(6).sum()  # here, whatever runs

    run_async(own_cluster, main, set_as_default=True)


def test_released_future_says_so(client):
    f = client.submit(inc, 1)
    assert f.result(timeout=30) == 2
    f.release()
    assert "released" in repr(f) and "finished" not in repr(f)
    for call in (f.result, f.exception, f.traceback, f.cancel, f.retry):
        with pytest.raises(RuntimeError, match=f"{f.key}.*released"):
            call()
    g = client.submit(inc, 2)
    assert g.result(timeout=30) == 3 and "finished" in repr(g)  # a held one is as before


def test_a_queue_get_or_put_given_up_leaves_the_line(own_cluster):
    """A get cancelled while waiting took the next item for nobody; a put given up while
    the queue was full still put its item later. Both leave the scheduler's line now (the
    abandon goes on the same connection as the calls after it: no race in this test)."""
    async def main(c):
        q = Queue("abandoned", client=c)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(q.get(), 0.2)
        await q.put("item")
        assert await q.qsize() == 1 and await q.get(timeout=5) == "item"
        full = Queue("abandoned-full", client=c, maxsize=1)
        await full.put("first")
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(full.put("second"), 0.2)
        assert await full.get(timeout=5) == "first"
        assert await full.qsize() == 0 and await full.get(batch=True) == []

    run_async(own_cluster, main)
