#!/bin/bash
# SPDX-License-Identifier: MIT
# elk run --heartbeat (issue 20) against elkd and a real redis-server. A command that
# writes to $ELK_HEARTBEAT_FD keeps its lease across several TTLs (elk forwards the beats
# as KEEPALIVE; without them elkd would stop renewing after one interval). A hung command
# (sleeping, writing nothing) is stopped: SIGTERM, SIGKILL if it ignores that, the lease is
# released within one interval plus the TTL (another client then gets it; the bound read from
# elkd's log) and elk exits 75.
# Closing the descriptor is no miss by itself. When elk itself hangs, elkd stops renewing.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
elkd_up a <<CONF
request_timeout = 500ms
$(resource valve-1 3s 300ms)
$(agent_section)
log_level = debug
CONF
E() { "$ELK" --socket "$SOCK" "$@"; }
# ttl 3 s: about 1.7 s between a renewal and its deadline (2 s left about 1 s: a loaded
# machine's stall lost the lease the first case asserts is kept)
TTL_MS=3000 HB_MS=1000

# 1. Beats every 200 ms for 7 s (over two TTLs, seven renewals): the lease holds, the command
# ends itself. An interval of 3 s: a beat late by a second on a loaded machine is no miss.
E run --heartbeat 3s valve-1 -- sh -c "i=0; while [ \$i -lt 35 ]; do echo . >&\$ELK_HEARTBEAT_FD; sleep 0.2; i=\$((i+1)); done; touch $M/done" \
  2>"$ELK_T_DIR/beat.err"; rc=$?
check "a command that beats keeps its lease over two TTLs (exit 0)" 0 $rc
[ -e "$M/done" ]; check "it ran to its end" 0 $?

# 2. Closing the descriptor is no miss: the command closes it and ends within the interval
# (5 s: far more than its 0.3 s, however loaded the machine).
E run --heartbeat 5s valve-1 -- sh -c "eval \"exec \$ELK_HEARTBEAT_FD>&-\"; sleep 0.3; exit 5"; rc=$?
check "closing the heartbeat fd is no miss by itself (the command's own exit 5)" 5 $rc

# 3. A hung command that dies of SIGTERM. It notes when it starts to hang (no beat at all).
rm -f "$M"/*
n0=$(wc -l <"$ELK_T_DIR/elkd.log")
"$ELK" --socket "$SOCK" run --heartbeat 1s valve-1 -- sh -c "date +%s%3N > $M/t_hang; echo \$\$ > $M/pid; sleep 1000" 2>"$ELK_T_DIR/hung.err" &
R=$!
wait_for 30 '[ -s "$M/pid" ]'
t0=$(now_ms)
wait_until 60 gone $R; check "elk run ends when the heartbeat stops" 0 $?
kill -KILL $R 2>/dev/null # only if it hangs: it is still unreaped, the pid is its own
wait $R; rc=$?
check "exit 75 after a missed heartbeat" 75 $rc
E run valve-1 -- true 2>"$ELK_T_DIR/next.err"; rc=$?
t1=$(now_ms)
check "the lease was released: the next client gets it at once" 0 $rc
figure hung_release_ms $((t1 - t0))
# The bound, from elkd's own record: its line ending the lease (released, or LOST had elk
# run not released it) against the time the command started to hang. Measured here, the
# time also held the start of the next `elk run` and this shell's turns on a loaded machine.
end_line=$(tail -n +$((n0 + 1)) "$ELK_T_DIR/elkd.log" | grep -m1 ' valve-1: \(released (\|LOST\)')
echo "the lease's end in elkd's log: $end_line"
t_end=$(printf '%s\n' "$end_line" | log_ms)
t_hang=$(($(cat "$M/t_hang" 2>/dev/null || echo 0) % 86400000))
d=$(( ${t_end:-0} - t_hang ))
[ "$d" -lt -43200000 ] && d=$((d + 86400000)) # midnight between the two
figure hung_release_logged_ms "$d"
[ -n "$end_line" ] && [ "$d" -ge 0 ] && [ "$d" -le $((HB_MS + TTL_MS)) ]
check "elkd ended the lease within one interval plus the TTL of the hang ($d ms <= $((HB_MS + TTL_MS)) ms, its log)" 0 $?
pid=$(cat "$M/pid")
kill -0 "$pid" 2>/dev/null; check "the hung command is gone" 1 $?
err=$(cat "$ELK_T_DIR/hung.err")
check_contains "the miss is named" "heartbeat missed: sh wrote nothing to fd" "$err"

# 4. A hung command that ignores SIGTERM gets SIGKILL; the lease is still released.
rm -f "$M"/*
"$ELK" --socket "$SOCK" run --heartbeat 1s valve-1 -- sh -c "trap 'touch $M/term' TERM; echo \$\$ > $M/pid; while :; do sleep 0.05; done" \
  2>"$ELK_T_DIR/stubborn.err" &
R=$!
wait_for 30 '[ -s "$M/pid" ]'
wait_until 60 gone $R; check "elk run ends (stubborn command)" 0 $?
kill -KILL $R 2>/dev/null # only if it hangs: it is still unreaped, the pid is its own
wait $R; rc=$?
check "exit 75 (stubborn command)" 75 $rc
[ -e "$M/term" ]; check "the stubborn command got SIGTERM first" 0 $?
kill -0 "$(cat "$M/pid")" 2>/dev/null; check "the stubborn command is gone (SIGKILL)" 1 $?
E run valve-1 -- true 2>/dev/null; check "the lease was released after the stubborn command" 0 $?

# 5. elk itself hangs (SIGSTOP) while its command beats on: no KEEPALIVE reaches elkd, so
# elkd stops renewing (no zombie renewals) and the lease ends; without keepalive= elkd
# would renew it for as long as the stopped elk's socket takes its events (minutes).
rm -f "$M"/*
"$ELK" --socket "$SOCK" run --heartbeat 1s valve-1 -- sh -c "echo \$\$ > $M/pid; while :; do echo . >&\$ELK_HEARTBEAT_FD; sleep 0.1; done" \
  2>"$ELK_T_DIR/elkstop.err" &
R=$!
wait_for 30 '[ -s "$M/pid" ]'
kill -STOP $R
t0=$(now_ms)
wait_until 30 E run valve-1 -- true 2>/dev/null; check "with elk stopped, the lease ends: another client gets it" 0 $?
figure elk_stopped_release_ms $(($(now_ms) - t0))
# alive is false for a zombie (the stopped elk cannot reap its killed command)
alive "$(cat "$M/pid")"; check "the command of the stopped elk was stopped by elkd" 1 $?
kill -CONT $R
wait_until 60 gone $R
kill -KILL $R 2>/dev/null # only if it hangs: it is still unreaped, the pid is its own
wait $R; rc=$?
check "the resumed elk run exits 75" 75 $rc
finish
