"""Writing into a frame as pandas users do: ``df.loc[rows, cols] = value``, ``df.a = ...`` of an
existing column, ``s.name = ...``; and refusals that name the way for what cannot be done
(positions of rows, an Index taken from its frame)."""

import warnings

import pandas as pd
import pandas.testing as tm
import pytest

import xsched.dataframe as xd

PDF = pd.DataFrame({"x": [1, -2, 3, -4, 5, -6], "y": [1.0, 2, 3, 4, 5, 6]}, index=[10, 20, 30, 40, 50, 60])

CASES = {
    "mask, one column": lambda d: d.loc.__setitem__((d.x > 0, "y"), 0.0),
    "mask, two columns, one value": lambda d: d.loc.__setitem__((d.x > 0, ["x", "y"]), 0),
    "mask, a value per column": lambda d: d.loc.__setitem__((d.x > 0, ["x", "y"]), [7, 8.5]),
    "mask, every column": lambda d: d.loc.__setitem__(d.x > 0, -1),
    "mask, a new column": lambda d: d.loc.__setitem__((d.x < 0, "new"), 1),
    "every row, one column": lambda d: d.loc.__setitem__((slice(None), "y"), 3.5),
    "every row, a new column": lambda d: d.loc.__setitem__((slice(None), "z"), 2),
    "a label": lambda d: d.loc.__setitem__((30, "y"), 99.0),
    "labels": lambda d: d.loc.__setitem__(([20, 50], "y"), 99.0),
    "a slice of labels": lambda d: d.loc.__setitem__((slice(20, 40), "x"), 0),
    "a slice open below": lambda d: d.loc.__setitem__((slice(None, 30), "y"), -1.0),
    "a collection as the value": lambda d: d.loc.__setitem__((d.x > 0, "y"), d.y * 10),
    "a callable for the rows": lambda d: d.loc.__setitem__((lambda f: f.x > 2, "y"), 0.0),
    "an existing column by attribute": lambda d: setattr(d, "y", d.y + 1),
}


@pytest.mark.parametrize("npartitions", [1, 3])
@pytest.mark.parametrize("case", sorted(CASES))
def test_assignment_as_pandas(case, npartitions):
    expected = PDF.copy()
    CASES[case](expected)
    x = xd.from_pandas(PDF, npartitions=npartitions)
    before = x.y * 1
    CASES[case](x)
    tm.assert_frame_equal(x.compute(), expected)
    tm.assert_series_equal(before.compute(), PDF.y * 1)  # (built before: the old values)


def test_series_loc_mask_and_name():
    s = pd.Series([1.0, 2, 3, 4], name="s")
    x = xd.from_pandas(s, npartitions=2)
    x.loc[x > 2] = 0
    x.name = "t"
    expected = s.copy()
    expected.loc[expected > 2] = 0
    expected.name = "t"
    assert x.name == "t"
    tm.assert_series_equal(x.compute(), expected)


def test_a_new_attribute_is_not_a_column_and_says_so():
    x = xd.from_pandas(PDF, npartitions=2)
    with pytest.warns(UserWarning, match=r"sets an attribute, not a column.*df\['w'\] = "):
        x.w = x.y * 2
    assert list(x.columns) == ["x", "y"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x.note = "a scalar: an attribute, quietly"  # (as pandas)
    assert x.note.startswith("a scalar")


def test_a_column_named_with_an_underscore_is_an_attribute_as_in_pandas():
    left = xd.from_pandas(pd.DataFrame({"k": [1, 2, 3]}), npartitions=2)
    right = xd.from_pandas(pd.DataFrame({"k": [2, 3, 4]}), npartitions=1)
    joined = xd.merge(left, right, on="k", how="outer", indicator=True)
    expected = pd.merge(left.compute(), right.compute(), on="k", how="outer", indicator=True)
    assert sorted(joined._merge.compute().astype(str)) == sorted(expected._merge.astype(str))
    with pytest.raises(AttributeError):
        joined._not_a_column
    with pytest.raises(AttributeError):
        joined.__not_a_protocol__


def test_what_cannot_be_set_is_refused_naming_the_way():
    x = xd.from_pandas(PDF, npartitions=2)
    with pytest.raises(NotImplementedError, match=r"df\.loc\[df\.a > 0, 'b'\] = value"):
        x.iloc[0] = 5
    with pytest.raises(AttributeError, match=r"rename_axis\('r'\)"):
        x.index.name = "r"
    unsorted = xd.from_pandas(PDF.iloc[::-1], npartitions=2, sort=False)
    with pytest.raises(NotImplementedError, match="known divisions"):
        unsorted.loc[20:40, "x"] = 0
    with pytest.raises(ValueError, match="3 values for 2 columns"):
        x.loc[x.x > 0, ["x", "y"]] = [1, 2, 3]
    with pytest.raises(TypeError, match="mask collection"):
        x.loc[[True, False, True, False, True, False], "x"] = 0
    tm.assert_frame_equal(x.compute(), PDF)  # (refused: the frame as it was)
