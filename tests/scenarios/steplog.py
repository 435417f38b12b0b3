#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check scenario 8's step log (guard_work.sh): accepted steps of different tokens never
overlap in true time.

usage: steplog.py LOG [--tag NAME] [--expect-overlap]

Lines: <ns> <gateway> <token> start|end|refused. A step runs from its start line to the
next end line of the same gateway; a start with no end (the step was killed without its
trap running) is taken to run for ever, so it overlaps everything after it (fail safe).
Prints FIGURE lines. Exit 1 on any overlap of steps with different tokens (with
--expect-overlap: exit 1 when there is none; for the negative control).
"""
import sys


def main():
    args = sys.argv[1:]
    tag = args[args.index("--tag") + 1] if "--tag" in args else "steps"
    rows = []
    with open(args[0]) as f:
        for line in f:
            p = line.split()
            if len(p) == 4:
                rows.append((int(p[0]), p[1], int(p[2]), p[3]))
    rows.sort()
    open_ = {}
    steps = []
    refused = {}
    for ns, gw, tok, ev in rows:
        if ev == "start":
            open_[gw] = (ns, tok)
        elif ev == "end" and gw in open_:
            s, t = open_.pop(gw)
            steps.append((s, ns, gw, t))
        elif ev == "refused":
            refused[gw] = refused.get(gw, 0) + 1
    unended = len(open_)
    for gw, (s, t) in open_.items():
        steps.append((s, float("inf"), gw, t))
        print(f"steplog: step of {gw} token {t} started at {s} and never logged its end")
    steps.sort()
    overlaps, worst = 0, 0.0
    for i, a in enumerate(steps):
        for b in steps[i + 1:]:
            if b[0] >= a[1]:
                continue
            if a[3] != b[3]:
                overlaps += 1
                ms = (min(a[1], b[1]) - b[0]) / 1e6
                worst = max(worst, ms)
                print(f"steplog: overlap {ms:.1f} ms: {a[2]} token {a[3]} and {b[2]} token {b[3]}")
    per_tok = {}
    for s in steps:
        per_tok[s[3]] = per_tok.get(s[3], 0) + 1
    print(f"FIGURE {tag} steps={len(steps)} tokens={','.join(f'{t}:{n}' for t, n in sorted(per_tok.items()))}")
    print(f"FIGURE {tag} refused={','.join(f'{g}:{n}' for g, n in sorted(refused.items())) or 0}")
    print(f"FIGURE {tag} overlapping_steps={overlaps} max_overlap_ms={worst:.1f} unended={unended}")
    if "--expect-overlap" in args:
        return 0 if overlaps else 1
    return 1 if overlaps else 0


if __name__ == "__main__":
    sys.exit(main())
