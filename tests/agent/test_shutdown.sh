#!/bin/bash
# SPDX-License-Identifier: MIT
# SIGTERM to elkd: holders are told (EVENT SHUTDOWN), every lease is released in Redis,
# elkd exits 0 and removes its socket.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
elkd_up a <<CONF
$(resource r1 10s 300ms)
$(resource r2 10s 300ms)
$(agent_section)
CONF
"$ELK" --socket "$SOCK" acquire r1 > "$M/acq.out" &
A=$!
"$ELK" --socket "$SOCK" run r2 -- sh -c "trap 'touch $M/term; exit 0' TERM; touch $M/started; while :; do sleep 0.05; done" &
R=$!
wait_for 30 'file_has acquired "$M/acq.out" && [ -e "$M/started" ]'
check "r1 held in Redis" 1 "$(rcli $REDIS_PORT_a exists 'elk:{r1}')"
check "r2 held in Redis" 1 "$(rcli $REDIS_PORT_a exists 'elk:{r2}')"
kill -TERM $ELKD_PID
wait $ELKD_PID; check "elkd exits 0 after SIGTERM" 0 $?
wait $A; check "elk acquire exits 75 (agent stopped)" 75 $?
wait $R; check "elk run exits 75 (agent stopped)" 75 $?
check_contains "holder was told" "shutdown r1" "$(cat "$M/acq.out")"
[ -e "$M/term" ]; check "running command got SIGTERM" 0 $?
check "r1 released in Redis" 0 "$(rcli $REDIS_PORT_a exists 'elk:{r1}')"
check "r2 released in Redis" 0 "$(rcli $REDIS_PORT_a exists 'elk:{r2}')"
check "fencing counter kept" 1 "$(rcli $REDIS_PORT_a exists 'elk:{r1}:fence')"
[ ! -e "$SOCK" ]; check "control socket removed" 0 $?
grep -q "SIGTERM: stopping" "$ELK_T_DIR/elkd.log"; check "elkd logged the shutdown" 0 $?

# elkd killed outright: the command cannot trust its lease any more and is stopped.
start_elkd "$C"
wait_ready
rm -f "$M"/*
"$ELK" --socket "$SOCK" run r1 -- sh -c "trap 'touch $M/term; exit 0' TERM; touch $M/started; while :; do sleep 0.05; done" &
R=$!
wait_for 30 '[ -e "$M/started" ]'
kill -KILL $ELKD_PID; wait $ELKD_PID 2>/dev/null
wait $R; check "elk run exits 75 when elkd dies" 75 $?
[ -e "$M/term" ]; check "its command got SIGTERM" 0 $?
finish
