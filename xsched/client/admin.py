"""Running the cluster from a client: functions in its processes, files, restarts, retirement,
where data lives (who_has, replicate, rebalance), state.

What a user does to the cluster rather than compute on it::

    run(f) --run--> every worker         run_on_scheduler(f) --run-on-scheduler--> scheduler
    upload_file(path) --upload-file--> scheduler --> every worker, now and when it joins
    restart(environment=path) --environment-start/-chunk/-done--> scheduler --> one worker per
        host (the environment streamed in chunks, checked, unpacked); --restart--> every nanny
    restart_workers([a, b]) --restart-workers--> scheduler --close-worker(restart)--> those nannies
    retire_workers(...) --retire-workers--> scheduler (data copied away first)
    replicate(futures, n) --replicate--> scheduler --acquire-replicas--> workers ... add-keys;
        rebalance(...) --rebalance--> the same, then free-keys to each source: the reply once done
    scheduler_info(), nthreads(), wait_for_workers(n), who_has(...), who_can_run(...)
    get_versions() --versions--> scheduler, and --versions--> each worker directly

A mixin of ``Client`` (``client.py``), with the errors its methods raise.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import queue
import uuid
from typing import Sequence

from ..errors import XschedError, unpack_exception
from ..protocol import ops
from ..protocol.update_graph import workers_named
from ..protocol.messages import unpack_objects
from ..protocol.versions import mismatch_table, mismatches, package_versions
from ..units import parse_timedelta
from .dual import blocking, sync_or_async
from .environment_pack import pack_chunks
from .future import Future, collect_futures, futures_of
from .rpc import wait_for_workers as _poll_workers

__all__ = ["AdminMixin", "UploadError", "RestartError"]

logger = logging.getLogger("xsched.client")


class UploadError(XschedError, RuntimeError):
    """Workers could not load a file sent with ``client.upload_file``; the message names them."""


class RestartError(XschedError, RuntimeError):
    """``client.restart()`` did not get every worker back; the message says how many and why."""


class AdminMixin:
    """run, run_on_scheduler, upload_file, restart, retire_workers, replicate, rebalance, and what
    the scheduler knows."""

    # ------------------------------------------------------------------ uploaded files
    @sync_or_async
    def upload_file(self, path: str, load: bool = True) -> dict:
        """Send a ``.py``, ``.zip`` or ``.egg`` file to every worker, now and when they join.

        A ``.py`` module is imported (reloaded if it was imported before) in each worker;
        a ``.zip``/``.egg`` goes on their ``sys.path``. The scheduler remembers the file
        and sends it to workers that connect later. Raises ``UploadError`` naming each
        worker that could not load it. Returns ``{worker address: None}`` on success.

        >>> with open("upload_file_demo.py", "w") as f:
        ...     _ = f.write("def double(x):\\n    return 2 * x\\n")
        >>> client.upload_file("upload_file_demo.py")
        {'tcp://127.0.0.1:...': None, 'tcp://127.0.0.1:...': None}
        >>> def double_there(x):
        ...     import upload_file_demo  # (imported on the worker, from the uploaded file)
        ...     return upload_file_demo.double(x)
        >>> client.submit(double_there, 21).result()
        42
        """
        filename = os.path.basename(path)
        if not filename.endswith((".py", ".zip", ".egg")):
            raise ValueError(f"upload_file takes a .py, .zip or .egg file, not {path!r}")
        with open(path, "rb") as f:
            data = f.read()
        return self._upload_file(filename, data)

    async def _upload_file(self, filename: str, data: bytes) -> dict:
        reply, _ = await self._conn.request({"op": ops.UPLOAD_FILE, "filename": filename}, raw={"data": [data]},
                                            timeout=None)
        results = reply.get("results", {})
        failed = {w: e for w, e in results.items() if e}
        if failed:
            lines = "; ".join(f"{w}: {e}" for w, e in sorted(failed.items()))
            raise UploadError(f"{len(failed)} of {len(results)} workers could not load {filename}: {lines}. "
                              "Fix the file and upload it again (the scheduler keeps the newest copy)")
        return results

    # ------------------------------------------------------------------ run functions
    @sync_or_async
    def run(self, func, *args, workers=None, wait: bool = True, nanny: bool = False, on_error: str = "raise",
            **kwargs) -> dict | None:
        """Run ``func`` on every worker (now, outside the task system): {address: result}.

        A ``worker`` parameter in ``func``'s signature (or dask's ``dask_worker``) receives the
        live Worker object. A plain
        function runs in a thread of the worker (a slow one never stalls its event loop, so the
        worker keeps serving data and heartbeats); an ``async def`` function runs on the
        worker's loop, which is where code that changes the worker's state belongs:

        >>> async def held(worker):            # on the worker's loop: its state holds still
        ...     return len(worker.data)        # how many results it holds
        >>> client.run(held)
        {'tcp://127.0.0.1:...': ..., 'tcp://127.0.0.1:...': ...}

        >>> import os
        >>> client.run(os.getpid)
        {'tcp://127.0.0.1:...': ..., 'tcp://127.0.0.1:...': ...}

        ``wait=False`` starts it and returns None at once, as dask's: the results are not
        kept, and an error is logged (``xsched.client``) rather than raised. ``on_error``, as
        dask's: ``"raise"`` the first worker's exception, ``"return"`` it as that worker's
        value, or ``"ignore"`` that worker. ``workers`` naming no connected worker is an
        error; ``nanny=True`` (dask runs ``func`` in the nannies) is refused.

        >>> def fails():
        ...     raise ValueError("no")
        >>> sorted(type(v).__name__ for v in client.run(fails, on_error="return").values())
        ['ValueError', 'ValueError']
        """
        if on_error not in ("raise", "return", "ignore"):
            raise ValueError(f"run: on_error must be 'raise', 'return' or 'ignore', not {on_error!r}")
        if nanny:
            raise NotImplementedError("run(nanny=True): xsched does not run functions in the nanny processes; "
                                      "run it in the workers (nanny=False)")
        if not wait:
            return self._run_detached(func, args, kwargs, workers)
        return self._run(func, args, kwargs, workers, on_error)

    async def _run_detached(self, func, args, kwargs, workers) -> None:
        """``run(wait=False)``: the run as a task of the client's loop, held until it ends."""
        task = asyncio.ensure_future(self._run(func, args, kwargs, workers))
        detached = self.__dict__.setdefault("_detached_runs", set())
        detached.add(task)

        def ended(t: "asyncio.Task") -> None:
            detached.discard(t)
            if not t.cancelled() and t.exception() is not None:
                logger.warning("client.run(%s, wait=False) failed: %s: %s", getattr(func, "__name__", func),
                               type(t.exception()).__name__, t.exception())
        task.add_done_callback(ended)

    async def _run(self, func, args, kwargs, workers=None, on_error: str = "raise") -> dict:
        info = await self._scheduler_info()
        addrs = sorted(info["workers"])
        if workers is not None:
            want = [workers] if isinstance(workers, (str, int)) else list(workers)
            unknown = [w for w in want if not workers_named(info["workers"], [w])]
            if unknown:
                raise ValueError(f"run: no connected worker is {unknown!r:.200} (by address or name); connected: "
                                 + ", ".join(f"{a} (name {str(info['workers'][a]['name'])!r})" for a in addrs[:20]))
            addrs = workers_named(info["workers"], want)

        async def one(addr):
            reply, payload = await self._pool.get(addr).request(
                {"op": ops.RUN}, {"func": func, "args": args, "kwargs": kwargs}, timeout=None)
            return addr, reply, payload

        out = {}
        for addr, reply, payload in await asyncio.gather(*(one(a) for a in addrs)):
            if reply.get("error"):
                if on_error == "ignore":
                    continue
                exc = unpack_exception(reply.get("exception"), reply.get("traceback"), reply.get("text", ""))
                if on_error == "raise":
                    raise exc
                out[addr] = exc
            else:
                out[addr] = unpack_objects(reply, payload)["result"]
        return out

    @sync_or_async
    async def run_on_scheduler(self, func, *args, **kwargs):
        """Run ``func`` in the scheduler process; a ``scheduler`` parameter (or dask's
        ``dask_scheduler``) gets the live Scheduler.

        >>> client.run_on_scheduler(lambda scheduler: len(scheduler.workers))
        2
        """
        reply, payload = await self._conn.request({"op": ops.RUN_ON_SCHEDULER},
                                                  {"func": func, "args": args, "kwargs": kwargs})
        if reply.get("error"):
            raise unpack_exception(reply.get("exception"), reply.get("traceback"), reply.get("text", ""))
        return unpack_objects(reply, payload)["result"]

    # ------------------------------------------------------------------ retirement
    @sync_or_async
    async def retire_workers(self, workers=None, close_workers: bool = True, timeout=None) -> dict:
        """Retire workers gracefully: their data is copied to other workers first, nothing is
        recomputed, and they close (exit code 0, so no nanny restarts them).

        ``workers``: addresses or names (one or a list); None retires the idle workers the
        scheduler can spare (it always keeps one). Tasks running on a retiring worker finish
        first; it gets no new ones. ``close_workers=False`` drains them without closing
        (status ``retired``: no tasks, no unique data, safe to stop). Returns, per worker
        address, ``{"status", "moved": {key: destination address}, "reason"}``; status is
        ``retired``, ``drained``, ``cannot-retire`` (no other worker could take its data:
        it keeps it and stays, and ``reason`` says so), ``lost`` (it died meanwhile) or
        ``unknown``.

        >>> from xsched import Client, LocalCluster
        >>> cluster = LocalCluster(n_workers=2, threads_per_worker=1)   # doctest: +SKIP
        >>> client = Client(cluster)                                      # doctest: +SKIP
        >>> futures = client.map(lambda x: x * 2, range(20))              # doctest: +SKIP
        >>> [first, second] = sorted(client.scheduler_info()["workers"]) # doctest: +SKIP
        >>> out = client.retire_workers([first])                          # doctest: +SKIP
        >>> out[first]["status"], set(out[first]["moved"].values()) <= {second}   # doctest: +SKIP
        ('retired', True)
        >>> client.gather(futures)[:3]   # still there, nothing recomputed # doctest: +SKIP
        [0, 2, 4]
        """
        reply, _ = await self._conn.request(
            {"op": ops.RETIRE_WORKERS, "workers": _as_list(workers), "close_workers": bool(close_workers)},
            timeout=None if timeout is None else parse_timedelta(timeout))
        return reply["retired"]

    # ------------------------------------------------------------------ restart
    @sync_or_async
    def restart(self, timeout="60s", environment: str | None = None, wait_for_workers: bool = True) -> None:
        """Restart every worker process and forget every task; wait until the workers are back.

        Each worker's nanny starts it afresh (new process, empty memory, modules imported
        again); every future of every client becomes ``cancelled`` with a message saying
        so; published datasets are dropped. Raises ``RestartError`` when fewer workers than
        before return within ``timeout`` (workers without a nanny never do).
        ``wait_for_workers=False`` returns once the workers are told (as dask's): they
        register again in their own time, ``client.wait_for_workers(n)`` waits for them.

        ``environment``: a directory holding a Python environment (a venv or conda env with
        ``bin/python`` and xsched importable) or a ``.tar``/``.tar.gz`` of one. It is
        streamed in chunks over the cluster's connections to one worker per host, checked
        (sha256) and unpacked there; every worker then restarts with that environment's
        Python. Workers that cannot start in it come back in their previous environment
        and ``RestartError`` says which and why.

        >>> from xsched import Client, LocalCluster
        >>> client = Client(LocalCluster(n_workers=2))   # doctest: +SKIP
        >>> fut = client.submit(sum, [1, 2])             # doctest: +SKIP
        >>> client.restart()                             # doctest: +SKIP
        >>> fut.status                                   # doctest: +SKIP
        'cancelled'
        >>> client.restart(environment="/opt/envs/new-numpy")   # doctest: +SKIP
        >>> client.run(lambda: __import__("sys").prefix)        # doctest: +SKIP
        {'tcp://127.0.0.1:40211': '/tmp/.../xsched-environments/3f2a...', ...}
        """
        t = parse_timedelta(timeout)
        if environment is not None:
            environment = os.path.abspath(os.path.expanduser(environment))
            if not (os.path.isdir(environment) or environment.endswith((".tar", ".tar.gz", ".tgz"))):
                raise ValueError(f"restart(environment=...) takes a directory (a venv or conda env) or a .tar/.tar.gz "
                                 f"of one, not {environment!r}")
            if not os.path.exists(environment):
                raise FileNotFoundError(f"restart(environment=...): {environment} does not exist")
            if not wait_for_workers:
                raise ValueError("restart(environment=..., wait_for_workers=False): which workers run in the new "
                                 "environment is known once they are back; wait for them")
        return blocking(self._restart(t, environment, bool(wait_for_workers)),
                        timeout=None if environment else t + 10)

    async def _restart(self, timeout: float, environment: str | None = None, wait: bool = True) -> None:
        env_id = await self._ship_environment(environment) if environment else None
        reply, _ = await self._conn.request({"op": ops.RESTART, "timeout": timeout, "environment": env_id,
                                             **({} if wait else {"wait": False})}, timeout=timeout + 5)
        text = ("cancelled by client.restart(): every worker process started afresh and its data is gone; "
                "submit the work again")
        with self._ref_lock:
            states, self._states = self._states, {}
        for st in states.values():
            st.cancel(text)
        if reply.get("error"):
            raise RestartError(reply["error"])

    @sync_or_async
    async def restart_workers(self, workers, timeout="60s", raise_for_error: bool = True) -> dict:
        """Restart some workers (addresses or names) through their nannies, as dask's:
        each starts afresh (new process, empty memory), the rest of the cluster keeps its
        work, and what the restarted ones held or ran is computed again elsewhere, so
        futures stay valid. Waits until as many workers as before are back; returns
        ``{address: "OK"}``. Raises ``RestartError`` (or, with ``raise_for_error=False``,
        gives ``"timed out"`` or ``"unknown"``) when a worker is not the scheduler's or
        they did not come back within ``timeout``.

        >>> leaky = sorted(client.scheduler_info()["workers"])[0]   # doctest: +SKIP
        >>> client.restart_workers([leaky])                         # doctest: +SKIP
        {'tcp://127.0.0.1:40211': 'OK'}
        """
        names = [workers] if isinstance(workers, str) else list(workers)
        if not names:
            return {}
        t = parse_timedelta(timeout)
        reply, _ = await self._conn.request({"op": ops.RESTART_WORKERS, "workers": names, "timeout": t},
                                            timeout=t + 5)
        error = reply.get("error")
        if error and raise_for_error:
            raise RestartError(error)
        restarted = reply.get("workers") or []
        status = "timed out" if error and restarted else "unknown" if error else "OK"
        return {w: status for w in (restarted or names)}

    async def _ship_environment(self, path: str) -> str:
        """Stream an environment to the workers' hosts; its id for the restart request."""
        uid = uuid.uuid4().hex
        reply, _ = await self._conn.request({"op": ops.ENVIRONMENT_START, "uid": uid}, timeout=60)
        _raise_env_errors(reply, path)
        chunks: "queue.Queue" = queue.Queue(maxsize=4)  # bounded: a few chunks in memory at most
        loop = asyncio.get_running_loop()
        producer = loop.run_in_executor(None, pack_chunks, path, chunks)
        digest, total, seq = hashlib.sha256(), 0, 0
        while True:
            chunk = await loop.run_in_executor(None, chunks.get)
            if chunk is None:
                break
            digest.update(chunk)
            total += len(chunk)
            reply, _ = await self._conn.request({"op": ops.ENVIRONMENT_CHUNK, "uid": uid, "seq": seq},
                                                raw={"data": [chunk]}, timeout=None)
            _raise_env_errors(reply, path)
            seq += 1
        await producer  # re-raises a packing error
        reply, _ = await self._conn.request({"op": ops.ENVIRONMENT_DONE, "uid": uid, "sha256": digest.hexdigest(),
                                             "nbytes": total}, timeout=None)
        _raise_env_errors(reply, path)
        self.last_environment_bytes = total
        return uid

    # ------------------------------------------------------------------ cluster information
    @sync_or_async
    async def scheduler_info(self, n_workers: int = -1) -> dict:
        """Scheduler id and address, and per worker: name, pid, nthreads, memory figures
        (``n_workers``: of the first that many workers by address, as dask's; -1, the
        default, all of them).

        >>> info = client.scheduler_info(n_workers=1)
        >>> info["address"], len(info["workers"])
        ('tcp://127.0.0.1:...', 1)
        >>> info["workers"]
        {'tcp://127.0.0.1:...': {'name': ..., 'pid': ..., 'nthreads': 1, ..., 'status': 'running', ...}}
        """
        if isinstance(n_workers, bool) or not isinstance(n_workers, int) or n_workers < -1:
            raise ValueError(f"scheduler_info: n_workers is a number of workers, or -1 for all, got {n_workers!r}")
        reply, _ = await self._conn.request({"op": ops.SCHEDULER_INFO}, timeout=self._timeout)
        info = reply["info"]
        self._workers_cache = info["workers"]
        if n_workers != -1:
            info = {**info, "workers": {a: info["workers"][a] for a in sorted(info["workers"])[:n_workers]}}
        return info

    def nthreads(self, workers=None) -> dict:
        """Worker address -> number of threads (of ``workers``, addresses or names, when given).
        ``ncores`` is the same, as dask names it too.

        >>> sorted(client.nthreads().values())
        [1, 1]
        """
        info = self.scheduler_info()["workers"]
        if workers is not None:
            info = {a: info[a] for a in workers_named(info, [workers] if isinstance(workers, (str, int)) else workers)}
        return {a: w["nthreads"] for a, w in info.items()}

    ncores = nthreads

    @sync_or_async
    async def wait_for_workers(self, n_workers: int = 1, timeout=None) -> None:
        """Block until at least ``n_workers`` workers are connected (TimeoutError after ``timeout``).

        >>> client.wait_for_workers(2, timeout=30)
        """
        await _poll_workers(self._scheduler_info, n_workers, timeout)

    @sync_or_async
    async def get_versions(self, check: bool = False, packages: Sequence[str] | None = None) -> dict:
        """The versions of python, xsched and the packages pickles depend on, in every process:
        ``{"client": {...}, "scheduler": {...}, "workers": {address: {...}}}`` (a package not
        installed shows ``None``; a worker that did not answer, ``{"error": ...}``).
        ``packages`` adds others, by distribution or module name (``["scikit-learn", "zarr"]``).

        ``check=True`` raises ValueError with a table of the packages whose versions differ
        (python is compared by major.minor), as dask's ``get_versions(check=True)`` does.

        >>> v = client.get_versions()
        >>> v["client"]["numpy"] == v["scheduler"]["numpy"]
        True
        >>> _ = client.get_versions(check=True)   # ValueError if any differ
        """
        if isinstance(packages, str) or not all(isinstance(p, str) for p in packages or ()):
            raise TypeError(f"get_versions: packages is a list of package names, e.g. ['zarr'], not {packages!r}")
        ask = {"op": ops.VERSIONS, "packages": list(packages or ())}
        reply, _ = await self._conn.request(dict(ask), timeout=self._timeout)
        info = await self._scheduler_info()

        async def one(addr):
            try:
                answer, _ = await self._pool.get(addr).request(dict(ask), timeout=self._timeout)
                return addr, answer["versions"]
            except Exception as e:  # (asyncio.TimeoutError included) reported, never hides the others
                return addr, {"error": f"{type(e).__name__}: {e}"}

        workers = dict(await asyncio.gather(*(one(a) for a in sorted(info["workers"]))))
        out = {"client": package_versions(packages or ()), "scheduler": reply["versions"], "workers": workers}
        if check:
            found = mismatches(out)
            if found:
                raise ValueError("the versions of these packages differ between the client, the scheduler and "
                                 "the workers (install the same versions everywhere):\n" + mismatch_table(found))
        return out

    @sync_or_async
    async def who_can_run(self, futures) -> dict:
        """Why tasks wait: {key: {"state", "workers" that could run it, "reason"}}.

        >>> def train(x):
        ...     return x
        >>> fut = client.submit(train, 1, resources={"GPU": 1})
        >>> client.who_can_run(fut)
        {'train-...': {'state': 'no-worker', 'workers': [], 'reason': "needs resources {'GPU': 1}; ..."}}
        >>> fut.cancel()
        """
        flat: list[Future] = []
        collect_futures(futures, flat)
        reply, _ = await self._conn.request({"op": ops.WHO_CAN_RUN, "keys": [f.key for f in flat]})
        return reply["result"]

    @sync_or_async
    async def who_has(self, futures=None) -> dict:
        """Key -> worker addresses holding it."""
        flat: list[Future] = []
        collect_futures(futures if futures is not None else [], flat)
        keys = [f.key for f in flat] if futures is not None else list(self._states)
        reply, _ = await self._conn.request({"op": ops.WHO_HAS, "keys": keys})
        return reply["who_has"]

    # ------------------------------------------------------------------ where data lives
    @sync_or_async
    def replicate(self, futures, n: int | None = None, workers=None, timeout="300s"):
        """Copy the data of ``futures`` until ``n`` workers hold each key: more workers can
        then read it without a transfer, and losing one of them recomputes nothing.

        ``futures``: Futures, or lists, dicts and persisted collections holding them; each
        must be finished (``xsched.wait(futures)`` first), else ValueError names the ones
        that are not. ``n``: how many workers should hold each key (None: all of them; more
        than there are: all of them). ``workers``: addresses or names of the workers to
        count and copy to (None: every running worker). Copies come from a current holder
        and go to the workers with the most free memory, else the fewest bytes held.

        Copies are only ever added: a key held by ``n`` or more workers already is left
        as it is (dask's replicate removes copies beyond ``n``; here they go when the
        futures are released). Returns once the copies are in place, with ``{"who_has":
        {key: [addresses]}, "failed": {key: why}}``: ``failed`` names the copies that could
        not be made (a worker left meanwhile, a paused worker, ``timeout`` seconds passed)
        while every other one was made.

        >>> [big] = client.scatter([list(range(10**5))])
        >>> len(client.who_has([big])[big.key])
        1
        >>> out = client.replicate([big], n=2)
        >>> len(out["who_has"][big.key]), out["failed"]
        (2, {})
        """
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise ValueError(f"replicate: n={n!r}: the number of workers to hold each key must be an integer >= 1, "
                             "or None for every worker")
        t = None if timeout is None else parse_timedelta(timeout)
        return self._move_data({"op": ops.REPLICATE, "keys": _keys_of(futures, "replicate"), "n": n,
                                "workers": _worker_list(workers, "replicate"), "timeout": t}, t)

    @sync_or_async
    def rebalance(self, futures=None, workers=None, timeout="300s"):
        """Even out the data the workers hold: keys move from workers holding more bytes
        than the mean to workers holding less, largest keys first, so that no worker fills
        up (and spills) while others sit empty, e.g. after scattering to one worker.

        ``futures``: move only these keys (Futures or collections holding them, finished;
        None: any key). ``workers``: only among these workers (addresses or names; None:
        every running worker, and paused ones give data but take none). Memory is what the
        scheduler knows: the sizes of the keys each worker holds. A move copies first and
        frees the source only once the copy landed, so a worker dying meanwhile loses
        nothing; keys a running task needs, or that are being copied already, stay where
        they are.

        Returns once the moves are done, with ``{"moved": {key: [from, to]}, "failed":
        {key: why}}`` (dask's returns None); ``failed`` names the moves that could not be
        made (a worker left, ``timeout`` seconds passed, a task started needing the key at
        its source) while every other one was made. Unfinished or unknown futures and
        unknown workers raise ValueError naming them.

        >>> import xsched
        >>> first = sorted(client.scheduler_info()["workers"])[0]
        >>> futures = client.map(bytes, range(10**5, 10**5 + 40), workers=[first])
        >>> _ = xsched.wait(futures, timeout=60)
        >>> len({holders[0] for holders in client.who_has(futures).values()})
        1
        >>> out = client.rebalance(futures)
        >>> len(out["moved"]) > 10, out["failed"]
        (True, {})
        >>> len({holders[0] for holders in client.who_has(futures).values()})
        2
        """
        t = None if timeout is None else parse_timedelta(timeout)
        keys = None if futures is None else _keys_of(futures, "rebalance")
        return self._move_data({"op": ops.REBALANCE, "keys": keys, "workers": _worker_list(workers, "rebalance"),
                                "timeout": t}, t)

    async def _move_data(self, msg: dict, timeout: float | None) -> dict:
        """Send a replicate or rebalance request; its result, or ValueError saying why it was refused."""
        # (the scheduler answers within ``timeout``: it ends the request then; the margin is for the reply)
        reply, _ = await self._conn.request(msg, timeout=None if timeout is None else timeout + 30)
        if "refused" in reply:
            raise ValueError(reply["refused"])
        return reply["result"]


def _raise_env_errors(reply: dict, path: str) -> None:
    errors = reply.get("errors") or {}
    if errors:
        raise RestartError(f"shipping the environment {path} failed on {len(errors)} workers, nothing was "
                           "restarted: " + "; ".join(f"{w}: {e}" for w, e in sorted(errors.items())))


def _as_list(workers):
    if workers is None:
        return None
    return [workers] if isinstance(workers, str) else list(workers)


def _keys_of(futures, what: str) -> list[str]:
    """The keys of the Futures in ``futures`` (see ``futures_of``); TypeError when it holds
    none and is not an empty container."""
    found = futures_of(futures)
    if not found and not (isinstance(futures, (list, tuple, set, frozenset, dict)) and not futures):
        raise TypeError(f"{what} takes Futures or lists, dicts and persisted collections holding them; "
                        f"{type(futures).__name__} {futures!r:.80} holds none")
    return list(dict.fromkeys(f.key for f in found))


def _worker_list(workers, what: str) -> list | None:
    """Worker addresses or names, one or several, as a list (None stays None)."""
    if workers is None:
        return None
    names = [workers] if isinstance(workers, (str, int)) else list(workers)
    for w in names:
        if isinstance(w, bool) or not isinstance(w, (str, int)):
            raise TypeError(f"{what}: workers={workers!r:.80}: give worker addresses or names (strings or integers)")
    return names
