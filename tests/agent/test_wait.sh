#!/bin/bash
# SPDX-License-Identifier: MIT
# elk acquire/run --wait against a fleet that is down: the wait times out, and the answer
# names what stood in the way (the last round's cause), not only ELK_E_LOCK_TIMEOUT.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
# three ports nothing listens on (taken and closed again): every connect is refused
P1=$(free_port) P2=$(free_port) P3=$(free_port)
cat > "$C" <<CONF
[fleet]
mode = redlock
gateway_id = gw-wait
connect_timeout = 200ms
[node a]
host = 127.0.0.1
port = $P1
[node b]
host = 127.0.0.1
port = $P2
[node c]
host = 127.0.0.1
port = $P3
$(resource valve-1 3s 300ms)
wait_min = 20ms
wait_max = 50ms
$(agent_section)
CONF
start_elkd "$C"
wait_for 30 '[ -S "$SOCK" ]'

"$ELK" --socket "$SOCK" acquire --wait 700ms valve-1 >"$ELK_T_DIR/acq.out" 2>"$ELK_T_DIR/acq.err"; rc=$?
check "acquire --wait with the fleet down: exit 76 (fleet unreachable)" 76 $rc
err=$(cat "$ELK_T_DIR/acq.err")
check_contains "the wait timed out" "ELK_E_LOCK_TIMEOUT" "$err"
check_contains "the last round's cause is named" "last round: ELK_E_FLEET_UNAVAILABLE" "$err"
check_contains "with the node counts" "of 3 nodes ready" "$err"
check "nothing printed as acquired" "" "$(cat "$ELK_T_DIR/acq.out")"

"$ELK" --socket "$SOCK" run --wait 500ms valve-1 -- true 2>"$ELK_T_DIR/run.err"; rc=$?
check "run --wait with the fleet down: exit 76" 76 $rc
check_contains "run names the last round's cause too" "last round: ELK_E_FLEET_UNAVAILABLE" "$(cat "$ELK_T_DIR/run.err")"

# one attempt (no --wait) still gets the plain cause
"$ELK" --socket "$SOCK" acquire valve-1 >/dev/null 2>"$ELK_T_DIR/once.err"; rc=$?
check "one attempt with the fleet down: exit 76" 76 $rc
check_contains "one attempt names the cause" "ELK_E_FLEET_UNAVAILABLE" "$(cat "$ELK_T_DIR/once.err")"
kill -TERM $ELKD_PID; wait $ELKD_PID
finish
