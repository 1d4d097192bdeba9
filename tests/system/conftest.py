"""Fixtures of the system tier."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def kernel_env(tmp_path_factory):
    """Kernel ``python3`` = this interpreter, from a kernelspec in a private JUPYTER_DATA_DIR."""
    base = tmp_path_factory.mktemp("nb-jupyter")
    spec_dir = base / "data" / "kernels" / "python3"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (xsched tests)", "language": "python",
    }))
    # JUPYTER_PATH comes first in the search path; in a venv the venv's own share/jupyter
    # comes before JUPYTER_DATA_DIR (jupyter_core prefers the environment's path)
    env = {"JUPYTER_PATH": base / "data", "JUPYTER_DATA_DIR": base / "data", "JUPYTER_RUNTIME_DIR": base / "runtime",
           "IPYTHONDIR": base / "ipython", "JUPYTER_CONFIG_DIR": base / "config", "MPLBACKEND": "Agg"}
    old = {k: os.environ.get(k) for k in env}
    for k, v in env.items():
        if isinstance(v, Path):
            v.mkdir(exist_ok=True)
        os.environ[k] = str(v)
    try:
        from jupyter_client.kernelspec import KernelSpecManager

        spec = KernelSpecManager().get_kernel_spec("python3")
        assert spec.argv[0] == sys.executable, spec.argv
        yield base
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
