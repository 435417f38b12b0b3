#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check the scenarios' actuator log (see lib.sh): mutual exclusion and fencing.

usage: actlog.py LOG [--allow-overlap] [--allow-token0] [--min-sessions N] [--tag NAME]

A session is one run of work.sh: from its "start" line to the next one of the same gateway. Its driving interval runs from its first to its
last tick *attempt* in true time, whatever the guard said: two intervals that intersect
mean two holders believed they held the lease at once (a lease overlap). Independently,
every accepted tick must carry a token no lower than any token accepted before it (what
fencing guarantees even when leases overlap). Prints FIGURE lines; exits 1 on a stale
accepted token, on a lease overlap unless --allow-overlap, or on too few sessions.
"""
import sys


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        return 2
    path = args[0]
    allow = "--allow-overlap" in args
    min_sessions = 1
    tag = "actuator"
    if "--min-sessions" in args:
        min_sessions = int(args[args.index("--min-sessions") + 1])
    if "--tag" in args:
        tag = args[args.index("--tag") + 1]
    rows = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) != 5:
                print(f"actlog: malformed line: {line.rstrip()}")
                return 1
            rows.append((int(p[0]), p[1], int(p[2]), p[3], p[4]))
    rows.sort(key=lambda r: r[0])
    sess = {}
    cur = {}  # gateway -> its current session key (one command per gateway at a time)
    nsess = 0
    accepted = refused = stale = 0
    highest = 0
    zero = set()
    for ns, gw, tok, ev, res in rows:
        if ev == "start" or gw not in cur:
            nsess += 1
            cur[gw] = (gw, tok, nsess)
        if ev != "tick":
            continue
        if cur[gw][1] != tok:
            nsess += 1
            cur[gw] = (gw, tok, nsess)
        if tok == 0:
            zero.add(cur[gw])
        s = sess.setdefault(cur[gw], [ns, ns])
        s[1] = ns
        if res == "accepted":
            accepted += 1
            if tok < highest:
                stale += 1
                print(f"actlog: STALE token {tok} from {gw} accepted after {highest}")
            highest = max(highest, tok)
        else:
            refused += 1
    keys = sorted(sess, key=lambda k: sess[k][0])
    overlaps = 0
    max_ms = 0.0
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            lo = max(sess[a][0], sess[b][0])
            hi = min(sess[a][1], sess[b][1])
            if lo <= hi:
                overlaps += 1
                ms = (hi - lo) / 1e6
                max_ms = max(max_ms, ms)
                print(f"actlog: overlap {ms:.1f} ms: {a[0]} token {a[1]} and {b[0]} token {b[1]}")
    tokens = [k[1] for k in keys]
    print(f"FIGURE {tag} sessions={len(keys)}")
    print(f"FIGURE {tag} ticks_accepted={accepted}")
    print(f"FIGURE {tag} ticks_refused={refused}")
    print(f"FIGURE {tag} lease_overlaps={overlaps}")
    print(f"FIGURE {tag} max_overlap_ms={max_ms:.1f}")
    print(f"FIGURE {tag} stale_accepted={stale}")
    # with fencing on, elkd must never grant token 0 (the guard refuses it as a usage error)
    print(f"FIGURE {tag} token0_sessions={len(zero)}")
    if len(tokens) <= 20:
        print(f"FIGURE {tag} tokens={','.join(str(t) for t in tokens)}")
    else:
        print(f"FIGURE {tag} tokens={tokens[0]}..{tokens[-1]}")
    if stale:
        return 1
    if overlaps and not allow:
        return 1
    if zero and "--allow-token0" not in args:
        print(f"actlog: {len(zero)} session(s) were granted token 0 with fencing on")
        return 1
    if len(keys) < min_sessions:
        print(f"actlog: only {len(keys)} sessions, expected at least {min_sessions}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
