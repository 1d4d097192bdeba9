"""Notebook integration: magics, live widgets, progress bars, figures (and the kernel host).

The client and the clusters import nothing from here: these modules register their
notebook display, figures and magics in :mod:`xsched.hooks` when imported, and importing
this package imports them all (``import xsched`` does).
"""

from . import display, magics, plots, widgets  # noqa: F401 (each registers its hooks)
