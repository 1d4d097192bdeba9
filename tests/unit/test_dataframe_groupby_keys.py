"""pandas' ways of naming a grouping key beside column names: the index's name, ``level=``,
a function or dict of the index's labels, a pandas Series matched by label, a Series computed
from the frame (for the methods that move whole groups too), a frame's own column among other
keys; a NumPy array (matched by position) is refused. Computed in this process, against pandas."""

import numpy as np
import pandas as pd
import pytest

import xsched.dataframe as xd

RNG = np.random.default_rng(0)
PDF = pd.DataFrame({"k": RNG.choice(list("abc"), 30), "j": RNG.integers(0, 3, 30), "v": RNG.normal(size=30),
                    "w": RNG.integers(0, 10, 30)}, index=pd.Index(np.arange(30) * 2, name="idx"))
LABELS = {i: "xyz"[i % 3] for i in PDF.index}


@pytest.fixture(params=[1, 3])
def df(request):
    return xd.from_pandas(PDF, npartitions=request.param)


def _same(got, want):
    got = got.compute()
    if isinstance(want, pd.DataFrame):
        pd.testing.assert_frame_equal(got, want)
    else:
        pd.testing.assert_series_equal(got, want)


@pytest.mark.parametrize("key", ["index name", "level 0", "level name", "function", "dict", "pandas Series"])
def test_keys_of_the_index_labels_group_as_pandas(df, key):
    given = {"index name": ("idx", {}), "level 0": (None, {"level": 0}), "level name": (None, {"level": "idx"}),
             "function": (lambda i: i % 4, {}), "dict": (LABELS, {}),
             "pandas Series": (pd.Series(LABELS, name="m"), {})}[key]
    by, kw = given

    def grouped(frame):
        return frame.groupby(by, **kw) if by is not None else frame.groupby(**kw)
    _same(grouped(df).sum(), grouped(PDF).sum())
    _same(grouped(df).v.mean(), grouped(PDF).v.mean())
    _same(grouped(df).w.nunique(), grouped(PDF).w.nunique())
    _same(grouped(df).v.median(), grouped(PDF).v.median())
    _same(grouped(df).size(), grouped(PDF).size())
    pd.testing.assert_series_equal(grouped(df).v.transform("max").compute().sort_index(),
                                   grouped(PDF).v.transform("max"))


def test_a_series_key_moves_whole_groups_for_the_methods_that_need_them(df):
    hour = df.w % 3
    phour = PDF.w % 3
    _same(df.groupby(hour).v.median(), PDF.groupby(phour).v.median())
    _same(df.groupby(hour).median(numeric_only=True), PDF.groupby(phour).median(numeric_only=True))
    with pytest.raises(TypeError, match=r"median: pandas refuses it on columns \{'k': 'str', 'j': 'int64', "
                                        r"'v': 'float64', 'w': 'int64'\}"):
        df.groupby(hour).median()
    _same(df.groupby(hour).w.nunique(), PDF.groupby(phour).w.nunique())
    _same(df.groupby(hour).v.idxmax(), PDF.groupby(phour).v.idxmax())
    _same(df.groupby(hour.rename("h")).v.agg(["median", "nunique"]),
          PDF.groupby(phour.rename("h")).v.agg(["median", "nunique"]))
    spread = df.groupby(hour).v.apply(lambda s: s.max() - s.min(), meta=("v", "f8"))  # (groups in the shuffle's order)
    pd.testing.assert_series_equal(spread.compute().sort_index(), PDF.groupby(phour).v.apply(lambda s: s.max() - s.min()))
    pd.testing.assert_series_equal(df.groupby(hour).v.transform("mean").compute().sort_index(),
                                   PDF.groupby(phour).v.transform("mean"))
    pd.testing.assert_series_equal(df.groupby(hour).ngroup().compute(), PDF.groupby(phour).ngroup())
    assert df.groupby(hour).ngroups.compute() == PDF.groupby(phour).ngroups
    pd.testing.assert_frame_equal(df.groupby(hour).get_group(1).compute(), PDF.groupby(phour).get_group(1))
    own = df.groupby(df.k)  # (the frame's own column: left out of the aggregated columns, as pandas does)
    _same(own.median(numeric_only=True), PDF.groupby(PDF.k).median(numeric_only=True))


def test_a_frames_own_column_among_other_keys_is_that_column(df):
    _same(df.groupby(["k", df.j]).v.sum(), PDF.groupby(["k", PDF.j]).v.sum())
    _same(df.groupby([df.k, df.j]).w.max(), PDF.groupby([PDF.k, PDF.j]).w.max())


def test_series_group_by_their_index_level():
    s = xd.from_pandas(PDF.v, npartitions=3)
    _same(s.groupby(level=0).sum(), PDF.v.groupby(level=0).sum())
    _same(s.groupby(lambda i: i % 3).max(), PDF.v.groupby(lambda i: i % 3).max())


def test_keys_matched_by_position_or_levels_that_are_not_there_are_refused(df):
    with pytest.raises(TypeError, match="a NumPy array .* is matched to the rows by position"):
        df.groupby(PDF.j.to_numpy())
    with pytest.raises(ValueError, match=r"groupby\(level=1\): the index has one level, 0 \(named 'idx'\)"):
        df.groupby(level=1)
    two = xd.from_pandas(PDF.set_index("k", append=True), npartitions=2)
    with pytest.raises(TypeError, match=r"groupby\(level=0\) of a MultiIndex: reset_index\(\) first"):
        two.groupby(level=0)
    with pytest.raises(TypeError, match="give by or level, not both"):
        df.groupby("k", level=0)


def test_nunique_keeps_a_categorical_keys_categories():
    frame = PDF.assign(h=PDF.k.astype("category"))
    df = xd.from_pandas(PDF, npartitions=3)
    _same(df.assign(h=df.k.astype("category")).groupby("h").w.nunique(), frame.groupby("h").w.nunique())


@pytest.mark.parametrize("how", [lambda g: g.sum(), lambda g: g.agg(["mean", "max"]), lambda g: g.median(),
                                 lambda g: g.cumsum(), lambda g: g.transform("sum")])
def test_a_series_grouped_by_several_series(df, how):
    for keys in (lambda d: [d.k, d.j], lambda d: [d.k, d.w > 4], lambda d: [d.j]):
        want = how(PDF.v.groupby(keys(PDF)))
        got = how(df.v.groupby(keys(df))).compute()
        pd.testing.assert_series_equal(got.sort_index(), want.sort_index()) if isinstance(want, pd.Series) else \
            pd.testing.assert_frame_equal(got.sort_index(), want.sort_index())
    _same(df.v.rename(None).groupby([df.k, df.j]).sum(), PDF.v.rename(None).groupby([PDF.k, PDF.j]).sum())
