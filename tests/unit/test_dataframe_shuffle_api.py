"""DataFrame.shuffle and Series.shuffle with dask's arguments: on columns, a Series' values,
the index, npartitions, ignore_index and the method; a cross merge, a join of a list of
frames and duplicated against pandas."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import xsched.dataframe as xd

RNG = np.random.default_rng(3)
PDF = pd.DataFrame({"k": RNG.integers(0, 7, 60), "j": RNG.integers(0, 3, 60), "v": RNG.normal(size=60)},
                   index=RNG.permutation(60) % 11)


def _parts(coll):
    return [p.compute() for p in coll.to_delayed()]


def _each_key_in_one_partition(parts, key):
    seen = {}
    for i, part in enumerate(parts):
        for value in set(key(part)):
            assert seen.setdefault(value, i) == i, f"{value!r} in partitions {seen[value]} and {i}"


@pytest.mark.parametrize("npartitions", [None, 1, 4])
def test_frame_shuffle_on_columns_and_on_the_index(npartitions):
    df = xd.from_pandas(PDF, npartitions=3)
    out = df.shuffle(["k", "j"], npartitions=npartitions, shuffle_method="tasks")
    parts = _parts(out)
    assert len(parts) == (npartitions or 3)
    _each_key_in_one_partition(parts, lambda p: zip(p.k, p.j))
    pd.testing.assert_frame_equal(pd.concat(parts).sort_values("v"), PDF.sort_values("v"))
    by_index = _parts(df.shuffle(on_index=True, npartitions=npartitions))
    _each_key_in_one_partition(by_index, lambda p: p.index)
    renumbered = _parts(df.shuffle("k", ignore_index=True))
    assert all(list(p.index) == list(range(len(p))) for p in renumbered)


def test_series_shuffle_by_its_values_or_index():
    s = xd.from_pandas(PDF.k, npartitions=4)
    parts = _parts(s.shuffle("k", npartitions=3))
    assert all(isinstance(p, pd.Series) and p.name == "k" for p in parts)
    _each_key_in_one_partition(parts, lambda p: p)
    pd.testing.assert_series_equal(pd.concat(parts).sort_index(kind="stable").sort_values(kind="stable"),
                                   PDF.k.sort_index(kind="stable").sort_values(kind="stable"))
    _each_key_in_one_partition(_parts(s.shuffle(on_index=True)), lambda p: p.index)


def test_shuffle_refuses_what_it_cannot_do_when_called():
    df = xd.from_pandas(PDF, npartitions=2)
    with pytest.raises(TypeError, match="on= .* or on_index=True"):
        df.shuffle()
    with pytest.raises(TypeError, match="not both"):
        df.shuffle("k", on_index=True)
    with pytest.raises(KeyError, match="nope"):
        df.shuffle("nope")
    with pytest.raises(KeyError, match="its own values"):
        df.k.shuffle("j")
    with pytest.raises(ValueError, match="shuffle method 'disk'"):
        df.shuffle("k", shuffle_method="disk")
    with pytest.raises(TypeError, match="unknown options"):
        df.shuffle("k", max_branch=4)


def test_shuffle_by_values_of_ones_own_and_a_fractional_npartitions_are_refused():
    df = xd.from_pandas(PDF, npartitions=2)
    for values in (df.k, PDF.k, PDF.index):
        with pytest.raises(TypeError, match=r"df.assign\(key=values\).shuffle\('key'\)"):
            df.shuffle(on=values)
    for bad in (2.5, 0, True):
        with pytest.raises(ValueError, match="whole number of at least 1"):
            df.shuffle("k", npartitions=bad)


@pytest.mark.parametrize("parts", [(1, 1), (3, 1), (2, 4)])
def test_a_cross_merge_pairs_every_row_in_pandas_order(parts):
    rng = np.random.default_rng(1)
    a = pd.DataFrame({"k": rng.integers(0, 5, 9), "x": rng.normal(size=9)})
    b = pd.DataFrame({"k": rng.integers(0, 5, 4), "y": list("pqrs")})
    left, right = xd.from_pandas(a, npartitions=parts[0]), xd.from_pandas(b, npartitions=parts[1])
    for out, expected in ((xd.merge(left, right, how="cross"), a.merge(b, how="cross")),
                          (left.merge(right, how="cross", suffixes=("_l", "_r")),
                           a.merge(b, how="cross", suffixes=("_l", "_r"))),
                          (left.merge(b, how="cross"), a.merge(b, how="cross"))):
        pd.testing.assert_frame_equal(out.compute().reset_index(drop=True), expected)
    with pytest.raises(ValueError, match="give no on="):
        left.merge(right, how="cross", on="k")


@pytest.mark.parametrize("how", ["left", "inner", "outer"])
def test_join_with_a_list_of_frames_like_pandas(how):
    rng = np.random.default_rng(2)
    frames = [pd.DataFrame({c: rng.normal(size=n)}, index=rng.permutation(30)[:n])
              for c, n in (("x", 20), ("y", 15), ("z", 10))]
    a, b, c = (xd.from_pandas(f, npartitions=3) for f in frames)
    got = a.join([b, c], how=how).compute().sort_index()
    pd.testing.assert_frame_equal(got, frames[0].join(frames[1:], how=how).sort_index())
    with pytest.raises(ValueError, match="without suffixes"):
        a.join([b, c], lsuffix="_l")


@pytest.mark.parametrize("seed", range(4))
def test_duplicated_like_pandas_in_every_partition(seed):  # (p2p: tests/cluster/test_p2p_shuffle.py)
    rng = np.random.default_rng(seed)
    for trial in range(8):
        n = int(rng.integers(1, 60))
        pdf = pd.DataFrame({"a": rng.integers(0, 4, n).astype(float), "b": rng.choice(list("xy"), n),
                            "c": rng.normal(size=n)}, index=rng.permutation(1000)[:n])
        pdf.loc[pdf.index[rng.random(n) < 0.2], "a"] = np.nan  # (missing keys equal one another, as pandas)
        df = xd.from_pandas(pdf, npartitions=int(rng.integers(1, 7)), sort=bool(trial % 2))
        expected_frame = pdf.sort_index() if trial % 2 else pdf
        for keep in ("first", "last", False):
            for subset in (None, ["a", "b"], "a"):
                out = df.duplicated(subset=subset, keep=keep)
                assert out.divisions == df.divisions
                pd.testing.assert_series_equal(out.compute(), expected_frame.duplicated(subset=subset, keep=keep))
            pd.testing.assert_series_equal(df.a.duplicated(keep=keep).compute(), expected_frame.a.duplicated(keep=keep))
    with pytest.raises(ValueError, match="keep must be"):
        df.duplicated(keep="middle")
    with pytest.raises(KeyError, match="nope"):
        df.duplicated(subset=["nope"])
