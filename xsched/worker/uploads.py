"""Loading a file sent by ``client.upload_file`` into this worker process.

``.py``: written to the upload directory (on ``sys.path``), then imported, or reloaded
if it was imported before (its stale bytecode is removed first). ``.zip``/``.egg``: put on
``sys.path``; modules already imported from an earlier copy of the archive are reloaded.

>>> import os, sys, tempfile
>>> d = tempfile.mkdtemp()
>>> load_file(d, "xsched_doctest_upload.py", b"VALUE = 1\\n").VALUE
1
>>> load_file(d, "xsched_doctest_upload.py", b"VALUE = 2\\n").VALUE
2
>>> sys.path.remove(d); del sys.modules["xsched_doctest_upload"]
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import zipimport

__all__ = ["load_file"]


def load_file(directory: str, filename: str, data: bytes, load: bool = True):
    """Write ``data`` as ``directory/filename`` and load it; return the module (``.py``) or None.

    ``load=False`` (any plain file name): only written, nothing imported.
    """
    if os.path.basename(filename) != filename or filename in ("", ".", ".."):
        raise ValueError(f"uploaded files need a plain file name, not {filename!r}")
    if load and not filename.endswith((".py", ".zip", ".egg")):
        raise ValueError(f"upload_file takes .py, .zip or .egg files, not {filename!r}")
    path = os.path.join(directory, filename)
    tmp = path + ".part"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    if not load:
        return None
    importlib.invalidate_caches()
    if filename.endswith(".py"):
        if directory not in sys.path:
            sys.path.insert(0, directory)
        try:  # same size and mtime second as the previous version: the old bytecode would be used
            os.remove(importlib.util.cache_from_source(path))
        except OSError:
            pass
        name = filename[:-3]
        module = sys.modules.get(name)
        if module is not None:
            return importlib.reload(module)
        return importlib.import_module(name)
    zipimport._zip_directory_cache.pop(path, None)
    sys.path_importer_cache.pop(path, None)
    if path not in sys.path:
        sys.path.insert(0, path)
    prefix = path + os.sep
    for module in list(sys.modules.values()):
        if (getattr(module, "__file__", None) or "").startswith(prefix):
            importlib.reload(module)
    return None
