#!/bin/bash
# SPDX-License-Identifier: MIT
# A lease's key stays in Redis until its stop_margin has passed, measured on real
# servers: after SIGTERM to elkd (the holder stays connected and is told SHUTDOWN), and
# after a loss (a majority of the fleet stopped; the key is read on the node left up).
# keep_key.py reads the key from the test itself; its bounds are safety bounds only.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
KEEP="python3 $(dirname "$0")/keep_key.py"
elkd_up a <<CONF
$(resource r1 10s 1500ms)
$(agent_section)
CONF
$KEEP shutdown "$SOCK" r1 "$REDIS_PORT_a" 'elk:{r1}' "$ELKD_PID" 1500
check "shutdown: key kept until stop_margin, then released" 0 $?
wait $ELKD_PID; check "elkd exits 0 after SIGTERM" 0 $?

# Loss: three nodes, two stopped (SIGSTOP) right after the lease was granted.
start_redis b
start_redis c
start_redis d
cat > "$C" <<CONF
[fleet]
mode = redlock
[node b]
host = 127.0.0.1
port = $REDIS_PORT_b
request_timeout = 300ms
[node c]
host = 127.0.0.1
port = $REDIS_PORT_c
request_timeout = 300ms
[node d]
host = 127.0.0.1
port = $REDIS_PORT_d
request_timeout = 300ms
$(resource r1 4s 1500ms)
$(agent_section)
CONF
start_elkd "$C"
wait_ready
$KEEP loss "$SOCK" r1 "$REDIS_PORT_d" 'elk:{r1}' "$ELKD_PID" 1500 "$REDIS_PID_b" "$REDIS_PID_c"
check "loss: key kept until stop_margin after the deadline, then released or expired" 0 $?
kill -CONT "$REDIS_PID_b" "$REDIS_PID_c"
finish
