"""delayed(): lazy calls building graphs, computed locally or on the default client."""

from __future__ import annotations

import pickle
import re

import numpy as np
import pytest

import xsched
from xsched.client.default import set_default_client, unset_default_client
from xsched.graph.annotate import annotate
from xsched.graph.delayed import Delayed, _call_args, compute, delayed, persist
from xsched.graph.order import order
from xsched.graph.spec import Ref, Task

from tests.support.helpers import count_opcodes


def inc(x):
    return x + 1


def add(x, y):
    return x + y


KEY = re.compile(r"^[a-z_]+-[0-9a-f]{32}$")


def test_call_and_compute():
    x = delayed(inc)(1)
    assert isinstance(x, Delayed)
    assert KEY.match(x.key) and x.key.startswith("inc-")
    assert x.compute() == 2
    assert delayed(add)(x, delayed(inc)(10)).compute() == 13


def test_impure_by_default_pure_on_request():
    assert delayed(inc)(1).key != delayed(inc)(1).key
    assert delayed(inc, pure=True)(1).key == delayed(inc, pure=True)(1).key
    assert delayed(inc, pure=True)(1).key != delayed(inc, pure=True)(2).key
    assert delayed(inc)(1, pure=True).key == delayed(inc)(1, pure=True).key
    a = delayed(inc, pure=True)(delayed(inc, pure=True)(1))
    b = delayed(inc, pure=True)(delayed(inc, pure=True)(1))
    assert a.key == b.key


def test_name_forces_a_values_key_and_prefixes_a_functions_calls():
    x = delayed(inc)(1, xsched_key_name="my-input")
    assert x.key == "my-input"
    load = delayed(inc, name="load")
    a, b = load(1), load(10)  # (each call a key of its own: one key would give both one result)
    assert load.key == "load" and a.key != b.key and a.key.startswith("load-") and b.key.startswith("load-")
    assert xsched.compute(a, b, scheduler="sync") == (2, 11)
    step = delayed(name="step")(lambda v: v * 2)
    assert step(step(3)).compute(scheduler="sync") == 12
    assert delayed(inc)(1, xsched_key_name="other").key == "other"
    assert delayed([1, 2], name="data").key == "data"
    assert (delayed(sum)(x) if False else x).compute() == 2


def test_collections_of_delayed_in_args_and_kwargs():
    xs = [delayed(inc)(i) for i in range(3)]
    total = delayed(sum)(xs)
    assert total.compute() == 6
    d = delayed(dict)(a=xs[0], b={"nested": (xs[1], [xs[2], 5])})
    assert d.compute() == {"a": 1, "b": {"nested": (2, [3, 5])}}
    task = d.__xsched_graph__()[d.key]
    assert task.kwargs["a"] == Ref(xs[0].key)


def test_literals_and_containers_of_delayed():
    lit = delayed(np.arange(3))
    assert lit.key.startswith("ndarray-")
    assert (lit.compute() == np.arange(3)).all()
    assert delayed(5).key == delayed(5).key
    xs = [delayed(inc)(i) for i in range(3)]
    as_list = delayed(xs)
    assert isinstance(as_list, Delayed) and as_list.key.startswith("list-")
    assert as_list.compute() == [1, 2, 3]
    assert delayed((xs[0], 7)).compute() == (1, 7)
    assert delayed({"k": xs[1]}).compute() == {"k": 2}
    assert delayed(xs[0]) is xs[0]
    kept = delayed(xs, traverse=False)  # (taken as it is, as dask's: its Delayed are not computed)
    assert kept.__xsched_graph__()[kept.key].args == (xs,) and all(isinstance(v, Delayed) for v in kept.compute())
    assert delayed(list(range(5)), traverse=False).compute() == [0, 1, 2, 3, 4]


def test_nout_unpacks():
    q, r = delayed(divmod, nout=2)(17, 5)
    assert (q.compute(), r.compute()) == (3, 2)
    pair = delayed(divmod, nout=2)(7, 2)
    assert len(pair) == 2
    assert list(delayed(tuple, nout=0)(())) == []
    with pytest.raises(ValueError, match="nout"):
        delayed(divmod, nout=-1)


def test_len_and_iter_without_nout_raise_helpfully():
    x = delayed(list)("abc")
    with pytest.raises(TypeError, match="nout"):
        len(x)
    with pytest.raises(TypeError, match="nout"):
        a, b, c = x


def test_bool_raises():
    x = delayed(inc)(1)
    with pytest.raises(TypeError, match="compute"):
        bool(x)
    with pytest.raises(TypeError, match="compute"):
        if x > 1:
            pass


def test_immutable():
    x = delayed(inc)(1)
    with pytest.raises(TypeError, match="immutable"):
        x.foo = 1
    with pytest.raises(TypeError, match="immutable"):
        x[0] = 1


def test_attributes_methods_and_items():
    arr = delayed(np.arange)(12)
    assert arr.shape.compute() == (12,)
    assert arr.sum().compute() == 66
    assert arr.reshape(3, 4).sum(axis=0).compute().tolist() == [12, 15, 18, 21]
    assert arr[2:5].compute().tolist() == [2, 3, 4]
    assert arr[delayed(inc)(1)].compute() == 2
    assert arr.shape[0].compute() == 12
    # a method call does not compute the getattr task
    call = arr.sum()
    assert not any(k.startswith("getattr-") for k in call.__xsched_graph__())
    with pytest.raises(AttributeError):
        arr._private


def test_operators():
    x, y = delayed(7), delayed(2)
    cases = [
        (x + y, 9), (x - y, 5), (x * y, 14), (x / y, 3.5), (x // y, 3), (x % y, 1),
        (x ** y, 49), (x & y, 2), (x | y, 7), (x ^ y, 5), (x << y, 28), (x >> y, 1),
        (-x, -7), (+x, 7), (abs(-x), 7), (~x, -8), (1 + x, 8), (10 - x, 3), (2 * x, 14),
        (14 / x, 2.0), (15 // x, 2), (15 % x, 1), (2 ** y, 4), (x < y, False),
        (x <= y, False), (x > y, True), (x >= y, True), (x == y, False), (x != y, True),
    ]
    (results,) = compute([d for d, _ in cases])
    assert results == [expected for _, expected in cases]
    m = delayed(np.eye(2))
    assert (m @ m).compute().tolist() == [[1, 0], [0, 1]]
    assert (x + 1).key == (x + 1).key  # operators are pure


def test_calling_a_delayed_callable():
    f = delayed(lambda: inc)()
    assert f(41).compute() == 42


def test_decorator_forms():
    @delayed
    def double(x):
        return 2 * x

    @delayed(pure=True, nout=2)
    def split(x):
        return x, -x

    a, b = split(double(3))
    assert compute(a, b) == (6, -6)
    assert split(1)[0].key == split(1)[0].key


def test_delayed_function_itself_is_a_value():
    f = delayed(inc)
    assert f.key.startswith("inc-") and f.compute() is inc
    assert delayed(map)(f, [1, 2]).compute() is not None
    assert list(delayed(list)(delayed(map)(f, [1, 2])).compute()) == [2, 3]


def test_annotations_copied_into_tasks():
    with annotate(priority=5, resources={"GPU": 1}):
        x = delayed(inc)(1)
        a, b = delayed(divmod, nout=2)(x, 2)
    graph = b.__xsched_graph__()
    assert graph[x.key].annotations == {"priority": 5, "resources": {"GPU": 1}}
    assert graph[b.key].annotations == {"priority": 5, "resources": {"GPU": 1}}
    assert (b + 1).__xsched_graph__()[(b + 1).key].annotations == {}


def test_repr_and_html():
    x = delayed(inc)(1, xsched_key_name="inc-1a2b")
    assert repr(x) == "Delayed('inc-1a2b')"
    with annotate(retries=2):
        y = x + 1
    html = y._repr_html_()
    assert y.key in html and ">2<" in html and "retries=2" in html
    assert repr(delayed(inc)).startswith("Delayed('inc-")


def test_collection_protocol():
    x = delayed(inc)(1)
    y = delayed(add)(x, 10)
    graph = y.__xsched_graph__()
    assert set(graph) == {x.key, y.key}
    assert isinstance(graph[y.key], Task) and graph[y.key].args == (Ref(x.key), 10)
    assert y.__xsched_keys__() == [y.key]
    func, extra = y.__xsched_postcompute__()
    assert func([12], *extra) == 12
    func, extra = y.__xsched_postpersist__()
    placeholder = object()
    rebuilt = func({y.key: placeholder}, *extra)
    assert isinstance(rebuilt, Delayed) and rebuilt.key == y.key
    assert rebuilt.__xsched_graph__() == {y.key: placeholder}


def test_constructor_contract():
    graph = {"a-1": Task(inc, (1,)), "b-1": Task(inc, (Ref("a-1"),))}
    d = Delayed("b-1", graph)
    assert d.key == "b-1" and d.compute() == 3
    assert len(Delayed("b-1", graph, length=4)) == 4
    with pytest.raises(ValueError, match="no task"):
        Delayed("c-1", graph)
    with pytest.raises(TypeError):
        Delayed(("x", 0), graph)


def test_placeholder_values_are_left_untouched():
    sentinel = object()
    d = Delayed("held-1", {"held-1": sentinel})
    assert d.__xsched_graph__()["held-1"] is sentinel
    assert (delayed(id)(d).compute()) == id(sentinel)


def test_module_compute_traverses_and_shares_work():
    calls = []

    def load(i):
        calls.append(i)
        return i

    shared = delayed(load)(1)
    a, b = shared + 1, shared * 10
    out = compute(a, {"b": [b, "literal"]}, 3)
    assert out == (2, {"b": [10, "literal"]}, 3)
    assert calls == [1]  # the shared input ran once
    assert compute(1, "x") == (1, "x")
    assert compute([a], traverse=False)[0][0] is a
    with pytest.raises(TypeError, match="unexpected"):
        compute(a, schedular="threads")
    assert compute(a, resources={"GPU": 1}) == (2,)  # client-only options are ignored locally


def test_persist_locally_holds_the_value():
    x = (delayed(inc)(1) + 1).persist()
    assert isinstance(x, Delayed)
    graph = x.__xsched_graph__()
    assert graph == {x.key: 3}
    assert (x * 2).compute() == 6
    (y,) = persist(delayed(inc)(5))
    assert y.compute() == 6


def test_errors_propagate_with_their_type():
    bad = delayed(int)("not a number")
    with pytest.raises(ValueError, match="invalid literal"):
        (bad + 1).compute()


def test_pickle_round_trip():
    x = delayed(add)(delayed(inc)(1), 2)
    y = pickle.loads(pickle.dumps(x))
    assert y.key == x.key and y.compute() == 4
    f = pickle.loads(pickle.dumps(delayed(inc, pure=True)))
    assert f(1).key == delayed(inc, pure=True)(1).key


def test_tokenize_uses_key():
    from xsched.tokenize import tokenize

    x = delayed(inc)(1)
    assert tokenize(x) == tokenize(Delayed(x.key, x.__xsched_graph__()))


class FakeClient:
    status = "running"

    def __init__(self):
        self.calls = []

    def compute(self, collections, sync=False, **kwargs):
        self.calls.append(("compute", collections, sync, kwargs))
        if isinstance(collections, list):
            return [f"result of {c.key}" for c in collections]
        return f"result of {collections.key}"

    def persist(self, collections, **kwargs):
        self.calls.append(("persist", collections, kwargs))
        return collections


def test_default_client_is_used():
    client = FakeClient()
    set_default_client(client)
    try:
        x = delayed(inc)(1)
        assert x.compute(resources={"GPU": 1}) == f"result of {x.key}"
        assert client.calls[-1] == ("compute", x, True, {"resources": {"GPU": 1}})
        y = x + 1
        assert compute(x, {"y": y}) == (f"result of {x.key}", {"y": f"result of {y.key}"})
        assert client.calls[-1][1] == [x, y] and client.calls[-1][2] is True
        assert x.persist(workers=["w"]) is x
        assert client.calls[-1] == ("persist", x, {"workers": ["w"]})
    finally:
        unset_default_client(client)
    assert x.compute() == 2


def _sum_of_incs(n):
    parts = [delayed(inc)(i) for i in range(n)]
    total = delayed(sum)(parts)
    return parts, total, total.__xsched_graph__()


def test_100k_node_graph_builds():
    parts, total, graph = _sum_of_incs(100_000)
    assert len(graph) == 100_001
    assert len({p.key for p in parts}) == 100_000  # no two calls share a key
    assert set(graph) == {p.key for p in parts} | {total.key}


def test_graph_building_work_grows_linearly():
    """Work per node is the same for 4x the nodes (quadratic work would be 4x per node)."""
    per_node = [count_opcodes(xsched, _sum_of_incs, n) / n for n in (2_500, 10_000)]
    assert per_node[0] > 50, per_node  # the count sees the work
    assert per_node[1] <= 1.25 * per_node[0], per_node


def test_deep_chain_builds_and_computes():
    x = delayed(0)
    for _ in range(5_000):
        x = x + 1
    assert len(x.__xsched_graph__()) == 5_001
    assert x.compute() == 5_000
    assert x.compute(optimize_graph=False) == 5_000


def test_seed_000_pipeline_with_delayed_runs_chunk_by_chunk():
    def read(i):
        return np.full((20, 4), i)

    def sum_sub_stacks(mov):
        return mov.reshape(2, 10, 4).sum(axis=1)

    def get_info(mov):
        return [{"sum": float(f.sum())} for f in mov]

    chunks = [delayed(read, pure=True)(i) for i in range(5)]
    infos = [delayed(get_info)(delayed(sum_sub_stacks)(c)) for c in chunks]
    graph = delayed(infos).__xsched_graph__()
    prio = order(graph)
    seq = sorted(prio, key=prio.__getitem__)
    positions = [seq.index(c.key) for c in chunks]
    for p in positions:  # read, sum, analyse in a row for each chunk
        assert not any(seq[p + k].startswith("read-") for k in (1, 2))
    assert compute(infos)[0][4] == [{"sum": 160.0}, {"sum": 160.0}]


def test_a_call_on_flat_arguments_is_kept_as_given_and_the_graph_is_the_same():
    """``delayed(f)(x, d)`` with literals and plain Delayed arguments keeps the call as
    given (two objects for the garbage collector to track, not five or six); the graph
    walk makes the same Task, Refs and annotations as the general path does."""
    import gc

    from xsched.graph.spec import Ref, Task

    def add(a, b):
        return a + b

    gc.collect()
    before = len(gc.get_objects())
    chain = delayed(add)(0, 1)
    keep = [chain]
    for i in range(1000):
        chain = delayed(add)(chain, i)
        keep.append(chain)
    grown = len(gc.get_objects()) - before
    assert grown <= 1.5 * 1000, grown  # a Delayed per call (its two arguments in its slots)
    wide = [delayed(max)(c, 1, 2) for c in keep[:100]]  # three arguments: kept as their tuple
    assert [_call_args(w) for w in wide[:2]] == [(keep[0], 1, 2), (keep[1], 1, 2)]
    assert chain.compute() == sum(range(1000)) + 1

    with annotate(priority=7, retries=2):
        top = delayed(add)(chain, 5)
    graph = top.__xsched_graph__()
    task = graph[top.key]
    assert type(task) is Task and task.func is add and task.args == (Ref(chain.key), 5) and task.kwargs == {}
    assert task.annotations == {"priority": 7, "retries": 2}
    assert graph[keep[0].key].args == (0, 1) and len(graph) == 1002
    # nested, keyword or pure arguments take the general path: same graph shape
    nested = delayed(sum)([chain, top])
    assert nested.__xsched_graph__()[nested.key].args == ([Ref(chain.key), Ref(top.key)],)
    kw = delayed(add)(a=chain, b=1)
    assert kw.__xsched_graph__()[kw.key].kwargs == {"a": Ref(chain.key), "b": 1}
    assert delayed(add, pure=True)(chain, 1).key == delayed(add, pure=True)(chain, 1).key


def test_scheduler_names_where_a_compute_runs():
    """'sync' runs here even with a default Client; 'distributed' needs one; other names fail."""
    client = FakeClient()
    x = delayed(inc)(1)
    set_default_client(client)
    try:
        assert x.compute(scheduler="sync") == 2 and compute(x, scheduler="single-threaded") == (2,)
        assert client.calls == []                       # (none went to the Client)
        assert x.compute(scheduler="distributed") == f"result of {x.key}"
    finally:
        unset_default_client(client)
    with pytest.raises(ValueError, match="scheduler='distributed' asks for the default Client, and none is running"):
        x.compute(scheduler="distributed")
    with pytest.raises(ValueError, match="scheduler='processes' is not one xsched runs on"):
        compute(x, scheduler="processes")


def test_a_delayed_function_shows_the_functions_name_docstring_and_signature():
    import inspect

    def scale(x, factor=2):
        """Multiply x by factor."""
        return x * factor

    lazy = delayed(scale)
    assert lazy.__name__ == "scale" and inspect.getdoc(lazy) == "Multiply x by factor."
    assert str(inspect.signature(lazy)) == "(x, factor=2)" and lazy.__wrapped__ is scale
    assert lazy(3).compute(scheduler="sync") == 6


def test_a_delayed_builtin_has_no_signature_and_says_so_quietly():
    lazy = delayed(max)  # (CPython gives max no signature: inspect.signature(max) raises ValueError)
    assert hasattr(lazy, "__signature__") and lazy.__signature__ is None
    assert lazy.__name__ == "max" and lazy([1, 3]).compute(scheduler="sync") == 3
