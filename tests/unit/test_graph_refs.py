"""The graph passes share what each task refers to (optimize_with_refs -> order, and the
client's update-graph), fusion finds its chains without ordering the graph, and roots are
put in natural order faster: all with the results of the plain passes."""

from __future__ import annotations

import operator
import random

import pytest

from xsched.graph.optimize import MAX_CHAIN, _ref_count, flatten_keys, fuse_linear, optimize, optimize_with_refs
from xsched.graph.order import dependency_map, natural_key, natural_order, order, task_dependencies, toposort
from xsched.graph.spec import Ref, Task, substitute

from tests.support.helpers import count_opcodes


def _combine(*args, **kwargs):
    return len(args) + len(kwargs)


def reference_fuse(graph, keep=(), max_chain=MAX_CHAIN):
    """Fusion as one walk of the graph in topological order (how fuse_linear used to
    work): the definition the chain walk must agree with."""
    keep = set(flatten_keys(list(keep)))
    deps = dependency_map(graph)
    n_dependents = dict.fromkeys(graph, 0)
    for ds in deps.values():
        for d in ds:
            n_dependents[d] += 1
    fused, chain, inlined = {}, {}, set()
    for key in toposort(graph, deps):
        task = graph[key]
        if type(task) is not Task:
            fused[key] = task
            continue
        length, ds = 1, deps[key]
        if len(ds) == 1:
            dep = ds[0]
            source = graph[dep]
            if (type(source) is Task and dep not in keep and n_dependents[dep] == 1 and chain[dep] < max_chain
                    and source.annotations == task.annotations and len(task_dependencies(task)) == 1
                    and _ref_count(task, dep) == 1):
                task = substitute(task, {dep: fused[dep]})
                inlined.add(dep)
                length = chain[dep] + 1
        fused[key] = task
        chain[key] = length
    return {k: fused[k] for k in graph if k not in inlined}


def random_graph(rng, n):
    """Chains, fan-ins, nested and repeated references, keys from elsewhere, aliases,
    placeholders and annotations: what fusion and ordering must get right."""
    g = {}
    for i in range(n):
        picks = rng.sample(range(i), min(i, rng.choice([0, 1, 1, 1, 1, 2, 3])))
        refs = [Ref(f"t-{j}") for j in picks]
        kind = rng.random()
        if kind < 0.1:
            g[f"t-{i}"] = Task(_combine, (i, refs))  # nested in a list
        elif kind < 0.15 and refs:
            g[f"t-{i}"] = Task(_combine, (*refs, refs[0]))  # a key used twice
        elif kind < 0.2:
            g[f"t-{i}"] = Task(_combine, tuple(refs), {"x": Ref("elsewhere-1")})
        elif kind < 0.25:
            g[f"t-{i}"] = refs[0] if refs else 5  # an alias or a placeholder
        elif kind < 0.3:
            g[f"t-{i}"] = Task(_combine, (*refs, Ref("elsewhere-2")))
        else:
            g[f"t-{i}"] = Task(_combine, tuple(refs))
        if rng.random() < 0.15 and type(g[f"t-{i}"]) is Task:
            g[f"t-{i}"].annotations = {"priority": rng.choice([1, 2])}
    return g


def same_graph(a, b):
    assert list(a) == list(b)
    for k in a:
        assert type(a[k]) is type(b[k]) and a[k] == b[k], k


def test_fusion_agrees_with_the_topological_walk_on_random_graphs():
    rng = random.Random(11)
    for trial in range(400):
        g = random_graph(rng, rng.randint(1, 50))
        keys = rng.sample(list(g), rng.randint(1, min(4, len(g))))
        for max_chain in (1, 2, 3, MAX_CHAIN):
            same_graph(fuse_linear(g, keep=keys, max_chain=max_chain), reference_fuse(g, keys, max_chain))


def test_long_chains_are_cut_where_the_topological_walk_cuts_them():
    g = {"c-0": Task(int, (0,))}
    for i in range(1, 300):
        g[f"c-{i}"] = Task(operator.add, (Ref(f"c-{i - 1}"), 1))
    for max_chain in (1, 2, 7, 64):
        same_graph(fuse_linear(g, keep=["c-299"], max_chain=max_chain), reference_fuse(g, ["c-299"], max_chain))


def test_fuse_linear_returns_a_new_graph_even_when_nothing_fuses():
    g = {"a": Task(int, (1,)), "b": Task(int, (2,)), "c": Task(max, (Ref("a"), Ref("b")))}
    fused = fuse_linear(g, keep=["c"])
    assert fused == g and fused is not g


def test_refs_are_what_each_optimised_task_refers_to():
    rng = random.Random(5)
    for trial in range(300):
        g = random_graph(rng, rng.randint(1, 50))
        keys = rng.sample(list(g), rng.randint(1, min(4, len(g))))
        for fuse in (True, False):
            graph, refs = optimize_with_refs(g, keys, fuse)
            same_graph(graph, optimize(g, keys, fuse))
            assert set(refs) == set(graph)
            for key, value in graph.items():
                assert refs[key] == task_dependencies(value), key


def test_order_with_refs_is_order_without():
    rng = random.Random(9)
    for trial in range(300):
        g = random_graph(rng, rng.randint(1, 60))
        keys = rng.sample(list(g), rng.randint(1, min(4, len(g))))
        graph, refs = optimize_with_refs(g, keys)
        expected = order(graph)
        assert order(graph, refs) == expected
        partial = dict(list(refs.items())[::2])  # keys refs lacks are walked
        assert order(graph, partial) == expected
        assert order(g) == order(g, {k: task_dependencies(v) for k, v in g.items()})


def test_order_with_refs_reports_a_cycle():
    g = {"a": Task(len, (Ref("b"),)), "b": Task(len, (Ref("a"),)), "c": 1}
    with pytest.raises(ValueError, match="cycle"):
        order(g, {k: task_dependencies(v) for k, v in g.items()})


def _natural(keys):
    return sorted(range(len(keys)), key=lambda i: natural_key(keys[i]))


@pytest.mark.parametrize("keys", [
    [],
    ["only"],
    ["x-10", "x-2", "x-1", "y-0"],
    ["x1", "x-", "x10", "x", "x01", "x1a", "x1-"],  # a digit or not where the keys part
    ["inc-00ff0000000000000009", "inc-00ff000000000000000a", "inc-00ff0000000000000010",
     "inc-00ff00000000000000a0"],  # hex tokens: digit runs end anywhere
    ["read-12", "read-120", "read-1200", "read-13"],  # the common prefix ends in digits
    ["k-\u0661\u0662", "k-\u0663", "k-12", "k-3", "k-\u00b2"],  # Unicode digits (and one that is not Nd)
    ["a", "ab", "abc", "a1", "a0b"],  # keys that are prefixes of others
])
def test_natural_order_is_the_sort_by_natural_key(keys):
    assert natural_order(keys) == _natural(keys)


def test_natural_order_on_random_keys():
    rng = random.Random(3)
    alphabet = "ab-_.09x1\u0665"
    for trial in range(500):
        prefix = rng.choice(["", "inc-", "inc-1a2b", "task-00", "x9"])
        keys = list({prefix + "".join(rng.choice(alphabet) for _ in range(rng.randrange(6)))
                     for _ in range(rng.randrange(1, 30))})
        assert natural_order(keys) == _natural(keys), keys


def test_tree_ordering_work_stays_linear_with_refs():
    """The shared-refs path is the path a client takes: its work per task must not grow."""
    import xsched.graph.order as order_module

    def tree(leaves):
        g = {f"inc-{i}": Task(int, (i,)) for i in range(leaves)}
        level = list(g)
        while len(level) > 1:
            nxt = []
            for i in range(0, len(level) - 1, 2):
                key = f"add-{len(g)}"
                g[key] = Task(operator.add, (Ref(level[i]), Ref(level[i + 1])))
                nxt.append(key)
            if len(level) % 2:
                nxt.append(level[-1])
            level = nxt
        return g

    per_task = []
    for leaves in (1024, 4096):
        g = tree(leaves)
        graph, refs = optimize_with_refs(g, [list(g)[-1]])
        per_task.append(count_opcodes(order_module, order, graph, refs) / len(graph))
    assert per_task[0] > 30, per_task
    assert per_task[1] <= 1.25 * per_task[0], per_task
