#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Raw control-socket client for the scenarios (bytes as given, no validation).

usage: ctl.py SOCKET [--quiet-ms N] [--max-ms N] REQUEST...
Each REQUEST is sent as is followed by b"\\n" (Python escapes such as \\x00 are decoded, so
binary bytes can be sent). Prints every line received until the connection has been quiet
for --quiet-ms (default 300) after at least one line per request came, or --max-ms passed
(default 30000). Exit 0, or 3 if the connection could not be made, 4 if elkd closed it.
Quiet time alone ended the read before a slow answer had begun (on a loaded machine elkd's
turn can come later than 150 ms), and the caller read an empty STATUS: so the answers are
waited for (up to --max-ms), and only then the quiet time ends the read.
"""
import socket
import sys
import time


def main():
    a = sys.argv[1:]
    if not a:
        print(__doc__)
        return 2
    path = a.pop(0)
    quiet, limit = 300, 30000
    while a and a[0].startswith("--"):
        opt = a.pop(0)
        if opt == "--quiet-ms":
            quiet = int(a.pop(0))
        elif opt == "--max-ms":
            limit = int(a.pop(0))
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
    except OSError as e:
        print(f"connect: {e}")
        return 3
    for r in a:
        s.sendall(r.encode("latin-1").decode("unicode_escape").encode("latin-1") + b"\n")
    s.settimeout(quiet / 1000)
    end = time.monotonic() + limit / 1000
    buf = b""
    closed = False
    while time.monotonic() < end:
        try:
            d = s.recv(65536)
        except socket.timeout:
            if buf.count(b"\n") >= len(a):
                break
            continue
        except OSError:
            closed = True
            break
        if not d:
            closed = True
            break
        buf += d
    sys.stdout.write(buf.decode("latin-1"))
    return 4 if closed else 0


if __name__ == "__main__":
    sys.exit(main())
