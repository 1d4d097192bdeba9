"""Host an IPython kernel inside a running scheduler or worker process.

The scheduler and every worker can embed one ipykernel 7 kernel whose namespace
holds the live server object, so ``%scheduler scheduler.processing`` in a
notebook shows the current value. The kernel must never stall or disturb its
host, so it runs in a thread of its own and leaves process-wide state alone
(see ``shared/KERNELS.md`` for the facts this module builds on).

Data flow::

    host main thread (asyncio loop)        xsched-kernel thread (own asyncio loop)
    -------------------------------        ---------------------------------------
    await start_kernel(ns, name=...) --+-> import ipykernel, _App.initialize([])
         (waits on a future)           |   kernel.start(); loop.run_forever()
    info <-----------------------------+------- whose first callback resolves `ready`
                                           in the loop:
    notebook --shell--> [Shell channel thread] --inproc--> cells run here
    notebook <-iopub--- [IOPub thread] <-- OutStream <-- print() in a cell
    notebook --control-> [Control thread] --interrupt--> _CellGuard:
                              KeyboardInterrupt into the kernel thread
                              (PyThreadState_SetAsyncExc), or cancel an
                              `await` cell's task; never a signal
    run_on_host_loop(f) <-- cell       f() runs on the host loop, result back
    other threads: print() ----------> original sys.stdout (routed by thread)
    stop_kernel()/atexit ------------> loop.stop -> app.close() in the thread,
                                       then connection file, atexit hooks and
                                       singletons are cleared (restartable)

Never fork the host after a kernel has started (the child would inherit
sockets and threads in an undefined state); start processes with "spawn".

Why a thread and not a subprocess: the namespace must hold the *same* objects
as the server (live state, not copies). Why not the host loop: a cell that
runs ``time.sleep(1)`` would stop heartbeats and task dispatch.

Everything that leans on ipykernel internals is marked ``# ipykernel 7.4:``;
the project pins ``ipykernel>=7.4,<8`` and tests/cluster/test_jupyter_kernel.py tests it.
"""

from __future__ import annotations

import asyncio
import atexit
import builtins
import concurrent.futures
import contextlib
import ctypes
import inspect
import logging
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

__all__ = ["start_kernel", "stop_kernel", "kernel_info", "run_on_host_loop", "KernelStartError", "pack_value",
           "unpack_value", "RemoteRepr"]

logger = logging.getLogger("xsched.jupyter")
# The kernel's own logger: ipykernel logs every user traceback at INFO and
# chats at DEBUG; a server's log should only see real trouble.
_kernel_log = logging.getLogger("xsched.jupyter.kernel")
_kernel_log.setLevel(logging.WARNING)

#: seconds start_kernel waits for the kernel thread to come up
START_TIMEOUT = 30.0
#: seconds stop_kernel waits for a busy cell to notice an interrupt
INTERRUPT_WAIT = 1.0
#: seconds stop_kernel waits for the kernel thread to close its sockets
JOIN_TIMEOUT = 2.0


#: a value pickled larger than this comes back as its repr (a magic is for looking, not moving data)
MAX_VALUE_BYTES = 64 * 2**20
#: characters of a repr sent along
MAX_REPR_CHARS = 20_000


def pack_value(value: Any) -> str:
    """``value`` as text for the notebook that asked for it (``r = %scheduler expr``): pickled
    (cloudpickle, base64) with its repr beside it, or its repr alone when it cannot be
    pickled or pickles to more than ``MAX_VALUE_BYTES``.

    Runs in the hosting process, from the user expression a line magic sends along
    (``xsched/jupyter/magics.py``), so the notebook gets the object itself, not only its
    picture; the kernel connection is authenticated like the rest of the cluster.

    >>> unpack_value(pack_value({"a": [1, 2]}))
    {'a': [1, 2]}
    >>> unpack_value(pack_value(threading.Lock()))   # not picklable: its repr
    <unlocked _thread.lock object at 0x...>
    """
    import base64

    import cloudpickle

    try:
        text = repr(value)
    except Exception as exc:  # noqa: BLE001 - a broken __repr__ still gets its value across
        text = f"<{type(value).__name__} whose repr raised {type(exc).__name__}>"
    if len(text) > MAX_REPR_CHARS:
        text = text[:MAX_REPR_CHARS] + "..."
    try:
        blob = cloudpickle.dumps(value)
    except Exception:  # noqa: BLE001 - anything unpicklable: the notebook gets the repr
        return "r" + text
    if len(blob) > MAX_VALUE_BYTES:
        return "r" + text
    return "p" + base64.b64encode(blob).decode("ascii") + "|" + text


class RemoteRepr:
    """Stands in for a value that could not travel (unpicklable where it lives, too large, or
    of a class this process cannot import): shows its repr."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def unpack_value(text: str) -> Any:
    """What ``pack_value`` packed: the object, or a ``RemoteRepr`` when it cannot be had here."""
    import base64
    import pickle

    if not text.startswith("p"):
        return RemoteRepr(text[1:])
    blob, _, shown = text[1:].partition("|")
    try:
        return pickle.loads(base64.b64decode(blob))
    except Exception:  # noqa: BLE001 - e.g. a class of a module only the kernel's process has
        return RemoteRepr(shown)


class KernelStartError(RuntimeError):
    """The embedded kernel could not start; the cause is chained (``__cause__``)."""


# ---------------------------------------------------------------------------
# Module state: at most one kernel per process (ipykernel's app, kernel and
# shell are singletons; a second one would fail).
# ---------------------------------------------------------------------------
_lock = threading.Lock()
_host: _KernelHost | None = None
_classes: Any = None  # the ipykernel subclasses, built on first use in the kernel thread


async def start_kernel(namespace: dict, *, name: str, ip: str = "127.0.0.1") -> dict:
    """Start an IPython kernel inside this process and return its connection info.

    Call it from the host's event loop (the scheduler or worker main thread).
    The kernel runs in its own daemon thread with its own event loop, so the
    host keeps running while a cell executes. ``namespace`` maps names to the
    live objects the kernel should see (the same objects, not copies); the
    kernel also gets ``run_on_host_loop``. One kernel per process: a second
    call returns the info of the running kernel (its ``name`` and namespace
    are kept). The returned dict is JSON/msgpack-safe: the Jupyter connection
    info (ports, ``ip``, ``transport``, ``key`` as str, ``signature_scheme``)
    plus ``name``, ``pid`` and ``connection_file``. Keep it secret: the key
    lets anyone who can reach the ports run code in the process.

    Example (inside a server coroutine)::

        info = await start_kernel({"scheduler": self}, name="scheduler")
        # in a notebook: register_kernel_magic(info, "scheduler")
        #                %scheduler scheduler.processing
    """
    global _host
    if not isinstance(namespace, dict):
        raise TypeError(f"namespace must be a dict of name -> object, not {type(namespace).__name__}")
    if not name or not isinstance(name, str):
        raise ValueError("name must be a non-empty str such as 'scheduler' or 'worker-1'")
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        raise RuntimeError(
            "start_kernel() must be awaited on the host's running event loop, e.g. "
            "`info = await start_kernel({...}, name=...)` inside a server coroutine"
        ) from None
    with _lock:
        host = _host
        if host is None and _foreign_ipython():
            raise KernelStartError(
                f"cannot start the embedded kernel {name!r}: this process already runs IPython (a notebook's "
                "kernel or a terminal), and IPython allows one per process. A LocalCluster(processes=False) "
                "has its scheduler and workers in this process: reach them with client.run_on_scheduler(f) "
                "and client.run(f), or use LocalCluster(processes=True) for %scheduler and %remote")
        if host is None:
            host = _KernelHost(namespace, name=name, ip=ip, host_loop=loop)
            _host = host
            host.launch()
        elif host.name != name:
            logger.debug("kernel %r already running; start_kernel(name=%r) returns it", host.name, name)
    try:
        # shield: a caller that gives up must not cancel the shared `ready` future
        await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(host.ready)), START_TIMEOUT)
    except asyncio.TimeoutError:
        host.abandon()
        raise KernelStartError(
            f"the embedded kernel {name!r} did not start within {START_TIMEOUT:.0f} s; "
            "see the process log for ipykernel errors"
        ) from None
    except KernelStartError:
        raise
    except Exception as exc:  # a failure inside the kernel thread
        raise KernelStartError(f"the embedded kernel {name!r} failed to start: {exc!r}") from exc
    return dict(host.info)


def _foreign_ipython() -> bool:
    """An IPython shell of someone else's runs in this process (ours are only made by a
    ``_KernelHost``, and ``start_kernel`` asks before making one)."""
    module = sys.modules.get("IPython.core.interactiveshell")
    return module is not None and module.InteractiveShell.initialized()


def stop_kernel() -> None:
    """Stop the kernel started by :func:`start_kernel`; a no-op when none runs.

    Stops the kernel's loop, closes its sockets, removes the connection file,
    unregisters its atexit hooks and clears ipykernel's singletons, so that
    :func:`start_kernel` can start a fresh kernel afterwards. A cell still
    running is interrupted and given ``INTERRUPT_WAIT`` seconds; a cell stuck
    in C (e.g. ``time.sleep(30)``) is abandoned with its daemon thread.
    Blocks for about 0.1-0.2 s normally. Cannot be called from inside the kernel.

    Example (in a server's close coroutine, or in a notebook cell on the host)::

        from xsched.jupyter.kernel import stop_kernel
        stop_kernel()
    """
    with _lock:
        host = _host
    if host is not None:
        host.stop()


def kernel_info() -> dict | None:
    """Return the connection info of the kernel running in this process, or None.

    Example::

        from xsched.jupyter.kernel import kernel_info
        info = kernel_info()          # None until start_kernel() has run
    """
    host = _host
    if host is None or not host.is_ready():
        return None
    return dict(host.info)


def run_on_host_loop(func: Callable, *args: Any, timeout: float = 10) -> Any:
    """Run ``func(*args)`` on the host's event loop and return its result.

    Code in the kernel runs in another thread than the server, so reading
    several fields of ``scheduler`` or ``worker`` can see a state halfway
    through an update. Running the read on the host loop gives a consistent
    snapshot. ``func`` may be a plain function or a coroutine function. Raises
    ``TimeoutError`` if the host loop does not get to it within ``timeout``
    seconds (it is blocked or very busy). It is in the kernel's namespace.

    Example (in a ``%scheduler`` cell)::

        %scheduler run_on_host_loop(lambda: {w: len(ks) for w, ks in scheduler.processing.items()})
    """
    host = _host
    if host is None:
        raise RuntimeError(
            "no embedded kernel runs in this process; run_on_host_loop() is for code "
            "running inside a kernel started by xsched.jupyter.kernel.start_kernel()"
        )
    loop = host.host_loop
    if loop.is_closed():
        raise RuntimeError("the host's event loop is closed (the server is shutting down)")
    label = getattr(func, "__qualname__", repr(func))
    if threading.get_ident() == host.host_thread_ident:
        result = func(*args)
        if inspect.isawaitable(result):
            raise RuntimeError(f"{label} returned an awaitable on the host loop's own thread; await it instead")
        return result

    async def call():
        result = func(*args)
        if inspect.isawaitable(result):
            result = await result
        return result

    future = asyncio.run_coroutine_threadsafe(call(), loop)
    deadline = time.monotonic() + timeout
    # Wait in short slices: a KeyboardInterrupt sent to the kernel thread
    # (PyThreadState_SetAsyncExc) is only raised between bytecodes.
    while True:
        try:
            return future.result(timeout=min(0.1, max(0.0, deadline - time.monotonic())))
        except concurrent.futures.TimeoutError:
            if time.monotonic() >= deadline:
                future.cancel()
                raise TimeoutError(
                    f"the host event loop did not run {label} within {timeout} s; it may be "
                    "blocked or very busy. Retry with a larger timeout=..."
                ) from None
        except BaseException:
            future.cancel()
            raise


# ---------------------------------------------------------------------------
# Interrupts without signals
# ---------------------------------------------------------------------------
# Our own prototype: ctypes.pythonapi functions are shared process-wide, and
# another library may have set argtypes on them. (The worker interrupts a task the same way:
# worker/interrupts.py.)
set_async_exc = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.py_object)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
)


def drain_async_exc(exc_type: type) -> None:
    """Let an exception set on this thread by ``set_async_exc`` and not raised yet land here,
    and swallow it. Never clear one with ``PyThreadState_SetAsyncExc(id, NULL)``: CPython
    then leaves the interpreter's eval breaker set for good (only a thread raising its
    exception resets it), and every thread pays for it at each check: code under a trace
    function (a debugger, coverage) crawls. A loop's backward jump is such a check, so a
    pending exception is raised within its first iterations."""
    try:
        for _ in range(64):
            pass
    except exc_type:
        pass


class _CellGuard:
    """Knows whether a cell runs in the kernel thread, and interrupts only that.

    A stock kernel interrupts by SIGINT to the whole process, which would hit
    the host. Here an interrupt raises KeyboardInterrupt in the kernel thread
    (PyThreadState_SetAsyncExc), and only while cell code is running: raised
    anywhere else it would kill the kernel's event loop. A cell with
    top-level ``await`` that is suspended is cancelled instead (its task gets
    CancelledError). A thread blocked in C (``time.sleep``, a lock) only sees
    the exception when it returns to Python.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.thread_ident: int | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._code = None  # code object of the cell code running now
        self._async = False
        self._future: asyncio.Future | None = None  # task of a running `await` cell
        self.executing = 0  # execute requests in flight
        self._fired = False  # an interrupt was set on the thread and may not have been raised yet

    @property
    def busy(self) -> bool:
        return self.executing > 0

    def enter(self, code_obj, async_: bool) -> None:
        with self._lock:
            self._code, self._async = code_obj, async_

    def leave(self) -> None:
        # Clear the flag under the lock, then let an interrupt still pending land here:
        # after this no KeyboardInterrupt can reach the event loop.
        while True:
            try:
                with self._lock:
                    self._code = None
                    fired, self._fired = self._fired, False
                if fired:
                    drain_async_exc(KeyboardInterrupt)
                return
            except KeyboardInterrupt:  # fired before we held the lock; retry
                continue

    def watch_future(self, future) -> None:
        with self._lock:
            self._future = future

    def unwatch_future(self, future) -> None:
        with self._lock:
            if self._future is future:
                self._future = None

    def interrupt(self) -> bool:
        """Interrupt the running cell; return False when there is none."""
        with self._lock:
            if self._code is None or self.thread_ident is None:
                return False
            if not self._async or self._cell_on_stack():
                # the thread is executing cell code (or what it calls) right now
                set_async_exc(self.thread_ident, KeyboardInterrupt)
                self._fired = True
                return True
            future, loop = self._future, self.loop
        if future is not None and loop is not None:
            loop.call_soon_threadsafe(_cancel_cell, future)
            return True
        return False

    def _cell_on_stack(self) -> bool:
        frame = sys._current_frames().get(self.thread_ident)
        while frame is not None:
            if frame.f_code is self._code:
                return True
            frame = frame.f_back
        return False


def _cancel_cell(future) -> None:
    if not future.done():
        future.cancel(msg="interrupted (xsched kernel interrupt)")


# ---------------------------------------------------------------------------
# stdout/stderr routed by thread
# ---------------------------------------------------------------------------
class _RoutedStream:
    """Stands in for sys.stdout/sys.stderr while a kernel runs.

    Writes from the kernel thread (cells) go to the kernel's OutStream, hence
    to IOPub and the notebook; writes from every other thread go to the
    stream that was there before, so the host's prints and logs stay where
    they were. A stock kernel swaps the streams and redirects fds 1 and 2 for
    the whole process.
    """

    def __init__(self, original, kernel_stream, is_kernel_thread: Callable[[], bool]) -> None:
        self._original = original
        self._kernel_stream = kernel_stream
        self._is_kernel_thread = is_kernel_thread
        self._detached = False

    def _target(self):
        if not self._detached and self._is_kernel_thread():
            return self._kernel_stream
        return self._original

    def detach(self) -> None:
        """Send every write to the original stream from now on."""
        self._detached = True

    def write(self, text):
        target = self._target()
        return len(text) if target is None else target.write(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        target = self._target()
        if target is not None:
            target.flush()

    def isatty(self):
        target = self._target()
        return bool(target is not None and target.isatty())

    def writable(self):
        return True

    def fileno(self):
        # fd-level output (C extensions, faulthandler) still goes to the real fd
        if self._original is None:
            raise OSError("no file descriptor: the original stream was None")
        return self._original.fileno()

    # ipykernel 7.4: the shell tells sys.stdout/sys.stderr about the message
    # being handled (set_parent / set_thread_parent); pass that to the kernel's stream.
    def set_parent(self, parent):
        return self._kernel_stream.set_parent(parent)

    def set_thread_parent(self, parent):
        return self._kernel_stream.set_thread_parent(parent)

    def reset_thread_parent(self, token):
        return self._kernel_stream.reset_thread_parent(token)

    @property
    def parent_header(self):
        return self._kernel_stream.parent_header

    @property
    def encoding(self):
        return getattr(self._target(), "encoding", "utf-8")

    @property
    def errors(self):
        return getattr(self._target(), "errors", "strict")

    def __getattr__(self, attr):
        return getattr(self._target(), attr)


# ---------------------------------------------------------------------------
# The ipykernel subclasses (built in the kernel thread: importing ipykernel
# takes ~0.2 s and must not block the host loop)
# ---------------------------------------------------------------------------
def _hosted_classes():
    global _classes
    if _classes is not None:
        return _classes

    import zmq

    # ipykernel 7.4: ipykernel.debugger imports debugpy at import time, which
    # imports pydevd, sets PYDEVD_USE_FRAME_EVAL in os.environ and shuffles
    # sys.path. The debugger is disabled here anyway, so hide debugpy while
    # ipykernel loads (unless the host already imported it) and unhide it after.
    hide_debugpy = "debugpy" not in sys.modules and "ipykernel.debugger" not in sys.modules
    if hide_debugpy:
        sys.modules["debugpy"] = None  # makes `import debugpy` raise ImportError
    try:
        import ipykernel.debugger  # noqa: F401 - decides _is_debugpy_available once, now
        from ipykernel.displayhook import ZMQDisplayHook
        from ipykernel.ipkernel import IPythonKernel
        from ipykernel.iostream import IOPubThread, OutStream
        from ipykernel.kernelapp import IPKernelApp
        from ipykernel.subshell import SubshellThread
        from ipykernel.zmqshell import ZMQInteractiveShell
    finally:
        if hide_debugpy and sys.modules.get("debugpy", 0) is None:
            del sys.modules["debugpy"]
    from traitlets import Any as AnyTrait
    from traitlets import Type

    class _Shell(ZMQInteractiveShell):
        """The stock shell minus its process-wide changes."""

        def init_sys_modules(self):
            pass  # stock replaces sys.modules['__main__'] with the kernel's namespace

        def init_environment(self):
            pass  # stock sets TERM, FORCE_COLOR, PAGER, ... in os.environ

        def init_prompts(self):
            pass  # stock sets sys.ps1/ps2 (libraries read them as "interactive session")

        def excepthook(self, etype, value, tb):
            # IPython installs this as sys.excepthook while a cell runs; an
            # uncaught error in another thread is not the cell's business.
            if threading.get_ident() != self.kernel._xguard.thread_ident:
                hook = getattr(self, "sys_excepthook", None) or sys.__excepthook__
                return hook(etype, value, tb)
            return super().excepthook(etype, value, tb)

        async def run_code(self, code_obj, result=None, *, async_=False):
            # IPython 9: run_code executes one compiled piece of a cell; this
            # is the only window in which an interrupt may be delivered.
            guard = self.kernel._xguard
            guard.enter(code_obj, async_)
            outflag = True
            try:
                try:
                    outflag = await super().run_code(code_obj, result, async_=async_)
                finally:
                    guard.leave()
            except KeyboardInterrupt as exc:
                # The interrupt landed after IPython's own handler: show it as the
                # cell's error rather than letting it escape into the kernel.
                guard.leave()
                if result is not None:
                    result.error_in_exec = exc
                self.showtraceback()
            return outflag

    class _Kernel(IPythonKernel):
        """The stock kernel minus signals and child-process killing."""

        shell_class = Type(_Shell)

        @property
        def _xguard(self) -> _CellGuard:
            return self.parent.xsched_host.guard

        def pre_handler_hook(self):
            pass  # stock installs a SIGINT handler (main thread only)

        def post_handler_hook(self):
            pass

        @contextlib.contextmanager
        def _cancel_on_sigint(self, future):
            # ipykernel 7.4: do_execute wraps an `await` cell's task in this;
            # stock calls signal.signal (fails off the main thread, no reply).
            self._xguard.watch_future(future)
            try:
                yield
            finally:
                self._xguard.unwatch_future(future)

        async def execute_request(self, stream, ident, parent):
            guard = self._xguard
            guard.executing += 1
            try:
                await super().execute_request(stream, ident, parent)
            finally:
                guard.executing -= 1

        def _send_interrupt_children(self):
            # ipykernel 7.4: interrupt_request calls this; stock sends SIGINT to
            # the host's process group.
            self._xguard.interrupt()

        def _process_children(self):
            return []  # stock kills every child of the host process on shutdown

        @property
        def kernel_info(self):
            info = super().kernel_info
            info["supported_features"] = [f for f in info.get("supported_features", []) if f != "debugger"]
            return info

        async def poll_stopped_queue(self):
            return  # ipykernel 7.4 polls the debugger forever on the control loop; no debugger here

        async def do_debug_request(self, msg):
            # debugpy would trace every thread of the server; not offered here.
            return {
                "type": "response",
                "request_seq": msg.get("seq"),
                "success": False,
                "command": msg.get("command"),
                "message": "the debugger is disabled in xsched's embedded kernels",
            }

    class _App(IPKernelApp):
        """IPKernelApp that changes nothing outside its own thread and sockets."""

        name = "xsched-kernel"
        kernel_class = Type(_Kernel)
        xsched_host = AnyTrait()

        # -- process-wide set-up that stock does and we must not ------------
        def init_crash_handler(self):
            pass  # stock replaces sys.excepthook

        def init_pdb(self):
            pass  # stock patches pdb.Pdb and pdb.set_trace

        def init_signal(self):
            pass  # stock ignores SIGINT for the whole process

        def init_poller(self):
            self.poller = None  # stock may os._exit the host when its parent dies

        def init_path(self):
            pass  # stock inserts '' into sys.path

        def init_gui_pylab(self):
            pass  # stock sets MPLBACKEND in os.environ

        def init_extensions(self):
            pass  # no profile extensions in a server

        def init_code(self):
            # no startup files or exec_lines from the user's profile
            self.shell._sys_modules_keys = set(sys.modules.keys())

        def init_config_files(self):
            pass

        def load_config_file(self, *args, **kwargs):
            pass  # config comes from us only, never from profile files

        def _configure_logging(self):
            pass  # traitlets would logging.config.dictConfig() the whole process

        def configure_tornado_logger(self):
            pass  # stock adds a handler to the 'tornado' logger

        def log_connection_info(self):
            # stock prints a banner to the real stdout; keep only the ports
            self._ports = dict(
                shell=self.shell_port,
                iopub=self.iopub_port,
                stdin=self.stdin_port,
                hb=self.hb_port,
                control=self.control_port,
            )

        def init_connection_file(self):
            # stock searches the cwd and registers an atexit cleanup; we own the path
            Path(self.connection_file).parent.mkdir(mode=0o700, parents=True, exist_ok=True)

        def init_sockets(self):
            super().init_sockets()
            atexit.unregister(self.close)  # ipykernel 7.4 registers it; our hook closes

        def init_iopub(self, context):
            # ipykernel 7.4 init_iopub, minus the tornado logger set-up and the
            # extra TCP port that forwards output of forked children.
            self.iopub_socket = context.socket(zmq.XPUB)
            self.iopub_socket.linger = 1000
            self.iopub_port = self._bind_socket(self.iopub_socket, self.iopub_port)
            self.iopub_thread = IOPubThread(self.iopub_socket, pipe=False, session=self.session)
            self.iopub_thread.start()
            atexit.unregister(self.iopub_thread.stop)
            self.iopub_socket = self.iopub_thread.background_socket

        def init_io(self):
            # watchfd=False: stock would dup2 fds 1 and 2 for the whole process
            out = OutStream(self.session, self.iopub_thread, "stdout", watchfd=False)
            err = OutStream(self.session, self.iopub_thread, "stderr", watchfd=False)
            self.xsched_host.install_streams(out, err, SubshellThread)
            # init_kernel needs self.displayhook; stock also makes it sys.displayhook
            self.displayhook = ZMQDisplayHook(self.session, self.iopub_socket)

        def reset_io(self):
            pass  # the host restores sys.stdout/sys.stderr itself (see _KernelHost)

    class _Classes:
        App, Kernel, Shell = _App, _Kernel, _Shell

    _classes = _Classes
    return _classes


class _DropLoopbackTcpWarning(logging.Filter):
    """ipykernel warns on every start that TCP is unencrypted; on loopback the
    messages are HMAC-signed and never leave the host, so the warning is noise."""

    def filter(self, record):
        return not str(record.msg).startswith("Kernel is running over TCP without encryption")


def _is_loopback(ip: str) -> bool:
    return ip in ("localhost", "::1") or ip.startswith("127.")


_DIR_PREFIX = "xsched-kernel-"


def _kernel_dir() -> str:
    """A fresh 0700 directory for one kernel's connection file and IPython profile.

    It lives in JUPYTER_RUNTIME_DIR if set, else in the system temp dir, and is
    named after our pid, so directories left by killed processes (a nanny
    restarting a worker) can be recognised and swept by the next kernel.
    """
    parent = os.environ.get("JUPYTER_RUNTIME_DIR") or tempfile.gettempdir()
    Path(parent).mkdir(mode=0o700, parents=True, exist_ok=True)
    _sweep_stale_dirs(parent)
    return tempfile.mkdtemp(prefix=f"{_DIR_PREFIX}{os.getpid()}-", dir=parent)  # mode 0700


def _sweep_stale_dirs(parent: str) -> None:
    """Remove our kernel directories whose process is gone."""
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return
    for entry in entries:
        match = re.fullmatch(re.escape(_DIR_PREFIX) + r"(\d+)-\w+", entry.name)
        if not match or int(match.group(1)) == os.getpid():
            continue
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.stat().st_uid != os.getuid():
                continue
            os.kill(int(match.group(1)), 0)  # raises if no such process
        except ProcessLookupError:
            shutil.rmtree(entry.path, ignore_errors=True)
        except OSError:
            continue


class _KernelHost:
    """One embedded kernel: its thread, loop, app, files and the clean-up of all of them."""

    def __init__(self, namespace: dict, *, name: str, ip: str, host_loop: asyncio.AbstractEventLoop):
        self.name = name
        self.ip = ip
        self.host_loop = host_loop
        self.host_thread_ident = threading.get_ident()
        self.namespace = dict(namespace)  # same objects; the host's dict stays unpolluted
        self.namespace.setdefault("run_on_host_loop", run_on_host_loop)
        self.ready: concurrent.futures.Future = concurrent.futures.Future()
        self.info: dict = {}
        self.guard = _CellGuard()
        self.thread: threading.Thread | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.io_loop = None
        self.app = None
        self._finalized = False
        self._stop_requested = False
        self._final_lock = threading.Lock()
        self._streams: list[tuple[str, Any, _RoutedStream]] = []
        self._builtins_before = {k for k in ("__IPYTHON__", "display") if k in builtins.__dict__}
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "kernel"
        self.kernel_dir = _kernel_dir()
        self.connection_file = os.path.join(self.kernel_dir, f"kernel-xsched-{safe}-{os.getpid()}.json")
        self.ipython_dir = os.path.join(self.kernel_dir, "ipython")
        os.mkdir(self.ipython_dir, 0o700)
        self.started_at = time.perf_counter()
        self.start_seconds: float | None = None

    def is_ready(self) -> bool:
        ready = self.ready
        return ready.done() and not ready.cancelled() and ready.exception() is None

    def _resolve(self, exc: BaseException | None = None) -> None:
        if not self.ready.done():
            with contextlib.suppress(concurrent.futures.InvalidStateError):
                if exc is None:
                    self.ready.set_result(True)
                else:
                    self.ready.set_exception(exc)

    # -- start ---------------------------------------------------------------
    def launch(self) -> None:
        self.thread = threading.Thread(target=self._thread_main, name=f"xsched-kernel-{self.name}", daemon=True)
        self.thread.start()
        atexit.register(_stop_at_exit)

    def _thread_main(self) -> None:
        self.guard.thread_ident = threading.get_ident()
        loop = self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self.guard.loop = loop
        try:
            loop.run_until_complete(self._boot())
        except BaseException as exc:  # noqa: BLE001 - report every failure to start_kernel
            self._close_in_thread()
            self._finalize()
            if not isinstance(exc, Exception):  # e.g. SystemExit from traitlets' app.exit(1)
                cause, exc = exc, KernelStartError(f"ipykernel gave up during start-up ({exc!r}); see the log")
                exc.__cause__ = cause
            self._resolve(exc)
            return
        # Resolve `ready` from inside run_forever: a stop() that follows at once
        # then lands in this loop, not in the tail of run_until_complete.
        loop.call_soon(self._resolve)
        try:
            if not self._stop_requested:
                loop.run_forever()
        finally:
            self._close_in_thread()
            self._finalize()

    async def _boot(self) -> None:
        classes = _hosted_classes()
        from traitlets.config import Config

        config = Config()
        config.HistoryManager.hist_file = ":memory:"  # nothing written to the user's profile
        loopback_filter = _DropLoopbackTcpWarning() if _is_loopback(self.ip) else None
        if loopback_filter:
            _kernel_log.addFilter(loopback_filter)
        try:
            app = self.app = classes.App.instance(
                config=config,
                log=_kernel_log,
                ip=self.ip,
                transport="tcp",
                connection_file=self.connection_file,
                user_ns=self.namespace,
                xsched_host=self,
            )
            # A private profile: no startup files, config or history from $HOME.
            # IPython 9: setting ipython_dir removes abspath(<old value>) from
            # sys.path; before the default is computed the old value is '', i.e.
            # the cwd. Reading it first makes the old value the real default.
            _ = app.ipython_dir
            app.ipython_dir = self.ipython_dir
            app.initialize([])  # empty argv: never parse the host's command line
        finally:
            if loopback_filter:
                _kernel_log.removeFilter(loopback_filter)
        atexit.unregister(app.shell.atexit_operations)  # IPython registers it; it would clear the namespace
        os.chmod(self.connection_file, 0o600)
        from tornado.ioloop import IOLoop

        self.io_loop = IOLoop.current()  # tornado's wrapper of this thread's running loop
        app.kernel.start()  # ipykernel 7.4: registers the stream handlers on this thread's loop
        session = app.session
        self.info = {
            "transport": app.transport,
            "ip": app.ip,
            "shell_port": int(app.shell_port),
            "iopub_port": int(app.iopub_port),
            "stdin_port": int(app.stdin_port),
            "control_port": int(app.control_port),
            "hb_port": int(app.hb_port),
            "key": session.key.decode("ascii"),
            "signature_scheme": session.signature_scheme,
            "kernel_name": "python3",
            "name": self.name,
            "pid": os.getpid(),
            "connection_file": self.connection_file,
        }
        self.start_seconds = time.perf_counter() - self.started_at
        logger.info(
            "kernel %r started in %.2f s (connection file %s)", self.name, self.start_seconds, self.connection_file
        )

    def install_streams(self, out, err, subshell_thread_class) -> None:
        """Route kernel-thread writes to IOPub (called by _App.init_io in the kernel thread)."""
        kernel_ident = self.guard.thread_ident

        def is_kernel_thread() -> bool:
            return threading.get_ident() == kernel_ident or isinstance(
                threading.current_thread(), subshell_thread_class
            )

        for name, stream in (("stdout", out), ("stderr", err)):
            original = getattr(sys, name)
            routed = _RoutedStream(original, stream, is_kernel_thread)
            self._streams.append((name, original, routed))
            setattr(sys, name, routed)

    # -- stop ----------------------------------------------------------------
    def stop(self) -> None:
        thread = self.thread
        if thread is not None and threading.get_ident() == thread.ident:
            raise RuntimeError(
                "stop_kernel() cannot run inside the kernel it stops; call it from the host "
                "(or send the kernel a shutdown request, e.g. `exit` in a console)"
            )
        if not self.ready.done():
            # still starting: wait for the outcome before tearing down
            with contextlib.suppress(BaseException):
                self.ready.result(START_TIMEOUT)
        if self.guard.busy:
            self.guard.interrupt()
            deadline = time.monotonic() + INTERRUPT_WAIT
            while self.guard.busy and time.monotonic() < deadline:
                time.sleep(0.01)
        self._stop_requested = True
        loop = self.loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # closed between the check and the call
                loop.call_soon_threadsafe(loop.stop)
        if thread is not None and thread.is_alive():
            # a cell still busy after the interrupt will not let the loop stop soon
            stuck = self.guard.busy
            thread.join(0.2 if stuck else JOIN_TIMEOUT)
            if thread.is_alive():
                logger.warning(
                    "kernel %r did not stop: %s; abandoning its daemon thread",
                    self.name,
                    "a cell ignored the interrupt (blocked in C code, e.g. time.sleep)"
                    if stuck
                    else f"its sockets did not close within {JOIN_TIMEOUT} s",
                )
        self._finalize()

    def abandon(self) -> None:
        """start_kernel gave up waiting: stop whatever came up."""
        threading.Thread(target=self.stop, daemon=True, name="xsched-kernel-abandon").start()

    def _close_in_thread(self) -> None:
        """In the kernel thread, once its loop has stopped: close sockets and threads."""
        loop = self.loop
        app = self.app
        try:
            if loop is not None and not loop.is_closed():
                pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
                for task in pending:
                    task.cancel()
                if pending:
                    loop.run_until_complete(asyncio.wait(pending, timeout=1.0))
                loop.run_until_complete(loop.shutdown_asyncgens())
        except Exception:  # noqa: BLE001
            logger.debug("error cancelling kernel tasks", exc_info=True)
        try:
            if app is not None:
                shell = getattr(app, "shell", None)
                history = getattr(shell, "history_manager", None)
                if history is not None:
                    history.close()
                # ipykernel 7.4 leaves a task pending on the control loop (debugger
                # queue) and the IOPub loop (event-pipe gc); closing their loops
                # with those tasks prints "Task was destroyed but it is pending!".
                for thread in (app.control_thread, app.iopub_thread):
                    _drain_tasks(getattr(thread, "io_loop", None))
                app.close()  # ipykernel 7.4: heartbeat, iopub, control, shell-channel, sockets, context
        except Exception:  # noqa: BLE001
            logger.warning("error closing kernel %r", self.name, exc_info=True)
        try:
            if self.io_loop is not None:
                self.io_loop.close(all_fds=False)  # also closes the asyncio loop
            if loop is not None and not loop.is_closed():
                loop.close()
        except Exception:  # noqa: BLE001
            logger.debug("error closing the kernel loop", exc_info=True)

    def _finalize(self) -> None:
        """Undo everything process-wide; safe from any thread, runs once."""
        global _host
        with self._final_lock:
            if self._finalized:
                return
            self._finalized = True
        for name, original, routed in self._streams:
            routed.detach()
            if getattr(sys, name) is routed:
                setattr(sys, name, original)
        with contextlib.suppress(OSError):
            os.unlink(self.connection_file)  # first: the file holds the key
        shutil.rmtree(self.kernel_dir, ignore_errors=True)
        atexit.unregister(_stop_at_exit)
        classes = _classes
        app = self.app
        if classes is not None:
            if app is not None:
                shell = getattr(app, "shell", None)
                if shell is not None:
                    atexit.unregister(shell.atexit_operations)
                atexit.unregister(app.close)
                if getattr(app, "iopub_thread", None) is not None:
                    atexit.unregister(app.iopub_thread.stop)
            classes.Shell.clear_instance()
            classes.Kernel.clear_instance()
            classes.App.clear_instance()
            # ipykernel 7.4: one CommManager per process, bound to the first kernel
            import ipykernel.ipkernel

            ipykernel.ipkernel._comm_manager = None
        for key in ("__IPYTHON__", "display"):
            if key not in self._builtins_before:
                builtins.__dict__.pop(key, None)
        with _lock:
            if _host is self:
                _host = None
        logger.info("kernel %r stopped", self.name)


def _drain_tasks(io_loop, timeout: float = 0.5) -> None:
    """Cancel and await every task of another thread's running loop."""
    loop = getattr(io_loop, "asyncio_loop", None)
    if loop is None or loop.is_closed() or not loop.is_running():
        return

    async def drain():
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    with contextlib.suppress(Exception):
        asyncio.run_coroutine_threadsafe(drain(), loop).result(timeout)


def _stop_at_exit() -> None:
    """atexit: stop a kernel still running so the process exits cleanly."""
    try:
        stop_kernel()
    except Exception:  # noqa: BLE001 - never fail interpreter exit
        logger.warning("error stopping the embedded kernel at exit", exc_info=True)

