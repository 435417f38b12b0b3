#!/bin/bash
# SPDX-License-Identifier: MIT
# elk run against a scripted elkd (fake_elkd_events.py): what it does with the issue 20
# protocol, exactly and without a fleet. SUSPECT runs the --on-suspect hook; RECOVERED
# moves the deadline (the command outlives the deadline it had at SUSPECT time);
# --heartbeat acquires with keepalive=, forwards the command's writes as KEEPALIVE at most
# once per quarter interval, and after a missed interval sends no more of them, stops the
# command and releases.
ELK=$1
ELKD=unused
. "$(dirname "$0")/lib.sh"
SOCK="$ELK_T_DIR/fake.sock"
LOG="$ELK_T_DIR/fake.lines"

fake_elkd() { fake_elkd_start fake_elkd_events.py "$1"; }

# 1. SUSPECT, then RECOVERED: the hook runs, the command runs past the old deadline (4 s;
# RECOVERED at 1.5 s moves it to 7.5 s: seconds to spare either way on a loaded machine).
fake_elkd recover
"$ELK" --socket "$SOCK" run --on-suspect "echo hook-speaks; env | grep '^ELK_' | sort > $M/suspect.env" --on-lost "touch $M/lost" \
  valve-1 -- sh -c 'sleep 5; exit 0' >"$ELK_T_DIR/recover.out" 2>"$ELK_T_DIR/recover.err"; rc=$?
check "a recovered lease goes on past its old deadline: the command's own exit 0" 0 $rc
# elk's stdout may be the command's data: a hook speaks on stderr
check_contains "the hook's output is on elk's stderr" "hook-speaks" "$(cat "$ELK_T_DIR/recover.err")"
grep -q hook-speaks "$ELK_T_DIR/recover.out"; check "and not on its stdout" 1 $?
env=$(cat "$M/suspect.env" 2>/dev/null)
check_contains "--on-suspect ran: ELK_EVENT" "ELK_EVENT=suspect" "$env"
check_contains "--on-suspect: ELK_RESOURCE" "ELK_RESOURCE=valve-1" "$env"
check_contains "--on-suspect: ELK_TOKEN" "ELK_TOKEN=5" "$env"
left=$(echo "$env" | sed -n 's/^ELK_TIME_LEFT_MS=//p')
[ "${left:-0}" -gt 0 ] && [ "${left:-0}" -le 4000 ] 2>/dev/null
check "--on-suspect: ELK_TIME_LEFT_MS is the validity left (0 < ${left:-none} <= 4000)" 0 $?
[ -e "$M/lost" ]; check "--on-lost did not run" 1 $?
wait $FAKE_PID 2>/dev/null

# 2. Heartbeats: a burst of writes becomes few KEEPALIVEs, then the command hangs.
rm -f "$M"/*
fake_elkd keepalive
"$ELK" --socket "$SOCK" run --heartbeat 400ms valve-1 -- sh -c \
  "date +%s%3N > $M/t0; i=0; while [ \$i -lt 60 ]; do echo . >&\$ELK_HEARTBEAT_FD; sleep 0.02; i=\$((i+1)); done
   date +%s%3N > $M/t1; echo \$\$ > $M/pid; exec sleep 1000" 2>"$ELK_T_DIR/hb.err"; rc=$?
check "a hung command after its heartbeats: exit 75" 75 $rc
grep -q " ACQUIRE valve-1 0 keepalive=400$" "$LOG"; check "ACQUIRE carries keepalive=400" 0 $?
n=$(grep -c " KEEPALIVE valve-1$" "$LOG")
beat_ms=$(($(cat "$M/t1") - $(cat "$M/t0")))
# at most one per 100 ms while beating (+1 for the first, +1 for one carried after the end,
# +1 for the rounding of two clocks)
[ "$n" -ge 2 ] && [ "$n" -le $((beat_ms / 100 + 3)) ]
check "the beats were forwarded, rate-limited ($n KEEPALIVEs for 60 writes over $beat_ms ms)" 0 $?
last_ka=$(grep " KEEPALIVE " "$LOG" | tail -1 | cut -d' ' -f1)
rel=$(grep " RELEASE valve-1$" "$LOG" | cut -d' ' -f1)
[ -n "$rel" ] && [ "$rel" -ge "$last_ka" ]; check "released after the miss (after the last KEEPALIVE)" 0 $?
! kill -0 "$(cat "$M/pid")" 2>/dev/null; check "the hung command is gone" 0 $?
check_contains "the miss is named" "heartbeat missed: sh wrote nothing to fd" "$(cat "$ELK_T_DIR/hb.err")"
wait $FAKE_PID 2>/dev/null
finish
