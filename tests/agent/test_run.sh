#!/bin/bash
# SPDX-License-Identifier: MIT
# elk run / acquire / release / status against elkd and a real 3-node Redlock fleet.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
elkd_up "a b c" <<CONF
$(redlock_section gw-test t:)
# TTLs well above the waits for a release below: a key gone within them was released,
# not left to expire, however slowly a loaded machine runs this
$(resource valve-1 10s 300ms)
$(resource door 10s 200ms)
$(agent_section)
log_level = debug
CONF
E() { "$ELK" --socket "$SOCK" "$@"; }

# The command runs with the lease, sees it in its environment and in Redis; its exit code is passed on.
out=$(E run valve-1 -- sh -c 'echo "$ELK_RESOURCE $ELK_FENCE_TOKEN $ELK_DEADLINE_MS"; for p in '"$REDIS_PORT_a $REDIS_PORT_b $REDIS_PORT_c"'; do redis-cli -p $p get "t:{valve-1}"; done; exit 7'); rc=$?
check "run passes on the command's exit code" 7 $rc
set -- $out
check "ELK_RESOURCE" valve-1 "$1"
[ "$2" -ge 1 ] 2>/dev/null; check "ELK_FENCE_TOKEN is a positive number ($2)" 0 $?
[ "$3" -gt 0 ] && [ "$3" -le 10000 ]; check "ELK_DEADLINE_MS within the ttl ($3)" 0 $?
# a grant needs a quorum (2 of 3); the third node may still be on its way
n=$(printf '%s\n' "$out" | grep -c "gw-test:")
[ "$n" -ge 2 ]; check "lock value in Redis (a quorum of nodes) while the command runs ($n of 3)" 0 $?
# the release is sent to every node; wait for it (well inside the 10 s TTL)
wait_for 8 '[ "$(rcli $REDIS_PORT_a exists "t:{valve-1}")" = 0 ]'
check "lock key gone after the run (node a)" 0 "$(rcli $REDIS_PORT_a exists 't:{valve-1}')"
wait_for 8 '[ "$(rcli $REDIS_PORT_c exists "t:{valve-1}")" = 0 ]'
check "lock key gone after the run (node c)" 0 "$(rcli $REDIS_PORT_c exists 't:{valve-1}')"

# Tokens only grow from one holder to the next.
prev=0; grew=0
for i in 1 2 3 4; do
  t=$(E run valve-1 -- sh -c 'echo $ELK_FENCE_TOKEN')
  if [ "$t" -gt "$prev" ]; then grew=$((grew + 1)); fi
  prev=$t
done
check "fencing tokens strictly increase over 4 holders" 4 $grew

# Contention: a second client gets BUSY at once, or the lease after waiting.
# The holder holds until told to let go (a fixed `sleep 2` let a loaded machine run the
# busy checks below after it had already ended).
"$ELK" --socket "$SOCK" run valve-1 -- sh -c "touch $ELK_T_DIR/holding; while [ ! -e $ELK_T_DIR/let-go ]; do sleep 0.02; done" &
H=$!
wait_until 60 test -e "$ELK_T_DIR/holding"
st=$(E status)
check_contains "status shows the lease held" "valve-1  held" "$st"
check_contains "status shows the holder pid" "pid:" "$st"
E run valve-1 -- true 2>"$ELK_T_DIR/busy.err"; rc=$?
check "busy resource: exit 73" 73 $rc
check_contains "busy message" "ELK_E_LOCK_BUSY" "$(cat "$ELK_T_DIR/busy.err")"
E run --wait 300ms valve-1 -- true 2>"$ELK_T_DIR/to.err"; rc=$?
check "local wait that runs out: exit 73" 73 $rc
check_contains "timeout reason" "ELK_E_LOCK_TIMEOUT" "$(cat "$ELK_T_DIR/to.err")"
check_contains "timeout names what stood in the way (the local holder)" "held by pid" "$(cat "$ELK_T_DIR/to.err")"
(sleep 0.5; touch "$ELK_T_DIR/let-go") &
t2=$(E run --wait 60s valve-1 -- sh -c 'echo $ELK_FENCE_TOKEN'); rc=$?
check "waiting client gets the lease after the holder" 0 $rc
[ "$t2" -gt "$prev" ] 2>/dev/null; check "waiter's token ($t2) above the previous holder's" 0 $?
wait $H; check "first holder exits 0" 0 $?

# A client that dies releases its lease.
"$ELK" --socket "$SOCK" acquire door > "$ELK_T_DIR/acq.out" &
A=$!
wait_for 30 'file_has acquired "$ELK_T_DIR/acq.out"'
check_contains "elk acquire prints the token" "acquired door token=" "$(cat "$ELK_T_DIR/acq.out")"
wait_for 8 '[ "$(rcli $REDIS_PORT_b exists "t:{door}")" = 1 ]' # b may be the third of the quorum
check "door locked on node b" 1 "$(rcli $REDIS_PORT_b exists 't:{door}')"
kill -KILL $A; wait $A 2>/dev/null
wait_for 8 '[ "$(rcli $REDIS_PORT_a exists "t:{door}")$(rcli $REDIS_PORT_b exists "t:{door}")$(rcli $REDIS_PORT_c exists "t:{door}")" = 000 ]'
check "killed client's lease released on every node (not left to expire)" 0 $?
E run door -- true; check "door free again" 0 $?

# elk acquire + SIGTERM releases cleanly.
"$ELK" --socket "$SOCK" acquire door > "$ELK_T_DIR/acq2.out" &
A=$!
wait_for 30 'file_has acquired "$ELK_T_DIR/acq2.out"'
kill -TERM $A; wait $A; check "elk acquire exits 0 on SIGTERM" 0 $?
check_contains "elk acquire reports the release" "released door" "$(cat "$ELK_T_DIR/acq2.out")"

# there is no 'elk release' (a lease belongs to its connection): it says how to release
"$ELK" --socket "$SOCK" acquire door > "$ELK_T_DIR/acq3.out" &
A=$!
wait_for 30 'file_has acquired "$ELK_T_DIR/acq3.out"'
out=$(E release door 2>&1); rc=$?
check "elk release: usage error" 64 $rc
check_contains "elk release: says how to release" "stop that 'elk acquire' or 'elk run'" "$out"
E status --json | grep -q "\"holder\":\"pid:$A\""; check "the holder's pid is in elk status" 0 $?
kill -TERM $A; wait $A

# Errors
E run nosuch -- true 2>/dev/null; check "unknown resource: exit 64" 64 $?
E run 'bad name' -- true 2>/dev/null; check "invalid resource name: exit 64" 64 $?
E run valve-1 -- /nonexistent/cmd 2>/dev/null; check "command not found: exit 127" 127 $?
E run valve-1 -- sh -c 'kill -TERM $$'; check "command killed by a signal: 128+15" 143 $?
E run valve-1 2>/dev/null; check "run without a command: exit 64" 64 $?
"$ELK" --socket "$ELK_T_DIR/none.sock" run valve-1 -- true 2>/dev/null; check "elkd unreachable: exit 69" 69 $?
E status --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["mode"]=="redlock" and len(d["nodes"])==3 and d["nodes"][0]["connected"]' 
check "status --json is valid JSON with nodes" 0 $?
finish
