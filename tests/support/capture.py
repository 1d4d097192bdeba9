"""Capture every frame on one interface into a file, until SIGTERM/SIGINT (pure Python).

    ip netns exec NS python tests/support/capture.py --iface eth0 --out FILE [--snaplen N]

Why not tcpdump: it is not installed everywhere, and the tests need only the raw bytes
(to check whether some plaintext crossed the wire), so an AF_PACKET socket does it
with the standard library. Run as root (CAP_NET_RAW), inside the namespace whose
interface you want (``tests/support/netns.py``'s ``capture(host)`` does all of this).

Protocol with the caller, so nobody has to sleep:

* ``FILE.ready`` appears once the socket is bound: every frame from then on is captured.
* SIGTERM or SIGINT stops it: it first drains the frames the kernel already queued for
  the socket (everything that crossed the interface before the signal), then writes
  ``FILE.stats`` (JSON: frames, bytes, truncated, kernel_packets, kernel_drops) and
  exits 0. ``kernel_drops`` > 0 means the socket's buffer overflowed: frames are missing.

FILE format: frames appended one after another, each as a header of two big-endian
uint32 -- stored length, original length -- then the stored bytes (the whole frame
unless ``--snaplen``, or a frame longer than the 256 KiB buffer, cut it). Frames in both
directions are captured (veth offloads: a frame may be up to ~64 KiB, above the MTU).
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import socket
import struct
import sys

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_STATISTICS = 6
SO_RCVBUFFORCE = 33
BUFSIZE = 256 * 1024
HEADER = struct.Struct(">II")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iface", required=True, help="interface to capture on, e.g. eth0")
    p.add_argument("--out", required=True, help="file to append frames to (FILE.ready, FILE.stats beside it)")
    p.add_argument("--snaplen", type=int, default=0, help="keep only the first N bytes of each frame (0: all)")
    p.add_argument("--rcvbuf", type=int, default=64 * 2**20, help="socket receive buffer (bytes)")
    args = p.parse_args(argv)

    # A signal only wakes the loop (through the wakeup pipe); frames are never cut
    # half-written, and the ones already queued are still drained before exiting.
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, frame: None)

    frames = nbytes = truncated = 0
    buf = bytearray(BUFSIZE)
    view = memoryview(buf)
    keep = args.snaplen if args.snaplen > 0 else BUFSIZE
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    out = open(args.out, "ab", buffering=1 << 20)
    try:
        try:
            sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, args.rcvbuf)  # root: above rmem_max
        except OSError:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, args.rcvbuf)
        sock.bind((args.iface, 0))
        sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)  # reading resets: count from bind on
        with open(args.out + ".ready", "w") as f:
            f.write(f"{os.getpid()}\n")

        def record(n: int) -> None:
            nonlocal frames, nbytes, truncated
            stored = min(n, keep, BUFSIZE)
            if stored < n:
                truncated += 1
            out.write(HEADER.pack(stored, n))
            out.write(view[:stored])
            frames += 1
            nbytes += stored

        def drain(limit: int = 4096) -> None:  # bounded: a flood cannot starve the stop check
            for _ in range(limit):
                try:
                    n = sock.recv_into(buf, BUFSIZE, socket.MSG_TRUNC)
                except BlockingIOError:
                    return
                record(n)

        sock.setblocking(False)
        while True:
            readable, _, _ = select.select([sock, wake_r], [], [])
            drain()
            if wake_r in readable:
                break
        drain(limit=1 << 22)  # what was queued before the signal (at most the socket buffer)
        packets, drops = struct.unpack("II", sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
    finally:
        out.close()
        sock.close()
    stats = {"frames": frames, "bytes": nbytes, "truncated": truncated,
             "kernel_packets": packets, "kernel_drops": drops}
    tmp = args.out + ".stats.tmp"
    with open(tmp, "w") as f:
        json.dump(stats, f)
    os.replace(tmp, args.out + ".stats")
    return 0


if __name__ == "__main__":
    sys.exit(main())
