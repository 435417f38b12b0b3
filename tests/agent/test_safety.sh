#!/bin/bash
# SPDX-License-Identifier: MIT
# The server safety check fails closed (issue 18), with the least-privilege ACL user that
# `elkd --print-acl` prints: under safety_check = refuse a node with an eviction policy, or
# one whose user may not run INFO (NOPERM), gets no vote; STATUS says which and why; the
# lease then needs the other nodes, and a node that is fixed votes again after reconnecting.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
start_redis a; start_redis b; start_redis c
(umask 077; cat > "$C" <<CONF
[fleet]
mode = redlock
key_prefix = elk:
$(acl_nodes "a b c")
$(resource valve-1 3s 300ms)
$(agent_section)
safety_check = refuse
CONF
)
acl=$("$ELKD" -c "$C" --print-acl); check "--print-acl exits 0" 0 $?
echo "$acl"
check_contains "--print-acl: key pattern from key_prefix" "~elk:* &elk:*" "$acl"
case "$acl" in *s3cret*) bad "--print-acl printed the password" ;; *) ok "--print-acl prints no secret" ;; esac
# exactly that rule, with the password put in (word splitting on purpose: one ACL argument each)
for n in a b c; do
  port=$(eval echo "\$REDIS_PORT_$n")
  # shellcheck disable=SC2086
  rcli "$port" ${acl//>PASSWORD/>s3cret-elk} >/dev/null
done
rcli "$REDIS_PORT_c" ACL SETUSER elk -info >/dev/null               # c: INFO refused (NOPERM)
rcli "$REDIS_PORT_b" CONFIG SET maxmemory-policy allkeys-lru >/dev/null  # b: evicts keys
start_elkd "$C"
checked() { local st; st=$("$ELK" --socket "$SOCK" status --json) || return 1; case "$st" in *'"check":"pending"'*) return 1 ;; esac; }
wait_until 60 checked
# vote hygiene: a just-started server has no vote until its quarantine is over
hygiene_done() { ! "$ELK" --socket "$SOCK" status --json | grep -Eq '"hygiene":"pending"|"quarantined_ms":[1-9]'; }
wait_until 60 hygiene_done
st=$("$ELK" --socket "$SOCK" status --json)
echo "$st"
echo "$st" | grep -q '"name":"a",[^}]*"votes":true,"check":"ok"'; check "node a checked ok and votes" 0 $?
check_contains "node b: unsafe, no vote, the reason" '"votes":false,"check":"unsafe: maxmemory-policy allkeys-lru"' "$st"
check_contains "node c: cannot be checked (NOPERM), no vote" '"votes":false,"check":"unchecked: ' "$st"
txt=$("$ELK" --socket "$SOCK" status)
echo "$txt"
check_contains "text status shows the check with its spaces" "unsafe: maxmemory-policy allkeys-lru" "$txt"
grep -q "node 127.0.0.1:$REDIS_PORT_c: refused, no vote: safety check impossible" "$ELK_T_DIR/elkd.log"
check "elkd logged why c has no vote" 0 $?
out=$("$ELK" --socket "$SOCK" run valve-1 -- true 2>&1); rc=$?
check "one voting node of three: fleet unreachable (76)" 76 $rc
echo "$out"
for n in b c; do
  port=$(eval echo "\$REDIS_PORT_$n")
  [ "$(rcli "$port" EXISTS 'elk:{valve-1}')" = 0 ]; check "no lock key written on $n (no vote, no request)" 0 $?
done
# b fixed; its connection dropped: it is checked again on reconnect and votes.
rcli "$REDIS_PORT_b" CONFIG SET maxmemory-policy noeviction >/dev/null
rcli "$REDIS_PORT_b" CLIENT KILL USER elk >/dev/null
b_votes() { "$ELK" --socket "$SOCK" status --json | grep -q '"name":"b",[^}]*"votes":true'; }
wait_until 60 b_votes
"$ELK" --socket "$SOCK" status --json | grep -q '"name":"b",[^}]*"votes":true,"check":"ok"'
check "b votes again once safe" 0 $?
"$ELK" --socket "$SOCK" run valve-1 -- sh -c "redis-cli -p $REDIS_PORT_a EXISTS 'elk:{valve-1}' > $ELK_T_DIR/on-a;
  redis-cli -p $REDIS_PORT_b EXISTS 'elk:{valve-1}' > $ELK_T_DIR/on-b; redis-cli -p $REDIS_PORT_c EXISTS 'elk:{valve-1}' > $ELK_T_DIR/on-c"
check "two voting nodes of three (a, b): acquired with the ACL user" 0 $?
check "the lease is on a" 1 "$(cat "$ELK_T_DIR/on-a")"
check "the lease is on b" 1 "$(cat "$ELK_T_DIR/on-b")"
check "never on c, which has no vote" 0 "$(cat "$ELK_T_DIR/on-c")"
finish
