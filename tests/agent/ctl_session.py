#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A scripted control-socket session for the agent tests (docs/control-protocol.md).

  ctl_session.py SOCKET < SCRIPT

One step a line:
  send LINE          write LINE (no reply read)
  ask NAME LINE      write LINE and print "NAME -> <the next line that is not an EVENT>"
                     (events read meanwhile are kept for `expect`)
  expect NAME SECS WORDS...
                     wait up to SECS for a line starting with WORDS (e.g. "EVENT LOST valve-1"),
                     print "NAME -> <that line>" or "NAME -> TIMEOUT"
  lines NAME LINE    write LINE (STATUS, STATUS METRICS) and print its "OK <WORD> <n>" answer's
                     n lines, each as "NAME: <line>"
  pause SECS         read (and keep) lines for SECS seconds
  keepalive NAME RES SECS EVERY_MS
                     for SECS seconds send KEEPALIVE RES every EVERY_MS ms, reading every line;
                     print "NAME -> <k> ok, <r> renewed, <other lines>"
Lines are printed as read; the session ends at the end of the script (closing the
connection releases what it held). Bounds are generous: a test asserts events, not speed.
"""
import select
import socket
import sys
import time


class Session:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.buf = b""
        self.kept = []
        self.closed = False

    def send(self, line):
        self.s.sendall(line.encode() + b"\n")

    def line(self, timeout):
        end = time.monotonic() + timeout
        while b"\n" not in self.buf:
            if self.closed:
                return None
            left = end - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([self.s], [], [], left)
            if r:
                data = self.s.recv(65536)
                if not data:
                    self.closed = True
                    return None
                self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode(errors="replace")

    def reply(self, timeout=30):
        while True:
            ln = self.line(timeout)
            if ln is None or not ln.startswith("EVENT "):
                return ln
            self.kept.append(ln)

    def expect(self, prefix, timeout):
        for i, ln in enumerate(self.kept):
            if ln.startswith(prefix):
                del self.kept[: i + 1]
                return ln
        self.kept = []
        end = time.monotonic() + timeout
        while True:
            ln = self.line(max(0.0, end - time.monotonic()))
            if ln is None:
                return "TIMEOUT"
            if ln.startswith(prefix):
                return ln


def main():
    sess = Session(sys.argv[1])
    for raw in sys.stdin:
        words = raw.split()
        if not words:
            continue
        op = words[0]
        if op == "send":
            sess.send(raw.split(None, 1)[1].rstrip("\n"))
        elif op == "ask":
            name, line = words[1], raw.split(None, 2)[2].rstrip("\n")
            sess.send(line)
            print("%s -> %s" % (name, sess.reply()), flush=True)
        elif op == "expect":
            name, secs, prefix = words[1], float(words[2]), " ".join(words[3:])
            print("%s -> %s" % (name, sess.expect(prefix, secs)), flush=True)
        elif op == "lines":
            name, line = words[1], raw.split(None, 2)[2].rstrip("\n")
            sess.send(line)
            head = sess.reply() or ""
            parts = head.split()
            n = int(parts[2]) if len(parts) == 3 and parts[0] == "OK" and parts[2].isdigit() else 0
            if n == 0:
                print("%s -> %s" % (name, head), flush=True)
            for _ in range(n):
                print("%s: %s" % (name, sess.line(30)), flush=True)
        elif op == "pause":
            end = time.monotonic() + float(words[1])
            while time.monotonic() < end and not sess.closed:
                ln = sess.line(max(0.0, end - time.monotonic()))
                if ln is not None:
                    sess.kept.append(ln)
        elif op == "keepalive":
            name, res, secs, every = words[1], words[2], float(words[3]), int(words[4]) / 1000.0
            end = time.monotonic() + secs
            oks = renewed = 0
            other = []
            while time.monotonic() < end:
                sess.send("KEEPALIVE " + res)
                t = time.monotonic() + every
                while True:
                    ln = sess.line(max(0.0, t - time.monotonic()))
                    if ln is None:
                        break
                    if ln == "OK KEEPALIVE " + res:
                        oks += 1
                    elif ln.startswith("EVENT RENEWED " + res):
                        renewed += 1
                    else:
                        other.append(ln)
            print("%s -> %d ok, %d renewed, %s" % (name, oks, renewed, other), flush=True)
        else:
            print("bad step: " + raw.strip())
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
