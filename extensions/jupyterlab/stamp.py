"""The source stamp of the committed build: a sha256 over everything the build reads.

    python extensions/jupyterlab/stamp.py          # write xsched/labextension/source-stamp.json
    python extensions/jupyterlab/stamp.py --check  # exit 1 when the build is stale

`make labextension` writes it after building; tests/cluster/test_labserver.py checks it, so a change
to src/, style/, schema/, package.json, package-lock.json, tsconfig.json or build_dashboard.mjs
without a rebuild fails CI. The stamp also holds the sha256 of each file of the dashboard page
(xsched/dashboard/static/, built by build_dashboard.mjs), so a file missing or changed by hand
there fails the check too.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
STAMP = os.path.join(ROOT, "xsched", "labextension", "source-stamp.json")
INPUTS = ("src", "style", "schema", "package.json", "package-lock.json", "tsconfig.json", "build_dashboard.mjs")
#: the dashboard page's built files (xsched/dashboard/server.py serves them)
DASHBOARD = os.path.join(ROOT, "xsched", "dashboard", "static")


def source_files() -> list[str]:
    out = []
    for name in INPUTS:
        path = os.path.join(HERE, name)
        if os.path.isfile(path):
            out.append(name)
        for dirpath, dirnames, filenames in os.walk(path):
            dirnames.sort()
            for f in sorted(filenames):
                out.append(os.path.relpath(os.path.join(dirpath, f), HERE).replace(os.sep, "/"))
    return sorted(out)


def source_hash() -> str:
    h = hashlib.sha256()
    for rel in source_files():
        with open(os.path.join(HERE, rel), "rb") as f:
            data = f.read().replace(b"\r\n", b"\n")
        h.update(rel.encode() + b"\0" + hashlib.sha256(data).hexdigest().encode() + b"\n")
    return h.hexdigest()


def built_load() -> str | None:
    """The entry file the built package.json loads (its name carries the bundle's hash)."""
    try:
        with open(os.path.join(ROOT, "xsched", "labextension", "package.json")) as f:
            return json.load(f)["jupyterlab"]["_build"]["load"]
    except (OSError, KeyError, ValueError):
        return None


def dashboard_files() -> dict[str, str]:
    """name -> sha256 of each built file of the dashboard page."""
    if not os.path.isdir(DASHBOARD):
        return {}
    out = {}
    for name in sorted(os.listdir(DASHBOARD)):
        with open(os.path.join(DASHBOARD, name), "rb") as f:
            out[name] = hashlib.sha256(f.read()).hexdigest()
    return out


def write() -> dict:
    stamp = {"sha256": source_hash(), "files": source_files(), "load": built_load(), "dashboard": dashboard_files()}
    with open(STAMP, "w") as f:
        json.dump(stamp, f, indent=1)
        f.write("\n")
    return stamp


def check() -> list[str]:
    """Problems with the committed build (empty when it matches the source)."""
    try:
        with open(STAMP) as f:
            stamp = json.load(f)
    except OSError:
        return [f"{STAMP} is missing: run `make labextension`"]
    problems = []
    if stamp.get("sha256") != source_hash():
        problems.append("extensions/jupyterlab changed since the committed build: run `make labextension` "
                        "and commit xsched/labextension")
    load = stamp.get("load")
    if not load or load != built_load() or not os.path.isfile(os.path.join(ROOT, "xsched", "labextension", load)):
        problems.append(f"the built entry {load!r} does not match xsched/labextension/package.json")
    built = dashboard_files()
    if not stamp.get("dashboard") or stamp.get("dashboard") != built:
        problems.append("xsched/dashboard/static does not hold the dashboard page the stamp names "
                        f"({', '.join(sorted(built)) or 'nothing there'}): run `make labextension` and commit it")
    return problems


if __name__ == "__main__":
    if "--check" in sys.argv[1:]:
        problems = check()
        for p in problems:
            print(p, file=sys.stderr)
        sys.exit(1 if problems else 0)
    print(write()["sha256"])
