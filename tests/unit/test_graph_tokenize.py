"""tokenize(): equal values give equal tokens, different values different ones."""

from __future__ import annotations

import functools
import operator
import subprocess
import sys
import threading

import numpy as np
import pytest

from xsched.tokenize import key_split, tokenize

from tests.support.helpers import count_opcodes


def test_token_shape_and_determinism():
    token = tokenize(1, "a", [1.5, None], {"k": (2, 3)})
    assert len(token) == 32 and int(token, 16) >= 0
    assert token == tokenize(1, "a", [1.5, None], {"k": (2, 3)})


@pytest.mark.parametrize(
    "a, b",
    [
        (1, 1.0), (1, True), (1, "1"), (b"x", "x"), ([1, 2], (1, 2)), ((1, 2), ((1, 2),)),
        (None, "None"), ({"a": 1}, {"a": 2}), ({1, 2}, {1, 3}), (0.0, -0.0), ("ab", "a b"),
        (slice(1, 2), slice(1, 3)), ({1}, frozenset({1})), ([{1}], [frozenset({1})]),
    ],
)
def test_different_values_differ(a, b):
    assert tokenize(a) != tokenize(b)


def test_args_and_kwargs_are_distinguished():
    assert tokenize(1, 2) != tokenize((1, 2))
    assert tokenize(1, a=2) != tokenize(1, a=3)
    assert tokenize(1, a=2) == tokenize(1, a=2)
    assert tokenize(1, a=2, b=3) == tokenize(1, b=3, a=2)


def test_dicts_and_sets_are_order_independent():
    assert tokenize({"a": 1, "b": [2]}) == tokenize({"b": [2], "a": 1})
    assert tokenize({3, 1, 2}) == tokenize({2, 3, 1})
    assert tokenize(frozenset("abc")) == tokenize(frozenset("cba"))


def test_numpy_by_content_dtype_and_shape():
    a = np.arange(12)
    assert tokenize(a) == tokenize(a.copy())
    assert tokenize(a) != tokenize(a.astype("float64"))
    assert tokenize(a) != tokenize(a.reshape(3, 4))
    b = a.copy()
    b[5] = -1
    assert tokenize(a) != tokenize(b)
    m = a.reshape(3, 4)
    assert tokenize(m.T) == tokenize(np.ascontiguousarray(m.T))
    assert tokenize(np.float32(1)) != tokenize(np.float64(1))
    assert tokenize(np.array(["a", None], dtype=object)) == tokenize(np.array(["a", None], dtype=object))


def test_large_array_hashes_in_place():
    """A 200 MB array is hashed from its buffer: no copy, no per-element Python work."""
    import tracemalloc

    import xsched.tokenize as tokenize_module

    big = np.ones(25_000_000)  # 200 MB
    tracemalloc.start()
    try:
        token = tokenize(big)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000, f"tokenize of a 200 MB array allocated {peak} bytes at its peak"  # a copy: 200 MB
    assert token == tokenize(np.ones(25_000_000)) and token != tokenize(np.ones(25_000_001))
    # the same Python-level work for a 10x smaller array: nothing runs per element
    small = np.ones(2_500_000)
    assert count_opcodes(tokenize_module, tokenize, big) == count_opcodes(tokenize_module, tokenize, small)


def _module_level(x):
    return x + 1


def test_functions_by_name_and_code():
    assert tokenize(_module_level) == tokenize(_module_level)
    assert tokenize(len) == tokenize(len)
    assert tokenize(len) != tokenize(sum)
    ns1: dict = {}
    ns2: dict = {}
    exec("def f(x):\n    return x + 1", ns1)
    exec("def f(x):\n    return x + 2", ns2)  # a notebook cell redefining f
    assert tokenize(ns1["f"]) != tokenize(ns2["f"])
    assert tokenize(lambda x: x + 1) != tokenize(lambda x: x * 2)


def test_closures_and_partials_include_their_values():
    def make(n):
        return lambda x: x + n

    assert tokenize(make(1)) == tokenize(make(1))
    assert tokenize(make(1)) != tokenize(make(2))
    assert tokenize(functools.partial(operator.add, 1)) == tokenize(functools.partial(operator.add, 1))
    assert tokenize(functools.partial(operator.add, 1)) != tokenize(functools.partial(operator.add, 2))


def test_recursive_closure_does_not_crash():
    def outer():
        def rec(n):
            return rec(n - 1) if n else 0

        return rec

    assert tokenize(outer()) == tokenize(outer())


def test_custom_tokenize_protocol():
    class Handle:
        def __init__(self, name):
            self.name = name
            self.lock = threading.Lock()  # unpicklable: the protocol must be used

        def __xsched_tokenize__(self):
            return ("Handle", self.name)

    assert tokenize(Handle("a")) == tokenize(Handle("a"))
    assert tokenize(Handle("a")) != tokenize(Handle("b"))


def test_picklable_objects_by_state():
    class Point:
        def __init__(self, x):
            self.x = x

    # local classes are not importable: cloudpickle handles them
    assert tokenize(Point(1)) == tokenize(Point(1))
    assert tokenize(Point(1)) != tokenize(Point(2))


def test_unhashable_values_get_random_tokens():
    lock = threading.Lock()
    first, second = tokenize(lock), tokenize(lock)
    assert len(first) == 32 and first != second


def test_reference_cycles():
    a: list = [1]
    a.append(a)
    d: dict = {}
    d["self"] = d
    assert tokenize(a) == tokenize(a)
    assert tokenize(d) == tokenize(d)


def test_tokens_are_equal_across_processes():
    code = (
        "import numpy as np\n"
        "from xsched.tokenize import tokenize\n"
        "from xsched.graph.spec import Ref\n"
        "import operator\n"
        "print(tokenize(1, 'a', {'x': [1.5, None], 'y': {3, 1}}, np.arange(5), len,"
        " operator.add, Ref('k-1'), (slice(1, 2), ...)))\n"
    )
    out = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       env={"PYTHONHASHSEED": seed}).stdout.strip()
        for seed in ("1", "2")
    ]
    import operator as op

    from xsched.graph.spec import Ref

    here = tokenize(1, "a", {"x": [1.5, None], "y": {3, 1}}, np.arange(5), len, op.add,
                    Ref("k-1"), (slice(1, 2), ...))
    assert out == [here, here]


@pytest.mark.parametrize(
    "key, name",
    [
        ("inc-1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d", "inc"),
        ("sum-aggregate-9f8e7d6c5b4a39281706f5e4d3c2b1a0", "sum-aggregate"),
        ("read-3", "read"),
        ("x", "x"),
        ("my-task", "my-task"),
        ("getitem-0123456789abcdef-2", "getitem"),
        ("add", "add"),
    ],
)
def test_key_split(key, name):
    assert key_split(key) == name
