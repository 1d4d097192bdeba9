"""``client.upload_file``: files the scheduler sends to every worker, now and when they join.

The ``uploads`` scheduler extension (see ``base.py`` for the protocol).

Data flow::

    client --upload-file {filename} + data frame--> UploadsExtension
        remembers filename -> bytes (a later upload of the same name replaces it)
        --upload-file {filename, uid} + data--> every connected worker (its scheduler connection)
        <--upload-file-done {uid, filename, error}-- each worker: written to its upload
           directory, .py (re)imported, .zip/.egg put on sys.path
        reply {results: {worker: error or None}} once every worker answered (or left)
    register-worker -> add_worker hook: every remembered file goes to the new worker, in
        upload order, before any task does (messages on one connection arrive in order)
    a worker removed while an upload waits for it -> remove_worker hook: not waited for

The scheduler never unpickles or imports an uploaded file: it stores and forwards bytes.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid

from ...protocol import ops
from ...protocol.messages import split_objects
from ...protocol.serialize import frame_bytes
from .base import SchedulerExtension

logger = logging.getLogger("xsched.scheduler.extensions.uploads")

__all__ = ["UploadsExtension", "UPLOAD_SUFFIXES"]

UPLOAD_SUFFIXES = (".py", ".zip", ".egg")


class UploadsExtension(SchedulerExtension):
    """Remembers uploaded files and sends them to workers."""

    name = "uploads"

    def __init__(self, scheduler, timeout: float = 120.0):
        super().__init__(scheduler)
        self.timeout = timeout
        self.files: dict[str, bytes] = {}  # filename -> content, in upload order
        self._waiting: dict[str, tuple[asyncio.Future, set]] = {}  # uid -> (future, workers still to answer)
        self._results: dict[str, dict] = {}

    def __repr__(self) -> str:
        return f"<UploadsExtension files={list(self.files)} waiting={len(self._waiting)}>"

    def add_worker(self, address: str, peer: bytes) -> None:
        """A worker registers: it gets every remembered file before any task."""
        self.send_all(peer)

    def remove_worker(self, address: str, reason: str) -> None:
        """A worker left: uploads waiting for its answer stop waiting for it."""
        for fut, pending in self._waiting.values():
            pending.discard(address)
            if not pending and not fut.done():
                fut.set_result(None)

    def send_all(self, peer: bytes) -> None:
        """Send every remembered file to a worker that is registering."""
        for filename, data in self.files.items():
            self.scheduler.listener.send(peer, {"op": ops.UPLOAD_FILE, "filename": filename, "uid": ""},
                                         raw={"data": [data]})

    async def _op_upload(self, peer, h, payload):
        self.scheduler._client_of(peer)
        filename = h.get("filename")
        if (not isinstance(filename, str) or os.path.basename(filename) != filename or filename in ("", ".", "..")
                or not filename.endswith(UPLOAD_SUFFIXES)):
            raise ValueError(f"upload-file: {filename!r} is not a plain .py, .zip or .egg file name")
        frames = split_objects(h, payload).get("data", [])
        data = b"".join(frame_bytes(f) for f in frames)
        self.files.pop(filename, None)
        self.files[filename] = data
        uid = uuid.uuid4().hex
        workers = set(self.scheduler.worker_peer)
        fut = asyncio.get_running_loop().create_future()
        self._waiting[uid] = (fut, set(workers))
        self._results[uid] = {}
        for addr in workers:
            self.scheduler.listener.send(self.scheduler.worker_peer[addr],
                                         {"op": ops.UPLOAD_FILE, "filename": filename, "uid": uid}, raw={"data": [data]})
        try:
            if workers:
                await asyncio.wait_for(self._until_answered(uid), self.timeout)
        except asyncio.TimeoutError:
            for addr in self._waiting[uid][1]:
                self._results[uid][addr] = f"no answer within {self.timeout:.0f}s"
        finally:
            self._waiting.pop(uid, None)
        return {"results": self._results.pop(uid, {}), "nbytes": len(data)}

    async def _until_answered(self, uid: str) -> None:
        fut, pending = self._waiting[uid]
        while pending:
            # workers that left meanwhile will not answer
            pending &= set(self.scheduler.worker_peer)
            if not pending:
                break
            try:
                await asyncio.wait_for(asyncio.shield(fut), 0.5)
            except asyncio.TimeoutError:
                continue

    def _op_done(self, peer, h, payload):
        addr = self.scheduler.peer_worker.get(peer)
        uid = h.get("uid") or ""
        if h.get("error"):
            logger.warning("worker %s could not load uploaded %s: %s", addr, h.get("filename"), h.get("error"))
        entry = self._waiting.get(uid)
        if entry is None or addr is None:
            return None
        fut, pending = entry
        self._results[uid][addr] = h.get("error") or None
        pending.discard(addr)
        if not pending and not fut.done():
            fut.set_result(None)
        return None

    OPS = {ops.UPLOAD_FILE: _op_upload, ops.UPLOAD_FILE_DONE: _op_done}
