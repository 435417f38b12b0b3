#!/bin/bash
# SPDX-License-Identifier: MIT
# The edgelock demo: a local TLS Redis fleet (3 masters), three gateways (elkd agents)
# contending for one valve through `elk run`, a simulated actuator that checks fencing
# tokens, a Redis node killed under a held lock, a stale command refused, a lease lost
# when the quorum goes, and a clean stop. One line per event, a summary at the end.
#
# Usage: tests/demo/run-demo.sh BUILD_DIR     (scripts/demo.sh builds and calls this)
# ELK_DEMO_KEEP=1 keeps the temp dir (logs, configs, certificates).
set -u
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 64
fi
B=$(cd "$1" && pwd)
ELKD=$B/firmware/elkd
ELK=$B/firmware/elk
ACT=$B/tests/demo/elk_demo_actuator
for f in "$ELKD" "$ELK" "$ACT"; do
  if [ ! -x "$f" ]; then
    echo "demo: $f is not built (build the project first: cmake --build $1)" >&2
    exit 1
  fi
done
for p in redis-server redis-cli openssl python3; do
  command -v "$p" >/dev/null || { echo "demo: $p not found (scripts/install-deps.sh)" >&2; exit 1; }
done

# the shared harness of the end-to-end tests: temp dir, process tracking and cleanup,
# launchers (tests/support/lib.sh)
SUP_PREFIX=elk-demo SUP_KEEP=${ELK_DEMO_KEEP:-0}
. "$(dirname "${BASH_SOURCE[0]}")/../support/lib.sh"
W=$SUP_DIR
FAILS=0

stamp() { while IFS= read -r l; do say "$l"; done; }
expect() { # expect DESCRIPTION CONDITION-EXIT-STATUS
  if [ "$2" -eq 0 ]; then say "  check: $1: yes"; else say "  check: $1: NO"; FAILS=$((FAILS + 1)); fi
}

# ---------------------------------------------------------------- certificates
say "== setup: certificates, 3 Redis servers with TLS, 3 gateways, 1 valve"
gen_certs
say "certificates: CA and a server certificate for localhost/127.0.0.1 (EC P-256) in $W"

# ---------------------------------------------------------------- Redis fleet
declare -A RPORT RPID
start_redis() {
  sup_redis "$1" "" tls
  RPORT[$1]=$SUP_RPORT
  RPID[$1]=$SUP_RPID
  say "redis node $1: TLS on 127.0.0.1:$SUP_RPORT (pid $SUP_RPID)"
}
for i in 1 2 3; do start_redis $i; done

# ---------------------------------------------------------------- gateways
for gw in gw-a gw-b gw-c; do
  cat > "$W/$gw.conf" <<CONF
[fleet]
mode = redlock
gateway_id = $gw
key_prefix = demo:
tls = on
ca = $W/ca.pem
[node 1]
host = 127.0.0.1
port = ${RPORT[1]}
server_name = localhost
[node 2]
host = 127.0.0.1
port = ${RPORT[2]}
server_name = localhost
[node 3]
host = 127.0.0.1
port = ${RPORT[3]}
server_name = localhost
[resource valve-1]
ttl = 3s
stop_margin = 500ms
renew_fraction = 1/3
wait_min = 20ms
wait_max = 80ms
[agent]
socket = $W/$gw.sock
log_level = info
safety_check = off
events_file = $W/$gw.events
CONF
  "$ELKD" -c "$W/$gw.conf" -f >"$W/$gw.log" 2>&1 &
  pid=$!
  track "$pid"
  eval "PID_${gw//-/_}=$pid"
done
for gw in gw-a gw-b gw-c; do
  ready=0
  for _ in $(seq 1 200); do
    if "$ELK" --socket "$W/$gw.sock" status 2>/dev/null | grep -q "nodes_ready=3/3"; then ready=1; break; fi
    sleep 0.05
  done
  if [ $ready -ne 1 ]; then echo "demo: $gw did not connect to the fleet:"; cat "$W/$gw.log"; exit 1; fi
  say "$gw: elkd up, TLS connections to 3 of 3 nodes (socket $W/$gw.sock)"
done

"$ACT" serve "$W/valve.sock" "$W/valve.state" > >(stamp) 2>&1 &
ACT_PID=$!
track "$ACT_PID"
for _ in $(seq 1 100); do [ -S "$W/valve.sock" ] && break; sleep 0.02; done

# The work a gateway does while it holds the lease: open the valve, keep it open a while,
# close it; every command carries the fencing token elk run put in the environment.
cat > "$W/work.sh" <<'WORK'
#!/bin/bash
# work.sh ACTUATOR GATEWAY SECONDS TOKENLOG
act=$1 gw=$2 secs=$3 log=$4
echo "$gw $ELK_FENCE_TOKEN" >> "$log"
echo "$gw: acquired valve-1: token $ELK_FENCE_TOKEN, may drive it for ${ELK_DEADLINE_MS} ms unless renewed"
trap 'echo "$gw: told to stop (SIGTERM): closing the valve"; "$ACTUATOR" send "$SOCK" "$gw" "$ELK_FENCE_TOKEN" close >/dev/null; exit 0' TERM
"$ACTUATOR" send "$act" "$gw" "$ELK_FENCE_TOKEN" open || echo "$gw: open refused"
sleep "$secs" &
wait $!
"$ACTUATOR" send "$act" "$gw" "$ELK_FENCE_TOKEN" close || echo "$gw: close refused"
echo "$gw: done, releasing valve-1"
WORK
chmod +x "$W/work.sh"
export ACTUATOR="$ACT" SOCK="$W/valve.sock"
TOKENS="$W/tokens"
: > "$TOKENS"

run_gw() { # run_gw GATEWAY SECONDS [extra elk run args]
  local gw=$1 secs=$2
  shift 2
  "$ELK" --socket "$W/$gw.sock" run "$@" valve-1 -- "$W/work.sh" "$W/valve.sock" "$gw" "$secs" "$TOKENS" 2>&1 | stamp
  return "${PIPESTATUS[0]}"
}

# ---------------------------------------------------------------- 1. contention
say "== 1. three gateways contend for valve-1 (each twice, waiting up to 30 s)"
CONTENDERS=""
for gw in gw-a gw-b gw-c; do
  (for k in 1 2; do run_gw "$gw" 0.8 --wait 30s || say "$gw: elk run exited $?"; sleep 0.4; done) &
  CONTENDERS="$CONTENDERS $!"
  sleep 0.05
done
for j in $CONTENDERS; do wait "$j"; done
n=$(wc -l < "$TOKENS")
sorted=$(awk '{print $2}' "$TOKENS" | sort -n | uniq | wc -l)
mono=0
awk 'NR>1 && $2<=prev {bad=1} {prev=$2} END {exit bad}' "$TOKENS" || mono=1
say "hand-offs: $(awk '{printf "%s(%s) ", $1, $2}' "$TOKENS")"
expect "6 grants, one holder at a time, each token larger than the one before" \
  $([ "$n" -eq 6 ] && [ "$sorted" -eq 6 ] && [ $mono -eq 0 ]; echo $?)
FIRST_GW=$(head -1 "$TOKENS" | awk '{print $1}')
FIRST_TOKEN=$(head -1 "$TOKENS" | awk '{print $2}')

# ---------------------------------------------------------------- 2. node failure
say "== 2. a Redis node dies while gw-a holds the valve: the lease survives on 2 of 3"
run_gw gw-a 3 &
HOLD=$!
for _ in $(seq 1 100); do "$ELK" --socket "$W/gw-a.sock" status | grep -q "valve-1  held" && break; sleep 0.02; done
sleep 0.3
kill -KILL "${RPID[2]}"
wait "${RPID[2]}" 2>/dev/null
say "killed redis node 2 (SIGKILL, pid ${RPID[2]})"
sleep 1.5
"$ELK" --socket "$W/gw-a.sock" status | sed 's/^/gw-a status: /' | stamp
wait $HOLD
rc=$?
expect "gw-a kept the lease through renewals with 2 of 3 nodes and finished normally (elk run exit $rc)" $rc
run_gw gw-b 0.3
expect "gw-b acquires with 2 of 3 nodes, token above gw-a's" $(
  [ "$(tail -1 "$TOKENS" | awk '{print $2}')" -gt "$(tail -2 "$TOKENS" | head -1 | awk '{print $2}')" ]; echo $?)

# ---------------------------------------------------------------- 3. stale command
say "== 3. a delayed command from the first holder ($FIRST_GW, token $FIRST_TOKEN) reaches the valve late"
"$ACT" send "$W/valve.sock" "$FIRST_GW" "$FIRST_TOKEN" open
rc=$?
sleep 0.05
expect "the actuator refused the stale token (exit $rc)" $([ $rc -eq 65 ]; echo $?)

# ---------------------------------------------------------------- 4. losing the quorum
say "== 4. gw-c holds the valve when a second Redis node dies: no quorum, the lease is lost"
run_gw gw-c 30 &
HOLD=$!
for _ in $(seq 1 100); do "$ELK" --socket "$W/gw-c.sock" status | grep -q "valve-1  held" && break; sleep 0.02; done
sleep 0.2
expire=$(redis-cli -s "$W/redis-1.sock" pexpiretime 'demo:{valve-1}')
kill -KILL "${RPID[3]}"
wait "${RPID[3]}" 2>/dev/null
say "killed redis node 3 (SIGKILL): only node 1 of 3 is left"
wait $HOLD
rc=$?
stopped=$(date +%s%3N)
say "gw-c: elk run exited $rc (75: lease lost, command stopped)"
expect "gw-c's command was stopped before the lease could expire on the servers" \
  $([ $rc -eq 75 ] && [ "$stopped" -lt "$expire" ]; echo $?)
grep -h "LOST" "$W/gw-c.log" | tail -1 | sed 's/^/gw-c log: /' | stamp

# ---------------------------------------------------------------- stop
say "== stop: SIGTERM to every elkd (holders told, leases released), actuator and Redis stopped"
for gw in gw-a gw-b gw-c; do
  v="PID_${gw//-/_}"
  kill -TERM "${!v}"
  wait "${!v}"
  rc=$?
  say "$gw: elkd exited $rc"
  expect "$gw stopped cleanly" $rc
done
kill -TERM "$ACT_PID"
wait "$ACT_PID"
act_rc=$?
expect "the actuator saw no overlapping holders" $act_rc
kill -TERM "${RPID[1]}" 2>/dev/null
wait "${RPID[1]}" 2>/dev/null
sleep 0.1

# ---------------------------------------------------------------- timeline
# Every gateway's lease event record on one page (elk timeline), kept in the build folder.
PAGE=$B/demo-timeline.html
for gw in gw-a gw-b gw-c; do "$ELK" events --file "$W/$gw.events" --json; done > "$W/events.jsonl"
"$ELK" timeline -o "$PAGE" --title "edgelock demo: three gateways, one valve" "$W/events.jsonl" >/dev/null
rc=$?
overlaps=$(grep -o 'data-overlaps="[0-9]*"' "$PAGE" 2>/dev/null | grep -o '[0-9]*')
say "timeline of this run: $PAGE ($(grep -c . "$W/events.jsonl") events; open it in a browser)"
expect "the timeline shows no two holders of valve-1 at once" $([ $rc -eq 0 ] && [ "${overlaps:-x}" = 0 ]; echo $?)

echo
echo "== summary"
echo "grants (gateway token): $(awk '{printf "%s:%s ", $1, $2}' "$TOKENS")"
echo "tokens strictly increasing across all hand-offs: $(awk 'NR>1 && $2<=p {b=1} {p=$2} END {print b ? "no" : "yes"}' "$TOKENS")"
echo "lease survived 1 of 3 nodes down; lost (command stopped in time) with 2 of 3 down"
echo "stale command refused by the actuator's fencing guard"
echo "the run as a picture: $PAGE"
if [ $FAILS -eq 0 ]; then
  echo "demo: all checks passed"
  exit 0
fi
echo "demo: $FAILS check(s) failed (ELK_DEMO_KEEP=1 keeps the logs)"
exit 1
