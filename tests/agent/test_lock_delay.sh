#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 20, elkd side: a resource's lock_delay reaches the servers. While held, the marker
# <key>:delay outlives the lease by lock_delay (PTTL between ttl and ttl + lock_delay); a
# clean RELEASE deletes it; after an unclean end (elkd killed while holding) nobody gets
# the resource while it stands (ELK_E_LOCK_DELAY), and a waiting ACQUIRE gets it once it
# has gone.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
session() { python3 "$(dirname "$0")/ctl_session.py" "$SOCK"; }
# ttl 3 s: the hold below lasts 4 s and must end in a clean RELEASE; at 2 s a stall of
# about a second between a renewal and its deadline lost it.
elkd_up a <<CONF
$(resource valve-1 3s 200ms)
lock_delay = 6s
$(agent_section)
CONF
KEY='elk:{valve-1}'
pa=$REDIS_PORT_a
pttl() { rcli "$pa" pttl "$1"; }

session >"$ELK_T_DIR/held.out" <<'S' &
ask acquired ACQUIRE valve-1 30s
pause 4
ask released RELEASE valve-1
pause 1
S
sp=$!
track $sp
wait_for 40 'file_has "acquired ->" "$ELK_T_DIR/held.out"'
check_contains "granted" "acquired -> OK ACQUIRED valve-1 " "$(cat "$ELK_T_DIR/held.out")"
kt=$(pttl "$KEY") mt=$(pttl "$KEY:delay")
echo "while held: PTTL $KEY = $kt, $KEY:delay = $mt"
[ "$kt" -gt 0 ] && [ "$kt" -le 3000 ]; check "the lease key lives at most the ttl (PTTL $kt)" 0 $?
[ "$mt" -gt 3000 ] && [ "$mt" -le 9000 ]; check "the marker lives longer than the ttl, at most ttl + lock_delay (PTTL $mt)" 0 $?
wait_until 60 gone $sp
check_contains "clean RELEASE" "released -> OK RELEASED valve-1" "$(cat "$ELK_T_DIR/held.out")"
check "a clean release deletes the marker" 0 "$(rcli "$pa" exists "$KEY:delay")"

# Unclean end: elkd dies holding the lease; the next grant waits for the marker.
session >"$ELK_T_DIR/crash.out" <<'S' &
ask acquired ACQUIRE valve-1 30s
pause 30
S
sp=$!
track $sp
wait_for 40 'file_has "acquired ->" "$ELK_T_DIR/crash.out"'
check_contains "granted again" "acquired -> OK ACQUIRED valve-1 " "$(cat "$ELK_T_DIR/crash.out")"
kill -KILL "$ELKD_PID"; wait "$ELKD_PID" 2>/dev/null; untrack "$ELKD_PID"
wait_until 30 gone $sp
start_elkd "$C"
wait_ready
# the lease key expires at its ttl; the marker stands lock_delay longer
wait_for 30 '[ "$(rcli "$pa" exists "$KEY")" = 0 ]'; check "the dead holder's key expired" 0 $?
mt=$(pttl "$KEY:delay")
echo "after the key expired: PTTL $KEY:delay = $mt"
[ "$mt" -gt 3000 ]; check "the marker still stands (PTTL $mt)" 0 $?
out=$(printf 'ask refused ACQUIRE valve-1 1500ms\n' | session)
echo "$out"
check_contains "no grant while the marker stands" "ELK_E_LOCK_DELAY" "$out"
out=$(printf 'ask waited ACQUIRE valve-1 30s\n' | session)
echo "$out"
check_contains "a waiting ACQUIRE gets it once the marker is gone" "waited -> OK ACQUIRED valve-1 " "$out"
finish
