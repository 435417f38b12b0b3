#!/bin/bash
# SPDX-License-Identifier: MIT
# Scenario 1: a holder paused past its TTL (SIGSTOP), three ways, two gateways, 3-node fleet.
#  a) elkd of the holding gateway paused: it cannot renew. elk run's own copy of the deadline
#     stops the command before the lease can expire; the other gateway gets the lock after
#     expiry with a higher token; on SIGCONT elkd catches up (loss, no renewal of a dead lease,
#     still serves new requests); the old token is refused by the guard.
#  b) `elk run` and its command paused, elkd alive: the lease belongs to the live connection,
#     elkd keeps renewing it, the other gateway cannot get it meanwhile; after SIGCONT the
#     holder must not drive on a lease it cannot vouch for.
#  c) the whole gateway paused (elkd, elk run, command: a VM or power-save freeze). The
#     actuator is not part of the gateway (its own process, lib.sh act_init): a step of the
#     frozen holder never stays frozen holding the guard. The other gateway drives within a
#     bound after the frozen lease ends (from the actuator's log: TTL after the freeze, the
#     latest the lease can end, plus C_BOUND_MS for a loaded machine), while gw-a is still
#     frozen; the frozen command, thawed first, sends its next step with its old token: the
#     guard refuses it (no step of the frozen holder is accepted after gw-b's first).
# usage: s1_pause.sh ELKD ELK
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
TTL=2000 STOP=300
two_gateways $TTL $STOP
key='scen:{valve}'

say "== a) elkd of the holder paused past the TTL"
act_mark
run_bg gw-a RA valve -- "$WORK" gw-a 0 0.05
tokA=$(wait_tick gw-a) || { bad "gw-a never drove the actuator"; finish; }
run_bg gw-b RB --wait 120s valve -- "$WORK" gw-b 10 0.05
kill -STOP "${ELKD_PID[gw-a]}"
t_stop=$(now_ms)
# the server-side expiry read once elkd is frozen (a renewal just before the freeze moves it):
# the latest of the three nodes, re-read until it no longer moves (one in flight landed)
exp_now() { local n e m=0; for n in r1 r2 r3; do e=$(rcli $n pexpiretime "$key"); [ "${e:-0}" -gt "$m" ] && m=$e; done; echo $m; }
exp=$(exp_now); sleep 0.2; while [ "$(exp_now)" != "$exp" ]; do exp=$(exp_now); sleep 0.2; done
say "paused elkd gw-a (token $tokA); lease expires on node 1 at +$((exp - t_stop)) ms"
wait $RA; rc=$?
t_a=$(now_ms)
check "elk run (gw-a) stops its command on its own deadline and exits 75" 75 $rc
# When the command stopped, from the actuator's record: its stop line (else its last step).
# This shell's clock after `wait` also counted elk run's exit and this shell's own turn, on
# a loaded machine more than the stop margin the command has between deadline and expiry.
t_cmd=$(tail -n +$((ACT_MARK + 1)) "$ACT_LOG" | awk -v t="$tokA" '$2 == "gw-a" && $3 == t && ($4 == "stop" || $4 == "tick") {s = substr($1, 1, 13)} END {print s}')
[ -n "$t_cmd" ] && [ "$t_cmd" -lt "$exp" ]
check_true "gw-a's command was stopped before the server-side expiry ($((exp - ${t_cmd:-0})) ms left, actuator log)" $?
figure a_stopped_before_expiry_ms $((exp - ${t_cmd:-0}))
figure a_elk_run_exited_before_expiry_ms $((exp - t_a))
tokB=$(wait_tick_for gw-b 120 "$RB") || bad "gw-b never got the lock while gw-a's elkd was paused (waited up to 120 s)"
[ "${tokB:-0}" -gt "$tokA" ]; check_true "gw-b's token ($tokB) is higher than the paused holder's ($tokA)" $?
wait $RB; check "gw-b's run completes (exit 0)" 0 $?
# hold the pause past twice the TTL, then resume
sleep 1
kill -CONT "${ELKD_PID[gw-a]}"
figure a_pause_ms $(($(now_ms) - t_stop))
# elkd catches up on its own deadline once it runs again: wait for that event
not_holding() { case "$(res_field gw-a valve state)" in held | renewing) return 1 ;; esac; }
wait_until 30 not_holding
kill -0 "${ELKD_PID[gw-a]}"; check_true "elkd gw-a survives the pause" $?
st=$(res_field gw-a valve state)
say "gw-a resource state after resume: $st"
[ "$st" != held ] && [ "$st" != renewing ]; check_true "elkd gw-a does not believe it still holds the lease" $?
out=$("$ELK" guard --state "$ACT_STATE" "$tokA" 2>&1); rc=$?
check "guard refuses the paused holder's token $tokA (exit 65)" 65 $rc
check_contains "guard says why" "refused" "$out"
act_mark
run_bg gw-a RA --wait 60s valve -- "$WORK" gw-a 3 0.02
wait $RA; check "elkd gw-a grants again after the pause (exit 0)" 0 $?
tokA2=$(wait_tick gw-a 5)
[ "${tokA2:-0}" -gt "$tokB" ]; check_true "with a token ($tokA2) above gw-b's ($tokB)" $?

say "== b) elk run and its command paused past the TTL, elkd alive"
act_mark
run_bg gw-a RA valve -- "$WORK" gw-a 0 0.05
tokA=$(wait_tick gw-a) || { bad "gw-a never drove the actuator"; finish; }
cmdpid=$(ps -o pid= --ppid "$RA" | tr -d ' ')
kill -STOP "$RA"
[ -n "$cmdpid" ] && kill -STOP -"$cmdpid"
t_p=$(now_ms)
sleep $((TTL * 2 / 1000)).5
"$ELK" --socket "$S_DIR/gw-b.sock" acquire valve >"$S_DIR/b-acq.out" 2>&1; rc=$?
check_refused "gw-b cannot take the lease while elkd gw-a keeps renewing it" $rc
# renewals are events: wait for two (the pause above already lasted past twice the TTL)
renewed_twice() { [ "$(res_field gw-a valve renewals)" -ge 2 ] 2>/dev/null; }
wait_until 60 renewed_twice
r=$(res_field gw-a valve renewals)
say "elkd gw-a renewed the paused holder's lease $r times"
[ "${r:-0}" -ge 2 ]; check_true "elkd kept renewing for the live connection" $?
[ -n "$cmdpid" ] && kill -CONT -"$cmdpid"
kill -CONT "$RA"
figure b_pause_ms $(($(now_ms) - t_p))
# elk run's copy of the deadline ran out during the pause: it stops the command at once
# rather than trust a lease it has no fresh word on (a false alarm costs liveness only).
wait_until 30 gone "$RA"
if kill -0 "$RA" 2>/dev/null; then
  st=$(res_field gw-a valve state)
  say "b) elk run kept the command running after resume; elkd state: $st"
  [ "$st" = held ] || [ "$st" = renewing ]; check_true "if the command goes on, elkd still holds the lease" $?
  kill -TERM "$RA"; wait "$RA"
else
  wait "$RA"; rc=$?
  say "b) elk run exited $rc after resume"
  check "elk run stops the command after resume (exit 75)" 75 $rc
  grep -q "deadline passed" "$S_DIR/run-gw-a.log"; check_true "elk run says why (its deadline passed without word)" $?
fi

say "== c) the whole gateway paused: elkd, elk run and the command; the actuator runs on"
# b)'s lease must be gone from elkd gw-a before c) asks for it again: wait for the event
# (a fixed pause here failed on a loaded machine), and let c)'s request wait for it too
is_idle() { [ "$(res_field gw-a valve state)" = idle ]; }
wait_until 60 is_idle || bad "c) gw-a's resource never went idle after b)"
act_mark
run_bg gw-a RA --wait 60s valve -- "$WORK" gw-a 0 0.05
tokA=$(wait_tick gw-a) || { bad "gw-a never drove the actuator"; finish; }
cmdpid=$(ps -o pid= --ppid "$RA" | tr -d ' ')
run_bg gw-b RB --wait 120s valve -- "$WORK" gw-b 20 0.05
kill -STOP "${ELKD_PID[gw-a]}" "$RA"
[ -n "$cmdpid" ] && kill -STOP -"$cmdpid"
t_freeze=$(now_ms)
# gw-b gets the lock once gw-a's lease has expired on the servers: wait for that event
# with a bound far above any load (the TTL is 2 s), never for a fixed window. gw-a stays
# frozen all that time: what gw-b needs is the actuator, which is not frozen with gw-a.
tokB=$(wait_tick_for gw-b 120 "$RB") || bad "gw-b never drove while gw-a was frozen (waited up to 120 s)"
[ "${tokB:-0}" -gt "$tokA" ]; check_true "gw-b's token ($tokB) is higher than the frozen holder's ($tokA)" $?
# From the actuator's log: gw-b's first accepted step, against the latest moment the frozen
# lease can have ended (the last renewal was sent before the freeze: it lasts TTL at most)
tb=$(tail -n +$((ACT_MARK + 1)) "$ACT_LOG" | awk -v t="$tokB" '$3 == t && $4 == "tick" && $5 == "accepted" {print substr($1, 1, 13); exit}')
lease_end=$((t_freeze + TTL))
figure c_next_holder_drove_after_lease_end_ms $((${tb:-0} - lease_end))
C_BOUND_MS=${C_BOUND_MS:-30000}
[ -n "$tb" ] && [ $((tb - lease_end)) -le "$C_BOUND_MS" ]
check_true "gw-b drove within TTL + ${C_BOUND_MS} ms of the freeze ($((${tb:-0} - t_freeze)) ms), gw-a still frozen" $?
# resume the command first: it is the part that would drive the actuator with its old token.
# It sends its next step as soon as it runs: wait for the actuator's answer to that.
act_b=$(wc -l <"$ACT_LOG")
[ -n "$cmdpid" ] && kill -CONT -"$cmdpid"
refused_late() { tail -n +$((act_b + 1)) "$ACT_LOG" | awk -v t="$tokA" '$3 == t && $4 == "tick" && $5 == "refused"' | grep -q .; }
wait_until 60 refused_late; check_true "the thawed command's step with token $tokA is refused by the guard" $?
kill -CONT "$RA"
kill -CONT "${ELKD_PID[gw-a]}"
wait "$RA"; rc=$?
check "frozen holder's elk run exits 75 after resume" 75 $rc
wait "$RB"; check "gw-b's run completes (exit 0)" 0 $?
"$ELK" guard --state "$ACT_STATE" "$tokA" 2>/dev/null; check "guard refuses the frozen holder's token (exit 65)" 65 $?
late_ok=$(tail -n +$((ACT_MARK + 1)) "$ACT_LOG" | awk -v t="$tokA" -v b="${tb:-0}" '$3 == t && $4 == "tick" && $5 == "accepted" && substr($1, 1, 13) + 0 >= b + 0' | wc -l)
check "no step of the frozen holder accepted after gw-b's first" 0 "$late_ok"
late=$(tail -n +$((ACT_MARK + 1)) "$ACT_LOG" | awk -v t="$tokA" '$3 == t && $4 == "tick" && $5 == "refused"' | wc -l)
say "c) commands the frozen holder sent after resume and the guard refused: $late"
figure c_stale_commands_refused "$late"
act_check --tag s1 --allow-overlap; check "actuator log: no stale token ever accepted" 0 $?
# a) and b) must not overlap at all: check the log up to the start of c)
head -n "$ACT_MARK" "$ACT_LOG" >"$S_DIR/act-ab.log"
python3 "$S_HERE/actlog.py" "$S_DIR/act-ab.log" --tag s1_ab --min-sessions 4
check "a) and b): no lease overlap, no stale accept" 0 $?
finish
