#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 19: `elk status --metrics` and [agent] metrics_file give the Prometheus text
# format (checked by promtool when it is installed, and by a small parser always), and the
# numbers follow what happened: grants, refusals, renewals, losses by cause, histograms.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
MF="$ELK_T_DIR/elk.prom"
start_redis a; start_redis b; start_redis c
{ fleet3_conf gw-metrics m:
  # A ttl far above any stall a loaded machine has (renewals every second): the counts below
  # follow from what the test did, not from how fast the machine was.
  printf '[resource valve-1]\nttl = 3s\n'
  printf '[resource door]\nttl = 2s\n[agent]\nsocket = %s\nmetrics_file = %s\nmetrics_interval = 1s\n' "$SOCK" "$MF"
} > "$C"
start_elkd "$C"
wait_ready
E() { "$ELK" --socket "$SOCK" "$@"; }

E run valve-1 -- sleep 2.5; rc=$?                # a grant, about 2 renewals, a release
check "the first hold of valve-1 ended by its release (exit 0)" 0 $rc
E run door -- true
E run door -- sh -c "'$ELK' --socket '$SOCK' run door -- true; exit 0"   # refused: held
# A loss: the lease's key is taken over on every node while held.
E run valve-1 -- sh -c 'for p in '"$REDIS_PORT_a $REDIS_PORT_b $REDIS_PORT_c"'; do redis-cli -p $p set "m:{valve-1}" other >/dev/null; done; sleep 5' 2>/dev/null
M=$(E status --metrics); rc=$?
check "elk status --metrics" 0 $rc
printf '%s\n' "$M" > "$ELK_T_DIR/metrics.txt"
val() { printf '%s\n' "$M" | awk -v k="$1" '$1 == k {print $2}'; }
check "grants of valve-1" 2 "$(val 'elk_resource_grants_total{resource="valve-1"}')"
check "grants of door" 2 "$(val 'elk_resource_grants_total{resource="door"}')"
check "refusals of door" 1 "$(val 'elk_resource_refusals_total{resource="door"}')"
check "loss of valve-1 by cause" 1 "$(val 'elk_resource_losses_total{resource="valve-1",cause="ELK_E_LOCK_TAKEN"}')"
r=$(val 'elk_resource_renewals_total{resource="valve-1",result="ok"}')
[ "$r" -ge 1 ] 2>/dev/null; check "renewals of valve-1 counted ($r)" 0 $?
check "validity-left histogram has one sample per renewal" "$r" "$(val 'elk_resource_validity_left_seconds_count{resource="valve-1"}')"
check "hold histogram: two holds of valve-1" 2 "$(val 'elk_resource_hold_seconds_count{resource="valve-1"}')"
check "node up" 1 "$(val 'elk_node_up{node="b"}')"
n=$(val 'elk_node_rtt_seconds_count{node="a"}')
[ "$n" -ge 4 ] 2>/dev/null; check "node rtt samples ($n)" 0 $?
check_contains "version in elk_agent_info" 'elk_agent_info{version="' "$M"
check_contains "HELP lines" "# HELP elk_resource_acquire_wait_seconds " "$M"
check_contains "TYPE lines" "# TYPE elk_resource_acquire_wait_seconds histogram" "$M"

# The exposition format: every sample belongs to a family declared once by TYPE, all its
# samples together, histogram buckets cumulative and ending in +Inf = _count.
python3 - "$ELK_T_DIR/metrics.txt" <<'PY' > "$ELK_T_DIR/parse.out" 2>&1
import re, sys
types, seen, last, buckets = {}, set(), None, {}
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if line.startswith("# TYPE "):
        _, _, name, t = line.split(" ")
        assert name not in types, "family declared twice: " + name
        types[name] = t; last = name
        continue
    if line.startswith("# HELP ") or not line:
        continue
    m = re.fullmatch(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (-?[0-9.e+]+|\+Inf|NaN)', line)
    assert m, "bad sample line: " + line
    name, labels, v = m.group(1), m.group(2) or "", float(m.group(3))
    fam = re.sub(r'_(bucket|sum|count)$', '', name) if re.sub(r'_(bucket|sum|count)$', '', name) in types else name
    assert fam == last, "sample outside its family block: " + line
    if name.endswith("_bucket"):
        key = re.sub(r',?le="[^"]*"', '', labels)
        prev = buckets.get((fam, key), -1)
        assert v >= prev, "buckets not cumulative: " + line
        buckets[(fam, key)] = v
        if 'le="+Inf"' in labels:
            buckets[(fam, key, "inf")] = v
    if name.endswith("_count") and types.get(fam) == "histogram":
        assert buckets.get((fam, labels, "inf")) == v, "+Inf bucket != _count: " + line
print("parsed ok:", len(types), "families")
PY
check "the exposition parses" 0 $?
cat "$ELK_T_DIR/parse.out"
if command -v promtool >/dev/null 2>&1; then
  promtool check metrics < "$ELK_T_DIR/metrics.txt" > "$ELK_T_DIR/promtool.out" 2>&1
  check "promtool check metrics" "0 " "$? $(grep -v '^$' "$ELK_T_DIR/promtool.out" | head -3)"
else
  echo "skip: promtool not installed (Debian package prometheus)"
fi

# metrics_file: rewritten atomically every second, the same format.
wait_for 60 "file_has 'grants_total{resource=\"valve-1\"} 2' '$MF'"
check_contains "metrics_file has the counters" 'elk_resource_grants_total{resource="valve-1"} 2' "$(cat "$MF")"
check "no temp file left" "" "$(ls "$ELK_T_DIR" | grep 'elk.prom.tmp')"
finish
