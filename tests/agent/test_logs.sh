#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 19: logs worth keeping. With nodes down, one warning per node, then at most one
# summary per log_summary interval (1 s here, 60 s by default), one line when a node is
# back; renewals at debug; grant and release with token and durations; <N> priority
# prefixes when stderr is the journal.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
L="$ELK_T_DIR/elkd.log"
start_redis a; start_redis b; start_redis c
{ fleet3_conf gw-logs l:; printf '[resource valve-1]\nttl = 3s\n[agent]\nsocket = %s\nlog_summary = 1s\n' "$SOCK"; } > "$C"
# stderr is "the journal": JOURNAL_STREAM names the log file's device and inode.
touch "$L"
JOURNAL_STREAM=$(stat -c '%d:%i' "$L") start_elkd "$C"
wait_ready
E() { "$ELK" --socket "$SOCK" "$@"; }

# A lease over a renewal or two: grant and release lines, no renewal line at info.
E run valve-1 -- sleep 2
check "grant logged with token and wait" 1 "$(grep -c 'valve-1: granted to client .* token [0-9]*, valid [0-9]* ms, waited [0-9]* ms' "$L")"
check "release logged with token, hold time and renewals" 1 "$(grep -c 'valve-1: released (its client asked), token [0-9]*, held [0-9]* ms, [0-9]* renewals\?' "$L")"
check "no renewal at info" 0 "$(grep -ci 'renewed' "$L")"
check_contains "journal priority prefix on info lines" "<6>info elkd: valve-1: granted" "$(cat "$L")"

# Two nodes down for 6 s (6 summary intervals): each warned once, summaries at most once
# per second and node, and their reconnect attempts at debug.
start=$(wc -l < "$L")
kill -KILL "$REDIS_PID_b" "$REDIS_PID_c"
sleep 6
window=$(tail -n +$((start + 1)) "$L")
n=$(printf '%s\n' "$window" | grep -c .)
echo "lines logged in 6 s with 2 of 3 nodes down: $n"
printf '%s\n' "$window" | sed 's/^/  | /'
check "each node's going down is one warning" 2 "$(printf '%s\n' "$window" | grep -c ' down: ')"
check_contains "a warning carries the journal prefix" "<4>warn " "$window"
check_contains "summary line" "still down after" "$window"
# 2 down lines + at most 2 x 7 summaries (one per node and started second)
[ "$n" -le 16 ]; check "at most 16 lines in 6 s (got $n)" 0 $?

# One line when a node is back.
redis-server --port "$REDIS_PORT_b" --bind 127.0.0.1 --save '' --appendonly no --dir "$ELK_T_DIR" \
  --logfile "$ELK_T_DIR/redis-b2.log" >/dev/null 2>&1 &
track $!
wait_until 60 file_has 'node b .* is back after' "$L"
check "node b is back: one line" 1 "$(grep -c 'node b .* is back after' "$L")"
finish
