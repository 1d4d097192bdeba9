"""replicate and rebalance in the pure state machine: events in, instructions out, validate()
after every event (``validate=True``). No sockets: the cluster tier is tests/cluster/test_replication.py."""

import random

import pytest

from xsched.scheduler.state import (
    AbandonReplication, AddKeys, AddWorker, MissingData, NewTask, Rebalance, RemoveWorker, Replicate,
    ReplicationDone, Restart, RetireWorkers, SchedulerState, TaskFinished, ToWorker, UpdateGraph, WorkerStatus,
)


def make(n_workers=4, **kw):
    s = SchedulerState(validate=True, **kw)
    for i in range(n_workers):
        s.handle(AddWorker(f"w{i}", nthreads=1))
    return s


def scatter(s, worker, sizes, client="c"):
    """Keys held by ``worker`` alone, as scatter leaves them: {key: nbytes}."""
    s.handle(AddKeys(worker, dict(sizes), client=client))
    return list(sizes)


def to(out, op):
    return [o for o in out if isinstance(o, ToWorker) and o.msg["op"] == op]


def done(out):
    return {o.request: o.result for o in out if isinstance(o, ReplicationDone)}


def holders(s, key):
    return sorted(ws.address for ws in s.tasks[key].who_has)


def deliver(s, out, skip=()):
    """Each destination of an acquire-replicas copied its keys; returns every instruction after.
    Keys of ``skip`` do not arrive. Checks after each arrival that every key keeps a copy."""
    more = []
    for o in to(out, "acquire-replicas"):
        nbytes = {k: v for k, v in o.msg["nbytes"].items() if k not in skip}
        if nbytes:
            more += s.handle(AddKeys(o.worker, nbytes))
            assert all(ts.who_has for ts in s.tasks.values() if ts.state == "memory")
    return more


def loads(s):
    return {a: ws.nbytes for a, ws in s.workers.items()}


# ---------------------------------------------------------------------- replicate
def test_replicate_to_n_copies_from_a_holder_and_answers_once_they_landed():
    s = make(4)
    keys = scatter(s, "w0", {"a": 100, "b": 10})
    out = s.handle(Replicate("r", keys, n=3))
    assert not done(out)
    acq = to(out, "acquire-replicas")
    # a (the larger) goes to the two emptiest workers, then b to the emptiest counting a's copies
    assert sorted((o.worker, sorted(o.msg["who_has"])) for o in acq) == [("w1", ["a", "b"]), ("w2", ["a"]),
                                                                         ("w3", ["b"])]
    assert all(v == ["w0"] for o in acq for v in o.msg["who_has"].values())  # copied from the holder
    assert not to(out, "free-keys")
    assert "r" in s.replications
    out = deliver(s, out)
    result = done(out)["r"]
    assert result["failed"] == {}
    assert {k: len(v) for k, v in result["who_has"].items()} == {"a": 3, "b": 3}
    assert result["who_has"] == {k: holders(s, k) for k in keys}
    assert not s.replications and not to(out, "free-keys")


def test_replicate_spreads_copies_over_the_least_loaded_workers():
    s = make(4)
    scatter(s, "w1", {"big": 1000})
    keys = scatter(s, "w0", {f"k{i}": 10 for i in range(6)})
    out = s.handle(Replicate("r", keys, n=2))
    dests = sorted(o.worker for o in to(out, "acquire-replicas") for _ in o.msg["who_has"])
    assert "w1" not in dests  # it holds the most bytes
    assert dests.count("w2") == dests.count("w3") == 3  # copies planned in the request count


def test_replicate_n_none_is_every_running_worker_and_n_beyond_is_capped():
    s = make(3)
    keys = scatter(s, "w0", {"x": 8})
    out = deliver(s, s.handle(Replicate("r", keys)))
    assert done(out)["r"]["who_has"] == {"x": ["w0", "w1", "w2"]}
    s.handle(AddWorker("w3"))
    out = deliver(s, s.handle(Replicate("r2", keys, n=10)))
    assert done(out)["r2"] == {"who_has": {"x": ["w0", "w1", "w2", "w3"]}, "failed": {}}


def test_replicate_never_removes_copies():
    s = make(4)
    keys = scatter(s, "w0", {"x": 8})
    deliver(s, s.handle(Replicate("r", keys, n=3)))
    out = s.handle(Replicate("r2", keys, n=1))
    assert not to(out, "free-keys") and not to(out, "acquire-replicas")
    assert done(out)["r2"] == {"who_has": {"x": holders(s, "x")}, "failed": {}}
    assert len(holders(s, "x")) == 3


def test_replicate_among_named_workers_counts_only_them():
    s = make(4)
    keys = scatter(s, "w0", {"x": 8})
    out = s.handle(Replicate("r", keys, n=2, workers=["w2", "w3"]))
    assert sorted(o.worker for o in to(out, "acquire-replicas")) == ["w2", "w3"]
    out = deliver(s, out)
    assert done(out)["r"]["who_has"] == {"x": ["w0", "w2", "w3"]}


def test_replicate_reports_workers_that_cannot_take_a_copy():
    s = make(3)
    s.handle(WorkerStatus("w2", "paused"))
    keys = scatter(s, "w0", {"x": 8})
    out = s.handle(Replicate("r", keys, workers=["w0", "w1", "w2"]))
    assert [o.worker for o in to(out, "acquire-replicas")] == ["w1"]  # a paused worker fetches nothing
    result = done(deliver(s, out))["r"]
    assert result["who_has"] == {"x": ["w0", "w1"]}
    assert "2 of the 3 copies" in result["failed"]["x"] and "w2" in result["failed"]["x"]


@pytest.mark.parametrize("event, words", [
    (Replicate("r", ["x", "nope", "run"]), ["2 of the keys are not in memory", "'nope' (not known",
                                            "'run' (processing)", "wait"]),
    (Replicate("r", ["x"], n=0), ["n=0", ">= 1"]),
    (Replicate("r", ["x"], workers=["w1", "ghost"]), ["no worker named 'ghost'", "w1"]),
    (Rebalance("r", ["run"]), ["1 of the keys are not in memory", "'run' (processing)"]),
    (Rebalance("r", workers=[7]), ["no worker named 7"]),
])
def test_requests_that_cannot_start_are_refused_at_once_naming_what_is_wrong(event, words):
    s = make(2)
    scatter(s, "w0", {"x": 8})
    s.handle(UpdateGraph("c", [NewTask("run", b"spec")], ["run"]))
    before = {k: holders(s, k) for k in ("x",)}
    out = s.handle(event)
    refusal = done(out)["r"]["refused"]
    for w in words:
        assert w in refusal, (w, refusal)
    assert not to(out, "acquire-replicas") and not s.replications
    assert {k: holders(s, k) for k in ("x",)} == before


def test_workers_by_name_and_an_empty_request():
    s = SchedulerState(validate=True)
    s.handle(AddWorker("tcp://a", name="alice"), AddWorker("tcp://b", name=2))
    scatter(s, "tcp://a", {"x": 8})
    out = deliver(s, s.handle(Replicate("r", ["x"], workers=["alice", 2])))
    assert done(out)["r"]["who_has"] == {"x": ["tcp://a", "tcp://b"]}
    assert done(s.handle(Replicate("e", [])))["e"] == {"who_has": {}, "failed": {}}


def test_replicate_destination_dies_the_rest_completes_and_says_what_was_not_done():
    s = make(3)
    keys = scatter(s, "w0", {"x": 8, "y": 8})
    out = s.handle(Replicate("r", keys, n=3))
    dests = sorted({o.worker for o in to(out, "acquire-replicas")})
    dead, alive = dests
    more = s.handle(RemoveWorker(dead))
    assert not done(more)
    more = [o for o in out if o.worker == alive]
    result = done(deliver(s, more))["r"]
    assert result["who_has"] == {"x": ["w0", alive], "y": ["w0", alive]}
    assert set(result["failed"]) == {"x", "y"} and f"{dead} left" in result["failed"]["x"]


def test_a_key_lost_during_the_copy_fails_that_copy_only():
    s = make(3)
    scatter(s, "w0", {"x": 8})
    scatter(s, "w1", {"y": 8})
    out = s.handle(Replicate("r", ["x", "y"], n=3))
    out2 = s.handle(RemoveWorker("w0"))  # x had no other holder: lost (scattered: erred or released)
    assert "x" not in s.tasks or s.tasks["x"].state != "memory"
    assert not done(out2)
    result = done(deliver(s, [o for o in out if "y" in o.msg["who_has"]], skip={"x"}))["r"]
    assert "released or lost" in result["failed"]["x"]
    assert result["who_has"]["y"] == ["w1", "w2"] and "x" in result["failed"]


def test_destination_that_found_no_holder_is_told_the_holders_known_since():
    s = make(4)
    scatter(s, "w0", {"x": 8})
    out = s.handle(Replicate("r", ["x"], workers=["w0", "w2"]))
    [acq] = to(out, "acquire-replicas")
    assert acq.worker == "w2" and acq.msg["who_has"] == {"x": ["w0"]}
    s.handle(AddKeys("w1", {"x": 8}))  # another copy appeared meanwhile (e.g. a dependent's fetch)
    out = s.handle(MissingData("w2", "x", "w0"))  # w0 did not have it after all
    [again] = to(out, "acquire-replicas")
    assert again.worker == "w2" and again.msg["who_has"] == {"x": ["w1"]}
    out = s.handle(MissingData("w2", "x", "w1"))  # nor w1: no holder left, the key is lost
    assert "x" not in s.tasks or s.tasks["x"].state != "memory"
    assert "x" in done(out)["r"]["failed"]


def test_abandoned_request_answers_with_what_is_done():
    s = make(3)
    keys = scatter(s, "w0", {"x": 8, "y": 8})
    out = s.handle(Replicate("r", keys, n=2))
    acq = to(out, "acquire-replicas")
    s.handle(AddKeys(acq[0].worker, {"x": 8}))
    result = done(s.handle(AbandonReplication("r", "the 5s timeout passed")))["r"]
    assert result["who_has"]["x"] == sorted(["w0", acq[0].worker])
    assert "the 5s timeout passed" in result["failed"]["y"] and "x" not in result["failed"]
    assert not s.replications
    assert s.handle(AbandonReplication("r")) == []  # once only
    s.handle(AddKeys(acq[0].worker, {"y": 8}))  # the copy landing late is an ordinary replica
    assert len(holders(s, "y")) == 2


def test_restart_ends_every_request():
    s = make(2)
    keys = scatter(s, "w0", {"x": 8})
    s.handle(Replicate("r", keys, n=2))
    result = done(s.handle(Restart()))["r"]
    assert "restarted" in result["failed"]["x"] and not s.replications
    assert result["who_has"] == {"x": []}  # its data is gone with the workers


# ---------------------------------------------------------------------- rebalance: the plan
def test_plan_moves_from_over_to_under_largest_first_until_even():
    s = make(4)
    keys = scatter(s, "w0", {f"k{i:02d}": 100 for i in range(40)})
    before = (loads(s), {k: holders(s, k) for k in keys})
    moves = s.rebalance_plan()
    assert (loads(s), {k: holders(s, k) for k in keys}) == before  # pure: nothing changed
    assert all(src == "w0" for _, src, _ in moves)
    assert len({k for k, _, _ in moves}) == len(moves) == 30  # each key once
    dests = [d for _, _, d in moves]
    assert {d: dests.count(d) for d in set(dests)} == {"w1": 10, "w2": 10, "w3": 10}


def test_plan_largest_keys_first_and_never_overshoots():
    s = make(2)
    scatter(s, "w0", {"huge": 900, "mid": 300, "small": 100})
    scatter(s, "w1", {"other": 100})
    # mean 700: huge (900) would leave w0 at 400 under w1's 1000: it stays; mid then small move
    assert s.rebalance_plan() == [("mid", "w0", "w1"), ("small", "w0", "w1")]


def test_plan_skips_keys_a_processing_task_needs_and_keys_being_copied():
    s = make(3)
    scatter(s, "w0", {"busy": 100, "free": 100, "copied": 100, "last": 100})
    s.handle(UpdateGraph("c", [NewTask("use", b"spec", ["busy"])], ["use"]))
    assert s.tasks["use"].state == "processing"
    s.handle(Replicate("r", ["copied"], workers=["w0", "w2"]))  # a copy under way
    moved = {k for k, _, _ in s.rebalance_plan()}
    assert "busy" not in moved and "copied" not in moved
    assert moved <= {"free", "last"} and moved


def test_plan_leaves_actors_where_their_objects_live():
    from xsched.client.actors import Actor
    from xsched.scheduler.state.replication import ACTOR_TYPE

    assert Actor.__name__ == ACTOR_TYPE  # what a worker reports as the type of an actor's value
    s = make(2)
    scatter(s, "w0", {"counter": 100, "data": 100, "more": 100})  # counter would go first
    s.tasks["counter"].type = ACTOR_TYPE
    moved = {k for k, _, _ in s.rebalance_plan()}
    assert moved and "counter" not in moved


def test_plan_only_given_keys_and_workers():
    s = make(4)
    keys = scatter(s, "w0", {f"k{i}": 10 for i in range(12)})
    moves = s.rebalance_plan(keys=keys[:3])
    assert sorted(k for k, _, _ in moves) == sorted(keys[:3])
    moves = s.rebalance_plan(workers=["w0", "w3"])
    assert {d for _, _, d in moves} == {"w3"} and len(moves) == 6


def test_plan_paused_worker_gives_but_takes_nothing():
    s = make(3)
    scatter(s, "w1", {f"k{i}": 10 for i in range(9)})
    s.handle(WorkerStatus("w1", "paused"))
    moves = s.rebalance_plan()
    assert {src for _, src, _ in moves} == {"w1"} and {d for _, _, d in moves} == {"w0", "w2"}
    s.handle(WorkerStatus("w1", "running"), WorkerStatus("w0", "paused"))
    scatter(s, "w2", {"z": 1000})
    assert "w0" not in {d for _, _, d in s.rebalance_plan()}


@pytest.mark.parametrize("seed", range(30))
def test_plan_on_random_states_narrows_the_spread_and_keeps_a_copy_of_everything(seed):
    rng = random.Random(seed)
    n = rng.randint(2, 6)
    s = make(n)
    for i in range(rng.randint(0, 60)):
        w = f"w{rng.choice([0, 0, 0, rng.randrange(n)])}"  # skewed: most on w0
        scatter(s, w, {f"k{i}": rng.choice([0, 1, 10, 100, 1000, 5000])})
        if rng.random() < 0.2:  # some keys held twice
            s.handle(AddKeys(f"w{rng.randrange(n)}", {f"k{i}": s.tasks[f"k{i}"].nbytes}))
    before = loads(s)
    moves = s.rebalance_plan()
    after = dict(before)
    for key, src, dst in moves:
        ts = s.tasks[key]
        assert s.workers[src] in ts.who_has and s.workers[dst] not in ts.who_has
        after[src] -= ts.nbytes
        after[dst] += ts.nbytes
    assert max(after.values()) - min(after.values()) <= max(before.values()) - min(before.values())
    assert sum(after.values()) == sum(before.values())
    out = s.handle(Rebalance("r"))
    out += deliver(s, out)
    assert done(out)["r"]["failed"] == {}
    assert sorted(done(out)["r"]["moved"].items()) == sorted((k, [src, dst]) for k, src, dst in moves)
    assert loads(s) == after
    assert all(ts.who_has for ts in s.tasks.values())


# ---------------------------------------------------------------------- rebalance: copy then free
def test_rebalance_copies_first_and_frees_the_source_once_the_copy_landed():
    s = make(4)
    keys = scatter(s, "w0", {f"k{i:02d}": 100 for i in range(40)})
    out = s.handle(Rebalance("r"))
    assert not to(out, "free-keys") and not done(out)  # nothing freed before a copy exists
    acq = {o.worker: o for o in to(out, "acquire-replicas")}
    assert sorted(acq) == ["w1", "w2", "w3"]
    assert all(v == ["w0"] for o in acq.values() for v in o.msg["who_has"].values())
    more = s.handle(AddKeys("w1", dict(acq["w1"].msg["nbytes"])))
    [free] = to(more, "free-keys")
    assert free.worker == "w0" and sorted(free.msg["keys"]) == sorted(acq["w1"].msg["who_has"])
    for k in free.msg["keys"]:
        assert holders(s, k) == ["w1"]
    assert not done(more)
    more = deliver(s, [acq["w2"], acq["w3"]])
    result = done(more)["r"]
    assert result["failed"] == {} and len(result["moved"]) == 30
    assert all(src == "w0" for src, _ in result["moved"].values())
    assert loads(s) == {"w0": 1000, "w1": 1000, "w2": 1000, "w3": 1000}
    assert all(len(holders(s, k)) == 1 for k in keys)
    # nothing went back from memory: no key was recomputed
    assert not [e for e in s.story(*keys) if e[1] == "memory"]


def test_rebalance_destination_dies_midway_its_keys_stay_on_the_source():
    s = make(3)
    keys = scatter(s, "w0", {f"k{i}": 100 for i in range(30)})
    out = s.handle(Rebalance("r"))
    acq = {o.worker: o for o in to(out, "acquire-replicas")}
    lost = set(acq["w2"].msg["who_has"])
    more = s.handle(RemoveWorker("w2"))
    assert not to(more, "free-keys")
    result = done(deliver(s, [acq["w1"]]))["r"]
    assert set(result["failed"]) == lost and all("w2 left" in why for why in result["failed"].values())
    assert set(result["moved"]) == set(acq["w1"].msg["who_has"])
    for k in keys:  # nothing lost, nothing recomputed
        assert s.tasks[k].state == "memory" and holders(s, k) in (["w0"], ["w1"])


def test_rebalance_source_dies_after_the_copies_landed_loses_nothing():
    s = make(2)
    keys = scatter(s, "w0", {f"k{i}": 100 for i in range(10)})
    out = deliver(s, s.handle(Rebalance("r")))
    assert len(done(out)["r"]["moved"]) == 5
    s.handle(RemoveWorker("w0"))
    moved = set(done(out)["r"]["moved"])
    assert all(s.tasks[k].state == "memory" and holders(s, k) == ["w1"] for k in moved)
    assert all(k in moved or s.tasks.get(k) is None or s.tasks[k].state != "memory" for k in keys)


def test_rebalance_keeps_the_source_when_a_task_started_needing_the_key_meanwhile():
    s = make(2)
    scatter(s, "w0", {"a": 100, "b": 100})
    out = s.handle(Rebalance("r"))
    [acq] = to(out, "acquire-replicas")
    [key] = acq.msg["who_has"]
    s.handle(UpdateGraph("c", [NewTask("use", b"spec", [key])], ["use"]))
    assert s.tasks["use"].state == "processing"
    more = s.handle(AddKeys(acq.worker, dict(acq.msg["nbytes"])))
    assert not to(more, "free-keys")
    result = done(more)["r"]
    assert result["moved"] == {} and "kept on w0" in result["failed"][key]
    assert holders(s, key) == ["w0", "w1"]
    s.handle(TaskFinished(s.tasks["use"].processing_on.address, "use", nbytes=1))


def test_rebalance_with_a_retiring_destination_keeps_the_source():
    s = make(3)
    scatter(s, "w0", {f"k{i}": 100 for i in range(6)})
    out = s.handle(Rebalance("r"))
    acq = {o.worker: o for o in to(out, "acquire-replicas")}
    s.handle(UpdateGraph("c", [NewTask("t", b"spec", workers=["w2"])], ["t"]))
    s.handle(RetireWorkers(["w2"]))  # it retires once its task is done: retiring meanwhile
    assert s.workers["w2"].status == "retiring"
    more = deliver(s, [acq["w2"]])
    assert not [o for o in to(more, "free-keys") if o.worker == "w0"]
    more = deliver(s, [acq["w1"]])
    result = done(more)["r"]
    assert set(result["failed"]) == set(acq["w2"].msg["who_has"])
    assert all("retiring" in why for why in result["failed"].values())


def test_rebalance_with_nothing_to_do_answers_at_once():
    s = make(2)
    scatter(s, "w0", {"a": 100})
    scatter(s, "w1", {"b": 100})
    out = s.handle(Rebalance("r"))
    assert done(out)["r"] == {"moved": {}, "failed": {}} and not to(out, "acquire-replicas")
    assert done(make(1).handle(Rebalance("one")))["one"] == {"moved": {}, "failed": {}}


def test_a_request_name_in_use_is_refused():
    s = make(2)
    scatter(s, "w0", {"a": 100, "b": 100})
    s.handle(Rebalance("r"))
    assert "under way already" in done(s.handle(Rebalance("r")))["r"]["refused"]
    assert "r" in s.replications


# ---------------------------------------------------------------------- random interleavings
def _fetch(s, msg):
    """What a destination worker does with an acquire-replicas: per key, try the holders it was
    told of in turn (missing-data for each one that no longer has it), add-keys on success."""
    out = []
    for key, told in msg.msg["who_has"].items():
        if msg.worker not in s.workers:
            return out
        for holder in told:
            ts = s.tasks.get(key)
            if ts is not None and holder in s.workers and s.workers[holder] in ts.who_has:
                out += s.handle(AddKeys(msg.worker, {key: msg.msg["nbytes"][key]}))
                break
            out += s.handle(MissingData(msg.worker, key, holder))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_random_interleavings_end_every_request_and_lose_nothing_without_deaths(seed):
    rng = random.Random(seed)
    deaths = seed % 2 == 1
    n = rng.randint(2, 5)
    s = make(n)
    for i in range(rng.randint(1, 40)):
        scatter(s, f"w{rng.choice([0, 0, rng.randrange(n)])}", {f"k{i}": rng.choice([1, 10, 100, 1000])})
    keys = sorted(s.tasks)
    inbox = []
    issued = {f"r{r}" for r in range(rng.randint(1, 4))}
    for r in range(len(issued)):
        if rng.random() < 0.5:
            inbox += s.handle(Rebalance(f"r{r}", rng.choice([None, rng.sample(keys, min(5, len(keys)))])))
        else:
            inbox += s.handle(Replicate(f"r{r}", rng.sample(keys, min(8, len(keys))), n=rng.choice([None, 1, 2, 3])))
    answered = set(done(inbox))
    started = 0
    for _ in range(200):
        acquires = to(inbox, "acquire-replicas")
        computes = to(inbox, "compute-task")
        choice = rng.random()
        if acquires and choice < 0.6:
            msg = acquires[rng.randrange(len(acquires))]
            inbox.remove(msg)
            inbox += _fetch(s, msg)
        elif computes and choice < 0.75:
            msg = computes[0]
            inbox.remove(msg)
            if msg.worker in s.workers:
                inbox += s.handle(TaskFinished(msg.worker, msg.msg["key"], nbytes=1))
        elif choice < 0.85 and started < 5:  # a task starts needing a key
            key = rng.choice(keys)
            if key in s.tasks and s.tasks[key].state == "memory":
                inbox += s.handle(UpdateGraph("c", [NewTask(f"use-{started}", b"spec", [key])], [f"use-{started}"]))
                started += 1
        elif deaths and choice < 0.9 and len(s.workers) > 1:
            inbox += s.handle(RemoveWorker(rng.choice(sorted(s.workers))))
        answered |= set(done(inbox))
        inbox = [o for o in inbox if isinstance(o, ToWorker)]
        if not s.replications and not to(inbox, "acquire-replicas"):
            break
    for msg in to(inbox, "acquire-replicas"):  # the rest arrives
        answered |= set(done(_fetch(s, msg)))
    assert not s.replications, s.replications
    assert answered == issued  # each request answered (once: ReplicationDone ends it)
    if not deaths:
        for k in keys:  # no copy lost: every key is still in memory, never recomputed
            assert s.tasks[k].state == "memory", (k, s.story(k))


# ---------------------------------------------------------------------- the server's glue, without sockets
def test_the_server_answers_when_the_copies_land_refuses_bad_requests_and_honours_its_timeout():
    import asyncio

    from xsched.scheduler.server import Scheduler

    async def main():
        sched = Scheduler(register=False)  # not started: what it would send goes nowhere
        sched.peer_client[b"peer"] = "c"
        sched.handle(AddWorker("w0"), AddWorker("w1"), AddKeys("w0", {"x": 8, "y": 8}, client="c"))
        # answered once the copy landed (the add-keys arrives while the request waits)
        def lands():
            assert len(sched.state.replications) == 1  # asked, not answered yet
            sched.handle(AddKeys("w1", {"x": 8}))

        asyncio.get_running_loop().call_soon(lands)
        out = await sched._op_replicate(b"peer", {"keys": ["x"], "n": 2, "timeout": 30}, [])
        assert out == {"result": {"who_has": {"x": ["w0", "w1"]}, "failed": {}}}
        assert not sched._replication_waiters
        # refused at once, naming the problem
        out = await sched._op_rebalance(b"peer", {"keys": ["nope"], "workers": "w0"}, [])
        assert "'nope'" in out["refused"]
        # a copy that never lands: the answer comes after the timeout, saying so
        out = await sched._op_replicate(b"peer", {"keys": ["y"], "n": 2, "timeout": 0.05}, [])
        assert out["result"]["who_has"] == {"y": ["w0"]}
        assert "0.05s timeout passed" in out["result"]["failed"]["y"]
        assert not sched.state.replications and not sched._replication_waiters

    asyncio.run(main())
