# SPDX-License-Identifier: MIT
"""Pipelined clients of elkd's control socket (docs/control-protocol.md: every request gets
exactly one answer, in order, whatever the volume).

  ctl_pipeline.py SOCK burst KIND N      N requests of one kind in one write; prints
                                         "answers R/N" (R: answers received, in order)
  ctl_pipeline.py SOCK mixed N HELD OTHER [SEED]
                                         takes HELD, then pipelines N mixed requests (STATUS,
                                         STATUS METRICS, STATUS JSON, HELP, PING, unknown
                                         commands, unknown resources, ACQUIRE/RELEASE of
                                         OTHER, ...) and reads them slowly; each answer is
                                         matched to its request; HELD must stay held
  ctl_pipeline.py SOCK pause N SECONDS   N requests with distinct answers in one stream, none
                                         read for SECONDS (less than client_stall_timeout),
                                         then all of them: elkd must have stopped reading
                                         instead of queueing megabytes or dropping us
  ctl_pipeline.py SOCK trickle N SECONDS N requests with distinct answers; for SECONDS the
                                         answers are read at 2 KiB/s (512 bytes every 250 ms,
                                         less than elkd's queue of 16 KiB per stall bound),
                                         then at full speed: a reader that slow is reading,
                                         not stalled, and gets every answer
  ctl_pipeline.py SOCK random COUNT SIZE [SEED]
                                         COUNT connections, each sends SIZE random bytes then
                                         "\\nPING\\n": one answer per line, the last OK PONG

Prints one "result: ..." line per case and exits 1 on the first mismatch.
"""
import os
import random
import socket
import sys
import threading
import time

TIMEOUT = 60  # s without a byte from elkd: generous, the machine may be loaded


def connect(path):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    s.settimeout(TIMEOUT)
    return s


class Answers:
    """One answer at a time (its lines), events skipped."""

    def __init__(self, sock):
        self.f = sock.makefile("rb")
        self.events = 0

    def line(self):
        raw = self.f.readline()
        if not raw.endswith(b"\n"):
            return None
        return raw[:-1].decode("latin-1")

    def next(self):
        while True:
            first = self.line()
            if first is None:
                return None
            if first.startswith("EVENT "):
                self.events += 1
                continue
            break
        lines = [first]
        w = first.split()
        if len(w) == 3 and w[0] == "OK" and w[1] in ("STATUS", "METRICS"):
            for _ in range(int(w[2])):
                more = self.line()
                if more is None:
                    return None
                lines.append(more)
        return lines


def writer(sock, data, errors):
    try:
        sock.sendall(data)
    except OSError as e:  # elkd closed the connection: the reader sees the rest
        errors.append(str(e))


def pipeline(sock, requests, slow=0.0, pause=0.0):
    """Send requests in one stream (a thread: elkd may stop reading, back-pressure), read
    an answer for each. Returns (answers received in order, first mismatch or None)."""
    errors = []
    data = "".join(r + "\n" for r, _ in requests).encode("latin-1")
    t = threading.Thread(target=writer, args=(sock, data, errors), daemon=True)
    t.start()
    time.sleep(pause)
    ans = Answers(sock)
    got = 0
    for i, (req, expect) in enumerate(requests):
        try:
            a = ans.next()
        except (socket.timeout, OSError) as e:
            return got, "request %d (%r): no answer (%s)" % (i, req, e)
        if a is None:
            return got, "request %d (%r): connection closed" % (i, req)
        if expect is not None and not expect(a):
            return got, "request %d (%r): wrong answer %r" % (i, req, " | ".join(a)[:600])
        got += 1
        if slow and i % 50 == 49:
            time.sleep(slow)
    t.join(TIMEOUT)
    return got, None


def one(kind):
    return {
        "status": ("STATUS", lambda a: a[0].startswith("OK STATUS ")),
        "json": ("STATUS JSON", lambda a: a[0].startswith("OK JSON {")),
        "metrics": ("STATUS METRICS", lambda a: a[0].startswith("OK METRICS ")),
        "help": ("HELP", lambda a: a[0].startswith("OK HELP ")),
        "ping": ("PING", lambda a: a[0] == "OK PONG"),
        "unknown": ("FROBNICATE", lambda a: a[0].startswith("ERR ELK_E_CTL_UNKNOWN ")),
    }[kind]


def acquire_other(res):
    """An ACQUIRE with its RELEASE right behind it: granted, or cancelled by that RELEASE if
    elkd read it while the round ran (docs/control-protocol.md); either way one answer."""
    return lambda a: (a[0].startswith("OK ACQUIRED %s " % res) or
                      a[0] == "ERR ELK_E_CANCELLED request cancelled by a RELEASE sent before "
                               "it was answered: " + res)


def burst(path, kind, n):
    s = connect(path)
    if kind == "acqrel":
        reqs = []
        for _ in range(n // 2):
            reqs.append(("ACQUIRE valve-2 10s", acquire_other("valve-2")))
            reqs.append(("RELEASE valve-2", lambda a: a[0] == "OK RELEASED valve-2"))
    else:
        reqs = [one(kind)] * n
    got, bad = pipeline(s, reqs)
    print("result: %s answers %d/%d%s" % (kind, got, len(reqs), "" if bad is None else " (" + bad + ")"))
    s.close()
    return bad is None


def status_holder(held, pid):
    want = "resource name=%s " % held
    owner = "holder=pid:%d " % pid

    def ok(a):
        if not a[0].startswith("OK STATUS "):
            return False
        row = [l for l in a[1:] if l.startswith(want)]
        return len(row) == 1 and owner in row[0] and " state=idle " not in row[0]

    return ok


def mixed_requests(n, held, other, rng):
    """n requests whose answers tell them apart: where one goes missing or comes out of
    order, the match fails at once."""
    pid = os.getpid()
    reqs = []
    i = 0
    while len(reqs) < n:
        i += 1
        r = rng.random()
        if r < 0.15:
            reqs.append(("STATUS", status_holder(held, pid)))
        elif r < 0.20:
            reqs.append(("STATUS METRICS", lambda a: a[0].startswith("OK METRICS ") and
                         any(l.startswith("elk_") for l in a[1:])))
        elif r < 0.25:
            reqs.append(("STATUS JSON", lambda a: a[0].startswith("OK JSON {")))
        elif r < 0.35:
            reqs.append(("HELP", lambda a: a[0].startswith("OK HELP ACQUIRE")))
        elif r < 0.45:
            reqs.append(("PING", lambda a: a[0] == "OK PONG"))
        elif r < 0.55:
            reqs.append(("FROB%d x" % i, lambda a: a[0].startswith("ERR ELK_E_CTL_UNKNOWN ")))
        elif r < 0.75:
            tag = "nores-%d" % i
            reqs.append(("RELEASE " + tag, lambda a, tag=tag: a[0].startswith(
                "ERR ELK_E_RESOURCE_UNKNOWN ") and a[0].endswith(": " + tag)))
        elif r < 0.80:
            reqs.append(("ACQUIRE " + held, lambda a: a[0].startswith("ERR ELK_E_ALREADY_HELD ")))
        elif r < 0.85:
            reqs.append(("KEEPALIVE " + other, lambda a: a[0].startswith("ERR ELK_E_NOT_HELD ")))
        else:
            reqs.append(("ACQUIRE %s 10s" % other, acquire_other(other)))
            reqs.append(("RELEASE " + other, lambda a: a[0] == "OK RELEASED " + other))
    return reqs


def mixed(path, n, held, other, seed):
    rng = random.Random(seed)
    s = connect(path)
    ans = Answers(s)
    s.sendall(("ACQUIRE %s 10s\n" % held).encode())
    a = ans.next()
    if a is None or not a[0].startswith("OK ACQUIRED %s " % held):
        print("result: mixed: %s not granted first: %r" % (held, a))
        return False
    reqs = mixed_requests(n, held, other, rng)
    t0 = time.monotonic()
    got, bad = pipeline(s, reqs, slow=0.04)
    took = time.monotonic() - t0
    print("result: mixed answers %d/%d in order in %.1f s%s" % (
        got, len(reqs), took, "" if bad is None else " (" + bad + ")"))
    if bad is not None:
        return False
    # the lease taken before the burst is still this connection's
    s.sendall(b"STATUS\nRELEASE " + held.encode() + b"\n")
    st, rel = ans.next(), ans.next()
    ok = st is not None and status_holder(held, os.getpid())(st)
    print("result: mixed: %s still held by this connection after the burst: %s" % (held, "yes" if ok else "no"))
    print("result: mixed: its release: %s" % (rel[0] if rel else None))
    s.close()
    return ok and rel is not None and rel[0] == "OK RELEASED " + held


def paused(path, n, seconds):
    s = connect(path)
    reqs = []
    for i in range(n):
        tag = "r%d" % i
        reqs.append(("RELEASE " + tag, lambda a, tag=tag: a[0].startswith(
            "ERR ELK_E_RESOURCE_UNKNOWN ") and a[0].endswith(": " + tag)))
    got, bad = pipeline(s, reqs, pause=seconds)
    print("result: pause answers %d/%d in order after %.1f s unread%s" % (
        got, n, seconds, "" if bad is None else " (" + bad + ")"))
    s.close()
    return bad is None


def trickle(path, n, slow_s):
    s = connect(path)
    data = "".join("RELEASE r%d\n" % i for i in range(n)).encode()
    errors = []
    t = threading.Thread(target=writer, args=(s, data, errors), daemon=True)
    t.start()
    t0 = time.monotonic()
    buf, got, bad = b"", 0, None
    while got < n and bad is None:
        try:
            chunk = s.recv(512 if time.monotonic() - t0 < slow_s else 65536)
        except OSError as e:
            bad = "request %d: no answer (%s)" % (got, e)
            break
        if not chunk:
            bad = "request %d: connection closed" % got
            break
        buf += chunk
        *lines, buf = buf.split(b"\n")
        for l in lines:
            if l.startswith(b"EVENT "):
                continue
            if not (l.startswith(b"ERR ELK_E_RESOURCE_UNKNOWN ") and l.endswith(b": r%d" % got)):
                bad = "request %d: wrong answer %r" % (got, l[:200])
                break
            got += 1
        if time.monotonic() - t0 < slow_s:
            time.sleep(0.25)
    print("result: trickle answers %d/%d in order in %.1f s%s" % (
        got, n, time.monotonic() - t0, "" if bad is None else " (" + bad + ")"))
    s.close()
    return bad is None


def random_input(path, count, size, seed):
    rng = random.Random(seed)
    bad = 0
    for k in range(count):
        data = bytes(rng.getrandbits(8) for _ in range(size))
        lines = data.count(b"\n") + 2  # the partial last line ends at the "\n", then PING
        s = connect(path)
        errors = []
        t = threading.Thread(target=writer, args=(s, data + b"\nPING\n", errors), daemon=True)
        t.start()
        ans = Answers(s)
        got, last, wrong = 0, None, 0
        try:
            while got < lines:
                a = ans.next()
                if a is None:
                    break
                got += 1
                last = a[0]
                if not (a[0].startswith("ERR ELK_E_") or a[0] == "OK PONG"):
                    wrong += 1
        except (socket.timeout, OSError):
            pass
        t.join(TIMEOUT)
        s.close()
        if got != lines or last != "OK PONG" or wrong:
            bad += 1
            print("input %d: %d/%d answers, last %r, %d not ERR" % (k, got, lines, last, wrong))
    print("result: random %d/%d inputs of %d bytes answered in full (one answer a line, the last OK PONG)" % (
        count - bad, count, size))
    return bad == 0


def main():
    path, mode = sys.argv[1], sys.argv[2]
    if mode == "burst":
        ok = burst(path, sys.argv[3], int(sys.argv[4]))
    elif mode == "mixed":
        ok = mixed(path, int(sys.argv[3]), sys.argv[4], sys.argv[5],
                   int(sys.argv[6]) if len(sys.argv) > 6 else 1)
    elif mode == "trickle":
        ok = trickle(path, int(sys.argv[3]), float(sys.argv[4]))
    elif mode == "pause":
        ok = paused(path, int(sys.argv[3]), float(sys.argv[4]))
    else:
        ok = random_input(path, int(sys.argv[3]), int(sys.argv[4]),
                          int(sys.argv[5]) if len(sys.argv) > 5 else 1)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
