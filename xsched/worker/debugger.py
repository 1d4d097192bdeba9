"""pdb driven by lines from a remote client: its input and output as a channel, not a terminal.

Why a room of its own: pdb reads a terminal, and a worker has none (its stdin is closed,
so a plain ``breakpoint()`` in a task used to fail it at once with ``BdbQuit``). Here pdb's
``stdin`` and ``stdout`` are one ``LineChannel``; the debugging sessions (``debugging.py``)
put the lines a client sends into it and take back what pdb printed. Nothing here knows of
sockets or of the worker: the channel is tested by driving pdb with lines.

Data flow (one session)::

    pdb's thread (a task thread at a breakpoint, or a thread of its own for a post-mortem)
        LinePdb.cmdloop -> channel.write(output and prompt)
                        -> channel.readline(): marks "waiting", wakes the exchanges waiting
                           for it, blocks until a line comes (or the idle policy answers one)
    the worker's event loop: await channel.exchange(line, poll)
        puts the line, waits (an asyncio future: no thread blocks) until pdb asks for the next
        line or ends, or ``poll`` seconds pass (pdb is busy: the client asks again);
        returns (output since the last exchange, the prompt or None, done)

>>> import threading
>>> ch = LineChannel()
>>> def failing():
...     secret = 42
...     raise ValueError(secret)
>>> try:
...     failing()
... except ValueError as e:
...     tb = e.__traceback__.tb_next
>>> t = threading.Thread(target=post_mortem, args=(ch, tb)); t.start()
>>> out, prompt, done = ch.exchange_blocking(None)
>>> prompt, "raise ValueError(secret)" in out
('(Pdb) ', True)
>>> ch.exchange_blocking("p secret")[0]
'42\\n'
>>> ch.exchange_blocking("q")[2]
True
>>> t.join()
"""

from __future__ import annotations

import asyncio
import code
import linecache
import pdb
import sys
import threading
from collections import deque
from typing import Callable

__all__ = ["LineChannel", "LinePdb", "post_mortem"]

PROMPT = "(Pdb) "


class LineChannel:
    """pdb's stdin and stdout as lines exchanged with a client (see the module).

    ``idle_after()`` says how many seconds ``readline`` may wait for a line before it asks
    ``on_idle()``, which returns a line to act on (``"c"``: a breakpoint nobody attached to
    continues) or None to go on waiting; both belong to the session (``debugging.py``) and
    are called with the channel's lock held, so they must not block.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._out: list[str] = []
        self._lines: deque[str] = deque()
        self._wakers: list[Callable[[], None]] = []
        self.waiting = False  # pdb waits in readline for a line
        self.done = False  # pdb ended (the session is over)
        self.closed = False  # readline answers EOF from now on
        self.prompt = PROMPT
        self.idle_after: Callable[[], float | None] = lambda: None
        self.on_idle: Callable[[], str | None] = lambda: None
        self.sources: dict[str, str] = {}  # the attached client's notebook cells, by name (dynamic_source)

    # ------------------------------------------------------------------ pdb's side (its thread)
    def write(self, text: str) -> int:
        with self._cond:
            self._out.append(text)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def readline(self) -> str:
        """The next line for pdb (with its newline); "" (end of input) once closed."""
        with self._cond:
            self.waiting = True
            try:
                while not self._lines:
                    if self.closed:
                        return ""
                    self._wake()
                    timeout = self.idle_after()
                    if not self._cond.wait(timeout) and not self._lines and not self.closed:
                        line = self.on_idle()
                        if line is not None:
                            return line.rstrip("\n") + "\n"
                return self._lines.popleft().rstrip("\n") + "\n"
            finally:
                self.waiting = False

    def finish(self) -> None:
        """pdb is done with this channel."""
        with self._cond:
            self.done = True
            self._wake()

    def _wake(self) -> None:
        wakers, self._wakers = self._wakers, []
        for wake in wakers:
            wake()

    # ------------------------------------------------------------------ the client's side
    def ready(self) -> bool:
        """pdb ended, or waits for a line and has none queued."""
        return self.done or (self.waiting and not self._lines)

    def send(self, line: str) -> None:
        with self._cond:
            self._lines.append(line)
            self._cond.notify_all()

    def poke(self) -> None:
        """Wake a waiting ``readline`` to ask ``idle_after()`` again (the policy changed)."""
        with self._cond:
            self._cond.notify_all()

    def close(self) -> None:
        """From now on pdb reads end of input (it quits)."""
        with self._cond:
            self.closed = True
            self._cond.notify_all()

    def take(self) -> tuple[str, str | None, bool]:
        """(what pdb printed since the last take, its prompt if it waits for a line, done)."""
        with self._cond:
            output = "".join(self._out)
            self._out.clear()
            prompt = self.prompt if self.waiting and not self._lines and not self.done else None
            if prompt and output.endswith(prompt):
                output = output[: -len(prompt)]
            return output, prompt, self.done

    async def exchange(self, line: str | None, poll: float) -> tuple[str, str | None, bool]:
        """(On an event loop) send ``line`` (None: only look), wait until pdb wants the next
        line or ends -- at most ``poll`` seconds -- and ``take()``."""
        loop = asyncio.get_running_loop()
        fut = loop.create_future()

        def wake():
            loop.call_soon_threadsafe(lambda: fut.done() or fut.set_result(None))

        with self._cond:
            if line is not None:
                self._lines.append(line)
                self._cond.notify_all()
            if self.ready():
                fut.set_result(None)
            else:
                self._wakers.append(wake)
        try:
            await asyncio.wait_for(fut, poll)
        except asyncio.TimeoutError:
            pass
        finally:
            with self._cond:
                if wake in self._wakers:
                    self._wakers.remove(wake)
        return self.take()

    def exchange_blocking(self, line: str | None, poll: float = 10.0) -> tuple[str, str | None, bool]:
        """``exchange`` from a plain thread (for tests and the examples above)."""
        ev = threading.Event()
        with self._cond:
            if line is not None:
                self._lines.append(line)
                self._cond.notify_all()
            if self.ready():
                ev.set()
            else:
                self._wakers.append(ev.set)
        ev.wait(poll)
        with self._cond:
            if ev.set in self._wakers:
                self._wakers.remove(ev.set)
        return self.take()


class _ChannelConsole(code.InteractiveConsole):
    """pdb's ``interact``: a Python console whose lines come through the channel."""

    def __init__(self, namespace: dict, channel: LineChannel):
        super().__init__(namespace)
        self.channel = channel

    def raw_input(self, prompt: str = "") -> str:
        # its own prompts, whatever this process's sys.ps1/ps2 (an IPython in it changes them)
        prompt = "... " if prompt and prompt == getattr(sys, "ps2", None) else ">>> "
        self.channel.prompt = prompt
        self.channel.write(prompt)
        line = self.channel.readline()
        if not line or line.strip() in ("exit()", "quit()", "\x04"):
            raise EOFError
        return line.rstrip("\n")

    def write(self, data: str) -> None:
        self.channel.write(data)

    def runcode(self, code) -> None:
        # what the code prints goes to the client, as pdb's own ! commands do: sys.stdout is
        # the process's, so only while the code runs (other threads' prints meanwhile too)
        saved = sys.stdout, sys.displayhook
        sys.stdout, sys.displayhook = self.channel, sys.__displayhook__
        try:
            super().runcode(code)
        finally:
            sys.stdout, sys.displayhook = saved


#: the file name cloudpickle gives the code of every function it ships by value
DYNAMIC = "<dynamic-code>"


def dynamic_source(name: str, firstlineno: int, sources: dict[str, str]) -> list[str] | None:
    """The lines of the first of ``sources`` (the newest cell first) that defines the function
    ``name`` at line ``firstlineno``, or None.

    >>> cells = {"<cell-2>": "x = 1\\n\\ndef g(y):\\n    return y\\n", "<cell-1>": "def g(y):\\n    return 0\\n"}
    >>> dynamic_source("g", 3, cells)[3], dynamic_source("g", 1, cells)[1], dynamic_source("h", 1, cells)
    ('    return y\\n', '    return 0\\n', None)
    >>> decorated = {"<cell-3>": "@delayed\\ndef boom(x):\\n    raise ValueError(x)\\n"}
    >>> dynamic_source("boom", 1, decorated)[2], dynamic_source("process", 1, decorated)
    ('    raise ValueError(x)\\n', None)
    """
    for text in sources.values():
        lines = text.splitlines(True)
        at = firstlineno - 1
        while 0 <= at < len(lines) and lines[at].lstrip().startswith("@"):  # (decorators: the def below them)
            at += 1
        if not 0 <= at < len(lines):
            continue
        first = lines[at].lstrip()
        if first.startswith(("def ", "async def ")) and first.split("def ", 1)[1].split("(", 1)[0].strip() == name:
            return lines
    return None


class LinePdb(pdb.Pdb):
    """``pdb.Pdb`` reading and writing a ``LineChannel`` (``use_rawinput`` off, no SIGINT
    handler, no ``.pdbrc``). ``interact`` opens a console through the channel too; leave it
    with ``exit()``.

    >>> LinePdb(LineChannel()).use_rawinput
    False
    """

    def __init__(self, channel: LineChannel, skip=None):
        super().__init__(stdin=channel, stdout=channel, nosigint=True, readrc=False, skip=skip)
        self.use_rawinput = False
        self.channel = channel
        self.prompt = PROMPT

    def cmdloop(self, intro=None):
        self.channel.prompt = self.prompt
        return super().cmdloop(intro)

    def precmd(self, line):
        if self.curframe is not None:
            self._bind_source(self.curframe)
        return super().precmd(line)

    def postcmd(self, stop, line):
        linecache.cache.pop(DYNAMIC, None)  # (bound for one command: other tasks' tracebacks read it too)
        return super().postcmd(stop, line)

    def print_stack_entry(self, frame_lineno, prompt_prefix=pdb.line_prefix):
        self._bind_source(frame_lineno[0])
        try:
            super().print_stack_entry(frame_lineno, prompt_prefix)
        finally:
            linecache.cache.pop(DYNAMIC, None)

    def _bind_source(self, frame) -> None:
        """Functions shipped by value have no file here (cloudpickle names them all
        ``<dynamic-code>``): show the client's cell that defines this frame's function
        under that name, for the command about to run."""
        if frame.f_code.co_filename != DYNAMIC:
            return
        lines = None
        # a comprehension's or lambda's frame has no def line of its own: the function that
        # called it is defined in the same cell
        while lines is None and self.channel.sources and frame is not None and frame.f_code.co_filename == DYNAMIC:
            code = frame.f_code
            lines = dynamic_source(code.co_name, code.co_firstlineno, self.channel.sources)
            frame = frame.f_back
        if lines is None:
            linecache.cache.pop(DYNAMIC, None)  # (never another frame's cell)
        else:
            linecache.cache[DYNAMIC] = (sum(map(len, lines)), None, lines, DYNAMIC)

    def do_interact(self, arg):
        """interact
        Start an interactive interpreter whose global namespace contains all the (global and
        local) names of the current frame; leave it with exit()."""
        ns = {**self.curframe.f_globals, **self.curframe_locals}
        console = _ChannelConsole(ns, self.channel)
        try:
            console.interact(banner="*interactive* (exit() returns to pdb)", exitmsg="")
        finally:
            self.channel.prompt = self.prompt

    def _cmdloop(self) -> None:
        # pdb's own catches KeyboardInterrupt for the terminal; here none can arrive
        self.cmdloop()


def post_mortem(channel: LineChannel, tb) -> None:
    """(In a thread of its own) pdb on the frames of ``tb`` until ``q`` (or ``c``, or the end
    of input), then ``channel.finish()``."""
    try:
        p = LinePdb(channel)
        p.reset()
        p.interaction(None, tb)
    except Exception as e:  # noqa: BLE001 - tell the client rather than die silently
        channel.write(f"*** the debugger failed: {type(e).__name__}: {e}\n")
    finally:
        channel.finish()


def show_reply(reply: dict) -> str | None:
    """Print what pdb printed in a session's reply; the session to go on with, or None when
    it is over. A refusal (no such task, debugged already...) raises ``DebugError``."""
    from ..errors import DebugError

    if reply.get("error"):
        raise DebugError(reply["error"])
    out = reply.get("output")
    if out:
        sys.stdout.write(out)
        sys.stdout.flush()
    if reply.get("done"):
        return None
    return reply["session"]


def drive(reply: dict, send: Callable[[str, str | None], dict], detach: Callable[[str, dict], None]) -> None:
    """Run a debugging session from its first reply until it ends: print pdb's output, read
    each command with ``input()`` (a notebook's input box, a terminal's prompt), ``send``
    it; a busy pdb is polled with no line. Ctrl-C or the end of input ``detach``es.

    >>> replies = iter([{"session": "s", "output": "> f()\\n", "prompt": "(Pdb) "},
    ...                 {"session": "s", "output": "", "done": True}])
    >>> import builtins; builtins_input, builtins.input = builtins.input, lambda prompt: "c"
    >>> try:
    ...     drive(next(replies), lambda session, line: next(replies), lambda session, reply: None)
    ... finally:
    ...     builtins.input = builtins_input
    > f()
    """
    while True:
        session = show_reply(reply)
        if session is None:
            return
        if reply.get("busy"):
            reply = send(session, None)
            continue
        try:
            line = input(reply.get("prompt") or PROMPT)
        except BaseException as e:  # Ctrl-C, end of input, a front end without stdin: detach
            detach(session, reply)
            if isinstance(e, EOFError):
                return
            raise
        reply = send(session, line)
