# SPDX-License-Identifier: MIT
"""What the scripted elkds of the agent tests share (fake_elkd_events.py,
fake_elkd_supervise.py): one client connection on a Unix socket, served line by line.

serve(path, log, seconds, on_line, tick): the socket appears (by rename) only once a
connect can succeed; every line the client sends is appended to LOG as
"<CLOCK_BOOTTIME ms> <line>" and handed to on_line(conn, words, out) (out: the LOG file);
tick(conn, out) runs between reads (every 20 ms at most). Ends when the client closes
the connection or after SECONDS.
"""
import os
import socket
import time


def now():
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * 1000)


def accept_one(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    s = socket.socket(socket.AF_UNIX)
    s.bind(path + ".new")
    s.listen(4)
    os.rename(path + ".new", path)
    c, _ = s.accept()
    c.settimeout(0.02)
    return c


def serve(path, log, seconds, on_line, tick):
    c = accept_one(path)
    out = open(log, "a", buffering=1)
    buf = b""
    end = now() + seconds * 1000
    while now() < end:
        try:
            data = c.recv(4096)
            if not data:
                break
            buf += data
        except socket.timeout:
            pass
        while b"\n" in buf:
            raw, buf = buf.split(b"\n", 1)
            line = raw.decode()
            out.write("%d %s\n" % (now(), line))
            on_line(c, line.split(), out)
        tick(c, out)
