"""The worker's p2p shuffle service alone, on an asyncio loop: pieces filed per run and
output, a repeated input kept once, older runs refused and dropped, the buffer written to
disk past its limit and read back in input order. (The cluster tests run it between real
worker processes: tests/cluster/test_p2p_shuffle.py.)"""

from __future__ import annotations

import asyncio
import os
import threading
import types

import pytest

import numpy as np

from xsched.protocol.serialize import dumps
from xsched.worker.shuffle import ShuffleIncomplete, ShuffleService


class _Loop:
    """A loop in a thread, as a worker has, for the service's calls from task threads."""

    def __enter__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        return self.loop

    def __exit__(self, *exc):
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


def service(tmp_path, loop, limit=10**9):
    restarts = []

    async def request(msg, timeout=None):
        restarts.append(msg)
        return {}, []

    background = types.SimpleNamespace(spawn=lambda coro: asyncio.ensure_future(coro))
    worker = types.SimpleNamespace(loop=loop, local_directory=str(tmp_path), address="tcp://here",
                                   _background=background, scheduler=types.SimpleNamespace(request=request))
    s = ShuffleService(worker)
    s.buffer_limit = limit
    s.restarts = restarts
    return s


def send(s, loop, run, i, pieces, sid="s1"):
    """As a peer's transfer sends them: each piece a pickle and its arrays' bytes, read-only."""
    blobs = [dumps(pieces[j]) for j in sorted(pieces)]
    header = {"id": sid, "run": run, "input": i, "outputs": sorted(pieces), "frames": [len(b) for b in blobs]}
    frames = [b""] + [bytes(f) for blob in blobs for f in blob]
    return asyncio.run_coroutine_threadsafe(s.receive(header, frames), loop).result(5)


def test_pieces_come_back_in_input_order_and_a_repeat_is_kept_once(tmp_path):
    with _Loop() as loop:
        s = service(tmp_path, loop)
        for i in (2, 0, 1, 0):
            assert send(s, loop, 1, i, {0: [f"a{i}"], 1: [f"b{i}"]}) == {"status": "OK"}
        assert s.take("s1", 1, 0, 3) == [["a0"], ["a1"], ["a2"]]
        assert s.take("s1", 1, 1, 3) == [["b0"], ["b1"], ["b2"]]
        assert s.buffered == 0


def test_past_the_buffer_pieces_go_to_one_file_per_output(tmp_path):
    with _Loop() as loop:
        s = service(tmp_path, loop, limit=100)
        big = {0: list(range(100)), 1: list(range(50))}
        for i in range(3):
            send(s, loop, 1, i, big)
        assert s.written > 0 and s.buffered < 100
        run_dir = s.runs["s1"].directory
        assert sorted(os.listdir(run_dir)) == ["0", "1"]
        assert s.take("s1", 1, 0, 3) == [list(range(100))] * 3
        assert sorted(os.listdir(run_dir)) == ["1"]  # (each output's file goes once read)
        s.close()
        assert not os.path.exists(run_dir)


def test_a_newer_run_replaces_an_older_one_which_is_then_refused(tmp_path):
    with _Loop() as loop:
        s = service(tmp_path, loop)
        send(s, loop, 1, 0, {0: ["old"]})
        send(s, loop, 2, 0, {0: ["new"]})
        assert s.runs["s1"].run == 2 and s.runs["s1"].inputs == {0}
        assert send(s, loop, 1, 1, {0: ["late"]}) == {"status": "stale"}

        async def forget():  # (on the loop, as the worker calls it)
            s.forget("s1", 3)  # the shuffle restarted (run 3) or ended: run 2 goes too
        asyncio.run_coroutine_threadsafe(forget(), loop).result(5)
        assert "s1" not in s.runs
        assert send(s, loop, 2, 1, {0: ["late"]}) == {"status": "stale"}


def test_an_incomplete_run_asks_for_a_restart(tmp_path):
    with _Loop() as loop:
        s = service(tmp_path, loop)
        send(s, loop, 4, 0, {0: ["x"]})
        with pytest.raises(ShuffleIncomplete, match="output 0 has 1 of its 3 pieces here"):
            s.take("s1", 4, 0, 3)
        with pytest.raises(ShuffleIncomplete, match="no pieces of run 5"):
            s.take("s1", 5, 0, 3)
        assert [(m["op"], m["run"]) for m in s.restarts] == [("shuffle-restart", 4), ("shuffle-restart", 5)]


def test_pieces_that_do_not_match_their_outputs_are_refused(tmp_path):
    with _Loop() as loop:
        s = service(tmp_path, loop)
        header = {"id": "s1", "run": 1, "input": 0, "outputs": [0, 1], "frames": [1, 1]}
        with pytest.raises(ValueError, match="2 outputs of 2 frames .2 counts. for 1 frames"):
            asyncio.run_coroutine_threadsafe(s.receive(header, [b"", b"x"]), loop).result(5)
        assert "s1" not in s.runs or not s.runs["s1"].inputs  # (nothing filed)


def test_an_input_may_reach_only_some_outputs_each_counting_its_own(tmp_path):
    """An array's rechunk: input i sends to the outputs it overlaps; output j waits for the
    pieces it was told to expect, not for every input."""
    with _Loop() as loop:
        s = service(tmp_path, loop, limit=10)  # (and through the files)
        send(s, loop, 1, 0, {0: "a0", 1: "b0"})
        send(s, loop, 1, 1, {1: "b1"})
        send(s, loop, 1, 2, {1: "b2", 2: "c2"})
        assert s.take("s1", 1, 0, 1) == ["a0"]
        assert s.take("s1", 1, 1, 3) == ["b0", "b1", "b2"]
        with pytest.raises(ShuffleIncomplete, match="output 2 has 1 of its 2 pieces"):
            s.take("s1", 1, 2, 2)


def test_a_split_naming_outputs_that_do_not_exist_fails_its_task(tmp_path):
    with _Loop() as loop:
        s = service(tmp_path, loop)
        with pytest.raises(ValueError, match=r"outputs outside 0..2: \[3\]"):
            s.transfer("s1", 0, 1, 3, "out", {0: "a", 3: "b"})


@pytest.mark.parametrize("limit", [10**9, 1], ids=["in memory", "through the files"])
def test_arrays_travel_out_of_band_and_come_back_writable(tmp_path, limit):
    """A piece's arrays leave as frames of their own (no copy into the pickle) and come back
    as arrays the output may write to, from memory and from the files alike."""
    frames = dumps({"a": np.arange(1000, dtype="f8"), "b": "text"})
    assert len(frames) == 2 and frames[1].nbytes == 8000  # (the pickle holds no array bytes)
    assert len(frames[0]) < 1000
    with _Loop() as loop:
        s = service(tmp_path, loop, limit=limit)
        for i in range(3):
            send(s, loop, 1, i, {0: np.full((20, 30), i, dtype="i4"), 1: {"x": np.arange(i + 1)}})
        assert (s.written > 0) == (limit == 1)
        got = s.take("s1", 1, 0, 3)
        assert [int(a[0, 0]) for a in got] == [0, 1, 2] and got[2].shape == (20, 30)
        got[1] += 1  # an output builds on its pieces in place
        assert got[1].sum() == 2 * 600
        assert [d["x"].tolist() for d in s.take("s1", 1, 1, 3)] == [[0], [0, 1], [0, 1, 2]]
        assert s.buffered == 0


def test_a_file_cut_short_fails_its_output_naming_the_file(tmp_path):
    with _Loop() as loop:
        s = service(tmp_path, loop, limit=1)  # (every piece goes to the file)
        send(s, loop, 1, 0, {0: np.arange(1000)})
        path = s.runs["s1"].path(0)
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) - 100)
        with pytest.raises(OSError, match=r"shuffle file .*/0 ends inside a piece"):
            s.take("s1", 1, 0, 1)
