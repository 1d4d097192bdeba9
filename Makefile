# Both targets set everything up on a fresh machine: a .venv with xsched and its test extras.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test test-fast bench bench-env clean system-deps labextension

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Reinstall only when the project's metadata changes (fast when already installed).
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test]"
	$(BIN)/python extensions/jupyterlab/install_dev.py
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m xsched.demo

# System parts of the multi-host, Slurm and ssh tiers (root only; elsewhere those tiers skip).
system-deps:
	sh tests/system_deps.sh
	sh tests/browser_deps.sh

# Rebuild the JupyterLab panel (needs Node 20+; users need no Node: xsched/labextension is committed).
labextension: $(STAMP)
	sh extensions/jupyterlab/build.sh $(BIN)/python

test: $(STAMP) system-deps
	$(BIN)/python -m pytest -q -p no:cacheprovider tests

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider tests -m "not cluster"

# Benchmarks print figures side by side with dask.distributed and Ray, each in its own
# virtual environment (.venv-dask, .venv-ray); neither is ever a dependency of xsched.
bench-env: $(STAMP)
	test -x .venv-dask/bin/python || $(PY) -m venv .venv-dask
	.venv-dask/bin/python -m pip install --quiet "dask[distributed]" numpy h5py pandas psutil
	test -x .venv-ray/bin/python || $(PY) -m venv .venv-ray
	.venv-ray/bin/python -m pip install --quiet ray numpy psutil

# One run, one benchmark process at a time; e.g. `make bench BENCH_ARGS="--quick"` for a smoke
# check, or BENCH_ARGS="--only movie". Run the full sizes on a quiet machine.
bench: $(STAMP)
	$(BIN)/python tests/benchmarks/run_all.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .venv-dask .venv-ray *.egg-info
