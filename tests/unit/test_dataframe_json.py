"""read_json and to_json: line-delimited files in blocks and whole, other orients a file per
partition, compressed files, the meta every partition keeps, and errors naming the file."""

from __future__ import annotations

import gzip
import os

import numpy as np
import pandas as pd
import pytest

import xsched.dataframe as xd


def _frame(n: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"i": np.arange(n), "x": rng.random(n), "s": [f"r{k}" for k in range(n)],
                         "b": rng.random(n) > 0.5})


@pytest.mark.parametrize("blocksize", [None, 1000, "4kB"])
def test_lines_in_blocks_read_as_pandas_reads_the_file(tmp_path, blocksize):
    pdf = _frame()
    path = tmp_path / "a.jsonl"
    pdf.to_json(path, orient="records", lines=True)
    df = xd.read_json(str(path), blocksize=blocksize)
    if blocksize == 1000:
        assert df.npartitions == -(-os.path.getsize(path) // 1000)
    want = pd.read_json(path, orient="records", lines=True)
    pd.testing.assert_frame_equal(df.compute().reset_index(drop=True), want)
    assert df.dtypes.to_dict() == want.dtypes.to_dict()


def test_round_trip_through_to_json_and_other_orients(tmp_path):
    pdf = _frame(50)
    df = xd.from_pandas(pdf, npartitions=3)
    paths = df.to_json(str(tmp_path / "out"))
    assert [os.path.basename(p) for p in paths] == ["part.0.json", "part.1.json", "part.2.json"]
    back = xd.read_json(str(tmp_path / "out" / "*.json"))
    pd.testing.assert_frame_equal(back.compute().reset_index(drop=True), pdf)
    df.to_json(str(tmp_path / "split-*.json"), orient="split")
    split = xd.read_json(str(tmp_path / "split-*.json"), orient="split")
    assert split.npartitions == 3
    pd.testing.assert_frame_equal(split.compute(), pdf)
    lazy = df.x.to_json(str(tmp_path / "x-*.json"), compute=False)
    assert len(lazy) == 3 and not os.path.exists(tmp_path / "x-0.json")


def test_compressed_files_and_keys_missing_from_a_block(tmp_path):
    lines = [b'{"a": 1, "b": "x"}', b'{"a": 2, "b": "y"}', b'{"a": 3}', b'{"a": 4}']
    with gzip.open(tmp_path / "z.jsonl.gz", "wb") as f:
        f.write(b"\n".join(lines[:2]) + b"\n")
    (tmp_path / "z2.jsonl").write_bytes(b"\n".join(lines[2:]) + b"\n")
    df = xd.read_json([str(tmp_path / "z.jsonl.gz"), str(tmp_path / "z2.jsonl")])
    got = df.compute().reset_index(drop=True)
    assert got.a.tolist() == [1, 2, 3, 4] and got.b.tolist()[:2] == ["x", "y"] and got.b[2:].isna().all()


def test_errors_name_the_file_and_the_fix(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"".join(b'{"a": %d}\n' % i for i in range(5000)) + b'{"a": "text"}\n')
    df = xd.read_json(str(path), blocksize=10_000, sample=1000)  # (the sample sees integers only)
    with pytest.raises(ValueError, match=r"column 'a' of .*bad.jsonl \(bytes .*\) holds values that are not "
                                         r"int64 .* pass meta=\{'a': 'object'\}"):
        df.compute()
    fixed = xd.read_json(str(path), blocksize=10_000, sample=1000, meta={"a": "object"})
    assert fixed.a.compute().iloc[-1] == "text"
    (tmp_path / "wide.jsonl").write_bytes(b'{"a": 1}\n' * 3000 + b'{"a": 1, "z": 2}\n')
    with pytest.raises(ValueError, match=r"has columns \['z'\] that a sample .* did not show"):
        xd.read_json(str(tmp_path / "wide.jsonl"), blocksize=4096, sample=1000).compute()
    (tmp_path / "gaps.jsonl").write_bytes(b'{"a": 1}\n' * 3000 + b'{"a": null}\n')
    with pytest.raises(ValueError, match=r"holds missing values .* said int64: pass meta=\{'a': 'float64'\}"):
        xd.read_json(str(tmp_path / "gaps.jsonl"), sample=1000).compute()
    with pytest.raises(ValueError, match="needs line-delimited JSON"):
        xd.read_json(str(path), orient="split", blocksize=100)
    with pytest.raises(ValueError, match="lines=True writes orient='records'"):
        xd.from_pandas(_frame(4), npartitions=1).to_json(str(tmp_path / "o"), orient="split", lines=True)
