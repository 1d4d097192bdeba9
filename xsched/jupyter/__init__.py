"""Notebook integration: magics, live widgets, progress bars, figures (and the kernel host).

The client and the clusters import nothing from here: these modules register their
notebook display, figures and magics in :mod:`xsched.hooks` when imported, and a hook
imports its module when first called. Importing this package imports none of them (the
scheduler and workers import ``kernel`` alone).
"""


def __getattr__(name: str):
    """Its modules as attributes (``xsched.jupyter.widgets``), imported when first asked for."""
    import importlib.util

    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
