#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 19: elkd tells a service manager over $NOTIFY_SOCKET (no libsystemd): READY=1 with
# STATUS= once the socket is bound and the fleet has a quorum, RELOADING=1 (with
# MONOTONIC_USEC) and READY=1 around a reload, WATCHDOG=1 while its loop turns (none while
# it is stopped past the watchdog timeout), STOPPING=1 at shutdown.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
N="$ELK_T_DIR/notify.sock" NLOG="$ELK_T_DIR/notify.log" PINGS="$ELK_T_DIR/pings"
start_redis a; start_redis b; start_redis c
{ fleet3_conf gw-notify n:; printf '[resource valve-1]\nttl = 3s\n[agent]\nsocket = %s\n' "$SOCK"; } > "$C"
python3 "$(dirname "$0")/notify_listen.py" "$N" "$NLOG" "$PINGS" &
track $!
wait_until 60 test -S "$N" || { echo "the notify listener did not start"; exit 1; }
pings() { cat "$PINGS" 2>/dev/null || echo 0; }
# WatchdogSec=1s: elkd pings every 500 ms.
NOTIFY_SOCKET="$N" WATCHDOG_USEC=1000000 start_elkd "$C"
wait_ready
wait_until 60 file_has '^READY=1' "$NLOG"
first=$(grep -m1 '^READY=1' "$NLOG")
check_contains "READY=1 with a status line" "READY=1|STATUS=" "$first"
check "READY=1 once the fleet has a quorum" "" "$(echo "$first" | grep 'no quorum')"

wait_for 60 '[ "$(pings)" -ge 2 ]'
n=$(pings); [ "$n" -ge 2 ]; check "WATCHDOG=1 pings while the loop turns ($n)" 0 $?

kill -HUP "$ELKD_PID"
wait_for 60 'grep -q "^RELOADING=1" "$NLOG" && [ "$(tail -n +2 "$NLOG" | grep -c "^READY=1")" -ge 1 ]'
check_contains "RELOADING=1 with MONOTONIC_USEC" "RELOADING=1|MONOTONIC_USEC=" "$(cat "$NLOG")"
check "READY=1 after the reload" 1 "$(sed -n '/^RELOADING=1/,$p' "$NLOG" | grep -c '^READY=1$')"

# A stalled loop (SIGSTOP for 3 s, three times WatchdogSec) sends no ping.
kill -STOP "$ELKD_PID"
# Everything elkd sent before the stop is taken in once a mark sent after it is: the socket
# keeps datagrams in order and the listener counts a ping before it reads the next one (a
# fixed 0.5 s for that was a window: a loaded listener may lag behind). elkd must be stopped
# for certain first (T in /proc), or a ping it is sending could land behind the mark.
stopped() { [ "$(sed -n 's/^.*) \(.\).*/\1/p' "/proc/$ELKD_PID/stat" 2>/dev/null)" = T ]; }
wait_until 60 stopped || bad "elkd stopped (SIGSTOP)"
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"MARK=1", sys.argv[1])' "$N"
wait_until 60 file_has '^MARK=1$' "$NLOG" || bad "the listener took in the mark"
before=$(pings)
sleep 3
after=$(pings)
check "no WATCHDOG=1 while the loop is stopped" "$before" "$after"
kill -CONT "$ELKD_PID"
wait_for 60 '[ "$(pings)" -gt "$after" ]'
[ "$(pings)" -gt "$after" ]; check "pings again once it runs" 0 $?

# STATUS= follows the leases.
E() { "$ELK" --socket "$SOCK" "$@"; }
E run valve-1 -- sh -c "end=\$((\$(date +%s) + 60)); while [ \$(date +%s) -lt \$end ]; do grep -q '1 lease held' '$NLOG' && exit 0; sleep 0.05; done; exit 1"
check "STATUS= says a lease is held" 0 $?

kill -TERM "$ELKD_PID"
wait "$ELKD_PID"
# elkd has sent it before it exits; the listener may not have logged it yet on a loaded
# machine (CI saw the log end before it): wait for the datagram, with a generous bound.
wait_until 60 file_has '^STOPPING=1' "$NLOG"
check_contains "STOPPING=1 at shutdown" "STOPPING=1" "$(cat "$NLOG")"
finish
