#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Read elkd's own record (its log) and check the vote hygiene from it, not from a race.

usage: elkdlog.py check LOG [--tag NAME] [--min-grants N] [--min-quarantines N]
       elkdlog.py grants LOG [RESOURCE]      one line per grant: <ms> <resource> <token> <votes>
       elkdlog.py quarantines LOG            one line per quarantine: <node> <start_ms> <end_ms|->
       elkdlog.py count LOG WHAT [NODE]      quarantined|over|grants lines (of NODE)

elkd logs (firmware/elkd.c) "node N (...): quarantined, no vote for X ms (...)" when it sees a
node quarantined, "node N (...): quarantine over, it may vote again" when that ends (before
any grant that node's vote may have counted in), and every grant with "(votes n1,n2)". The
log is written in order by one thread, so a grant line between a node's quarantined line and
its over line that names that node as a voter is a vote from a quarantined node: `check`
exits 1 on any. A log that several elkd runs appended to starts afresh at each "started" line. Times are the lines' wall-clock stamps (HH:MM:SS.mmmZ) as ms of today (UTC).
"""
import re
import sys
import time

STAMP = re.compile(r"^(\d\d):(\d\d):(\d\d)\.(\d{3})Z elkd \w+ ")
QSTART = re.compile(r"elkd: node (\S+) \([^)]*\): quarantined, no vote for (\d+) ms")
QOVER = re.compile(r"elkd: node (\S+) \([^)]*\): quarantine over")
STARTED = re.compile(r"elkd: elkd \S+ started")
GRANT = re.compile(r"elkd: (\S+): granted to client .*, token (\d+), .*\(votes ([^)]*)\)")


def day_ms():
    t = time.gmtime()
    return (time.mktime((t.tm_year, t.tm_mon, t.tm_mday, 0, 0, 0, 0, 0, 0)) - time.timezone) * 1000


def events(path):
    """(ms, kind, a, b) for every quarantine start/over and grant, in log order."""
    base = int(day_ms())
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            m = STAMP.match(line)
            if not m:
                continue
            h, mi, s, ms = (int(x) for x in m.groups())
            t = base + ((h * 60 + mi) * 60 + s) * 1000 + ms
            if STARTED.search(line):
                out.append((t, "started", None, None))
                continue
            q = QSTART.search(line)
            if q:
                out.append((t, "quarantined", q.group(1), int(q.group(2))))
                continue
            q = QOVER.search(line)
            if q:
                out.append((t, "over", q.group(1), None))
                continue
            g = GRANT.search(line)
            if g:
                votes = [v for v in g.group(3).split(",") if v]
                out.append((t, "grant", g.group(1), (int(g.group(2)), votes)))
    return out


def check(path, args):
    tag = args[args.index("--tag") + 1] if "--tag" in args else "elkdlog"
    min_grants = int(args[args.index("--min-grants") + 1]) if "--min-grants" in args else 0
    min_q = int(args[args.index("--min-quarantines") + 1]) if "--min-quarantines" in args else 0
    inq = {}
    grants = quarantines = bad = 0
    for t, kind, a, b in events(path):
        if kind == "quarantined":
            quarantines += 1
            inq[a] = t
        elif kind == "over":
            inq.pop(a, None)
        elif kind == "started":
            inq.clear()  # a new elkd in the same log: it starts with its own view
        else:
            grants += 1
            token, votes = b
            for v in votes:
                if v in inq:
                    bad += 1
                    print(f"elkdlog: {a} token {token} granted with the vote of node {v}, "
                          f"quarantined since {inq[v]} (grant at {t})")
            if not votes:
                bad += 1
                print(f"elkdlog: {a} token {token} granted with no voter named")
    print(f"FIGURE {tag} grants={grants}")
    print(f"FIGURE {tag} quarantines={quarantines}")
    print(f"FIGURE {tag} votes_from_quarantined_nodes={bad}")
    rc = 1 if bad else 0
    if grants < min_grants:
        print(f"elkdlog: {grants} grant(s), expected at least {min_grants}")
        rc = 1
    if quarantines < min_q:
        print(f"elkdlog: {quarantines} quarantine(s), expected at least {min_q}")
        rc = 1
    return rc


def main():
    a = sys.argv[1:]
    if len(a) < 2:
        print(__doc__)
        return 2
    cmd, path = a[0], a[1]
    if cmd == "check":
        return check(path, a[2:])
    if cmd == "grants":
        for t, kind, res, b in events(path):
            if kind == "grant" and (len(a) < 3 or res == a[2]):
                print(t, res, b[0], ",".join(b[1]))
        return 0
    if cmd == "quarantines":
        open_ = {}
        rows = []
        for t, kind, n, _ in events(path):
            if kind == "started":
                open_.clear()
            elif kind == "quarantined" and n not in open_:
                open_[n] = len(rows)
                rows.append([n, t, "-"])
            elif kind == "over" and n in open_:
                rows[open_.pop(n)][2] = t
        for r in rows:
            print(*r)
        return 0
    if cmd == "count":
        node = a[3] if len(a) > 3 else None
        n = sum(1 for _, kind, x, _ in events(path)
                if kind == a[2] and (node is None or x == node))
        print(n)
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
