"""min and max of an ordered categorical whose categories are unknown (each partition has
its own: read from parquet, or cast with astype("category")): compared in the partitions'
own order when they share it, refused naming the fix when they do not; never NaN."""

from __future__ import annotations

import pandas as pd
import pytest

import xsched.dataframe as xd

RANKS = pd.CategoricalDtype(["high", "medium", "low"], ordered=True)


def test_min_and_max_of_an_ordered_column_read_from_parquet(tmp_path):
    frame = pd.DataFrame({"c": pd.Categorical(["high", "low", "medium", None], dtype=RANKS), "v": range(4)})
    xd.from_pandas(frame, npartitions=2).to_parquet(str(tmp_path / "ranks"))
    col = xd.read_parquet(str(tmp_path / "ranks")).c
    assert (col.max().compute(), col.min().compute()) == (frame.c.max(), frame.c.min()) == ("low", "high")
    assert col.max(split_every=2).compute() == "low"
    empty = pd.DataFrame({"c": pd.Categorical([None, None], dtype=RANKS)})
    empty.to_parquet(tmp_path / "none.parquet")
    assert pd.isna(xd.read_parquet(str(tmp_path / "none.parquet")).c.max().compute())


def test_partitions_of_other_orders_are_refused_and_a_frame_names_the_column(tmp_path):
    (tmp_path / "o").mkdir()
    pd.DataFrame({"c": pd.Categorical(["z", "a"], dtype=pd.CategoricalDtype(["z", "a"], ordered=True))}).to_parquet(
        tmp_path / "o" / "part.0.parquet")
    pd.DataFrame({"c": pd.Categorical(["m"], dtype=pd.CategoricalDtype(["z", "a", "m"], ordered=True))}).to_parquet(
        tmp_path / "o" / "part.1.parquet")
    df = xd.read_parquet(str(tmp_path / "o"))
    with pytest.raises(ValueError, match=r"^max\(\) of an ordered categorical whose partitions hold other "
                                         r"categories .* s.cat.set_categories"):
        df.c.max().compute()
    with pytest.raises(ValueError, match=r"^min\(\) of the frame: column 'c' is an ordered categorical whose "
                                         r"categories are unknown"):
        df.min()


def test_numeric_only_leaves_an_unknown_ordered_column_out(tmp_path):
    frame = pd.DataFrame({"c": pd.Categorical(["high", "low"], dtype=RANKS), "v": [1, 2]})
    frame.to_parquet(tmp_path / "r.parquet")
    assert xd.read_parquet(str(tmp_path / "r.parquet")).min(numeric_only=True).compute().tolist() == [1]
