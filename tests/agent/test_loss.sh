#!/bin/bash
# SPDX-License-Identifier: MIT
# Loss: when the fleet goes away, the command gets SIGTERM before the lease can have
# expired on the server, and SIGKILL when the stop margin is over if it ignores SIGTERM.
# The "before" is checked against the server's own expiry time (PEXPIRETIME), not a
# duration measured here.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
elkd_up a <<CONF
request_timeout = 200ms
$(resource valve-1 4s 1s)
# renew late enough that no renewal happens between reading the expiry and the crash
renew_fraction = 0.6
$(agent_section)
log_level = debug
CONF

"$ELK" --socket "$SOCK" run valve-1 -- sh -c "trap 'date +%s%3N > $M/term; exit 0' TERM; touch $M/started; while :; do sleep 0.05; done" &
R=$!
wait_for 30 '[ -e "$M/started" ]'
expire=$(rcli $REDIS_PORT_a pexpiretime 'elk:{valve-1}')
kill -KILL $REDIS_PID_a
wait $R; rc=$?
check "elk run exits 75 when the lease is lost" 75 $rc
[ -e "$M/term" ]; check "the command got SIGTERM" 0 $?
term=$(cat "$M/term" 2>/dev/null || echo 0)
[ "$expire" -gt 0 ] && [ "$term" -gt 0 ] && [ "$term" -lt "$expire" ]
check "SIGTERM ($term) came before the server-side expiry ($expire)" 0 $?

# Same again with a command that ignores SIGTERM: it is killed when the stop margin ends.
start_redis a2
sed -i "s/^port = .*/port = $REDIS_PORT_a2/" "$C"
kill -TERM $ELKD_PID; wait $ELKD_PID
start_elkd "$C"
wait_ready
rm -f "$M"/*
"$ELK" --socket "$SOCK" run valve-1 -- sh -c "trap 'touch $M/term' TERM; echo \$\$ > $M/pid; while :; do sleep 0.05; done" &
R=$!
wait_for 30 '[ -s "$M/pid" ]'
cmdpid=$(cat "$M/pid")
kill -KILL $REDIS_PID_a2
wait $R; rc=$?
check "elk run exits 75 (stubborn command)" 75 $rc
[ -e "$M/term" ]; check "stubborn command was sent SIGTERM first" 0 $?
kill -0 "$cmdpid" 2>/dev/null; check "stubborn command is gone (SIGKILL after the stop margin)" 1 $?
grep -q "LOST" "$ELK_T_DIR/elkd.log"; check "elkd logged the loss" 0 $?
finish
