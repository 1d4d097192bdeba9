"""SchedulerState alone: events in, instructions out, validate() after every event."""

import ast
import math
import pathlib

import pytest

from xsched.scheduler.state import (
    AddKeys, AddWorker, CancelKeys, ClientDesiresKeys, ClientReleasesKeys, InvalidTransition, MissingData,
    NewTask, RemoveClient, RemoveWorker, Reschedule, RetryKeys, SchedulerState, TaskErred, TaskFinished,
    ToClient, ToWorker, WorkerStatus,
)
from xsched.scheduler.state import INLINE_DEPENDENCY_BYTES, PIPELINE_DEPTH, PIPELINE_NBYTES
from xsched.scheduler.state import UpdateGraph as UG


def make(n_workers=1, nthreads=1, **kw):
    s = SchedulerState(validate=True, **kw)
    for i in range(n_workers):
        s.handle(AddWorker(f"w{i}", nthreads=nthreads))
    return s


def ops(out):
    return [(o.msg["op"], o.msg.get("key") or tuple(o.msg.get("keys", ()))) for o in out]


def computes(out):
    return [(o.worker, o.msg["key"]) for o in out if isinstance(o, ToWorker) and o.msg["op"] == "compute-task"]


def T(key, deps=(), prio=0, **kw):
    return NewTask(key, b"spec", list(deps), (0, 0, prio), **kw)


# What a state machine must not reach, directly or through anything it imports: I/O, clocks,
# threads, processes, serialization, dynamic imports.
IMPURE = {"zmq", "asyncio", "threading", "time", "socket", "selectors", "ssl", "subprocess", "signal",
          "multiprocessing", "concurrent", "pickle", "cloudpickle", "os", "psutil", "tornado", "importlib"}
# Explicit, justified exceptions, by the edge through which they arrive (none today: the
# scheduler names task groups with xsched.keys, which imports only re).
ALLOWED_VIA: dict = {}
XSCHED = pathlib.Path(__file__).parents[2] / "xsched"
# Every module of both state machines, found by name so that a new one cannot escape the check:
# the scheduler state (a module, or the package and each of its rooms), the worker state, and
# the worker's events module if it has one. One forbidden set (IMPURE) for both.
STATE_MODULES = tuple(sorted(
    str(p.relative_to(XSCHED))
    for pattern in ("scheduler/state.py", "scheduler/state/*.py", "worker/state.py", "worker/events.py")
    for p in XSCHED.glob(pattern)))


def _module_file(name: str):
    """The file of an xsched module ``name`` (dotted), or None if it is not a module."""
    parts = name.split(".")[1:]
    for cand in (XSCHED.joinpath(*parts).with_suffix(".py") if parts else None, XSCHED.joinpath(*parts, "__init__.py")):
        if cand is not None and cand.is_file():
            return cand
    return None


def _imports(path: pathlib.Path):
    """(module, imported names) for every import anywhere in the file (also inside functions)."""
    rel = path.relative_to(XSCHED.parent).with_suffix("")
    package = list(rel.parts[:-1]) if rel.name != "__init__" else list(rel.parts[:-1])
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, set()
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names = {a.name for a in node.names}
            yield module, names
            for n in names:  # "from . import x": x may be a submodule
                if _module_file(f"{module}.{n}") and module.split(".")[0] == "xsched":
                    yield f"{module}.{n}", set()


def _static_reach(rel: str):
    """Every external top-level module reached from xsched/<rel> through xsched modules.

    Parent packages' ``__init__`` files count (importing a submodule runs them), except the
    top-level ``xsched/__init__.py``: that is the public facade (Client, LocalCluster), not a
    dependency of the state machines, which the runtime check below loads without it.
    Returns {external module: [chain of xsched files]}, skipping the allowed edges.
    """
    found: dict = {}
    seen = set()
    todo = [(XSCHED / rel, [rel])]
    while todo:
        path, chain = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for module, names in _imports(path):
            top = module.split(".")[0]
            if top != "xsched":
                found.setdefault(top, chain)
                continue
            edge = ALLOWED_VIA.get((chain[0], module)) if len(chain) == 1 else None
            if edge is not None:
                assert names <= edge["names"], (rel, module, names)
                continue
            parts = module.split(".")
            for i in range(2, len(parts) + 1):  # parents' __init__ and the module itself
                f = _module_file(".".join(parts[:i]))
                if f is not None:
                    todo.append((f, chain + [str(f.relative_to(XSCHED))]))
    return found


_RUNTIME_PROBE = """
import importlib, json, sys, types
pkg = types.ModuleType("xsched"); pkg.__path__ = [sys.argv[1]]; sys.modules["xsched"] = pkg
def tops(): return {n.split(".")[0] for n in sys.modules}
before = tops()
for allowed in json.loads(sys.argv[3]):
    importlib.import_module(allowed)
via_allowed = tops() - before
after_allowed = tops()
importlib.import_module(sys.argv[2])
print(json.dumps({"via_allowed": sorted(via_allowed), "own": sorted(tops() - after_allowed)}))
"""


def _runtime_reach(module: str, allowed: list) -> dict:
    """Top-level modules newly loaded by importing ``module`` in a fresh interpreter (with a
    bare ``xsched`` namespace), separated into those the allowed modules bring and the rest."""
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _RUNTIME_PROBE, str(XSCHED), module, json.dumps(allowed)],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return {k: set(v) for k, v in json.loads(out).items()}


@pytest.mark.parametrize("rel", STATE_MODULES)
def test_state_modules_are_pure(rel):
    edges = {mod: e for (src, mod), e in ALLOWED_VIA.items() if src == rel}
    # statically: every import in the module and in every xsched module it reaches
    reached = _static_reach(rel)
    impure = {m: chain for m, chain in reached.items() if m in IMPURE}
    assert not impure, f"{rel} reaches {impure} (module: chain of xsched files)"
    # at run time: what importing it really loads (stdlib modules that import others too);
    # os and time are loaded by every interpreter, so only the static check can see those
    name = "xsched." + rel[:-3].replace("/", ".").removesuffix(".__init__")
    got = _runtime_reach(name, sorted(edges))
    assert not got["own"] & IMPURE, f"importing {name} loads {sorted(got['own'] & IMPURE)}"
    allowed = set().union(*(e["modules"] for e in edges.values())) if edges else set()
    assert got["via_allowed"] & IMPURE <= allowed, (rel, sorted(got["via_allowed"] & IMPURE))
    # an allowance that is no longer needed must go, so it cannot hide a later regression
    assert got["via_allowed"] & IMPURE == allowed, (
        f"ALLOWED_VIA for {rel} allows {sorted(allowed - got['via_allowed'])} that nothing brings: remove it")


def test_both_state_machines_are_checked():
    assert any(m.startswith("scheduler/state") for m in STATE_MODULES), STATE_MODULES
    assert "worker/state.py" in STATE_MODULES, STATE_MODULES


def test_purity_check_sees_transitive_imports():
    """The checker itself: a module that reaches pickle through tokenize is caught, with its chain."""
    reached = _static_reach("jupyter/plots.py")  # plots imports key_split from tokenize, which imports pickle
    for module in ("pickle", "cloudpickle"):
        chain = reached[module]  # the first path found: through tokenize or another module
        assert chain[0] == "jupyter/plots.py" and len(chain) >= 2, chain
        assert module in {m.split(".")[0] for m, _ in _imports(XSCHED / chain[-1])}, chain
    got = _runtime_reach("xsched.tokenize", [])
    assert {"pickle", "cloudpickle", "threading"} <= got["own"]


def test_single_task_lifecycle():
    s = make()
    out = s.handle(UG("c", [T("a")], ["a"]))
    assert computes(out) == [("w0", "a")]
    assert s.tasks["a"].state == "processing"
    out = s.handle(TaskFinished("w0", "a", nbytes=8, type="int"))
    assert ops(out) == [("key-in-memory", "a")]
    assert s.tasks["a"].state == "memory" and s.tasks["a"].nbytes == 8
    out = s.handle(ClientReleasesKeys("c", ["a"]))
    assert ops(out) == [("free-keys", ("a",))]
    assert "a" not in s.tasks


def test_a_copy_that_measures_differently_leaves_no_bytes_behind():
    """A worker's bytes go back to zero when its keys are released, however its copy of a
    key measured (a list's spare capacity makes a fetched copy measure differently)."""
    s = make(2)
    s.handle(UG("c", [T("a")], ["a"]))
    s.handle(TaskFinished("w0", "a", nbytes=1000, type="list"))
    s.handle(AddKeys("w1", {"a": 824}))
    assert {w: ws.nbytes for w, ws in s.workers.items()} == {"w0": 1000, "w1": 1000}
    s.handle(ClientReleasesKeys("c", ["a"]))
    assert {w: ws.nbytes for w, ws in s.workers.items()} == {"w0": 0, "w1": 0}


def test_seed003_never_two_partitions_on_one_thread():
    """build_0 -> len_0 runs, and build_1 starts only after build_0's data was freed."""
    s = make()
    g = [T("b0", prio=0), T("l0", ["b0"], prio=1), T("b1", prio=2), T("l1", ["b1"], prio=3),
         T("s", ["l0", "l1"], prio=4)]
    sent = []
    out = s.handle(UG("c", g, ["s"]))
    sent += ops(out)
    assert s.tasks["b1"].state == "queued"
    for key in ["b0", "l0", "b1", "l1", "s"]:
        sent += ops(s.handle(TaskFinished("w0", key, nbytes=10)))
    # the order up to the result is exact: free first, then the next partition; the client
    # hears that s is in memory before anything it depended on is released
    assert sent[:8] == [
        ("compute-task", "b0"), ("compute-task", "l0"), ("free-keys", ("b0",)), ("compute-task", "b1"),
        ("compute-task", "l1"), ("free-keys", ("b1",)), ("compute-task", "s"), ("key-in-memory", "s"),
    ], sent
    # then l0 and l1 are each released exactly once; their relative order is unspecified
    # (a task's dependencies are a set of identity-hashed TaskStates)
    assert len(sent) == 10 and sorted(sent[8:]) == [("free-keys", ("l0",)), ("free-keys", ("l1",))], sent
    assert {k: t.state for k, t in s.tasks.items()} == {"b0": "released", "l0": "released", "b1": "released",
                                                        "l1": "released", "s": "memory"}


def test_root_tasks_fill_slots_in_priority_order():
    s = make(n_workers=2, nthreads=2)
    g = [T(f"r{i}", prio=i) for i in range(10)]
    out = s.handle(UG("c", g, [f"r{i}" for i in range(10)]))
    assert sorted(k for _, k in computes(out)) == ["r0", "r1", "r2", "r3"]
    assert s.n_queued == 6
    out = s.handle(TaskFinished("w0", "r0"))
    assert [k for _, k in computes(out)] == ["r4"]
    assert computes(out)[0][0] == "w0"


@pytest.mark.parametrize("seconds, nbytes, in_flight", [
    (0.0001, 8, 1 + PIPELINE_DEPTH),          # tiny and small: the thread gets tasks ahead
    (1.0, 8, 1),                              # slow: one at a time (the seed-003 rule)
    (0.0001, PIPELINE_NBYTES + 1, 1),         # fast but big results: one at a time
])
def test_tiny_root_tasks_are_pipelined_only_when_fast_and_small(seconds, nbytes, in_flight):
    s = make(n_workers=1, nthreads=1)
    keys = [f"r-{i}" for i in range(20)]
    out = s.handle(UG("c", [T(k, prio=i) for i, k in enumerate(keys)], keys))
    assert [k for _, k in computes(out)] == ["r-0"]  # nothing known about the prefix yet
    out = s.handle(TaskFinished("w0", "r-0", nbytes=nbytes, start=10.0, stop=10.0 + seconds))
    # the next tasks in priority order, up to the slots the prefix's measurements allow
    assert [k for _, k in computes(out)] == keys[1:1 + in_flight]
    assert len(s.workers["w0"].processing) == in_flight
    done = 1
    while s.n_queued or s.workers["w0"].processing:  # drains completely, still in order
        key = min(s.workers["w0"].processing, key=lambda t: t.priority).key
        assert key == keys[done]
        s.handle(TaskFinished("w0", key, nbytes=nbytes, start=0.0, stop=seconds))
        assert len(s.workers["w0"].processing) <= in_flight
        done += 1
    assert done == len(keys)


def test_pipelining_never_applies_to_resource_bound_tasks():
    s = SchedulerState(validate=True)
    s.handle(AddWorker("w0", nthreads=1, resources={"GPU": 1}))
    keys = [f"g-{i}" for i in range(6)]
    s.handle(UG("c", [T(k, prio=i, resources={"GPU": 1}) for i, k in enumerate(keys)], keys))
    out = s.handle(TaskFinished("w0", "g-0", nbytes=8, start=0.0, stop=0.0001))
    assert [k for _, k in computes(out)] == ["g-1"]
    assert len(s.workers["w0"].processing) == 1


def test_saturation_inf_sends_everything():
    s = make(worker_saturation=math.inf)
    out = s.handle(UG("c", [T(f"r{i}", prio=i) for i in range(5)], [f"r{i}" for i in range(5)]))
    assert len(computes(out)) == 5 and s.n_queued == 0


def test_dependency_runs_where_its_input_is():
    s = make(n_workers=2)
    s.handle(UG("c", [T("a"), T("b")], ["a", "b"]))
    where = {k: s.tasks[k].processing_on.address for k in "ab"}
    s.handle(TaskFinished(where["a"], "a", nbytes=10**8), TaskFinished(where["b"], "b", nbytes=10))
    out = s.handle(UG("c", [T("x", ["a"])], ["x"]))
    assert computes(out) == [(where["a"], "x")]
    msg = out[0].msg
    assert msg["who_has"] == {"a": [where["a"]]}


def test_error_propagates_to_dependents_and_clients():
    s = make()
    s.handle(UG("c", [T("a"), T("b", ["a"])], ["b"]))
    out = s.handle(TaskErred("w0", "a", b"exc", b"tb", "ValueError: x"))
    erred = [o.msg for o in out if isinstance(o, ToClient)]
    assert [(m["key"], m["blame"], m["text"]) for m in erred] == [("b", "a", "ValueError: x")]
    assert s.tasks["b"].state == "erred"


def test_retries_rerun_the_task():
    s = make()
    s.handle(UG("c", [T("a", retries=1)], ["a"]))
    out = s.handle(TaskErred("w0", "a", b"", b"", "boom"))
    assert computes(out) == [("w0", "a")] and s.tasks["a"].state == "processing"
    s.handle(TaskErred("w0", "a", b"", b"", "boom"))
    assert s.tasks["a"].state == "erred"


def test_retry_keys_after_error():
    s = make()
    s.handle(UG("c", [T("a"), T("b", ["a"])], ["b"]))
    s.handle(TaskErred("w0", "a", b"", b"", "boom"))
    out = s.handle(RetryKeys("c", ["b"]))
    assert computes(out) == [("w0", "a")]
    assert s.tasks["b"].state == "waiting"


def test_worker_loss_reschedules_and_recomputes_lost_data():
    s = make(n_workers=2)
    s.handle(UG("c", [T("a"), T("b", ["a"])], ["b"]))
    wa = s.tasks["a"].processing_on.address
    s.handle(TaskFinished(wa, "a", nbytes=10))
    wb = s.tasks["b"].processing_on.address
    assert wb == wa
    out = s.handle(RemoveWorker(wa))
    other = "w1" if wa == "w0" else "w0"
    # b was running there; a only lived there: a is recomputed on the survivor, b waits for it
    assert computes(out) == [(other, "a")]
    assert s.tasks["b"].state == "waiting"
    out = s.handle(TaskFinished(other, "a"))
    assert computes(out) == [(other, "b")]


def test_killed_worker_after_allowed_failures():
    s = SchedulerState(validate=True, allowed_failures=1, killed_worker_error=lambda k, w: b"KW")
    s.handle(AddWorker("w0"), UG("c", [T("a")], ["a"]))
    out = s.handle(RemoveWorker("w0"), AddWorker("w1"))
    assert s.tasks["a"].state == "processing"
    out = s.handle(RemoveWorker("w1"))
    erred = [o.msg for o in out if isinstance(o, ToClient)]
    assert erred and erred[0]["exception"] == b"KW" and "KilledWorker" in erred[0]["text"]


def test_no_worker_then_worker_arrives():
    s = make(n_workers=0)
    s.handle(UG("c", [T("a")], ["a"]))
    assert s.tasks["a"].state == "no-worker"
    out = s.handle(AddWorker("w0"))
    assert computes(out) == [("w0", "a")]


def test_restrictions_and_resources():
    s = SchedulerState(validate=True)
    s.handle(AddWorker("w0", resources={"GPU": 2}), AddWorker("w1"))
    out = s.handle(UG("c", [T(f"g{i}", prio=i, resources={"GPU": 1}) for i in range(3)] + [T("p", workers=["w1"])],
                      [f"g{i}" for i in range(3)] + ["p"]))
    sent = computes(out)
    assert ("w1", "p") in sent
    gpu = [k for w, k in sent if k.startswith("g")]
    assert all(w == "w0" for w, k in sent if k.startswith("g"))
    assert len(gpu) == 1  # one slot per thread; GPU tasks queue in priority order
    s.handle(TaskFinished("w0", gpu[0]))
    assert s.tasks["g1"].state == "processing" or s.tasks["g2"].state == "processing"


def test_resources_nobody_has_wait_in_no_worker():
    s = make()
    s.handle(UG("c", [T("m", resources={"MEMORY": 70e9})], ["m"]))
    assert s.tasks["m"].state == "no-worker"
    out = s.handle(AddWorker("big", resources={"MEMORY": 100e9}))
    assert computes(out) == [("big", "m")]


def test_limits_cap_concurrency_cluster_wide():
    s = make(n_workers=2, nthreads=2)
    g = [T(f"io{i}", prio=i, limits={"hdf5": 1}) for i in range(4)]
    out = s.handle(UG("c", g, [t.key for t in g]))
    assert len(computes(out)) == 1
    out = s.handle(TaskFinished(s.tasks["io0"].processing_on.address, "io0"))
    assert [k for _, k in computes(out)] == ["io1"]


def test_scatter_and_missing_data():
    s = make(n_workers=2)
    s.handle(AddKeys("w0", {"x": 100}, client="c"))
    assert s.tasks["x"].state == "memory" and s.tasks["x"].run_spec is None
    s.handle(UG("c", [T("y", ["x"])], ["y"]))
    out = s.handle(MissingData("w1", "x", "w0"))
    # scattered data has no recipe: its dependents err with a clear message
    assert s.tasks["x"].state == "erred"
    to_client = [(m.msg["op"], m.msg["key"]) for m in out if isinstance(m, ToClient)]
    assert to_client == [("key-lost", "x"), ("task-erred", "x"), ("task-erred", "y")]
    assert "lost" in s.tasks["x"].exception_text


def test_unknown_dependency_errs_clearly():
    s = make()
    out = s.handle(UG("c", [T("y", ["nope"])], ["y"]))
    msgs = [o.msg for o in out if isinstance(o, ToClient)]
    assert msgs and msgs[0]["key"] == "y" and "nope" in msgs[0]["text"]


def test_cancel_and_remove_client_release_everything():
    s = make()
    s.handle(UG("c", [T("a"), T("b")], ["a", "b"]))
    out = s.handle(CancelKeys("c", ["a"]))
    assert "a" not in s.tasks  # nobody else wanted it; the cancelling client marked its own future
    assert not [o for o in out if isinstance(o, ToClient)]
    s.handle(RemoveClient("c"))
    assert not s.tasks


def test_a_forced_cancel_cancels_the_other_clients_futures_and_tells_them():
    s = make()
    s.handle(UG("c1", [T("a"), T("b", ["a"])], ["a", "b"]), UG("c2", [T("a")], ["a"]))
    out = s.handle(CancelKeys("c1", ["b"]))
    assert "b" not in s.tasks and not [o for o in out if isinstance(o, ToClient)]
    out = s.handle(CancelKeys("c1", ["a"]))  # (c2 still wants it: it stays)
    assert "a" in s.tasks and s.tasks["a"].who_wants == {"c2"}
    s.handle(UG("c1", [T("a")], ["a"]))
    out = s.handle(CancelKeys("c1", ["a"], force=True))
    told = [(o.client, o.msg["op"], o.msg["key"]) for o in out if isinstance(o, ToClient)]
    assert told == [("c2", "key-cancelled", "a")] and "force=True" in out[0].msg["reason"]
    assert "a" not in s.tasks and not s.clients.get("c2")


def test_shared_key_survives_one_client_release():
    s = make()
    s.handle(UG("c1", [T("a")], ["a"]), UG("c2", [T("a")], ["a"]))
    s.handle(TaskFinished("w0", "a"))
    s.handle(ClientReleasesKeys("c1", ["a"]))
    assert s.tasks["a"].state == "memory"
    out = s.handle(ClientDesiresKeys("c3", ["a"]))
    assert ops(out) == [("key-in-memory", "a")]


def test_reschedule_and_paused_worker():
    s = make(n_workers=2)
    s.handle(WorkerStatus("w0", "paused"))
    out = s.handle(UG("c", [T("a")], ["a"]))
    assert computes(out) == [("w1", "a")]
    out = s.handle(Reschedule("w1", "a"))
    # back to the only running worker (it has a free thread again), never to the paused one
    assert s.tasks["a"].state == "processing" and computes(out) == [("w1", "a")]


def test_invalid_transition_tells_the_story():
    s = make()
    s.handle(UG("c", [T("a")], ["a"]))
    with pytest.raises(InvalidTransition, match="story"):
        s._transition(s.tasks["a"], "no-such-state", None, "test")
    assert s.story("a")[0][:3] == ("a", "new", "released")


def test_unknown_event_type_raises():
    with pytest.raises(TypeError, match="cannot handle"):
        SchedulerState().handle(object())


def test_many_root_tasks_stay_queued_and_drain():
    s = make(n_workers=2, nthreads=1)
    n = 500
    s.validate_each = False
    s.handle(UG("c", [T(f"t{i}", prio=i) for i in range(n)], [f"t{i}" for i in range(n)]))
    done = 0
    while True:
        running = [(ws.address, ts.key) for ws in s.workers.values() for ts in ws.processing]
        assert len(running) <= 2
        if not running:
            break
        for w, k in running:
            s.handle(TaskFinished(w, k))
            done += 1
    s.validate()
    assert done == n and all(ts.state == "memory" for ts in s.tasks.values())


def test_graph_order_does_not_matter_for_priorities():
    s = make()
    s.handle(UG("c", [T("b", ["a"], prio=1), T("a", prio=0)], ["b"]))
    assert s.tasks["a"].priority == (0, 0, 0) and s.tasks["b"].priority == (0, 0, 1)


def test_queued_task_whose_input_is_lost_waits_for_it():
    s = SchedulerState(validate=True)
    s.handle(AddWorker("w0", resources={"GPU": 1}), AddWorker("w1"))
    s.handle(UG("c", [T("x", workers=["w1"])], ["x"]))
    s.handle(TaskFinished("w1", "x"))
    s.handle(UG("c", [T(f"g{i}", ["x"], prio=i, resources={"GPU": 1}) for i in range(2)], ["g0", "g1"]))
    assert s.tasks["g1"].state == "queued"
    s.handle(RemoveWorker("w1"))  # x is lost: g1 must not start before x is recomputed
    out = s.handle(TaskFinished("w0", "g0"))
    assert "g1" not in [k for _, k in computes(out)]
    assert s.tasks["g1"].state == "waiting"


def test_retry_keeps_inputs_in_memory():
    s = make()
    s.handle(UG("c", [T("a"), T("b", ["a"], retries=1)], ["b"]))
    s.handle(TaskFinished("w0", "a"))
    out = s.handle(TaskErred("w0", "b", b"", b"", "flaky"))
    assert ("free-keys", ("a",)) not in ops(out)
    assert s.tasks["a"].state == "memory" and computes(out) == [("w0", "b")]


def test_scattering_lost_data_again_revives_its_dependents():
    s = make(n_workers=2)
    s.handle(AddKeys("w0", {"x": 100}, client="c"))
    s.handle(UG("c", [T("y", ["x"])], ["y"]))
    s.handle(RemoveWorker(s.tasks["y"].processing_on.address if s.tasks["y"].processing_on else "w0"))
    s.handle(RemoveWorker("w0"))
    assert s.tasks["x"].state == "erred" and s.tasks["y"].state == "erred"
    out = s.handle(AddWorker("w9"), AddKeys("w9", {"x": 100}, client="c"))
    assert s.tasks["x"].state == "memory"
    assert s.tasks["y"].state == "processing" and computes(out) == [("w9", "y")]


def test_a_wanted_task_s_small_result_goes_to_its_clients_inline_and_is_not_kept():
    """compute-task says when a client waits (or dependents do); the value that comes back
    with task-finished rides on key-in-memory (one request/reply less for the client) and
    the state keeps no copy of it once nothing waits for it."""
    s = make()
    out = s.handle(UG("c", [T("a"), T("b", ["a"])], ["b"]))
    [msg] = [o.msg for o in out if isinstance(o, ToWorker) and o.msg["op"] == "compute-task"]
    assert msg["key"] == "a" and msg["wanted"] is True  # (for its dependent, see below)
    out = s.handle(TaskFinished("w0", "a", nbytes=8, type="int", inline=b"pickled-a"))
    [msg] = [o.msg for o in out if isinstance(o, ToWorker) and o.msg["op"] == "compute-task"]
    assert msg["key"] == "b" and msg["wanted"] is True
    assert "inline" not in msg  # b runs where a is: nothing to bring along
    out = s.handle(TaskFinished("w0", "b", nbytes=8, type="int", inline=b"pickled-b"))
    [mem] = [o.msg for o in out if isinstance(o, ToClient)]
    assert mem["op"] == "key-in-memory" and mem["inline"] == b"pickled-b"
    assert not _holds(s, b"pickled-b") and not _holds(s, b"pickled-a")  # handed on, not held


def test_a_small_dependency_travels_with_the_compute_task_to_a_worker_without_it():
    """A small result is kept while its dependents wait; a dependent sent to another
    worker gets it inside its compute-task (no fetch from a peer), that worker counts as a
    holder from then on (it is told to free it like any replica), and the value is
    dropped as soon as no dependent waits for it."""
    s = make(n_workers=2)
    s.handle(UG("c", [T("a", workers=["w0"]), T("b", ["a"], workers=["w1"])], ["b"]))
    out = s.handle(TaskFinished("w0", "a", nbytes=28, type="int", inline=b"pickled-a"))
    [msg] = [o.msg for o in out if isinstance(o, ToWorker) and o.msg["op"] == "compute-task"]
    assert msg["key"] == "b" and msg["inline"] == {"a": b"pickled-a"} and msg["who_has"] == {"a": ["w0"]}
    assert {w.address for w in s.tasks["a"].who_has} == {"w0", "w1"}
    s.validate()
    out = s.handle(TaskFinished("w1", "b", nbytes=8, type="int"))
    assert sorted(o.worker for o in out if isinstance(o, ToWorker) and o.msg == {"op": "free-keys", "keys": ["a"]}) \
        == ["w0", "w1"]
    assert s.tasks["a"].state == "released" and s.tasks["a"].inline is None
    assert not _holds(s, b"pickled-a")


def test_a_worker_that_could_not_keep_an_inlined_value_is_no_holder_again():
    s = make(n_workers=2)
    s.handle(UG("c", [T("a", workers=["w0"]), T("b", ["a"], workers=["w1"])], ["b"]))
    s.handle(TaskFinished("w0", "a", nbytes=28, type="int", inline=b"pickled-a"))
    assert {w.address for w in s.tasks["a"].who_has} == {"w0", "w1"}
    s.handle(MissingData("w1", "a", "w1"))  # what w1 says when it did not store the value
    assert {w.address for w in s.tasks["a"].who_has} == {"w0"} and s.tasks["a"].state == "memory"
    s.validate()


def test_a_large_dependency_is_fetched_as_before():
    s = make(n_workers=2)
    s.handle(UG("c", [T("a", workers=["w0"]), T("b", ["a"], workers=["w1"])], ["b"]))
    big = b"x" * (INLINE_DEPENDENCY_BYTES + 1)
    out = s.handle(TaskFinished("w0", "a", nbytes=len(big), type="bytes", inline=big))
    [msg] = [o.msg for o in out if isinstance(o, ToWorker) and o.msg["op"] == "compute-task"]
    assert "inline" not in msg and {w.address for w in s.tasks["a"].who_has} == {"w0"}
    assert not _holds(s, big)


def test_an_inline_result_from_a_worker_the_task_was_not_sent_to_is_not_forwarded():
    s = make(n_workers=2)
    s.handle(UG("c", [T("a")], ["a"]))
    other = "w1" if s.tasks["a"].processing_on.address == "w0" else "w0"
    out = s.handle(TaskFinished(other, "a", nbytes=8, type="int", inline=b"stale"))
    assert not [o for o in out if isinstance(o, ToClient)]
    assert not _holds(s, b"stale")


def _holds(s, value) -> bool:
    """Whether the state keeps ``value`` anywhere: on itself or on one of its tasks."""
    places = [vars(s)] + [{n: getattr(ts, n, None) for n in type(ts).__slots__} for ts in s.tasks.values()]
    return any(v is value or v == value for place in places for v in place.values() if isinstance(v, bytes))


def test_a_graph_s_functions_go_once_to_each_worker_and_are_forgotten_with_its_tasks():
    """Specs refer to functions by id; the pickled function travels with the first task a
    worker gets, and once no task refers to it, the workers that had it are told to forget it."""
    s = make(n_workers=2, nthreads=2)
    out = s.handle(UG("c", [T("a-1"), T("a-2"), T("a-3"), T("a-4")], ["a-1", "a-2", "a-3", "a-4"],
                      functions={b"f1": b"pickled-f1"}))
    sent = [(o.worker, o.msg.get("functions")) for o in out if isinstance(o, ToWorker)
            and o.msg["op"] == "compute-task"]
    assert sorted(w for w, _ in sent) == ["w0", "w0", "w1", "w1"]
    assert sorted(w for w, fns in sent if fns) == ["w0", "w1"]  # once per worker
    assert all(fns == {b"f1": b"pickled-f1"} for _, fns in sent if fns)
    assert s.functions[b"f1"][1] == 4
    # a second graph with the same function: counted, not sent again
    out = s.handle(UG("c", [T("b-1")], ["b-1"], functions={b"f1": b"pickled-f1"}))
    assert s.functions[b"f1"][1] == 5
    for key, w in [(k, s.tasks[k].processing_on.address) for k in ("a-1", "a-2", "a-3", "a-4")]:
        s.handle(TaskFinished(w, key, nbytes=8, type="int"))
    out = s.handle(ClientReleasesKeys("c", ["a-1", "a-2", "a-3", "a-4"]))
    assert not [o for o in out if o.msg["op"] == "forget-functions"]  # b-1 still refers to it
    s.handle(TaskFinished(s.tasks["b-1"].processing_on.address, "b-1", nbytes=8, type="int"))
    out = s.handle(ClientReleasesKeys("c", ["b-1"]))
    forgets = sorted((o.worker, tuple(o.msg["fids"])) for o in out if o.msg["op"] == "forget-functions")
    assert forgets == [("w0", (b"f1",)), ("w1", (b"f1",))]
    assert s.functions == {} and not s.workers["w0"].functions and not s.workers["w1"].functions


def test_functions_of_a_graph_whose_tasks_all_exist_already_are_not_kept():
    s = make()
    s.handle(UG("c", [T("a")], ["a"], functions={b"f1": b"x"}))
    s.handle(UG("c", [T("a")], ["a"], functions={b"f1": b"x", b"f2": b"y"}))
    assert set(s.functions) == {b"f1"} and s.functions[b"f1"][1] == 1


# ------------------------------------------------------------------ the rooms of the package
def test_every_transition_is_a_method_named_after_its_states():
    from xsched.scheduler.state import TASK_STATES
    from xsched.scheduler.state.transitions import Transitions

    assert len(Transitions._TRANSITIONS) >= 20
    for (start, finish), method in Transitions._TRANSITIONS.items():
        assert start in TASK_STATES and finish in TASK_STATES, (start, finish)
        assert method.__name__ == f"_transition_{start}_{finish}".replace("-", "_"), method.__name__


def test_a_heartbeat_carries_metrics_and_pauses_and_resumes_the_worker():
    from xsched.scheduler.state import WorkerHeartbeat

    s = make(n_workers=1)
    s.handle(WorkerHeartbeat("w0", {"rss": 10, "paused": True}))
    assert s.workers["w0"].metrics == {"rss": 10, "paused": True}
    assert s.workers["w0"].status == "paused"
    out = s.handle(UG("c", [T("a")], ["a"]))
    assert computes(out) == [] and s.tasks["a"].state == "queued"  # a paused worker starts nothing
    out = s.handle(WorkerHeartbeat("w0", {"rss": 11, "paused": False}))
    assert s.workers["w0"].status == "running" and computes(out) == [("w0", "a")]
    assert s.handle(WorkerHeartbeat("nobody", {"paused": True})) == []  # unknown workers are ignored


def test_a_registered_client_is_known_before_it_submits():
    from xsched.scheduler.state import AddClient, Restart

    s = make(n_workers=1)
    s.handle(AddClient("c"))
    assert s.clients == {"c": set()}
    s.handle(UG("c", [T("a")], ["a"]))
    out = s.handle(Restart("restart"))
    assert [(o.client, o.msg["op"]) for o in out if isinstance(o, ToClient)] == [("c", "key-cancelled")]


def test_a_broken_invariant_names_the_key_the_rule_and_its_story():
    from xsched.scheduler.state import InvalidState

    s = make(n_workers=1)
    s.handle(UG("c", [T("a"), T("b", ["a"])], ["b"]))
    s.tasks["b"].waiting_on = set()  # corrupt: b waits on a, which is not in memory
    with pytest.raises(InvalidState, match=r"'b' waits on other inputs .*story: \[\('b', 'new', 'released'"):
        s.validate()
    s = make(n_workers=1)
    s.handle(UG("c", [T("a")], ["a"]))
    s.workers["w0"].processing.clear()  # corrupt: a is processing on w0, w0 does not know
    with pytest.raises(InvalidState, match="'a' is processing but no worker runs it"):
        s.validate()


def test_worker_local_directory_is_kept_from_registration():
    s = SchedulerState()
    s.handle(AddWorker("w0", nthreads=1, local_directory="/scratch/w0"))
    assert s.workers["w0"].local_directory == "/scratch/w0"


def test_a_heartbeat_that_changes_no_status_skips_the_passes_after_the_event():
    from xsched.scheduler.state import WorkerHeartbeat

    s = make(n_workers=2)
    s.handle(UG("c", [T("a")], ["a"]))
    passes = []
    for name in ("_fill_slots", "_steal", "validate"):
        real = getattr(s, name)
        setattr(s, name, lambda *a, _n=name, _r=real: (passes.append(_n), _r(*a))[1])
    assert s.handle(WorkerHeartbeat("w0", {"rss": 1})) == [] and passes == []  # figures only
    s.handle(WorkerHeartbeat("w0", {"rss": 2, "paused": True}))  # a status change: decisions again
    assert passes == ["_fill_slots", "_steal", "validate"] and s.workers["w0"].status == "paused"


def test_cancel_cancels_the_dependents_not_done_that_only_this_client_wants():
    """As dask's: cancelling ``a`` cancels ``b = f(a)`` and ``c = g(b)`` (they ran on after
    their input was cancelled), telling the client why; a dependent another client wants
    too stays, for both."""
    s = make(n_workers=1)
    s.handle(UG("c1", [T("a"), T("b", ["a"]), T("c", ["b"])], ["a", "b", "c"]),
             UG("c1", [T("d", ["a"])], ["d"]), UG("c2", [T("d", ["a"])], ["d"]))
    out = s.handle(CancelKeys("c1", ["a"]))
    told = sorted((o.client, o.msg["key"]) for o in out if isinstance(o, ToClient))
    assert told == [("c1", "b"), ("c1", "c")]
    reasons = {o.msg["key"]: o.msg["reason"] for o in out if isinstance(o, ToClient)}
    assert "it needs a, which c1 cancelled" in reasons["b"] and "it needs b" in reasons["c"]
    assert "b" not in s.tasks and "c" not in s.tasks
    assert s.tasks["d"].who_wants == {"c1", "c2"} and "a" in s.tasks  # (d goes on for both; it still needs a)
