"""Items (one value of a task graph) beside Bags: made from a Delayed value."""

import pytest

import xsched
import xsched.bag as xb


def test_an_item_from_a_delayed_value_joins_bags():
    n = xb.Item.from_delayed(xsched.delayed(len)([1, 2, 3]))
    assert n.compute() == 3 and n.apply(str).compute() == "3"
    assert xb.from_sequence([1, 2], npartitions=2).map(lambda x, k: x * k, n).compute() == [3, 6]
    assert (n.to_delayed() * 2).compute() == 6
    with pytest.raises(TypeError, match="Item.from_delayed takes a Delayed value"):
        xb.Item.from_delayed(5)
