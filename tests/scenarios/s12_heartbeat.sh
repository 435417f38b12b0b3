#!/bin/bash
# SPDX-License-Identifier: MIT
# Scenario 12 (issue 20): no zombie renewals. `elk run --heartbeat 1s` on gw-a runs a command
# (hb_work.sh) that drives the valve and proves itself alive on $ELK_HEARTBEAT_FD; gw-b waits
# for the valve.
#  - hung (MODE term): the proof stops after 1.5 s while the command goes on driving. elk
#    stops renewing, sends SIGTERM to the command, releases the lease, exits 75 naming the
#    missed heartbeat; gw-b gets the valve.
#  - hung, ignoring SIGTERM (MODE ignore-term): the same, but only SIGKILL ends the command.
#  Asserted for both: elk exits 75 and says why, the command is gone, gw-b gets the valve,
#  never while gw-a's command still drives (actuator log in true time), no stale token.
#  Printed: the time from the last proof to gw-b's grant (the rule: within one heartbeat
#  interval plus the TTL).
#  - alive (negative control): the proof goes on; the lease is kept over 4 TTLs (renewals go
#    on, gw-b cannot take it), elk exits 0 when the command ends.
# Without --heartbeat support, or with renewal going on regardless, gw-b never gets the valve
# from the hung command (max_hold 1 h): the hung variants fail.
# usage: s12_heartbeat.sh ELKD ELK   (S12_VARIANTS="term ignore-term alive" by default)
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
TTL=2000 STOP=300 HB=1000
export S_DIR
HBWORK="$S_HERE/hb_work.sh"

teardown() {
  local gw n
  for gw in gw-a gw-b; do stop_elkd $gw; done
  for n in 1 2 3; do stop_redis r$n TERM; done
  rm -f "$S_DIR"/*.sock "$ACT_STATE" "$S_DIR"/hb-* "$S_DIR"/run-*.log
}

hung() { # hung term|ignore-term
  local v=$1 rcA rcB tokA tokB pid last start_b out
  say "== $v: the command stops proving itself alive after 1.5 s"
  two_gateways $TTL $STOP
  wait_all_vote gw-a gw-b
  run_bg gw-a RA --heartbeat ${HB}ms valve -- "$HBWORK" gw-a 0 0.05 1500 "$v"
  tokA=$(wait_tick gw-a) || { bad "$v: gw-a never drove the actuator"; teardown; return; }
  act_mark
  run_bg gw-b RB --wait 60s valve -- "$WORK" gw-b 10 0.05
  wait_until 60 gone "$RA"; check_true "$v: elk run on gw-a ends" $?
  wait "$RA"; rcA=$?
  check "$v: elk run exits 75 (lease given up)" 75 $rcA
  cat "$S_DIR/run-gw-a.log"
  check_contains "$v: elk says the heartbeat was missed" "heartbeat" "$(cat "$S_DIR/run-gw-a.log")"
  pid=$(cat "$S_DIR/hb-pid")
  wait_until 30 gone "$pid"; check_true "$v: the hung command is gone" $?
  tokB=$(wait_tick gw-b)
  wait "$RB"; rcB=$?
  [ -n "$tokB" ]; check_true "$v: gw-b gets the valve" $?
  check "$v: gw-b's run ends normally" 0 $rcB
  if [ "$v" = ignore-term ]; then
    # killed, not stopped: work.sh never got to log its "stop"
    ! awk '$2 == "gw-a" && $4 == "stop"' "$ACT_LOG" | grep -q .
    check_true "ignore-term: the command ignored SIGTERM and was ended by SIGKILL" $?
  else
    awk '$2 == "gw-a" && $4 == "stop"' "$ACT_LOG" | grep -q .
    check_true "term: the command stopped on SIGTERM" $?
  fi
  last=$(cat "$S_DIR/hb-last")
  start_b=$(awk '$2 == "gw-b" && $4 == "start" {print substr($1, 1, 13); exit}' "$ACT_LOG")
  figure "${v}_tokens" "$tokA->${tokB:-0}"
  figure "${v}_last_proof_to_gw-b_start_ms" "$((start_b - last))"
  figure "${v}_rule_interval_plus_ttl_ms" "$((HB + TTL))"
  out=$(act_check --tag "s12_$v")
  check "$v: one holder at a time, no stale token" 0 $?
  echo "$out"
  teardown
}

alive() {
  local rcA n0 out
  say "== alive: the command proves itself alive all along (negative control)"
  two_gateways $TTL $STOP
  wait_all_vote gw-a gw-b
  # 150 ticks of at least 0.1 s: over 7 TTLs. The writer beats every 0.2 s; an interval of
  # 3 HB (not HB): a beat late by a second on a loaded machine is no miss of this control.
  run_bg gw-a RA --heartbeat $((3 * HB))ms valve -- "$HBWORK" gw-a 150 0.1 -1 term
  wait_tick gw-a >/dev/null || { bad "alive: gw-a never drove the actuator"; teardown; return; }
  n0=$(renewals_of gw-a valve)
  # 4 TTLs at one renewal every third of the TTL: 12 renewals
  wait_renewals_of gw-a valve 12; check_true "alive: the lease is kept over 4 TTLs (12 renewals)" $?
  busy_for gw-b valve
  check_refused "alive: gw-b cannot take it" $?
  figure alive_renewals "$(($(renewals_of gw-a valve) - n0))"
  wait_until 120 gone "$RA"
  wait "$RA"; rcA=$?
  check "alive: elk run ends with the command (0)" 0 $rcA
  ! grep -qi "heartbeat" "$S_DIR/run-gw-a.log"; check_true "alive: no missed heartbeat reported" $?
  out=$(act_check --tag s12_alive)
  check "alive: one session, no stale token" 0 $?
  echo "$out"
  teardown
}

for v in ${S12_VARIANTS:-term ignore-term alive}; do
  case $v in alive) alive ;; *) hung "$v" ;; esac
done
finish
