"""``client.restart(environment=...)``: ship a Python environment to each host once.

The ``environments`` scheduler extension (see ``base.py`` for the protocol).

Data flow::

    client: packs the directory as a tar stream (or reads a .tar/.tar.gz) in 4 MiB chunks,
            never all in memory, hashing as it goes (sha256)
      --environment-start {uid}-->  EnvironmentsExtension picks one worker per host (the
                                    host's leader) --environment-start--> each leader
      --environment-chunk {uid, seq} + data--> forwarded to each leader; the reply waits for
                                    every leader's environment-ack (end-to-end back-pressure)
      --environment-done {uid, sha256}--> leaders check the hash, unpack into their
                                    local directory, answer environment-ready {path, error}
                                    <-- {paths: {host: path}, errors}
      --restart {environment: uid}--> each worker is told the path for its host; it exits
                                    with EXIT_RESTART and leaves a note for its nanny, which
                                    starts it with that environment's bin/python (or, if it
                                    cannot start there, with the previous one, and says why)

A host is the host of a worker's address (``WorkerState.host``), not its machine name:
two machines sharing a hostname are two hosts and each gets its copy (a machine whose
workers listen on two of its addresses gets two copies, which costs time, never
correctness).

The scheduler only forwards bytes: it never opens or unpacks an environment.
"""

from __future__ import annotations

import asyncio
import logging

from ...protocol import ops
from ...protocol.messages import split_objects
from .base import SchedulerExtension

logger = logging.getLogger("xsched.scheduler.extensions.environments")

__all__ = ["EnvironmentsExtension"]


class EnvironmentsExtension(SchedulerExtension):
    """Environments shipped to the workers' hosts: uid -> {host: unpacked path}."""

    name = "environments"

    def __init__(self, scheduler, timeout: float = 600.0):
        super().__init__(scheduler)
        self.timeout = timeout
        self.leaders: dict[str, dict[str, str]] = {}  # uid -> {host: leader worker address}
        self.paths: dict[str, dict[str, str]] = {}  # uid -> {host: path}
        self._waits: dict[tuple, tuple[asyncio.Future, set, dict]] = {}

    def __repr__(self) -> str:
        return f"<EnvironmentsExtension shipped={sorted(self.paths)} in-flight={len(self._waits)}>"

    def remove_worker(self, address: str, reason: str) -> None:
        """A worker left: what waits for its answer stops waiting (its answer says it left)."""
        for fut, pending, _answers in self._waits.values():
            pending.discard(address)
            if not pending and not fut.done():
                fut.set_result(None)

    def _send(self, addr: str, msg: dict, raw=None) -> None:
        peer = self.scheduler.worker_peer.get(addr)
        if peer is not None:
            self.scheduler.listener.send(peer, msg, raw=raw)

    async def _ask_leaders(self, uid: str, kind: str, seq, msg: dict, raw=None) -> dict:
        """Send ``msg`` to every leader of ``uid``; {address: answer header} once all answered."""
        leaders = set(self.leaders.get(uid, {}).values())
        fut = asyncio.get_running_loop().create_future()
        answers: dict = {}
        self._waits[(uid, kind, seq)] = (fut, set(leaders), answers)
        try:
            for addr in leaders:
                self._send(addr, msg, raw)
            deadline = asyncio.get_running_loop().time() + self.timeout
            while True:
                pending = self._waits[(uid, kind, seq)][1]
                pending &= set(self.scheduler.worker_peer)  # a leader that left will not answer
                for addr in leaders - set(self.scheduler.worker_peer) - set(answers):
                    answers[addr] = {"error": f"worker {addr} left while the environment was being shipped"}
                if not pending:
                    return answers
                if asyncio.get_running_loop().time() > deadline:
                    raise TimeoutError(f"workers {sorted(pending)} did not answer {kind} within {self.timeout:.0f}s")
                try:
                    await asyncio.wait_for(asyncio.shield(fut), 0.5)
                except asyncio.TimeoutError:
                    pass
        finally:
            self._waits.pop((uid, kind, seq), None)

    def _op_worker_answer(self, peer, h, payload):
        addr = self.scheduler.peer_worker.get(peer)
        kind = "ack" if h["op"] == ops.ENVIRONMENT_ACK else "ready"
        entry = self._waits.get((h.get("uid"), kind, h.get("seq") if kind == "ack" else None))
        if entry is None or addr is None:
            return None
        fut, pending, answers = entry
        answers[addr] = dict(h)
        pending.discard(addr)
        if not pending and not fut.done():
            fut.set_result(None)
        return None

    async def _op_start(self, peer, h, payload):
        self.scheduler._client_of(peer)
        uid = str(h["uid"])
        leaders: dict[str, str] = {}
        for addr in sorted(self.scheduler.state.workers):
            ws = self.scheduler.state.workers[addr]
            leaders.setdefault(ws.host, addr)
        if not leaders:
            raise ValueError("restart(environment=...) needs connected workers to ship the environment to")
        self.leaders[uid] = leaders
        answers = await self._ask_leaders(uid, "ack", -1, {"op": ops.ENVIRONMENT_START, "uid": uid, "seq": -1})
        return {"hosts": sorted(leaders), "errors": {a: x["error"] for a, x in answers.items() if x.get("error")}}

    async def _op_chunk(self, peer, h, payload):
        uid, seq = str(h["uid"]), int(h["seq"])
        if uid not in self.leaders:
            raise KeyError(f"environment-chunk for unknown upload {uid!r}: send environment-start first")
        frames = split_objects(h, payload).get("data", [])
        answers = await self._ask_leaders(uid, "ack", seq, {"op": ops.ENVIRONMENT_CHUNK, "uid": uid, "seq": seq},
                                          raw={"data": frames})
        return {"errors": {a: x["error"] for a, x in answers.items() if x.get("error")}}

    async def _op_done(self, peer, h, payload):
        uid = str(h["uid"])
        answers = await self._ask_leaders(uid, "ready", None, {"op": ops.ENVIRONMENT_DONE, "uid": uid,
                                                              "sha256": h.get("sha256"), "nbytes": h.get("nbytes")})
        hosts = {addr: host for host, addr in self.leaders.get(uid, {}).items()}
        self.paths[uid] = {hosts[a]: x["path"] for a, x in answers.items() if x.get("path") and not x.get("error")}
        return {"paths": self.paths[uid], "errors": {a: x["error"] for a, x in answers.items() if x.get("error")}}

    def environment_for(self, uid: str) -> dict[str, str]:
        """Worker address -> the environment path on its host (workers on hosts without it are left out)."""
        paths = self.paths.get(uid, {})
        return {addr: paths[ws.host] for addr, ws in self.scheduler.state.workers.items() if ws.host in paths}

    OPS = {ops.ENVIRONMENT_START: _op_start, ops.ENVIRONMENT_CHUNK: _op_chunk, ops.ENVIRONMENT_DONE: _op_done,
           ops.ENVIRONMENT_ACK: _op_worker_answer, ops.ENVIRONMENT_READY: _op_worker_answer}
