"""Every array function reads ``axis`` through one module (``xsched.array.axes``): out of bounds
is NumPy's AxisError, a non-integer NumPy's TypeError, each naming the function, when built."""

import numpy as np
import pytest

import xsched.array as xa
from xsched.array.axes import axis_index, axis_tuple, reduced_axes

N = np.arange(24.0).reshape(2, 3, 4)
X = xa.from_array(N, chunks=(1, 3, 2))

CALLS = {
    "sum": lambda m, a, ax: m.sum(a, axis=ax), "cumsum": lambda m, a, ax: m.cumsum(a, axis=ax),
    "flip": lambda m, a, ax: m.flip(a, axis=ax), "take": lambda m, a, ax: m.take(a, [0], axis=ax),
    "sort": lambda m, a, ax: m.sort(a, axis=ax), "diff": lambda m, a, ax: m.diff(a, axis=ax),
    "repeat": lambda m, a, ax: m.repeat(a, 2, axis=ax), "unwrap": lambda m, a, ax: m.unwrap(a, axis=ax),
    "apply_along_axis": lambda m, a, ax: m.apply_along_axis(np.sum, ax, a),
    "norm": lambda m, a, ax: m.linalg.norm(a, axis=ax), "median": lambda m, a, ax: m.median(a, axis=ax),
}


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("axis", [3, -4])
def test_out_of_bounds_is_numpys_axis_error_naming_the_function(name, axis):
    with pytest.raises(np.exceptions.AxisError):
        CALLS[name](np, N, axis)
    with pytest.raises(np.exceptions.AxisError, match=f"{name}: axis {axis} is out of bounds for an array of "
                                                      "dimension 3"):
        CALLS[name](xa, X, axis)


@pytest.mark.parametrize("name", ["cumsum", "sort", "take", "diff", "apply_along_axis", "unwrap"])
def test_a_float_axis_is_numpys_type_error(name):
    with pytest.raises(TypeError):
        CALLS[name](np, N, 1.0)
    with pytest.raises(TypeError, match=f"{name}: axis 1.0: 'float' object cannot be interpreted as an integer"):
        CALLS[name](xa, X, 1.0)


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("axis", [-1, 1])
def test_an_axis_in_bounds_gives_numpys_values(name, axis):
    np.testing.assert_allclose(np.asarray(CALLS[name](xa, X, axis).compute()), CALLS[name](np, N, axis))


def test_the_readers():
    assert axis_index(-1, 3, "f") == 2 and axis_index(np.int64(1), 3, "f") == 1
    assert axis_tuple((2, 0), 3, "f") == (2, 0) and axis_tuple([1], 3, "f") == (1,)
    assert axis_tuple(np.array([0, -1]), 3, "f") == (0, 2)  # (any sequence, as NumPy's moveaxis takes)
    assert np.moveaxis(X, np.array([0, 1]), [1, 0]).shape == (3, 2, 4)
    assert reduced_axes((2, 0), 3, "f") == (0, 2) and reduced_axes(None, 3, "f") == (0, 1, 2)
    with pytest.raises(ValueError, match=r"f: axis \(0, -3\) lists an axis twice"):
        axis_tuple((0, -3), 3, "f")
    with pytest.raises(TypeError, match="norm: axis 1.0: 'float' object cannot be interpreted as an integer"):
        xa.linalg.norm(X, axis=1.0)  # (one axis that is not an integer, not taken for a list of them)
