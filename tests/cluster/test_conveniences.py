"""The conveniences notebook users reach for, on real clusters: Client(n_workers=...) making
its own LocalCluster, shutdown() of that cluster or of a scheduler and workers started
on the command line, write_scheduler_file for a worker started elsewhere, fire_and_forget
outliving its client, futures_of / persist / as_current / sync, xsched.TimeoutError, and
get_versions. The pure parts: tests/unit/test_conveniences.py."""

from __future__ import annotations

import asyncio
import inspect
import os
import socket
import stat

import pytest

import xsched
from xsched import Client, delayed
from xsched.protocol.addressing import split

from tests.support.helpers import Gate, wait_until
from tests.support.procs import read_line

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def inc(x):
    return x + 1


def write(path, text, *_inputs):
    with open(path, "w") as f:
        f.write(text)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_client_makes_its_own_cluster_with_the_given_keywords_and_shutdown_closes_it():
    c = Client(n_workers=2, threads_per_worker=1, processes=False, memory_limit="1GB", set_as_default=False)
    cluster = c.cluster
    try:
        assert cluster.processes is False and cluster.threads_per_worker == 1 and cluster.memory_limit == 10**9
        c.wait_for_workers(2, timeout=30)
        workers = c.scheduler_info()["workers"].values()
        assert sorted(w["nthreads"] for w in workers) == [1, 1] and {w["memory_limit"] for w in workers} == {10**9}
        assert c.submit(inc, 1).result(timeout=30) == 2
    finally:
        c.shutdown()
    assert c.status == "closed" and cluster.status == "closed"


def test_shutdown_closes_a_scheduler_and_workers_started_elsewhere_and_a_scheduler_file_brings_workers(
        procs, tmp_path, monkeypatch):
    monkeypatch.delenv("XSCHED_SECRET", raising=False)
    port = free_port()
    sched = procs.start("scheduler", "--host", "127.0.0.1", "--port", str(port))
    address = read_line(sched).split()[-1]
    c = Client(address, set_as_default=False)
    path = str(tmp_path / "scheduler.json")
    c.write_scheduler_file(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    worker = procs.start("worker", "--scheduler-file", path, "--nthreads", "1", "--name", "from-file")
    c.wait_for_workers(1, timeout=30)
    [(waddr, info)] = c.scheduler_info()["workers"].items()
    assert info["name"] == "from-file" and c.submit(inc, 41).result(timeout=30) == 42
    # host: the host of the worker's address (dask's meaning); hostname: the machine's name
    assert info["host"] == split(waddr)[0] == "127.0.0.1" and info["hostname"] == socket.gethostname()
    with Client(scheduler_file=path, set_as_default=False) as other:  # the file serves clients too
        assert other.scheduler_info()["id"] == c.scheduler_info()["id"]
    c.shutdown()
    assert c.status == "closed"
    assert sched.wait(30) == 0  # the scheduler closed itself
    assert worker.wait(30) == 0  # and its worker (under its nanny) was told to close, and did


def test_fire_and_forget_keeps_tasks_running_after_their_client_closed(cluster, tmp_path):
    gate = Gate(tmp_path)
    kept, dropped = str(tmp_path / "kept.txt"), str(tmp_path / "dropped.txt")
    c = Client(cluster, set_as_default=False)
    first = c.submit(gate.wait, "kept", pure=False)  # held on a worker until the gate opens
    xsched.fire_and_forget(c.submit(write, kept, "written", first, pure=False))
    second = c.submit(gate.wait, "dropped", pure=False)
    unkept = c.submit(write, dropped, "written", second, pure=False)
    unkept_key = unkept.key
    c.close()  # neither writer has started: each waits for its gate task
    assert not os.path.exists(kept) and not os.path.exists(dropped)
    gate.open()
    wait_until(lambda: os.path.exists(kept), timeout=60, msg="the fire-and-forget task wrote its file")
    with open(kept) as f:
        assert f.read() == "written"
    with Client(cluster, set_as_default=False) as look:
        # held until done, then released: the scheduler keeps none of it
        wait_until(lambda: look.run_on_scheduler(
            lambda scheduler: scheduler.extensions["fire-and-forget"].held()) == [], timeout=30)
        # the other writer was forgotten with its client: it never runs
        assert look.run_on_scheduler(lambda scheduler, k=unkept_key: k in scheduler.state.tasks) is False
    assert not os.path.exists(dropped)


def test_futures_of_persist_as_current_and_sync(client, cluster):
    x = delayed(inc)(1)
    other = Client(cluster, set_as_default=False)
    try:
        with other.as_current():
            assert xsched.default_client() is other
            (px,) = xsched.persist(x)  # on the default client: other
        assert xsched.default_client() is client
        [fut] = xsched.futures_of(px)
        assert fut.client is other and fut.key == x.key and fut.result(timeout=30) == 2
        futs = client.map(inc, range(3))
        assert xsched.futures_of({"a": futs, "b": (futs[0], 5)}) == futs

        async def workers(c):
            return len((await c._scheduler_info())["workers"])

        assert client.sync(workers, client) == 2
    finally:
        other.close()


def test_an_asynchronous_clients_sync_returns_the_coroutine(cluster):
    async def main():
        async with Client(cluster, asynchronous=True, set_as_default=False) as c:
            coro = c.sync(c._scheduler_info)
            assert inspect.iscoroutine(coro)
            return len((await coro)["workers"])

    assert asyncio.run(main()) == 2


def test_in_what_client_sync_runs_the_clients_methods_are_awaited(client):
    """dask's evolving-workflows notebook: ``client.sync(run_all)`` where ``run_all``
    awaits a synchronous client's futures and ``client.gather`` (they return what to await
    there; the gather raised "a synchronous xsched call was made from the client's own
    event loop"). Outside such code the client stays synchronous."""
    async def one(x):
        n = await client.submit(inc, x)
        futs = client.map(inc, range(n))
        first = futs[0].result()
        assert inspect.isawaitable(first) and await first == 1
        return await client.gather(futs)

    async def run_all(xs):
        return await asyncio.gather(*[one(x) for x in xs])

    assert client.sync(run_all, [0, 1, 2]) == [[1], [1, 2], [1, 2, 3]]
    assert not client.asynchronous and client.gather(client.map(inc, [1, 2])) == [2, 3]


def test_a_client_its_tasks_used_closes_with_an_in_process_cluster(recwarn):
    """A task's ``get_client()`` on an in-process cluster is closed by its worker on the
    loop they share: ``close()`` there gives what to await (it made a coroutine that was
    never awaited, and left the client's sockets open)."""
    def launch(x):
        c = xsched.get_client()
        futs = c.map(inc, [x, x + 1])
        xsched.secede()
        out = c.gather(futs)
        xsched.rejoin()
        return out

    with Client(n_workers=1, threads_per_worker=2, processes=False, set_as_default=False) as c:
        assert c.gather(c.map(launch, range(3))) == [[1, 2], [2, 3], [3, 4]]
        inner = c.run(lambda dask_worker: dask_worker.extensions["client"].status)  # (dask's name works too)
        assert list(inner.values()) == ["running"]
        assert c.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.workers)) == 1
        inner_client = next(iter(c.cluster.workers.values())).worker.extensions["client"]
    assert inner_client.status == "closed"
    assert not [w for w in recwarn.list if "never awaited" in str(w.message)]


def test_a_scheduler_and_a_worker_in_this_event_loop_as_async_context_managers():
    """dask's distributed tutorial: ``async with Scheduler() as s: async with Worker(s.address)``
    with no security given; the worker finds the secret of this user's scheduler as a Client
    does, and both are closed on leaving."""
    async def main():
        async with xsched.Scheduler() as scheduler:
            async with xsched.Worker(scheduler.address, nthreads=2) as worker:
                async with Client(scheduler.address, asynchronous=True, set_as_default=False) as c:
                    assert await c.submit(inc, 1) == 2
                    info = await c.scheduler_info()
                    assert list(info["workers"]) == [worker.address]
                    assert info["workers"][worker.address]["nthreads"] == 2
        return scheduler.status, worker.status

    assert asyncio.run(main()) == ("closed", "closed")


def test_import_xsched_loads_the_servers_only_when_asked_for():
    import subprocess
    import sys
    code = ("import sys, xsched; a = 'xsched.scheduler.server' in sys.modules; xsched.Worker; "
            "print(a, 'xsched.worker.server' in sys.modules, xsched.Scheduler.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["False", "True", "Scheduler"]
    with pytest.raises(AttributeError, match="no attribute 'Nanny'"):
        xsched.Nanny


def test_a_wait_past_its_timeout_raises_xsched_timeout_error(client, tmp_path):
    gate = Gate(tmp_path)
    fut = client.submit(gate.wait, 1, pure=False)
    with pytest.raises(xsched.TimeoutError):
        fut.result(timeout=0.2)
    gate.open()
    assert fut.result(timeout=30) == 1


def test_get_versions_of_every_process_and_the_check(client, monkeypatch):
    v = client.get_versions()
    assert sorted(v) == ["client", "scheduler", "workers"] and len(v["workers"]) == 2
    for side in [v["client"], v["scheduler"], *v["workers"].values()]:
        assert side["xsched"] == xsched.__version__ and side["numpy"] == v["client"]["numpy"]
    assert client.get_versions(check=True)["scheduler"]["python"] == v["client"]["python"]  # all match here
    import xsched.client.admin as admin

    real = admin.package_versions
    monkeypatch.setattr(admin, "package_versions", lambda extra=(): dict(real(extra), numpy="0.0.1"))
    with pytest.raises(ValueError, match="numpy") as info:
        client.get_versions(check=True)
    assert "0.0.1" in str(info.value) and v["scheduler"]["numpy"] in str(info.value)


def test_get_versions_of_packages_asked_for_by_distribution_or_module_name(client):
    from importlib import metadata

    v = client.get_versions(packages=["pip", "yaml", "no-such-package"])
    for side in [v["client"], v["scheduler"], *v["workers"].values()]:
        assert side["pip"] == metadata.version("pip")
        assert side["yaml"] == metadata.version("PyYAML")  # (the module's distribution)
        assert side["no-such-package"] is None
    with pytest.raises(TypeError, match="packages is a list of package names"):
        client.get_versions(packages="zarr")
