#!/usr/bin/python3
"""Turns the figures run-all.sh collected (JSON lines) into one table with ratios, or JSON.

  report.py RESULTS.jsonl [--json]

Each input line: {"id": ..., "name": ..., "value": number or text, "unit": ...,
"command": "how to reproduce"}. Rows with the same id: the last wins. The table
lists every figure; the ratio column compares it with the reference named in RATIOS
(the raw round-trip limit, or the peer), when both are numbers.
"""
import json
import sys

# id -> (reference id, how the ratio reads). "x of" = value / reference.
RATIOS = {
    "elk.cycles_per_s": ("raw.cycle_limit", "of raw limit"),
    "redispy.cycles_per_s": ("raw.cycle_limit", "of raw limit"),
    "redlock.cycles_per_s": ("raw.cycle_limit", "of raw limit"),
    "elk5.acq_p50_us": ("redlock5.acq_p50_us", "x node-redlock"),
    "elk5d.acq_p50_us": ("redlock5d.acq_p50_us", "x node-redlock"),
    "redlock5d.acq_p50_us": ("raw.proxy_rtt_us", "x raw RTT via proxy"),
    "elk.handoff_p50_us": ("redlock.handoff_p50_us", "x node-redlock"),
    "elk.p50_us": ("raw.rtt2_us", "x 2 raw RTTs"),
    "redispy.p50_us": ("raw.rtt2_us", "x 2 raw RTTs"),
    "redlock.p50_us": ("raw.rtt2_us", "x 2 raw RTTs"),
}

# Extra comparison rows: (name, numerator id, denominator id, reading)
VERSUS = [
    ("edgelock / redis-py Lock, cycles/s", "elk.cycles_per_s", "redispy.cycles_per_s", "x"),
    ("edgelock / node-redlock, cycles/s", "elk.cycles_per_s", "redlock.cycles_per_s", "x"),
    ("edgelock / node-redlock, 5-node acquire p50", "elk5.acq_p50_us", "redlock5.acq_p50_us", "x"),
    ("edgelock / node-redlock, hand-off p50", "elk.handoff_p50_us", "redlock.handoff_p50_us", "x"),
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
