"""The worker's side of the p2p shuffle (``xsched/graph/p2p.py``): send pieces, keep them on disk.

Data flow::

    transfer task thread: pieces of input i
        -> run info (cached; else shuffle-get to the scheduler: run number, workers)
        -> each piece pickled once, its arrays' bytes left out of band (frames that are views
           of the piece, not copies), grouped by its output's worker
        -> on the loop: one shuffle-receive per worker, all at once (large frames pushed on
           the bulk side channel first; this worker's own pieces are filed directly)
        <- every worker answered OK: the run number is the task's result
        <- "stale" (a newer run exists) or a peer unreachable: ask the run again, send again
           under the current run (a peer that stays unreachable past RETRY_FOR fails the task)
    peer --shuffle-receive--> receive (loop): pieces appended to the run's memory buffer per
        output; past shuffle.buffer bytes the buffer is written to one file per output
        (a thread, under the flush lock) before the answer, so fast senders wait (back-pressure)
    output task thread: take -> (loop, under the flush lock) the output's buffered pieces and
        its file, both handed over -> the file read and deleted in the task thread, each frame
        read straight into the buffer its array will own -> pieces in input order; an output
        whose run is not here, or not complete, asks the scheduler to restart the shuffle
        (shuffle-restart) and fails (the scheduler has released it)
    scheduler --shuffle-forget {id, run}--> drop the shuffle's runs before ``run`` and refuse
        their pieces from now on (a restart, or the shuffle's end)

Every change of the service's state happens on the worker's event loop; task threads reach
it with ``_call`` and do the slow parts (pickling, reading files) themselves.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import struct
import time
from collections import OrderedDict, defaultdict
from typing import Any, Mapping, Sequence

from .. import config
from ..comm import RemoteError
from ..graph.p2p import checked_pieces, owner
from ..protocol import ops
from ..protocol.bulk import push, with_pushed
from ..protocol.serialize import dumps, frame_view, loads, nbytes_of_frames
from ..units import parse_bytes
from .spill import WorkerDirectory, worker_directory

logger = logging.getLogger("xsched.worker.shuffle")

__all__ = ["ShuffleService", "ShuffleIncomplete"]

#: A transfer keeps trying an unreachable peer this long (the scheduler notices a dead
#: worker and starts a new run well before), then fails naming it.
RETRY_FOR = 60.0
#: Shuffle ids whose old runs a worker remembers refusing (the oldest are forgotten first).
REMEMBERED = 10_000
_RECORD = struct.Struct("<QQ")  # input number, frames of the piece (then each frame's length)
_LENGTH = struct.Struct("<Q")


class ShuffleIncomplete(RuntimeError):
    """A shuffle's pieces are not all where they should be (a worker left): it runs again."""


class _Run:
    """What this worker holds of one run of one shuffle: the inputs it has heard from, and
    per output the pieces in memory and the file the others went to."""

    __slots__ = ("shuffle_id", "run", "inputs", "counts", "buffers", "files", "directory")

    def __init__(self, shuffle_id: str, run: int, directory: str) -> None:
        self.shuffle_id, self.run = shuffle_id, run
        self.inputs: set[int] = set()
        self.counts: dict[int, int] = defaultdict(int)  # output -> pieces received
        self.buffers: dict[int, list] = defaultdict(list)  # output -> [(input, [piece's frames])]
        self.files: set[int] = set()  # outputs with pieces on disk
        self.directory = directory

    def path(self, j: int) -> str:
        return os.path.join(self.directory, str(j))


class ShuffleService:
    """This worker's shuffles: the runs it receives for, and the run info its transfers use."""

    def __init__(self, worker) -> None:
        self.worker = worker
        self.runs: dict[str, _Run] = {}
        self.info: dict[str, dict] = {}  # shuffle id -> {"run", "workers"} (the scheduler's answer)
        self.refused: OrderedDict[str, int] = OrderedDict()  # shuffle id -> runs below this are gone
        self.buffer_limit = parse_bytes(config.get("shuffle.buffer", "64MiB"))
        self.buffered = 0  # bytes of pieces in memory, over every run
        self._flush_lock = asyncio.Lock()  # (binds to the loop that first waits on it)
        self._home: WorkerDirectory | None = None  # where pieces go to disk, locked while this worker lives
        self.written = 0  # bytes written to disk, ever (for tests and diagnostics)

    def __repr__(self) -> str:
        return (f"<ShuffleService runs={len(self.runs)} buffered={self.buffered} "
                f"limit={self.buffer_limit} written={self.written}>")

    # ------------------------------------------------------------------ from task threads
    def _call(self, coro) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.worker.loop).result()

    def transfer(self, shuffle_id: str, i: int, n_in: int, n_out: int, out: str, pieces: Sequence | Mapping,
                 grid: tuple | None = None) -> int:
        """Send input ``i``'s pieces (``n_out`` of them, or ``{output: piece}``) to their
        outputs' workers; the run they went under."""
        items = checked_pieces(pieces, n_out)
        blobs = {j: dumps(p) for j, p in items}  # (a piece's arrays as frames of their own)
        del pieces, items
        deadline = time.monotonic() + RETRY_FOR
        fresh = False
        while True:
            info = self._call(self._run_info(shuffle_id, n_in, n_out, out, grid, fresh))
            failed = self._call(self._send_all(shuffle_id, info["run"], i, info["workers"], blobs))
            if not failed:
                # (still the current run? a restart since would otherwise cost a second one, when
                # this execution's result is taken for the rerun of this task)
                if self._call(self._run_info(shuffle_id, n_in, n_out, out, grid, True))["run"] == info["run"]:
                    return info["run"]
                fresh = True
                continue
            if time.monotonic() > deadline:
                raise ConnectionError(f"shuffle {shuffle_id}: input {i} could not reach {failed} "
                                      f"for {RETRY_FOR:.0f} s")
            fresh = True
            if not any(why == "stale" for why in failed.values()):
                time.sleep(0.2)  # (a peer unreachable: the scheduler has not noticed yet)

    def barrier(self, shuffle_id: str, n_in: int, n_out: int, out: str, runs: Sequence[int],
                grid: tuple | None = None) -> int:
        """The run every transfer sent under, if it is the current one; else the shuffle restarts."""
        current = self._call(self._run_info(shuffle_id, n_in, n_out, out, grid, True))["run"]
        if set(runs) == {current}:
            return current
        if current in runs:  # some transfers sent under an older run only: their pieces are gone
            self._restart(shuffle_id, current, f"transfers ran under runs {sorted(set(runs))}")
        # (all older: the shuffle restarted since; the scheduler has released this barrier)
        raise ShuffleIncomplete(f"shuffle {shuffle_id}: restarted (run {current}) while its barrier ran")

    def take(self, shuffle_id: str, run: int, j: int, n_pieces: int) -> list:
        """Output ``j``'s ``n_pieces`` pieces of ``run``, in input order (read from disk, file deleted)."""
        got = self._call(self._take(shuffle_id, run, j, n_pieces))
        if isinstance(got, str):
            self._restart(shuffle_id, run, got)
        records, path = got
        pieces = [(i, loads([f if not f.readonly else bytearray(f) for f in frames]))
                  for i, frames in records]  # (a received frame is read-only: the array gets a copy)
        del records
        if path is not None:  # (read record by record: the file's bytes are never all in memory)
            with open(path, "rb") as f:
                while head := f.read(_RECORD.size):
                    i, k = _RECORD.unpack(head)
                    lengths = struct.unpack(f"<{k}Q", f.read(k * _LENGTH.size))
                    pieces.append((i, loads([_read_exactly(f, n, path) for n in lengths])))
            os.unlink(path)
        pieces.sort(key=lambda r: r[0])
        return [piece for _, piece in pieces]

    def _restart(self, shuffle_id: str, run: int, why: str):
        self._call(self.worker.scheduler.request(
            {"op": ops.SHUFFLE_RESTART, "id": shuffle_id, "run": run, "why": why}, timeout=60))
        raise ShuffleIncomplete(f"shuffle {shuffle_id} run {run}: {why}; the shuffle runs again")

    # ------------------------------------------------------------------ on the loop
    async def _run_info(self, shuffle_id: str, n_in: int, n_out: int, out: str, grid: tuple | None,
                        fresh: bool) -> dict:
        info = self.info.get(shuffle_id)
        if info is None or fresh:
            ask = {"op": ops.SHUFFLE_GET, "id": shuffle_id, "n_in": n_in, "n_out": n_out, "out": out}
            if grid is not None:
                ask["grid"] = list(grid)
            reply, _ = await self.worker.scheduler.request(ask, timeout=60)
            if reply.get("error"):
                raise RuntimeError(f"shuffle {shuffle_id}: {reply['error']}")
            info = self.info[shuffle_id] = {"run": reply["run"], "workers": list(reply["workers"])}
        return info

    async def _send_all(self, shuffle_id: str, run: int, i: int, workers: list, blobs: dict) -> dict:
        """Every worker's pieces sent at once; {worker: why} for those that did not take them."""
        by_worker: dict[str, list[int]] = defaultdict(list)
        for j in sorted(blobs):
            by_worker[owner(j, workers)].append(j)

        async def send(address: str, outputs: list[int]) -> tuple[str, str | None]:
            header = {"op": ops.SHUFFLE_RECEIVE, "id": shuffle_id, "run": run, "input": i,
                      "outputs": outputs, "frames": [len(blobs[j]) for j in outputs]}
            frames = [b""] + [frame for j in outputs for frame in blobs[j]]
            try:
                if address == self.worker.address:  # (kept here: copies, not views of this input)
                    frames = [f if isinstance(f, bytes) else bytearray(f) for f in frames]
                    reply = await self.receive(header, frames)
                else:
                    reply = await push(self.worker.pool.get(address), header, "pieces", frames, address, timeout=300)
            except RemoteError:
                raise  # the peer refused the message: sending it again would not help
            except Exception as e:  # noqa: BLE001 - gone, refused, timed out: ask the scheduler again
                logger.info("shuffle %s: input %d to %s failed: %s", shuffle_id, i, address, e)
                return address, f"{type(e).__name__}: {e}"
            return address, (None if reply.get("status") == "OK" else "stale")

        results = await asyncio.gather(*(send(a, outs) for a, outs in by_worker.items()))
        return {a: why for a, why in results if why is not None}

    async def receive(self, header: dict, payload: list) -> dict:
        """Another worker's (or our own) pieces of one input for the outputs we build."""
        if header.get("bulk"):
            payload = await asyncio.get_running_loop().run_in_executor(None, with_pushed, self.worker.bulk,
                                                                       header, payload)
        shuffle_id, run = header["id"], header["run"]
        if run < self.refused.get(shuffle_id, 0):
            return {"status": "stale"}
        r = self.runs.get(shuffle_id)
        if r is not None and r.run > run:
            return {"status": "stale"}
        if r is None or r.run < run:
            if r is not None:
                await self._drop(r)
            r = self.runs[shuffle_id] = _Run(shuffle_id, run, os.path.join(self._dir(), f"{shuffle_id}-{run}"))
        i = header["input"]
        if i in r.inputs:
            return {"status": "OK"}  # a transfer that ran twice: its pieces are here already
        outputs, counts, frames = header["outputs"], header["frames"], payload[1:]
        if len(outputs) != len(counts) or sum(counts) != len(frames):
            raise ValueError(f"shuffle-receive names {len(outputs)} outputs of {sum(counts)} frames "
                             f"({len(counts)} counts) for {len(frames)} frames")
        r.inputs.add(i)
        at = 0
        for j, k in zip(outputs, counts):
            piece = [memoryview(frame_view(f)) for f in frames[at:at + k]]
            at += k
            r.buffers[j].append((i, piece))
            r.counts[j] += 1
            self.buffered += nbytes_of_frames(piece)
        if self.buffered > self.buffer_limit:
            await self._flush()
        return {"status": "OK"}

    async def _flush(self) -> None:
        """Write every buffered piece to its output's file (in a thread, one at a time)."""
        async with self._flush_lock:
            batches = []
            for r in self.runs.values():
                if r.buffers:
                    batches.append((r, dict(r.buffers)))
                    r.files.update(r.buffers)
                    r.buffers.clear()
            self.buffered = 0
            if batches:
                self.written += await asyncio.get_running_loop().run_in_executor(None, _write, batches)

    async def _take(self, shuffle_id: str, run: int, j: int, n_pieces: int):
        """(output j's buffered records, its file or None), handed over; or why they cannot be."""
        async with self._flush_lock:
            r = self.runs.get(shuffle_id)
            if r is None or r.run != run:
                return f"this worker holds no pieces of run {run}"
            if r.counts[j] < n_pieces:
                return f"output {j} has {r.counts[j]} of its {n_pieces} pieces here"
            records = r.buffers.pop(j, [])
            self.buffered -= sum(nbytes_of_frames(piece) for _, piece in records)
            path = r.path(j) if j in r.files else None
            r.files.discard(j)
            return records, path

    def forget(self, shuffle_id: str, run: int) -> None:
        """Drop this shuffle's runs before ``run`` and refuse their pieces from now on."""
        self.refused[shuffle_id] = max(run, self.refused.get(shuffle_id, 0))
        self.refused.move_to_end(shuffle_id)
        while len(self.refused) > REMEMBERED:
            self.refused.popitem(last=False)
        info = self.info.get(shuffle_id)
        if info is not None and info["run"] < run:
            del self.info[shuffle_id]
        r = self.runs.get(shuffle_id)
        if r is not None and r.run < run:
            del self.runs[shuffle_id]  # (its buffer and files go once no flush is writing them)
            self.worker._background.spawn(self._drop(r))

    async def _drop(self, r: _Run) -> None:
        if self.runs.get(r.shuffle_id) is r:
            del self.runs[r.shuffle_id]
        async with self._flush_lock:  # (not while a flush writes its files)
            self.buffered -= sum(nbytes_of_frames(p) for records in r.buffers.values() for _, p in records)
            r.buffers.clear()
            if r.files:
                shutil.rmtree(r.directory, ignore_errors=True)
                r.files.clear()

    def _dir(self) -> str:
        if self._home is None:
            self._home = worker_directory(self.worker.local_directory, "xsched-shuffle-")
        return self._home.path

    def close(self) -> None:
        """The worker closes: every file goes."""
        self.runs.clear()
        if self._home is not None:
            self._home.close()
            self._home = None


def _read_exactly(f, n: int, path: str) -> bytearray:
    """``n`` bytes of ``f`` into a buffer of their own (the array made from it keeps it)."""
    buf = bytearray(n)
    if f.readinto(buf) != n:
        raise OSError(f"shuffle file {path} ends inside a piece: was the disk full when it was written?")
    return buf


def _write(batches: list) -> int:
    written = 0
    for r, buffers in batches:
        os.makedirs(r.directory, exist_ok=True)
        for j, records in buffers.items():
            with open(r.path(j), "ab") as f:
                for i, piece in records:
                    f.write(_RECORD.pack(i, len(piece)))
                    f.write(struct.pack(f"<{len(piece)}Q", *(memoryview(p).nbytes for p in piece)))
                    for frame in piece:
                        f.write(frame)
                    written += _RECORD.size + _LENGTH.size * len(piece) + nbytes_of_frames(piece)
    return written
