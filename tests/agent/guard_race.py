#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Many processes call `elk guard` on one state file at once; a checker looks at what came back.

usage: guard_race.py ELK DIR [--workers 8] [--calls 6000] [--kill-pct 5] [--hold-pct 25] [--seed N]

Each worker runs `elk guard --state DIR/valve.state TOKEN` (a share of them in check-and-hold
mode, `-- true`) in a loop with tokens that interleave with the other workers' (its round
number plus 0..3), and SIGKILLs a share of its calls after a random 0..3 ms. Around every call
it reads CLOCK_MONOTONIC (the same clock for every process) before starting and after reaping
it. A sampler process reads the state file in a loop, with the same clock around each read.

The checker asserts, over the recorded intervals (sound under any scheduling: only calls
that did not overlap in time are ordered):
  1. linearisable: when call A accepted token a and returned before call B started, B did
     not accept a token below a (accepted tokens never go down in real-time order);
  2. the state never goes back: a read that started after A returned holds >= a;
  3. no spurious storage error: no call exits 66, and none exits with anything but
     0 (accepted), 65 (stale) or SIGKILL (ours);
  4. a later call removes the temp files killed calls left, and the final state holds the
     highest token ever accepted.
Prints FIGURE lines and exits 1 if any check fails.
"""
import argparse
import os
import random
import signal
import subprocess
import sys
import time


def worker(args, w, calls, log_path):
    rng = random.Random(args.seed * 1000 + w)
    state = os.path.join(args.dir, "valve.state")
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    lines = []
    for r in range(calls):
        tok = r + 1 + rng.randint(0, 3)
        hold = rng.randint(1, 100) <= args.hold_pct
        cmd = [args.elk, "guard", "--state", state, str(tok)] + (["--", "true"] if hold else [])
        kill = rng.randint(1, 100) <= args.kill_pct
        t0 = time.monotonic_ns()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if kill:
            time.sleep(rng.uniform(0, 0.003))
            p.send_signal(signal.SIGKILL)
        rc = p.wait()
        t1 = time.monotonic_ns()
        lines.append("C %d %d %d %d %d %d %d\n" % (w, r, tok, rc, t0, t1, 1 if hold else 0))
        if len(lines) >= 64:
            os.write(fd, "".join(lines).encode())
            lines = []
    os.write(fd, "".join(lines).encode())
    os.close(fd)


def parse_state(data):
    parts = data.split()
    if len(parts) == 4 and parts[0] == b"elkfence" and parts[1] == b"1":
        return int(parts[2])
    return None


def sampler(args, stop_path, log_path):
    state = os.path.join(args.dir, "valve.state")
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    lines = []
    while not os.path.exists(stop_path):
        r0 = time.monotonic_ns()
        try:
            with open(state, "rb") as f:
                data = f.read()
            v = parse_state(data)
        except FileNotFoundError:
            v = 0
        r1 = time.monotonic_ns()
        lines.append("S %d %d %s\n" % (r0, r1, "bad" if v is None else v))
        time.sleep(0.001)
    os.write(fd, "".join(lines).encode())
    os.close(fd)


def check(args, log_path):
    calls, samples = [], []
    with open(log_path) as f:
        for line in f:
            p = line.split()
            if p[0] == "C":
                calls.append(tuple(int(x) for x in p[1:]))
            else:
                samples.append((int(p[1]), int(p[2]), p[3]))
    fails = 0
    acc = [c for c in calls if c[3] == 0]  # (w, r, tok, rc, t0, t1, hold)
    rcs = {}
    for c in calls:
        rcs[c[3]] = rcs.get(c[3], 0) + 1
    # 1. accepted A returned before accepted B started => tok(B) >= tok(A)
    by_end = sorted(acc, key=lambda c: c[5])
    stale, examples, i, best = 0, [], 0, None
    for b in sorted(acc, key=lambda c: c[4]):
        while i < len(by_end) and by_end[i][5] < b[4]:
            if best is None or by_end[i][2] > best[2]:
                best = by_end[i]
            i += 1
        if best is not None and b[2] < best[2]:
            stale += 1
            if len(examples) < 3:
                examples.append("token %d accepted after %d had been accepted and returned" % (b[2], best[2]))
    # 2. a read started after A returned sees >= tok(A); a read never sees garbage
    back, bad_reads, i, high = 0, 0, 0, 0
    for r0, r1, v in sorted(samples):
        while i < len(by_end) and by_end[i][5] < r0:
            high = max(high, by_end[i][2])
            i += 1
        if v == "bad":
            bad_reads += 1
        elif int(v) < high:
            back += 1
            if len(examples) < 6:
                examples.append("state read %s after token %d had been accepted" % (v, high))
    spurious = rcs.get(66, 0)
    other = sum(n for rc, n in rcs.items() if rc not in (0, 65, -9, 66))
    print("FIGURE guard_race calls=%d accepted=%d refused_stale=%d killed=%d hold_mode=%d state_reads=%d"
          % (len(calls), len(acc), rcs.get(65, 0), rcs.get(-9, 0), sum(c[6] for c in calls), len(samples)))
    print("FIGURE guard_race stale_acceptances=%d state_went_back=%d bad_reads=%d exit66=%d other_exits=%d"
          % (stale, back, bad_reads, spurious, other))
    for e in examples:
        print("  e.g. " + e)
    if other:
        print("  exit codes: %s" % sorted(rcs.items()))
    for name, n in (("stale acceptances", stale), ("state went back", back), ("bad state reads", bad_reads),
                    ("spurious storage errors (exit 66)", spurious), ("unexpected exit codes", other)):
        if n:
            print("FAIL: %s: %d" % (name, n))
            fails += 1
        else:
            print("ok: no %s" % name)
    return fails, max((c[2] for c in acc), default=0)


def final_check(args, top):
    """One more call after the storm: it sweeps killed calls' temp files; the state holds top."""
    state = os.path.join(args.dir, "valve.state")
    fails = 0
    rc = subprocess.call([args.elk, "guard", "--state", state, str(top + 10)])
    left = [n for n in os.listdir(args.dir) if ".tmp" in n]
    with open(state, "rb") as f:
        v = parse_state(f.read())
    for ok, what in ((rc == 0, "a call after the storm is accepted (exit %d)" % rc),
                     (not left, "no temp file left after it (%s)" % " ".join(left)),
                     (v == top + 10, "state holds its token (%s)" % v),
                     (os.path.exists(state + ".lock"), "the lock file stays")):
        print(("ok: " if ok else "FAIL: ") + what)
        fails += 0 if ok else 1
    return fails


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("elk")
    ap.add_argument("dir")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--calls", type=int, default=int(os.environ.get("ELK_GUARD_RACE_CALLS", "6000")))
    ap.add_argument("--kill-pct", type=int, default=5)
    ap.add_argument("--hold-pct", type=int, default=int(os.environ.get("ELK_GUARD_RACE_HOLD_PCT", "25")))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("ELK_GUARD_RACE_SEED", "1")))
    args = ap.parse_args()
    log_path = os.path.join(args.dir, "race.log")
    stop_path = os.path.join(args.dir, "race.stop")
    t0 = time.monotonic()
    pids = []
    spid = os.fork()
    if spid == 0:
        sampler(args, stop_path, log_path)
        os._exit(0)
    per = max(1, args.calls // args.workers)
    for w in range(args.workers):
        pid = os.fork()
        if pid == 0:
            try:
                worker(args, w, per, log_path)
            finally:
                os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
    open(stop_path, "w").close()
    os.waitpid(spid, 0)
    print("FIGURE guard_race workers=%d seconds=%.1f" % (args.workers, time.monotonic() - t0))
    fails, top = check(args, log_path)
    if fails == 0 or os.environ.get("ELK_GUARD_RACE_FINAL", "1") == "1":
        fails += final_check(args, top)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
