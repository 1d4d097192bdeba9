"""Bag.str, random_sample, unzip, join, xb.map_partitions and xb.from_url, against plain Python."""

from __future__ import annotations

import functools
import http.server
import threading

import pytest

import xsched.bag as xb
from xsched import delayed

WORDS = ["Alice", "bob", " carol ", "Dan,Eve", "", "alex"]


@pytest.mark.parametrize("npartitions", [1, 2, 4])
def test_str_methods_and_match_as_python(npartitions):
    b = xb.from_sequence(WORDS, npartitions=npartitions)
    assert b.str.lower().compute() == [w.lower() for w in WORDS]
    assert b.str.strip().str.upper().compute() == [w.strip().upper() for w in WORDS]
    assert b.str.split(",").compute() == [w.split(",") for w in WORDS]
    assert b.str.replace("a", "4", 1).compute() == [w.replace("a", "4", 1) for w in WORDS]
    assert b.str.startswith("a").compute() == [w.startswith("a") for w in WORDS]
    assert b.str.match("[Aa]l*").compute() == ["Alice", "alex"]
    assert "upper" in dir(b.str) and "match" in dir(b.str)


def test_str_refuses_unknown_methods_and_non_strings():
    b = xb.from_sequence(["a", 1])
    with pytest.raises(AttributeError, match="Bag.str has no 'nope'"):
        b.str.nope()
    with pytest.raises(TypeError, match="the element 1 is a int, not a str"):
        b.str.upper().compute()
    with pytest.raises(TypeError, match="glob pattern"):
        b.str.match(3)


def test_random_sample_is_reproducible_independent_per_partition_and_bounded():
    b = xb.from_sequence(range(4000), npartitions=8)
    first = b.random_sample(0.25, random_state=11).compute()
    assert first == b.random_sample(0.25, random_state=11).compute()
    assert first != b.random_sample(0.25, random_state=12).compute()
    assert 800 < len(first) < 1200 and first == sorted(set(first))  # a subset, in order
    assert b.random_sample(0.0).compute() == [] and b.random_sample(1.0).compute() == list(range(4000))
    import random
    assert b.random_sample(0.5, random_state=random.Random(3)).compute() == \
        b.random_sample(0.5, random_state=random.Random(3)).compute()
    for bad in (-0.1, 1.5, True, "0.5"):
        with pytest.raises(ValueError, match="probability"):
            b.random_sample(bad)
    with pytest.raises(TypeError, match="random_state"):
        b.random_sample(0.5, random_state="seed")


def test_unzip_gives_a_bag_per_position():
    pairs = [(i, str(i), i * i) for i in range(7)]
    a, s, sq = xb.from_sequence(pairs, npartitions=3).unzip(3)
    assert (a.compute(), s.compute(), sq.compute()) == tuple(list(t) for t in zip(*pairs))
    with pytest.raises(ValueError, match="positive"):
        xb.from_sequence(pairs).unzip(0)


@pytest.mark.parametrize("npartitions", [1, 3])
def test_join_with_a_list_a_delayed_an_item_and_a_one_partition_bag(npartitions):
    people = xb.from_sequence(["Alice", "Bob", "Carol", "Anne"], npartitions=npartitions)
    fruit = ["Apple", "Apricot", "Banana", "Kiwi"]
    expected = [(f, p) for p in ["Alice", "Bob", "Carol", "Anne"] for f in fruit if f[0] == p[0]]
    def first(s):
        return s[0]
    assert people.join(fruit, first).compute() == expected
    assert people.join(delayed(list)(fruit), first).compute() == expected
    assert people.join(xb.from_sequence(fruit, npartitions=1), first).compute() == expected
    assert people.join(xb.from_sequence(fruit, npartitions=1).map(str.upper), first,
                       on_other=lambda s: s[0].title()).compute() == [(f.upper(), p) for f, p in expected]
    records = xb.from_sequence([{"id": 1}, {"id": 2}], npartitions=1)
    assert records.join([{"id": 2, "x": 5}], "id").compute() == [({"id": 2, "x": 5}, {"id": 2})]
    with pytest.raises(ValueError, match="one partition"):
        people.join(xb.from_sequence(fruit, npartitions=2), first)
    with pytest.raises(TypeError, match="must be a list"):
        people.join("fruit", first)


def test_module_map_partitions_zips_partitions():
    a = xb.from_sequence(range(6), npartitions=3)
    b = xb.from_sequence("abcdef", npartitions=3)
    got = xb.map_partitions(lambda p, q, sep: [sep.join(f"{x}{y}" for x, y in zip(p, q))], a, b, sep="-")
    assert got.compute() == ["0a-1b", "2c-3d", "4e-5f"]
    assert xb.compute(a.sum(), b.count()) == (15, 6)
    with pytest.raises(TypeError, match="at least one Bag"):
        xb.map_partitions(len, [1, 2])


@pytest.fixture
def web(tmp_path):
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    (tmp_path / "b.txt").write_text("three")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.mark.timeout(60)
def test_from_url_reads_lines_over_http(web):
    b = xb.from_url([f"{web}/a.txt", f"{web}/b.txt"])
    assert b.npartitions == 2
    assert b.compute() == [b"one\n", b"two\n", b"three"]
    with pytest.raises(ValueError, match="takes a URL"):
        xb.from_url("a.txt")
    with pytest.raises(Exception, match="404"):
        xb.from_url(f"{web}/missing.txt").compute()


def test_a_key_given_as_a_one_item_list_is_a_tuple_as_pluck_gives():
    records = xb.from_sequence([{"k": "a", "v": 1}, {"k": "b", "v": 2}], npartitions=2)
    assert records.join([{"k": "a"}], ["k"], lambda o: (o["k"],)).compute() == [({"k": "a"}, {"k": "a", "v": 1})]
    assert records.pluck(["k"]).compute() == [("a",), ("b",)]
    assert sorted(records.foldby(["k"], lambda acc, r: acc + r["v"], 0).compute()) == [(("a",), 1), (("b",), 2)]
