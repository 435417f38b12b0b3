# SPDX-License-Identifier: MIT
"""A scripted elkd for test_run_events.sh: one connection, one lease of valve-1.

  fake_elkd_events.py SOCKET LOG MODE

Every line the client sends is appended to LOG as "<CLOCK_BOOTTIME ms> <line>".
MODE recover: the grant leaves 4 s; 0.2 s after the command starts, EVENT SUSPECT; at
1.5 s, EVENT RECOVERED with 6 s from then (the only later deadline the client gets). The
gaps are seconds wide: a client held up on a loaded machine still reads SUSPECT on its own
(before RECOVERED moves the deadline) and RECOVERED before the grant's deadline.
MODE keepalive: the grant leaves 30 s; KEEPALIVE is answered OK, RELEASE too.
The socket appears (by rename) only once a connect can succeed (fake_elkd.py).
"""
import sys

from fake_elkd import now, serve


def main():
    path, log, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    script = []  # (when, line) still to send

    def on_line(c, w, out):
        t = now()
        if w[0] == "ACQUIRE":
            validity = 4000 if mode == "recover" else 30000
            c.sendall(b"OK ACQUIRED valve-1 5 %d 300 deadline_boottime_ms=%d\n" % (validity, t + validity))
        elif w[0] == "SUPERVISE":
            c.sendall(b"OK SUPERVISED valve-1\n")
            if mode == "recover":
                script[:] = [(t + 200, b"EVENT SUSPECT valve-1 3800 ELK_E_FLEET_UNAVAILABLE\n"),
                             (t + 1500, None)]
        elif w[0] == "KEEPALIVE":
            c.sendall(b"OK KEEPALIVE valve-1\n")
        elif w[0] == "RELEASE":
            c.sendall(b"OK RELEASED valve-1\n")

    def tick(c, out):
        while script and script[0][0] <= now():
            _, msg = script.pop(0)
            if msg is None:
                msg = b"EVENT RECOVERED valve-1 5 6000 300 deadline_boottime_ms=%d\n" % (now() + 6000)
            c.sendall(msg)

    serve(path, log, 60, on_line, tick)


if __name__ == "__main__":
    main()
