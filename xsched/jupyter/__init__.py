"""Notebook integration: magics, live widgets, progress bars, figures (and the kernel host).

The client and the clusters import nothing from here: these modules register their
notebook display, figures and magics in :mod:`xsched.hooks` when imported, and a hook
imports its module when first called. Importing this package imports none of them (the
scheduler and workers import ``kernel`` alone).
"""
