"""Avro files as bags (xsched/bag/avro.py): read_avro against fastavro's own reader on files
of random records, block sizes and codecs (every record once, in order, however the files are
cut), to_avro round trips, fsspec URLs, and refusals when built. On a real cluster:
tests/cluster/test_bag_cluster.py."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xsched.bag as xb

fastavro = pytest.importorskip("fastavro")

SCHEMA = {"type": "record", "name": "Event",
          "fields": [{"name": "i", "type": "long"}, {"name": "tag", "type": "string"},
                     {"name": "score", "type": ["null", "double"]}]}


def _write(path: str, records: list, sync_interval: int, codec: str = "null") -> None:
    with open(path, "wb") as f:
        fastavro.writer(f, SCHEMA, records, sync_interval=sync_interval, codec=codec)


@settings(max_examples=25, deadline=None, database=None)
@given(st.lists(st.integers(0, 400), min_size=1, max_size=3), st.sampled_from([30, 300, 3000]),
       st.sampled_from(["null", "deflate"]), st.sampled_from([None, 64, 700, 5000, 10**6]), st.data())
def test_every_record_once_in_order_however_the_files_are_cut(tmp_path_factory, sizes, sync, codec, blocksize, data):
    folder = tmp_path_factory.mktemp("avro")
    expected = []
    for k, n in enumerate(sizes):
        tags = data.draw(st.lists(st.text(max_size=12), min_size=n, max_size=n))
        records = [{"i": k * 1000 + i, "tag": t, "score": None if i % 3 else i / 7} for i, t in enumerate(tags)]
        _write(str(folder / f"part{k}.avro"), records, sync, codec)
        expected += records
    bag = xb.read_avro(str(folder / "*.avro"), blocksize=blocksize)
    assert bag.compute() == expected
    if blocksize is None:
        assert bag.npartitions == len(sizes)


def test_to_avro_round_trip_with_a_codec_and_a_url(tmp_path):
    pytest.importorskip("fsspec")
    records = [{"i": i, "tag": f"t{i % 4}", "score": float(i)} for i in range(50)]
    bag = xb.from_sequence(records, npartitions=4)
    out = str(tmp_path / "out-*.avro")
    assert xb.to_avro(bag, out, SCHEMA, codec="deflate") is None
    assert sorted(os.listdir(tmp_path)) == ["out-0.avro", "out-1.avro", "out-2.avro", "out-3.avro"]
    with open(tmp_path / "out-0.avro", "rb") as f:
        assert fastavro.reader(f).codec == "deflate"
    assert xb.read_avro(out).compute() == records
    delayed = bag.to_avro("memory://avro-test/*.avro", SCHEMA, compute=False)
    assert len(delayed) == 4
    xb.compute(*delayed)
    assert xb.read_avro("memory://avro-test/*.avro", blocksize=200).compute() == records


def test_bad_input_fails_when_built_or_names_the_file(tmp_path):
    with pytest.raises(ValueError, match="nonsense"):  # (fastavro's own refusal of the schema, when called)
        xb.to_avro(xb.from_sequence([{"i": 1}]), str(tmp_path / "*.avro"), {"type": "nonsense"})
    assert not list(tmp_path.iterdir())
    with pytest.raises(ValueError, match="to_avro: fastavro cannot write codec='nope'"):
        xb.to_avro(xb.from_sequence([{"i": 1}]), str(tmp_path / "*.avro"), SCHEMA, codec="nope")
    with pytest.raises(TypeError, match=r"to_avro: a record of the partition written to .*bad-0.avro does not fit"):
        xb.to_avro(xb.from_sequence([{"i": "not a number", "tag": "x", "score": None}]),
                   str(tmp_path / "bad-*.avro"), SCHEMA)
    text = tmp_path / "notes.avro"
    text.write_text("not avro at all")
    with pytest.raises(ValueError, match=r"notes.avro is not an Avro object container file"):
        xb.read_avro(str(text), blocksize=10)
