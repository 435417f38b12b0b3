#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Holds a lease through elkd's control socket, then (shutdown) sends elkd SIGTERM or
(loss) SIGSTOPs a majority of the fleet, and reads the key on a Redis node that stays up
until it is gone. Asserts the key was there at every read that completed before the
lease's stop_margin had passed since SHUTDOWN (or since the loss, which comes no earlier
than the last deadline elkd reported), and that it goes afterwards.

Every bound is a safety bound: a slow machine only makes reads later, never a failure.
Times are CLOCK_BOOTTIME ms, the clock elkd reports deadlines in.

usage: keep_key.py shutdown|loss SOCK RESOURCE REDIS_PORT KEY ELKD_PID STOP_MARGIN_MS [PID...]
"""
import os
import select
import signal
import socket
import sys
import time


def now_ms():
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * 1000)


class Redis:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.f = self.s.makefile("rb")

    def exists(self, key):
        k = key.encode()
        self.s.sendall(b"*2\r\n$6\r\nEXISTS\r\n$%d\r\n%s\r\n" % (len(k), k))
        line = self.f.readline()
        if not line.startswith(b":"):
            raise RuntimeError("unexpected reply %r" % line)
        return int(line[1:])


def deadline_of(line):
    for w in line.split():
        if w.startswith("deadline_boottime_ms="):
            return int(w.split("=", 1)[1])
    return None


def main():
    mode, sock, res, port, key, elkd, margin = sys.argv[1:8]
    others = [int(p) for p in sys.argv[8:]]
    port, elkd, margin = int(port), int(elkd), int(margin)
    c = socket.socket(socket.AF_UNIX)
    c.connect(sock)
    cf = c.makefile("r")
    c.sendall(("ACQUIRE %s\n" % res).encode())
    first = cf.readline().strip()
    print("holder:", first)
    if not first.startswith("OK ACQUIRED"):
        return 2
    deadline = deadline_of(first)
    r = Redis(port)
    if r.exists(key) != 1:
        print("FAIL: key not in Redis after ACQUIRED")
        return 1
    events = []

    def read_events():
        nonlocal deadline
        while select.select([c], [], [], 0)[0]:
            line = cf.readline()
            if not line:
                return False
            line = line.strip()
            events.append(line)
            d = deadline_of(line)
            if d is not None:
                deadline = max(deadline, d)
        return True

    open_conn = True
    if mode == "shutdown":
        t0 = now_ms()
        os.kill(elkd, signal.SIGTERM)
        window_end = t0 + margin
    else:
        read_events()
        for p in others:
            os.kill(p, signal.SIGSTOP)
        window_end = None  # the loss comes no earlier than the last deadline seen
    samples = []
    limit = now_ms() + 30000
    while now_ms() < limit:
        if open_conn:
            open_conn = read_events()
        if window_end is None and any(e.startswith("EVENT LOST") for e in events):
            window_end = deadline + margin
        b = now_ms()
        v = r.exists(key)
        a = now_ms()
        samples.append((b, a, v))
        if v == 0 and window_end is not None and a > window_end:
            break
        time.sleep(0.005)
    while mode == "shutdown" and open_conn and now_ms() < limit:
        open_conn = read_events()
        time.sleep(0.01)
    print("holder events:", events)
    if window_end is None:
        print("FAIL: no EVENT LOST within 30 s")
        return 1
    inside = [s for s in samples if s[1] < window_end]
    early = [s for s in inside if s[2] == 0]
    gone = [s for s in samples if s[2] == 0]
    print("%d reads, %d completed before stop_margin had passed (%d ms), %d of them without the key;"
          " first read without it %s ms after the window's end"
          % (len(samples), len(inside), margin, len(early),
             (gone[0][1] - window_end) if gone else "never"))
    rc = 0
    if early:
        print("FAIL: key gone %d ms before stop_margin had passed" % (window_end - early[0][1]))
        rc = 1
    if not inside:
        print("FAIL: no read completed inside the window (nothing was checked)")
        rc = 1
    if not gone:
        print("FAIL: key still there 30 s later")
        rc = 1
    want = "EVENT SHUTDOWN" if mode == "shutdown" else "EVENT LOST"
    if not any(e.startswith(want) for e in events):
        print("FAIL: holder was not told (%s)" % want)
        rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
