#!/bin/bash
# SPDX-License-Identifier: MIT
# Scenario 10 (issue 20): a node killed and restarted empty during a lease is quarantined.
# Three nodes without persistence, [fleet] quarantine = 10s (long enough to be seen in STATUS
# on a loaded machine; auto would be ttl + drift). gw-a drives the valve.
#  1. node 1 is killed and restarted empty: both gateways show it quarantined in STATUS (text:
#     "quarantined", votes=no; JSON: quarantined_ms > 0). The lease stays: gw-a renews on
#     nodes 2 and 3 (a quorum without node 1), gw-b cannot take it.
#  2. node 2 too, while node 1 is still quarantined: only node 3 votes, gw-a's renewals miss
#     their quorum (SUSPECT: `elk run --on-suspect` runs its hook) and the lease is lost by the
#     rule (75) at its deadline. gw-b, waiting all along, gets it only after that: never two
#     holders (actuator log in true time), no stale token.
#  3. once the quarantine has passed both nodes vote again (quarantined_ms 0).
# S10_HYGIENE=off (a manual negative control) writes vote_hygiene = off: it fails at 1 (no
# quarantine shown) and at 2 (gw-b gets the valve on the two empty nodes while gw-a drives).
# usage: s10_quarantine.sh ELKD ELK
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
TTL=3000 STOP=300
S_FLEET_EXTRA="quarantine = 10s"
[ "${S10_HYGIENE:-on}" = off ] && S_FLEET_EXTRA="vote_hygiene = off"
hook="$S_DIR/hooks.log"

two_gateways $TTL $STOP
wait_all_vote gw-a gw-b
warm_up gw-a valve 5
say "1. node 1 restarted empty while gw-a holds the valve"
run_bg gw-a RA --on-suspect "echo suspect \$ELK_RESOURCE \$ELK_TOKEN \$ELK_TIME_LEFT_MS >> $hook" \
  --on-lost "echo lost \$ELK_RESOURCE \$ELK_TOKEN >> $hook" valve -- "$WORK" gw-a 0 0.05
tokA=$(wait_tick gw-a) || { bad "gw-a never drove the actuator"; finish; }
restart_empty r1
for gw in gw-a gw-b; do
  wait_until 30 node_quarantined $gw n1; check_true "$gw: STATUS shows node 1 quarantined" $?
  line=$(node_line $gw n1)
  echo "$gw: $line"
  check_contains "$gw: the node line says why" "quarantined" "$line"
  check_contains "$gw: node 1 has no vote" "votes=no" "$line"
  figure "${gw}_n1_quarantined_ms" "$(node_json $gw n1 quarantined_ms)"
  figure "${gw}_n1_hygiene" "\"$(node_json $gw n1 hygiene)\""
done
wait_renewals_of gw-a valve 2; check_true "the lease stays: gw-a renews on nodes 2 and 3" $?
st=$(res_field gw-a valve state)
case "$st" in held | renewing) ok "lease still held ($st)" ;; *) bad "lease state $st" ;; esac
busy_for gw-b valve
check "gw-b cannot take it (exit 73)" 73 $?

say "2. node 2 restarted empty too, node 1 still quarantined"
node_quarantined gw-a n1; check_true "node 1 is still quarantined when node 2 goes" $?
wait_renewals_of gw-a valve 1
restart_empty r2
act_mark
run_bg gw-b RB --wait 60s valve -- "$WORK" gw-b 10 0.05
suspect_seen=no
for _ in $(seq 1 100); do
  st=$(res_field gw-a valve state)
  [ "$st" = suspect ] && { suspect_seen=yes; break; }
  kill -0 "$RA" 2>/dev/null || break
  sleep 0.02
done
figure gw-a_suspect_seen_in_status "$suspect_seen"
wait "$RA"; rcA=$?
check "gw-a loses the lease by the rule and stops (75)" 75 $rcA
tokB=$(wait_tick gw-b 1200 any)
wait "$RB"; rcB=$?
[ -n "$tokB" ]; check_true "gw-b gets the valve once the rule allows it" $?
check "gw-b's run ends normally" 0 $rcB
figure tokens "$tokA->${tokB:-0}"
cat "$hook" 2>/dev/null
grep -q "^suspect valve $tokA [0-9]" "$hook" 2>/dev/null
check_true "gw-a's --on-suspect hook ran with resource, token and time left" $?
out=$(act_check --tag s10)
check "one holder at a time, no stale token" 0 $?
echo "$out"
grep -i "suspect" "$S_DIR/elkd-gw-a.log" | head -3

say "3. the quarantine passes"
for n in n1 n2; do
  wait_until 60 node_free gw-a $n; check_true "gw-a: $n votes again after the quarantine" $?
  figure "gw-a_${n}_hygiene_after" "\"$(node_json gw-a $n hygiene)\""
done
finish
