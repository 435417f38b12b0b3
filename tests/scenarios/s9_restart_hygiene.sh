#!/bin/bash
# SPDX-License-Identifier: MIT
# Scenario 9 (issue 20): the restart that gave scenario 5 its lease overlap, with vote hygiene.
# Three nodes without persistence, gw-a drives the valve; node 1 is killed and restarted
# empty at once, then (after gw-a renewed on the other two) node 2 too, right after a
# renewal, while gw-b waits for the valve.
#  - without vote hygiene (scenario 5 "immediate", and the variant `off` here: vote_hygiene =
#    off) the two empty nodes form a majority for gw-b while gw-a's lease still stands on
#    node 3 and gw-a still drives: two holders at once; gw-b's token comes from the reset
#    counters, lower, and only the guard keeps the actuator safe.
#  - with it (variant `on`, the default configuration) a node that restarted gets no vote
#    until the longest lease could have run out (ttl + drift): gw-a loses its quorum and stops
#    (75), gw-b gets the valve only after that. Asserted: zero overlaps in true time and no
#    stale token accepted; printed: the overlap, the guard's refusals, the tokens.
# The `off` variant is the negative control: it must show the hole (an overlap, or a token
# that went down), or the scenario could not tell the hygiene from its absence.
# usage: s9_restart_hygiene.sh ELKD ELK   (S9_VARIANTS="on off" by default; "on" alone runs
# against an elkd without the vote_hygiene key, e.g. the code before issue 20)
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
# ttl 6 s: gw-a renews every 2 s, so in the control gw-b (already waiting) is granted on the two
# empty nodes before gw-a's next renewal even when the restart is slow on a loaded machine
TTL=6000 STOP=300

teardown() {
  local gw n
  for gw in gw-a gw-b; do stop_elkd $gw; done
  for n in 1 2 3; do stop_redis r$n TERM; done
  rm -f "$S_DIR"/*.sock "$ACT_STATE"
}

variant() { # variant on|off
  local v=$1 tokA tokB rcA rcB out overlaps worst refused
  say "== $v: vote hygiene $v, two nodes restarted empty at once (TTL $((TTL / 1000))s)"
  S_FLEET_EXTRA=""
  [ "$v" = off ] && S_FLEET_EXTRA="vote_hygiene = off"
  two_gateways $TTL $STOP
  wait_all_vote gw-a gw-b
  warm_up gw-a valve 5
  run_bg gw-a RA valve -- "$WORK" gw-a 0 0.05
  tokA=$(wait_tick gw-a) || { bad "$v: gw-a never drove the actuator"; teardown; return; }
  restart_empty r1
  wait_renewals_of gw-a valve 2; check_true "$v: gw-a renews with 2 of 3 after one amnesic node" $?
  busy_for gw-b valve
  check_refused "$v: gw-b cannot take it meanwhile" $?
  # the second amnesic node right after a renewal: the old lease has most of its TTL left.
  # gw-b already waits for the valve, so it is granted as soon as the two empty nodes may
  # vote, however long the restart and the STATUS polling take on a loaded machine (issue 26:
  # started after the restart, gw-b came too late for the control's overlap in 2 of 3 runs)
  act_mark
  run_bg gw-b RB --wait 30s valve -- "$WORK" gw-b 15 0.05
  wait_renewals_of gw-a valve 1
  restart_empty r2
  tokB=$(wait_tick gw-b 600 any)
  wait "$RA"; rcA=$?
  wait "$RB"; rcB=$?
  say "$v: gw-a's run ended with $rcA (token $tokA), gw-b's with $rcB (token ${tokB:-none})"
  check "$v: gw-a is stopped once it cannot renew (75)" 75 $rcA
  [ -n "$tokB" ]; check_true "$v: gw-b eventually gets the valve" $?
  out=$(act_check --tag "s9_$v" --allow-overlap)
  check "$v: no stale token accepted (fencing holds)" 0 $?
  echo "$out"
  overlaps=$(echo "$out" | sed -n 's/.* lease_overlaps=//p')
  worst=$(echo "$out" | sed -n 's/.* max_overlap_ms=//p')
  refused=$(echo "$out" | sed -n 's/.* ticks_refused=//p')
  figure "${v}_tokens" "$tokA->${tokB:-0}"
  figure "${v}_overlap_ms" "$worst"
  figure "${v}_guard_refusals" "$refused"
  if [ "$v" = on ]; then
    check "on: zero lease overlaps in true time" 0 "$overlaps"
  else
    [ "$overlaps" -gt 0 ] || [ "${tokB:-0}" -lt "$tokA" ]
    check_true "off (control): the hole shows without the hygiene (overlaps $overlaps, tokens $tokA -> ${tokB:-0})" $?
  fi
  teardown
}
for v in ${S9_VARIANTS:-on off}; do variant "$v"; done
finish
