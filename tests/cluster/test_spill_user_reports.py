"""Spilling on a real cluster, as a user met it: a killed worker's spill directory (and
its uploads directory) left behind, results read back one at a time pulled into the worker's memory, and a spilled value
that cannot be unpickled fetched by the client."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import xsched
from xsched import Client

from tests.support.helpers import kill_worker, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]

MB = 2**20


def block(i):
    return np.full(8 * MB // 8, float(i))  # 8 MiB


def big_block(i):
    return np.random.default_rng(i).standard_normal(16 * MB // 8)  # 16 MiB


def store_state(worker):
    """(spill directory, pid, keys on disk, files written so far), run with client.run."""
    d = worker.data
    return d.directory, os.getpid(), set(d.slow_keys), d.spill_count


def spill_dirs(base, prefix="xsched-spill-"):
    return sorted(os.path.join(base, n) for n in os.listdir(base) if n.startswith(prefix))


def upload_dir(worker):
    return worker.upload_directory


def test_restarted_worker_removes_the_killed_workers_spill_directory(own_cluster, tmp_path):
    base = str(tmp_path)
    with xsched.config.set({"worker.memory.target": 0.1}):  # 30 MB in memory, the rest on disk
        cluster = own_cluster(n_workers=2, memory_limit="300MB", local_directory=base)
    with Client(cluster) as c:
        c.wait_for_workers(2, timeout=30)
        victim, survivor = sorted(c.scheduler_info()["workers"])
        doomed = c.map(block, range(8), workers=[victim])
        kept = c.map(block, range(8, 16), workers=[survivor])
        xsched.wait(doomed + kept)
        before = c.run(store_state)
        assert before[victim][2] and before[survivor][2], before  # both spilled
        dead_dir, live_dir = before[victim][0], before[survivor][0]
        assert spill_dirs(base) == sorted([dead_dir, live_dir])
        live_files = sorted(os.listdir(live_dir))
        # a file uploaded to every worker: each keeps it in an uploads directory of its own
        module = tmp_path / "mod_for_upload.py"
        module.write_text("X = 1\n")
        c.upload_file(str(module))
        uploads = c.run(upload_dir)
        assert spill_dirs(base, "xsched-uploads-") == sorted(uploads.values())

        kill_worker(c, victim)
        wait_until(lambda: len(c.scheduler_info()["workers"]) == 2, timeout=60, msg="the nanny restarted the worker")
        after = c.run(store_state)
        [restarted] = set(after) - {survivor}
        assert not os.path.exists(dead_dir) and not os.path.exists(uploads[victim])
        assert os.path.exists(os.path.join(uploads[survivor], "mod_for_upload.py"))
        assert sorted(os.listdir(live_dir)) == live_files  # the live worker's spilled data untouched
        assert spill_dirs(base) == sorted([after[restarted][0], live_dir])
        for i, v in enumerate(c.gather(kept), start=8):
            np.testing.assert_array_equal(v, block(i))
        del doomed, kept


def test_reading_spilled_results_one_at_a_time_leaves_them_on_disk(own_cluster):
    with xsched.config.set({"worker.memory.target": 0.2}):  # about 3 of the 12 values in memory
        cluster = own_cluster(n_workers=1, memory_limit="300MB")
    with Client(cluster) as c:
        futs = c.map(big_block, range(12))  # 192 MiB
        xsched.wait(futs)
        [(_, pid, on_disk, writes)] = c.run(store_state).values()
        assert len(on_disk) >= 8, on_disk
        for i, f in enumerate(futs):
            np.testing.assert_array_equal(f.result(), big_block(i))
        [(_, pid_after, on_disk_after, writes_after)] = c.run(store_state).values()
        assert pid_after == pid  # not restarted
        assert on_disk_after == on_disk and writes_after == writes  # read from disk, sent, left there
        del futs


def _fail_load(i):
    raise RuntimeError(f"cannot unpickle value {i}")


class NoLoad:
    """Pickles fine (so it spills); unpickling it raises."""

    def __init__(self, i):
        self.i = i
        self.pad = np.ones(MB // 8)

    def __reduce__(self):
        return (_fail_load, (self.i,))

    def __sizeof__(self):
        return self.pad.nbytes


def make_noload(i):
    return NoLoad(i)


def type_name(x):
    return type(x).__name__


def test_result_of_a_spilled_value_that_cannot_be_unpickled_says_why(own_cluster):
    with xsched.config.set({"worker.memory.target": 0.001}):  # 300 kB: every value spills
        cluster = own_cluster(n_workers=1, memory_limit="300MB")
    with Client(cluster) as c:
        bad = c.submit(make_noload, 3)
        xsched.wait([bad])
        [(_, _, on_disk, _)] = c.run(store_state).values()
        assert bad.key in on_disk
        with pytest.raises(RuntimeError, match="cannot unpickle value 3"):
            c.submit(type_name, bad).result(timeout=60)  # a task on the worker: the real error, as before
        with pytest.raises(Exception, match=re.escape(repr(bad.key)) + ".*RuntimeError: cannot unpickle value 3"):
            bad.result(timeout=60)
        with pytest.raises(Exception, match="cannot unpickle value 3"):
            c.gather([bad])
