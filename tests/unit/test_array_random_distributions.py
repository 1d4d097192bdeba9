"""Every distribution of numpy's Generator drawn block by block: each block exactly what
numpy draws from that block's own seed, the same on every run; ``choice``; the module's
functions on its default generator (``xa.random.random``, ``randint``, ``seed``); and
mistakes refused when the array is built."""

import numpy as np
import pytest

import xsched.array as xa
from xsched.array import random as xr

#: parameters for each distribution (numpy's names)
PARAMS = {
    "exponential": {"scale": 2.0}, "standard_exponential": {}, "standard_cauchy": {},
    "standard_gamma": {"shape": 2.0}, "standard_t": {"df": 3.0}, "gamma": {"shape": 2.0, "scale": 0.5},
    "beta": {"a": 2.0, "b": 5.0}, "chisquare": {"df": 4.0}, "noncentral_chisquare": {"df": 3.0, "nonc": 1.5},
    "f": {"dfnum": 5.0, "dfden": 7.0}, "noncentral_f": {"dfnum": 5.0, "dfden": 7.0, "nonc": 2.0},
    "lognormal": {"mean": 0.5, "sigma": 0.3}, "laplace": {"loc": 1.0, "scale": 2.0},
    "logistic": {"loc": 0.0, "scale": 1.5}, "gumbel": {"loc": 1.0, "scale": 2.0}, "rayleigh": {"scale": 2.0},
    "pareto": {"a": 3.0}, "power": {"a": 2.0}, "weibull": {"a": 1.5}, "vonmises": {"mu": 0.0, "kappa": 4.0},
    "wald": {"mean": 1.0, "scale": 2.0}, "triangular": {"left": 0.0, "mode": 1.0, "right": 4.0},
    "poisson": {"lam": 3.0}, "binomial": {"n": 10, "p": 0.3}, "negative_binomial": {"n": 5, "p": 0.5},
    "geometric": {"p": 0.2}, "hypergeometric": {"ngood": 10, "nbad": 5, "nsample": 4}, "logseries": {"p": 0.6},
    "zipf": {"a": 2.5},
}


def test_every_distribution_has_parameters_here():
    assert set(PARAMS) == set(xr.DISTRIBUTIONS)


@pytest.mark.parametrize("method", sorted(PARAMS))
def test_each_block_is_what_numpy_draws_from_its_seed(method):
    params = PARAMS[method]
    x = getattr(xa.random.default_rng(11), method)(size=(7, 5), chunks=(3, 4), **params)
    out = x.compute()
    expected_dtype = np.asarray(getattr(np.random.default_rng(0), method)(**params)).dtype
    assert out.shape == (7, 5) and x.dtype == out.dtype == expected_dtype
    for (i, rows), (j, cols) in [((0, slice(0, 3)), (1, slice(4, 5))), ((2, slice(6, 7)), (0, slice(0, 4)))]:
        block = np.random.default_rng(np.random.SeedSequence(11, spawn_key=(0, i, j)))
        want = getattr(block, method)(size=out[rows, cols].shape, **params)
        np.testing.assert_array_equal(out[rows, cols], want)
    again = getattr(xa.random.default_rng(11), method)(size=(7, 5), chunks=(3, 4), **params).compute()
    np.testing.assert_array_equal(out, again)
    positional = getattr(xa.random.default_rng(11), method)(*params.values(), size=(7, 5), chunks=(3, 4))
    np.testing.assert_array_equal(positional.compute(), out)


def test_choice_with_replacement_per_block():
    x = xa.random.default_rng(4).choice(5, size=10, p=[0.1, 0.2, 0.3, 0.2, 0.2], chunks=4)
    out = x.compute()
    want = np.random.default_rng(np.random.SeedSequence(4, spawn_key=(0, 1))).choice(
        5, size=4, p=np.array([0.1, 0.2, 0.3, 0.2, 0.2]))
    np.testing.assert_array_equal(out[4:8], want)
    words = xa.random.default_rng(4).choice(np.array(["x", "yy"]), size=6, chunks=3)
    assert words.dtype == np.dtype("<U2") and set(words.compute().tolist()) <= {"x", "yy"}
    distinct = xa.random.default_rng(4).choice(50, size=30, replace=False, chunks=7)
    got = distinct.compute()
    assert distinct.chunks == ((7, 7, 7, 7, 2),) and len(set(got.tolist())) == 30 and 0 <= got.min() <= got.max() < 50
    np.testing.assert_array_equal(got, xa.random.default_rng(4).choice(50, size=30, replace=False, chunks=7).compute())
    rows = xa.random.default_rng(5).choice(np.arange(12).reshape(6, 2), size=(2, 2), replace=False,
                                           p=[0.1, 0.1, 0.2, 0.2, 0.2, 0.2]).compute()
    assert rows.shape == (2, 2, 2) and len({tuple(r) for r in rows.reshape(4, 2).tolist()}) == 4
    assert xa.random.default_rng(4).choice(10, size=6, replace=False, chunks=((3, 3),)).chunks == ((3, 3),)
    with pytest.raises(ValueError, match="larger sample than population"):
        xa.random.default_rng(4).choice(3, size=5, replace=False)
    with pytest.raises(TypeError, match="not an xsched Array"):
        xa.random.default_rng(4).choice(xa.arange(5, chunks=2), size=3)
    with pytest.raises(ValueError):
        xa.random.default_rng(4).choice(3, size=3, p=[0.5, 0.6, 0.1])  # (numpy's check, when built)


def test_the_modules_functions_draw_from_a_default_generator_that_seed_restarts():
    xa.random.seed(21)
    first = [xa.random.random((4, 3), chunks=2).compute(), xa.random.normal(5.0, 2.0, size=5, chunks=2).compute(),
             xa.random.randint(0, 9, size=6, chunks=4).compute(), xa.random.random_sample(3, chunks=3).compute(),
             xa.random.gamma(2.0, size=4, chunks=2).compute()]
    xa.random.seed(21)
    second = [xa.random.random((4, 3), chunks=2).compute(), xa.random.normal(5.0, 2.0, size=5, chunks=2).compute(),
              xa.random.randint(0, 9, size=6, chunks=4).compute(), xa.random.random_sample(3, chunks=3).compute(),
              xa.random.gamma(2.0, size=4, chunks=2).compute()]
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    g = xa.random.default_rng(21)  # (the default generator is one like any other)
    np.testing.assert_array_equal(g.random((4, 3), chunks=2).compute(), first[0])
    assert {"random", "randint", "poisson", "seed", "default_rng"} <= set(dir(xa.random))
    with pytest.raises(AttributeError, match="no attribute 'normall'"):
        xa.random.normall


def test_mistakes_are_refused_when_built():
    rng = xa.random.default_rng(0)
    with pytest.raises(TypeError, match="needs its parameter 'a'"):
        rng.beta(b=2.0, size=3)
    with pytest.raises(TypeError, match="unexpected or repeated parameter 'lamda'"):
        rng.poisson(lamda=2.0, size=3)
    with pytest.raises(TypeError, match="takes 1 parameters"):
        rng.exponential(1.0, 2.0, size=3)
    with pytest.raises(TypeError, match=r"^exponential: scale is an xsched Array"):
        rng.exponential(xa.ones(3, chunks=2), size=3)
    assert rng.exponential(np.ones(3), size=3).shape == (3,)  # (a NumPy array: each draw its element)
    with pytest.raises(ValueError):
        rng.exponential(-1.0, size=3)  # (numpy's own check, once, when built)
    with pytest.raises(AttributeError, match="no attribute 'frobnicate'"):
        rng.frobnicate


@pytest.mark.parametrize("method, params", [("normal", {"loc": 10.0, "scale": 0.1}), ("random_sample", {}),
                                            ("poisson", {"lam": 3.0}), ("randint", {"low": 2, "high": 9}),
                                            ("standard_normal", {}), ("uniform", {"low": -1.0, "high": 1.0})])
def test_random_state_blocks_are_numpy_s_random_state_seeded_per_block(method, params):
    x = getattr(xa.random.RandomState(1234), method)(size=(5, 4), chunks=(3, 3), **params)
    out = x.compute()
    assert out.shape == (5, 4) and out.dtype == x.dtype
    for (i, rows), (j, cols) in [((0, slice(0, 3)), (1, slice(3, 4))), ((1, slice(3, 5)), (0, slice(0, 3)))]:
        block = np.random.RandomState(np.random.MT19937(np.random.SeedSequence(1234, spawn_key=(0, i, j))))
        np.testing.assert_array_equal(out[rows, cols], getattr(block, method)(size=out[rows, cols].shape, **params))
    again = getattr(xa.random.RandomState(1234), method)(size=(5, 4), chunks=(3, 3), **params).compute()
    np.testing.assert_array_equal(out, again)


def test_random_state_has_numpy_s_older_names_only():
    state = xa.random.RandomState(0)
    assert state.random(4, chunks=2).dtype == np.float64 and repr(state).endswith("RandomState(entropy=0)")
    assert not hasattr(state, "integers")
    with pytest.raises(AttributeError, match="randint"):
        state.integers(3)
    with pytest.raises(ValueError, match="high <= 0"):
        state.randint(0, size=3)  # (NumPy's own check, when built)


def test_permutation_of_a_range_and_of_an_array_s_first_axis():
    g = xa.random.default_rng(3)
    p = g.permutation(50, chunks=8)
    assert sorted(p.compute().tolist()) == list(range(50)) and p.chunks[0][0] == 8
    assert p.compute().tolist() != list(range(50))
    again = xa.random.default_rng(3).permutation(50, chunks=8).compute()
    assert again.tolist() == p.compute().tolist()  # (the same seed, the same order)
    data = np.arange(24).reshape(8, 3)
    shuffled = g.permutation(xa.from_array(data, chunks=3)).compute()
    assert sorted(map(tuple, shuffled.tolist())) == sorted(map(tuple, data.tolist()))  # (whole rows move)
    assert sorted(xa.random.RandomState(2).permutation(7).compute().tolist()) == list(range(7))
    with pytest.raises(ValueError, match="one dimension or more"):
        g.permutation(xa.from_array(np.float64(3.0)))


def test_size_by_position_after_the_parameters_as_numpy_takes_it():
    g = xa.random.default_rng(0)
    for x in (g.exponential(2.0, 5), g.poisson(3.0, (2, 3)), g.standard_exponential(5),
              xa.random.RandomState(0).exponential(2.0, 5), xa.random.exponential(2.0, 5)):
        assert x.shape == x.compute().shape and x.size in (5, 6)
    with pytest.raises(TypeError, match=r"takes 1 parameters \(scale\) and size, got 3 values by position"):
        g.exponential(2.0, 5, 6)


def test_choice_of_a_2d_array_draws_its_rows():
    rows = np.arange(6).reshape(3, 2)
    c = xa.random.default_rng(1).choice(rows, size=5, chunks=2)
    got = c.compute()
    assert c.shape == got.shape == (5, 2) and c.chunks == ((2, 2, 1), (2,))
    assert all(any((r == row).all() for row in rows) for r in got)
    np.testing.assert_array_equal(c.sum(axis=0).compute(), got.sum(axis=0))
    assert c.T.compute().shape == (2, 5)


VECTORS = {"multinomial": ({"n": 20, "pvals": [0.1, 0.3, 0.6]}, 3), "dirichlet": ({"alpha": [1.0, 2.0]}, 2),
           "multivariate_normal": ({"mean": [1.0, 2.0], "cov": [[1.0, 0.5], [0.5, 1.0]]}, 2)}


@pytest.mark.parametrize("legacy", [False, True])
@pytest.mark.parametrize("method", sorted(VECTORS))
def test_vector_valued_draws_are_numpys_per_block_with_the_vectors_whole(method, legacy):
    """multinomial, dirichlet and multivariate_normal: each sample a vector along a last
    axis of one chunk; each block what numpy draws from its own seed."""
    params, length = VECTORS[method]
    gen = xa.random.RandomState(5) if legacy else xa.random.default_rng(5)
    x = getattr(gen, method)(size=(6, 4), chunks=(4, 3), **params)
    assert x.shape == (6, 4, length) and x.chunks == ((4, 2), (3, 1), (length,))
    out = x.compute()
    block = xr._numpy_rng(5, (0, 1, 1), legacy)
    np.testing.assert_array_equal(out[4:, 3:], getattr(block, method)(size=(2, 1), **params))
    np.testing.assert_array_equal(out, x.compute())
    if method == "multinomial":
        assert (out.sum(axis=-1) == 20).all()
    if method == "dirichlet":
        np.testing.assert_allclose(out.sum(axis=-1), 1.0)


def test_vector_valued_draws_refuse_what_numpy_refuses_when_built():
    gen = xa.random.default_rng(0)
    with pytest.raises(ValueError, match="covariance is not symmetric positive-semidefinite"):
        gen.multivariate_normal([1.0, 2.0], [[1.0, 2.0], [3.0, -4.0]], size=3, check_valid="raise")
    with pytest.raises(ValueError, match=r"^multinomial: pvals must be one vector"):
        gen.multinomial(5, [[0.5, 0.5]])
    with pytest.raises(ValueError, match="alpha"):
        gen.dirichlet([-1.0, 1.0], size=2)
    with pytest.raises(TypeError, match=r"^dirichlet: alpha is sent to every block"):
        gen.dirichlet(xa.ones(2, chunks=1), size=2)
    assert xa.random.multinomial(5, [0.5, 0.5], size=3).compute().sum(axis=1).tolist() == [5, 5, 5]


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("size", [2, (2, 1), None])
@pytest.mark.parametrize("replace", [True, False])
def test_choice_along_an_axis_draws_whole_slices_in_numpys_shape(axis, size, replace):
    a = np.arange(24).reshape(2, 3, 4)
    got = xa.random.default_rng(3).choice(a, size=size, replace=replace, axis=axis, chunks=1).compute()
    assert got.shape == np.random.default_rng(0).choice(a, size=size, replace=replace, axis=axis).shape
    if size == 2:
        slices = {np.take(a, j, axis=axis).tobytes() for j in range(a.shape[axis])}
        assert all(np.take(got, i, axis=axis % 3).tobytes() in slices for i in range(2))


def test_choice_without_shuffle_and_the_legacy_state_refusing_the_new_keywords():
    picked = xa.random.default_rng(1).choice(10, size=5, replace=False, shuffle=False, chunks=2).compute()
    assert len(set(picked.tolist())) == 5
    with pytest.raises(TypeError, match=r"^choice: RandomState's choice takes no axis= or shuffle="):
        xa.random.RandomState(0).choice(np.arange(6).reshape(2, 3), 2, axis=1)


def test_array_parameters_broadcast_against_size_and_each_block_takes_its_part():
    loc, scale = np.array([0.0, 100.0, 1000.0]), np.array([[1.0], [2.0]])
    x = xa.random.default_rng(11).normal(loc, scale, size=(2, 3), chunks=(1, 2))
    out = x.compute()
    assert x.shape == (2, 3) and x.chunks == ((1, 1), (2, 1))
    block = xr._numpy_rng(11, (0, 1, 1), False).normal(loc=loc[2:3][None], scale=scale[1:2], size=(1, 1))
    np.testing.assert_array_equal(out[1:2, 2:3], block)
    assert xa.random.default_rng(0).normal(loc, 1.0, chunks=2).shape == (3,)  # (no size: the parameters' shape)
    means = xa.random.default_rng(0).gamma(np.array([1.0, 50.0]), size=(400, 2), chunks=100).mean(axis=0).compute()
    assert means[0] < 5 < 40 < means[1]


def test_array_parameters_that_do_not_broadcast_or_are_lazy_are_refused_when_built():
    g = xa.random.default_rng(0)
    with pytest.raises(ValueError, match=r"^normal: shape mismatch: the parameters of shapes \(3,\) cannot be "
                                         r"broadcast to size \(2, 2\)"):
        g.normal(np.zeros(3), size=(2, 2))
    with pytest.raises(ValueError, match=r"cannot be broadcast together"):
        g.normal(np.zeros(3), np.ones(2))
    with pytest.raises(ValueError, match="scale < 0"):
        g.normal(0, np.array([1.0, -1.0]), size=2)
    with pytest.raises(TypeError, match=r"^normal: loc is an xsched Array"):
        g.normal(xa.zeros(2, chunks=1), 1.0)


def test_an_array_parameter_travels_in_parts_no_larger_than_itself():
    import pickle

    x = xa.random.default_rng(0).normal(np.zeros(500), 1.0, size=(2000, 500), chunks=(1000, 500))
    assert len(pickle.dumps(dict(x._graph.flat()))) < 100_000  # (the draws are 8 MB)


def test_choice_along_an_axis_out_of_bounds_is_refused_as_numpy():
    a = np.arange(24).reshape(2, 3, 4)
    with pytest.raises(IndexError):  # (NumPy's; AxisError is an IndexError)
        np.random.default_rng(0).choice(a, 2, axis=5)
    with pytest.raises(np.exceptions.AxisError, match="choice: axis 5 is out of bounds"):
        xa.random.default_rng(0).choice(a, 2, axis=5)
