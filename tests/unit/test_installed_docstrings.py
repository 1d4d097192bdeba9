"""The docstring examples of methods a module sets on a class of another module (the
dataframe's reductions, shuffles, windows...; the array's methods) run here: pytest's
``--doctest-modules`` reads a class's methods only where the class is defined, and only
those written there, so these examples would otherwise never run."""

import doctest
import importlib
import inspect
import pkgutil

import pytest

import xsched
from tests.support.doctests import needs_cluster


def _modules():
    for info in pkgutil.walk_packages(xsched.__path__, "xsched."):
        try:
            yield importlib.import_module(info.name)
        except ImportError:  # (an optional extra not installed: its module's methods are not set either)
            continue


def installed_methods() -> dict:
    """``{"Class.method": function}`` for methods with examples whose code lives in another
    module than their class."""
    classes = {id(obj): obj for mod in _modules() for obj in vars(mod).values()
               if inspect.isclass(obj) and obj.__module__.startswith("xsched.")}
    found = {}
    for cls in classes.values():
        for name, value in vars(cls).items():
            func = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
            if (inspect.isfunction(func) and ">>>" in (func.__doc__ or "")
                    and func.__globals__.get("__name__") != cls.__module__):
                found[f"{cls.__module__}.{cls.__qualname__}.{name}"] = func
    return found


INSTALLED = installed_methods()


def test_the_installed_methods_are_found():
    assert len(INSTALLED) > 300
    for name in ("xsched.dataframe.core.DataFrame.describe", "xsched.dataframe.core.Index.unique",
                 "xsched.dataframe.groupby.GroupBy.median"):
        assert name in INSTALLED


@pytest.mark.parametrize("name", sorted(INSTALLED))
def test_the_example_of_an_installed_method_runs(name):
    func = INSTALLED[name]
    test = doctest.DocTestParser().get_doctest(func.__doc__, dict(func.__globals__), name, None, 0)
    if needs_cluster(test):
        pytest.skip("needs a cluster: run by tests/cluster/test_docstring_examples.py")
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    failures = []
    runner.run(test, out=failures.append)
    assert runner.failures == 0, "".join(failures)
