#!/bin/bash
# SPDX-License-Identifier: MIT
# elk run --on-lost / --hook-timeout (issue 20) against elkd and a real redis-server: when
# the fleet goes away the --on-lost hook runs with the lease in its environment (and elk
# waits for it before it exits), the command is still stopped as before (exit 75), and a
# hook that hangs and ignores SIGTERM is killed at its timeout and reported.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
elkd_up a <<CONF
request_timeout = 200ms
$(resource valve-1 4s 1s)
$(agent_section)
log_level = debug
CONF
DRIVE="trap 'exit 0' TERM; echo \$ELK_FENCE_TOKEN > $M/token; touch $M/started; while :; do sleep 0.05; done"

# fresh_fleet: a new redis-server in place of the killed one, elkd restarted on it
fresh_fleet() {
  start_redis "$1"
  eval "sed -i \"s/^port = .*/port = \$REDIS_PORT_$1/\" \"\$C\""
  kill -TERM $ELKD_PID; wait $ELKD_PID
  start_elkd "$C"
  wait_ready
  rm -f "$M"/*
}

# run_lose NAME REDIS_PID OPTION...: elk run OPTION... valve-1 -- $DRIVE in the background
# (stderr to $ELK_T_DIR/NAME.err); once the command has started, the fleet's one server
# (REDIS_PID) is killed. ended: 0 if elk ended by itself within 60 s; rc: its exit status.
run_lose() {
  local name=$1 rpid=$2
  shift 2
  "$ELK" --socket "$SOCK" run "$@" valve-1 -- sh -c "$DRIVE" 2>"$ELK_T_DIR/$name.err" &
  R=$!
  wait_for 30 '[ -e "$M/started" ]'
  kill -KILL "$rpid"
  wait_until 60 gone $R
  ended=$?
  kill -KILL $R 2>/dev/null # only if it hangs: it is still unreaped, the pid is its own
  wait $R
  rc=$?
}

# 1. --on-lost: runs on the loss with ELK_EVENT, ELK_RESOURCE, ELK_TOKEN, ELK_TIME_LEFT_MS.
run_lose run1 "$REDIS_PID_a" --on-lost "sleep 0.5; env | grep '^ELK_' | sort > $M/lost.tmp; mv $M/lost.tmp $M/lost.env"
check "elk run ends after the loss" 0 $ended
check "elk run exits 75 when the lease is lost (the hook changes nothing there)" 75 $rc
# elk waits for its hooks before it exits (the hook takes 0.5 s, the command ends at once
# on SIGTERM): the file is there now, not later
[ -s "$M/lost.env" ]; check "the --on-lost hook ran (and elk waited for it)" 0 $?
env=$(cat "$M/lost.env" 2>/dev/null)
check_contains "hook: ELK_EVENT=lost" "ELK_EVENT=lost" "$env"
check_contains "hook: ELK_RESOURCE" "ELK_RESOURCE=valve-1" "$env"
check_contains "hook: ELK_TOKEN is the lease's token" "ELK_TOKEN=$(cat "$M/token" 2>/dev/null)" "$env"
echo "$env" | grep -q '^ELK_TIME_LEFT_MS=[0-9][0-9]*$'; check "hook: ELK_TIME_LEFT_MS is a number" 0 $?
echo "$env" | grep -q '^ELK_HEARTBEAT_FD='; check "hook: no heartbeat fd without --heartbeat" 1 $?
check_contains "the command was still stopped" "sending SIGTERM to the command" "$(cat "$ELK_T_DIR/run1.err")"

# 2. --hook-timeout: a hook that hangs and ignores SIGTERM is killed, and said so; elk still ends.
fresh_fleet a2
run_lose run2 "$REDIS_PID_a2" --hook-timeout 300ms --on-lost "echo \$\$ > $M/hook.pid; trap '' TERM; while :; do sleep 0.05; done"
check "elk run ends although its hook hangs" 0 $ended
check "elk run exits 75" 75 $rc
hook=$(cat "$M/hook.pid" 2>/dev/null || echo 0)
[ "$hook" -gt 1 ] && ! kill -0 "$hook" 2>/dev/null; check "the hanging hook ($hook) is gone" 0 $?
err=$(cat "$ELK_T_DIR/run2.err")
check_contains "the overrun is reported with what to do" "did not finish within --hook-timeout (300 ms)" "$err"
check_contains "it needed SIGKILL" "stopped (SIGKILL)" "$err"

# 3. Bad options are usage errors.
"$ELK" --socket "$SOCK" run --hook-timeout 0 valve-1 -- true 2>/dev/null; check "--hook-timeout 0: exit 64" 64 $?
"$ELK" --socket "$SOCK" run --on-lost= valve-1 -- true 2>/dev/null; check "--on-lost without a command: exit 64" 64 $?
"$ELK" --socket "$SOCK" run --heartbeat 10ms valve-1 -- true 2>/dev/null; check "--heartbeat below 100ms: exit 64" 64 $?
"$ELK" --socket "$SOCK" acquire --on-lost true valve-1 2>/dev/null; check "acquire has no hooks: exit 64" 64 $?
finish
