"""``drop_duplicates`` and ``duplicated`` against pandas: the default keeps the frame's order,
partitions and divisions and holds no distinct row twice in one task (each partition's
first or last row of each key, whole, meets the others' in a shuffle and comes back);
``split_out=1`` is the tree, ``split_out=n`` the hash shuffle; ``duplicated`` sends only a
partition's first (last) row of each key."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pandas.testing as tm
import pytest

import xsched.dataframe as xd
from xsched.dataframe import shuffle as shuffling


def frame(n: int = 500) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    pdf = pd.DataFrame({"a": rng.integers(0, 20, n).astype(float), "b": rng.choice(np.array(["x", "y", None], dtype=object), n),
                        "c": rng.normal(size=n), "d": pd.Categorical(rng.choice(list("pq"), n)),
                        "t": pd.to_datetime(rng.integers(0, 5, n), unit="D")},
                       index=pd.Index(rng.permutation(n) * 3, name="i"))
    pdf.loc[pdf.index[::13], "a"] = np.nan
    return pdf


@pytest.mark.parametrize("npartitions", [1, 3, 7])
@pytest.mark.parametrize("subset", [None, ["a"], ["a", "b"], "b", ["d", "t"]])
@pytest.mark.parametrize("keep", ["first", "last", False])
def test_rows_without_duplicates_in_the_frames_order(npartitions, subset, keep):
    pdf = frame()
    df = xd.from_pandas(pdf, npartitions=npartitions, sort=False)
    got = df.drop_duplicates(subset=subset, keep=keep)
    assert got.npartitions == npartitions
    tm.assert_frame_equal(got.compute(), pdf.drop_duplicates(subset=subset, keep=keep))


@pytest.mark.parametrize("column", ["a", "b", "d"])
@pytest.mark.parametrize("keep", ["first", "last"])
def test_a_series_values_without_duplicates_in_order(column, keep):
    pdf = frame()
    s = xd.from_pandas(pdf[column], npartitions=5, sort=False)
    tm.assert_series_equal(s.drop_duplicates(keep=keep).compute(), pdf[column].drop_duplicates(keep=keep))
    unnamed = xd.from_pandas(pdf[column].rename(None), npartitions=5, sort=False)
    tm.assert_series_equal(unnamed.drop_duplicates(keep=keep).compute(), pdf[column].rename(None).drop_duplicates(keep=keep))


def test_divisions_are_kept_and_empty_partitions_pass():
    pdf = frame().sort_index()
    df = xd.from_pandas(pdf, npartitions=4)
    out = df.drop_duplicates(subset=["a"])
    assert out.known_divisions and out.divisions == df.divisions
    tm.assert_frame_equal(out.compute(), pdf.drop_duplicates(subset=["a"]))
    some = df[df.c > 1.5]
    tm.assert_frame_equal(some.drop_duplicates(subset=["b"]).compute(), pdf[pdf.c > 1.5].drop_duplicates(subset=["b"]))


def test_no_task_gathers_every_distinct_row_unless_asked():
    pdf = pd.DataFrame({"k": np.arange(400) % 150, "v": np.arange(400)})
    df = xd.from_pandas(pdf, npartitions=8)
    names = {str(k).rsplit("-", 2)[0] for k in dict(df.drop_duplicates(subset=["k"])._graph)}
    assert "distinct-kept" in names and not any(n.startswith("drop-duplicates-agg") for n in names)
    tree = df.drop_duplicates(subset=["k"], split_out=1)
    assert tree.npartitions == 1 and any(str(k).startswith("drop-duplicates-agg") for k in dict(tree._graph))
    tm.assert_frame_equal(tree.compute(), pdf.drop_duplicates(subset=["k"]))
    shares = df.drop_duplicates(subset=["k"], split_out=True)
    assert shares.npartitions == 8
    got = shares.compute().sort_values("v")
    tm.assert_frame_equal(got, pdf.drop_duplicates(subset=["k"]))
    with pytest.raises(ValueError, match="drop_duplicates: split_out must be a whole number of at least 1"):
        df.drop_duplicates(split_out=0)


def test_a_partition_sends_only_its_first_row_of_each_key():
    part = pd.DataFrame({"k": [1, 2, 1, 3, 2, 1], "v": range(6)})
    sent = shuffling._tag_rows(part, ["k"], 4, "first")
    assert sent["k"].tolist() == [1, 2, 3] and sent[shuffling._ROW].tolist() == [0, 1, 3]
    assert set(sent[shuffling._PART]) == {4}
    last = shuffling._tag_rows(part, ["k"], 4, "last")
    assert last[shuffling._ROW].tolist() == [3, 4, 5]
    pdf = pd.DataFrame({"k": np.arange(300) % 7, "j": np.arange(300) % 3})
    df = xd.from_pandas(pdf, npartitions=6)
    for keep in ("first", "last", False):
        tm.assert_series_equal(df.duplicated(subset=["k"], keep=keep).compute(), pdf.duplicated(subset=["k"], keep=keep))
        tm.assert_series_equal(df.k.duplicated(keep=keep).compute(), pdf.k.duplicated(keep=keep))
