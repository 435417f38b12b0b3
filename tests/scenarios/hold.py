#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A lease holder for the scenarios that logs what elkd tells it, with the times it read it.

usage: hold.py SOCKET LOG REQUEST...
Sends each REQUEST (a control-protocol line, e.g. "ACQUIRE valve 10s") on one connection,
then keeps the connection (and so the lease) open, appending every line received to LOG as
    <realtime_ms> <boottime_ms> <line>
(realtime: CLOCK_REALTIME, the clock of the actuator log and of the servers on this host;
boottime: CLOCK_BOOTTIME, the clock of elkd's deadline_boottime_ms=). Runs until SIGTERM or
until elkd closes the connection (exit 4). Exit 3 when the socket cannot be reached.
"""
import signal
import socket
import sys
import time


def stamp():
    return "%d %d" % (time.time_ns() // 1000000, time.clock_gettime_ns(time.CLOCK_BOOTTIME) // 1000000)


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    path, log = sys.argv[1], sys.argv[2]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
    except OSError as e:
        print(f"hold.py: connect: {e}", file=sys.stderr)
        return 3
    with open(log, "a", buffering=1) as out:
        for r in sys.argv[3:]:
            out.write(f"{stamp()} > {r}\n")
            s.sendall(r.encode() + b"\n")
        buf = b""
        while True:
            data = s.recv(4096)
            if not data:
                out.write(f"{stamp()} CLOSED\n")
                return 4
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                out.write(f"{stamp()} {line.decode('latin-1').rstrip()}\n")


if __name__ == "__main__":
    sys.exit(main())
