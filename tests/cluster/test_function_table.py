"""Functions travel once per graph: specs refer to them by id, the scheduler keeps one copy
and hands it to each worker with the first task that needs it, and forgets it (there and
on the workers) once no task refers to it."""

import pickle

import pytest

from xsched import Client, LocalCluster
from xsched.graph.spec import Task
from xsched.protocol import tasks as tasks_mod
from xsched.protocol.serialize import SerializationError
from xsched.protocol.tasks import SpecWriter, dumps_function, loads_task

from tests.support.helpers import wait_until

PAYLOAD = b"p" * 20_000  # what the closures below capture: their pickles are large


def make_closure(tag):
    data = PAYLOAD + tag.encode()

    def scaled(x):
        return x * 2 + len(data)

    return scaled


def test_specs_refer_to_large_functions_by_id_and_load_with_the_table():
    f = make_closure("a")
    writer = SpecWriter(functions={})
    specs = [writer.dumps(Task(f, (i,))) for i in range(3)]
    assert list(writer.functions.values()) == [dumps_function(f)]  # once, for all three
    assert all(PAYLOAD not in s and len(s) < 200 for s in specs)
    assert [loads_task(s, functions=writer.functions).run({}) for s in specs] == [f(i) for i in range(3)]
    with pytest.raises(SerializationError, match="never reached this worker"):
        loads_task(specs[0], key="scaled-1", functions={})


def test_small_functions_stay_in_the_spec_and_the_table_is_bounded():
    writer = SpecWriter(functions={})
    spec = writer.dumps(Task(len, ("abc",)))
    assert writer.functions == {} and loads_task(spec).run({}) == 3
    many = [make_closure(str(i)) for i in range(tasks_mod.FUNCTION_TABLE_MAX + 3)]
    specs = [writer.dumps(Task(g, (1,))) for g in many]
    assert len(writer.functions) == tasks_mod.FUNCTION_TABLE_MAX
    inline = [s for s in specs if PAYLOAD in s]
    assert len(inline) == 3  # beyond the table's bound: carried in the spec as before
    assert [loads_task(s, functions=writer.functions).run({}) for s in specs] == [g(1) for g in many]


def test_the_function_id_names_the_bytes():
    f, g = make_closure("x"), make_closure("x")
    assert tasks_mod._function_id(f, dumps_function(f)) == tasks_mod._function_id(g, dumps_function(g))
    assert pickle.loads(dumps_function(f))(1) == f(1)


def _scheduler_table(scheduler):
    return {fid: entry[1] for fid, entry in scheduler.state.functions.items()}


def _spec_sizes(scheduler):
    return [len(ts.run_spec) for ts in scheduler.state.tasks.values() if ts.run_spec]


def _worker_table(worker):
    return len(worker.functions)


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_a_map_sends_its_function_once_and_everything_forgets_it_afterwards():
    with LocalCluster(n_workers=2, threads_per_worker=1) as cluster, Client(cluster) as c:
        f = make_closure("map")
        futures = c.map(f, range(200))
        assert c.gather(futures) == [f(i) for i in range(200)]
        sizes = c.run_on_scheduler(_spec_sizes)
        assert len(sizes) == 200 and max(sizes) < 300  # the ~20 KB function is in none of them
        assert list(c.run_on_scheduler(_scheduler_table).values()) == [200]  # one copy, 200 users
        held = c.run(_worker_table)
        assert sorted(held.values()) == [1, 1]  # each worker got it once (both ran some)
        del futures
        wait_until(lambda: not c.run_on_scheduler(_scheduler_table) and not any(c.run(_worker_table).values()),
                   timeout=30, msg="the function forgotten by the scheduler and the workers")
