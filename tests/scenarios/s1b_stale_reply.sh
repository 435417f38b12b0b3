#!/bin/bash
# SPDX-License-Identifier: MIT
# Scenario 1b: `elk run` paused between its ACQUIRE request and the reading of the reply.
# elkd grants the lease and writes "OK ACQUIRED"; the lease is then lost (its fleet path is
# blackholed) and elkd writes "EVENT LOST"; another gateway takes the valve. When the paused
# elk run resumes it finds both lines waiting. It must not start the command on a lease that
# is already gone (or must stop it at once), and it must not hand the actuator the old token
# as if it were current: the command must not get a single command accepted by the guard
# after the other gateway was granted the valve.
# usage: s1b_stale_reply.sh ELKD ELK FAULTPROXY
ELKD=$1 ELK=$2 FAULTPROXY=$3
. "$(dirname "$0")/lib.sh"
TTL=4000 STOP=300 # the held grant spends part of the TTL
proxied_fleet
S_REQUEST_TIMEOUT=10s gateway gw-a redlock "${PPORT[p1]} ${PPORT[p2]} ${PPORT[p3]}" "$(valve $TTL $STOP)"
gateway gw-b redlock "${RPORT[r1]} ${RPORT[r2]} ${RPORT[r3]}" "$(valve $TTL $STOP)"
act_init

# Hold the fleet path (the proxies keep every byte) so the grant cannot complete, and
# pause elk run once its request is with elkd; then let the grant through: the reply
# waits in the socket. Events, not windows: a slowed path and a polled state raced on a
# loaded machine (the command had started before the pause).
for p in p1 p2 p3; do pctl $p hold >/dev/null; done
"$ELK" --socket "$S_DIR/gw-a.sock" run valve -- "$WORK" gw-a 20 0.05 >>"$S_DIR/run-gw-a.log" 2>&1 &
RA=$!
track $RA
state_in() { local st; st=$(res_field gw-a valve state); case " $* " in *" $st "*) return 0 ;; esac; return 1; }
wait_until 60 state_in acquiring committing || bad "elkd gw-a never started on elk run's request"
kill -STOP $RA
say "elk run (pid $RA) paused while elkd works on its request"
for p in p1 p2 p3; do pctl $p pass >/dev/null; done
wait_until 60 state_in held renewing
st=$(res_field gw-a valve state)
case "$st" in held | renewing) ok "elkd gw-a granted the lease to the paused elk run ($st)" ;;
  *) bad "elkd gw-a did not grant the lease to the paused elk run (state $st)" ;; esac
started=$(awk '$2 == "gw-a" && $4 == "start"' "$ACT_LOG" | wc -l)
check "gw-a's command has not started while its elk run is paused" 0 "$started"
tokA=$(res_field gw-a valve token)
for p in p1 p2 p3; do pctl $p blackhole >/dev/null; done
wait_until 60 file_has "LOST" "$S_DIR/elkd-gw-a.log"
grep -q "LOST" "$S_DIR/elkd-gw-a.log"; check_true "elkd gw-a lost the lease and wrote EVENT LOST" $?
# gw-b takes the valve, but has not driven it yet (the worst moment for a stale holder)
"$ELK" --socket "$S_DIR/gw-b.sock" acquire --wait 60s valve >"$S_DIR/acq-b.out" 2>&1 &
AB=$!
track $AB
wait_until 60 file_has acquired "$S_DIR/acq-b.out"
tokB=$(sed -n 's/.*token=\([0-9]*\).*/\1/p' "$S_DIR/acq-b.out")
[ -n "$tokB" ]; check_true "gw-b holds the valve now (token ${tokB:-none}, gw-a's was $tokA)" $?
kill -CONT $RA
# the stale elk run ends (it must report the loss): count what its command got accepted
# once it is over, not within a fixed window
wait_until 60 gone $RA || { bad "the stale elk run was still running 60 s after resume"; kill -KILL $RA; }
wait $RA; rc=$?
accepted=$(awk '$2 == "gw-a" && $4 == "tick" && $5 == "accepted"' "$ACT_LOG" | wc -l)
started=$(awk '$2 == "gw-a" && $4 == "start"' "$ACT_LOG" | wc -l)
say "after resume: gw-a's command started $started time(s); actuator commands accepted from it while gw-b held the valve: $accepted"
figure stale_holder_commands_accepted "$accepted"
check "no actuator command from the stale holder accepted while gw-b holds the valve" 0 "$accepted"
check "the stale elk run reports the loss (75)" 75 $rc
kill -TERM $AB; wait $AB
finish
