"""Arrays that cross the wire start at aligned addresses on arrival.

ZeroMQ keeps small messages inside its own header or in place in its receive batch, at any
byte offset; an array made on that memory as it is was misaligned (a 10-element float64
result at an address 4 bytes past a multiple of 8), which NumPy reads but compiled code may
refuse: scipy's splines, and so xarray's cubic ``interp``, failed on the workers.
"""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]

SIZES = [1, 3, 10, 33, 100, 1000, 100_000]


def where(x: np.ndarray) -> tuple:
    return x.flags.aligned, x.ctypes.data % 8


def test_results_and_inputs_arrive_aligned(client):
    made = client.map(np.arange, SIZES, dtype="f8", pure=False)
    for n, x in zip(SIZES, client.gather(made)):
        assert x.shape == (n,) and where(x) == (True, 0), (n, x.ctypes.data % 64)
    # an array sent from here to a worker, and a worker's result to a task on the other worker
    sent = [client.scatter(np.linspace(0, 1, n)) for n in SIZES]
    for n, seen in zip(SIZES, client.gather([client.submit(where, s, pure=False) for s in sent])):
        assert seen == (True, 0), n
    workers = sorted(client.scheduler_info()["workers"])
    for n, f in zip(SIZES, made):
        moved = client.submit(where, f, workers=[w for w in workers if w not in client.who_has(f)[f.key]][:1] or None,
                              pure=False)
        assert moved.result(timeout=30) == (True, 0), n


def test_a_cubic_spline_takes_a_computed_coordinate(client):
    interpolate = pytest.importorskip("scipy.interpolate")
    import xsched.array as xa

    y = xa.from_array(np.linspace(0, 1, 10), chunks=5).compute()
    spline = interpolate.make_interp_spline(y, np.sin(y))  # (refused a misaligned array)
    assert np.allclose(spline(y), np.sin(y))
