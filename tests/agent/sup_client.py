# SPDX-License-Identifier: MIT
"""A control client for test_supervise_users.sh, meant to run as another user.

  sup_client.py SOCKET RESOURCE MODE OUTDIR

Takes RESOURCE, then asks elkd to supervise a process group and exits without RELEASE
(as a killed client would), printing every answer to stdout.
MODE own: the client's own process group (which it shares with whoever started it).
MODE child: a child in a group of its own that stays behind when the client exits; it
  writes its pid to OUTDIR/child, notes a SIGTERM in OUTDIR/child.termed and lives on.
  The client writes OUTDIR/supervised and exits only once OUTDIR/go exists.
"""
import os
import signal
import socket
import sys
import time


def main():
    sock, res, mode, out = sys.argv[1:5]
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    f = s.makefile("rwb", buffering=0)

    def ask(line):
        f.write(line.encode() + b"\n")
        while True:
            r = f.readline().decode()
            if not r:
                return "EOF"
            if not r.startswith("EVENT"):
                return r.strip()

    print(ask("ACQUIRE %s 30s" % res), flush=True)
    if mode == "own":
        print(ask("SUPERVISE %s %d" % (res, os.getpgrp())), flush=True)
        os._exit(0)
    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:
        f.close()  # the connection is the client's alone: it must end when the client does
        s.close()
        os.setpgid(0, 0)
        signal.signal(signal.SIGTERM, lambda *a: open(out + "/child.termed", "w").close())
        open(out + "/child", "w").write(str(os.getpid()))
        os.write(wr, b"r")
        while True:
            time.sleep(0.05)
    os.setpgid(pid, pid)
    os.read(rd, 1)
    print(ask("SUPERVISE %s %d" % (res, pid)), flush=True)
    open(out + "/supervised", "w").write(str(pid))
    end = time.monotonic() + 120
    while not os.path.exists(out + "/go") and time.monotonic() < end:
        time.sleep(0.05)
    os._exit(0)


if __name__ == "__main__":
    main()
