"""A user's report on the client and graph layer, compared with dask.distributed: the pure
parts (no scheduler or worker process; ``.compute()`` runs in this process).

Sets and frozensets are traversed as lists are (values in, a set out); dask's
``dask_key_name=`` names a delayed call's key; keys and ``workers=`` are checked where they
are given, with errors that say what is wrong; two messages read as English.
"""

from __future__ import annotations

import pytest

import xsched
from xsched.client.future import Future
from xsched.client.transfer import _pack_results
from xsched.errors import KilledWorker
from xsched.graph.delayed import delayed
from xsched.graph.local import get
from xsched.graph.spec import Ref, Task
from xsched.protocol.schemas import MAX_KEY
from xsched.protocol.update_graph import check_key, futures_to_refs, worker_list


def inc(x):
    return x + 1


# ---------------------------------------------------------------- 1. sets and frozensets


@pytest.mark.parametrize("kind", [set, frozenset])
def test_delayed_call_takes_a_set_holding_delayed(kind):
    x = delayed(inc)(2)
    expected = sorted(kind({3, 7}))
    assert delayed(sorted)(kind({x, 7})).compute() == expected  # (fused: x's task inlined)
    assert delayed(sorted)(kind({x, 7})).compute(optimize_graph=False) == expected
    assert delayed(sorted, pure=True)(kind({x, 7})).compute() == expected


@pytest.mark.parametrize("kind", [set, frozenset])
def test_delayed_of_a_set_holding_delayed_is_that_set(kind):
    x = delayed(inc)(2)
    out = delayed(kind({x, 7})).compute()
    assert type(out) is kind and out == kind({3, 7})


def test_pure_call_on_a_set_of_delayed_has_one_key():
    x, y = delayed(inc)(1), delayed(inc)(2)
    assert delayed(sorted, pure=True)({x, y, 3}).key == delayed(sorted, pure=True)({3, y, x}).key


def test_compute_finds_collections_in_a_frozenset():
    x = delayed(inc)(2)
    assert xsched.compute(frozenset({x, 7})) == (frozenset({3, 7}),)
    assert xsched.compute({x, 7}) == ({3, 7},)


def test_fusing_a_hand_written_graph_with_a_set_of_refs():
    graph = {"a": Task(int, ("3",)), "b": Task(sorted, ({Ref("a"), 7},))}
    assert get(graph, ["b"], optimize=True) == [sorted({3, 7})]


class _Future:  # a stand-in for the client's Future: what futures_to_refs reads
    def __init__(self, key):
        self.key = key


@pytest.mark.parametrize("kind", [set, frozenset])
def test_submit_arguments_in_sets_become_their_results(kind):
    held: list = []
    arg = futures_to_refs(kind({_Future("a"), _Future("b")}), held, _Future)
    assert sorted(f.key for f in held) == ["a", "b"]
    out = Task(sorted, (arg,)).run({"a": 1, "b": 2})
    assert out == sorted(kind({1, 2}))
    plain = kind({1, 2})
    assert futures_to_refs(plain, [], _Future) is plain  # (nothing to replace: as given)


def _client_future(key):
    """A client Future bound to no client (what gather's packing reads: its key)."""
    fut = Future.__new__(Future)
    fut.key, fut.client = key, None
    return fut


def test_gather_packs_sets_of_results():
    futures = {_client_future("a"), _client_future("b")}
    out = _pack_results([futures], {"a": 1, "b": 2})
    assert out == [{1, 2}] and type(out[0]) is set


# ---------------------------------------------------------------- 2. dask's keywords


def test_dask_key_name_names_the_key():
    def add(a, b):
        return a + b

    d = delayed(add)(1, 2, dask_key_name="k")
    assert d.key == "k" and d.compute() == 3
    assert delayed(add)(1, 2, xsched_key_name="k2").key == "k2"
    method = delayed([3, 1, 2]).index(1, dask_key_name="where-1")
    assert method.key == "where-1" and method.compute() == [3, 1, 2].index(1)
    assert delayed(add, name="n")(1, 2, dask_key_name="n").key == "n"
    with pytest.raises(ValueError, match="two keys for one call"):
        delayed(add)(1, 2, dask_key_name="a", xsched_key_name="b")


# ---------------------------------------------------------------- 3. errors where given


def test_key_must_be_a_string():
    assert check_key("x-1") == "x-1"
    with pytest.raises(TypeError, match=r"key \('x', 1\) is a tuple: keys are strings here .*'x-1'"):
        check_key(("x", 1))
    with pytest.raises(TypeError, match=r"key 5 is an int: keys are strings"):
        check_key(5)


def test_key_too_long_says_its_length_and_the_limit():
    with pytest.raises(ValueError, match=rf"1,000,000 characters long: keys are at most {MAX_KEY:,} characters"):
        check_key("k" * 1_000_000)
    assert check_key("k" * MAX_KEY) == "k" * MAX_KEY


def test_workers_takes_a_string_or_a_list():
    assert worker_list("tcp://127.0.0.1:1") == ["tcp://127.0.0.1:1"]
    assert worker_list(["a", 0]) == ["a", 0] and worker_list({"b", "a"}) == ["a", "b"]
    assert worker_list(None) is None
    with pytest.raises(TypeError, match=r"not an int \(5\); for the worker named 5: workers=\[5\]"):
        worker_list(5)
    with pytest.raises(TypeError, match=r"not a float \(1.5\) among them"):
        worker_list(["a", 1.5])
    with pytest.raises(TypeError, match=r"not a dict"):
        worker_list({"a": 1})


# ---------------------------------------------------------------- 4. messages


@pytest.mark.parametrize("allowed, said", [(0, "on a worker that died (tcp://w:1);"),
                                           (2, "on workers that died 3 times (last: tcp://w:1);"),
                                           (None, "on workers that died (last: tcp://w:1);")])
def test_killed_worker_counts_in_english(allowed, said):
    text = str(KilledWorker("t-1", "tcp://w:1", allowed))
    assert said in text and "1 times" not in text
