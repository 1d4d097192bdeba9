"""Random event sequences against SchedulerState: invariants after every event, then liveness.

Each seed drives workers joining and leaving (some with a GPU), graphs with shared inputs,
retries and resources, tasks finishing and failing, clients releasing and cancelling,
lost data, reschedules and pauses. ``validate()`` runs after every event; at the end a
big worker joins and every processing task finishes: nothing may be stuck (waiting,
queued, processing, no-worker) and nothing may leak (data nobody wants, released keys
nothing refers to). Seeds are fixed, so a failure reproduces exactly.
"""

import random

import pytest

from xsched.scheduler.state import (
    AddWorker, CancelKeys, ClientReleasesKeys, MissingData, NewTask, RemoveClient, RemoveWorker, Reschedule,
    RetryKeys, SchedulerState, TaskErred, TaskFinished, UpdateGraph, WorkerStatus,
)


def _new_worker(s, rng, n):
    s.handle(AddWorker(f"w{n}", nthreads=rng.randint(1, 2), resources={"GPU": 1} if rng.random() < 0.3 else None))


def _random_graph(s, rng, counter):
    tasks = []
    existing = list(s.tasks)
    for _ in range(rng.randint(1, 5)):
        counter[0] += 1
        key = f"k{counter[0]}"
        cands = existing + [t.key for t in tasks]
        deps = rng.sample(cands, min(len(cands), rng.randint(0, 2))) if cands and rng.random() < 0.7 else []
        tasks.append(NewTask(key, b"S", deps, priority=(counter[0],),
                             resources={"GPU": 1} if rng.random() < 0.15 else None, retries=rng.choice([0, 0, 1])))
    used = {d for t in tasks for d in t.dependencies}
    keys = [t.key for t in tasks if rng.random() < 0.6 or t.key not in used]
    return UpdateGraph(rng.choice(["c1", "c2"]), tasks, keys)


def _step(s, rng, counter, wn):
    r = rng.random()
    processing = [(ts, ts.processing_on) for ts in s.tasks.values() if ts.state == "processing"]
    if r < 0.15:
        s.handle(_random_graph(s, rng, counter))
    elif r < 0.45 and processing:
        ts, ws = rng.choice(processing)
        if rng.random() < 0.8:
            s.handle(TaskFinished(ws.address, ts.key, nbytes=rng.randint(1, 100)))
        else:
            s.handle(TaskErred(ws.address, ts.key, b"E", b"", "err"))
    elif r < 0.55:
        c = rng.choice(["c1", "c2"])
        keys = [ts.key for ts in s.clients.get(c, ())]
        if keys:
            s.handle(ClientReleasesKeys(c, rng.sample(keys, 1)))
    elif r < 0.6 and s.tasks:
        s.handle(CancelKeys(rng.choice(["c1", "c2"]), rng.sample(list(s.tasks), 1)))
    elif r < 0.65:
        erred = [k for k, t in s.tasks.items() if t.state == "erred"]
        if erred:
            s.handle(RetryKeys("c1", rng.sample(erred, 1)))
    elif r < 0.72 and s.workers:
        s.handle(RemoveWorker(rng.choice(list(s.workers))))
    elif r < 0.8:
        wn[0] += 1
        _new_worker(s, rng, wn[0])
    elif r < 0.85:
        mem = [ts for ts in s.tasks.values() if ts.state == "memory"]
        if mem and s.workers:
            ts = rng.choice(mem)
            s.handle(MissingData(rng.choice(list(s.workers)), ts.key, rng.choice(list(ts.who_has)).address))
    elif r < 0.9 and processing:
        ts, ws = rng.choice(processing)
        s.handle(Reschedule(ws.address, ts.key))
    elif r < 0.95 and s.workers:
        s.handle(WorkerStatus(rng.choice(list(s.workers)), rng.choice(["paused", "running"])))
    elif r >= 0.95:
        s.handle(RemoveClient(rng.choice(["c1", "c2"])))


@pytest.mark.parametrize("seed", range(150))
def test_random_events_keep_invariants_and_finish(seed):
    rng = random.Random(seed)
    s = SchedulerState(validate=True, allowed_failures=2)
    counter, wn = [0], [0]
    for _ in range(rng.randint(1, 3)):
        wn[0] += 1
        _new_worker(s, rng, wn[0])
    for _ in range(300):
        _step(s, rng, counter, wn)
    # liveness: a worker that can run anything joins, everything unpauses, work drains
    s.handle(AddWorker("big", nthreads=2, resources={"GPU": 5}))
    for w in list(s.workers):
        s.handle(WorkerStatus(w, "running"))
    for _ in range(5000):
        processing = [(ts, ts.processing_on) for ts in s.tasks.values() if ts.state == "processing"]
        if not processing:
            break
        ts, ws = processing[0]
        s.handle(TaskFinished(ws.address, ts.key, nbytes=1))
    stuck = {k: t.state for k, t in s.tasks.items() if t.state not in ("memory", "erred", "released")}
    assert not stuck, stuck
    for k, t in s.tasks.items():
        assert not (t.state == "memory" and not t.who_wants and not t.waiters), f"leak: {k} in memory"
        assert not (t.state in ("released", "erred") and not t.who_wants
                    and not any(d.state != "forgotten" for d in t.dependents)), f"leak: {k} {t.state}"
    for c, tss in s.clients.items():
        assert all(c in t.who_wants for t in tss)
