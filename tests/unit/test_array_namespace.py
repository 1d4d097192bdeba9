"""The namespace's element-wise functions (``xa.sin``, ``xa.maximum``, ... from
``xsched.array.ufuncs``) against NumPy's: every one on random inputs of its domain over
several chunkings and dtypes, lazily; mixed operands; several outputs; the Array API's names;
the dtype functions; NumPy's functions reaching them through ``__array_function__``; errors
raised when the expression is built. Everything runs in this process (no client)."""

from __future__ import annotations

import inspect
import itertools

import numpy as np
import pytest

import xsched.array as xa
from xsched.array import dispatch, ufuncs

SHAPE = (5, 7)
CHUNKINGS = [(5, 7), (2, 3), ((1, 4), (3, 3, 1))]
DTYPES = ["float64", "float32", "int64", "bool", "complex128"]
#: (low, high) of a domain's values, and of the second operand where it has its own.
RANGES = {"real": (-5, 5), "power": (-3, 3), "unit": (-1, 1), "from1": (1, 6),
          "positive": (0.1, 6), "complex": (-3, 3), "integer": (0, 60), "datetime": (-5, 5),
          "exponent": (-3, 3)}
SECOND = {"power": (0, 3), "integer": (0, 5), "exponent": (0, 5)}

# (NumPy's own names: numexpr, which pandas and PyTables import, adds an alias or two to the module)
NUMPY_UFUNCS = sorted(n for n in dir(np) if isinstance(getattr(np, n), np.ufunc)
                      and getattr(np, n).signature is None and n in np.__all__)
CANONICAL = [n for n in ufuncs.UFUNCS if getattr(np, n).__name__ == n]
ALIASES = [n for n in ufuncs.UFUNCS if getattr(np, n).__name__ != n]


def sample(dtype, low, high, seed, shape=SHAPE):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(int(np.ceil(low)), int(high) + 1, size=shape).astype(dtype)
    values = rng.uniform(low, high, size=shape)
    if dtype.kind == "c":
        values = values + 1j * rng.uniform(low, high, size=shape)
    return values.astype(dtype)


def operands(name, dtype, seed=0):
    """NumPy inputs of ``name`` drawn from its domain, of ``dtype``."""
    domain = ufuncs.UFUNCS[name]
    x = sample(dtype, *RANGES[domain], seed)
    if getattr(np, name).nin == 1:
        return (x,)
    second_dtype = "int64" if domain == "exponent" else dtype
    return x, sample(second_dtype, *SECOND.get(domain, RANGES[domain]), seed + 1)


def ends(blocks):
    """Where the blocks along an axis end."""
    return set(itertools.accumulate(blocks))


def assert_same(got, expected):
    expected = np.asarray(expected)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if expected.dtype.kind in "fc":
        rtol = 1e-5 if expected.dtype in (np.float16, np.float32, np.complex64) else 1e-12
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=0, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected)


# --------------------------------------------------------------------------- the functions


def test_every_elementwise_numpy_ufunc_is_a_function_of_the_namespace():
    assert sorted(ufuncs.UFUNCS) == NUMPY_UFUNCS
    assert set(ufuncs.EXAMPLES) == set(ufuncs.DOMAINS)
    for name in ufuncs.UFUNCS:
        func = getattr(xa, name)
        ufunc = getattr(np, name)
        assert (func.__name__, func.__qualname__, func.__module__) == (name, name, "xsched.array")
        params = list(inspect.signature(func).parameters)
        assert params == (["x"] if ufunc.nin == 1 else ["x1", "x2"]) + ["dtype", "where", "out"]
        assert func.__doc__.splitlines()[0].endswith(".") and f"xa.{name}(x" in func.__doc__
        assert name in xa.__all__


def test_names_are_new_to_the_namespace_and_existing_ones_kept():
    assert len(set(xa.__all__)) == len(xa.__all__)
    assert xa.round is xa.around and xa.clip.__module__ == "xsched.array.manipulation"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", CANONICAL)
def test_function_matches_numpy_over_chunkings_and_dtypes(name, dtype):
    ufunc = getattr(np, name)
    inputs = operands(name, dtype)
    with np.errstate(all="ignore"):
        try:
            expected = ufunc(*inputs)
        except TypeError:  # NumPy has no loop for these dtypes: refused when built
            for chunks in CHUNKINGS:
                with pytest.raises(TypeError):
                    getattr(xa, name)(*[xa.from_array(a, chunks=chunks) for a in inputs])
            return
        for i, chunks in enumerate(CHUNKINGS):
            # operands cut otherwise: both are cut wherever either is
            args = [xa.from_array(a, chunks=CHUNKINGS[(i + k) % 3]) for k, a in enumerate(inputs)]
            got = getattr(xa, name)(*args)
            if ufunc.nout == 1:
                assert isinstance(got, xa.Array)
                assert [ends(c) for c in got.chunks] == [set().union(*(ends(a.chunks[d]) for a in args))
                                                         for d in range(got.ndim)]
                assert got.dtype == np.asarray(expected).dtype
                assert_same(got.compute(), expected)
            else:
                assert isinstance(got, tuple) and len(got) == ufunc.nout
                for g, e in zip(got, expected):
                    assert isinstance(g, xa.Array) and g.dtype == e.dtype
                    assert_same(g.compute(), e)


@pytest.mark.parametrize("name", ALIASES)
def test_aliases_equal_their_numpy_counterpart(name):
    canonical = getattr(np, name).__name__
    inputs = operands(name, "int64" if ufuncs.UFUNCS[name] == "integer" else "float64")
    args = [xa.from_array(a, chunks=(2, 3)) for a in inputs]
    got, same = getattr(xa, name)(*args), getattr(xa, canonical)(*args)
    assert got.name == same.name  # one implementation: the same graph
    with np.errstate(all="ignore"):
        assert_same(got.compute(), getattr(np, canonical)(*inputs))


def test_the_array_api_names_are_there():
    pairs = {"acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh",
             "atan": "arctan", "atan2": "arctan2", "atanh": "arctanh", "bitwise_invert": "invert",
             "bitwise_left_shift": "left_shift", "bitwise_right_shift": "right_shift",
             "pow": "power", "divide": "divide", "conj": "conjugate", "abs": "absolute"}
    for name, numpy_name in pairs.items():
        assert getattr(np, name) is getattr(np, numpy_name) and callable(getattr(xa, name))
    for name in ("real", "imag", "round", "clip", "astype", "isdtype", "can_cast", "finfo",
                 "iinfo", "result_type", "isclose", "allclose"):
        assert name in xa.__all__ and callable(getattr(xa, name))


def test_isnat_on_datetimes_and_timedeltas():
    for a in (np.array(["2024-01-01", "NaT", "2024-03-01", "NaT", "2025-01-01"], "M8[s]"),
              np.array([1, "NaT", 3, 4, "NaT"], "m8[D]")):
        for chunks in (5, 2, ((1, 4),)):
            got = xa.isnat(xa.from_array(a, chunks=chunks))
            np.testing.assert_array_equal(got.compute(), np.isnat(a))


def test_nothing_is_computed_until_compute():
    calls = []

    def source(block):
        calls.append(1)
        return block

    inputs = {dtype: xa.from_array(a, chunks=2).map_blocks(source, dtype=a.dtype)
              for dtype, a in [("float64", sample("float64", 0.1, 0.9, 0)),
                               ("int64", sample("int64", 1, 5, 0)),
                               ("datetime", (np.datetime64("2024-01-01") + np.arange(35)).reshape(SHAPE))]}
    built = []
    for name, domain in ufuncs.UFUNCS.items():
        x = inputs["int64" if domain == "integer" else "datetime" if domain == "datetime"
                   else "float64"]
        args = (x,) if getattr(np, name).nin == 1 else (x, inputs["int64"] if domain == "exponent" else x)
        out = getattr(xa, name)(*args)
        built.extend(out if isinstance(out, tuple) else (out,))
    f = inputs["float64"]
    built += [xa.real(f), xa.imag(f), xa.isclose(f, 0.5), xa.allclose(f, f), xa.astype(f, "f4")]
    assert all(isinstance(b, xa.Array) for b in built) and calls == []
    built[0].compute()
    assert calls  # (the counting source does count)


# --------------------------------------------------------------------------- operands


def test_mixed_scalar_numpy_and_xsched_operands_broadcast_like_numpy():
    a = sample("float64", -5, 5, 1)
    row = sample("float32", -5, 5, 2, shape=(7,))
    x = xa.from_array(a, chunks=(2, 3))
    r = xa.from_array(row, chunks=3)
    cases = [
        (xa.add(x, row), np.add(a, row)),            # xsched and a NumPy row
        (xa.add(row, x), np.add(row, a)),            # the NumPy array first
        (xa.maximum(r, a), np.maximum(row, a)),      # a smaller xsched array broadcast
        (xa.subtract(2.5, x), np.subtract(2.5, a)),  # a scalar first
        (xa.multiply(r, 2.0), np.multiply(row, 2.0)),  # a Python float keeps float32
        (xa.multiply(r, np.float64(2.0)), np.multiply(row, np.float64(2.0))),
        (xa.hypot(x[:, :1], r), np.hypot(a[:, :1], row)),
        (xa.power(x, [1, 2, 3, 1, 2, 3, 1]), np.power(a, [1, 2, 3, 1, 2, 3, 1])),  # a list
    ]
    for got, expected in cases:
        assert isinstance(got, xa.Array) and got.dtype == expected.dtype
        np.testing.assert_allclose(got.compute(), expected, rtol=1e-6)


def test_without_an_xsched_operand_the_result_is_still_an_xsched_array():
    a = sample("float32", -5, 5, 3)
    cases = [
        (xa.sin(a), np.sin(a)),
        (xa.sqrt([1.0, 4.0, 9.0]), np.sqrt([1.0, 4.0, 9.0])),
        (xa.add(a, 1.5), np.add(a, 1.5)),             # the Python float stays weak: float32
        (xa.add(np.float32(1), 2.0), np.add(np.float32(1), 2.0)),
        (xa.add(1, 2.5), np.add(1, 2.5)),             # all Python scalars: a 0-d array
        (xa.left_shift(1, 3), np.left_shift(1, 3)),
    ]
    for got, expected in cases:
        assert isinstance(got, xa.Array) and got.dtype == np.asarray(expected).dtype
        np.testing.assert_allclose(got.compute(), expected, rtol=1e-6)
    with pytest.raises(TypeError, match="a list or tuple holding xsched arrays"):
        xa.sin([xa.ones(2, chunks=1)])


@pytest.mark.parametrize("chunks", [7, 3, ((1, 6),)])
def test_several_outputs_give_a_tuple_of_arrays(chunks):
    a = np.array([-3.5, -1.0, 0.0, 0.25, 2.0, 7.75, np.inf])
    b = np.array([2.0, -1.5, 3.0, 0.5, -2.0, 0.5, 1.0])
    x, y = xa.from_array(a, chunks=chunks), xa.from_array(b, chunks=chunks)
    with np.errstate(all="ignore"):
        for got, expected in [(xa.frexp(x), np.frexp(a)), (xa.modf(x), np.modf(a)),
                              (xa.divmod(x, y), np.divmod(a, b)),
                              (xa.divmod(x, 2), np.divmod(a, 2)),
                              (xa.modf(x, dtype="f4"), np.modf(a, dtype="f4"))]:
            assert isinstance(got, tuple) and len(got) == 2
            for g, e in zip(got, expected):
                assert isinstance(g, xa.Array) and g.dtype == e.dtype
                np.testing.assert_array_equal(g.compute(), e)


def test_dtype_where_and_out_keywords():
    a = sample("float64", -5, 5, 4)
    x = xa.from_array(a, chunks=2)
    got = xa.add(x, 1, dtype="float32")
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.compute(), np.add(a, 1, dtype="float32"))
    np.testing.assert_array_equal(xa.sin(x, where=True, out=None).compute(), np.sin(a))
    with pytest.raises(TypeError, match="where= is not supported"):
        xa.sin(x, where=a > 0)
    with pytest.raises(TypeError, match="out= is not supported"):
        xa.sin(x, out=np.empty(SHAPE))
    with pytest.raises(TypeError, match="out= is not supported"):
        xa.divmod(x, 2, out=(np.empty(SHAPE), np.empty(SHAPE)))
    with pytest.raises(TypeError):
        xa.sin(x, x)  # one operand only, as NumPy's


def test_errors_come_when_the_expression_is_built(monkeypatch):
    computed = []
    monkeypatch.setattr(xa.Array, "compute", lambda *a, **k: computed.append(1))
    monkeypatch.setattr(xa.Array, "__array__", lambda *a, **k: computed.append(1))
    x = xa.ones(SHAPE, chunks=2)
    with pytest.raises(ValueError, match=r"add: shapes .*\(5, 7\).*\(4,\).* do not broadcast"):
        xa.add(x, xa.ones(4, chunks=2))
    with pytest.raises(ValueError, match=r"maximum: shapes .*\(5, 7\).*\(3, 7\)"):
        xa.maximum(x, np.ones((3, 7)))
    with pytest.raises(TypeError, match="left_shift"):
        xa.left_shift(x, 1)  # floats have no bits to shift
    with pytest.raises(TypeError, match="isnat"):
        xa.isnat(x)
    with pytest.raises(TypeError):
        xa.floor_divide(x.astype(complex), 2)
    assert not computed


# --------------------------------------------------------------------------- non-ufuncs


@pytest.mark.parametrize("dtype", ["complex64", "complex128", "float32", "int64", "bool"])
def test_real_imag_conj_as_numpy_also_through_numpy(dtype):
    a = sample(dtype, -5, 5, 5)
    if np.dtype(dtype).kind == "c":
        a = (a + 1j * sample("float64", -5, 5, 6)).astype(dtype)
    x = xa.from_array(a, chunks=(2, 3))
    for got, expected in [(xa.real(x), np.real(a)), (xa.imag(x), np.imag(a)),
                          (np.real(x), np.real(a)), (np.imag(x), np.imag(a)),
                          (xa.conj(x), np.conj(a))]:
        assert isinstance(got, xa.Array) and got.dtype == expected.dtype
        np.testing.assert_array_equal(got.compute(), expected)
    np.testing.assert_array_equal(xa.real(a).compute(), np.real(a))  # NumPy in: xsched out


@pytest.mark.parametrize("chunks", [7, 3, ((2, 5),)])
def test_isclose_and_allclose_as_numpy(chunks):
    a = np.array([1.0, np.nan, 3.0, np.inf, -np.inf, 1e-9, 5.0])
    b = np.array([1.0 + 1e-7, np.nan, 3.1, np.inf, np.inf, 0.0, 5.0 + 1e-4])
    x, y = xa.from_array(a, chunks=chunks), xa.from_array(b, chunks=chunks)
    for kwargs in [{}, {"equal_nan": True}, {"rtol": 0.05}, {"atol": 1e-3, "rtol": 0}]:
        for got in (xa.isclose(x, y, **kwargs), np.isclose(x, y, **kwargs), xa.isclose(x, b, **kwargs)):
            assert isinstance(got, xa.Array) and got.dtype == bool
            np.testing.assert_array_equal(got.compute(), np.isclose(a, b, **kwargs))
        for got in (xa.allclose(x, y, **kwargs), np.allclose(x, y, **kwargs)):
            assert isinstance(got, xa.Array) and got.shape == ()
            assert bool(got) == np.allclose(a, b, **kwargs)
    rtol = np.linspace(0, 0.1, 7)  # NumPy 2 broadcasts array tolerances
    np.testing.assert_array_equal(xa.isclose(x, y, rtol=rtol).compute(), np.isclose(a, b, rtol=rtol))
    assert bool(xa.allclose(x, x + 1e-12, equal_nan=True)) and not bool(xa.allclose(x, x))


def test_dtype_functions_answer_from_dtypes_computing_nothing(monkeypatch):
    a = sample("float32", -5, 5, 7)
    x = xa.from_array(a, chunks=2)
    i = xa.from_array(np.arange(4, dtype="int16"), chunks=2)
    monkeypatch.setattr(xa.Array, "compute", lambda *a, **k: pytest.fail("computed"))
    monkeypatch.setattr(xa.Array, "__array__", lambda *a, **k: pytest.fail("computed"))
    assert xa.astype(x, "float64").dtype == np.float64 and xa.astype(x, "f4", copy=False) is x
    y = xa.astype(x, "f4")  # (copy=True: another object, which x[i] = v on x leaves as it was)
    assert y is not x and y.name == x.name
    assert np.astype(x, "int8").dtype == np.int8  # NumPy's astype runs xa.astype
    assert xa.isdtype(x.dtype, "real floating") and not xa.isdtype(x.dtype, "integral")
    assert xa.isdtype(i.dtype, ("integral", "bool")) == np.isdtype(np.int16, ("integral", "bool"))
    assert xa.can_cast(i, "float32") == np.can_cast(np.int16, np.float32)
    assert not xa.can_cast(x, "int8") and xa.can_cast(x, "int8", casting="unsafe")
    assert np.can_cast(x, np.float64) and not np.can_cast(x, np.int8)  # through NumPy
    assert xa.finfo(x) == np.finfo(np.float32) and xa.finfo("f8").eps == np.finfo("f8").eps
    assert xa.iinfo(i).max == 32767 and xa.iinfo(np.uint8).max == 255
    assert xa.result_type(x, i) == np.result_type(np.float32, np.int16)
    assert xa.result_type(x, 1.0) == np.float32 and xa.result_type(i, np.float64) == np.float64
    with pytest.raises(ValueError):
        xa.iinfo(x)  # NumPy's error: float32 is not an integer type


def test_isdtype_matches_numpy():
    kinds = [*ufuncs.KINDS, np.float32, ("bool", "complex floating"), ("integral", np.float64)]
    for dtype in ["bool", "int8", "uint16", "int64", "float16", "float32", "float64",
                  "complex64", "complex128", "M8[s]", "m8[D]", "U3", "O"]:
        for kind in kinds:
            assert xa.isdtype(np.dtype(dtype), kind) == np.isdtype(np.dtype(dtype), kind), (dtype, kind)
    with pytest.raises(ValueError, match="kind 'float' is none of 'bool'"):
        xa.isdtype(np.float64, "float")


def test_the_array_api_names_run_numpys_older_names_where_it_lacks_them(monkeypatch):
    for name, older in ufuncs.OLDER_NAMES.items():
        assert getattr(np, name) is getattr(np, older)
        monkeypatch.delattr(np, name)  # as NumPy before 2.0
        assert ufuncs.numpy_ufunc(name) is getattr(np, older)
    monkeypatch.delattr(np, "bitwise_count")
    assert ufuncs.numpy_ufunc("bitwise_count") is None


def test_astype_matches_numpy():
    a = sample("float64", -5, 5, 8)
    for chunks in CHUNKINGS:
        got = xa.astype(xa.from_array(a, chunks=chunks), "int32", copy=False)
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got.compute(), a.astype("int32"))


def test_numpy_calls_still_dispatch_where_they_did():
    a, b = sample("float64", -5, 5, 9), sample("float64", -5, 5, 10)
    x, y = xa.from_array(a, chunks=(2, 3)), xa.from_array(b, chunks=(2, 3))
    assert dispatch.implementation(np.round) is xa.round
    assert dispatch.implementation(np.clip) is xa.clip
    assert dispatch.implementation(np.where) is xa.where
    assert dispatch.implementation(np.real) is xa.real
    assert dispatch.implementation(np.isclose) is xa.isclose
    cases = [(np.round(x, 1), np.round(a, 1)), (np.abs(x), np.abs(a)),
             (np.clip(x, -1, 2), np.clip(a, -1, 2)), (np.where(x > 0, x, y), np.where(a > 0, a, b)),
             (np.maximum(x, y), np.maximum(a, b)), (np.conj(x), np.conj(a))]
    for got, expected in cases:
        assert isinstance(got, xa.Array)
        np.testing.assert_array_equal(got.compute(), expected)


@pytest.mark.parametrize("name", ["sum", "mean", "min", "max", "var", "std"])
def test_the_reductions_take_numpy_arrays_and_lists_as_numpys_do(name):
    """dask's array guide calls ``da.sum(np.ones(5))``; the reductions failed on a NumPy
    array ('numpy.ndarray' object has no attribute 'name') where the other functions took it."""
    data = np.arange(12.0).reshape(3, 4)
    f = getattr(xa, name)
    np.testing.assert_allclose(f(data).compute(), getattr(np, name)(data))
    np.testing.assert_allclose(f(data, axis=1).compute(), getattr(np, name)(data, axis=1))
    np.testing.assert_allclose(f(data.tolist()).compute(), getattr(np, name)(data))
    assert f(data).__class__ is xa.Array
    total = xa.reduction(np.arange(6), np.sum, np.sum, dtype=int)
    assert int(total.compute()) == 15
