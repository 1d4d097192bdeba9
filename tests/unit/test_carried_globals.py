"""A notebook's function (pickled by value, with the globals it reads) after one of those
globals is rebound: its token and its pickled bytes change with it, so that a re-run cell
neither reuses the old result's key nor ships the old value."""

import cloudpickle
import numpy as np

from xsched.graph import carried_globals
from xsched.protocol.tasks import _function_id, dumps_function
from xsched.tokenize import tokenize


def notebook(source: str) -> dict:
    """A namespace as a notebook's: its functions belong to ``__main__`` (pickled by value)."""
    scope = {"__name__": "__main__", "np": np}
    exec(source, scope)
    return scope


def test_rebinding_a_global_changes_the_token_and_the_shipped_bytes():
    nb = notebook("threshold = 5\ndef above(v):\n    return v > threshold\n")
    above = nb["above"]
    token, blob = tokenize(above, 10), dumps_function(above)
    assert tokenize(above, 10) == token and dumps_function(above) is blob  # (cached while unchanged)
    assert cloudpickle.loads(blob)(10) is True
    nb["threshold"] = 20
    assert tokenize(above, 10) != token
    assert cloudpickle.loads(dumps_function(above))(10) is False
    assert _function_id(above, dumps_function(above)) != _function_id(above, blob)


def test_globals_that_change_in_place_are_read_each_time_and_others_are_cached():
    nb = notebook("limits = [1]\ndef shifted(v):\n    return np.add(v, limits[0])\n"
                  "def helper(v):\n    return v * 2\ndef outer(v):\n    return helper(v) + 1\n")
    shifted, outer = nb["shifted"], nb["outer"]
    assert carried_globals.fingerprint(shifted) is carried_globals.UNCACHEABLE
    before = tokenize(shifted, 1)
    nb["limits"][0] = 5
    assert tokenize(shifted, 1) != before and cloudpickle.loads(dumps_function(shifted))(1) == 6
    # a by-value function it calls carries its own globals: redefining it changes the caller
    assert [n for n, _ in carried_globals.read_globals(outer)] == ["helper"]
    token = tokenize(outer, 3)
    exec("def helper(v):\n    return v * 3\n", nb)
    assert tokenize(outer, 3) != token and cloudpickle.loads(dumps_function(outer))(3) == 10


def test_functions_of_modules_carry_no_globals():
    assert carried_globals.read_globals(np.add) == [] and carried_globals.read_globals(tokenize) == []
    assert carried_globals.fingerprint(tokenize) == ()
    nb = notebook("def fact(n):\n    return 1 if n == 0 else n * fact(n - 1)\n")
    assert tokenize(nb["fact"], 4) == tokenize(nb["fact"], 4)  # (recursion through its own global)


def test_tokens_of_mutually_recursive_functions_do_not_depend_on_the_order_hashed():
    source = ("threshold = 5\ndef f(n):\n    return 0 if n == 0 else g(n - 1)\n"
              "def g(n):\n    return f(n) + threshold\n")
    alone = tokenize(notebook(source)["f"])
    nb = notebook(source)
    tokenize(nb["g"])
    assert tokenize(nb["f"]) == alone
    before = tokenize(nb["f"])
    nb["threshold"] = 20
    assert tokenize(nb["f"]) != before


def test_a_cached_recursive_function_is_not_kept_alive_by_its_own_cache_entry():
    import gc
    import weakref

    nb = notebook("def fact(n):\n    return 1 if n == 0 else n * fact(n - 1)\n"
                  "def even(n):\n    return n == 0 or odd(n - 1)\ndef odd(n):\n    return n != 0 and even(n - 1)\n")
    refs = [weakref.ref(nb[name]) for name in ("fact", "even", "odd")]
    for name in ("fact", "even", "odd"):
        tokenize(nb[name], 3)
        dumps_function(nb[name])
    nb.clear()
    gc.collect()
    assert [r() for r in refs] == [None, None, None]


def test_a_notebook_class_a_function_reads_is_read_each_time():
    nb = notebook("class Scale:\n    factor = 2\ndef scaled(v):\n    return v * Scale.factor\n")
    scaled = nb["scaled"]
    assert carried_globals.fingerprint(scaled) is carried_globals.UNCACHEABLE
    token = tokenize(scaled, 3)
    nb["Scale"].factor = 3
    assert tokenize(scaled, 3) != token and cloudpickle.loads(dumps_function(scaled))(3) == 9
    exec("class Scale:\n    factor = 4\n", nb)
    assert cloudpickle.loads(dumps_function(scaled))(3) == 12


def test_attribute_names_are_not_taken_for_globals():
    nb = notebook("data = [1, 2, 3]\ndef first(ds):\n    return ds.data\n")
    assert carried_globals.read_globals(nb["first"]) == []
    assert carried_globals.fingerprint(nb["first"]) == ()
