"""The notebooks in notebooks/ run end to end in a real Jupyter kernel (nbclient) and show
what they should.

Each test executes one notebook fresh (they are stored without outputs) in a kernel of this
venv's Python, with Jupyter and IPython directories in a temporary folder, then asserts on
the outputs of named cells. A cell may raise only when tagged ``raises-exception``.

Every process the kernel starts (scheduler, workers, CLI workers) is recorded after each
cell, and the test fails if one outlives the notebook: they start in their own session,
so once the kernel has exited the conftest check (by parentage) could no longer see them.
"""

from __future__ import annotations

import ast
import re

import pytest

from tests.support.notebooks import ANSI, run_notebook, text_of

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]

ADDR = r"tcp://127\.0\.0\.1:\d+"


def test_01_quickstart(kernel_env, tmp_path):
    nb = run_notebook("01_quickstart", tmp_path)
    first = nb.cell("import os").outputs
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in first)  # live widget
    assert re.fullmatch(rf"<Client: '{ADDR}' workers=2 threads=2 memory=\S+ \S+ "
                        r"dashboard=http://127\.0\.0\.1:\d+/status\?token=[0-9a-f]{64}>\n", nb.text("print(repr(client))"))
    assert nb.text("def inc(x)").endswith("result: 11\n")
    assert nb.text("def square(x)") == ("squares: [0, 1, 4, 9, 16, 25, 36, 49, 64, 81]\n"
                                        "sum of squares: 285\n")
    assert nb.text("total = client.submit(sum, squares)") == "sum computed on the cluster: 285\n"
    n = sum(range(1_000_000))
    assert nb.text("array = np.arange").endswith(f"sum on a worker: {n} (here: {n})\n")
    assert nb.text("def add(x, y)").endswith("z.compute(): 5\nclient.compute(z).result(): 5\n")
    # as_completed: each nap reported once. The order the notebook shows comes from sleep
    # lengths (0.6, 0.1, 0.3 s), which a loaded machine may reorder, so it is not asserted here;
    # that as_completed yields in completion order is asserted, with gates, in
    # test_cluster_api.py::test_as_completed
    naps = nb.text("def nap(seconds)").splitlines()
    assert sorted(naps) == ["finished: 0.1", "finished: 0.3", "finished: 0.6"], naps
    pids = ast.literal_eval(nb.text("client.run(os.getpid)"))
    assert len(pids) == 2 and all(re.fullmatch(ADDR, a) and p > 0 for a, p in pids.items())
    summary = nb.text("info = client.scheduler_info()")
    assert re.search(rf"^worker 0: {ADDR}, 1 thread\(s\), .*\nworker 1: {ADDR}, 1 thread\(s\)", summary, re.M), summary
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {})
               for o in nb.cell("def slow_inc(x)").outputs)  # the progress bar
    assert nb.text("bar.wait(30)") == "{'slow_inc': [40, 0, 40]}\nsum: 820\n"
    assert nb.text("client.close()") == "closed\n"


def test_02_hdf5_movie(kernel_env, tmp_path):
    nb = run_notebook("02_hdf5_movie", tmp_path)
    assert nb.text("# 1: get the movie").endswith("8 reduction tasks\n")
    rows = nb.cell("rows = [row for chunk in info for row in chunk]")
    assert text_of(rows.outputs).startswith("analysed images: 80 (from 800 frames)\n")
    html = "".join(o.get("data", {}).get("text/html", "") for o in rows.outputs)
    assert "<table" in html and "<th>sum</th>" in html and "<th>variance</th>" in html
    assert nb.png("client.task_stream()") and nb.png("import time")  # fused, then unfused
    # unfused, each worker takes a chunk through read -> sum -> analyse before reading the next
    orders = dict(re.findall(r"^worker (\d+): (.*)$", nb.text("from xsched.tokenize import key_split"), re.M))
    assert sorted(orders) == ["0", "1"], orders
    chunks = 0
    for order in orders.values():
        steps = order.split(" -> ")
        assert len(steps) % 3 == 0 and steps[0::3] == ["from-array"] * (len(steps) // 3), steps
        assert steps[1::3] == ["sum_sub_stacks"] * (len(steps) // 3) and steps[2::3] == ["get_info"] * (len(steps) // 3)
        chunks += len(steps) // 3
    assert chunks == 8


def test_03_memory(kernel_env, tmp_path):
    nb = run_notebook("03_memory", tmp_path)
    out = nb.text("def simulate_df_partition_load")
    assert "length_total: 2000000\n" in out
    peak = re.search(r"peak above idle (\d+) MiB = ([\d.]+) x one partition", out)
    assert peak, out
    assert 0.5 <= float(peak.group(2)) < 2.0, peak.group(0)  # one partition at a time, never both
    assert nb.text("client.close()\ncluster.close()\n\ncluster = LocalCluster") == \
        "sums of the blocks: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n"
    memory = nb.text("def worker_memory()")
    spilled = re.search(r"^spilled: (\d+) MiB in (\d+) blocks$", memory, re.M)
    assert spilled and int(spilled.group(1)) > 0 and int(spilled.group(2)) > 0, memory
    assert nb.text('print("block 0 sum:"') == "block 0 sum: 0.0\n"  # read back from disk
    assert nb.png("client.plot_memory()")


def test_04_resources(kernel_env, tmp_path):
    nb = run_notebook("04_resources", tmp_path)
    assert nb.text("import os") == (" bigmem: 2 threads, resources {'MEMORY': 100000000000}\n"
                                    "  gpu-a: 2 threads, resources {'GPU': 2}\n"
                                    "  gpu-b: 2 threads, resources {'GPU': 2}\n")
    out = nb.text("def load(i)")
    assert out.startswith("total: 132\naggregate ran on bigmem\n"), out  # the MEMORY task on bigmem
    counts = ast.literal_eval(re.search(r"process tasks ran on: (\{.*\})", out).group(1))
    assert set(counts) <= {"gpu-a", "gpu-b"} and sum(counts.values()) == 12, counts
    assert nb.text("with xsched.annotate") == f"total: {sum(2 * i for i in range(100, 106))}\n" \
                                              "annotated aggregate ran on bigmem\n"
    why = nb.text("tpu_task = client.submit")
    assert why.startswith("state: no-worker\nworkers: []\nreason: ") and "TPU" in why, why
    assert nb.text("client.close()") == "worker exit codes: [0, 0, 0]\n"


def test_05_live_debugging(kernel_env, tmp_path):
    nb = run_notebook("05_live_debugging", tmp_path)
    keys = ast.literal_eval(nb.text("gate_dir = tempfile.mkdtemp").removeprefix("running: "))
    assert len(keys) == 2
    # %scheduler while the tasks wait on the gate: each worker is processing one of them
    [before, after] = [c for c in nb.cells if c.source == "%scheduler scheduler.processing"]
    processing = ast.literal_eval(text_of(before.outputs))
    assert sorted(k for ks in processing.values() for k in ks) == sorted(keys), processing
    assert all(len(ks) == 1 for ks in processing.values()) and len(processing) == 2
    workers = nb.text("%%scheduler")
    assert len(re.findall(rf"^{ADDR} <WorkerState '{ADDR}' processing=1", workers, re.M)) == 2, workers
    # %remote info[addr] worker.active: the key executing on that worker now
    addr = nb.text("info = client.start_ipython_workers()").strip()
    assert nb.text("%remote info[addr] worker.active") == f"{set(processing[addr])!r}\n"
    # an error raised remotely comes back with the remote traceback
    [error] = [o for o in nb.cell("%%remote info[addr]").outputs if o["output_type"] == "error"]
    assert error["ename"] == "RemoteKernelError" and "AttributeError" in error["evalue"]
    tb = ANSI.sub("", "\n".join(error["traceback"]))
    assert "----> 4 check(worker)" in tb and "----> 2     return worker.no_such_thing" in tb, tb
    assert nb.text('open(gate, "w").close()') == "results: [0, 1]\n"
    assert ast.literal_eval(text_of(after.outputs)) == {a: [] for a in processing}
    assert nb.text("%load_ext xsched") == "2\n"  # %remote on the scheduler's kernel
