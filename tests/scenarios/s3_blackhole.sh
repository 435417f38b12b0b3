#!/bin/bash
# SPDX-License-Identifier: MIT
# Scenario 3: a majority of the fleet is blackholed while a lease is held and renewed.
# 3 redis-server, each behind its own elk-faultproxy; the agent talks to the proxies only.
# Once `elk run` holds the lease, 2 of 3 proxies start swallowing everything (no replies,
# no RST): renewals cannot reach a quorum. The agent must send EVENT LOST and the command
# SIGTERM before the lease can have expired on the servers. Measured: time from blackhole
# to SIGTERM, against the TTL and against the key's remaining PTTL on the reachable node.
# usage: s3_blackhole.sh ELKD ELK FAULTPROXY
ELKD=$1 ELK=$2 FAULTPROXY=$3
. "$(dirname "$0")/lib.sh"
# The stop margin is the command's time to run its SIGTERM handler before SIGKILL: 500 ms
# was not enough on a loaded machine (load 19 on 2 cores) for the check that it ran.
TTL=3000 STOP=1000
proxied_fleet
gateway gw-a redlock "${PPORT[p1]} ${PPORT[p2]} ${PPORT[p3]}" "[resource valve]
ttl = ${TTL}ms
stop_margin = ${STOP}ms
renew_fraction = 1/3"
act_init

elk_gw gw-a run valve -- "$WORK" gw-a 0 0.05 >"$S_DIR/run-a.log" 2>&1 &
R=$!
track $R
wait_until 30 file_has ' tick accepted' "$ACT_LOG"
grep -q ' tick accepted' "$ACT_LOG"; check_true "gw-a holds the lease and drives the actuator" $?
# Let one renewal happen first, so the blackhole hits a lease that is being kept alive.
wait_for 30 '[ "$(res_field gw-a valve renewals)" -ge 1 ] 2>/dev/null'
t_bh=$(now_ms)
pctl p2 blackhole >/dev/null
pctl p3 blackhole >/dev/null
pttl_bh=$(rcli r1 pttl 'scen:{valve}')
exp1=$(rcli r1 pexpiretime 'scen:{valve}')
exp2=$(rcli r2 pexpiretime 'scen:{valve}')
exp3=$(rcli r3 pexpiretime 'scen:{valve}')
say "blackholed 2 of 3 nodes at $t_bh; key PTTL on the reachable node: $pttl_bh ms"

wait $R
rc=$?
untrack $R
check "elk run exits 75 (lease lost, command stopped)" 75 $rc
t_stop=$(awk '$4 == "stop" {print substr($1, 1, 13)}' "$ACT_LOG" | tail -1)
[ -n "$t_stop" ]; check_true "the command was told to stop (its SIGTERM handler ran)" $?
t_stop=${t_stop:-0}
grep -q "LOST" "$S_DIR/elkd-gw-a.log"; check_true "elkd logged LOST" $?
grep -Eiq "lease lost|deadline passed" "$S_DIR/run-a.log"; check_true "elk run stopped the command on the loss (EVENT LOST or its own copy of the deadline)" $?
min_exp=$exp1
for e in $exp2 $exp3; do [ "$e" -gt 0 ] && [ "$e" -lt "$min_exp" ] && min_exp=$e; done
[ "$t_stop" -gt 0 ] && [ "$t_stop" -lt "$min_exp" ]
check_true "SIGTERM ($t_stop) before the earliest server-side expiry ($min_exp)" $?
last_tick=$(awk '$4 == "tick" {print substr($1, 1, 13)}' "$ACT_LOG" | tail -1)
[ "$last_tick" -lt "$min_exp" ]; check_true "last actuator command before the lease could expire" $?
figure ttl_ms $TTL
figure stop_margin_ms $STOP
figure blackhole_to_sigterm_ms $((t_stop - t_bh))
figure pttl_at_blackhole_ms "$pttl_bh"
figure sigterm_before_server_expiry_ms $((min_exp - t_stop))
figure last_tick_before_server_expiry_ms $((min_exp - last_tick))
# The reachable node: the lease is still there until its own expiry (nobody else got it).
owner=$(rcli r1 get 'scen:{valve}')
say "key on the reachable node after the loss: '${owner}'"
act_check --tag s3; check "actuator log: no overlap, no stale accept" 0 $?
finish
