"""Plugins in a worker process, and in its nanny (``client.register_plugin``).

Data flow::

    scheduler --plugin-add {name, uid, token} + plugin frames--> Worker._op_plugin_add
        worker plugin: WorkerPlugins.add -- the old one of that name torn down, setup(worker)
            called there and then, on the loop, so it ends before the tasks sent after it
            start (a coroutine setup is awaited in the background) --plugin-done-->
        nanny plugin: NannyLink.ask -- a request file in the nanny's directory; the nanny
            (NannyPlugins.poll, every tick of its loop) runs setup(nanny) and writes its
            state file --plugin-done--> and, for a plugin with ``restart = True``, the worker
            exits for its nanny to start it afresh (EXIT_RESTART)
    scheduler --plugin-remove {name, uid}--> teardown (here, or in the nanny) --plugin-done-->
    WorkerState.handle -> Worker.handle carries out the instructions, then hands the
        transitions the state machine logged meanwhile to WorkerPlugins.transitions: each
        plugin's transition(key, start, finish, stimulus_id=...), outside the state machine
    Worker.close -> teardown of every plugin

    a worker under a nanny, before it registers:
        --get-nanny-plugins--> [(name, token, frames)] --> sync_nanny: the nanny sets up what
        it lacks (and tears down what the scheduler no longer has); if it set anything up
        after this process started, the worker exits unregistered (EXIT_RESTART) and its
        nanny starts it again, now with what the plugins did: setup before the worker starts

The nanny's directory (``XSCHED_NANNY_DIR``, made by the nanny, private to it and its
workers) holds the requests, ``req-*.pkl``, each removed once carried out, and the state,
``plugins.pkl``: name -> {token, status, error, exception, traceback, restart, time}.
Files, because the nanny holds no connection of its own: its workers speak for it.

>>> import tempfile
>>> d = tempfile.mkdtemp()
>>> nanny = NannyPlugins(object(), d)
>>> link = NannyLink(d)
>>> from xsched.protocol.serialize import dumps
>>> path = link.request("add", "n", "t1", dumps(NannyPlugin()))
>>> nanny.poll(), os.path.exists(path), link.state()["n"]["status"]
(1, False, 'OK')
>>> nanny.close()
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import pickle
import shutil
import time
import uuid

from ..errors import pack_exception
from ..plugins import NannyPlugin, WorkerPlugin, hook_caller
from ..protocol.serialize import frame_bytes, loads

logger = logging.getLogger("xsched.worker.plugins")

__all__ = ["WorkerPlugins", "NannyLink", "NannyPlugins", "sync_nanny", "outcome", "NANNY_DIR_VAR"]

#: The environment variable naming the nanny's directory, set by the nanny for its workers.
NANNY_DIR_VAR = "XSCHED_NANNY_DIR"
STATE_FILE = "plugins.pkl"


def outcome(error: BaseException | None = None, skipped: str | None = None) -> dict:
    """The fields of a plugin-done message for a hook that returned, raised ``error``, or
    was ``skipped`` (why).

    >>> outcome()
    {'status': 'OK', 'error': None}
    >>> outcome(ValueError("no"))["error"], outcome(skipped="no nanny")["status"]
    ('ValueError: no', 'skipped')
    """
    if skipped is not None:
        return {"status": "skipped", "error": skipped}
    if error is None:
        return {"status": "OK", "error": None}
    blob, tb, text = pack_exception(error)
    return {"status": "error", "error": text, "exception": blob, "traceback": tb}


class WorkerPlugins:
    """The worker plugins of one worker: name -> plugin (``worker.plugins``), their setup,
    teardown and transition hooks. ``spawn`` runs a coroutine in the worker's background.

    >>> class Seen(WorkerPlugin):
    ...     def setup(self, worker):
    ...         self.seen = []
    ...     def transition(self, key, start, finish, **kwargs):
    ...         self.seen.append((key, start, finish))
    >>> host = WorkerPlugins(worker=None, spawn=None)
    >>> host.add("seen", Seen(), done=print)
    None
    >>> host.transitions([("a", "executing", "memory", "s1"), ("a", "memory", "memory", "s2")])
    >>> host.plugins["seen"].seen
    [('a', 'executing', 'memory')]
    """

    def __init__(self, worker, spawn):
        self.worker = worker
        self.spawn = spawn
        self.plugins: dict[str, object] = {}
        self._transition_hooks: dict[str, object] = {}  # name -> bound transition of those defining one
        self._failing: set[str] = set()  # plugins whose transition raised (logged once each)

    def __repr__(self) -> str:
        return f"<WorkerPlugins {list(self.plugins)}>"

    @property
    def wants_transitions(self) -> bool:
        return bool(self._transition_hooks)

    def add(self, name: str, plugin, done) -> None:
        """Replace the plugin ``name`` by ``plugin`` and set it up; ``done(exception or None)``
        once its setup ended. A plugin whose setup raises is dropped."""
        self._teardown_soon(name)
        try:
            setup = hook_caller(plugin, "setup", WorkerPlugin)
            result = setup(self.worker) if setup is not None else None
        except BaseException as e:  # noqa: BLE001 - reported to the registering client; the worker goes on
            done(e)
            return
        if inspect.isawaitable(result):
            self.spawn(self._finish_setup(name, plugin, result, done))
            return
        self._keep(name, plugin)
        done(None)

    async def _finish_setup(self, name, plugin, awaitable, done) -> None:
        try:
            await awaitable
        except asyncio.CancelledError:
            raise
        except BaseException as e:  # noqa: BLE001
            done(e)
            return
        self._keep(name, plugin)
        done(None)

    def _keep(self, name: str, plugin) -> None:
        self.plugins[name] = plugin
        self._failing.discard(name)
        hook = hook_caller(plugin, "transition", WorkerPlugin, ["stimulus_id"])
        if hook is not None:
            self._transition_hooks[name] = hook

    def _teardown_soon(self, name: str) -> None:
        """Tear down the plugin ``name`` if there is one (a coroutine teardown: in the background)."""
        plugin = self.plugins.pop(name, None)
        self._transition_hooks.pop(name, None)
        if plugin is None:
            return
        try:
            teardown = hook_caller(plugin, "teardown", WorkerPlugin)
            result = teardown(self.worker) if teardown is not None else None
            if inspect.isawaitable(result):
                self.spawn(_logged(result, f"teardown of plugin {name!r}"))
        except Exception:  # noqa: BLE001
            logger.exception("worker plugin %r: teardown failed", name)

    async def remove(self, name: str) -> BaseException | None:
        """Tear down and forget the plugin ``name``; the teardown's exception, or None."""
        plugin = self.plugins.pop(name, None)
        self._transition_hooks.pop(name, None)
        if plugin is None:
            return None
        try:
            teardown = hook_caller(plugin, "teardown", WorkerPlugin)
            result = teardown(self.worker) if teardown is not None else None
            if inspect.isawaitable(result):
                await result
        except asyncio.CancelledError:
            raise
        except BaseException as e:  # noqa: BLE001
            return e
        return None

    async def close(self) -> None:
        """The worker closes: tear down every plugin (failures logged)."""
        for name in list(self.plugins):
            error = await self.remove(name)
            if error is not None:
                logger.warning("worker plugin %r: teardown failed: %s", name, error)

    def transitions(self, entries) -> None:
        """Tell every plugin with a transition hook of ``entries``: ``(key, start, finish,
        stimulus_id)`` as the state machine logged them (a no-op, start == finish, is skipped)."""
        hooks = list(self._transition_hooks.items())
        for key, start, finish, sid in entries:
            if start == finish:
                continue
            for name, hook in hooks:
                try:
                    hook(key, start, finish, stimulus_id=sid)
                except Exception:  # noqa: BLE001 - a plugin never breaks the worker
                    if name not in self._failing:
                        self._failing.add(name)
                        logger.exception("worker plugin %r: transition(%r, %r, %r) failed (logged once)",
                                         name, key, start, finish)


async def _logged(awaitable, what: str) -> None:
    try:
        await awaitable
    except asyncio.CancelledError:
        raise
    except Exception:  # noqa: BLE001
        logger.exception("%s failed", what)


# ---------------------------------------------------------------------- the nanny's plugins
def _read_state(directory: str) -> dict:
    try:
        with open(os.path.join(directory, STATE_FILE), "rb") as f:
            return pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError):
        return {}


class NannyLink:
    """A worker's side of its nanny's plugins: requests written, answers read (see the module).

    >>> NannyLink("/nonexistent").state()
    {}
    """

    def __init__(self, directory: str, interval: float = 0.05):
        self.directory = directory
        self.interval = interval

    def __repr__(self) -> str:
        return f"<NannyLink {self.directory!r}>"

    def state(self) -> dict:
        """name -> {token, status, error, exception, traceback, restart, time} of the nanny's plugins."""
        return _read_state(self.directory)

    def request(self, action: str, name: str, token: str | None = None, frames=()) -> str:
        """Ask the nanny to ``add`` (setup) or ``remove`` (teardown) a plugin; the request's
        file, which the nanny removes once it carried it out."""
        body = pickle.dumps({"action": action, "name": name, "token": token,
                             "frames": [frame_bytes(f) for f in frames]})
        path = os.path.join(self.directory, f"req-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.pkl")
        with open(path + ".part", "wb") as f:
            f.write(body)
        os.replace(path + ".part", path)
        return path

    async def ask(self, action: str, name: str, token: str | None = None, frames=(), timeout: float = 600.0
                  ) -> dict | None:
        """``request``, then wait until the nanny carried it out; the plugin's state entry then
        (None once removed). TimeoutError if the nanny did not within ``timeout`` seconds."""
        path = self.request(action, name, token, frames)
        deadline = time.monotonic() + timeout
        while os.path.exists(path):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the nanny did not {action} the plugin {name!r} within {timeout:.0f}s")
            await asyncio.sleep(self.interval)
        return self.state().get(name)


async def sync_nanny(link: NannyLink, wanted, started: float, timeout: float = 600.0) -> tuple[bool, list]:
    """Make the nanny's plugins those of the scheduler: ``wanted`` is ``[(name, token,
    frames)]``; what the nanny has of another token is set up again, what the scheduler no
    longer has is torn down. Returns (restart: a plugin was set up after ``started``, the
    process's start time; [(name, state entry)] of those whose setup failed).

    >>> asyncio.run(sync_nanny(NannyLink("/nonexistent"), [], started=0.0))
    (False, [])
    """
    have = link.state()
    names = set()
    failed = []
    restart = False
    for name, token, frames in wanted:
        names.add(name)
        entry = have.get(name)
        if entry is None or entry.get("token") != token:
            entry = await link.ask("add", name, token, frames, timeout)
        if entry is None:
            continue
        if entry.get("status") == "OK":
            restart = restart or entry.get("time", 0.0) > started
        else:
            failed.append((name, entry))
    for name in set(have) - names:
        await link.ask("remove", name, timeout=timeout)
    return restart, failed


class NannyPlugins:
    """The nanny's side: carries out its workers' requests in its own process (``poll``,
    from the nanny's loop) and tears every plugin down when the nanny stops (``close``).
    ``nanny`` is what ``setup(nanny)`` and ``teardown(nanny)`` receive."""

    def __init__(self, nanny, directory: str):
        self.nanny = nanny
        self.directory = directory
        self.plugins: dict[str, object] = {}
        self.state: dict[str, dict] = {}
        self._write_state()

    def __repr__(self) -> str:
        return f"<NannyPlugins {list(self.plugins)} in {self.directory!r}>"

    def poll(self) -> int:
        """Carry out the waiting requests, oldest first; how many there were."""
        try:
            names = sorted(n for n in os.listdir(self.directory) if n.startswith("req-") and n.endswith(".pkl"))
        except OSError:
            return 0
        for n in names:
            path = os.path.join(self.directory, n)
            try:
                with open(path, "rb") as f:
                    req = pickle.load(f)
            except (OSError, EOFError, pickle.UnpicklingError) as e:
                logger.warning("nanny: unreadable plugin request %s: %s", n, e)
                req = None
            if req is not None:
                if req.get("action") == "add":
                    self._add(req["name"], req.get("token"), req.get("frames") or [])
                else:
                    self._remove(req["name"])
                self._write_state()
            try:
                os.remove(path)  # (after the state: a worker waiting for this finds the answer there)
            except OSError:
                pass
        return len(names)

    def _add(self, name: str, token, frames) -> None:
        if name in self.state and self.state[name].get("token") == token:
            return  # a sibling worker asked first
        self._remove(name)
        plugin = None
        try:
            plugin = loads(frames)
            setup = hook_caller(plugin, "setup", NannyPlugin)
            if setup is not None:
                _run(setup(self.nanny))
        except BaseException as e:  # noqa: BLE001 - told to the registering client; the nanny goes on
            logger.warning("nanny: plugin %r failed in setup: %s", name, e)
            self.state[name] = {"token": token, "time": time.time(), "restart": False, **outcome(e)}
            return
        self.plugins[name] = plugin
        self.state[name] = {"token": token, "time": time.time(), "restart": bool(getattr(plugin, "restart", False)),
                            **outcome()}
        logger.info("nanny: plugin %r set up", name)

    def _remove(self, name: str) -> None:
        self.state.pop(name, None)
        plugin = self.plugins.pop(name, None)
        if plugin is None:
            return
        try:
            teardown = hook_caller(plugin, "teardown", NannyPlugin)
            if teardown is not None:
                _run(teardown(self.nanny))
        except Exception:  # noqa: BLE001
            logger.exception("nanny: plugin %r failed in teardown", name)

    def _write_state(self) -> None:
        path = os.path.join(self.directory, STATE_FILE)
        with open(path + ".part", "wb") as f:
            pickle.dump(self.state, f)
        os.replace(path + ".part", path)

    def close(self) -> None:
        """The nanny stops: tear down every plugin, remove the directory."""
        for name in list(self.plugins):
            self._remove(name)
        shutil.rmtree(self.directory, ignore_errors=True)


def _run(result) -> None:
    """A hook's result: a coroutine's is run to its end (the nanny has no event loop)."""
    if inspect.isawaitable(result):
        async def wait():
            return await result

        asyncio.run(wait())
