"""A user's function that raises on one element of a bag (a malformed record, say) says which
element: a note on the exception shows it, for map (of one bag or of zipped bags), starmap,
filter and remove."""

import pytest

import xsched.bag as xb

RECORDS = [{"id": i, "v": str(i) if i != 4 else "n/a"} for i in range(10)]


@pytest.mark.parametrize("what, build", [
    ("map", lambda b: b.map(lambda r: float(r["v"]))),
    ("filter", lambda b: b.filter(lambda r: int(r["v"]) > 2)),
    ("remove", lambda b: b.remove(lambda r: int(r["v"]) > 2)),
    ("starmap", lambda b: b.map(lambda r: (r["v"],)).starmap(float)),
])
def test_the_element_a_function_raised_on_is_named(what, build):
    with pytest.raises(ValueError, match="n/a") as info:
        build(xb.from_sequence(RECORDS, npartitions=3)).compute()
    want = "{'id': 4, 'v': 'n/a'}" if what != "starmap" else "('n/a',)"
    assert f"(the bag's {what} raised on the element {want})" in info.value.__notes__


def test_zipped_bags_name_the_row():
    left = xb.from_sequence(range(6), npartitions=2)
    right = xb.from_sequence([1, 1, 0, 1, 1, 1], npartitions=2)
    with pytest.raises(ZeroDivisionError) as info:
        xb.map(lambda a, b: a / b, left, right).compute()
    assert "(the bag's map raised on the element (2, 0))" in info.value.__notes__


def test_a_long_element_is_shown_cut():
    with pytest.raises(KeyError) as info:
        xb.from_sequence([{"k": "x" * 10_000}], npartitions=1).map(lambda r: r["missing"]).compute()
    note = next(n for n in info.value.__notes__ if "raised on the element" in n)
    assert len(note) < 300 and "..." in note
