"""Spill store bugs a user met: spill directories of killed workers left behind, spilled
values pulled into memory only to be sent, an unreadable spilled value never reported, and
pause messages in MiB labelled MB."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

from xsched.worker.memory import MemoryMonitor, Thresholds
from xsched.worker.server import Worker
from xsched.worker.spill import SpillBuffer, WorkerDirectory, purge_stale_worker_directories

MB = 2**20

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="spill directories are locked with flock")


def _fail_load(i):
    raise RuntimeError(f"cannot unpickle value {i}")


class NoLoad:
    """Pickles fine; its unpickling raises."""

    def __init__(self, i):
        self.i = i

    def __reduce__(self):
        return (_fail_load, (self.i,))


# ---------------------------------------------------------------- peek: a read that leaves data on disk
def test_peek_returns_spilled_value_and_leaves_it_on_disk(tmp_path):
    buf = SpillBuffer(str(tmp_path / "s"), target=3 * MB)
    expected = {k: np.full(MB // 8, float(i)) for i, k in enumerate("abcd")}  # 1 MiB each
    for k, v in expected.items():
        buf[k] = v
    spilled, in_memory, memory = buf.slow_keys, buf.fast_keys, buf.memory_bytes
    assert spilled == ["a"] and in_memory == ["b", "c", "d"]
    files = sorted(os.listdir(buf.directory))
    for k in "abcd":
        np.testing.assert_array_equal(buf.peek(k), expected[k])
    assert buf.slow_keys == spilled and buf.fast_keys == in_memory  # nothing moved, LRU order kept
    assert sorted(os.listdir(buf.directory)) == files  # the file stays
    assert buf.memory_bytes == memory
    np.testing.assert_array_equal(buf["a"], expected["a"])  # a plain read still brings it back
    assert "a" in buf.fast_keys
    buf.close()


def test_peek_of_missing_key_raises_keyerror(tmp_path):
    buf = SpillBuffer(str(tmp_path / "s"), target=None)
    with pytest.raises(KeyError):
        buf.peek("nope")
    buf.close()


def _fake_worker(data):
    """What Worker._serve_data uses of a worker: its store, address and bulk channel (none)."""
    return types.SimpleNamespace(data=data, address="tcp://fake:1", bulk=None, security=None, memory_limit=None)


def test_serving_spilled_values_does_not_bring_them_into_memory(tmp_path):
    from xsched.protocol.serialize import loads

    buf = SpillBuffer(str(tmp_path / "s"), target=2 * MB)
    expected = {k: np.arange(MB // 8) * i for i, k in enumerate("abcd")}
    for k, v in expected.items():
        buf[k] = v
    spilled, in_memory, writes = buf.slow_keys, buf.fast_keys, buf.spill_count
    assert spilled == ["a", "b"]
    for k in "abcd":  # a client reading the results back one at a time
        msg = Worker._serve_data(_fake_worker(buf), [k], bulk_ok=False)
        np.testing.assert_array_equal(loads(msg.raw["data"])[k], expected[k])
        assert buf.slow_keys == spilled and buf.fast_keys == in_memory, k
    assert buf.spill_count == writes  # nothing was pushed out to make room
    buf.close()


def test_serving_a_spilled_value_that_cannot_be_unpickled_names_key_and_cause(tmp_path, caplog):
    from xsched.protocol.serialize import loads

    buf = SpillBuffer(str(tmp_path / "s"), target=0, sizeof=lambda v: 10)  # everything spills
    buf["bad"] = NoLoad(7)
    buf["good"] = [1, 2, 3]
    assert buf.slow_keys == ["bad", "good"]
    with caplog.at_level(logging.WARNING, logger="xsched.worker"):
        msg = Worker._serve_data(_fake_worker(buf), ["bad", "good", "absent"], bulk_ok=False)
    assert loads(msg.raw["data"]) == {"good": [1, 2, 3]}
    why = msg.header["errors"]["bad"]
    assert "'bad'" in why and "RuntimeError: cannot unpickle value 7" in why, why
    assert set(msg.header["errors"]) == {"bad"}  # a key not here is only left out
    assert sum("cannot unpickle value 7" in r.getMessage() for r in caplog.records) == 1
    buf.close()


# ---------------------------------------------------------------- spill directories of dead workers
def test_purge_removes_dead_workers_directories_only(tmp_path, caplog):
    live = WorkerDirectory(str(tmp_path))
    with open(os.path.join(live.path, "x.xsp"), "wb") as f:
        f.write(b"live data")
    # a worker killed with SIGKILL: its directories (spill, uploads, shuffle) and their files
    # stay, the kernel drops their locks
    script = textwrap.dedent(f"""
        import os, signal
        from xsched.worker.spill import WorkerDirectory, WORKER_DIR_PREFIXES
        for prefix in WORKER_DIR_PREFIXES:
            d = WorkerDirectory({str(tmp_path)!r}, prefix=prefix)
            with open(os.path.join(d.path, "y.xsp"), "wb") as f:
                f.write(b"z" * 3000)
            print(d.path, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -9, proc.stderr
    gone = sorted(proc.stdout.split())
    assert len(gone) == 3 and all(os.path.exists(os.path.join(d, "y.xsp")) for d in gone)
    [dead] = [d for d in gone if "xsched-spill-" in d]
    foreign = tmp_path / "xsched-spill-nolock"  # no lock file: not made by WorkerDirectory, left alone
    foreign.mkdir()
    other = tmp_path / "user-data"
    other.mkdir()

    with caplog.at_level(logging.WARNING, logger="xsched.worker.spill"):
        assert purge_stale_worker_directories(str(tmp_path)) == gone
    assert not any(os.path.exists(d) for d in gone)
    assert sorted(os.listdir(live.path)) == ["worker.lock", "x.xsp"]
    assert foreign.exists() and other.exists()
    assert any(dead in r.getMessage() and "KiB" in r.getMessage() and "the spill directory" in r.getMessage()
               for r in caplog.records)
    assert any("the uploads directory of a worker that is gone" in r.getMessage() for r in caplog.records)
    with pytest.raises(ValueError, match="prefix is one of"):
        WorkerDirectory(str(tmp_path), prefix="mine-")

    assert purge_stale_worker_directories(str(tmp_path)) == []  # the live one stays while it is held
    live.close()
    assert not os.path.exists(live.path)


# ---------------------------------------------------------------- units of the pause message
class _PausingWorker:
    address = "tcp://w:1"
    debugging = None

    def __init__(self):
        self.state = types.SimpleNamespace(paused=False)

    def set_paused(self, paused):
        self.state.paused = paused


def test_pause_log_numbers_agree_with_their_units(caplog):
    from xsched.units import format_bytes

    limit, rss = 400_000_000, 321_000_000  # memory_limit="400MB"
    t = Thresholds(limit=limit, target=False, spill=False, pause=0.8, terminate=False)
    monitor = MemoryMonitor(_PausingWorker(), t)
    try:
        with caplog.at_level(logging.WARNING, logger="xsched.worker.memory"):
            monitor.step(rss)
    finally:
        monitor.close()
    [msg] = [r.getMessage() for r in caplog.records if "paused" in r.getMessage()]
    assert f"process memory {format_bytes(rss)} is above 80% of its {format_bytes(limit)} limit" in msg, msg
    assert "306.13 MiB" in msg and "381.47 MiB" in msg
