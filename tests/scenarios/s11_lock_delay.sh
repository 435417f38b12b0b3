#!/bin/bash
# SPDX-License-Identifier: MIT
# Scenario 11 (issue 20): lock-delay after an unclean loss (Chubby's lock-delay).
# Three nodes; the valve has lock_delay = 3s. gw-a's holder (hold.py, which logs every
# ACQUIRED / RENEWED line elkd sends with its deadline) holds the valve; gw-a's elkd is then
# frozen with SIGSTOP: no renewal, no release, the lease just ends. gw-b asks for the valve.
# The rule: no new grant until lock_delay after the old lease could last have been valid. The
# holder could drive until its last deadline (deadline_boottime_ms of its last ACQUIRED /
# RENEWED); the actuator stops stop_margin later at the latest; the servers' keys outlive that
# by the drift allowance. So asserted: gw-b's grant (the moment its OK ACQUIRED is read, on
# CLOCK_BOOTTIME) >= last deadline + stop_margin + lock_delay. While the lock key is gone and
# the marker still stands, a one-shot ACQUIRE is refused with ELK_E_LOCK_DELAY.
# Variant `control`: lock_delay not set (0, today's behaviour): no marker on any node at the
# freeze and no round of gw-b refused for a lock delay (elkd's debug log names every failed
# round's cause), where the delay variant has both: the scenario tells the lock delay from its
# absence by the record, not by how soon the grant comes (a loaded machine makes every grant
# late, which proves nothing either way). The grant's distance to the bound is a figure.
# usage: s11_lock_delay.sh ELKD ELK   (S11_VARIANTS="delay control" by default)
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
TTL=2000 STOP=300 DELAY=3000
# debug: every failed acquire round is logged with its cause (ELK_E_LOCK_DELAY or not)
S_LOG_LEVEL=${S_LOG_LEVEL:-debug}
# delay_rounds GW FROM: gw's rounds refused for a lock delay after line FROM of its log
delay_rounds() { tail -n +$(($2 + 1)) "$S_DIR/elkd-$1.log" 2>/dev/null | grep -c 'round failed (ELK_E_LOCK_DELAY)'; }
key='scen:{valve}'

teardown() {
  local gw n
  for gw in gw-a gw-b; do kill -CONT "${ELKD_PID[$gw]}" 2>/dev/null; stop_elkd $gw; done
  for n in 1 2 3; do stop_redis r$n TERM; done
  rm -f "$S_DIR"/*.sock "$S_DIR"/hold-*.log
}
# last_grant GW: "<realtime_ms> <boottime_ms> <token> <deadline_boottime_ms>" of GW's last
# ACQUIRED / RENEWED line
last_grant() {
  awk '($3 == "OK" && $4 == "ACQUIRED") || ($3 == "EVENT" && $4 == "RENEWED") {
         d = ""; for (i = 5; i <= NF; i++) if ($i ~ /^deadline_boottime_ms=/) d = substr($i, 22)
         l = $1 " " $2 " " $6 " " d } END { print l }' "$S_DIR/hold-$1.log"
}
keys_gone() { local n; for n in r1 r2 r3; do [ "$(key_pttl $n "$key")" = -2 ] || return 1; done; }
markers_standing() { # how many nodes still hold the lock-delay marker
  local n c=0
  for n in r1 r2 r3; do [ "$(key_pttl $n "$key:delay")" -gt 0 ] 2>/dev/null && c=$((c + 1)); done
  echo $c
}

variant() { # variant delay|control
  local v=$1 body la lb dl_a grant_b tok_a tok_b n p reply before after bound marks=0 m0 refusals
  say "== $v"
  body=$(valve $TTL $STOP)
  [ "$v" = delay ] && body="$body
lock_delay = ${DELAY}ms"
  for n in 1 2 3; do start_redis r$n; done
  for gw in gw-a gw-b; do gateway $gw redlock "${RPORT[r1]} ${RPORT[r2]} ${RPORT[r3]}" "$body"; done
  wait_all_vote gw-a gw-b
  hold_bg gw-a HA "ACQUIRE valve 10s"
  wait_until 30 hold_seen gw-a ACQUIRED; check_true "$v: gw-a holds the valve" $?
  wait_until 30 hold_seen gw-a RENEWED; check_true "$v: gw-a renewed it" $?
  kill -STOP "${ELKD_PID[gw-a]}"
  say "$v: gw-a's elkd frozen (SIGSTOP)"
  sleep 0.5 # replies to a request sent just before the freeze land on the servers
  la=$(last_grant gw-a)
  set -- $la
  tok_a=$3 dl_a=$4
  for n in r1 r2 r3; do
    p=$(key_pttl $n "$key:delay")
    [ "${p:-0}" -gt 0 ] 2>/dev/null && marks=$((marks + 1))
    figure "${v}_${n}_pttl_at_freeze" "key=$(key_pttl $n "$key"),marker=$p"
  done
  m0=$(wc -l <"$S_DIR/elkd-gw-b.log")
  wait_until 30 keys_gone; check_true "$v: the old lease's keys expired on every node" $?
  if [ "$v" = delay ]; then
    before=$(markers_standing)
    reply=$(ctl gw-b --quiet-ms 300 "ACQUIRE valve 0")
    after=$(markers_standing)
    echo "gw-b one-shot ACQUIRE: $reply (markers standing before/after: $before/$after)"
    if [ "$after" -ge 2 ]; then
      check_contains "$v: a one-shot ACQUIRE while the marker stands is refused for the lock delay" \
        "ELK_E_LOCK_DELAY" "$reply"
    else
      say "$v: the markers were gone before the reply (a stalled machine): not checked"
    fi
  fi
  hold_bg gw-b HB "ACQUIRE valve 30s"
  wait_until 60 hold_seen gw-b ACQUIRED; check_true "$v: gw-b gets the valve" $?
  lb=$(last_grant gw-b)
  set -- $lb
  grant_b=$2 tok_b=$3
  bound=$((dl_a + STOP + DELAY))
  figure "${v}_token_a_b" "$tok_a->$tok_b"
  figure "${v}_grant_after_last_deadline_ms" "$((grant_b - dl_a))"
  figure "${v}_grant_minus_rule_bound_ms" "$((grant_b - bound))"
  say "$v: gw-a's last deadline $dl_a, gw-b's grant read at $grant_b (boottime ms): $((grant_b - dl_a)) ms later; rule bound (deadline + stop_margin $STOP + lock_delay $DELAY) $bound"
  refusals=$(delay_rounds gw-b "$m0")
  figure "${v}_gw-b_rounds_refused_for_lock_delay" "$refusals"
  if [ "$v" = delay ]; then
    [ "$grant_b" -ge "$bound" ]; check_true "$v: no grant before last deadline + stop_margin + lock_delay" $?
    [ "$marks" -ge 2 ]; check_true "$v: a quorum of nodes kept the lock-delay marker at the freeze ($marks of 3)" $?
  else
    check "control: no node has a lock-delay marker without lock_delay" 0 "$marks"
    check "control: no round of gw-b refused for a lock delay (elkd's log)" 0 "$refusals"
  fi
  [ "${tok_b:-0}" -gt "${tok_a:-0}" ]; check_true "$v: gw-b's token is higher ($tok_a -> $tok_b)" $?
  kill -CONT "${ELKD_PID[gw-a]}"
  wait_until 30 hold_seen gw-a LOST; check_true "$v: gw-a's holder is told LOST once its elkd runs again" $?
  grep " LOST " "$S_DIR/hold-gw-a.log"
  kill "$HA" "$HB" 2>/dev/null
  wait "$HA" "$HB" 2>/dev/null
  untrack "$HA"; untrack "$HB"
  teardown
}
for v in ${S11_VARIANTS:-delay control}; do variant "$v"; done
finish
