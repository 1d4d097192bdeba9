"""What a line magic brings back from a kernel (``r = %scheduler expr``): pack_value/unpack_value."""

import sys
import threading
import types

from xsched.jupyter import kernel
from xsched.jupyter.kernel import RemoteRepr, pack_value, unpack_value


def test_a_picklable_value_comes_back_as_itself():
    value = {"a": [1, 2.5, None], "b": {3, 4}}
    assert unpack_value(pack_value(value)) == value


def test_an_unpicklable_value_comes_back_as_its_repr():
    got = unpack_value(pack_value(threading.Lock()))
    assert isinstance(got, RemoteRepr) and repr(got).startswith("<unlocked _thread.lock object")


def test_a_value_of_a_class_this_process_cannot_import_comes_back_as_its_repr():
    mod = types.ModuleType("xsched_kernel_only_module")
    exec("class Thing:\n    def __repr__(self):\n        return '<Thing of the kernel>'", mod.__dict__)
    sys.modules[mod.__name__] = mod  # importable where it is pickled (the kernel's process) ...
    try:
        packed = pack_value(mod.Thing())
    finally:
        del sys.modules[mod.__name__]  # ... not where it is unpickled (the notebook)
    got = unpack_value(packed)
    assert isinstance(got, RemoteRepr) and repr(got) == "<Thing of the kernel>"


def test_a_value_too_large_to_send_comes_back_as_its_repr(monkeypatch):
    monkeypatch.setattr(kernel, "MAX_VALUE_BYTES", 1000)
    got = unpack_value(pack_value(b"x" * 5000))
    assert isinstance(got, RemoteRepr) and repr(got).startswith("b'xxxx")
    monkeypatch.setattr(kernel, "MAX_REPR_CHARS", 10)
    assert repr(unpack_value(pack_value(b"x" * 5000))) == "b'xxxxxxxx..."
