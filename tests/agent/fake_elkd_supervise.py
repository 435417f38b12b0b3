# SPDX-License-Identifier: MIT
"""A scripted elkd for test_supervise_run.sh: one connection, one lease of valve-1, and
no supervision of its own (it signals nothing), so what `elk run` does alone is seen.

  fake_elkd_supervise.py SOCKET LOG MODE MARKS

Every line the client sends is appended to LOG as "<CLOCK_BOOTTIME ms> <line>".
The grant leaves 30 s and a stop margin of 300 ms.
MODE deny: SUPERVISE is answered ERR ELK_E_SUPERVISE_DENIED (as elkd does for a group
  with a process of another user in it).
MODE lost: SUPERVISE is answered OK SUPERVISED; once MARKS/ready exists (the command is
  set up), EVENT LOST valve-1 ELK_E_FLEET_LOST 300.
MODE plain: SUPERVISE is answered OK SUPERVISED, nothing else happens.
RELEASE is answered OK RELEASED; LOG then also gets "<ms> at RELEASE: leftover alive=0|1"
for the pid in MARKS/leftover, if any (a zombie counts as gone). The socket appears (by rename) only once a connect can
succeed.
"""
import os
import sys

from fake_elkd import now, serve


def alive(pidfile):
    try:
        stat = open("/proc/%s/stat" % open(pidfile).read().strip()).read()
    except OSError:
        return 0
    return 0 if stat[stat.rindex(")") + 2] in "ZX" else 1


def main():
    path, log, mode, marks = sys.argv[1:5]
    lose = [False]

    def on_line(c, w, out):
        if w[0] == "ACQUIRE":
            c.sendall(b"OK ACQUIRED valve-1 7 30000 300 deadline_boottime_ms=%d\n" % (now() + 30000))
        elif w[0] == "SUPERVISE" and mode == "deny":
            c.sendall(b"ERR ELK_E_SUPERVISE_DENIED SUPERVISE refused: process 1 in the group "
                      b"runs as uid 0 (effective 0, saved 0), not as the client's uid 65534\n")
        elif w[0] == "SUPERVISE":
            c.sendall(b"OK SUPERVISED valve-1\n")
            lose[0] = True
        elif w[0] == "RELEASE":
            if os.path.exists(marks + "/leftover"):
                out.write("%d at RELEASE: leftover alive=%d\n" % (now(), alive(marks + "/leftover")))
            c.sendall(b"OK RELEASED valve-1\n")

    def tick(c, out):
        if lose[0] and os.path.exists(marks + "/ready"):
            lose[0] = False
            out.write("%d EVENT LOST sent\n" % now())
            c.sendall(b"EVENT LOST valve-1 ELK_E_FLEET_LOST 300\n")

    serve(path, log, 120, on_line, tick)


if __name__ == "__main__":
    main()
