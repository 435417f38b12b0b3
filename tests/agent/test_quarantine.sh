#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 20, elkd side: a node restarted empty is quarantined and elkd shows it: STATUS
# `hygiene=quarantined:..._until_<time>_(in_<N>_s)`, JSON
# "quarantined_ms" > 0, the metric elk_node_quarantined 1; no grant meanwhile; once the
# quarantine is over the node votes again and the resource is granted.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
session() { python3 "$(dirname "$0")/ctl_session.py" "$SOCK"; }
# quarantine = 8s (the automatic one would be ttl + drift here): long enough to be seen
elkd_up a <<CONF
[fleet]
quarantine = 8s
$(resource valve-1 2s 200ms)
$(agent_section)
CONF
node_line() { printf 'lines st STATUS\n' | session | grep '^st: node name=a '; }
# a just-started server is new too: wait for its first quarantine to end
wait_for 60 'node_line | grep -q " hygiene=ok "'; check "the node votes once its first quarantine is over" 0 $?
out=$(printf 'ask got ACQUIRE valve-1 30s\nask rel RELEASE valve-1\n' | session)
check_contains "granted while the node votes" "got -> OK ACQUIRED valve-1 " "$out"

qtotal() { printf 'lines m STATUS METRICS\n' | session | sed -n 's/^m: elk_node_quarantines_total{node="a"} //p'; }
L="$ELK_T_DIR/elkd.log"
# restart_empty: the server killed and restarted empty on its port; waits for elkd's record
# of the quarantine that follows (its log line), not for a STATUS read to catch it
restart_empty() {
  local n0
  n0=$(elkdlog count "$L" quarantined a)
  kill -KILL "$REDIS_PID_a"; wait "$REDIS_PID_a" 2>/dev/null; untrack "$REDIS_PID_a"
  sup_redis a "$REDIS_PORT_a" plain
  REDIS_PID_a=$SUP_RPID
  wait_for 60 '[ "$(elkdlog count "$L" quarantined a)" -gt "$n0" ]'
}
# The checks below read STATUS, JSON, metrics and try a grant; they mean something only while
# the quarantine lasts. On a loaded machine it may be over before they are done: elkd's log
# says so (its "quarantine over" line came before the last read), and then the node is
# restarted again for a fresh quarantine (at most 3 tries) instead of judging a late read.
q0=$(qtotal)
for try in 1 2 3; do
  restart_empty; check "elkd logged the restarted node quarantined (try $try)" 0 $?
  over0=$(elkdlog count "$L" over a)
  nl=$(node_line)
  js=$("$ELK" --socket "$SOCK" status --json)
  m=$("$ELK" --socket "$SOCK" status --metrics)
  out=$(printf 'ask refused ACQUIRE valve-1 0\n' | session)
  [ "$(elkdlog count "$L" over a)" = "$over0" ] && break
  say "try $try: the quarantine ended before the reads were done (elkd's log); again"
done
echo "$nl"
check_contains "STATUS shows the restarted node quarantined" " hygiene=quarantined" "$nl"
check_contains "its hygiene says why" " hygiene=quarantined:_restarted" "$nl"
echo "$nl" | grep -q " hygiene=quarantined:[^ ]*;_until_[0-9][0-9]:[0-9][0-9]:[0-9][0-9]_(in_[0-9]*_s) "
check "and until when" 0 $?
check_contains "it has no vote" " votes=no " "$nl"
q=$(echo "$js" | python3 -c 'import json,sys; t=sys.stdin.read(); t=t[t.index("{"):]; print(json.loads(t)["nodes"][0]["quarantined_ms"])')
[ "${q:-0}" -gt 0 ]; check "JSON quarantined_ms > 0 ($q)" 0 $?
check_contains "metric elk_node_quarantined 1" 'elk_node_quarantined{node="a"} 1' "$m"
q1=$(qtotal)
[ "${q1:-0}" -gt "${q0:-0}" ]; check "elk_node_quarantines_total counts the quarantine (${q0:-none} -> ${q1:-none})" 0 $?
check_contains "metric elk_node_clock_jumps_total" 'elk_node_clock_jumps_total{node="a"} ' "$m"
echo "$out"
case "$out" in
  *"OK ACQUIRED"*) bad "no grant from a quarantined node: $out" ;;
  *) ok "no grant from a quarantined node" ;;
esac
wait_for 60 'node_line | grep -q " hygiene=ok "'; check "the quarantine ends" 0 $?
wait_for 30 '[ "$(elkdlog count "$L" over a)" = "$(elkdlog count "$L" quarantined a)" ]'
check "elkd logged the end of every quarantine" 0 $?
out=$(printf 'ask again ACQUIRE valve-1 30s\n' | session)
check_contains "granted again after the quarantine" "again -> OK ACQUIRED valve-1 " "$out"
m=$("$ELK" --socket "$SOCK" status --metrics)
# the safety property, from elkd's record: no grant counted the vote of a quarantined node
elkdlog check "$L" --tag quarantine --min-grants 2 --min-quarantines 2
check "elkd's log: no grant with a quarantined node's vote" 0 $?
check_contains "metric elk_node_quarantined back to 0" 'elk_node_quarantined{node="a"} 0' "$m"
finish
