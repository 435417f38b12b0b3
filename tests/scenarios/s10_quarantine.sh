#!/bin/bash
# SPDX-License-Identifier: MIT
# Scenario 10 (issue 20): a node killed and restarted empty during a lease is quarantined.
# Three nodes without persistence, [fleet] quarantine = 10s (long enough to be seen in STATUS
# on a loaded machine; auto would be ttl + drift). gw-a drives the valve.
#  1. node 1 is killed and restarted empty: both gateways quarantine it (their logs say when
#     it started and ended) and show it in STATUS (text: "quarantined", votes=no; JSON:
#     quarantined_ms > 0) when read inside it. The lease stays: gw-a renews on nodes 2 and 3
#     (a quorum without node 1), gw-b cannot take it.
#  2. nodes 1 and 2 restarted empty together (node 1 again, so both are quarantined from the
#     same moment, whatever the load made of step 1's time): only node 3 votes, gw-a's
#     renewals miss their quorum (SUSPECT: `elk run --on-suspect` runs its hook) and the lease
#     is lost by the rule (75) at its deadline. gw-b, waiting all along, gets it only after
#     that: never two holders (actuator log in true time), no stale token, and no grant on
#     either gateway counted a quarantined node's vote (elkd's log: quarantine start and end,
#     the voters of every grant).
#  3. once the quarantine has passed both nodes vote again (quarantined_ms 0).
# No check acts inside the quarantine's window: a STATUS read is judged only if elkd's log
# shows the quarantine still on after it; the safety property is asserted from the logs.
# S10_HYGIENE=off (a manual negative control) writes vote_hygiene = off: it fails at 1 (no
# quarantine logged) and at 2 (gw-b gets the valve on the two empty nodes while gw-a drives).
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
qcount() { python3 "$S_HERE/elkdlog.py" count "$S_DIR/elkd-$1.log" "$2" "$3"; }
q0a=$(qcount gw-a quarantined n1) q0b=$(qcount gw-b quarantined n1)
restart_empty r1
for gw in gw-a gw-b; do
  eval "q0=\$q0${gw#gw-}"
  wait_until 60 eval '[ "$(qcount $gw quarantined n1)" -gt "$q0" ]'
  check_true "$gw: elkd logged node 1 quarantined after its restart" $?
  over0=$(qcount $gw over n1)
  line=$(node_line $gw n1)
  q_ms=$(node_json $gw n1 quarantined_ms)
  echo "$gw: $line"
  if [ "$(qcount $gw over n1)" != "$over0" ]; then
    say "$gw: STATUS read after the quarantine ended (elkd's log): not judged"
    continue
  fi
  check_contains "$gw: the node line says why" "quarantined" "$line"
  check_contains "$gw: node 1 has no vote" "votes=no" "$line"
  [ "${q_ms:-0}" -gt 0 ] 2>/dev/null; check_true "$gw: JSON quarantined_ms > 0 (${q_ms:-none})" $?
  figure "${gw}_n1_quarantined_ms" "$q_ms"
done
wait_renewals_of gw-a valve 2; check_true "the lease stays: gw-a renews on nodes 2 and 3" $?
st=$(res_field gw-a valve state)
case "$st" in held | renewing) ok "lease still held ($st)" ;; *) bad "lease state $st" ;; esac
busy_for gw-b valve
check_refused "gw-b cannot take it" $?

say "2. nodes 1 and 2 restarted empty together"
wait_renewals_of gw-a valve 1
restart_empty r1
restart_empty r2
act_mark
run_bg gw-b RB --wait 120s valve -- "$WORK" gw-b 10 0.05
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
tokB=$(wait_until 150 tick_seen gw-b any "$RB")
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
for gw in gw-a gw-b; do
  python3 "$S_HERE/elkdlog.py" check "$S_DIR/elkd-$gw.log" --tag "s10_$gw" --min-quarantines 2
  check "$gw's log: no grant counted a quarantined node's vote" 0 $?
done
figure gw-b_grant_votes "$(python3 "$S_HERE/elkdlog.py" grants "$S_DIR/elkd-gw-b.log" valve | awk -v t="${tokB:-x}" '$3 == t {print $4}')"

say "3. the quarantine passes"
for n in n1 n2; do
  wait_until 60 node_free gw-a $n; check_true "gw-a: $n votes again after the quarantine" $?
  figure "gw-a_${n}_hygiene_after" "\"$(node_json gw-a $n hygiene)\""
done
finish
