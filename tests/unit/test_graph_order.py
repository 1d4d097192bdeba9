"""order(): depth first, finish what is started, deterministic; local.get runs that order."""

from __future__ import annotations

import operator
import random

import pytest

from xsched.graph.delayed import delayed
from xsched.graph.local import get
from xsched.graph.order import order
from xsched.graph.spec import Ref, Task

from tests.support.helpers import count_opcodes


def sequence(graph):
    prio = order(graph)
    assert sorted(prio.values()) == list(range(len(graph)))
    return sorted(prio, key=prio.__getitem__)


def deps_of(graph):
    from xsched.graph.order import dependency_map

    return dependency_map(graph)


def max_live(graph, seq=None, prefix=""):
    """Most values (with keys starting with ``prefix``) held at once when running ``seq``
    one task at a time; a value is held from when it is computed until its last dependent
    has run (outputs are sent away at once)."""
    seq = seq or sequence(graph)
    deps = deps_of(graph)
    waiting = {k: 0 for k in graph}
    for ds in deps.values():
        for d in ds:
            waiting[d] += 1
    live, peak = set(), 0
    for key in seq:
        live.add(key)
        peak = max(peak, sum(1 for k in live if k.startswith(prefix)))
        for d in deps[key]:
            waiting[d] -= 1
            if waiting[d] == 0:
                live.discard(d)
        if waiting[key] == 0:
            live.discard(key)
    return peak


def assert_valid(graph, seq):
    pos = {k: i for i, k in enumerate(seq)}
    for key, ds in deps_of(graph).items():
        for d in ds:
            assert pos[d] < pos[key], f"{d} must run before {key}"


def pipeline(n, gather=False):
    g = {}
    for i in range(n):
        g[f"read-{i}"] = Task(list, (range(i, i + 3),))
        g[f"sum-{i}"] = Task(sum, (Ref(f"read-{i}"),))
        g[f"analyse-{i}"] = Task(str, (Ref(f"sum-{i}"),))
    if gather:
        g["gather"] = Task(list, ([Ref(f"analyse-{i}") for i in range(n)],))
    return g


def test_chain():
    g = {"c-0": Task(int, (0,))}
    for i in range(1, 6):
        g[f"c-{i}"] = Task(operator.add, (Ref(f"c-{i - 1}"), 1))
    assert sequence(g) == [f"c-{i}" for i in range(6)]


@pytest.mark.parametrize("gather", [False, True])
def test_seed_000_pipeline_chunk_by_chunk(gather):
    n = 12
    g = pipeline(n, gather)
    seq = sequence(g)
    expected = [f"{step}-{i}" for i in range(n) for step in ("read", "sum", "analyse")]
    assert seq[: 3 * n] == expected  # chunk i is finished before chunk i+1 is read
    if gather:
        assert seq[-1] == "gather"
    assert max_live(g) <= 3 if not gather else max_live(g) <= n + 2


def test_seed_000_pipeline_with_shuffled_insertion_and_hashed_keys():
    # real keys carry tokens; insertion order must not matter, each chunk stays contiguous
    g = {}
    names = []
    for i in range(20):
        r, s, a = (f"{name}-{random.Random(i).getrandbits(64):016x}" for name in ("read", "sum", "get_info"))
        g[r] = Task(list, ((i,),))
        g[s] = Task(sum, (Ref(r),))
        g[a] = Task(str, (Ref(s),))
        names.append((r, s, a))
    items = list(g.items())
    random.Random(0).shuffle(items)
    seq = sequence(dict(items))
    assert seq == sequence(g)
    for r, s, a in names:
        i = seq.index(r)
        assert seq[i : i + 3] == [r, s, a]


def test_seed_003_two_builders_two_len_one_sum():
    g = {
        "build-0": Task(list, (range(5),)),
        "build-1": Task(list, (range(5),)),
        "len-0": Task(len, (Ref("build-0"),)),
        "len-1": Task(len, (Ref("build-1"),)),
        "sum": Task(sum, ([Ref("len-0"), Ref("len-1")],)),
    }
    assert sequence(g) == ["build-0", "len-0", "build-1", "len-1", "sum"]
    assert max_live(g, prefix="build") == 1  # never two partitions at once


def test_seed_003_as_users_write_it_with_delayed():
    def make_partition(i):
        return [[0] * 3] * 4

    parts = [delayed(make_partition)(i) for i in range(2)]
    lengths = [delayed(len)(p) for p in parts]
    total = delayed(sum)(lengths)
    graph = total.__xsched_graph__()
    seq = sequence(graph)
    pos = {k: i for i, k in enumerate(seq)}
    # each partition's length is taken right after the partition is made
    for part, length in zip(parts, lengths):
        assert pos[length.key] == pos[part.key] + 1
    assert seq[-1] == total.key
    assert total.compute() == 8


def binary_tree(leaves):
    g = {f"leaf-{i}": Task(list, ((i,),)) for i in range(leaves)}
    level = [f"leaf-{i}" for i in range(leaves)]
    depth = 0
    while len(level) > 1:
        depth += 1
        nxt = []
        for j in range(0, len(level), 2):
            key = f"r{depth}-{j // 2}"
            g[key] = Task(operator.add, (Ref(level[j]), Ref(level[j + 1])))
            nxt.append(key)
        level = nxt
    return g, depth, level[0]


@pytest.mark.parametrize("leaves", [8, 64, 1024])
def test_binary_tree_reduces_pairs_before_reading_more(leaves):
    g, depth, root = binary_tree(leaves)
    seq = sequence(g)
    assert seq[:3] == ["leaf-0", "leaf-1", "r1-0"]
    assert seq[-1] == root
    assert max_live(g) <= depth + 2
    assert get(g, root) == list(range(leaves))


def test_diamond():
    g = {
        "a": Task(list, ((1,),)),
        "b": Task(len, (Ref("a"),)),
        "c": Task(sum, (Ref("a"),)),
        "d": Task(operator.add, (Ref("b"), Ref("c"))),
    }
    seq = sequence(g)
    assert seq[0] == "a" and seq[-1] == "d"
    assert_valid(g, seq)
    assert get(g, "d") == 2


def test_independent_chains_each_completed_before_the_next():
    g = {}
    for c in range(5):
        g[f"x{c}-0"] = Task(int, (c,))
        for i in range(1, 4):
            g[f"x{c}-{i}"] = Task(operator.add, (Ref(f"x{c}-{i - 1}"), 1))
    seq = sequence(g)
    assert seq == [f"x{c}-{i}" for c in range(5) for i in range(4)]


def test_shared_input_each_chunk_consumed_right_after_its_read():
    g = {"calibration": Task(dict, ())}
    for i in range(6):
        g[f"read-{i}"] = Task(list, ((i,),))
        g[f"apply-{i}"] = Task(operator.add, (Ref(f"read-{i}"), Ref("calibration")))
    seq = sequence(g)
    assert_valid(g, seq)
    for i in range(6):
        j = seq.index(f"read-{i}")
        assert seq[j + 1] == f"apply-{i}" or seq[j + 1] == "calibration" and seq[j + 2] == f"apply-{i}"
    assert max_live(g) <= 3


def test_two_reductions_over_the_same_chunks_release_each_chunk_at_once():
    # x.sum() and x.max() computed together: each chunk feeds both, then is dropped
    g = {}
    for i in range(8):
        g[f"chunk-{i}"] = Task(list, ((i,),))
        g[f"sum-{i}"] = Task(sum, (Ref(f"chunk-{i}"),))
        g[f"max-{i}"] = Task(max, (Ref(f"chunk-{i}"),))
    g["total"] = Task(sum, ([Ref(f"sum-{i}") for i in range(8)],))
    g["maximum"] = Task(max, ([Ref(f"max-{i}") for i in range(8)],))
    seq = sequence(g)
    pos = {k: i for i, k in enumerate(seq)}
    for i in range(8):
        assert pos[f"chunk-{i}"] < pos[f"sum-{i}"] < pos[f"chunk-{i}"] + 4
        assert pos[f"chunk-{i}"] < pos[f"max-{i}"] < pos[f"chunk-{i}"] + 4
    assert max_live(g, prefix="chunk") == 1


def test_bigger_subtree_first_so_small_results_wait_not_big_inputs():
    # f(chain, leaf): do the chain (which reads and reduces) before reading the leaf
    g = {"a-leaf": Task(list, ((1,),)), "z-0": Task(list, ((2,),))}
    for i in range(1, 4):
        g[f"z-{i}"] = Task(list, (Ref(f"z-{i - 1}"),))
    g["f"] = Task(operator.add, (Ref("z-3"), Ref("a-leaf")))
    assert sequence(g) == ["z-0", "z-1", "z-2", "z-3", "a-leaf", "f"]


def test_placeholders_and_external_keys():
    class FakeFuture:
        pass

    g = {
        "future-1": FakeFuture(),
        "b": Task(len, (Ref("future-1"), Ref("not-in-graph"))),
        "c": 42,
    }
    seq = sequence(g)
    assert seq.index("future-1") < seq.index("b")
    assert set(seq) == {"future-1", "b", "c"}


def test_natural_key_order_breaks_ties():
    g = {f"read-{i}": Task(int, (i,)) for i in (10, 2, 1)}
    assert sequence(g) == ["read-1", "read-2", "read-10"]


def test_cycle_is_an_error():
    g = {"a": Task(len, (Ref("b"),)), "b": Task(len, (Ref("a"),)), "c": 1}
    with pytest.raises(ValueError, match="cycle"):
        order(g)


def test_empty_graph():
    assert order({}) == {}


def test_random_dags_give_valid_deterministic_orders():
    rng = random.Random(42)
    for trial in range(20):
        n = rng.randint(1, 60)
        g = {}
        for i in range(n):
            refs = [Ref(f"t-{j}") for j in rng.sample(range(i), min(i, rng.randint(0, 3)))]
            g[f"t-{i}"] = Task(list, (refs,))
        seq = sequence(g)
        assert_valid(g, seq)
        items = list(g.items())
        rng.shuffle(items)
        assert sequence(dict(items)) == seq


def test_100k_tasks_are_ordered():
    g = pipeline(33_334, gather=True)
    prio = order(g)
    assert len(g) == 100_003
    assert sorted(prio.values()) == list(range(len(g)))  # a total order of all the tasks
    assert set(prio) == set(g)
    for key, ds in deps_of(g).items():
        assert all(prio[d] < prio[key] for d in ds), key
    # depth first: each chain read -> sum -> analyse is contiguous, then the gather last
    assert all(prio[f"sum-{i}"] == prio[f"read-{i}"] + 1 and prio[f"analyse-{i}"] == prio[f"sum-{i}"] + 1
               for i in range(33_334))
    assert prio["gather"] == len(g) - 1
    tree, _, root = binary_tree(2**16)
    tprio = order(tree)
    assert sorted(tprio.values()) == list(range(len(tree))) and tprio[root] == len(tree) - 1


@pytest.mark.parametrize("make", [lambda n: pipeline(n, gather=True), lambda n: binary_tree(n)[0]],
                         ids=["pipeline", "tree"])
def test_ordering_work_grows_linearly(make):
    """Work per task is the same for 4x the tasks (quadratic work would be 4x per task)."""
    import xsched.graph.order as order_module

    small, big = make(1024), make(4096)  # ~3,000 and ~12,000 tasks, ~2,000 and ~8,000
    per_task = [count_opcodes(order_module, order, g) / len(g) for g in (small, big)]
    assert per_task[0] > 50, per_task  # the count sees the work
    assert per_task[1] <= 1.25 * per_task[0], per_task  # n log n, at most, with margin


def test_deep_chain_has_no_recursion_limit():
    g = {"c-0": Task(int, (0,))}
    for i in range(1, 20_000):
        g[f"c-{i}"] = Task(operator.add, (Ref(f"c-{i - 1}"), 1))
    prio = order(g)
    assert prio["c-0"] == 0 and prio["c-19999"] == 19_999


# ---------------------------------------------------------------- local.get


class Big:
    live = 0
    peak = 0

    def __init__(self, n):
        self.n = n
        Big.live += 1
        Big.peak = max(Big.peak, Big.live)

    def __del__(self):
        Big.live -= 1


def _read(i):
    return Big(i)


def _summarise(big):
    return big.n * 10


def test_local_get_frees_intermediates_as_soon_as_possible():
    Big.live = Big.peak = 0
    g = {}
    for i in range(10):
        g[f"read-{i}"] = Task(_read, (i,))
        g[f"sum-{i}"] = Task(_summarise, (Ref(f"read-{i}"),))
    g["total"] = Task(sum, ([Ref(f"sum-{i}") for i in range(10)],))
    assert get(g, "total", optimize=False) == 450
    assert Big.peak == 1  # one chunk in memory at a time, like seed 000 wants
    assert Big.live == 0


def test_local_get_nested_keys_and_errors():
    g = {"a": 1, "b": Task(operator.add, (Ref("a"), 1)), "c": Task(operator.truediv, (Ref("a"), 0))}
    assert get(g, [["a", "b"], "b"]) == [[1, 2], 2]
    with pytest.raises(ZeroDivisionError):
        get(g, "c")
    with pytest.raises(KeyError, match="nope"):
        get(g, "nope")
    with pytest.raises(KeyError, match="missing"):
        get({"x": Task(len, (Ref("missing"),))}, "x")


def test_natural_order_of_equal_width_numbered_keys_is_their_plain_order_and_still_natural():
    """Keys that differ only in equal-width runs of digits (random-token keys of one
    function) take the plain-order shortcut; the result is the natural order all the same,
    and keys that do not qualify (other widths, other digits) still sort naturally."""
    from xsched.graph.delayed import _random_token
    from xsched.graph.order import natural_key, natural_order

    rng = random.Random(7)
    cases = [[f"inc-{_random_token()}" for _ in range(500)]]
    for _ in range(100):
        width = rng.randint(1, 4)
        prefix = rng.choice(["p", "p9", "x-0", ""])
        cases.append(list({prefix + "".join(rng.choice("0123456789") for _ in range(width)) for _ in range(40)}))
    cases += [["x-10", "x-2", "x-1"], ["a\u0662", "a3", "a1"], ["k-07", "k-7", "k-10"]]
    for keys in cases:
        assert natural_order(keys) == sorted(range(len(keys)), key=lambda i: natural_key(keys[i])), keys
