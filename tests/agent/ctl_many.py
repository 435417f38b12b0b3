#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Many leases through a few connections of elkd's control socket (test_scale.sh).

  ctl_many.py SOCK CLIENTS DIR NAME...

Opens CLIENTS connections, spreads NAME... over them (round robin) and pipelines one
"ACQUIRE <name> 60000" per name on its connection. Once every ACQUIRE has its answer it
writes DIR/held ("acquired <k>/<n>", then a line per name not granted), and keeps every
connection read (renewal events keep coming) until DIR/release exists; then it pipelines
"RELEASE <name>" for each name it holds and writes DIR/released ("released <k>/<held>").
Bounds are generous (minutes): the test asserts what elkd answered, not how fast.
"""
import os
import select
import socket
import sys
import time

BOUND = 300  # s: for all answers, and for DIR/release to appear


class Conn:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.buf = b""
        self.answers = []  # non-EVENT lines, in order

    def send(self, lines):
        self.s.sendall("".join(lines).encode())

    def pump(self):
        data = self.s.recv(1 << 16)
        if not data:
            raise SystemExit("elkd closed a connection")
        self.buf += data
        *done, self.buf = self.buf.split(b"\n")
        for line in done:
            text = line.decode(errors="replace")
            if not text.startswith("EVENT "):
                self.answers.append(text)


def read_until(conns, want, end):
    """Read every connection until each has want[i] answers (or the bound passes)."""
    while any(len(c.answers) < w for c, w in zip(conns, want)):
        if time.time() > end:
            raise SystemExit("no answer within %d s" % BOUND)
        ready, _, _ = select.select([c.s for c in conns], [], [], 1.0)
        for c in conns:
            if c.s in ready:
                c.pump()


def main():
    sock, clients, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    names = sys.argv[4:]
    conns = [Conn(sock) for _ in range(clients)]
    mine = [names[i::clients] for i in range(clients)]
    for c, ns in zip(conns, mine):
        c.send(["ACQUIRE %s 60000\n" % n for n in ns])
    read_until(conns, [len(ns) for ns in mine], time.time() + BOUND)
    held, missing = [], []
    for c, ns in zip(conns, mine):
        got = []
        for n, a in zip(ns, c.answers):
            if a.startswith("OK ACQUIRED %s " % n):
                got.append(n)
            else:
                missing.append("%s: %s" % (n, a))
        held.append(got)
        c.answers = []
    with open(os.path.join(out, "held.tmp"), "w") as f:
        f.write("acquired %d/%d\n" % (sum(map(len, held)), len(names)))
        f.writelines("not granted: %s\n" % m for m in missing)
    os.rename(os.path.join(out, "held.tmp"), os.path.join(out, "held"))
    end = time.time() + BOUND
    while not os.path.exists(os.path.join(out, "release")):
        if time.time() > end:
            raise SystemExit("no release asked for within %d s" % BOUND)
        ready, _, _ = select.select([c.s for c in conns], [], [], 0.2)
        for c in conns:
            if c.s in ready:
                c.pump()
        for c in conns:
            c.answers = []
    for c, ns in zip(conns, held):
        c.send(["RELEASE %s\n" % n for n in ns])
    read_until(conns, [len(ns) for ns in held], time.time() + BOUND)
    ok = sum(a.startswith("OK RELEASED ") for c in conns for a in c.answers)
    with open(os.path.join(out, "released"), "w") as f:
        f.write("released %d/%d\n" % (ok, sum(map(len, held))))


if __name__ == "__main__":
    main()
