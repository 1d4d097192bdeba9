"""xsched: a Jupyter-first distributed task scheduler."""
