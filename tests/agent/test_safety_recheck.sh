#!/bin/bash
# SPDX-License-Identifier: MIT
# The server safety check is repeated while connected (issue 26): a voting node switched to
# an eviction policy with CONFIG SET loses its vote under safety_check = refuse within the
# bound `elkd --check` states (the recheck interval, half the shortest ttl, plus the request
# timeout), said once in the log; STATUS's check= and votes= follow; fixed, it votes again.
# The delay is measured on elkd's own log timestamps: from the last log line before the
# CONFIG SET (a client's close, at debug level) to the line that takes the vote.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
start_redis a; start_redis b; start_redis c
{ fleet3_conf gw-recheck rc:
  printf '[resource valve]\nttl = 4s\nstop_margin = 200ms\n'
  printf '[agent]\nsocket = %s\nsafety_check = refuse\nlog_level = debug\n' "$SOCK"
} > "$C"
LOG="$ELK_T_DIR/elkd.log"
E() { "$ELK" --socket "$SOCK" "$@"; }

out=$("$ELKD" -c "$C" --check); check "elkd --check passes" 0 $?
echo "$out"
bound=$(echo "$out" | sed -n 's/.*again every \([0-9]*\) ms on each connected node.* refused its vote within \([0-9]*\) ms.*/\2/p')
every=$(echo "$out" | sed -n 's/.*again every \([0-9]*\) ms on each connected node.*/\1/p')
check "--check states the recheck interval: half the ttl" 2000 "$every"
check "--check states the bound: interval + request timeout" 3000 "$bound"

start_elkd "$C"
wait_ready
b_votes() { E status --json | grep -q "\"name\":\"b\",[^}]*\"votes\":$1"; }
wait_until 30 b_votes true; check_true "b votes to begin with" $?

E status >/dev/null                     # its close is the last line before the change
t_before=$(grep ' closed: ' "$LOG" | tail -1 | log_ms)
rcli "$REDIS_PORT_b" CONFIG SET maxmemory-policy allkeys-lru >/dev/null
E status >/dev/null
t_after=$(grep ' closed: ' "$LOG" | tail -1 | log_ms)
wait_until 60 b_votes false; check_true "b lost its vote while connected (no reconnect)" $?
st=$(E status --json)
check_contains "STATUS JSON: b's check says why" '"votes":false,"check":"unsafe: maxmemory-policy allkeys-lru"' "$st"
txt=$(E status)
echo "$txt"
echo "$txt" | grep -Eq '^ +b +127\.0\.0\.1:[0-9]+ +ready .* no +ok +unsafe: maxmemory-policy allkeys-lru *$'
check_true "STATUS text: b votes no, its check changed" $?
line=$(grep -m1 " error lock: node 127.0.0.1:$REDIS_PORT_b: changed while connected: refused, no vote:" "$LOG")
echo "$line"
[ -n "$line" ]; check_true "elkd logged the change with the reason" $?
check_contains "the line names the policy" "now allkeys-lru" "$line"
t_lost=$(echo "$line" | log_ms)
[ -z "$line" ] && t_lost=$((t_before + 99999999)) # never: fails the bound below
d_max=$((t_lost - t_before)); d_min=$((t_lost - t_after))
[ "$d_max" -lt 0 ] && d_max=$((d_max + 86400000)) && d_min=$((d_min + 86400000)) # midnight
figure vote_gone_after_config_set_ms "$d_min..$d_max"
figure stated_bound_ms "$bound"
[ "$d_max" -ge 0 ] && [ "$d_max" -le "$bound" ]
check_true "vote gone within the stated bound: at most $d_max ms after the CONFIG SET (bound $bound ms)" $?
[ "$(grep -c 'changed while connected' "$LOG")" = 1 ]; check_true "said once" $?
# no reconnect of b made the difference: its connects stayed at 1
echo "$st" | grep -q '"name":"b",[^}]*"connects":1,'; check_true "b's connection is the first one" $?

# a lease needs a and c now, and no request reaches b
E run valve -- sh -c "redis-cli -p $REDIS_PORT_b EXISTS 'rc:{valve}' > $ELK_T_DIR/on-b"
check "a and c grant the lease" 0 $?
check "nothing written on b" 0 "$(cat "$ELK_T_DIR/on-b")"

# fixed: it votes again at the next recheck, without a reconnect
rcli "$REDIS_PORT_b" CONFIG SET maxmemory-policy noeviction >/dev/null
wait_until 60 b_votes true; check_true "b votes again once safe" $?
grep -q " warn lock: node 127.0.0.1:$REDIS_PORT_b: changed while connected: safe again" "$LOG"
check_true "elkd logged that b is safe again" $?
E status --json | grep -q '"name":"b",[^}]*"votes":true,"check":"ok"'; check_true "check=ok again" $?
finish
