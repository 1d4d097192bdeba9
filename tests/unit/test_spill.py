"""SpillBuffer: LRU spilling to disk by weight, unspill on access, failures keep data in memory."""

from __future__ import annotations

import logging
import os
import stat
import threading

import numpy as np
import pytest

from xsched.worker import spill as spill_module
from xsched.worker.spill import SpillBuffer, trim_memory

MB = 2**20


def arr(n_bytes: int, fill: float = 0.0) -> np.ndarray:
    return np.full(n_bytes // 8, fill, dtype=np.float64)


def files(directory) -> list[str]:
    return sorted(os.listdir(directory)) if os.path.exists(directory) else []


@pytest.fixture
def spill_dir(tmp_path):
    return str(tmp_path / "spill")


def test_directory_is_private_and_created(spill_dir):
    buf = SpillBuffer(spill_dir, target=None)
    assert stat.S_IMODE(os.stat(spill_dir).st_mode) == 0o700
    buf.close()
    assert not os.path.exists(spill_dir)


def test_lru_order_and_target_respected(spill_dir):
    buf = SpillBuffer(spill_dir, target=3 * MB)
    for i, k in enumerate("abc"):
        buf[k] = arr(MB, i)
    assert buf.memory_bytes == 3 * MB and buf.slow_keys == []
    buf["a"]  # touch: "b" is now least recently used
    buf["d"] = arr(MB, 3)
    assert buf.slow_keys == ["b"]
    assert buf.fast_keys == ["c", "a", "d"]
    assert buf.memory_bytes == 3 * MB
    assert buf.spilled_bytes == MB and buf.spilled_count == 1
    buf["e"] = arr(2 * MB, 4)  # needs room for 2 MB: "c" then "a" go
    assert buf.slow_keys == ["b", "c", "a"]
    assert buf.memory_bytes == 3 * MB <= buf.target
    assert len(files(spill_dir)) == 3
    assert sorted(buf) == list("abcde") and len(buf) == 5
    buf.close()


def test_entry_heavier_than_target_spills_alone(spill_dir):
    buf = SpillBuffer(spill_dir, target=3 * MB)
    buf["small"] = arr(MB)
    buf["huge"] = arr(4 * MB, 1)
    assert buf.slow_keys == ["huge"] and buf.fast_keys == ["small"]
    # reading it returns it but keeps it on disk (it could never stay in memory)
    assert buf["huge"][0] == 1
    assert buf.slow_keys == ["huge"] and len(files(spill_dir)) == 1
    assert buf.memory_bytes == MB
    buf.close()


def test_unspill_returns_equal_writeable_array_and_removes_file(spill_dir):
    buf = SpillBuffer(spill_dir, target=None)
    original = np.arange(250_000, dtype=np.int64).reshape(500, 500)
    buf["x"] = original.copy()
    buf["meta"] = {"a": [1, 2], "b": b"y" * 100_000}
    assert buf.evict() == original.nbytes
    assert buf.evict() > 100_000
    assert set(buf.slow_keys) == {"x", "meta"} and len(files(spill_dir)) == 2
    out = buf["x"]
    np.testing.assert_array_equal(out, original)
    assert out.flags.writeable and out.dtype == original.dtype and out.shape == original.shape
    out[0, 0] = -1  # writeable in place
    assert buf["x"][0, 0] == -1  # the in-memory value is the same object
    assert buf.fast_keys == ["x"] and len(files(spill_dir)) == 1
    assert buf["meta"] == {"a": [1, 2], "b": b"y" * 100_000}
    assert files(spill_dir) == [] and buf.spilled_count == 0 and buf.disk_bytes == 0
    buf.close()


def test_non_contiguous_and_odd_dtypes_roundtrip(spill_dir):
    buf = SpillBuffer(spill_dir, target=None)
    values = {
        "strided": np.arange(100.0)[::3],
        "fortran": np.asfortranarray(np.arange(12).reshape(3, 4)),
        "record": np.zeros(5, dtype=[("a", "i4"), ("b", "f8")]),
        "bytes": b"z" * 200_000,
        "empty": np.empty(0),
    }
    for k, v in values.items():
        buf[k] = v
    while buf.evict() >= 0:
        pass
    assert buf.spilled_count == len(values)
    for k, v in values.items():
        got = buf[k]
        if isinstance(v, np.ndarray):
            np.testing.assert_array_equal(got, v)
            assert got.dtype == v.dtype
        else:
            assert got == v
    buf.close()


def test_delete_removes_file_and_key(spill_dir):
    buf = SpillBuffer(spill_dir, target=None)
    buf["a"] = arr(MB)
    buf["b"] = arr(MB)
    buf.evict()
    assert buf.slow_keys == ["a"] and len(files(spill_dir)) == 1
    del buf["a"]
    assert files(spill_dir) == [] and "a" not in buf and buf.spilled_bytes == 0
    del buf["b"]
    assert len(buf) == 0 and buf.memory_bytes == 0
    with pytest.raises(KeyError):
        del buf["a"]
    with pytest.raises(KeyError):
        buf["a"]
    buf.close()


def test_discard_releases_without_reading(spill_dir):
    buf = SpillBuffer(spill_dir, target=None)
    buf["a"] = arr(MB)
    buf.evict()
    assert buf.discard("a") is True and buf.discard("a") is False
    assert buf.unspill_count == 0 and files(spill_dir) == [] and len(buf) == 0
    buf.close()


def test_overwrite_spilled_key_removes_old_file(spill_dir):
    buf = SpillBuffer(spill_dir, target=None)
    buf["a"] = arr(MB, 1)
    buf.evict()
    buf["a"] = arr(MB, 2)
    assert files(spill_dir) == [] and buf.fast_keys == ["a"] and buf["a"][0] == 2
    assert buf.memory_bytes == MB and buf.spilled_bytes == 0
    buf.close()


def test_unpicklable_stays_in_memory_and_logs_once(spill_dir, caplog):
    buf = SpillBuffer(spill_dir, target=2 * MB)
    caplog.set_level(logging.WARNING, logger="xsched.worker.spill")
    buf["lock1"] = {"lock": threading.Lock(), "payload": arr(MB)}
    buf["lock2"] = {"lock": threading.Lock(), "payload": arr(MB)}
    buf["ok"] = arr(MB)  # over target: the locks cannot go, so "ok" does
    assert sorted(buf.fast_keys) == ["lock1", "lock2"] and buf.slow_keys == ["ok"]
    warnings = [r for r in caplog.records if "cannot spill" in r.getMessage()]
    assert len(warnings) == 1  # once per kind of value, not per key
    assert buf.evict() == -1  # nothing left that can be spilled
    assert buf["lock1"]["payload"].nbytes == MB
    buf.close()


def test_max_spill_bound(spill_dir, caplog):
    caplog.set_level(logging.WARNING, logger="xsched.worker.spill")
    buf = SpillBuffer(spill_dir, target=MB, max_spill=int(2.5 * MB))
    for i in range(5):
        buf[i] = arr(MB, i)
    # two files fit under 2.5 MB; the rest stays in memory
    assert buf.spilled_count == 2 and buf.disk_bytes <= 2.5 * MB
    assert buf.memory_bytes == 3 * MB
    assert buf.evict() == -1
    assert sum("max_spill" in r.getMessage() for r in caplog.records) == 1
    del buf[0]  # frees disk space: spilling resumes
    assert buf.evict() == MB and buf.spilled_count == 2
    assert [buf[i][0] for i in range(1, 5)] == [1, 2, 3, 4]
    buf.close()


def test_disk_error_keeps_data_in_memory(spill_dir, monkeypatch, caplog):
    caplog.set_level(logging.WARNING, logger="xsched.worker.spill")
    buf = SpillBuffer(spill_dir, target=MB)

    def full(path, views):
        open(path, "wb").close()  # a partial file must be cleaned up
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(spill_module, "_write_frames", full)
    buf["a"] = arr(MB)
    buf["b"] = arr(MB)  # never raises
    assert buf.fast_keys == ["a", "b"] and buf.spilled_count == 0
    assert buf.evict() == -1 and files(spill_dir) == []
    assert sum("No space" in r.getMessage() for r in caplog.records) == 1
    monkeypatch.undo()
    assert buf.evict() == MB and buf.slow_keys == ["a"]  # LRU order was kept
    buf.close()


def test_evict_empty_and_order(spill_dir):
    buf = SpillBuffer(spill_dir, target=None)
    assert buf.evict() == -1
    buf["a"] = arr(2 * MB)
    buf["b"] = arr(MB)
    assert buf.evict() == 2 * MB
    assert buf.evict() == MB
    assert buf.evict() == -1
    assert buf.slow_keys == ["a", "b"] and buf.memory_bytes == 0
    buf.close()


def test_weight_contains_and_keys_do_not_unspill(spill_dir):
    buf = SpillBuffer(spill_dir, target=None)
    buf["a"] = arr(MB)
    buf.evict()
    assert "a" in buf and list(buf.keys()) == ["a"] and buf.weight("a") == MB
    assert buf.spilled_count == 1 and buf.unspill_count == 0
    with pytest.raises(KeyError):
        buf.weight("nope")
    assert buf.get("nope", 7) == 7
    buf.close()


def test_stats_counters_move(spill_dir):
    buf = SpillBuffer(spill_dir, target=MB)
    assert (buf.spill_count, buf.unspill_count) == (0, 0)
    assert (buf.spill_bytes_written, buf.unspill_bytes_read) == (0, 0)
    buf["a"] = arr(MB)
    buf["b"] = arr(MB)
    assert buf.spill_count == 1 and buf.spill_bytes_written > MB and buf.spill_seconds > 0
    written = buf.spill_bytes_written
    buf["a"]
    assert buf.unspill_count == 1 and buf.unspill_bytes_read == written and buf.unspill_seconds > 0
    assert buf.spill_count == 2 and buf.spill_bytes_written == 2 * written  # reading "a" pushed "b" out
    buf.close()


def test_close_leaves_no_files_and_keeps_foreign_ones(tmp_path):
    d = tmp_path / "spill"
    buf = SpillBuffer(str(d), target=0)
    for i in range(3):
        buf[i] = arr(1000)
    assert len(files(d)) == 3
    buf.close()
    assert not d.exists() and len(buf) == 0
    buf.close()  # twice is fine
    buf[9] = 1  # after close nothing is spilled
    assert buf.fast_keys == [9]

    # an existing directory with someone else's file: we delete only our files
    d.mkdir()
    (d / "theirs.txt").write_text("keep")
    buf = SpillBuffer(str(d), target=0)
    buf["a"] = arr(1000)
    buf.close()
    assert files(d) == ["theirs.txt"]


def test_concurrent_threads_consistent(spill_dir):
    buf = SpillBuffer(spill_dir, target=400_000)  # about 5 of the 80 kB values fit
    errors = []
    n_threads, n_keys = 4, 40

    def work(t):
        try:
            for i in range(n_keys):
                buf[(t, i)] = np.full(10_000, t * 1000 + i, dtype=np.float64)
                if i % 3 == 0 and (i // 2) % 5 != 3:  # keys i % 5 == 3 get deleted
                    got = buf[(t, i // 2)]
                    assert got[0] == t * 1000 + i // 2
                if i % 5 == 4:
                    del buf[(t, i - 1)]
            buf.evict()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    # a reader of whatever is there, like the event loop serving get-data
    for _ in range(200):
        for k in list(buf.keys())[:3]:
            try:
                assert buf[k][0] == k[0] * 1000 + k[1]
            except KeyError:
                pass  # deleted between listing and reading
    for th in threads:
        th.join()
    assert not errors, errors
    expected = {(t, i) for t in range(n_threads) for i in range(n_keys) if i % 5 != 3}
    assert set(buf) == expected and len(buf) == len(expected)
    for k in expected:
        assert buf[k][0] == k[0] * 1000 + k[1]
    assert buf.memory_bytes <= buf.target
    assert len(files(spill_dir)) == buf.spilled_count
    assert buf.memory_bytes + buf.spilled_bytes == 80_000 * len(expected)
    buf.close()
    assert not os.path.exists(spill_dir)


def test_reads_of_memory_keys_do_not_wait_for_a_slow_write(spill_dir, monkeypatch):
    buf = SpillBuffer(spill_dir, target=None)
    buf["slow"] = arr(1000)
    buf["fast"] = arr(1000, 5)
    started, release = threading.Event(), threading.Event()
    real = spill_module._write_frames

    def slow_write(path, views):
        started.set()
        release.wait(5)
        real(path, views)

    monkeypatch.setattr(spill_module, "_write_frames", slow_write)
    th = threading.Thread(target=buf.evict)
    th.start()
    assert started.wait(5)
    # while "slow" is being written: other keys, and "slow" itself, are readable
    assert buf["fast"][0] == 5 and buf["slow"].nbytes == 1000 and "slow" in buf
    del buf["slow"]  # and it can be deleted: the writer then drops its file
    release.set()
    th.join()
    assert files(spill_dir) == [] and list(buf) == ["fast"]
    buf.close()


def test_trim_memory_returns_bool():
    assert isinstance(trim_memory(), bool)
    assert isinstance(trim_memory(), bool)  # cached lookup


def test_writes_and_reads_are_told_with_their_times_and_bytes(spill_dir):
    told = []
    buf = SpillBuffer(spill_dir, target=1000)
    buf.on_disk = lambda kind, start, stop, nbytes: told.append((kind, start <= stop, nbytes))
    buf["a"] = arr(800, 1.0)
    buf["b"] = arr(800, 2.0)  # a goes to disk
    assert [t[0] for t in told] == ["disk-write"] and told[0][1] and told[0][2] >= 800
    assert float(buf["a"][0]) == 1.0  # read back
    assert [t[0] for t in told][:2] == ["disk-write", "disk-read"] and told[1][2] == told[0][2]
