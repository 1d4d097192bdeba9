"""xsched.dataframe's CSV, JSON, ORC and parquet files and xsched.bag's text files on S3
(moto's server on loopback), read and written by the workers of a real cluster through
s3fs, compared with pandas and the lines written."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("moto")
s3fs = pytest.importorskip("s3fs")
boto3 = pytest.importorskip("boto3")
pytest.importorskip("pyarrow")

import xsched.dataframe as xd  # noqa: E402
from xsched.dataframe.csv import read_csv  # noqa: E402
from xsched.dataframe.parquet import read_parquet  # noqa: E402

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(60)]

BUCKET = "xsched-io"


@pytest.fixture(scope="module")
def s3():
    """An S3 server (moto, in a thread of this process) with one bucket; its filesystem and
    the storage_options that reach it (from the workers' processes too)."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        url = f"http://{host}:{port}"
        boto3.client("s3", endpoint_url=url, aws_access_key_id="x", aws_secret_access_key="x",
                     region_name="us-east-1").create_bucket(Bucket=BUCKET)
        options = {"client_kwargs": {"endpoint_url": url}, "key": "x", "secret": "x"}
        fs = s3fs.S3FileSystem(**options)
        yield fs, options
    finally:
        server.stop()
        s3fs.S3FileSystem.clear_instance_cache()


def _frame(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"id": np.arange(n) + 1000 * seed, "x": rng.normal(size=n).round(5),
                         "name": rng.choice(["ann", "bob", "cy"], n)})


def test_csv_on_s3(client, s3):
    fs, options = s3
    frames = [_frame(200 + 10 * i, i) for i in range(3)]
    for i, frame in enumerate(frames):
        fs.pipe(f"{BUCKET}/csv/data.{i}.csv", frame.to_csv(index=False).encode())
    expected = pd.concat(frames, ignore_index=True)

    df = read_csv(f"s3://{BUCKET}/csv/*.csv", blocksize=2000, storage_options=options)
    assert df.npartitions > 3
    pd.testing.assert_frame_equal(df.compute().reset_index(drop=True), expected)

    written = df[df.x > 0].to_csv(f"s3://{BUCKET}/out/", index=False, storage_options=options)
    assert written[0] == f"s3://{BUCKET}/out/part.0.csv" and len(written) == df.npartitions
    back = pd.concat([pd.read_csv(io.BytesIO(fs.cat(p))) for p in written], ignore_index=True)
    pd.testing.assert_frame_equal(back, expected[expected.x > 0].reset_index(drop=True))


def test_parquet_on_s3(client, s3):
    fs, options = s3
    frame = pd.concat([_frame(100, i) for i in range(4)], ignore_index=True).set_index("id")
    df = xd.from_pandas(frame, npartitions=4)
    paths = df.to_parquet(f"s3://{BUCKET}/pq", storage_options=options)
    assert paths == [f"s3://{BUCKET}/pq/part.{i}.parquet" for i in range(4)]
    assert sorted(fs.ls(f"{BUCKET}/pq", refresh=True)) == [p[len("s3://"):] for p in paths]

    back = read_parquet(f"s3://{BUCKET}/pq", storage_options=options)
    pd.testing.assert_frame_equal(back.compute(), frame)
    some = read_parquet(f"s3://{BUCKET}/pq", columns=["x"], filters=[("id", ">=", 2000)], index="id",
                        storage_options=options)
    assert some.npartitions == 2 and some.divisions == (2000, 3000, 3099)
    pd.testing.assert_frame_equal(some.compute(), frame.loc[2000:, ["x"]])


def test_partitioned_parquet_on_s3(client, s3):
    fs, options = s3
    frame = pd.concat([_frame(60, i) for i in range(3)], ignore_index=True)
    df = xd.from_pandas(frame, npartitions=3)
    paths = df.to_parquet(f"s3://{BUCKET}/hive", partition_on=["name"], storage_options=options)
    assert sorted({p.rsplit("/", 2)[1] for p in paths}) == ["name=ann", "name=bob", "name=cy"]
    back = read_parquet(f"s3://{BUCKET}/hive", filters=[("name", "in", ["ann", "cy"])], storage_options=options)
    assert back.npartitions == 6  # (bob's folder never read)
    got = back.compute().sort_values("id")
    expected = frame[frame.name.isin(["ann", "cy"])].sort_values("id")
    assert got.id.tolist() == expected.id.tolist() and got.name.astype(str).tolist() == expected.name.tolist()
    np.testing.assert_array_equal(got.x.to_numpy(), expected.x.to_numpy())


def test_json_lines_on_s3(client, s3):
    fs, options = s3
    frame = pd.concat([_frame(150, i) for i in range(3)], ignore_index=True)
    df = xd.from_pandas(frame, npartitions=3)
    paths = df.to_json(f"s3://{BUCKET}/json/day-*.jsonl", storage_options=options)
    assert paths == [f"s3://{BUCKET}/json/day-{i}.jsonl" for i in range(3)]
    back = xd.read_json(f"s3://{BUCKET}/json/*.jsonl", blocksize=3000, storage_options=options)
    assert back.npartitions > 3
    pd.testing.assert_frame_equal(back.compute().reset_index(drop=True), frame)


def test_orc_on_s3(client, s3):
    from xsched.dataframe.orc import read_orc

    _, options = s3
    frame = pd.DataFrame({"x": np.random.default_rng(0).normal(size=300).round(5)},
                         index=pd.Index(np.arange(300) * 2, name="id"))
    paths = xd.from_pandas(frame, npartitions=3).to_orc(f"s3://{BUCKET}/orc", storage_options=options)
    assert paths == [f"s3://{BUCKET}/orc/part.{i}.orc" for i in range(3)]
    back = read_orc(f"s3://{BUCKET}/orc", columns=["x"], index="id", storage_options=options)
    pd.testing.assert_frame_equal(back.compute(), frame[["x"]])


def test_bag_text_files_on_s3(client, s3):
    import xsched.bag as xb

    fs, options = s3
    lines = [f"record {i};" for i in range(300)]
    written = xb.from_sequence(lines, npartitions=3).to_textfiles(f"s3://{BUCKET}/text/*.txt",
                                                                  storage_options=options, last_endline=False)
    assert written == [f"s3://{BUCKET}/text/{i}.txt" for i in range(3)]
    assert fs.cat(f"{BUCKET}/text/0.txt").decode().endswith("record 99;")  # (no line end after the last)
    back = xb.read_text(f"s3://{BUCKET}/text/*.txt", blocksize=500, linedelimiter=";", storage_options=options)
    assert back.npartitions > 3
    assert back.map(str.strip).compute() == lines
    grouped = xb.read_text(f"s3://{BUCKET}/text/*.txt", files_per_partition=2, storage_options=options)
    assert grouped.npartitions == 2 and grouped.count().compute() == 300
