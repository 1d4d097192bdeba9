"""``%debug`` that opens a failed task's frames on its worker, instead of the client's own.

Why a room of its own: IPython's ``%debug`` steps through the frames of the last exception
in *this* process. When that exception is a task's, raised again by ``future.result()``,
those frames are the client's (``Future.result``, the unpacking), never the task's. The
task's frames are kept on its worker (``worker/postmortem.py``); this module's ``%debug``
finds the handle to them on the exception and hands over to ``client.debug``, which runs
pdb there, typed in this cell (``input()``: the front end's stdin). Any other use of
``%debug`` goes to IPython's own.

Data flow::

    %debug (no argument)
        sys.last_value -- along __cause__/__context__ --> RemoteTraceback {key, blame, worker}
            found:     default client .debug(that exception) --> pdb on the worker
            not found: the last exception was a KeyboardInterrupt (a cell waiting for a
                       paused task, interrupted) or there is none, and exactly one task is
                       paused at a breakpoint -> client.debug on it
            otherwise: IPython's own %debug (local frames)
    %debug name        a Future in the namespace -> client.debug(it)
    %debug <anything else>, %%debug                          -> IPython's own

Registered with ``%remote`` and ``%scheduler`` by ``%load_ext xsched``
(``magics.load_ipython_extension``); registering again keeps IPython's original.
"""

from __future__ import annotations

import sys

from ..client.client import default_client
from ..client.future import Future
from ..errors import remote_handle

__all__ = ["register_debug_magic", "remote_debug_target"]

#: id(shell) -> (shell, IPython's line %debug, its cell %%debug), as found before we registered ours
_ORIGINALS: dict[int, tuple] = {}


def remote_debug_target(last: BaseException | None, namespace: dict, line: str = ""):
    """What ``%debug line`` should open on the cluster: a Future, a task's exception, the
    string ``"paused"`` (the one task paused at a breakpoint), or None (IPython's own).

    >>> remote_debug_target(ValueError("local"), {}) is None
    True
    >>> remote_debug_target(None, {}, "--breakpoint file.py:3") is None
    True
    """
    arg = line.strip()
    if arg:
        value = namespace.get(arg) if arg.isidentifier() else None
        return value if isinstance(value, Future) else None
    if last is not None and remote_handle(last) is not None:
        return last
    if last is None or isinstance(last, KeyboardInterrupt):
        return "paused"
    return None


def register_debug_magic(shell) -> bool:
    """Make ``%debug`` open remote frames when the last exception is a task's (see the
    module); IPython's ``%debug`` serves everything else. False outside IPython.

    Example::

        %load_ext xsched        # (registers this, %remote and %scheduler)
        f.result()              # a task's ZeroDivisionError
        %debug                  # pdb on the task's frames, on its worker
    """
    if shell is None:
        return False
    if id(shell) not in _ORIGINALS:  # (registering again keeps IPython's own, not our wrapper)
        magics = shell.magics_manager.magics
        _ORIGINALS[id(shell)] = (shell, _loaded(magics["line"].get("debug")), _loaded(magics["cell"].get("debug")))
    _, original_line, original_cell = _ORIGINALS[id(shell)]

    def debug(line: str = "", cell: str | None = None):
        if cell is None:
            target = remote_debug_target(getattr(sys, "last_value", None), shell.user_ns, line)
            if target is not None:
                client = target.client if isinstance(target, Future) and target.client is not None else None
                try:
                    client = client or default_client()
                except ValueError:
                    client = None
                if client is not None:
                    if isinstance(target, str):  # "paused": only when exactly one task is
                        paused = client.breakpoints()
                        if len(paused) != 1:
                            return _original(original_line, original_cell, line, cell)
                        target = paused[0]["key"]
                    return client.debug(target)
        return _original(original_line, original_cell, line, cell)

    debug.__doc__ = ("%debug: on a task's exception (future.result() raised it) or a task paused at a breakpoint, "
                     "pdb on its worker (client.debug); otherwise IPython's %debug.\n\n"
                     + (getattr(original_line, "__doc__", None) or ""))
    shell.register_magic_function(debug, magic_kind="line_cell", magic_name="debug")
    return True


def _loaded(magic):
    """The magic itself: IPython may hold a stand-in that finds it by name when called (which
    would then find ours), so it is resolved before ours replaces it."""
    if magic is not None and callable(getattr(type(magic), "_resolve", None)):
        return magic._resolve()
    return magic


def _original(original_line, original_cell, line: str, cell: str | None):
    if cell is None:
        if original_line is None:
            raise RuntimeError("IPython has no %debug magic here")
        return original_line(line)
    if original_cell is None:
        raise RuntimeError("IPython has no %%debug magic here")
    return original_cell(line, cell)
