#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""redis-py's Lock as a peer benchmark for edgelock (issue 7).

Run with Debian's interpreter (/usr/bin/python3, package python3-redis), never a
pyenv one, so the figures are reproducible on a fresh Debian 12.

  redispy_lock.py cycles  --port P [--cycles N]      acquire+release, one client
  redispy_lock.py handoff --port P [--rounds N] [--sleep-ms R]
                                                      holder releases, a waiter polling
                                                      every R ms (redis-py's `sleep`) takes it

Prints one JSON object on stdout. Times are wall-clock from time.perf_counter_ns.
"""
import argparse
import json
import os
import statistics
import sys
import threading
import time

import redis


def pct(sorted_us, p):
    if not sorted_us:
        return None
    k = min(len(sorted_us) - 1, max(0, int(round(p / 100.0 * len(sorted_us) + 0.5)) - 1))
    return sorted_us[k]


def cmd_cycles(a):
    r = redis.Redis(host="127.0.0.1", port=a.port)
    r.ping()
    name = "elk-bench:{redispy-%d}" % os.getpid()
    lock = r.lock(name, timeout=10, blocking=False)
    for _ in range(a.warmup):
        if not lock.acquire(blocking=False):
            sys.exit("redispy_lock: warm-up acquire failed (key held?)")
        lock.release()
    lat = []
    t_start = time.perf_counter_ns()
    for _ in range(a.cycles):
        t0 = time.perf_counter_ns()
        if not lock.acquire(blocking=False):
            sys.exit("redispy_lock: acquire failed (key held?)")
        lock.release()
        lat.append((time.perf_counter_ns() - t0) / 1000.0)
    total_s = (time.perf_counter_ns() - t_start) / 1e9
    lat.sort()
    print(json.dumps({
        "peer": "redis-py Lock", "redis_py": redis.__version__, "mode": "cycles",
        "cycles": a.cycles, "cycles_per_s": a.cycles / total_s,
        "p50_us": pct(lat, 50), "p99_us": pct(lat, 99), "mean_us": statistics.fmean(lat),
    }))


def cmd_handoff(a):
    holder = redis.Redis(host="127.0.0.1", port=a.port)
    waiter = redis.Redis(host="127.0.0.1", port=a.port)
    sleep_s = a.sleep_ms / 1000.0
    samples = []
    for i in range(a.rounds):
        name = "elk-bench:{redispy-handoff-%d-%d}" % (os.getpid(), i)
        hl = holder.lock(name, timeout=10)
        if not hl.acquire(blocking=False):
            sys.exit("redispy_lock: holder could not acquire")
        got = {}

        def wait():
            wl = waiter.lock(name, timeout=10, sleep=sleep_s, blocking_timeout=30)
            ok = wl.acquire(blocking=True)
            got["t"] = time.perf_counter_ns()
            got["ok"] = ok
            if ok:
                wl.release()

        th = threading.Thread(target=wait)
        th.start()
        # Release at a point unrelated to the waiter's polling phase.
        time.sleep(sleep_s * 1.5 + (i % 7) * sleep_s / 7.0)
        t_rel = time.perf_counter_ns()
        hl.release()
        th.join()
        if not got.get("ok"):
            sys.exit("redispy_lock: waiter did not get the lock")
        samples.append((got["t"] - t_rel) / 1000.0)
    samples.sort()
    print(json.dumps({
        "peer": "redis-py Lock", "mode": "handoff", "rounds": a.rounds, "sleep_ms": a.sleep_ms,
        "p50_us": pct(samples, 50), "p99_us": pct(samples, 99), "mean_us": statistics.fmean(samples),
    }))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("cycles")
    c.add_argument("--port", type=int, required=True)
    c.add_argument("--cycles", type=int, default=5000)
    c.add_argument("--warmup", type=int, default=200)
    h = sub.add_parser("handoff")
    h.add_argument("--port", type=int, required=True)
    h.add_argument("--rounds", type=int, default=20)
    h.add_argument("--sleep-ms", type=float, default=100.0)
    a = ap.parse_args()
    {"cycles": cmd_cycles, "handoff": cmd_handoff}[a.cmd](a)


if __name__ == "__main__":
    main()
