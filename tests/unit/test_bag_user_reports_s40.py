"""What a dask.bag user met: Items and Delayed values inside a list argument, a Bag keyword
of starmap, a mutable fold initial, the element a failing map names, bytes through .str, a
file that does not decode, from_delayed of a non-list, from_sequence's positional order,
and relative paths read from the client's directory."""

from __future__ import annotations

import operator
import os

import pytest

import xsched
import xsched.bag as xb


def test_items_and_delayed_values_inside_a_list_argument_are_their_values():
    d1, d2 = xsched.delayed(lambda: 10)(), xsched.delayed(lambda: 20)()
    b = xb.from_sequence(range(3), npartitions=2)
    assert b.map(lambda x, vals: x + sum(vals), vals=[d1, d2]).compute() == [30, 31, 32]
    assert b.map(lambda x, vals: x + sum(vals), [d1, 5]).compute() == [15, 16, 17]
    assert b.map_partitions(lambda p, vals: [sum(vals)] * len(p), [d1, b.sum()]).compute() == [13, 13, 13]
    assert b.map(lambda x, v: v["a"][0], {"a": [d1]}).compute() == [10, 10, 10]


def test_a_bag_keyword_of_starmap_is_zipped_element_by_element():
    pairs = xb.from_sequence([(1, 2), (3, 4), (5, 6)], npartitions=2)
    z = xb.from_sequence([100, 200, 300], npartitions=2)
    assert pairs.starmap(lambda x, y, z=0: (x, y, z), z=z).compute() == [(1, 2, 100), (3, 4, 200), (5, 6, 300)]
    with pytest.raises(ValueError, match="starmap: the Bags are zipped partition by partition"):
        pairs.starmap(lambda x, y, z=0: 0, z=xb.from_sequence([1, 2, 3], npartitions=3))


def test_a_mutable_initial_is_copied_for_every_partition_and_key():
    init = []

    def append(acc, x):
        acc.append(x)
        return acc

    folded = xb.from_sequence(range(6), npartitions=3).fold(append, operator.add, initial=init)
    assert folded.compute() == [0, 1, 2, 3, 4, 5] and folded.compute() == [0, 1, 2, 3, 4, 5] and init == []
    grouped = xb.from_sequence(range(6), npartitions=2).foldby(lambda x: x % 2, append, [], operator.add, [])
    assert dict(grouped.compute()) == {0: [0, 2, 4], 1: [1, 3, 5]}


def test_the_failing_element_is_named_itself_and_bytes_take_the_str_methods():
    with pytest.raises(ZeroDivisionError) as info:
        xb.from_sequence([1, 2, 0]).map(lambda x, y: y / x, 1).compute()
    assert "(the bag's map raised on the element 0)" in info.value.__notes__
    assert xb.from_sequence([b" a ", b"b\n"]).str.strip().compute() == [b"a", b"b"]
    with pytest.raises(TypeError, match=r"is a bytes, not a str; map\(bytes.decode\) first"):
        xb.from_sequence([b"a"]).str.casefold().compute()


def test_a_file_that_does_not_decode_is_named(tmp_path):
    (tmp_path / "latin.txt").write_bytes(b"caf\xe9\n")
    with pytest.raises(UnicodeDecodeError) as info:
        xb.read_text(str(tmp_path / "latin.txt")).compute()
    assert any("latin.txt as utf-8; give its encoding" in n for n in info.value.__notes__)
    assert xb.read_text(str(tmp_path / "latin.txt"), encoding="latin-1").compute() == ["café\n"]


def test_from_delayed_of_a_value_that_is_no_partition_says_so():
    with pytest.raises(TypeError, match=r"^from_delayed: a Delayed value computed to 5 \(a int\), but each must "
                                        r"compute to its partition"):
        xb.from_delayed([xsched.delayed(lambda: 5)()]).compute()


def test_from_sequence_takes_partition_size_second_as_dask():
    assert xb.from_sequence(range(10), 5).npartitions == 2
    assert xb.from_sequence(range(10), npartitions=5).npartitions == 5


def test_a_relative_path_is_the_clients_whatever_directory_the_workers_run_in(tmp_path, monkeypatch):
    for d in ("a", "b"):
        (tmp_path / d / "logs").mkdir(parents=True)
        (tmp_path / d / "logs" / "x.txt").write_text(f"from {d}\n")
    monkeypatch.chdir(tmp_path / "b")
    lines = xb.read_text("logs/x.txt")
    monkeypatch.chdir(tmp_path / "a")  # (where a worker started elsewhere would look)
    assert lines.compute() == ["from b\n"]
    monkeypatch.chdir(tmp_path / "b")
    written = xb.from_sequence(["x"], npartitions=1).to_textfiles("out/*.txt")
    assert all(os.path.isabs(p) and os.path.exists(p) for p in written)


def test_a_sentinel_initial_stays_itself_and_a_long_list_argument_is_scanned_once():
    start = object()
    folded = xb.from_sequence(range(4), npartitions=2).fold(lambda acc, x: x if acc is start else acc + x,
                                                            operator.add, initial=start)
    assert folded.compute() == 6
    calls = []
    original = xb.core._holds_lazy_value

    def counted(obj):
        calls.append(len(obj) if isinstance(obj, list) else 0)
        return original(obj)

    xb.core._holds_lazy_value = counted
    try:
        xb.from_sequence(range(50), npartitions=50).map(lambda x, values: x, list(range(1000)))
    finally:
        xb.core._holds_lazy_value = original
    assert calls.count(1000) == 1


def test_a_path_in_a_directory_whose_name_has_glob_characters(tmp_path, monkeypatch):
    folder = tmp_path / "runs[1]"
    folder.mkdir()
    (folder / "x.txt").write_text("one\n")
    monkeypatch.chdir(folder)
    assert xb.read_text("x.txt").compute() == ["one\n"]
    assert xb.read_text("*.txt").compute() == ["one\n"]
    with pytest.raises(ValueError, match="an empty path names no file"):
        xb.read_text("")
