"""Every public function and method of the API shows a ``>>>`` example in its docstring (the
project's rule: a short example a user can paste into a notebook, run as a doctest by
``--doctest-modules`` or, for methods set on a class from another module, by
``test_installed_docstrings.py``).

The API here: the names in ``__all__`` of ``xsched``, ``xsched.dataframe``, ``xsched.array`` and
``xsched.bag``, and the public attributes of their main classes (methods installed from other
modules included). Only functions and methods count: not classes (exceptions among them),
properties or data."""

from __future__ import annotations

import importlib
import inspect

MODULES = ("xsched", "xsched.dataframe", "xsched.array", "xsched.bag")
CLASSES = (("xsched.dataframe", "DataFrame"), ("xsched.dataframe", "Series"), ("xsched.dataframe", "Index"),
           ("xsched.array", "Array"), ("xsched.bag", "Bag"),
           ("xsched", "Client"), ("xsched", "LocalCluster"), ("xsched", "Future"))

# Methods that do their work only against a running scheduler and workers: an example would
# have to start a cluster (processes) inside a doctest. Their docstrings say what they do; an
# example belongs here only if it can run without a cluster, then leave this list.
NEEDS_A_CLUSTER = frozenset({
    "xsched.Client.cancel", "xsched.Client.retry", "xsched.Client.nthreads", "xsched.Client.who_has",
    "xsched.LocalCluster.close", "xsched.LocalCluster.wait_for_workers",
    "xsched.Future.done", "xsched.Future.exception", "xsched.Future.traceback", "xsched.Future.cancel",
    "xsched.Future.retry", "xsched.Future.add_done_callback", "xsched.Future.release", "xsched.Future.cancelled",
})


def methods_of(cls: type, prefix: str) -> dict:
    """``{"prefix.name": function}`` for the public methods of ``cls`` (inherited and installed
    ones too; static and class methods unwrapped; properties and data left out)."""
    found = {}
    for name in dir(cls):
        if name.startswith("_"):
            continue
        value = inspect.getattr_static(cls, name)
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if inspect.isroutine(value):
            found[f"{prefix}.{name}"] = value
    return found


def public_callables() -> dict:
    """``{"module.name": function}`` and ``{"module.Class.method": function}`` over the API."""
    found = {}
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isroutine(value):
                found[f"{module_name}.{name}"] = value
    for module_name, class_name in CLASSES:
        cls = getattr(importlib.import_module(module_name), class_name, None)
        if cls is not None:
            found.update(methods_of(cls, f"{module_name}.{class_name}"))
    return found


def has_example(func) -> bool:
    return ">>>" in (getattr(func, "__doc__", None) or "")


def where(func) -> str:
    """``file:line`` where the function is written (its own module, not its class's)."""
    try:
        return f"{inspect.getsourcefile(func)}:{inspect.getsourcelines(func)[1]}"
    except (OSError, TypeError):
        return getattr(func, "__module__", "?") or "?"


PUBLIC = public_callables()


def test_the_api_is_found():
    assert len(PUBLIC) > 800  # (929 when written: the array namespace alone has hundreds)
    for name in ("xsched.delayed", "xsched.dataframe.from_pandas", "xsched.array.sum", "xsched.bag.from_sequence",
                 "xsched.dataframe.DataFrame.describe", "xsched.dataframe.Series.isnull",  # installed elsewhere
                 "xsched.array.Array.sum", "xsched.bag.Bag.map", "xsched.Client.submit"):
        assert name in PUBLIC, name
    assert "xsched.dataframe.DataFrame.columns" not in PUBLIC  # a property
    assert "xsched.KilledWorker" not in PUBLIC  # an exception


def test_every_public_function_and_method_has_an_example():
    missing = sorted(f"{name}  ({where(func)})" for name, func in PUBLIC.items()
                     if not has_example(func) and name not in NEEDS_A_CLUSTER)
    assert not missing, ("public functions and methods without a '>>>' example in their docstring:\n  "
                         + "\n  ".join(missing))


def test_the_allow_list_names_public_methods():
    assert NEEDS_A_CLUSTER <= set(PUBLIC), sorted(NEEDS_A_CLUSTER - set(PUBLIC))


def test_a_method_without_an_example_is_caught():
    class Toy:
        def shown(self):
            """Shown.

            >>> 1
            1
            """

        def bare(self):
            """No example."""

        @staticmethod
        def also_bare():
            pass

        @property
        def prop(self):
            """A property is not counted."""

    found = methods_of(Toy, "Toy")
    assert sorted(found) == ["Toy.also_bare", "Toy.bare", "Toy.shown"]
    assert sorted(n for n, f in found.items() if not has_example(f)) == ["Toy.also_bare", "Toy.bare"]
