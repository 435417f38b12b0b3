#!/bin/bash
# SPDX-License-Identifier: MIT
# Scenario 5: a node restarted without its data (no persistence) while a lock is held,
# without and with the "delayed restart" of the Redlock discussion (the node stays down
# for at least the TTL, so every lease it knew of has expired before it answers again).
#
# One amnesic node: in both variants the lease stays held (2 of 3 still hold it, renewals
# reach a quorum) and another gateway cannot take it.
# A second amnesic node while the lease is still alive:
#  - immediate restart: the two empty nodes form a majority for a new holder while the old
#    lease still lives on the third node and the old holder still drives until its renewal
#    fails: two holders at once is possible. The new holder's fencing token comes from the
#    reset counters, so it is LOWER: the guard refuses it. Safety holds, liveness suffers.
#  - delayed restart: nobody can form a majority while the old lease may live; the old
#    holder loses its quorum and stops in time; the next holder's token is higher.
# Asserted: what must hold (no stale token accepted, one lease at a time in the delayed
# variant, the lease survives one amnesic node); printed: what was observed otherwise.
# usage: s5_restart.sh ELKD ELK
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
TTL=2000 STOP=300
key='scen:{valve}'

setup() {
  two_gateways $TTL $STOP
  wait_all_vote gw-a gw-b # fresh servers are quarantined by the vote hygiene at first
  # a few grants first, so the fence counters are well above what an empty node starts from
  for _ in 1 2 3 4 5; do "$ELK" --socket "$S_DIR/gw-a.sock" run --wait 30s valve -- true || bad "warm-up grant failed"; done
}
teardown() {
  local p
  for gw in gw-a gw-b; do stop_elkd $gw; done
  for n in 1 2 3; do stop_redis r$n TERM; done
  rm -f "$S_DIR"/*.sock "$ACT_STATE"
}
# restart_empty NODE DELAY_S: kill -9 (no persistence: the data is gone), restart on the same
# port after DELAY_S seconds
restart_empty() {
  stop_redis "$1" KILL
  [ "$2" != 0 ] && sleep "$2"
  start_redis "$1" "${RPORT[$1]}"
}
renewals() { res_field gw-a valve renewals; }
wait_renewals() { wait_renewals_of gw-a valve "$1"; } # N more renewals (60 s bound, lib.sh)

variant() { # variant NAME DELAY_S
  local v=$1 delay=$2 tokA tokB rc st
  say "== $v: restart delay ${delay}s (TTL $((TTL / 1000))s)"
  setup
  run_bg gw-a RA valve -- "$WORK" gw-a 0 0.05
  tokA=$(wait_tick gw-a) || { bad "$v: gw-a never drove the actuator"; return; }
  restart_empty r1 "$delay"
  say "$v: node 1 restarted empty; on it the key exists: $(rcli r1 exists "$key")"
  wait_renewals 2; check_true "$v: gw-a renews with 2 of 3 after one amnesic node" $?
  st=$(res_field gw-a valve state)
  case "$st" in held | renewing) ok "$v: lease still held ($st)" ;; *) bad "$v: lease state $st" ;; esac
  busy_for gw-b valve; rc=$?
  check_refused "$v: gw-b cannot take it (quorum still with gw-a)" $rc
  # Second amnesic node, right after a renewal so the old lease has most of its TTL left.
  wait_renewals 1
  t2=$(now_ms)
  restart_empty r2 "$delay"
  run_bg gw-b RB --wait 60s valve -- "$WORK" gw-b 15 0.05
  tokB=$(wait_tick gw-b 600 any)
  t_b=$(now_ms)
  wait $RA; rcA=$?
  wait $RB; rcB=$?
  say "$v: gw-a's run ended with $rcA, gw-b got token ${tokB:-none} (gw-a had $tokA) $((t_b - t2)) ms after the second restart began"
  check "$v: gw-a is stopped once it cannot renew (75)" 75 $rcA
  [ -n "$tokB" ]; check_true "$v: gw-b eventually gets the lease" $?
  figure "${v}_token_old_holder" "$tokA"
  figure "${v}_token_new_holder" "${tokB:-0}"
  if [ "$delay" = 0 ]; then
    act_check --tag "s5_$v" --allow-overlap; check "$v: no stale token accepted (fencing holds)" 0 $?
    if [ "${tokB:-0}" -lt "$tokA" ]; then
      refused=$(awk -v t="$tokB" '$2 == "gw-b" && $3 == t && $5 == "refused"' "$ACT_LOG" | wc -l)
      say "$v: the new holder's token went DOWN ($tokA -> $tokB): the guard refused its $refused commands"
      [ "$refused" -gt 0 ]; check_true "$v: the guard refused the lower token" $?
    fi
  else
    act_check --tag "s5_$v"; check "$v: one holder at a time and no stale token (delayed restart)" 0 $?
    [ "${tokB:-0}" -gt "$tokA" ]; check_true "$v: the next holder's token is higher ($tokB > $tokA)" $?
  fi
  teardown
}
variant immediate 0
variant delayed $((TTL / 1000 + 1))
finish
