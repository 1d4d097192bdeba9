"""xsched.bag against plain Python: construction, element-wise operations, reductions,
groupby through the shuffle, take/repartition, text files, keys and graph shape,
annotations and error messages. Everything runs in this process (no client)."""

from __future__ import annotations

import collections
import functools
import itertools
import math
import operator
import os
import pickle
import random
import statistics
import subprocess
import sys
import warnings

import cloudpickle
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xsched
import xsched.bag as xb
from xsched.bag.core import Bag
from xsched.bag.reductions import NO_DEFAULT, Item, stable_hash
from xsched.graph.delayed import Delayed, delayed
from xsched.graph.spec import Task
from xsched.keys import key_split

NPARTS = [1, 3, 7]


def _data(seed: int = 0, n: int = 200) -> list[int]:
    rng = random.Random(seed)
    return [rng.randint(-50, 50) for _ in range(n)]


def _words(seed: int = 0, n: int = 300) -> list[str]:
    rng = random.Random(seed)
    vocab = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
    return [rng.choice(vocab) for _ in range(n)]


def _partitions(b: Bag) -> list[list]:
    return [d.compute() for d in b.to_delayed()]


def inc(x):
    return x + 1


def is_even(x):
    return x % 2 == 0


# ---------------------------------------------------------------------- construction


@pytest.mark.parametrize("n", NPARTS)
def test_from_sequence_splits_evenly_and_keeps_order(n):
    data = _data(1, 50)
    b = xb.from_sequence(data, npartitions=n)
    assert b.npartitions == n
    parts = _partitions(b)
    assert [x for p in parts for x in p] == data == b.compute()
    assert max(map(len, parts)) - min(map(len, parts)) <= 1


def test_from_sequence_sizes_defaults_and_short_sequences():
    assert [len(p) for p in _partitions(xb.from_sequence(range(10), partition_size=4))] == [4, 4, 2]
    assert xb.from_sequence(range(1000)).npartitions == 100
    assert xb.from_sequence(range(3), npartitions=10).npartitions == 3
    empty = xb.from_sequence([])
    assert empty.npartitions == 1 and empty.compute() == [] and empty.count().compute() == 0


def test_from_sequence_errors():
    with pytest.raises(ValueError, match="npartitions must be an int >= 1, got 0"):
        xb.from_sequence([1, 2], npartitions=0)
    with pytest.raises(ValueError, match="not both"):
        xb.from_sequence([1, 2], npartitions=1, partition_size=1)
    with pytest.raises(ValueError, match="partition_size must be an int >= 1"):
        xb.from_sequence([1, 2], partition_size=0)


def test_partitions_are_copies_so_mutation_does_not_leak():
    b = xb.from_sequence([[1], [2]], npartitions=1)

    def append(part):
        part.append("x")
        return part

    assert b.map_partitions(append).compute() == [[1], [2], "x"]
    assert b.compute() == [[1], [2]]


def test_range_concat_zip_from_delayed():
    assert xb.range(17, npartitions=4).compute() == list(range(17))
    assert xb.range(17, npartitions=4).npartitions == 4
    assert xb.range(0, npartitions=3).compute() == []
    a, b = xb.from_sequence(range(5), npartitions=2), xb.range(3, npartitions=3)
    c = xb.concat([a, b])
    assert c.npartitions == 5 and c.compute() == [0, 1, 2, 3, 4, 0, 1, 2]
    z = xb.zip(xb.from_sequence("abcd", npartitions=2), xb.range(4, npartitions=2))
    assert z.compute() == list(zip("abcd", range(4)))
    parts = [delayed(list)(range(i)) for i in range(4)]
    fd = xb.from_delayed(parts)
    assert fd.npartitions == 4 and fd.compute() == [0, 0, 1, 0, 1, 2]
    assert xb.from_delayed(delayed(tuple)("ab")).compute() == ["a", "b"]


def test_construction_errors_name_the_problem():
    with pytest.raises(TypeError, match="from_delayed takes Delayed values .* got int at position 1"):
        xb.from_delayed([delayed(list)([1]), 5])
    with pytest.raises(ValueError, match="at least one partition"):
        xb.from_delayed([])
    with pytest.raises(TypeError, match="non-empty list of Bags"):
        xb.concat([])
    with pytest.raises(ValueError, match="3 partitions and .* 2; repartition"):
        xb.zip(xb.range(6, npartitions=3), xb.range(6, npartitions=2))


# ---------------------------------------------------------------------- element-wise


@pytest.mark.parametrize("n", NPARTS)
def test_elementwise_operations_match_python(n):
    data = _data(2)
    b = xb.from_sequence(data, npartitions=n)
    assert b.map(inc).compute() == [x + 1 for x in data]
    assert b.filter(is_even).compute() == [x for x in data if x % 2 == 0]
    assert b.map(lambda x, k, m=1: x * k + m, 3, m=2).compute() == [x * 3 + 2 for x in data]
    assert b.map_partitions(sorted).compute() == [x for p in _partitions(b) for x in sorted(p)]
    assert b.map_partitions(lambda p: (x * 2 for x in p)).compute() == [x * 2 for x in data]
    pairs = b.map(lambda x: (x, -x))
    assert pairs.starmap(operator.add).compute() == [0] * len(data)
    assert pairs.starmap(lambda a, b, c: a + c, c=10).compute() == [x + 10 for x in data]
    assert pairs.pluck(1).compute() == [-x for x in data]
    assert pairs.pluck([1, 0]).compute() == [(-x, x) for x in data]
    assert b.map(lambda x: [x] * (x % 3)).flatten().compute() == [x for x in data for _ in range(x % 3)]


def test_pluck_with_default():
    recs = [{"a": 1, "b": 2}, {"a": 3}, {"b": 4}]
    b = xb.from_sequence(recs, npartitions=2)
    assert b.pluck("b", default=None).compute() == [2, None, 4]
    assert b.pluck(["a", "b"], default=0).compute() == [(1, 2), (3, 0), (0, 4)]
    with pytest.raises(KeyError):
        b.pluck("a").compute()


@pytest.mark.parametrize("n", NPARTS)
def test_map_zips_bags_and_passes_items_and_delayed_whole(n):
    data, other = _data(3), _data(4)
    a, b = xb.from_sequence(data, npartitions=n), xb.from_sequence(other, npartitions=n)
    assert xb.map(operator.sub, a, b).compute() == [x - y for x, y in zip(data, other)]
    assert a.map(lambda x, y, z: x + y * z, b, z=a).compute() == [x + y * x for x, y in zip(data, other)]
    assert a.map(lambda x, y: x + y, y=b).compute() == [x + y for x, y in zip(data, other)]
    mean = a.mean()
    assert a.map(lambda x, m: x - m, mean).compute() == pytest.approx([x - statistics.mean(data) for x in data])
    assert a.map(lambda x, m: x * m, delayed(max)(2, 5)).compute() == [x * 5 for x in data]
    assert a.map_partitions(lambda p, q, k: [len(p) + len(q) + k], b, k=mean.apply(int)).compute() == [
        len(p) + len(q) + int(statistics.mean(data)) for p, q in zip(_partitions(a), _partitions(b))]


def test_map_errors():
    a, b = xb.range(10, npartitions=2), xb.range(10, npartitions=5)
    with pytest.raises(ValueError, match=r"zipped partition by partition, but range-\S+ has 2 partitions "
                                         r"and range-\S+ has 5; repartition one first"):
        a.map(operator.add, b)
    with pytest.raises(TypeError, match="needs at least one Bag"):
        xb.map(inc, 1)
    with pytest.raises(TypeError, match="filter: expected a function, got 3"):
        a.filter(3)
    uneven = xb.from_sequence(range(3), npartitions=2)
    with pytest.raises(ValueError, match=r"different lengths \[1, 2\]"):
        xb.map(operator.add, uneven, xb.from_sequence(range(4), npartitions=2)).compute()
    # one value per partition (dask's `map_partitions(len)` idiom) is a partition of one element
    assert a.map_partitions(sum).compute() == [sum(p.compute()) for p in a.to_delayed()]
    assert a.map_partitions(lambda p: "ab").compute() == ["ab"] * a.npartitions
    assert a.map_partitions(lambda p: {"n": len(p)}).pluck("n").sum().compute() == a.count().compute()


# ---------------------------------------------------------------------- reductions


@pytest.mark.parametrize("n", NPARTS)
@pytest.mark.parametrize("split_every", [None, 2, False])
def test_reductions_match_python(n, split_every):
    data = _data(5)
    b = xb.from_sequence(data, npartitions=n)
    kw = {"split_every": split_every}
    assert b.sum(**kw).compute() == sum(data)
    assert b.count(**kw).compute() == len(data)
    assert b.min(**kw).compute() == min(data)
    assert b.max(**kw).compute() == max(data)
    assert b.any(**kw).compute() is any(data)
    assert b.all(**kw).compute() is all(data)
    assert b.map(bool).all(**kw).compute() is all(data)
    assert b.mean(**kw).compute() == pytest.approx(statistics.mean(data))
    assert b.var(**kw).compute() == pytest.approx(statistics.pvariance(data))
    assert b.var(ddof=1, **kw).compute() == pytest.approx(statistics.variance(data))
    assert b.std(**kw).compute() == pytest.approx(statistics.pstdev(data))
    assert b.std(ddof=1, **kw).compute() == pytest.approx(statistics.stdev(data))
    assert b.reduction(len, sum, **kw).compute() == len(data)
    assert b.fold(operator.add, **kw).compute() == sum(data)
    assert b.fold(max, **kw).compute() == max(data)


def test_variance_keeps_precision_with_a_large_mean():
    data = [1e9 + x for x in _data(6)]
    b = xb.from_sequence(data, npartitions=7)
    assert b.var(split_every=2).compute() == pytest.approx(statistics.pvariance(data), rel=1e-9)


def test_reductions_skip_empty_partitions_and_name_an_empty_bag():
    b = xb.from_sequence(range(40), npartitions=10).filter(lambda x: 25 <= x < 28)  # partition 6 only
    for split_every in (None, 2, 3):
        assert b.min(split_every=split_every).compute() == 25 and b.max(split_every=split_every).compute() == 27
        assert b.fold(operator.add, split_every=split_every).compute() == 78
        assert b.mean(split_every=split_every).compute() == 26
        assert b.var(split_every=split_every).compute() == pytest.approx(2 / 3)
    none = b.filter(lambda x: False)
    with pytest.raises(ValueError, match=r"min\(\) of an empty bag"):
        none.min().compute()
    with pytest.raises(ValueError, match=r"mean\(\) of an empty bag"):
        none.mean().compute()
    with pytest.raises(ValueError, match=r"fold\(\) with no initial= of an empty bag"):
        none.fold(operator.add, split_every=2).compute()
    assert none.fold(operator.add, initial=0).compute() == 0
    assert none.sum().compute() == 0 and none.count().compute() == 0
    with pytest.raises(ValueError, match=r"var\(ddof=1\) needs more than 1 elements; the bag has 1"):
        xb.from_sequence([1]).var(ddof=1).compute()


def test_fold_with_initial_and_combine():
    data = _data(7)
    b = xb.from_sequence(data, npartitions=6)
    # count the elements: each partition folds from 0, the partial counts are added
    assert b.fold(lambda acc, x: acc + 1, operator.add, initial=0, split_every=2).compute() == len(data)
    sets = b.fold(lambda acc, x: acc | {x % 5}, operator.or_, initial=frozenset())
    assert sets.compute() == {x % 5 for x in data}
    assert b.fold(operator.add, out_type=Bag).compute() == [sum(data)]


def test_custom_reduction_with_combine_and_out_type():
    data = _data(8)
    b = xb.from_sequence(data, npartitions=7)
    top3 = b.reduction(lambda p: sorted(p)[-3:], lambda ps: sorted(x for p in ps for x in p)[-3:],
                       split_every=2, out_type=Bag)
    assert isinstance(top3, Bag) and top3.npartitions == 1
    assert top3.compute() == sorted(data)[-3:]
    with pytest.raises(ValueError, match="split_every must be an int >= 2"):
        b.sum(split_every=1)
    with pytest.raises(TypeError, match=r"out_type=Bag\): sum returned a int; .* returns the elements"):
        b.reduction(sum, sum, out_type=Bag).compute()
    with pytest.raises(TypeError, match="out_type must be xsched.bag.Item or xsched.bag.Bag"):
        b.reduction(sum, sum, out_type=list)


@pytest.mark.parametrize("n", NPARTS)
def test_frequencies_topk_distinct_match_python(n):
    words, data = _words(9), _data(10)
    w, b = xb.from_sequence(words, npartitions=n), xb.from_sequence(data, npartitions=n)
    assert sorted(w.frequencies(split_every=2).compute()) == sorted(collections.Counter(words).items())
    assert w.frequencies(sort=True).compute() == collections.Counter(words).most_common()
    assert b.topk(5).compute() == sorted(data, reverse=True)[:5]
    assert b.topk(5, key=abs, split_every=2).compute() == sorted(data, key=abs, reverse=True)[:5]
    assert b.topk(0).compute() == []
    pairs = b.map(lambda x: (x % 7, x))
    assert pairs.topk(3, key=0).compute() == sorted(pairs.compute(), key=lambda p: p[0], reverse=True)[:3]
    assert w.distinct().compute() == list(dict.fromkeys(words))
    firsts = {}
    for x in data:
        firsts.setdefault(x % 10, x)
    assert b.distinct(key=lambda x: x % 10, split_every=2).compute() == list(firsts.values())


@pytest.mark.parametrize("n", NPARTS)
def test_foldby_matches_python(n):
    words = _words(11)
    b = xb.from_sequence(words, npartitions=n)
    expected = collections.Counter(words)
    got = b.foldby(lambda w: w, lambda total, w: total + 1, 0, operator.add, 0, split_every=2).compute()
    assert dict(got) == dict(expected) and len(got) == len(expected)
    lengths = b.foldby(len, lambda acc, w: acc | {w}, frozenset(), operator.or_, frozenset()).compute()
    assert dict(lengths) == {k: frozenset(w for w in words if len(w) == k) for k in {len(w) for w in words}}
    recs = b.map(lambda w: {"w": w, "n": len(w)})
    assert dict(recs.foldby("w", lambda acc, r: acc + r["n"], 0, operator.add).compute()) == {
        w: c * len(w) for w, c in expected.items()}
    # without initial: the first element of each group starts it
    assert dict(b.foldby(len, max).compute()) == {k: max(w for w in words if len(w) == k)
                                                 for k in {len(w) for w in words}}


@pytest.mark.parametrize("n_in,n_out", [(1, 1), (3, 3), (5, 2), (2, 7)])
def test_groupby_matches_python(n_in, n_out):
    words = _words(12)
    b = xb.from_sequence(words, npartitions=n_in)
    g = b.groupby(len, npartitions=n_out)
    assert g.npartitions == n_out
    expected = collections.defaultdict(list)
    for w in words:
        expected[len(w)].append(w)
    got = g.compute()
    assert len(got) == len(expected) and dict(got) == dict(expected)  # whole groups, in order
    by_first = b.map(lambda w: (w[0], w)).groupby(0).compute()
    assert {k: [p[1] for p in v] for k, v in by_first} == {
        k: [w for w in words if w[0] == k] for k in {w[0] for w in words}}


def test_groupby_with_many_partitions_exchanges_in_rounds():
    b = xb.from_sequence(range(3000), npartitions=120)
    g = b.groupby(lambda x: x % 37, npartitions=100)  # 12,000 pieces: two rounds of 10 x 10
    assert any(key_split(k) == "pick1-groupby-lambda" for k in g.__xsched_graph__())
    assert dict(g.compute()) == {k: list(range(k, 3000, 37)) for k in range(37)}


def test_groupby_graph_goes_through_the_shuffle():
    b = xb.from_sequence(_words(13), npartitions=3)

    def initial(w):
        return w[0]

    g = b.groupby(initial, npartitions=4)
    layers = set(g._graph.layers) - set(b._graph.layers)
    assert {key_split(name + "-0") for name in layers} == {
        "split-groupby-initial", "pick-groupby-initial", "combine-groupby-initial"}
    assert g.name.startswith("combine-groupby-initial-")
    assert len(g.__xsched_graph__()) == 3 + 3 + 3 * 4 + 4
    assert g.groupby(initial).npartitions == 4
    with pytest.raises(ValueError, match="groupby: npartitions must be an int >= 1, got 0"):
        b.groupby(initial, npartitions=0)
    for method, prefix in (("tasks", "combine-"), ("p2p", "p2p-"), ("disk", "p2p-")):  # (dask's names)
        assert b.groupby(initial, npartitions=4, shuffle=method).name.startswith(prefix)
    assert sorted(b.groupby(initial, npartitions=4, shuffle="tasks").compute()) == sorted(g.compute())
    with pytest.raises(ValueError, match="shuffle must be 'tasks', 'p2p'"):
        b.groupby(initial, shuffle="partd")


def test_stable_hash_is_equal_in_other_processes():
    keys = ["alpha", b"beta", ("gamma", 3), 4.5, None, frozenset({"a", "b"})]
    here = [stable_hash(k) for k in keys]
    code = ("import sys; from xsched.bag.reductions import stable_hash; "
            "print([stable_hash(k) for k in ['alpha', b'beta', ('gamma', 3), 4.5, None, frozenset({'a', 'b'})]])")
    for seed in ("1", "2"):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONHASHSEED": seed})
        assert out.stdout.strip() == str(here)
    assert stable_hash(1) == stable_hash(1.0) == stable_hash(True)
    assert stable_hash(("a", 1)) == stable_hash(("a", 1.0)) != stable_hash(("a", 2))
    import datetime

    assert stable_hash(datetime.date(2024, 1, 2)) == stable_hash(datetime.date(2024, 1, 2))


# ---------------------------------------------------------------------- take and repartition


def test_take():
    b = xb.from_sequence(range(10), npartitions=3)  # 4, 3, 3
    assert b.take(2) == (0, 1)
    assert b.take(6, npartitions=2) == (0, 1, 2, 3, 4, 5)
    assert b.take(10, npartitions=-1) == tuple(range(10))
    lazy = b.take(3, compute=False)
    assert isinstance(lazy, Bag) and lazy.npartitions == 1 and lazy.compute() == [0, 1, 2]
    with pytest.warns(UserWarning, match=r"take\(5\) found only 4 elements in the first 1 partition\(s\) of 3"):
        assert b.take(5) == (0, 1, 2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert b.take(5, warn=False) == (0, 1, 2, 3)
    with pytest.raises(ValueError, match="take: npartitions=4 but the bag has 3 partitions"):
        b.take(1, npartitions=4)
    with pytest.raises(ValueError, match="take: k must be an int >= 0"):
        b.take(-1)


@pytest.mark.parametrize("n_in,n_out", [(7, 3), (3, 7), (4, 4), (5, 1), (1, 5), (2, 9)])
def test_repartition_keeps_elements_in_order(n_in, n_out):
    data = _data(14, 60)
    b = xb.from_sequence(data, npartitions=n_in).repartition(n_out)
    assert b.npartitions == n_out and b.compute() == data
    sizes = [len(p) for p in _partitions(b)]
    assert sum(sizes) == len(data) and min(sizes) > 0
    with pytest.raises(ValueError, match="repartition: npartitions must be an int >= 1, got 0"):
        b.repartition(0)


def test_repartition_by_size_cuts_the_large_and_joins_the_small():
    from xsched.sizeof import sizeof

    data = ["x" * 1000] * 12 + ["y"] * 30 + ["z" * 5000]  # one large partition, small ones, a huge element
    b = xb.from_sequence(data, partition_size=4)
    out = b.repartition(partition_size="4 KiB")
    assert out.compute() == data
    sizes = [sum(sizeof(x) for x in part) for part in _partitions(out)]
    assert max(sizes[:-1]) <= 4096 + sizeof("x" * 1000)  # even counts per piece: at most one element over
    assert len(sizes) < b.npartitions and all(len(p) for p in _partitions(out))
    assert _partitions(out)[-1][-1] == "z" * 5000  # an element larger than the size: a partition of its own
    with pytest.raises(ValueError, match="give npartitions= or partition_size="):
        b.repartition(3, partition_size="1 KiB")
    with pytest.raises(ValueError, match="partition_size must be a positive number of bytes"):
        b.repartition(partition_size="lots")


# ---------------------------------------------------------------------- collection protocol


def test_keys_names_and_graph_shape():
    b = xb.from_sequence(range(8), npartitions=4)
    m = b.map(inc)
    assert m.name.startswith("map-inc-") and key_split(m.__xsched_keys__()[0]) == "map-inc"
    assert m.__xsched_keys__() == [f"{m.name}-{i}" for i in range(4)]
    assert len(m.__xsched_graph__()) == 8 and len(m.filter(is_even).__xsched_graph__()) == 12
    assert key_split(m.filter(is_even).name + "-0") == "filter-is_even"
    assert key_split(m.map_partitions(sorted).name + "-0") == "map-partitions-sorted"
    # deterministic: the same expression twice gives the same keys
    assert xb.from_sequence(range(8), npartitions=4).map(inc).name == m.name
    assert b.map(lambda x: x).name != m.name
    # a tree reduction: 20 partials, merged 4 at a time: 5, then 2, then the aggregate
    s = xb.range(100, npartitions=20).sum(split_every=4)
    groups = collections.Counter(key_split(k) for k in s.__xsched_graph__())
    assert groups == {"range": 20, "sum-part": 20, "sum-combine": 7, "sum-aggregate": 1}
    assert s.key.startswith("sum-aggregate-") and s.compute() == sum(range(100))


def test_repr_and_html():
    b = xb.from_sequence(range(8), npartitions=4).map(inc)
    assert repr(b).startswith("xsched.Bag<map-inc-") and repr(b).endswith(", npartitions=4>")
    html = b._repr_html_()
    assert "npartitions" in html and "<td style='text-align:left'><code>8</code></td>" in html
    item = b.sum()
    assert repr(item) == f"xsched.Item<{item.key}>" and "tasks" in item._repr_html_()


def test_to_delayed_persist_and_items():
    b = xb.from_sequence(range(6), npartitions=3).map(inc)
    parts = b.to_delayed()
    assert all(isinstance(p, Delayed) for p in parts) and [p.compute() for p in parts] == [[1, 2], [3, 4], [5, 6]]
    assert xsched.compute(*parts) == ([1, 2], [3, 4], [5, 6])
    p = b.persist()
    assert p.name == b.name and len(p.__xsched_graph__()) == 3 and p.compute() == [1, 2, 3, 4, 5, 6]
    assert p.map(inc).compute() == [2, 3, 4, 5, 6, 7]
    total = b.sum()
    assert isinstance(total, Item) and total.compute() == 21
    assert (total.to_delayed() + 1).compute() == 22
    assert total.persist().compute() == 21 and len(total.persist().__xsched_graph__()) == 1
    assert total.apply(lambda v: v * 2).compute() == 42
    assert xsched.compute(b, total) == ([1, 2, 3, 4, 5, 6], 21)
    assert int(total) == 21 and float(b.mean()) == 3.5 and complex(total) == 21 + 0j
    assert bool(b.any()) and not bool(b.filter(lambda v: v > 9).any())


def test_graph_pickles_and_markers_keep_identity():
    b = xb.from_sequence(["a", "bb"], npartitions=2).pluck(5, default=None).map(str)
    graph = cloudpickle.loads(cloudpickle.dumps(b.__xsched_graph__()))
    from xsched.graph.local import get

    assert get(graph, b.__xsched_keys__()) == [["None"], ["None"]]
    assert pickle.loads(pickle.dumps(NO_DEFAULT)) is NO_DEFAULT


def test_annotations_are_carried_by_every_new_task():
    b = xb.from_sequence(range(12), npartitions=3)
    with xsched.annotate(priority=5, resources={"GPU": 1}):
        m = b.map(inc)
        g = m.groupby(is_even)
        s = m.sum(split_every=2)
        t = xb.read_text(__file__)
    new = {k: v for k, v in m.__xsched_graph__().items() if k.startswith(m.name)}
    assert len(new) == 3
    for task in new.values():
        assert task.annotations == {"priority": 5, "resources": {"GPU": 1}}
    dicts = [t_.annotations["resources"] for t_ in new.values()]
    assert dicts[0] is not dicts[1]  # a copy per task
    for coll in (g, s, t):
        graph = coll.__xsched_graph__()
        fresh = [v for k, v in graph.items() if k not in b.__xsched_graph__()]
        assert fresh and all(isinstance(v, Task) and v.annotations.get("priority") == 5 for v in fresh)
    assert all(v.annotations == {} for v in b.__xsched_graph__().values())
    assert m.compute() == list(range(1, 13))


# ---------------------------------------------------------------------- text files


@pytest.fixture
def text_files(tmp_path):
    rng = random.Random(15)
    lines = {}
    for i in range(4):
        content = [f"{rng.choice(['info', 'warn', 'error'])} {rng.randint(0, 9)} {'x' * rng.randint(0, 30)}\n"
                   for _ in range(rng.randint(0, 40))]
        (tmp_path / f"log-{i}.txt").write_text("".join(content))
        lines[str(tmp_path / f"log-{i}.txt")] = content
    (tmp_path / "other.csv").write_text("not,read\n")
    return tmp_path, lines


def test_read_text_globs_lists_and_include_path(text_files):
    tmp, lines = text_files
    everything = [line for path in sorted(lines) for line in lines[path]]
    b = xb.read_text(str(tmp / "log-*.txt"))
    assert b.npartitions == 4 and b.compute() == everything
    assert key_split(b.name + "-0") == "read-text"
    assert xb.read_text(sorted(lines)[:2]).compute() == lines[sorted(lines)[0]] + lines[sorted(lines)[1]]
    assert xb.read_text(tmp / "log-0.txt").compute() == lines[str(tmp / "log-0.txt")]
    with_path = xb.read_text(str(tmp / "log-*.txt"), include_path=True).compute()
    assert with_path == [(line, path) for path in sorted(lines) for line in lines[path]]


@pytest.mark.parametrize("blocksize", [1, 7, 100, "1 kB", 10**6])
def test_read_text_blocks_split_at_line_boundaries(text_files, blocksize):
    tmp, lines = text_files
    whole = xb.read_text(str(tmp / "log-*.txt"))
    blocks = xb.read_text(str(tmp / "log-*.txt"), blocksize=blocksize)
    assert blocks.compute() == whole.compute()
    sizes = [os.path.getsize(p) for p in sorted(lines)]
    bs = 1000 if blocksize == "1 kB" else blocksize
    assert blocks.npartitions == sum(max(1, math.ceil(s / bs)) for s in sizes)


def test_read_text_line_ends_and_encodings(tmp_path):
    crlf = tmp_path / "dos.txt"
    crlf.write_bytes(b"one\r\ntwo\r\nthree")
    assert xb.read_text(str(crlf)).compute() == ["one\n", "two\n", "three"]
    assert xb.read_text(str(crlf), blocksize=4).compute() == ["one\n", "two\n", "three"]
    latin = tmp_path / "latin.txt"
    latin.write_bytes("caf\xe9\nna\xefve\n".encode("latin-1"))
    assert xb.read_text(str(latin), encoding="latin-1", blocksize=3).compute() == ["caf\xe9\n", "na\xefve\n"]
    wide = tmp_path / "wide.txt"
    wide.write_text("a\nb\n", encoding="utf-16")
    assert xb.read_text(str(wide), encoding="utf-16").compute() == ["a\n", "b\n"]
    with pytest.raises(ValueError, match="ASCII-compatible encoding"):
        xb.read_text(str(wide), encoding="utf-16", blocksize=10)
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    assert xb.read_text(str(empty), blocksize=10).compute() == []


def test_read_text_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"read_text: no file matches '.*nothing-\*.txt' \(searched "):
        xb.read_text(str(tmp_path / "nothing-*.txt"))
    with pytest.raises(FileNotFoundError, match="the directory .* holds no data files"):
        xb.read_text(str(tmp_path))
    with pytest.raises(ValueError, match="list of paths is empty"):
        xb.read_text([])
    with pytest.raises(ValueError, match="blocksize must be a positive number of bytes"):
        xb.read_text(__file__, blocksize=0)
    with pytest.raises(LookupError):
        xb.read_text(__file__, encoding="no-such-codec")


def test_read_text_takes_a_directory_and_local_files_beside_urls(tmp_path):
    fsspec = pytest.importorskip("fsspec")
    (tmp_path / "b.txt").write_text("2\n")
    (tmp_path / "a.txt").write_text("1\n")
    (tmp_path / ".hidden").write_text("no\n")
    assert xb.read_text(str(tmp_path)).compute() == ["1\n", "2\n"]
    with fsspec.open("memory://bag-mixed/c.txt", "w") as f:
        f.write("3\n")
    got = xb.read_text([str(tmp_path / "a.txt"), "memory://bag-mixed/c.txt"], include_path=True).compute()
    assert got == [("1\n", str(tmp_path / "a.txt")), ("3\n", "memory:///bag-mixed/c.txt")]


def test_read_text_keys_follow_the_files(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("1\n")
    first = xb.read_text(str(path))
    assert xb.read_text(str(path)).name == first.name
    path.write_text("1\n2\n")
    os.utime(path, ns=(0, 10**18))
    assert xb.read_text(str(path)).name != first.name


def test_read_text_through_fsspec_memory():
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    for i in range(3):
        fs.pipe(f"/bagtest/part-{i}.txt", f"a{i}\nb{i}\n".encode())
    b = xb.read_text("memory://bagtest/part-*.txt")
    assert b.npartitions == 3 and b.compute() == ["a0\n", "b0\n", "a1\n", "b1\n", "a2\n", "b2\n"]
    assert xb.read_text("memory://bagtest/part-*.txt", blocksize=3).compute() == b.compute()
    xb.from_sequence(["x", "y"], npartitions=2).to_textfiles("memory://bagout/*.txt")
    assert fs.cat("/bagout/0.txt") == b"x\n" and fs.cat("/bagout/1.txt") == b"y\n"
    fs.rm("/bagtest", recursive=True)
    fs.rm("/bagout", recursive=True)


def test_to_textfiles_round_trip(tmp_path):
    words = _words(16, 50)
    b = xb.from_sequence(words, npartitions=12)
    written = b.to_textfiles(str(tmp_path / "out" / "words-*.txt"))
    names = sorted(os.listdir(tmp_path / "out"))
    assert names == [f"words-{i:02d}.txt" for i in range(12)]
    assert written == [str(tmp_path / "out" / name) for name in names]  # (the paths, as dask returns them)
    back = xb.read_text(str(tmp_path / "out" / "words-*.txt"))
    assert back.npartitions == 12 and back.map(str.rstrip).compute() == words
    # lines that already end with "\n" are written as they are: read_text's output round-trips
    back.to_textfiles(str(tmp_path / "again"))
    assert sorted(os.listdir(tmp_path / "again"))[:2] == ["00.part", "01.part"]
    assert xb.read_text(str(tmp_path / "again" / "*.part")).compute() == back.compute()
    xb.to_textfiles(b.repartition(2), str(tmp_path / "named-*.txt"), name_function=lambda i: f"p{i}")
    assert (tmp_path / "named-p1.txt").exists()


LINE_ENDS = ["\n", "\r", "\r\n", "", None]


@settings(max_examples=60, deadline=None)
@given(text=st.text(alphabet="a;|\n\r", max_size=40),
       delimiter=st.sampled_from(LINE_ENDS + [";", "|;", "a|a;"]), blocksize=st.integers(1, 12))
def test_read_text_linedelimiter_as_open_or_split_there(tmp_path_factory, text, delimiter, blocksize):
    """Every linedelimiter gives what ``open(newline=...)`` gives for the line ends, or the
    pieces ended by it for any other string; blocks of any size change nothing."""
    path = tmp_path_factory.mktemp("delim") / "t.txt"
    path.write_bytes(text.encode())
    if delimiter in LINE_ENDS:
        with open(path, newline=delimiter) as f:
            expected = f.readlines()
    else:
        parts = text.split(delimiter)
        expected = [p + delimiter for p in parts[:-1]] + [p for p in parts[-1:] if p]
    assert xb.read_text(str(path), linedelimiter=delimiter).compute() == expected
    assert xb.read_text(str(path), linedelimiter=delimiter, blocksize=blocksize).compute() == expected


def test_read_text_files_per_partition_collection_and_bad_arguments(tmp_path):
    for i in range(5):
        (tmp_path / f"f{i}.txt").write_text(f"{i}a\n{i}b\n")
    b = xb.read_text(str(tmp_path / "*.txt"), files_per_partition=2, include_path=True)
    assert b.npartitions == 3
    assert [len(p) for p in _partitions(b)] == [4, 4, 2]
    assert b.compute()[:3] == [("0a\n", str(tmp_path / "f0.txt")), ("0b\n", str(tmp_path / "f0.txt")),
                               ("1a\n", str(tmp_path / "f1.txt"))]
    parts = xb.read_text(str(tmp_path / "*.txt"), collection=False)
    assert len(parts) == 5 and all(isinstance(p, Delayed) for p in parts)
    assert parts[4].compute() == ["4a\n", "4b\n"]
    with pytest.raises(ValueError, match="blocksize= .* or files_per_partition= .*not both"):
        xb.read_text(str(tmp_path / "*.txt"), blocksize=10, files_per_partition=2)
    with pytest.raises(ValueError, match="files_per_partition must be a positive int, got 0"):
        xb.read_text(str(tmp_path / "*.txt"), files_per_partition=0)
    with pytest.raises(ValueError, match=r"linedelimiter='\|\|', which can overlap itself \(in '\|\|\|'\)"):
        xb.read_text(str(tmp_path / "*.txt"), linedelimiter="||", blocksize=10)
    assert xb.read_text(str(tmp_path / "f0.txt"), linedelimiter="a\n").compute() == ["0a\n", "0b\n"]
    with pytest.raises(ValueError, match="linedelimiter must be a string"):
        xb.read_text(str(tmp_path / "*.txt"), linedelimiter=b"\n")


def test_to_textfiles_last_endline_and_storage_options(tmp_path):
    b = xb.from_sequence(["a", "b\n", "c"], npartitions=1)
    b.to_textfiles(str(tmp_path / "open-*.txt"), last_endline=False)
    assert (tmp_path / "open-0.txt").read_text() == "a\nb\nc"
    xb.from_sequence(["a", "b\n"], npartitions=1).to_textfiles(str(tmp_path / "kept-*.txt"), last_endline=False)
    assert (tmp_path / "kept-0.txt").read_text() == "a\nb\n"  # (an element's own line end is kept)
    xb.from_sequence([], npartitions=1).to_textfiles(str(tmp_path / "empty-*.txt"), last_endline=False)
    assert (tmp_path / "empty-0.txt").read_text() == ""
    pytest.importorskip("fsspec")
    # the options reach the filesystem: a local one that makes missing folders
    b.to_textfiles(f"file://{tmp_path}/deep/er/*.txt", storage_options={"auto_mkdir": True})
    assert (tmp_path / "deep" / "er" / "0.txt").read_text() == "a\nb\nc\n"


def test_to_textfiles_lazy_and_errors(tmp_path):
    b = xb.from_sequence(["a", "b", "c"], npartitions=2)
    paths = [str(tmp_path / "x.txt"), str(tmp_path / "y.txt")]
    writes = b.to_textfiles(paths, compute=False)
    assert len(writes) == 2 and all(isinstance(w, Delayed) for w in writes)
    assert not os.path.exists(paths[0])
    assert xsched.compute(*writes) == tuple(paths)
    assert open(paths[0]).read() == "a\nb\n" and open(paths[1]).read() == "c\n"
    with pytest.raises(ValueError, match="3 paths given for 2 partitions"):
        b.to_textfiles(paths + paths[:1])
    with pytest.raises(ValueError, match="more than one"):
        b.to_textfiles(str(tmp_path / "*-*.txt"))
    with pytest.raises(TypeError, match=r"to_textfiles writes str elements, got int 1 .*map\(str\)"):
        xb.from_sequence([1, 2]).to_textfiles(str(tmp_path / "n-*.txt"))


# ---------------------------------------------------------------------- to_dataframe


def test_to_dataframe():
    pytest.importorskip("xsched.dataframe")
    pd = pytest.importorskip("pandas")
    recs = [{"x": i, "y": f"w{i % 3}"} for i in range(20)]
    b = xb.from_sequence(recs, npartitions=4)
    df = b.to_dataframe()
    assert df.npartitions == 4
    pd.testing.assert_frame_equal(df.compute().reset_index(drop=True), pd.DataFrame(recs))
    tuples = b.map(lambda r: (r["x"], r["y"])).to_dataframe(columns=["a", "b"])
    assert list(tuples.compute().columns) == ["a", "b"]
    meta = pd.DataFrame({"x": pd.Series(dtype="float64"), "y": pd.Series(dtype="object")})
    assert b.to_dataframe(meta=meta).compute()["x"].dtype == "float64"
    with pytest.raises(ValueError, match="first partition is empty"):
        xb.from_sequence([], npartitions=1).to_dataframe()
    with pytest.raises(ValueError, match="differ from meta's columns"):
        b.to_dataframe(meta=meta, columns=["z"])


# ---------------------------------------------------------------------- a small pipeline


def test_word_count_pipeline_equals_python():
    rng = random.Random(17)
    docs = [" ".join(rng.choice(_words(18, 50)) for _ in range(rng.randint(0, 20))) for _ in range(40)]
    b = xb.from_sequence(docs, npartitions=6)
    counts = b.map(str.split).flatten().frequencies(sort=True)
    expected = collections.Counter(itertools.chain.from_iterable(d.split() for d in docs)).most_common()
    assert counts.compute() == expected
    assert counts.topk(2, key=1).compute() == sorted(expected, key=lambda kv: kv[1], reverse=True)[:2]
    longest = b.map(len).max().compute()
    assert longest == max(map(len, docs))
    via_fold = b.map(str.split).flatten().foldby(functools.partial(len), lambda a, w: a + 1, 0, operator.add, 0)
    assert dict(via_fold.compute()) == dict(collections.Counter(len(w) for d in docs for w in d.split()))


def test_a_bag_iterates_over_its_computed_elements():
    b = xb.from_sequence(["a", "b", "c", "a"], npartitions=3)
    assert list(b) == ["a", "b", "c", "a"]
    assert dict(b.frequencies()) == {"a": 2, "b": 1, "c": 1}
    assert sorted(b.distinct()) == ["a", "b", "c"]
    assert [x for x in b.map(str.upper) if x != "B"] == ["A", "C", "A"]
