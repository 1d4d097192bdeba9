"""Bags, delayed and tokens as a user's comparison with plain Python and dask found them:
``accumulate`` through a None running value, ``foldby`` with a callable initial, a Bag
inside another argument of ``map``, lossy casts in ``to_dataframe``, OrderedDicts and
defaultdicts told apart by their tokens, Delayed values inside namedtuples and dataclasses,
and a task changing its elements in place."""

from __future__ import annotations

import collections
import dataclasses
import itertools
import operator

import pytest

import xsched
import xsched.bag as xb
from xsched import delayed
from xsched.tokenize import tokenize


def _ffill(prev, cur):
    return cur if cur is not None else prev


@pytest.mark.parametrize("npartitions", [1, 2, 3, 5])
def test_accumulate_through_a_none_running_value_is_itertools(npartitions):
    data = [None, None, 1, None, 2]
    b = xb.from_sequence(data, npartitions=npartitions)
    assert b.accumulate(_ffill).compute() == list(itertools.accumulate(data, _ffill))
    gone = lambda a, x: None if x == 2 else (a or 0) + x  # noqa: E731 - a running None mid-way
    assert (xb.from_sequence([1, 2, 3, 4], npartitions=min(npartitions, 4)).accumulate(gone).compute()
            == list(itertools.accumulate([1, 2, 3, 4], gone)) == [1, None, 3, 7])
    assert b.accumulate(_ffill, initial=0).compute() == list(itertools.accumulate(data, _ffill, initial=0))


def test_foldby_takes_a_callable_initial_as_a_factory():
    b = xb.from_sequence(range(10), npartitions=3)
    got = b.foldby(lambda x: x % 2, lambda acc, x: acc | {x}, set, operator.or_, set).compute()
    assert sorted(got) == [(0, {0, 2, 4, 6, 8}), (1, {1, 3, 5, 7, 9})]
    assert sorted(b.foldby(lambda x: x % 2, operator.add, 0).compute()) == [(0, 20), (1, 25)]


def test_a_bag_inside_another_argument_is_refused_when_built():
    b, o = xb.from_sequence([10, 20, 30], npartitions=2), xb.from_sequence("abc", npartitions=2)
    for call in (lambda: b.map(lambda x, d: (x, d), {"k": o}), lambda: b.map(lambda x, t: x, (o, 1)),
                 lambda: b.map_partitions(lambda p, t: p, [o]), lambda: b.map(lambda x, d: x, d={"k": o})):
        with pytest.raises(TypeError, match="a Bag inside a .* argument is not zipped"):
            call()
    assert b.map(lambda x, d: (x, d["k"]), {"k": 1}).compute() == [(10, 1), (20, 1), (30, 1)]
    assert b.map(lambda x, y: x + len(y), o).compute() == [11, 21, 31]  # (one of its own: zipped)


@pytest.mark.parametrize("records", [[{"a": 1}, {"a": 1.5}, {"a": 2.9}], [{"a": True}, {"a": 2}, {"a": 0}]])
def test_to_dataframe_refuses_a_cast_that_changes_a_value(records):
    with pytest.raises(ValueError, match="column 'a' holds values that do not fit its dtype .* would become"):
        xb.from_sequence(records, npartitions=2).to_dataframe().compute()
    fits = xb.from_sequence(records, npartitions=2).to_dataframe(meta={"a": "object"}).compute()
    assert fits.a.tolist() == [r["a"] for r in records]


def test_to_dataframe_still_casts_what_keeps_its_value():
    assert xb.from_sequence([{"a": 1.0}, {"a": 2.0}], npartitions=2).to_dataframe(
        meta={"a": "int64"}).compute().a.tolist() == [1, 2]
    assert xb.from_sequence([{"a": "1"}, {"a": "2"}], npartitions=2).to_dataframe(
        meta={"a": "int64"}).compute().a.tolist() == [1, 2]  # (text parsed, as asked)


def test_ordered_and_default_dicts_are_told_apart():
    O, D = collections.OrderedDict, collections.defaultdict
    assert tokenize(O(a=1, b=2)) != tokenize(O(b=2, a=1)) and tokenize(O(a=1)) == tokenize(O(a=1))
    assert tokenize(D(list)) != tokenize(D(int))
    assert tokenize({"a": 1, "b": 2}) == tokenize({"b": 2, "a": 1})  # (equal plain dicts: one token)
    got = xsched.compute(xb.from_sequence([O(a=1, b=2)]).map(list), xb.from_sequence([O(b=2, a=1)]).map(list))
    assert got == ([["a", "b"]], [["b", "a"]])


Pt = collections.namedtuple("Pt", "x y")


@dataclasses.dataclass
class Box:
    a: int
    b: object


def _inc(x):
    return x + 1


def test_delayed_inside_namedtuples_and_dataclasses_are_computed():
    assert xsched.compute(Pt(delayed(_inc)(1), 2)) == (Pt(2, 2),)
    assert delayed(lambda p: p.x + p.y)(Pt(delayed(_inc)(1), 2)).compute() == 4
    assert xsched.compute(Box(1, delayed(_inc)(2))) == (Box(1, 3),)
    assert delayed(lambda d: d.a + d.b)(Box(1, delayed(_inc)(2))).compute() == 4
    assert delayed(Pt(delayed(_inc)(0), [delayed(_inc)(1)])).compute() == Pt(1, [2])
    assert xsched.compute(Pt(1, 2)) == (Pt(1, 2),) and xsched.compute(Pt(1, 2), traverse=False) == (Pt(1, 2),)


def test_a_task_changing_its_elements_in_place_leaves_the_callers_objects_and_later_computes_alone():
    rows = [[1], [2]]
    b = xb.from_sequence(rows, npartitions=1).map(lambda r: r.append(9) or r)
    assert b.compute() == [[1, 9], [2, 9]] and b.compute() == [[1, 9], [2, 9]]
    assert rows == [[1], [2]]
    assert xb.from_sequence([1, "a", None]).map(str).compute() == ["1", "a", "None"]


def test_reduction_fold_and_foldby_refuse_what_is_not_a_function_when_built():
    b = xb.from_sequence(range(6), npartitions=2)
    for build, words in ((lambda: b.reduction(5, sum), r"reduction\(perpartition=...\): expected a function"),
                         (lambda: b.reduction(len, 5), r"reduction\(aggregate=...\): expected a function"),
                         (lambda: b.fold(max, combine=5), r"fold\(combine=...\): expected a function"),
                         (lambda: b.foldby(lambda x: x % 2, max, 0, combine=5),
                          r"foldby\(combine=...\): expected a function")):
        with pytest.raises(TypeError, match=words):
            build()


def test_groupby_places_equal_dataclasses_and_ranges_together():
    @dataclasses.dataclass(frozen=True)
    class Key:
        k: int
        tag: int = dataclasses.field(compare=False)

    b = xb.from_sequence([Key(i % 2, i) for i in range(8)], npartitions=4)
    assert sorted((key.k, len(v)) for key, v in b.groupby(lambda x: x, npartitions=4).compute()) == [(0, 4), (1, 4)]
    r = xb.from_sequence([range(0), range(5, 5), range(0, 3), range(0, 3, 1), range(2, 3), range(2, 3, 9)],
                         npartitions=3)
    assert sorted(len(v) for _, v in r.groupby(lambda x: x, npartitions=3).compute()) == [2, 2, 2]


def test_to_dataframe_says_what_is_wrong_with_meta_or_the_rows():
    import pandas as pd

    b = xb.from_sequence([(1, "a"), (2, "b")], npartitions=2)
    for meta in (pd.Series([], dtype=int), 5):
        with pytest.raises(TypeError, match="meta must be an empty pandas DataFrame"):
            b.to_dataframe(meta=meta)
    with pytest.raises(ValueError, match=r"do not make rows of the columns \['x'\].*one column per item"):
        b.to_dataframe(meta={"x": int}).compute()
    assert b.to_dataframe(meta={"x": int, "y": object}).compute().x.tolist() == [1, 2]
