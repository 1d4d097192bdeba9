"""A script that ends without closing its client or cluster exits quietly and leaves nothing:
no asyncio or thread noise on stderr, no scheduler, nanny or worker process, no temp dir. The
same for an IPython session that started kernels in the scheduler and workers."""

import json
import os
import subprocess
import sys
import textwrap

import psutil
import pytest

from tests.support.helpers import wait_until
from tests.support.netns import alive

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]

SCRIPT = textwrap.dedent("""
    import json, os, sys, time
    from xsched import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1)
    client = Client(cluster)
    assert sum(client.gather(client.map(lambda x: x + 1, range(10)))) == 55
    running = client.submit(time.sleep, 60)          # still running at exit
    waiting = [client.submit(time.sleep, 60, pure=False) for _ in range(3)]  # queued at exit
    pids = {{"scheduler": client.run_on_scheduler(os.getpid),
             "workers": sorted(client.run(os.getpid).values()),
             "nannies": sorted(p.pid for p in cluster.workers.values()),
             "dir": cluster._dir}}
    with open({out!r}, "w") as f:
        json.dump(pids, f)
    # the script ends here: no client.close(), no cluster.close()
""")


NOISE = ("Traceback", "Task was destroyed", "Exception ignored", "was never awaited", "Exception in thread",
         "ResourceWarning", "Error")


@pytest.mark.parametrize("how", ["end of script", "sys.exit(0)"])
def test_a_script_that_never_closes_exits_quietly_and_leaves_nothing(tmp_path, how):
    out = tmp_path / "pids.json"
    code = SCRIPT.format(out=str(out)) + ("\nsys.exit(0)\n" if how == "sys.exit(0)" else "")
    proc = subprocess.run([sys.executable, "-X", "dev", "-c", code], capture_output=True, text=True, timeout=90,
                          env=dict(os.environ, PYTHONWARNINGS="default"))
    assert proc.returncode == 0, proc.stderr
    noisy = [line for line in proc.stderr.splitlines() if any(n in line for n in NOISE)]
    assert not noisy, proc.stderr
    pids = json.loads(out.read_text())
    every = [pids["scheduler"], *pids["workers"], *pids["nannies"]]
    assert len(every) == 5
    procs = []
    for pid in every:
        try:
            procs.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            pass  # gone already
    wait_until(lambda: not any(alive(p) for p in procs), timeout=30,
               msg="every process of the cluster exits after the script")
    wait_until(lambda: not os.path.exists(pids["dir"]), timeout=30, msg="the cluster's temp dir is removed")


def test_a_client_of_a_running_cluster_that_never_closes_exits_quietly(tmp_path, own_cluster):
    """The script only connects (the cluster is not its own): it exits quietly, and the
    scheduler forgets its keys (the client is gone), so the cluster keeps working (once the
    task it left running ends: a running task's thread cannot be interrupted)."""
    cluster = own_cluster(n_workers=1)
    code = textwrap.dedent(f"""
        import time
        from xsched import Client
        client = Client(scheduler_file={cluster.scheduler_file!r})
        assert client.submit(sum, [1, 2]).result() == 3
        held = client.submit(time.sleep, 3)    # running when the script ends
    """)
    proc = subprocess.run([sys.executable, "-X", "dev", "-c", code], capture_output=True, text=True, timeout=90,
                          env=dict(os.environ, PYTHONWARNINGS="default"))
    assert proc.returncode == 0, proc.stderr
    noisy = [line for line in proc.stderr.splitlines() if any(n in line for n in NOISE)]
    assert not noisy, proc.stderr
    from xsched import Client

    with Client(cluster, set_as_default=False) as c:
        wait_until(lambda: c.run_on_scheduler(lambda scheduler: len(scheduler.state.clients)) == 1,
                   msg="the scheduler forgets the client that left")
        assert c.submit(sum, [3, 4]).result(timeout=30) == 7


# An IPython session that used the kernels inside the scheduler and the workers, and left
# without closing its client: the report was one "Task was destroyed but it is pending!"
# per connection at exit. Each line is one input of the session (IPython reads stdin).
IPYTHON_SESSIONS = {
    "Executor, kernels and %scheduler": """
        import json, os
        from xsched import Executor
        client = Executor(n_workers=2, threads_per_worker=1)
        assert client.submit(sum, [1, 2]).result() == 3
        info = client.start_ipython_scheduler()
        workers = client.start_ipython_workers(magic_names="w")
        r = %scheduler len(scheduler.state.workers)
        n0 = %w_0 worker.name
        n1 = %w_1 worker.name
        assert [str(n0), str(n1)] == ["0", "1"], (n0, n1)
        print("session result", r, len(workers))
        pids = {"scheduler": client.run_on_scheduler(os.getpid), "workers": sorted(client.run(os.getpid).values())}
        open(OUT, "w").write(json.dumps(pids))
        exit
    """,
    "asynchronous client": """
        import json, os
        from xsched import Client
        client = await Client(n_workers=2, threads_per_worker=1, asynchronous=True)
        assert await client.submit(sum, [1, 2]) == 3
        info = await client.start_ipython_scheduler()
        workers = await client.start_ipython_workers()
        print("session result", len(info["key"]) > 0 and 2, len(workers))
        scheduler, workers = await client.run_on_scheduler(os.getpid), await client.run(os.getpid)
        pids = {"scheduler": scheduler, "workers": sorted(workers.values())}
        open(OUT, "w").write(json.dumps(pids))
        exit
    """,
}


@pytest.mark.parametrize("session", sorted(IPYTHON_SESSIONS))
def test_an_ipython_session_using_the_kernels_exits_without_pending_task_noise(tmp_path, session):
    out = tmp_path / "pids.json"
    lines = textwrap.dedent(IPYTHON_SESSIONS[session]).strip().splitlines()
    script = "\n".join([f"OUT = {str(out)!r}", *lines]) + "\n"
    procs: list = []
    try:
        proc = subprocess.run([sys.executable, "-X", "dev", "-m", "IPython", "--no-banner", "--colors=nocolor",
                               "--HistoryManager.enabled=False"], input=script, capture_output=True, text=True,
                              timeout=90, cwd=tmp_path, env=dict(os.environ, PYTHONWARNINGS="default"))
        assert "session result 2 2" in proc.stdout, proc.stdout + proc.stderr  # the session did its work
        assert proc.returncode == 0, proc.stderr
        pids = json.loads(out.read_text())
        for pid in [pids["scheduler"], *pids["workers"]]:
            try:
                procs.append(psutil.Process(pid))
            except psutil.NoSuchProcess:
                pass
        everything = proc.stdout + proc.stderr
        assert "Task was destroyed" not in everything, everything
        noisy = [line for line in proc.stderr.splitlines()
                 if any(n in line for n in ("Traceback", "Exception ignored", "was never awaited"))]
        assert not noisy, proc.stderr
        wait_until(lambda: not any(alive(p) for p in procs), timeout=30,
                   msg="every process of the session's cluster exits with it")
    finally:
        for p in procs:  # (only if the test failed: stopped by PID)
            if alive(p):
                p.kill()
