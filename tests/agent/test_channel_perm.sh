#!/bin/bash
# SPDX-License-Identifier: MIT
# A lock user without the channel permission (`--print-acl`'s rule less `&elk:*`) and
# release_channel = on (issue 18): the server refuses a waiter's SUBSCRIBE with NOPERM. That
# refusal must be taken as SUBSCRIBE's answer, named in elkd's log, and must not be handed to
# another request (it shifted every later reply by one: the holder's renewals were answered
# with other requests' replies). The holder keeps its lease undisturbed, and the waiter falls
# back to its retry delay and gets the lease once it is released: a named error, not a hang.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
start_redis a
conf() { # conf GATEWAY -> $ELK_T_DIR/GATEWAY.conf, socket $ELK_T_DIR/GATEWAY.sock
  (umask 077; cat > "$ELK_T_DIR/$1.conf" <<CONF
[fleet]
mode = single
gateway_id = $1
key_prefix = elk:
$(acl_nodes a)
$(resource valve-1 3s 300ms)
wait_min = 100ms
wait_max = 200ms
release_channel = on
[agent]
socket = $ELK_T_DIR/$1.sock
CONF
  )
}
conf gw-a; conf gw-b
acl=$("$ELKD" -c "$ELK_T_DIR/gw-a.conf" --print-acl); check "--print-acl exits 0" 0 $?
check_contains "the printed rule grants the channel pattern" "&elk:*" "$acl"
acl=${acl//&elk:\*/}
acl=${acl//>PASSWORD/>s3cret-elk}
# shellcheck disable=SC2086 # one ACL argument per word
rcli "$REDIS_PORT_a" $acl >/dev/null
[ "$(rcli "$REDIS_PORT_a" ACL DRYRUN elk SUBSCRIBE 'elk:{valve-1}:released' | head -c 2)" != OK ]
check "the user may not subscribe to the release channel" 0 $?
sup_elkd "$ELK_T_DIR/gw-a.sock" "$ELK_T_DIR/gw-a.log" "$ELK_T_DIR/gw-a.conf"
sup_elkd "$ELK_T_DIR/gw-b.sock" "$ELK_T_DIR/gw-b.log" "$ELK_T_DIR/gw-b.conf"
ready() { voting "$ELK_T_DIR/$1.sock"; }
wait_until 60 ready gw-a || bad "gw-a's node ready"
wait_until 60 ready gw-b || bad "gw-b's node ready"

# gw-a's holder renews every second until gw-b's waiter has SUBSCRIBEd (refused), and a
# second more while the waiter retries; gw-b's own renewals and retries share the connection
# the refusal arrives on. The holder lets go on that event, not after a fixed time (a waiter
# slow to start on a loaded machine found the lease free and never subscribed), and a ttl of
# 3 s keeps a stall of a second from costing a lease the checks below say was never lost
# (1.5 s left about 0.7 s between a renewal and its deadline).
refused_sub() { grep -qi "subscribe.*noperm\|noperm.*subscribe\|subscribe refused" "$ELK_T_DIR/gw-b.log"; }
"$ELK" --socket "$ELK_T_DIR/gw-a.sock" run valve-1 -- sh -c "end=\$((\$(date +%s) + 60))
  while [ \$(date +%s) -lt \$end ] && ! grep -qi 'subscribe.*noperm\|noperm.*subscribe\|subscribe refused' '$ELK_T_DIR/gw-b.log'; do
    sleep 0.05; done; sleep 1" >"$ELK_T_DIR/holder.out" 2>&1 &
holder=$!
wait_until 30 file_has granted "$ELK_T_DIR/gw-a.log" || bad "gw-a granted"
"$ELK" --socket "$ELK_T_DIR/gw-b.sock" run --wait 90s valve-1 -- sleep 2.5 >"$ELK_T_DIR/waiter.out" 2>&1 &
waiter=$!
wait "$holder"; rc=$?
cat "$ELK_T_DIR/holder.out"
check "the holder's command ran to its end, lease never lost (exit 0)" 0 $rc
wait "$waiter"; rc=$?
cat "$ELK_T_DIR/waiter.out"
check "the waiter got the lease after the release and kept it (exit 0, no hang)" 0 $rc
grep -i "subscribe" "$ELK_T_DIR/gw-b.log" | head -3
refused_sub; check "gw-b's log names the refused SUBSCRIBE" 0 $?
! grep -q "LOST" "$ELK_T_DIR/gw-a.log" "$ELK_T_DIR/gw-b.log"
check "no lease was lost" 0 $?
finish
