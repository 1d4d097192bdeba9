"""sizeof: numpy views counted once, pandas deep, containers sampled, user types, never raising."""

from __future__ import annotations

import sys
import types

import numpy as np
import pandas as pd
import pytest

import importlib

# `xsched.sizeof` (the attribute) is the dispatcher users call; the module itself lives here
sizeof_module = importlib.import_module("xsched.sizeof")
from xsched.sizeof import Sizeof, sizeof


def overhead(container) -> int:
    return sys.getsizeof(container)


# --- numpy ----------------------------------------------------------------------------------------


def test_array_is_its_nbytes():
    a = np.zeros((100, 100))
    assert sizeof(a) == a.nbytes == 80_000


def test_lone_view_counts_its_own_bytes():
    a = np.zeros(1000)
    assert sizeof(a[:10]) == 80
    assert sizeof([a[:10]]) == overhead([None]) + 80


def test_views_with_their_base_count_the_base_once():
    a = np.zeros(1000)
    assert sizeof([a, a[:10], a[10:]]) == overhead([None] * 3) + a.nbytes
    assert sizeof((a, a)) == overhead((None, None)) + a.nbytes
    assert sizeof({"x": a, "y": [a[::2]]}) == sizeof({"x": None, "y": [None]}) - 2 * sys.getsizeof(None) + a.nbytes


def test_views_without_their_base_never_exceed_it():
    a = np.zeros(1000)
    assert sizeof([a[:500], a[500:]]) == overhead([None] * 2) + a.nbytes
    assert sizeof([a[:800], a[200:]]) == overhead([None] * 2) + a.nbytes  # overlap capped at the base


def test_distinct_arrays_add_up():
    a, b = np.zeros(1000), np.ones(1000)
    assert sizeof([a, b]) == overhead([None] * 2) + 16_000


def test_broadcast_arrays_count_their_real_memory():
    x = np.broadcast_to(np.ones(10), (1_000_000, 10))
    assert x.nbytes == 80_000_000
    assert sizeof(x) == 80


def test_object_arrays_count_their_elements():
    arr = np.array(["x" * 1000] * 100, dtype=object)
    assert sizeof(arr) >= 100 * 1000


def test_many_arrays_in_a_big_list_are_estimated():
    chunks = [np.zeros(1000) for _ in range(1000)]
    assert sizeof(chunks) == pytest.approx(8_000_000 + overhead(chunks), rel=0.01)


# --- builtins -------------------------------------------------------------------------------------


def test_bytes_like():
    assert sizeof(b"x" * 10_000) >= 10_000
    assert sizeof(bytearray(10_000)) >= 10_000
    assert sizeof(memoryview(b"x" * 10_000)) == 10_000
    assert sizeof(memoryview(b"x" * 10_000)[:100]) == 100


def test_str():
    assert sizeof("a" * 10_000) == sys.getsizeof("a" * 10_000)


def test_small_containers_are_exact():
    data = [1, "two", 3.0, b"four"]
    assert sizeof(data) == sys.getsizeof(data) + sum(map(sys.getsizeof, data))
    d = {"a": 1, "b": "x" * 100}
    assert sizeof(d) == sys.getsizeof(d) + sum(sys.getsizeof(x) for kv in d.items() for x in kv)
    assert sizeof({1, 2}) == sys.getsizeof({1, 2}) + 2 * sys.getsizeof(1)


def test_big_containers_are_estimated_from_a_sample():
    strings = ["x" * 100] * 100_000
    exact = sys.getsizeof(strings) + 100_000 * sys.getsizeof("x" * 100)
    assert sizeof(strings) == pytest.approx(exact, rel=0.01)
    d = {i: "y" * 50 for i in range(100_000)}
    assert sizeof(d) == pytest.approx(sys.getsizeof(d) + sum(sys.getsizeof(k) + sys.getsizeof(v) for k, v in d.items()), rel=0.05)
    assert sizeof(set(range(100_000))) > 100_000 * 28


def test_container_cost_is_bounded():
    """The cost is counted in calls of a registered size function, not timed."""
    calls = []

    class Item:
        pass

    local = sizeof_module.sizeof
    local.register(Item)(lambda x: calls.append(1) or 10)
    items = [Item() for _ in range(200_000)]
    size = sizeof(items)
    assert len(calls) == sizeof_module._SAMPLE_ITEMS  # 10 of 200,000 items looked at
    assert size == pytest.approx(sys.getsizeof(items) + 10 * 200_000, rel=0.01)
    # nested 100 x 100 x 100: 10 sampled per level, 1,000 of the 1,000,000 leaves
    calls.clear()
    leaf = [Item() for _ in range(100)]
    middle = [leaf] * 100
    nested = [[middle] * 100]
    size = sizeof(nested)
    assert len(calls) == sizeof_module._SAMPLE_ITEMS ** 3, len(calls)
    exact_leaves = 100 ** 3 * 10
    exact_lists = sys.getsizeof(nested) + sys.getsizeof(nested[0]) + 100 * sys.getsizeof(middle) \
        + 100 ** 2 * sys.getsizeof(leaf)
    assert size == pytest.approx(exact_leaves + exact_lists, rel=0.01)
    ints = [[[list(range(100)) for _ in range(100)] for _ in range(100)]]
    assert sizeof(ints) > 100 * 100 * 100 * 28


def test_cycles_and_deep_nesting_terminate():
    loop: list = []
    loop.append(loop)
    assert sizeof(loop) >= sys.getsizeof(loop)
    deep: list = []
    for _ in range(10_000):
        deep = [deep]
    assert sizeof(deep) > 0


# --- pandas ---------------------------------------------------------------------------------------


def test_pandas_small_objects_are_deep():
    df = pd.DataFrame({"a": np.arange(500), "b": ["text" * 10] * 500, "c": pd.Series(["y"] * 500, dtype=object)})
    assert sizeof(df) == df.memory_usage(deep=True, index=True).sum()
    assert sizeof(df["b"]) == df["b"].memory_usage(deep=True, index=True)
    idx = pd.Index(["label" * 5] * 100)
    assert sizeof(idx) == idx.memory_usage(deep=True)


def test_pandas_large_object_columns_are_sampled_but_close():
    n = 100_000
    df = pd.DataFrame({"a": np.arange(n), "b": ["text" * 10] * n, "c": pd.Series(["y" * 30] * n, dtype=object)})
    df.index = pd.Index([f"row{i:08d}" for i in range(n)])
    exact = df.memory_usage(deep=True, index=True).sum()
    assert sizeof(df) == pytest.approx(exact, rel=0.05)
    assert sizeof(df["b"]) == pytest.approx(df["b"].memory_usage(deep=True, index=True), rel=0.05)


def test_pandas_numeric_frames_are_exact():
    df = pd.DataFrame(np.zeros((10_000, 5)))
    assert sizeof(df) == df.memory_usage(deep=True, index=True).sum()


# --- registration ---------------------------------------------------------------------------------


def test_register_user_type_and_subclasses_follow_the_mro():
    class Blob:
        def __init__(self, n):
            self.n = n

    class SmallBlob(Blob):
        pass

    @sizeof_module.register(Blob)
    def _(blob):
        return blob.n

    assert sizeof(Blob(1234)) == 1234
    assert sizeof(SmallBlob(5)) == 5
    assert sizeof([Blob(1000), Blob(1000)]) == overhead([None] * 2) + 2000


def test_register_through_the_dispatcher_object():
    import xsched.sizeof

    class Thing:
        pass

    xsched.sizeof.register(Thing)(lambda t: 77)
    assert sizeof.register is not None
    sizeof.register(Thing)(lambda t: 78)
    assert sizeof(Thing()) == 78


def test_register_lazy_runs_on_first_object_of_the_module(monkeypatch):
    fake = types.ModuleType("fakelib_xsched_test")
    fake.Frame = type("Frame", (), {"__module__": "fakelib_xsched_test.core", "nbytes": 4242})
    monkeypatch.setitem(sys.modules, "fakelib_xsched_test", fake)
    ran = []
    s = Sizeof()

    @s.register_lazy("fakelib_xsched_test")
    def _register():
        ran.append(True)
        s.register(fake.Frame)(lambda f: f.nbytes)

    assert not ran
    assert s(fake.Frame()) == 4242
    assert s(fake.Frame()) == 4242
    assert ran == [True]


def test_numpy_and_pandas_are_not_imported_by_the_module():
    code = "import sys, xsched.sizeof; print('numpy' in sys.modules, 'pandas' in sys.modules)"
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["False", "False"], out.stderr


# --- never raising --------------------------------------------------------------------------------


def test_custom_sizeof_is_used():
    class Big:
        def __sizeof__(self):
            return 10**6

    assert sizeof(Big()) >= 10**6


def test_broken_objects_never_raise():
    class BrokenSizeof:
        def __sizeof__(self):
            raise RuntimeError("nope")

    class NegativeSizeof:
        def __sizeof__(self):
            return -5

    class Weird:
        pass

    s = Sizeof()
    s.register(Weird)(lambda w: 1 / 0)
    assert sizeof(BrokenSizeof()) > 0
    assert sizeof(NegativeSizeof()) >= 0
    assert s(Weird()) == sys.getsizeof(Weird())
    assert sizeof([BrokenSizeof(), 1]) > 0


def test_failing_lazy_registration_falls_back(monkeypatch):
    fake = types.ModuleType("fakebroken_xsched_test")
    fake.T = type("T", (), {"__module__": "fakebroken_xsched_test"})
    s = Sizeof()
    s.register_lazy("fakebroken_xsched_test")(lambda: 1 / 0)
    assert s(fake.T()) == sys.getsizeof(fake.T())
