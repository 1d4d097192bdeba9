"""Every wire message of xsched, and how a message becomes frames.

The list below is the overview; the fields, their types and bounds are defined once, in
``schemas.py``, and every receiver checks them there before a handler runs.

A message on the wire is ``[header, *payload]``: ``header`` is a msgpack map holding
``op`` and small fields; ``payload`` frames carry pickled objects (see ``serialize``),
described by ``header["_objs"] = [[field, nframes], ...]``. Receivers decide whether to
unpickle: the scheduler never unpickles task data or results, it forwards the bytes.

Ops, by direction (fields in brackets):

client -> scheduler
  register-client [client]            update-graph [tasks, keys, client]
  client-desires-keys [keys]          client-releases-keys [keys]
  cancel-keys [keys]                  retry-keys [keys]
  who-has [keys]                      scatter-done [who_has, nbytes, client]
  scheduler-info []
  run-on-scheduler [func]             close-client []      heartbeat-client []
worker -> scheduler
  register-worker [address, name, nthreads, memory_limit, resources, pid, host]
  heartbeat-worker [metrics]          task-finished [key, nbytes, type, start, stop, seceded]
  task-erred [key, exception, traceback, text]   add-keys [nbytes]
  missing-data [key, errant_worker]   reschedule [key]    worker-status [status]
  unregister-worker [reason]
  task-seceded [key] (the task left the thread pool: its slot is free)   task-rejoined [key]
scheduler -> worker
  compute-task [key, run_spec, priority, who_has, nbytes, resources]
  free-keys [keys]                    run [func]          close-worker []
scheduler -> client
  key-in-memory [key, type]           task-erred [key, exception, traceback, text]
  key-lost [key]                      key-cancelled [key]  scheduler-closing []
  progress [sub, groups]              (pushed after subscribe-progress [keys] -> sub)
client -> scheduler (extensions)
  subscribe-progress [keys]           unsubscribe-progress [sub]   memory-history []
  who-can-run [keys]                  (scheduler -> client) warning [text]
any -> worker (peer port)
  get-data [keys] -> data reply       put-data [data, bulk] -> nbytes reply
  bulk-receive [lengths] -> {bulk: receive offer}  (then the client pushes on the side channel)
graceful retirement
  retire-workers [workers, close_workers] (client -> scheduler) -> {retired: {address: outcome}}
  retire-worker [reason] (worker -> scheduler, on --lifetime or SIGTERM) -> outcome
  acquire-replicas [who_has, nbytes, priority] (scheduler -> worker: copy these keys here)
replies
  reply [rid, status, ...]            "batch" wraps several small messages [packed: their headers]
published datasets (client -> scheduler; the scheduler stores the frames unopened)
  publish-dataset [name, keys, override] + data frames -> {name, keys} or {refused}
  get-dataset [name] -> data frames, or {found: False, names}   list-datasets [] -> {names}
  unpublish-dataset [name] -> {found[, names]}
metadata (client -> scheduler; small values under nested keys)
  set-metadata [keys, value] -> {} or {refused}   get-metadata [keys] -> {found, value} or {found: False, keys}
uploaded files (client.upload_file)
  upload-file [filename] + data frame (client -> scheduler -> {results: {worker: error}};
      scheduler -> worker [filename, uid], also to every worker that registers later)
  upload-file-done [uid, filename, error] (worker -> scheduler)
work stealing
  steal-request [key, stimulus_id] (scheduler -> worker: drop it if it has not started)
  steal-response [key, state] (worker -> scheduler: its state when asked; ready/waiting = dropped)
restart (client.restart())
  restart [timeout] (client -> scheduler) -> {workers[, error]}; every worker gets close-worker
      [restart: True, reason: "restart"] and exits for its nanny to start it again; clients get
      key-cancelled [key, reason] for the keys they wanted
restart into a shipped environment (client.restart(environment=...); scheduler forwards bytes)
  environment-start [uid] / environment-chunk [uid, seq] + data / environment-done [uid, sha256, nbytes]
      (client -> scheduler -> one worker per host; each reply waits for those workers' answers)
  environment-ack [uid, seq, error] / environment-ready [uid, path, error] (worker -> scheduler)
  close-worker [restart, reason, environment] (the path to restart into, on that worker's host)
plugins (client.register_plugin; the scheduler forwards worker and nanny plugins unopened)
  register-worker-plugin [name, nanny, idempotent] + plugin (client -> scheduler -> {results:
      {worker: outcome}}; scheduler -> worker: plugin-add [name, uid, nanny, token] + plugin, also
      to every worker that registers later)     unregister-worker-plugin [name, nanny] -> plugin-remove
  plugin-done [uid, name, status, error, exception, traceback] (worker -> scheduler)
  get-nanny-plugins [protocol, version] (a worker under a nanny, before registering: its nanny's one
      exchange with the scheduler, checked as a registration is) -> {plugins: [[name, token, frames]],
      protocol, version}
  register-scheduler-plugin [name, idempotent] + plugin / unregister-scheduler-plugin [name]
framing
  "chunked" [parts] precedes a message whose frames were cut to at most MAX_FRAME bytes each

>>> frames = encode({"op": "who-has", "keys": ["a"]})
>>> decode(frames)[0]["op"]
'who-has'
"""

from __future__ import annotations

from typing import Any, Sequence

import msgpack

from . import ops
from ..graph.order import gc_paused
from .schemas import OPS as _SCHEMA_OPS, ProtocolError
from .serialize import dumps, frame_view, loads

__all__ = ["encode", "decode", "unpack_objects", "ProtocolError", "OPS", "chunk", "unchunk", "MAX_FRAME"]

#: No frame on the wire is larger (plus CURVE's overhead): listeners refuse bigger ones
#: before authentication (ZMQ_MAXMSGSIZE), so an unauthenticated peer can make a server
#: buffer at most this much. Larger frames are cut into parts and joined on receipt.
MAX_FRAME = 4 * 2**20
MAX_WIRE_FRAME = MAX_FRAME + 4096

#: every op on the wire: those of ``schemas``' tables and of the framing
OPS = _SCHEMA_OPS

#: Headers from this size on are unpacked with the cyclic collector paused: a large
#: update-graph unpacks into a few containers per task, hundreds of thousands in all and
#: none in a cycle, and the collections they would trigger (rescanning everything the
#: receiver holds, its task states too) took most of the unpacking time.
GC_PAUSE_BYTES = 2**20


def encode(header: dict, objects: dict[str, Any] | None = None, raw: dict[str, list] | None = None) -> list:
    """Frames for a message: header fields plus objects pickled into their own frames.

    ``raw`` passes already-serialised frames through untouched (used to forward data).

    >>> len(encode({"op": "put-data"}, {"data": {"x": 1}}))
    2
    """
    payload: list = []
    if objects or raw:
        spec = []
        for name, obj in (objects or {}).items():
            frames = dumps(obj)
            spec.append([name, len(frames)])
            payload.extend(frames)
        for name, frames in (raw or {}).items():
            spec.append([name, len(frames)])
            payload.extend(frames)
        header = dict(header, _objs=spec)
    return [msgpack.packb(header, use_bin_type=True)] + payload


def decode(frames: Sequence) -> tuple[dict, list]:
    """Split frames into (header dict, payload frames); raise ProtocolError on garbage.

    >>> decode(encode({"op": "ping"}))[0]
    {'op': 'ping'}
    """
    if not frames:
        raise ProtocolError("empty message", "empty")
    first = frames[0]
    raw = frame_view(first)
    try:
        if len(raw) < GC_PAUSE_BYTES:
            header = msgpack.unpackb(raw, raw=False, strict_map_key=False)
        else:  # (see GC_PAUSE_BYTES)
            with gc_paused():
                header = msgpack.unpackb(raw, raw=False, strict_map_key=False)
    except Exception as e:
        raise ProtocolError(f"header is not msgpack: {type(e).__name__}", "not msgpack") from None
    op = header.get("op") if isinstance(header, dict) else None
    if not isinstance(op, str):
        raise ProtocolError(f"a header whose op is {type(op).__name__}, not a string", "no op",
                            header if isinstance(header, dict) else None)
    if op not in OPS:
        raise ProtocolError(f"unknown message op {op!r:.80}", "unknown op", header)
    if op == ops.BATCH and not isinstance(header.get("packed", []), list):
        raise ProtocolError("a batch message without a list of packed messages", "bad batch", header)
    spec = header.get("_objs")
    if spec is not None:
        if (type(spec) is not list
                or not all(type(s) is list and len(s) == 2 and type(s[0]) is str and type(s[1]) is int
                           and s[1] >= 1 for s in spec)):  # (an object is at least its pickle stream)
            raise ProtocolError("malformed payload description (_objs must be [[name, nframes >= 1], ...])",
                                "bad _objs", header)
        if sum(n for _, n in spec) != len(frames) - 1:
            raise ProtocolError(f"the header describes {sum(n for _, n in spec)} payload frames but "
                                f"{len(frames) - 1} came", "frame count", header)
    return header, list(frames[1:])


def split_objects(header: dict, payload: list) -> dict[str, list]:
    """Payload frames grouped by field name, still serialised (for forwarding)."""
    out: dict[str, list] = {}
    i = 0
    for name, n in header.get("_objs", ()):
        out[name] = payload[i : i + n]
        i += n
    return out


def unpack_objects(header: dict, payload: list) -> dict[str, Any]:
    """Unpickle the payload fields of a message from an authenticated peer.

    >>> h, p = decode(encode({"op": "put-data"}, {"data": {"x": 1}}))
    >>> unpack_objects(h, p)
    {'data': {'x': 1}}
    """
    return {name: loads(frames) for name, frames in split_objects(header, payload).items()}


def frame_nbytes(frame) -> int:
    """Bytes in a frame: ``bytes``, a buffer, or a ``zmq.Frame``."""
    if hasattr(frame, "buffer"):
        return len(frame.buffer)
    return memoryview(frame).nbytes


def chunk(frames: list, limit: int = MAX_FRAME) -> list:
    """The frames to send: unchanged, or led by a ``chunked`` frame when one is too large.

    >>> out = chunk([b"h", b"x" * 10], limit=4)
    >>> len(out), [bytes(f) for f in unchunk(out)] == [b"h", b"x" * 10]
    (5, True)
    """
    sizes = [frame_nbytes(f) for f in frames]
    if max(sizes, default=0) <= limit:
        return frames
    parts, out = [], []
    for f, n in zip(frames, sizes):
        if n <= limit:
            parts.append(1)
            out.append(f)
            continue
        view = memoryview(frame_view(f)).cast("B")
        pieces = [view[i:i + limit] for i in range(0, n, limit)]
        parts.append(len(pieces))
        out.extend(pieces)
    return [msgpack.packb({"op": ops.CHUNKED, "parts": parts}, use_bin_type=True)] + out


def unchunk(frames: list) -> list:
    """Undo :func:`chunk` (frames without a ``chunked`` lead pass through untouched).

    Joined payload frames are fresh, writeable, uninitialised buffers (no zero-filling).
    Raises ProtocolError when the description does not fit the frames.
    """
    if not frames or frame_nbytes(frames[0]) > 256:
        return frames
    first = frame_view(frames[0])
    try:
        lead = msgpack.unpackb(first, raw=False)
    except Exception:
        return frames
    if not isinstance(lead, dict) or lead.get("op") != ops.CHUNKED:
        return frames
    parts = lead.get("parts")
    if (not isinstance(parts, list) or not all(type(n) is int and n >= 1 for n in parts)
            or sum(parts) != len(frames) - 1):
        raise ProtocolError("a chunked message whose parts do not match its frames", "bad chunked")
    import numpy as np

    out, i = [], 1
    for k, n in enumerate(parts):
        group = frames[i:i + n]
        i += n
        if n == 1:
            out.append(group[0])
            continue
        views = [memoryview(frame_view(g)).cast("B") for g in group]
        if k == 0:
            out.append(b"".join(views))  # the header: small enough, and msgpack wants bytes
            continue
        joined = np.empty(sum(v.nbytes for v in views), dtype=np.uint8)
        pos = 0
        for v in views:
            joined[pos:pos + v.nbytes] = v
            pos += v.nbytes
        out.append(joined)
    return out
