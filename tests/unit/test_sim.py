"""The simulator (xsched/sim): real state machines in virtual time, deterministic by seed.

Nothing here asserts a wall or CPU time: only what the machines decided, in virtual time.
Small runs validate both machines after every event and check every message against
protocol/schemas.py.
"""

import json
import os
import subprocess
import sys

import pytest

from xsched.scheduler.server import Scheduler
from xsched.scheduler.state import SchedulerState
from xsched.sim import WORKLOADS, Cluster, make, map_tasks, resources, setup, simulate, tree
from xsched.sim.servers import SimScheduler, SimWorker
from xsched.worker.server import Worker
from xsched.worker.state import WorkerState

STRICT = {"validate": True, "check_messages": True}


def run(workload, workers, threads, **kw):
    c = setup(workload, workers, threads, **{**STRICT, **kw})
    return c, c.run()


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_every_workload_settles_with_its_results_held(name):
    c, r = run(make(name, tasks=150, seed=3), workers=5, threads=2)
    assert r["completed"] and r["tasks"] == len(c.workload)
    assert c.final_problems() == []
    for key in c.workload.wanted:  # in memory on the scheduler, and on a live worker holding it
        ts = c.state.tasks[key]
        assert ts.state == "memory" and ts.who_has
        assert all(key in c.workers[ws.address].data for ws in ts.who_has)
    for t in c.workload.tasks:  # every other key released or forgotten, everywhere
        if t.key not in c.wanted:
            assert c.state.tasks.get(t.key) is None or c.state.tasks[t.key].state == "released"
    assert r["recomputed"] == 0 and r["lost_executions"] == 0 and r["dropped_messages"] == 0
    assert all(n == 1 for n in c.metrics.started.values()) and len(c.metrics.started) == len(c.workload)


def test_a_tiny_map_costs_exactly_its_events_and_messages():
    c, r = run(map_tasks(3, jitter=0), workers=1, threads=1, heartbeat_interval=None)
    assert dict(c.metrics.scheduler.events) == {"AddWorker": 1, "AddClient": 1, "UpdateGraph": 1, "TaskFinished": 3}
    assert dict(c.metrics.workers.events) == {"ComputeTask": 3, "ExecuteSuccess": 3}
    assert r["messages"] == {"register-worker": 1, "register-client": 1, "update-graph": 1, "compute-task": 3,
                             "task-finished": 3, "key-in-memory": 3}
    assert r["transfers"] == 0 and r["bytes_moved"] == 0
    # one thread, three 1 s tasks one after the other; each round trip costs two 1 ms latencies
    assert r["makespan"] == pytest.approx(3.008) and r["lower_bound"] == 3.0


def test_a_tiny_tree_moves_one_input_once():
    c, r = run(tree(2, fan_in=2, jitter=0, nbytes=1_000_000), workers=2, threads=1, heartbeat_interval=None)
    assert c.metrics.ran_on == {"leaf-0": ["sim://worker-0"], "leaf-1": ["sim://worker-1"],
                                "combine-0-0": ["sim://worker-0"]}
    assert r["transfers"] == 1 and r["bytes_moved"] == 1_000_000
    assert c.metrics.workers.events["GatherDepSuccess"] == 1
    assert c.metrics.scheduler.events["AddKeys"] == 1  # the copy is reported...
    assert r["messages"]["free-keys"] == 3  # ...and freed with the originals once the combine ran
    assert r["messages"]["key-in-memory"] == 1  # only the root is wanted
    # leaf 1 s, the 1 MB copy 2 ms at 500 MB/s, combine 0.1 s, and seven 1 ms hops
    assert r["makespan"] == pytest.approx(1.109)
    assert c.final_problems() == []


def test_a_worker_dying_mid_run_is_recomputed_around_and_the_run_completes():
    wl = tree(64, seed=5, fan_in=4)
    c, r = run(wl, workers=4, threads=2, deaths=[(4.5, 1)])
    assert not c.workers["sim://worker-1"].alive
    assert r["completed"] and c.final_problems() == []
    assert r["lost_executions"] > 0 and r["recomputed"] > 0
    assert c.state.tasks[wl.wanted[0]].state == "memory"
    assert "sim://worker-1" not in c.state.workers
    ran_after = [ws[-1] for k, ws in c.metrics.ran_on.items() if len(ws) > 1]
    assert ran_after and "sim://worker-1" not in ran_after


def test_a_dead_worker_s_results_that_the_client_holds_are_computed_again():
    c, r = run(map_tasks(40, seed=2), workers=4, threads=2, deaths=[(3.2, 2)])
    held_there = [k for k, ws in c.metrics.ran_on.items() if ws[0] == "sim://worker-2" and len(ws) > 1]
    assert held_there and r["recomputed"] >= len(held_there)
    assert r["completed"] and c.final_problems() == []


def test_a_retiring_worker_hands_its_data_over_and_nothing_is_recomputed():
    c, r = run(map_tasks(40, seed=2), workers=4, threads=2, leaves=[(3.2, 2)])
    assert not c.workers["sim://worker-2"].alive and c.workers["sim://worker-2"].retired
    assert r["messages"]["acquire-replicas"] >= 1 and r["recomputed"] == 0 and r["lost_executions"] == 0
    assert r["completed"] and c.final_problems() == []


def test_a_worker_joining_late_gets_work():
    c, r = run(map_tasks(200, seed=1), workers=2, threads=2, joins=[5.0])
    assert any(ws == ["sim://worker-2"] for ws in c.metrics.ran_on.values())
    assert r["completed"] and c.final_problems() == []


def test_resources_are_honoured():
    wl = resources(200, seed=4)  # half the tasks need a GPU, which every 4th worker has
    c, r = run(wl, workers=8, threads=2)
    gpu_workers = {"sim://worker-0", "sim://worker-4"}
    assert {c.workers[a].resources.get("GPU") for a in gpu_workers} == {1}
    needing = [t.key for t in wl.tasks if t.resources]
    assert needing and all(set(c.metrics.ran_on[k]) <= gpu_workers for k in needing)
    others = {ws[0] for k, ws in c.metrics.ran_on.items() if k not in needing}
    assert others - gpu_workers  # the other tasks run everywhere
    # one GPU each: the GPU work is the bound. (Not reached: a GPU worker's thread slots
    # also take CPU tasks, so its GPU idles while both threads run CPU tasks.)
    assert r["lower_bound"] == r["resource_bound"] and r["makespan_ratio"] < 1.25
    assert r["completed"] and c.final_problems() == []


def test_a_wide_map_of_equal_tasks_is_as_fast_as_it_can_be():
    r = simulate(map_tasks(1600, jitter=0), workers=100, threads=4, seed=1)
    assert r["completed"] and r["lower_bound"] == 4.0  # four rounds of 400 threads
    assert 1.0 <= r["makespan_ratio"] < 1.02
    assert r["bytes_moved"] == 0 and r["steals"]["moved"] == 0


def test_heartbeats_reach_the_scheduler_as_events():
    c, r = run(map_tasks(40, jitter=0), workers=4, threads=2, heartbeat_interval=0.5)
    beats = c.metrics.scheduler.events["WorkerHeartbeat"]
    assert 4 * r["makespan"] / 0.5 - 4 <= beats <= 4 * r["makespan"] / 0.5 + 4
    assert all(ws.metrics.get("executing") is not None for ws in c.state.workers.values())


SAME = ("makespan", "bytes_moved", "transfers", "messages", "steals", "peak_memory_per_worker", "scheduler_events")


def _twice(name):
    a, b = (simulate(make(name, tasks=200, seed=7), workers=6, threads=2, seed=7) for _ in range(2))
    return {k: a[k] for k in SAME}, {k: b[k] for k in SAME}


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_the_same_seed_gives_the_same_run(name):
    a, b = _twice(name)
    assert a == b


_RUN = """
import json, sys
from xsched.sim import make, simulate
r = simulate(make(sys.argv[1], tasks=1500, seed=0), workers=80, threads=4, seed=0)
print(json.dumps({k: r[k] for k in %r}, sort_keys=True))
""" % (SAME,)


@pytest.mark.parametrize("name", ["tree", "shuffle"])
def test_the_same_run_whatever_the_process_s_hash_seed(name):
    """The state machines walk sets of tasks and workers whose order follows their memory
    addresses (and strings' hashes, salted per process): wherever that order reached a
    decision or a message (dependents placed, holders fetched from, keys reported, the
    simulator's order of same-time messages to different workers) it is now fixed, so a
    run on 80 workers is the same in processes hashing differently."""
    runs = [subprocess.run([sys.executable, "-c", _RUN, name], capture_output=True, text=True, timeout=120,
                           env={**os.environ, "PYTHONHASHSEED": seed}, check=True).stdout
            for seed in ("1", "2")]
    assert runs[0] == runs[1]
    if name == "tree":
        assert json.loads(runs[0])["steals"]["requested"] > 0  # (a run with steals: the hard case)


def test_the_simulator_drives_the_real_state_machines_and_servers(monkeypatch):
    calls = []
    real = SchedulerState.handle

    def counting(self, *events):
        calls.append(len(events))
        return real(self, *events)

    monkeypatch.setattr(SchedulerState, "handle", counting)
    c = setup(map_tasks(20), workers=2, threads=2)
    c.run()
    assert type(c.state) is SchedulerState and c.scheduler.state.machine is c.state
    assert len(calls) == c.metrics.scheduler.calls > 20
    assert all(type(w.state.machine) is WorkerState for w in c.workers.values())
    # the servers' translation runs as written: the subclasses replace the outside world only
    assert issubclass(SimScheduler, Scheduler) and issubclass(SimWorker, Worker)
    own = lambda cls: {n for n, v in vars(cls).items() if callable(v) and not n.startswith("__")}  # noqa: E731
    assert own(SimScheduler) == set()
    assert own(SimWorker) == {"_start_task", "_gather", "close", "metrics"}


def test_a_cluster_runs_one_workload():
    c = Cluster()
    c.submit(map_tasks(1))
    with pytest.raises(RuntimeError, match="one workload"):
        c.submit(map_tasks(1))


def test_charging_the_scheduler_s_cpu_to_virtual_time_still_completes():
    # (what it changes depends on real CPU times: only the outcome is checked)
    c, r = run(make("tree", tasks=100, seed=2), workers=4, threads=2, charge_cpu=True)
    assert r["completed"] and c.final_problems() == [] and r["scheduler_wait_max"] >= 0


@pytest.mark.parametrize("name", ["map", "tree"])
def test_the_workers_weighed_per_task_do_not_grow_with_the_cluster(name, monkeypatch):
    """Placement and stealing read the load index instead of scanning every worker: the
    workers they weigh and the index entries they read per task stay about the same from
    10 to 400 workers (a scan grew 40-fold). Counts, not times: deterministic by seed."""
    from xsched.scheduler.state import load, placement

    counts = {"weighed": 0, "read": 0}
    cost, by_load = placement.Placement._cost, load.WorkerLoad.by_load

    def counted_cost(self, ts, ws):
        counts["weighed"] += 1
        return cost(self, ts, ws)

    def counted_by_load(self, idle=False):
        for ws in by_load(self, idle):
            counts["read"] += 1
            yield ws

    monkeypatch.setattr(placement.Placement, "_cost", counted_cost)
    monkeypatch.setattr(load.WorkerLoad, "by_load", counted_by_load)
    per_task = {}
    for workers in (10, 400):
        counts.update(weighed=0, read=0)
        c, r = run(make(name, tasks=3000, seed=0), workers=workers, threads=4, validate=False)
        assert r["completed"]
        per_task[workers] = {k: v / r["tasks"] for k, v in counts.items()}
    for k in ("weighed", "read"):
        assert per_task[400][k] <= 2 * per_task[10][k] + 2, per_task


def test_a_steal_pass_ranks_a_victim_s_tasks_only_when_a_thief_has_a_thread_free(monkeypatch):
    """On a wide cluster most passes that find a victim with tasks to spare find every idle
    thread already promised to earlier steals; ranking the victim's tasks first made the
    tree's CPU per task grow with the width (2,200 rankings for 928 steals on 1,000
    workers). Now a ranking is made only with a thief in hand, so (almost) every one asks."""
    from xsched.scheduler.state import stealing

    ranked = []
    nlargest = stealing.heapq.nlargest

    def counted(n, iterable, key=None):
        ranked.append(n)
        return nlargest(n, iterable, key=key)

    monkeypatch.setattr(stealing.heapq, "nlargest", counted)
    c, r = run(make("tree", tasks=4000, seed=0), workers=200, threads=8, validate=False)
    assert r["completed"]
    requested = r["steals"]["requested"]
    assert requested > 20
    assert len(ranked) <= requested + 5, (len(ranked), requested)


@pytest.mark.parametrize("name", ["map", "tree", "movie", "shuffle"])
def test_the_schedule_is_within_a_few_percent_of_an_ideal_list_scheduler(name):
    # the reference runs each ready task on any free thread at once, with no transfers or
    # messages; xsched pays both, and the doubt is whether its decisions add more
    r = simulate(make(name, tasks=3000, seed=2), workers=100, threads=4, seed=2)
    assert r["completed"] and r["list_makespan"] > 0
    assert 1.0 <= r["makespan_vs_list"] < 1.1


@pytest.mark.parametrize("name", ["map", "tree"])
def test_with_tens_of_tasks_per_thread_the_makespan_is_near_its_bound(name):
    # the target (within 1.2x of max(critical path, work / threads)) holds once the
    # tasks outnumber the threads; with 2 or 3 per thread no online scheduler reaches it
    r = simulate(make(name, tasks=8000, seed=2), workers=50, threads=4, seed=2)
    assert r["completed"] and r["makespan_ratio"] < 1.2
    few = make(name, tasks=800, seed=2)
    assert few.list_makespan(400) / max(few.critical_path(), few.total_work() / 400) > 1.2
