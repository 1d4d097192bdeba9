"""NumPy parity of the array core: list and tuple operands, a ufunc's dtype=, ufuncs with
several outputs and ufunc methods, ``take`` without an axis and with booleans, scalar
boolean indices (``x[True]``), ``astype(str)``, iteration and conversion to Python
scalars. NumPy's answer is the reference; several chunkings each."""

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import xsched.array as xa

CHUNKS_1D = [1, 2, 3]
CHUNKS_2D = [1, 2, (2, 3), (3, 1)]


def same(got, want):
    """``got`` (an xsched Array) has NumPy's shape and dtype, declared and computed, and values."""
    want = np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.dtype)
    value = got.compute()
    assert value.dtype == want.dtype
    assert_array_equal(value, want)


# --------------------------------------------------------------------------- list and tuple operands


OPERAND_CASES = {
    "x + list": lambda x: x + [10, 20, 30, 40],
    "list + x": lambda x: [10, 20, 30, 40] + x,
    "x * tuple": lambda x: x * (1, 2, 3, 4),
    "np.add(x, list)": lambda x: np.add(x, [10, 20, 30, 40]),
    "x == list": lambda x: x == [0, 1, 0, 3],
    "where(c, list, 0)": lambda x: (xa.where if not isinstance(x, np.ndarray) else np.where)(
        x > 1, [10, 20, 30, 40], 0),
    "clip(x, list, 3)": lambda x: (xa.clip if not isinstance(x, np.ndarray) else np.clip)(
        x, [1, 1, 2, 2], 3),
}


@pytest.mark.parametrize("chunks", CHUNKS_1D)
@pytest.mark.parametrize("case", sorted(OPERAND_CASES))
def test_a_list_or_tuple_operand_is_cut_into_blocks_like_an_array(case, chunks):
    a = np.arange(4.0)
    same(OPERAND_CASES[case](xa.from_array(a, chunks=chunks)), OPERAND_CASES[case](a))


@pytest.mark.parametrize("chunks", CHUNKS_1D)
def test_elemwise_takes_list_operands(chunks):
    a = np.arange(4.0)
    x = xa.from_array(a, chunks=chunks)
    same(xa.elemwise(np.hypot, x, [1, 2, 3, 4]), np.hypot(a, [1, 2, 3, 4]))


@pytest.mark.parametrize("chunks", CHUNKS_2D)
def test_a_list_operand_broadcasts_against_a_2d_array(chunks):
    a = np.arange(12).reshape(3, 4).astype("i2")
    x = xa.from_array(a, chunks=chunks)
    same(x + [10, 20, 30, 40], a + [10, 20, 30, 40])  # (a list is int64, not a weak scalar)
    same(x - [[1], [2], [3]], a - [[1], [2], [3]])


def test_a_list_holding_xsched_arrays_is_refused_when_built():
    x = xa.from_array(np.arange(2.0), chunks=1)
    with pytest.raises(TypeError, match="xa.stack"):
        x + [x, x]


# --------------------------------------------------------------------------- ufunc keywords


@pytest.mark.parametrize("chunks", [1, 2, 5])
@pytest.mark.parametrize("call", [
    lambda v: np.add(v, 1, dtype="f4"),
    lambda v: np.sin(v, dtype="f4"),
    lambda v: np.multiply(v, v, dtype="i4", casting="unsafe"),
])
def test_a_ufuncs_dtype_is_the_computed_dtype(call, chunks):
    a = np.arange(5.0) - 2
    same(call(xa.from_array(a, chunks=chunks)), call(a))


def test_where_fails_when_built():
    x = xa.from_array(np.arange(3.0), chunks=2)
    with pytest.raises(TypeError, match="where= is not supported"):
        np.add(x, 1, where=np.array([True, False, True]))


def test_out_fails_when_built_naming_the_ufunc():
    x = xa.from_array(np.ones((2, 2)), chunks=1)
    with pytest.raises(TypeError, match="add: out= is not supported"):
        np.add(x, 1, out=np.empty((2, 2)))
    with pytest.raises(TypeError, match="matmul: out= is not supported"):
        np.matmul(x, x, out=np.empty((2, 2)))


@pytest.mark.parametrize("chunks", [1, 2, 5])
@pytest.mark.parametrize("call", [
    lambda v: np.divmod(v, 2),
    lambda v: np.divmod(v, 2, dtype="f4"),
    lambda v: np.modf(v),
    lambda v: np.frexp(v),
    lambda v: divmod(v, 3),
    lambda v: divmod(7, v + 5),
])
def test_ufuncs_with_several_outputs_give_a_tuple_of_arrays(call, chunks):
    a = np.arange(5.0) * 1.5 - 2
    got, want = call(xa.from_array(a, chunks=chunks)), call(a)
    assert isinstance(got, tuple) and len(got) == len(want)
    for g, w in zip(got, want):
        same(g, w)


@pytest.mark.parametrize("call, words", [
    (lambda x: np.logical_and.reduce(x > 1, initial=True), "np.logical_and.reduce .* xa.all"),
    (lambda x: np.subtract.reduce(x), r"np.subtract.reduce .* xa.reduction"),
    (lambda x: np.subtract.accumulate(x), r"np.subtract.accumulate .* xa.scan"),
    (lambda x: np.add.at(x, [0], 1), r"np.add.at .* x\[index\] = "),
    (lambda x: np.vecdot(x, x, dtype="f4"), "np.vecdot on xsched arrays takes axis= only, not dtype"),
    (lambda x: np.matvec(x[None], x, axes=[(-2, -1), (-1,), (-1,)]), "np.matvec on xsched arrays takes no options"),
])
def test_ufunc_methods_and_gufuncs_say_what_to_use_instead(call, words):
    x = xa.from_array(np.arange(4.0), chunks=2)
    with pytest.raises(TypeError, match=words):
        call(x)


@pytest.mark.parametrize("chunks", [(2, 4), (5, 6), (1, 1)])
def test_ufunc_reduce_accumulate_and_outer_run_as_numpy_s(chunks):
    a = np.random.default_rng(0).normal(size=(5, 6))
    a[1, 2] = np.nan
    x, b = xa.from_array(a, chunks=chunks), a > 0
    xb = xa.from_array(b, chunks=chunks)
    calls = [lambda m, v, w: m.add.reduce(v), lambda m, v, w: m.maximum.reduce(v, axis=1),
             lambda m, v, w: m.minimum.reduce(v, axis=None), lambda m, v, w: m.multiply.reduce(v, axis=(0, 1), keepdims=True),
             lambda m, v, w: m.logical_or.reduce(w), lambda m, v, w: m.logical_and.reduce(w, axis=1),
             lambda m, v, w: m.add.accumulate(v), lambda m, v, w: m.multiply.accumulate(v, axis=1),
             lambda m, v, w: m.subtract.outer(v[0], v[:, 1]), lambda m, v, w: m.multiply.outer(v, [1, 2]),
             lambda m, v, w: m.add.reduce(v, dtype="f4")]
    for call in calls:
        got, want = call(np, x, xb).compute(), call(np, a, b)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)


# --------------------------------------------------------------------------- take


@pytest.mark.parametrize("chunks", CHUNKS_2D)
@pytest.mark.parametrize("indices", [[0, 2], [1, 7], [-1, 11, 0, 5], []])
def test_take_without_an_axis_takes_from_the_flattened_array(indices, chunks):
    a = np.arange(12).reshape(3, 4)
    x = xa.from_array(a, chunks=chunks)
    same(np.take(x, indices), np.take(a, indices))
    same(xa.take(x, indices), np.take(a, indices))


def test_take_without_an_axis_on_a_0d_array():
    same(xa.take(xa.asarray(np.array(5)), [0, 0]), np.take(np.array(5), [0, 0]))


@pytest.mark.parametrize("chunks", [1, 2, 3])
def test_take_reads_booleans_as_zeros_and_ones_but_an_index_as_a_mask(chunks):
    a = np.arange(3) * 10
    picks = np.array([True, False, True])
    x = xa.from_array(a, chunks=chunks)
    same(xa.take(x, picks), np.take(a, picks))
    same(np.take(x, picks, axis=0), np.take(a, picks, axis=0))
    b = np.arange(12).reshape(4, 3)
    y = xa.from_array(b, chunks=chunks)
    same(xa.take(y, picks, axis=1), np.take(b, picks, axis=1))
    rows = np.array([True, False, True, True])
    same(y[rows], b[rows])
    same(y[:, picks], b[:, picks])
    same(y[[True, False, True, True]], b[[True, False, True, True]])
    same(y[1:, picks], b[1:, picks])


# --------------------------------------------------------------------------- x[True], x[False]


SCALAR_BOOL_INDICES = [
    True, False, np.True_, np.False_, np.array(True), (True,), (True, 0), (0, True),
    (slice(None), True), (0, slice(None), True), (True, slice(None), 0), (Ellipsis, True),
    (True, True), (True, False), (None, True), (True, None, 0), (0, True, 1), (0, 0, 0, True),
    (True, Ellipsis, 0), (True, Ellipsis, 0, 0, 0), (False, slice(1, None), -1),
    (slice(None, None, -1), np.False_, 1),
]


@pytest.mark.parametrize("chunks", [1, 2, (2, 3, 4)])
@pytest.mark.parametrize("index", SCALAR_BOOL_INDICES, ids=repr)
def test_a_scalar_boolean_index_adds_an_axis_as_in_numpy(index, chunks):
    a = np.arange(24).reshape(2, 3, 4)
    same(xa.from_array(a, chunks=chunks)[index], a[index])


def test_a_scalar_boolean_with_an_integer_array_fails_when_built():
    x = xa.from_array(np.arange(12).reshape(3, 4), chunks=2)
    with pytest.raises(IndexError, match="scalar boolean"):
        x[True, [0, 1]]


# --------------------------------------------------------------------------- astype, iteration, scalars


@pytest.mark.parametrize("dtype", ["i1", "i8", "f8", "c16", "?", "M8[s]", "U5", "S3"])
@pytest.mark.parametrize("to", [str, bytes, "U", "S"])
def test_astype_to_an_unsized_string_declares_numpys_length(dtype, to):
    a = np.arange(5).astype(dtype) if dtype[0] not in "US" else np.array(list("abcde"), dtype)
    same(xa.from_array(a, chunks=2).astype(to), a.astype(to))


def test_astype_str_of_an_object_array_asks_for_the_length():
    x = xa.from_array(np.array(["a", "bcd"], dtype=object), chunks=1)
    with pytest.raises(TypeError, match="give the length"):
        x.astype(str)


@pytest.mark.parametrize("chunks", [1, 2, (2, 3)])
def test_iterating_gives_the_subarrays_along_the_first_axis_and_fails_for_0d(chunks):
    with pytest.raises(TypeError, match="iteration over a 0-d array"):
        list(xa.asarray(1.0))
    a = np.arange(15.0).reshape(3, 5)
    rows = list(xa.from_array(a, chunks=chunks))
    assert len(rows) == 3
    for got, want in zip(rows, a):
        same(got, want)


@pytest.mark.parametrize("kind", [int, float, complex])
def test_only_0d_arrays_convert_to_python_scalars(kind):
    with pytest.raises(TypeError, match="only 0-dimensional arrays"):
        kind(xa.from_array(np.array([3.7]), chunks=1))
    with pytest.raises(TypeError):
        kind(np.array([3.7]))  # (NumPy 2 too)
    assert kind(xa.asarray(np.array(3.7))) == kind(np.array(3.7))
