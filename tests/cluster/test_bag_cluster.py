"""xsched.bag on a real cluster (2 worker processes, each with its own str hash salt):
read_text -> map/filter -> frequencies/topk/groupby/foldby against plain Python, persist,
and to_textfiles and to_avro round trips. The in-process tests: tests/unit/test_bag.py."""

from __future__ import annotations

import collections
import operator
import random

import pytest

import xsched.bag as xb
from xsched.client.future import futures_of

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(60)]


def _write_logs(tmp_path, n_files=5, seed=0):
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota"]
    lines = []
    for i in range(n_files):
        content = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 6))) + "\n"
                   for _ in range(rng.randint(20, 60))]
        (tmp_path / f"log-{i}.txt").write_text("".join(content))
        lines.extend(content)
    return lines


def first_letter(word):
    return word[0]


def test_text_pipeline_matches_python(client, tmp_path):
    lines = _write_logs(tmp_path)
    words = [w for line in lines for w in line.split()]
    b = xb.read_text(str(tmp_path / "log-*.txt"), blocksize=300)
    assert b.npartitions > 5
    kept = b.map(str.split).flatten().filter(lambda w: w != "eta")
    expected = [w for w in words if w != "eta"]

    assert kept.count().compute() == len(expected)
    assert kept.frequencies(sort=True).compute() == collections.Counter(expected).most_common()
    assert kept.map(len).topk(3).compute() == sorted(map(len, expected), reverse=True)[:3]
    assert kept.topk(2, key=len).compute() == sorted(expected, key=len, reverse=True)[:2]
    # the groups are whole although the two worker processes salt str hashes differently
    groups = kept.groupby(first_letter, npartitions=3).compute()
    by_letter = collections.defaultdict(list)
    for w in expected:
        by_letter[w[0]].append(w)
    assert len(groups) == len(by_letter) and dict(groups) == dict(by_letter)
    folded = kept.foldby(first_letter, lambda n, w: n + 1, 0, operator.add, 0).compute()
    assert dict(folded) == {k: len(v) for k, v in by_letter.items()}


def test_persist_keeps_partitions_on_the_workers(client):
    data = list(range(100))
    b = xb.from_sequence(data, npartitions=6).map(lambda x: x * 3)
    persisted = client.persist(b)
    assert len(futures_of(persisted)) == 6
    assert persisted.compute() == [x * 3 for x in data]
    assert persisted.filter(lambda x: x % 2).sum().compute() == sum(x * 3 for x in data if x * 3 % 2)
    again = b.persist()  # the default client
    assert len(futures_of(again)) == 6 and again.std().compute() == pytest.approx(
        (sum((x * 3 - 148.5) ** 2 for x in data) / 100) ** 0.5)
    total = client.persist(b.sum())
    assert len(futures_of(total)) == 1 and total.compute() == 3 * sum(data)


def test_to_textfiles_round_trip(client, tmp_path):
    records = [f"record {i}" for i in range(50)]
    xb.from_sequence(records, npartitions=4).map(str.upper).to_textfiles(str(tmp_path / "out-*.txt"))
    back = xb.read_text(str(tmp_path / "out-*.txt"))
    assert back.npartitions == 4
    assert back.map(str.rstrip).compute() == [r.upper() for r in records]


def test_to_avro_and_read_avro_in_blocks_on_workers(client, tmp_path):
    pytest.importorskip("fastavro")
    schema = {"type": "record", "name": "Word", "fields": [{"name": "w", "type": "string"},
                                                            {"name": "n", "type": "long"}]}
    records = [{"w": f"word{i % 7}", "n": i} for i in range(3000)]
    xb.from_sequence(records, npartitions=3).to_avro(str(tmp_path / "*.avro"), schema, sync_interval=500)
    back = xb.read_avro(str(tmp_path / "*.avro"), blocksize=4000)
    assert back.npartitions > 3
    assert back.compute() == records
    assert dict(back.pluck("w").frequencies().compute()) == dict(collections.Counter(r["w"] for r in records))
