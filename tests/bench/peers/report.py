#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Turns the figures run-all.sh collected (JSON lines) into one table with ratios, or JSON.

  report.py RESULTS.jsonl [--json | --markdown]

--markdown prints the table as docs/benchmarks.md shows it (figure | value | unit | ratio |
reproduce), so the page can be refreshed from a run's results.jsonl.

Each input line: {"id": ..., "name": ..., "value": number or text, "unit": ...,
"command": "how to reproduce"}. Rows with the same id: the last wins. The table
lists every figure; the ratio column compares it with the reference named in RATIOS
(the raw round-trip limit, or the peer), when both are numbers.
"""
import json
import sys

# id -> (reference id, how the ratio reads). "x of" = value / reference.
RATIOS = {
    "elk.cycles_per_s": ("raw.evalsha_cycle_limit", "of EVALSHA 2-RTT limit"),
    "elk_tls.cycles_per_s": ("raw.evalsha_cycle_limit", "of EVALSHA 2-RTT limit (plain)"),
    "redispy.cycles_per_s": ("raw.evalsha_cycle_limit", "of EVALSHA 2-RTT limit"),
    "redlock.cycles_per_s": ("raw.evalsha_cycle_limit", "of EVALSHA 2-RTT limit"),
    "elk5nf.acq_p50_us": ("redlock5.acq_p50_us", "x node-redlock (both no fencing)"),
    "elk5dnf.acq_p50_us": ("redlock5d.acq_p50_us", "x node-redlock (both no fencing)"),
    "elk5.acq_p50_us": ("elk1.acq_p50_us", "x edgelock 1 node"),
    "elk5d.acq_p50_us": ("elk1d.acq_p50_us", "x edgelock 1 node via proxy"),
    "redlock5d.acq_p50_us": ("raw.proxy_rtt_us", "x raw RTT via proxy"),
    "elk1d.acq_p50_us": ("raw.proxy_rtt_us", "x raw RTT via proxy"),
    "elk.handoff_p50_us": ("redlock.handoff_p50_us", "x node-redlock"),
    "elk.handoff_poll_p50_us": ("redlock.handoff_p50_us", "x node-redlock"),
    "elk.p50_us": ("raw.ping_rtt_us", "x 1 PING RTT"),
    "redispy.p50_us": ("raw.ping_rtt_us", "x 1 PING RTT"),
    "redlock.p50_us": ("raw.ping_rtt_us", "x 1 PING RTT"),
}

# Extra comparison rows: (name, numerator id, denominator id, reading)
VERSUS = [
    ("edgelock / EVALSHA 2-RTT limit, cycles/s (target >= 0.9)", "elk.cycles_per_s", "raw.evalsha_cycle_limit", "x"),
    ("edgelock / PING 2-RTT limit, cycles/s", "elk.cycles_per_s", "raw.ping_cycle_limit", "x"),
    ("edgelock / redis-py Lock, cycles/s (target >= 2)", "elk.cycles_per_s", "redispy.cycles_per_s", "x"),
    ("edgelock / node-redlock, cycles/s (target >= 2)", "elk.cycles_per_s", "redlock.cycles_per_s", "x"),
    ("edgelock / same-bytes 2-RTT limit, best thirds (target >= 0.9)", "elk.best_cycles_per_s", "raw.same_bytes_cycle_limit", "x"),
    ("edgelock best third / redis-py Lock, cycles/s", "elk.best_cycles_per_s", "redispy.cycles_per_s", "x"),
    ("edgelock best third / node-redlock, cycles/s", "elk.best_cycles_per_s", "redlock.cycles_per_s", "x"),
    ("redis-py Lock cycle p50 / edgelock cycle p50 (median speed-up)", "redispy.p50_us", "elk.p50_us", "x"),
    ("node-redlock cycle p50 / edgelock cycle p50 (median speed-up)", "redlock.p50_us", "elk.p50_us", "x"),
    ("edgelock hand-off (channel) / cold 1-node acquire (target <= 2 round trips)", "elk.handoff_p50_us", "elk1cold.acq_p50_us", "x"),
    ("edgelock 5-node / 1-node acquire, no fencing (target <= 1.3)", "elk5nf.acq_p50_us", "elk1.acq_p50_us", "x"),
    ("edgelock 5-node / 1-node acquire, fencing (2 rounds by design)", "elk5.acq_p50_us", "elk1.acq_p50_us", "x"),
    ("edgelock 5-node / 1-node acquire via proxies, no fencing (target <= 1.3)", "elk5dnf.acq_p50_us", "elk1d.acq_p50_us", "x"),
    ("edgelock 5-node / 1-node acquire via proxies, fencing", "elk5d.acq_p50_us", "elk1d.acq_p50_us", "x"),
    ("edgelock / node-redlock, 5-node acquire p50 (no fencing)", "elk5nf.acq_p50_us", "redlock5.acq_p50_us", "x"),
    ("edgelock / node-redlock, 5-node acquire p50 via proxies (no fencing)", "elk5dnf.acq_p50_us", "redlock5d.acq_p50_us", "x"),
    ("edgelock / node-redlock, hand-off p50", "elk.handoff_p50_us", "redlock.handoff_p50_us", "x"),
    ("edgelock hand-off (channel) in PING round trips (target <= 2)", "elk.handoff_p50_us", "raw.ping_rtt_us", "RTT"),
    ("many locks: CPU 1024 / 64 locks", "elk.many1024.cpu_ms_per_s", "elk.many64.cpu_ms_per_s", "x"),
    ("many locks: commands/s 1024 / 64 locks", "elk.many1024.cmds_per_s", "elk.many64.cmds_per_s", "x"),
]


def num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def fmt(v):
    if not num(v):
        return str(v)
    if float(v).is_integer():
        return "%d" % v
    if abs(v) >= 1000:
        return "%.0f" % v
    if abs(v) >= 10:
        return "%.1f" % v
    return "%.3g" % v


def main():
    path = sys.argv[1]
    as_json = "--json" in sys.argv[2:]
    rows, order = {}, []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            if r["id"] not in rows:
                order.append(r["id"])
            rows[r["id"]] = r
    for rid in order:
        r = rows[rid]
        ref = RATIOS.get(rid)
        r["ratio"] = None
        if ref and ref[0] in rows and num(r["value"]) and num(rows[ref[0]]["value"]) and rows[ref[0]]["value"]:
            r["ratio"] = r["value"] / rows[ref[0]]["value"]
            r["ratio_to"] = ref[0]
            r["ratio_reads"] = ref[1]
    extra = []
    for name, a, b, reading in VERSUS:
        va = rows.get(a, {}).get("value")
        vb = rows.get(b, {}).get("value")
        if num(va) and num(vb) and vb:
            val = va / vb
        elif a not in rows or not num(va):
            val = "n/a (edgelock figure %s)" % (rows.get(a, {}).get("value", "not built"))
        else:
            val = "n/a (peer figure missing)"
        extra.append({"id": "ratio:%s/%s" % (a, b), "name": name, "value": val, "unit": reading,
                      "command": "ratio of the two rows above", "ratio": None})
    if as_json:
        for rid in order:
            print(json.dumps(rows[rid]))
        for r in extra:
            print(json.dumps(r))
        return
    if "--markdown" in sys.argv[2:]:
        print("| figure | value | unit | ratio | reproduce |")
        print("|---|---:|---|---|---|")
        group = None
        for rid in order:
            r = rows[rid]
            if r.get("group", "") != group:
                group = r.get("group", "")
                print("| **%s** | | | | |" % group)
            ratio = ""
            if r.get("ratio") is not None:
                ratio = "%s %s" % (fmt(r["ratio"]), r["ratio_reads"])
            print("| %s | %s | %s | %s | `%s` |" % (r["name"], fmt(r["value"]), r.get("unit", ""), ratio,
                                                    r.get("command", "").replace("|", "\\|")))
        print("| **edgelock vs peers (same run)** | | | | |")
        for r in extra:
            print("| %s | %s | %s | | |" % (r["name"], fmt(r["value"]), r["unit"]))
        return
    w = max([len(rows[r]["name"]) for r in order] + [len(e["name"]) for e in extra] + [10])
    print("%-*s %14s %-10s %s" % (w, "measure", "value", "unit", "ratio"))
    print("-" * (w + 50))
    group = None
    for rid in order:
        r = rows[rid]
        g = r.get("group", "")
        if g != group:
            group = g
            print("[%s]" % g)
        ratio = ""
        if r.get("ratio") is not None:
            ratio = "%s %s" % (fmt(r["ratio"]), r["ratio_reads"])
        print("%-*s %14s %-10s %s" % (w, r["name"], fmt(r["value"]), r.get("unit", ""), ratio))
        print("%-*s   $ %s" % (w, "", r.get("command", "")))
    print("[edgelock vs peers]")
    for r in extra:
        print("%-*s %14s %-10s" % (w, r["name"], fmt(r["value"]), r["unit"]))


if __name__ == "__main__":
    main()
