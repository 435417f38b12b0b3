#!/bin/bash
# elk run / acquire / release / status against elkd and a real 3-node Redlock fleet.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
SOCK="$ELK_T_DIR/elkd.sock"
C="$ELK_T_DIR/elkd.conf"
start_redis a; start_redis b; start_redis c
cat > "$C" <<CONF
[fleet]
mode = redlock
gateway_id = gw-test
key_prefix = t:
[node a]
host = 127.0.0.1
port = $REDIS_PORT_a
[node b]
host = 127.0.0.1
port = $REDIS_PORT_b
[node c]
host = 127.0.0.1
port = $REDIS_PORT_c
[resource valve-1]
ttl = 3s
stop_margin = 300ms
[resource door]
ttl = 2s
stop_margin = 200ms
[agent]
socket = $SOCK
log_level = debug
CONF
start_elkd "$C"
wait_ready
E() { "$ELK" --socket "$SOCK" "$@"; }

# The command runs with the lease, sees it in its environment and in Redis; its exit code is passed on.
out=$(E run valve-1 -- sh -c 'echo "$ELK_RESOURCE $ELK_FENCE_TOKEN $ELK_DEADLINE_MS"; redis-cli -p '"$REDIS_PORT_a"' get "t:{valve-1}"; exit 7'); rc=$?
check "run passes on the command's exit code" 7 $rc
set -- $out
check "ELK_RESOURCE" valve-1 "$1"
[ "$2" -ge 1 ] 2>/dev/null; check "ELK_FENCE_TOKEN is a positive number ($2)" 0 $?
[ "$3" -gt 0 ] && [ "$3" -le 3000 ]; check "ELK_DEADLINE_MS within the ttl ($3)" 0 $?
check_contains "lock value in Redis while the command runs" "gw-test:" "$4"
check "lock key gone after the run (node a)" 0 "$(rcli $REDIS_PORT_a exists 't:{valve-1}')"
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
"$ELK" --socket "$SOCK" run valve-1 -- sh -c "touch $ELK_T_DIR/holding; sleep 2" &
H=$!
for _ in $(seq 1 100); do [ -e "$ELK_T_DIR/holding" ] && break; sleep 0.02; done
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
t2=$(E run --wait 10s valve-1 -- sh -c 'echo $ELK_FENCE_TOKEN'); rc=$?
check "waiting client gets the lease after the holder" 0 $rc
[ "$t2" -gt "$prev" ] 2>/dev/null; check "waiter's token ($t2) above the previous holder's" 0 $?
wait $H; check "first holder exits 0" 0 $?

# A client that dies releases its lease.
"$ELK" --socket "$SOCK" acquire door > "$ELK_T_DIR/acq.out" &
A=$!
for _ in $(seq 1 100); do grep -q acquired "$ELK_T_DIR/acq.out" 2>/dev/null && break; sleep 0.02; done
check_contains "elk acquire prints the token" "acquired door token=" "$(cat "$ELK_T_DIR/acq.out")"
check "door locked on node b" 1 "$(rcli $REDIS_PORT_b exists 't:{door}')"
kill -KILL $A; wait $A 2>/dev/null
gone=1
for _ in $(seq 1 100); do
  if [ "$(rcli $REDIS_PORT_a exists 't:{door}')$(rcli $REDIS_PORT_b exists 't:{door}')$(rcli $REDIS_PORT_c exists 't:{door}')" = 000 ]; then gone=0; break; fi
  sleep 0.02
done
check "killed client's lease released on every node (not left to expire)" 0 $gone
E run door -- true; check "door free again" 0 $?

# elk acquire + SIGTERM releases cleanly.
"$ELK" --socket "$SOCK" acquire door > "$ELK_T_DIR/acq2.out" &
A=$!
for _ in $(seq 1 100); do grep -q acquired "$ELK_T_DIR/acq2.out" 2>/dev/null && break; sleep 0.02; done
kill -TERM $A; wait $A; check "elk acquire exits 0 on SIGTERM" 0 $?
check_contains "elk acquire reports the release" "released door" "$(cat "$ELK_T_DIR/acq2.out")"

# there is no 'elk release' (a lease belongs to its connection): it says how to release
"$ELK" --socket "$SOCK" acquire door > "$ELK_T_DIR/acq3.out" &
A=$!
for _ in $(seq 1 100); do grep -q acquired "$ELK_T_DIR/acq3.out" 2>/dev/null && break; sleep 0.02; done
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
