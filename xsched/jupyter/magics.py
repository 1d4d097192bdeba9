"""``%scheduler``, ``%remote`` and per-kernel magics: run code in an embedded kernel.

The scheduler and workers host IPython kernels (xsched.jupyter.kernel). This
module is the notebook side: a magic sends its code to such a kernel and
re-emits what comes back in the calling session, so the output lands in the
cell that ran the magic.

Data flow::

    notebook cell: %scheduler scheduler.processing
        |  _run_remote(info, code)
        |    one BlockingKernelClient per connection (cached, closed at exit)
        |    heartbeat ping (fails fast when the kernel is gone)
        |    execute_interactive(code, output_hook=_OutputRelay)
        v
    kernel in the scheduler process --IOPub--> _OutputRelay
        stream            -> print to this session's sys.stdout / sys.stderr
        execute_result,
        display_data      -> IPython.display.publish_display_data (rich output)
        clear_output      -> IPython.display.clear_output
    execute_reply status "error" -> raise RemoteKernelError, whose traceback
        (IPython's _render_traceback_ hook) is the remote one

    a line magic holding one expression (r = %scheduler len(scheduler.tasks)):
        "_xsched_magic_value = (expr)" runs as above, and a user expression of the same
        request pops it and pickles it (kernel.pack_value); the magic returns the
        unpickled value, which IPython shows as the cell's result

When IPython's own event loop runs (inside a notebook kernel) jupyter_client
runs the request in a helper thread; no nest_asyncio is needed.
"""

from __future__ import annotations

import ast
import atexit
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import threading
import tokenize
from typing import Any

from .. import hooks
from .kernel import unpack_value

__all__ = [
    "RemoteKernelError",
    "register_kernel_magic",
    "register_remote_magic",
    "remember_scheduler_kernel",
    "load_ipython_extension",
    "run_in_kernel",
    "eval_in_kernel",
    "open_qtconsole",
    "close_kernel_clients",
]

#: keys a connection info dict must hold
REQUIRED_KEYS = ("ip", "key", "shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")
#: seconds to wait for a heartbeat before declaring a kernel unreachable
PING_TIMEOUT = 3.0
#: seconds to wait for a new connection's first kernel_info reply
CONNECT_TIMEOUT = 10.0


class RemoteKernelError(RuntimeError):
    """Code run in a remote kernel raised; the remote traceback comes with it.

    ``ename``/``evalue`` name the remote exception; ``remote_traceback`` holds
    its traceback lines (with ANSI colours). IPython shows the remote traceback
    instead of the local one (``_render_traceback_``).
    """

    def __init__(self, label: str, ename: str, evalue: str, traceback: list[str]):
        self.label = label
        self.ename = ename
        self.evalue = evalue
        self.remote_traceback = list(traceback)
        super().__init__(f"{ename}: {evalue} (raised in kernel {label})")

    def _render_traceback_(self) -> list[str]:
        header = f"Error in kernel {self.label}:"
        return [header, *self.remote_traceback] if self.remote_traceback else [header, str(self)]


# ---------------------------------------------------------------------------
# Connection info and cached clients
# ---------------------------------------------------------------------------
_clients_lock = threading.Lock()
_clients: dict[tuple, Any] = {}  # connection key -> BlockingKernelClient
_client_locks: dict[tuple, threading.Lock] = {}
_scheduler_kernels: list[dict] = []  # most recent last


def _check_info(info: Any, where: str = "connection info") -> dict:
    """Return ``info`` as a dict, or raise ValueError saying what is wrong."""
    if isinstance(info, (str, os.PathLike)):
        path = os.fspath(info)
        try:
            with open(path) as f:
                info = json.load(f)
        except OSError as exc:
            raise ValueError(f"cannot read connection file {path!r}: {exc}") from None
    if not isinstance(info, dict):
        raise ValueError(
            f"{where} must be the dict returned by client.start_ipython_scheduler() / "
            f"start_ipython_workers() (or a connection file path), not {type(info).__name__}"
        )
    missing = [k for k in REQUIRED_KEYS if k not in info]
    if missing:
        raise ValueError(f"{where} lacks {', '.join(missing)}; pass the dict returned by start_ipython_*()")
    return info


def _key(info: dict) -> tuple:
    return (
        info.get("transport", "tcp"),
        info["ip"],
        int(info["shell_port"]),
        int(info["iopub_port"]),
        int(info["stdin_port"]),
        int(info["control_port"]),
        int(info["hb_port"]),
        str(info["key"]),
        info.get("signature_scheme", "hmac-sha256"),
    )


def _label(info: dict) -> str:
    name = info.get("name") or "kernel"
    pid = info.get("pid")
    where = f"{info['ip']}:{info['shell_port']}"
    return f"{name!r} ({where}{f', pid {pid}' if pid else ''})"


def _ping(info: dict, timeout: float = PING_TIMEOUT) -> bool:
    """One heartbeat round trip; the heartbeat answers even while a cell runs."""
    import zmq

    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.REQ)
    sock.linger = 0
    try:
        transport = info.get("transport", "tcp")
        if transport == "tcp":
            sock.connect(f"tcp://{info['ip']}:{int(info['hb_port'])}")
        else:
            sock.connect(f"{transport}://{info['ip']}-{int(info['hb_port'])}")
        sock.send(b"ping")
        return bool(sock.poll(int(timeout * 1000)))
    finally:
        sock.close()


def _client(info: dict):
    """The cached BlockingKernelClient for ``info``, connecting on first use."""
    from jupyter_client import BlockingKernelClient

    key = _key(info)
    with _clients_lock:
        client = _clients.get(key)
        if client is not None:
            return client, _client_locks[key]
    client = BlockingKernelClient()
    client.load_connection_info(info)
    client.start_channels(hb=False)  # liveness comes from _ping, without a thread
    try:
        client.wait_for_ready(timeout=CONNECT_TIMEOUT)
    except Exception as exc:
        client.stop_channels()
        raise ConnectionError(
            f"kernel {_label(info)} answers heartbeats but not requests within {CONNECT_TIMEOUT:.0f} s "
            f"({exc}); is its key right? Take the info again from start_ipython_*()"
        ) from None
    with _clients_lock:
        existing = _clients.get(key)
        if existing is not None:  # another thread connected meanwhile
            client.stop_channels()
            return existing, _client_locks[key]
        _clients[key] = client
        _client_locks[key] = threading.Lock()
        return client, _client_locks[key]


def _drop_client(info: dict) -> None:
    with _clients_lock:
        client = _clients.pop(_key(info), None)
        _client_locks.pop(_key(info), None)
    if client is not None:
        try:
            client.stop_channels()
        except Exception:  # noqa: BLE001
            pass


def close_kernel_clients() -> None:
    """Close every cached kernel connection (runs at exit; safe to call any time).

    Example::

        from xsched.jupyter.magics import close_kernel_clients
        close_kernel_clients()   # the next %scheduler reconnects
    """
    with _clients_lock:
        clients = list(_clients.values())
        _clients.clear()
        _client_locks.clear()
    for client in clients:
        try:
            client.stop_channels()
        except Exception:  # noqa: BLE001
            pass


atexit.register(close_kernel_clients)


# ---------------------------------------------------------------------------
# Running code remotely
# ---------------------------------------------------------------------------
class _OutputRelay:
    """output_hook for execute_interactive: re-emit IOPub messages here."""

    def __init__(self) -> None:
        self.error: dict | None = None

    def __call__(self, msg: dict) -> None:
        msg_type = msg["header"]["msg_type"]
        content = msg["content"]
        if msg_type == "stream":
            stream = sys.stderr if content.get("name") == "stderr" else sys.stdout
            stream.write(content.get("text", ""))
            stream.flush()
        elif msg_type in ("execute_result", "display_data", "update_display_data"):
            from IPython.display import publish_display_data

            kwargs = {"data": content.get("data", {}), "metadata": content.get("metadata") or {}}
            if content.get("transient"):
                kwargs["transient"] = content["transient"]
            if msg_type == "update_display_data":
                kwargs["update"] = True
            publish_display_data(**kwargs)
        elif msg_type == "clear_output":
            from IPython.display import clear_output

            clear_output(wait=content.get("wait", False))
        elif msg_type == "error":
            self.error = content  # raised after the reply, see run_in_kernel


def run_in_kernel(info: dict, code: str, *, timeout: float | None = None,
                  user_expressions: dict | None = None) -> dict:
    """Run ``code`` in the kernel described by ``info``; show its output here.

    Output (prints, results, rich displays) is re-emitted in the calling
    session. Raises :class:`RemoteKernelError` carrying the remote traceback
    if the code raised, ``ConnectionError`` if the kernel is unreachable,
    ``TimeoutError`` after ``timeout`` seconds (None: wait). Interrupting
    (Ctrl-C / the notebook's stop button) also interrupts the remote cell.
    Returns the reply content.

    Example::

        info = client.start_ipython_scheduler()
        run_in_kernel(info, "len(scheduler.processing)")
    """
    info = _check_info(info)
    if not _ping(info):
        _drop_client(info)
        raise ConnectionError(
            f"kernel {_label(info)} does not answer its heartbeat; its process may have stopped. "
            "Start it again with client.start_ipython_scheduler() / start_ipython_workers()"
        )
    client, lock = _client(info)
    relay = _OutputRelay()
    with lock:
        try:
            reply = client.execute_interactive(
                code,
                user_expressions=user_expressions,
                output_hook=relay,
                allow_stdin=False,
                # each magic is one request: an error must not abort the next one
                stop_on_error=False,
                timeout=timeout,
            )
        except KeyboardInterrupt:
            _interrupt(client)
            raise
        except TimeoutError:
            _interrupt(client)
            raise TimeoutError(
                f"code in kernel {_label(info)} did not finish within {timeout} s; it was interrupted"
            ) from None
    content = reply["content"]
    if content.get("status") == "error":
        error = {**(relay.error or {}), **{k: content[k] for k in ("ename", "evalue", "traceback") if k in content}}
        raise RemoteKernelError(
            _label(info), error.get("ename", "Error"), error.get("evalue", ""), error.get("traceback", [])
        )
    if content.get("status") == "aborted":
        raise RemoteKernelError(_label(info), "Aborted", "the kernel aborted the request", [])
    return content


#: where a line magic's value waits in the kernel's namespace, between the statement that
#: computes it and the user expression that takes it away (pickled)
_VALUE_NAME = "_xsched_magic_value"


def eval_in_kernel(info: dict, expr: str, *, timeout: float | None = None) -> Any:
    """Evaluate the expression ``expr`` in the kernel described by ``info`` and return its
    value here: what ``r = %scheduler expr`` gives ``r``.

    Its output (prints, displays) is shown here as with ``run_in_kernel``. The value is
    pickled in the kernel's process and unpickled here; one that cannot be pickled comes
    back as a ``RemoteRepr`` showing its repr. The kernel keeps no reference to it.

    Example::

        info = client.start_ipython_scheduler()
        n = eval_in_kernel(info, "len(scheduler.tasks)")
    """
    reply = run_in_kernel(
        info, f"{_VALUE_NAME} = (\n{expr}\n)", timeout=timeout,
        user_expressions={"value": f"__import__('xsched.jupyter.kernel', fromlist=['pack_value'])"
                                   f".pack_value(vars().pop({_VALUE_NAME!r}, None))"})
    got = reply.get("user_expressions", {}).get("value", {})
    if got.get("status") != "ok":
        raise RemoteKernelError(_label(info), got.get("ename", "Error"),
                                f"the value could not be sent back: {got.get('evalue', got)}",
                                got.get("traceback", []))
    return unpack_value(ast.literal_eval(got["data"]["text/plain"]))


def _is_expression(code: str) -> bool:
    """One expression (a line magic then returns its value), not statements."""
    try:
        ast.parse(code.strip(), mode="eval")
    except SyntaxError:
        return False
    return True


def _interrupt(client) -> None:
    """Ask the kernel to interrupt its running cell (best effort)."""
    try:
        client.control_channel.send(client.session.msg("interrupt_request", {}))
    except Exception:  # noqa: BLE001
        pass


# ---------------------------------------------------------------------------
# Magics
# ---------------------------------------------------------------------------
def _get_shell(shell):
    """The given shell, else the running IPython session, else None (a plain script)."""
    if shell is not None:
        return shell
    if "IPython" not in sys.modules:
        return None
    from IPython import get_ipython

    return get_ipython()


def _usage_error(message: str):
    from IPython.core.error import UsageError

    return UsageError(message)


def _run_magic(info: dict, code: str, line: bool) -> Any:
    """A magic's work: a line holding one expression returns its value (``r = %scheduler
    expr``; IPython shows it as the cell's result); statements and cells run and return
    None, their results shown as the kernel displays them."""
    if line and _is_expression(code):
        return eval_in_kernel(info, code)
    run_in_kernel(info, code)
    return None


def register_kernel_magic(info: dict, magic_name: str, shell=None) -> bool:
    """Register ``%<magic_name>`` / ``%%<magic_name>`` running code in one kernel.

    The line form runs the rest of the line, the cell form the cell body.
    Output appears in the calling cell; a remote error is raised here with the
    remote traceback. ``client.start_ipython_scheduler()`` calls this for
    ``%scheduler``; call it yourself to name a worker's kernel. Outside
    IPython (a plain script) there is nothing to register: returns False.

    Example::

        infos = client.start_ipython_workers()
        addr = next(iter(infos))
        register_kernel_magic(infos[addr], "w0")
        %w0 worker.active
    """
    info = dict(_check_info(info))
    shell = _get_shell(shell)
    if shell is None:
        return False

    def kernel_magic(line: str, cell: str | None = None):
        if cell is None:
            code = line
        else:
            if line.strip():
                raise _usage_error(
                    f"%%{magic_name} takes no arguments; put the code in the cell body below it"
                )
            code = cell
        if not code.strip():
            raise _usage_error(f"usage: %{magic_name} <expression or statement>   or   %%{magic_name} + cell body")
        return _run_magic(info, code, cell is None)

    kernel_magic.__doc__ = f"Run code in kernel {_label(info)}: %{magic_name} expr, or %%{magic_name} cell."
    shell.register_magic_function(kernel_magic, magic_kind="line_cell", magic_name=magic_name)
    return True


def _split_first_expression(line: str) -> tuple[str, str]:
    """Split ``"info['a b'] worker.active"`` into the first expression and the rest.

    The expression ends at the first whitespace outside brackets and strings.
    """
    depth = 0
    prev_end = None
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(line).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        tokens = []
    for tok in tokens:
        if tok.type in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.COMMENT):
            break
        if depth == 0 and prev_end is not None and tok.start[1] > prev_end:
            return line[: prev_end].strip(), line[prev_end:].strip()
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
        prev_end = tok.end[1]
    parts = line.strip().split(None, 1)
    return (parts[0], parts[1]) if len(parts) == 2 else (line.strip(), "")


def register_remote_magic(shell=None) -> bool:
    """Register ``%remote info_expr code`` and ``%%remote info_expr`` + cell body.

    ``info_expr`` is evaluated in the notebook's namespace and must give a
    kernel's connection info (a dict from ``start_ipython_*()``, or a
    connection file path). It ends at the first space outside brackets.
    Returns False (and registers nothing) outside IPython.

    Example::

        info = client.start_ipython_workers()
        %remote info['tcp://127.0.0.1:3595'] worker.active
    """
    shell = _get_shell(shell)
    if shell is None:
        return False

    def remote(line: str, cell: str | None = None):
        expr, rest = _split_first_expression(line)
        code = rest if cell is None else cell
        if not expr or not code.strip():
            raise _usage_error(
                "usage: %remote <info expression> <code>   or   %%remote <info expression> + cell body, "
                "e.g. %remote info['tcp://127.0.0.1:3595'] worker.active"
            )
        if cell is not None and rest:
            raise _usage_error(f"%%remote takes only the info expression on its first line, got also {rest!r}")
        try:
            info = eval(expr, shell.user_global_ns, shell.user_ns)  # noqa: S307 - the user's own expression
        except Exception as exc:
            raise _usage_error(f"%remote: evaluating {expr!r} failed: {type(exc).__name__}: {exc}") from None
        try:
            info = _check_info(info, where=f"%remote: {expr!r}")
        except ValueError as exc:
            raise _usage_error(str(exc)) from None
        return _run_magic(info, code, cell is None)

    shell.register_magic_function(remote, magic_kind="line_cell", magic_name="remote")
    return True


def remember_scheduler_kernel(info: dict) -> None:
    """Record ``info`` as this session's scheduler kernel (used by ``%scheduler``).

    Example::

        remember_scheduler_kernel(info)   # what client.start_ipython_scheduler() does
    """
    info = dict(_check_info(info))
    _scheduler_kernels[:] = [i for i in _scheduler_kernels if _key(i) != _key(info)]
    _scheduler_kernels.append(info)


def _register_scheduler_lookup(shell) -> None:
    def scheduler(line: str, cell: str | None = None):
        if not _scheduler_kernels:
            raise _usage_error(
                "%scheduler: no scheduler kernel known in this session. Call "
                "client.start_ipython_scheduler() first (it returns the running kernel's info "
                "if the scheduler already has one)."
            )
        info = _scheduler_kernels[-1]
        code = line if cell is None else cell
        if cell is not None and line.strip():
            raise _usage_error("%%scheduler takes no arguments; put the code in the cell body below it")
        if not code.strip():
            raise _usage_error("usage: %scheduler <expression or statement>   or   %%scheduler + cell body")
        return _run_magic(info, code, cell is None)

    shell.register_magic_function(scheduler, magic_kind="line_cell", magic_name="scheduler")


def load_ipython_extension(ip) -> None:
    """``%load_ext xsched`` (or ``xsched.jupyter.magics``): register ``%remote`` and ``%scheduler``,
    and ``%debug`` opening a failed or paused task's frames on its worker (``debugging.py``).

    ``%scheduler`` talks to the scheduler kernel most recently started or
    looked up in this session with ``client.start_ipython_scheduler()``.

    Example::

        %load_ext xsched
        info = client.start_ipython_scheduler()
        %scheduler scheduler.processing
    """
    from .debugging import register_debug_magic

    register_remote_magic(ip)
    _register_scheduler_lookup(ip)
    register_debug_magic(ip)


# ---------------------------------------------------------------------------
# What Client.start_ipython_scheduler/_workers do with the kernels' info
# ---------------------------------------------------------------------------
@hooks.scheduler_kernel.register
def register_scheduler_kernel(info: dict, magic_name, qtconsole: bool = False) -> dict:
    """``%scheduler`` (and ``%<magic_name>``) reach this kernel; optionally a Qt console opens on it."""
    remember_scheduler_kernel(info)
    _register_kernel(info, magic_name, qtconsole)
    return info


@hooks.worker_kernels.register
def register_worker_kernels(infos: dict, magic_names=False, qtconsole: bool = False) -> None:
    """``%remote`` for the workers' kernels ({address: info}); ``magic_names`` (a name, or
    one per worker in the order given: by worker name) adds a magic per kernel."""
    names = magic_names
    if isinstance(names, str):
        names = [names] if len(infos) == 1 else [f"{names}_{i}" for i in range(len(infos))]
    register_remote_magic()
    for i, (_addr, info) in enumerate(infos.items()):
        if names:
            _register_kernel(info, names[i], qtconsole)
        elif qtconsole:
            open_qtconsole(info)


def _register_kernel(info: dict, magic_name, qtconsole: bool) -> None:
    if magic_name:
        register_kernel_magic(info, magic_name)
    if qtconsole:
        open_qtconsole(info)


# ---------------------------------------------------------------------------
# Qt console
# ---------------------------------------------------------------------------
def open_qtconsole(info: dict) -> subprocess.Popen:
    """Open a Qt console on the kernel described by ``info``; return its process.

    Writes a private (0600) copy of the connection info on this machine, so it
    works when the kernel runs on another host too.

    Example::

        info = client.start_ipython_scheduler()
        open_qtconsole(info)
    """
    info = _check_info(info)
    if importlib.util.find_spec("qtconsole") is None:
        raise RuntimeError(
            "qtconsole=True needs the qtconsole package and a Qt binding: "
            "pip install qtconsole pyqt5   (the %scheduler / %remote magics work without it)"
        )
    fd, path = tempfile.mkstemp(prefix="xsched-qtconsole-", suffix=".json")  # 0600
    fields = {k: info[k] for k in (*REQUIRED_KEYS, "transport", "signature_scheme", "kernel_name") if k in info}
    with os.fdopen(fd, "w") as f:
        json.dump(fields, f)
    _qtconsole_files.append(path)
    return subprocess.Popen([sys.executable, "-m", "qtconsole", "--existing", path])


_qtconsole_files: list[str] = []


@atexit.register
def _remove_qtconsole_files() -> None:
    for path in _qtconsole_files:
        try:
            os.unlink(path)
        except OSError:
            pass
