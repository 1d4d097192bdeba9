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
# uv resolves and installs the same releases as pip in a fraction of the time (about 40 s
# against 200 s here, byte-compiled as pip does); pip does it if uv cannot be had or fails.
# Editable as a plain path (editable_mode=compat): setuptools' default import finder costs
# every Python process 20 ms to start, and the tests start well over a thousand.
$(STAMP): pyproject.toml | $(BIN)/python
	( $(BIN)/python -m pip install --quiet uv && \
	  $(BIN)/python -m uv pip install --quiet --compile-bytecode --python $(BIN)/python \
	    -C editable_mode=compat -e ".[test,docs]" ) || \
	  $(BIN)/python -m pip install --quiet --config-settings editable_mode=compat -e ".[test,docs]"
	$(BIN)/python extensions/jupyterlab/install_dev.py
	touch $(STAMP)

# (Byte-compiled first, as an installed package is, so worker processes do not compile it anew.)
demo: $(STAMP)
	$(BIN)/python -m compileall -q xsched
	$(BIN)/python -m xsched.demo

# System parts of the multi-host, Slurm and ssh tiers (root only; elsewhere those tiers skip).
system-deps:
	sh tests/support/system_deps.sh
	sh tests/support/browser_deps.sh

# Rebuild the JupyterLab panel and the dashboard page schedulers serve (needs Node 20+; users need
# no Node: xsched/labextension and xsched/dashboard/static are committed).
labextension: $(STAMP)
	sh extensions/jupyterlab/build.sh $(BIN)/python

# The documentation site (mkdocs.yml, docs/) into site/; --strict: any warning fails the build.
.PHONY: docs
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# Every tier (tests/unit, tests/cluster, tests/system) and the examples in every module's docstrings.
# Both tiers run two tests at a time. The cluster and system tests can: each starts its own
# processes on free ports, its own namespaces, Slurm and sshd under names carrying its PID, and
# none asserts a time (one at a time they took 630-655 s here, two at a time 390-470 s).
# Byte-compiled first (as `make demo` does): where PYTHONDONTWRITEBYTECODE is set, a fresh
# clone has no .pyc files and every scheduler, worker and nanny the tests start (well over a
# thousand) would compile xsched anew, about 0.6 s of CPU each.
test: $(STAMP) system-deps docs
	$(BIN)/python -m compileall -q xsched tests
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 2 --doctest-modules xsched tests/unit
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 2 --dist loadgroup tests/cluster tests/system

test-fast: $(STAMP)
	$(BIN)/python -m compileall -q xsched tests
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 2 --doctest-modules xsched tests/unit

# Benchmarks print figures side by side with dask.distributed and Ray, each in its own
# virtual environment (.venv-dask, .venv-ray); neither is ever a dependency of xsched.
bench-env: $(STAMP)
	test -x .venv-dask/bin/python || $(PY) -m venv .venv-dask
	.venv-dask/bin/python -m pip install --quiet "dask[distributed,dataframe]" numpy h5py pandas pyarrow psutil scipy
	test -x .venv-ray/bin/python || $(PY) -m venv .venv-ray
	.venv-ray/bin/python -m pip install --quiet ray numpy psutil

# One run, one benchmark process at a time; e.g. `make bench BENCH_ARGS="--quick"` for a smoke
# check, or BENCH_ARGS="--only movie". Run the full sizes on a quiet machine.
bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .venv-dask .venv-ray *.egg-info
