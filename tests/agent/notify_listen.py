#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A stand-in for the service manager's end of sd_notify: binds a datagram socket and
appends every message to a log, one line per datagram with '|' for its newlines, and
keeps the count of WATCHDOG=1 pings in a file of its own (rewritten after each)."""
import os
import socket
import sys

path, log, pings = sys.argv[1], sys.argv[2], sys.argv[3]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
n = 0
with open(log, "a", buffering=1) as out:
    while True:
        msg = s.recv(4096).decode("utf-8", "replace")
        out.write(msg.replace("\n", "|") + "\n")
        if "WATCHDOG=1" in msg.split("\n"):
            n += 1
            with open(pings + ".tmp", "w") as p:
                p.write(str(n))
            os.replace(pings + ".tmp", pings)
