#!/bin/bash
# SPDX-License-Identifier: MIT
# elk/agent_client.h (port/posix) against a real elkd on three plain redis-servers:
# the basic conversation, then a loss while held (the fleet SIGSTOPped): the helper must
# report the loss with the fleet's cause, and elkd's own log must show it.
# Usage: test_agent_client.sh ELKD ELK TEST_BINARY
ELKD=$1 ELK=$2 T=$3
. "$(dirname "$0")/../agent/lib.sh"
for n in a b c; do start_redis $n; done
{ fleet3_conf gw-agent-client elk:
  cat <<CONF
request_timeout = 200ms
connect_timeout = 300ms
[resource valve-1]
ttl = 3s
stop_margin = 500ms
wait_min = 20ms
wait_max = 50ms
[agent]
socket = $SOCK
log_level = debug
CONF
} >"$C"
start_elkd "$C"
wait_ready

"$T" "$SOCK" basic; check "basic conversation" 0 $?

M="$ELK_T_DIR/held"
"$T" "$SOCK" lose "$M" >"$ELK_T_DIR/lose.out" 2>&1 &
L=$!
track $L
wait_until 60 test -s "$M"; check "lease held (token written)" 0 $?
# shellcheck disable=SC2154 # REDIS_PID_x: set by start_redis (eval)
kill -STOP "$REDIS_PID_a" "$REDIS_PID_b" "$REDIS_PID_c"
wait $L; rc=$?
untrack $L
kill -CONT "$REDIS_PID_a" "$REDIS_PID_b" "$REDIS_PID_c"
cat "$ELK_T_DIR/lose.out"
check "the helper saw the loss with the fleet's cause" 0 $rc
token=$(cat "$M")
grep -E "LOST|lost" "$ELK_T_DIR/elkd.log" | grep -q "valve-1"
check_true "elkd logged the loss of valve-1 (token $token)" $?
finish
