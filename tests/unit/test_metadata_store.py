"""The scheduler's metadata store, alone: nested paths, levels replaced, the byte budget."""

from __future__ import annotations

import pytest

from xsched.scheduler.extensions.events import packed_size
from xsched.scheduler.extensions.metadata import MetadataStore


def test_nested_paths_are_made_and_a_level_that_is_not_a_dict_is_replaced():
    s = MetadataStore()
    s.set(["a", "b", "c"], 1)
    assert s.get("a") == {"b": {"c": 1}}
    s.set("x", 5)
    s.set(["x", "y"], 6)  # (as dask: 5 is replaced by a dict)
    assert s.get("x") == {"y": 6}
    s.set(["a", "b"], [1, 2])
    assert s.get(["a", "b"]) == [1, 2]
    with pytest.raises(KeyError):
        s.get(["a", "b", "c"])  # (a list is not a level)
    with pytest.raises(KeyError):
        s.get([])


def test_the_budget_counts_every_entry_and_a_refused_value_changes_nothing():
    s = MetadataStore(max_bytes=100)
    s.set("a", "x" * 40)
    s.set(["b", "c"], "y" * 40)
    assert s.nbytes == packed_size({"a": "x" * 40}) + packed_size({"b": {"c": "y" * 40}}) <= 100
    before = (s.get("a"), s.get("b"), s.nbytes)
    with pytest.raises(ValueError, match="left of the scheduler's 100 B"):
        s.set(["b", "d"], "z" * 30)
    assert (s.get("a"), s.get("b"), s.nbytes) == before
    s.set("a", 1)  # (an overwrite frees what the old value took)
    s.set(["b", "d"], "z" * 30)
    assert s.get("b") == {"c": "y" * 40, "d": "z" * 30}


def test_a_set_copies_only_the_levels_on_its_path_however_deep_the_entry():
    s = MetadataStore()
    deep = leaf = {}
    for _ in range(1000):  # (as deep as msgpack carries; Python's recursion limit is about that)
        leaf["k"] = {}
        leaf = leaf["k"]
    s.set("deep", deep)
    s.set(["deep", "k", "x"], 1)
    assert s.get(["deep", "k", "x"]) == 1 and s.get(["deep", "k", "k"]) is deep["k"]["k"]
    assert "x" not in deep["k"]  # (the old entry is left as it was: refused sets change nothing)
