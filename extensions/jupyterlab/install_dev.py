"""Make the JupyterLab panel visible in an *editable* install (``pip install -e .``).

A wheel (``pip install .``) installs the panel through ``[tool.setuptools.data-files]``:
``share/jupyter/labextensions/xsched-labextension`` and
``etc/jupyter/jupyter_server_config.d/xsched.json``. setuptools' editable wheels skip
data files (pypa/setuptools#3399: ``editable_wheel`` asks ``has_data()``, which does not
exist, so ``install_data`` never runs), so after ``pip install -e .`` run this once; it is
idempotent and never fails the caller:

    .venv/bin/python extensions/jupyterlab/install_dev.py

It links ``<prefix>/share/jupyter/labextensions/xsched-labextension`` to the committed
build in ``xsched/labextension`` (a rebuild shows up at the next page load) and writes the
server extension's switch into ``<prefix>/etc/jupyter/jupyter_server_config.d``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main(prefix: str = sys.prefix) -> int:
    build = os.path.join(ROOT, "xsched", "labextension")
    if not os.path.isfile(os.path.join(build, "package.json")):
        print(f"xsched labextension: no build in {build} (run `make labextension`)")
        return 0
    dest = os.path.join(prefix, "share", "jupyter", "labextensions", "xsched-labextension")
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    if os.path.islink(dest):
        if os.path.realpath(dest) != os.path.realpath(build):
            os.unlink(dest)
    elif os.path.isdir(dest):
        shutil.rmtree(dest)  # a copy from a wheel install: replace it by the link
    if not os.path.exists(dest):
        os.symlink(build, dest, target_is_directory=True)
    src_install = os.path.join(HERE, "install.json")
    if not os.path.exists(os.path.join(build, "install.json")):
        shutil.copyfile(src_install, os.path.join(build, "install.json"))
    conf_dir = os.path.join(prefix, "etc", "jupyter", "jupyter_server_config.d")
    os.makedirs(conf_dir, exist_ok=True)
    with open(os.path.join(HERE, "jupyter-config", "jupyter_server_config.d", "xsched.json")) as f:
        conf = json.load(f)
    with open(os.path.join(conf_dir, "xsched.json"), "w") as f:
        json.dump(conf, f, indent=2)
        f.write("\n")
    print(f"xsched labextension: {dest} -> {build}; server extension enabled in {conf_dir}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except OSError as e:
        print(f"xsched labextension: not installed ({e})")
        sys.exit(0)
