#!/bin/bash
# SPDX-License-Identifier: MIT
# Scenario 4: every node of the fleet down, then back on the same ports.
# While the fleet is down: `elk acquire` and `elk run --wait` return within their wait
# times with exit 73 (not acquired) and a message naming the cause, the command of
# `elk run` never starts (no actuation without a lease), a holder at the moment of the crash
# is stopped (75). After the servers come back, elkd reconnects by itself (with backoff) and
# grants again, including to a client that was already waiting.
# usage: s4_alldown.sh ELKD ELK
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
TTL=2000
for n in 1 2 3; do start_redis r$n; done
gateway gw-a redlock "${RPORT[r1]} ${RPORT[r2]} ${RPORT[r3]}" "$(valve $TTL 300 20 100)"
act_init

say "== a holder when the whole fleet dies"
act_mark
run_bg gw-a RA valve -- "$WORK" gw-a 0 0.05
wait_tick gw-a >/dev/null || { bad "gw-a never drove the actuator"; finish; }
for n in 1 2 3; do stop_redis r$n KILL; done
t_down=$(now_ms)
wait $RA; rc=$?
check "the holder's elk run exits 75 (lease lost, command stopped)" 75 $rc
figure holder_stopped_after_ms $(($(now_ms) - t_down))

say "== requests while every node is down"
act_mark
for w in 0 1s 3s; do
  t0=$(now_ms)
  out=$(timeout 30 "$ELK" --socket "$S_DIR/gw-a.sock" acquire --wait $w valve 2>&1); rc=$?
  el=$(($(now_ms) - t0))
  check "elk acquire --wait $w: exit 76 (fleet unreachable)" 76 $rc
  # one attempt reports the cause; a wait that ran out reports the timeout
  case "$out" in
    *ELK_E_FLEET_UNAVAILABLE* | *ELK_E_LOCK_TIMEOUT*) ok "elk acquire --wait $w names a code: ${out##*[}" ;;
    *) bad "elk acquire --wait $w: no named code in: $out" ;;
  esac
  figure "acquire_wait_${w}_returned_after_ms" $el
done
t0=$(now_ms)
timeout 30 "$ELK" --socket "$S_DIR/gw-a.sock" run --wait 2s valve -- "$WORK" gw-a 1 0.01 >"$S_DIR/run2.out" 2>&1; rc=$?
figure run_wait_2s_returned_after_ms $(($(now_ms) - t0))
check "elk run --wait 2s: exit 76" 76 $rc
n=$(tail -n +$((ACT_MARK + 1)) "$ACT_LOG" | wc -l)
check "no actuator command without a lease" 0 "$n"
st=$(ctl gw-a --quiet-ms 150 STATUS | grep '^agent')
check_contains "STATUS shows no node ready" "nodes_ready=0/3" "$st"

say "== a client waiting when the fleet comes back"
run_bg gw-a RW --wait 30s valve -- "$WORK" gw-a 5 0.02
sleep 1
for n in 1 2 3; do start_redis r$n "${RPORT[r$n]}"; done
t_up=$(now_ms)
say "restarted the 3 servers on their old ports"
wait_nodes gw-a 3 400; check_true "elkd reconnected to all 3 nodes by itself" $?
figure reconnect_all_after_ms $(($(now_ms) - t_up))
wait $RW; rc=$?
check "the waiting elk run got the lease after the restart and finished (exit 0)" 0 $rc
tok=$(wait_tick gw-a 5)
[ -n "$tok" ]; check_true "it drove the actuator with token $tok" $?
grep -Eq "retry in [0-9]+ ms" "$S_DIR/elkd-gw-a.log"; check_true "elkd logged its reconnect backoff" $?
retries=$(grep -Ec "retry in [0-9]+ ms" "$S_DIR/elkd-gw-a.log")
figure reconnect_attempts_logged "$retries"
grep -Eo "retry in [0-9]+ ms" "$S_DIR/elkd-gw-a.log" | awk '{print $3}' | tr '\n' ' ' | sed 's/^/backoff delays (ms): /'; echo
timeout 30 "$ELK" --socket "$S_DIR/gw-a.sock" acquire valve </dev/null >"$S_DIR/acq.out" 2>&1 &
AQ=$!
track $AQ
wait_for 30 'file_has acquired "$S_DIR/acq.out"'
grep -q "acquired valve token=" "$S_DIR/acq.out"; check_true "elk acquire (no wait) succeeds again" $?
kill -TERM $AQ; wait $AQ; check "elk acquire releases on SIGTERM (exit 0)" 0 $?
act_check --tag s4; check "actuator log: no overlap, no stale accept" 0 $?
finish
