"""The worker side of ``client.restart(environment=...)``: receive, check, unpack, hand over.

One worker per host (chosen by the scheduler) receives the tar stream in chunks, written
straight to a file (never held in memory) while its sha256 is computed; on
``environment-done`` the hash is checked and the archive unpacked into
``<local directory>/xsched-environments/<sha256 prefix>`` (unpacked beside, then renamed,
so a half-unpacked environment is never used). On restart each worker leaves a note for
its nanny, ``<tmp>/xsched-restart-<pid>.json``, naming the environment's Python.

>>> import io, os, tarfile, tempfile, hashlib
>>> src = tempfile.mkdtemp(); os.makedirs(os.path.join(src, "bin")); _ = open(os.path.join(src, "bin", "python"), "w")
>>> buf = io.BytesIO(); tar = tarfile.open(fileobj=buf, mode="w|"); tar.add(src, arcname="."); tar.close()
>>> r = EnvironmentReceiver(tempfile.mkdtemp())
>>> r.start("u"), r.write("u", [buf.getvalue()])
(None, None)
>>> path, error = r.finish("u", hashlib.sha256(buf.getvalue()).hexdigest())
>>> error, os.path.exists(os.path.join(path, "bin", "python"))
(None, True)
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
import tempfile

__all__ = ["EnvironmentReceiver", "write_restart_note", "read_restart_note"]


def _note_path(pid: int) -> str:
    return os.path.join(tempfile.gettempdir(), f"xsched-restart-{pid}.json")


def write_restart_note(pid: int, environment: str) -> None:
    """Tell this worker's nanny to start it again with ``environment``'s Python."""
    tmp = _note_path(pid) + ".part"
    with open(tmp, "w") as f:
        json.dump({"environment": environment, "python": os.path.join(environment, "bin", "python")}, f)
    os.replace(tmp, _note_path(pid))


def read_restart_note(pid: int) -> dict | None:
    """The note a worker left (and remove it), or None."""
    try:
        with open(_note_path(pid)) as f:
            note = json.load(f)
    except (OSError, ValueError):
        return None
    try:
        os.remove(_note_path(pid))
    except OSError:
        pass
    return note


class EnvironmentReceiver:
    """Chunks in, an unpacked environment directory out."""

    def __init__(self, base: str):
        self.root = os.path.join(base, "xsched-environments")
        self._open: dict[str, tuple] = {}  # uid -> (file, hash, path)

    def start(self, uid: str) -> str | None:
        try:
            os.makedirs(self.root, exist_ok=True)
            path = os.path.join(self.root, f"{uid}.part")
            self._open[uid] = (open(path, "wb"), hashlib.sha256(), path)
        except OSError as e:
            return f"cannot write the environment under {self.root}: {e}"
        return None

    def write(self, uid: str, frames) -> str | None:
        entry = self._open.get(uid)
        if entry is None:
            return f"no environment upload {uid!r} is open here"
        f, digest, _ = entry
        try:
            for frame in frames:
                view = memoryview(frame.buffer if hasattr(frame, "buffer") else frame)
                f.write(view)
                digest.update(view)
        except OSError as e:
            return f"writing the environment failed: {e} (disk full?)"
        return None

    def finish(self, uid: str, sha256: str | None) -> tuple[str | None, str | None]:
        entry = self._open.pop(uid, None)
        if entry is None:
            return None, f"no environment upload {uid!r} is open here"
        f, digest, part = entry
        f.close()
        try:
            if sha256 and digest.hexdigest() != sha256:
                return None, (f"the environment arrived corrupted (sha256 {digest.hexdigest()[:12]}..., "
                              f"sent {sha256[:12]}...); restart again")
            final = os.path.join(self.root, digest.hexdigest()[:16])
            if not os.path.isdir(final):
                tmp = tempfile.mkdtemp(prefix=".unpacking-", dir=self.root)
                with tarfile.open(part, mode="r:*") as tar:
                    try:
                        tar.extractall(tmp, filter="fully_trusted")  # (from an authenticated client)
                    except TypeError:  # Python without extraction filters
                        tar.extractall(tmp)
                try:
                    os.rename(tmp, final)
                except OSError:  # another worker of this host unpacked it first
                    shutil.rmtree(tmp, ignore_errors=True)
            python = os.path.join(final, "bin", "python")
            if not os.path.exists(python):
                return None, f"the environment has no bin/python (unpacked into {final}): ship a venv or conda env"
            return os.path.normpath(final), None
        except (OSError, tarfile.TarError) as e:
            return None, f"unpacking the environment failed: {type(e).__name__}: {e}"
        finally:
            try:
                os.remove(part)
            except OSError:
                pass
