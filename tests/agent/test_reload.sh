#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 19: SIGHUP / `elk reload` re-reads the configuration while a lease is held: the
# held lease keeps its token and its command runs on unbroken; an added resource works;
# a changed ttl applies to the next grant; the log level changes; a broken file or a
# fleet change while a lease is held leaves everything running as it was.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
start_redis a; start_redis b; start_redis c
# quarantine = 7s: the fleet is new (its markers made at elkd's start), and a reload that
# lengthens the automatic W (door 2s -> 6s) would quarantine every node whose marker is younger
# than the new W (docs/design.md "Masters that forget within a connection"); a fixed W covering
# every ttl used here keeps this test about the reload.
write_conf() { # write_conf VALVE_TTL DOOR_TTL LOG_LEVEL EXTRA_RESOURCE_SECTION
  { fleet3_conf gw-reload r: | sed '/^key_prefix/a quarantine = 7s'; cat <<CONF
$(resource valve-1 $1 300ms)
$(resource door $2 200ms)
$4
$(agent_section)
log_level = $3
CONF
  } > "$C.new"
  mv "$C.new" "$C"
}
write_conf 3s 2s info ""
start_elkd "$C"
wait_ready
E() { "$ELK" --socket "$SOCK" "$@"; }
J() { E status --json; }
jfield() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }

# The actuator: writes its token every 50 ms until told to stop; one session, one token.
ACT="$ELK_T_DIR/actuator.log"
E run valve-1 -- sh -c 'echo "start $ELK_FENCE_TOKEN" >> '"$ACT"'; while [ ! -e '"$ELK_T_DIR"'/stop ]; do
  echo "step $ELK_FENCE_TOKEN" >> '"$ACT"'; sleep 0.05; done; echo "end $ELK_FENCE_TOKEN" >> '"$ACT" &
RUN=$!
wait_until 60 test -s "$ACT"
tok0=$(J | jfield '[r["token"] for r in d["resources"] if r["name"]=="valve-1"][0]')
[ "$tok0" -ge 1 ] 2>/dev/null; check "valve-1 held with a token ($tok0)" 0 $?

# Add pump, change door's ttl (2s -> 6s) and valve-1's (3s -> 5s, held: applies later), log level debug.
write_conf 5s 6s debug "[resource pump]
ttl = 2s"
kill -HUP "$ELKD_PID"
reloaded_once() { [ "$(J | jfield 'd["reloads"]')" = 1 ]; }
wait_until 60 reloaded_once
check "SIGHUP reloaded" 1 "$(J | jfield 'd["reloads"]')"
check "held lease keeps its token" "$tok0" "$(J | jfield '[r["token"] for r in d["resources"] if r["name"]=="valve-1"][0]')"
check "held lease keeps the ttl it was granted with" 3000 "$(J | jfield '[r["ttl_ms"] for r in d["resources"] if r["name"]=="valve-1"][0]')"
out=$(E run pump -- sh -c 'echo $ELK_RESOURCE'); rc=$?
check "the added resource works" "0 pump" "$rc $out"
dl=$(E run door -- sh -c 'echo $ELK_DEADLINE_MS')
[ "$dl" -gt 2000 ] 2>/dev/null; check "door's next grant has the new ttl (validity $dl ms > old ttl 2000)" 0 $?
check_contains "log level debug applies" " debug " "$(sed -n '/reload: /,$p' "$ELK_T_DIR/elkd.log")"

# A broken file: refused, everything keeps running.
echo "[resource broken" >> "$C"
E reload >/dev/null 2>&1; rc=$?
check "elk reload of a broken file fails (78: configuration refused)" 78 $rc
check "reload failure counted" 1 "$(J | jfield 'd["reload_failures"]')"
check_contains "the log says why" "reload failed, keeping the running configuration" "$(cat "$ELK_T_DIR/elkd.log")"
check "pump still there after the failed reload" "0" "$(E run pump -- true; echo $?)"

# A node change while valve-1 is held would change its quorum: refused with a message.
write_conf 5s 6s debug "[resource pump]
ttl = 2s"
sed -i "s/port = $REDIS_PORT_c/port = 1/" "$C"
E reload >/dev/null 2>&1; rc=$?
check "a fleet change while a lease is held is refused (78)" 78 $rc
check_contains "the refusal names the lease" "valve-1 is held" "$(grep 'reload failed' "$ELK_T_DIR/elkd.log" | tail -1)"

# Back to a good file: `elk reload` says so.
write_conf 5s 6s info ""
out=$(E reload); rc=$?
check "elk reload" "0 reloaded" "$rc $out"
check_contains "pump removed from the agent" "ELK_E_RESOURCE_UNKNOWN" "$(E run pump -- true 2>&1)"

# Allow lists apply at once: door allowed to nobody but the user nobody, then an unknown user
# (refused as --check refuses it), then open again.
me=$(id -un)
write_conf 5s 6s info ""
sed -i 's/^\[resource door\]$/[resource door]\nallow_users = nobody/' "$C"
E reload >/dev/null; check "reload with allow_users" 0 $?
check_contains "door refused to $me" "ELK_E_FORBIDDEN" "$(E run door -- true 2>&1)"
sed -i 's/^allow_users = nobody$/allow_users = no-such-user-xyz/' "$C"
E reload >/dev/null 2>&1; check "an unknown user in allow_users fails the reload" 78 $?
check_contains "door still refused (the running lists are kept)" "ELK_E_FORBIDDEN" "$(E run door -- true 2>&1)"
sed -i "s/^allow_users = no-such-user-xyz$/allow_users = $me/" "$C"
E reload >/dev/null; check "reload allowing $me" 0 $?
check "door taken by $me again" 0 "$(E run door -- true >/dev/null 2>&1; echo $?)"
write_conf 5s 6s info ""
E reload >/dev/null; check "reload, door open again" 0 $?

# The held lease was never interrupted: one session, one token, and it ends by itself.
touch "$ELK_T_DIR/stop"
wait $RUN; rc=$?
check "the command held through every reload and exited 0" 0 $rc
check "one unbroken session" "1 1 1" "$(grep -c '^start' "$ACT") $(grep -c '^end' "$ACT") $(awk '{print $2}' "$ACT" | sort -u | wc -l)"
check "its token was the first grant's" "$tok0" "$(awk '{print $2}' "$ACT" | sort -u)"
check "no LOST in the log" 0 "$(grep -c LOST "$ELK_T_DIR/elkd.log")"
# The new valve-1 ttl applies to the next grant.
dl=$(E run valve-1 -- sh -c 'echo $ELK_DEADLINE_MS')
[ "$dl" -gt 3000 ] 2>/dev/null; check "valve-1's next grant has the new ttl (validity $dl ms > old ttl 3000)" 0 $?

# With no lease held, a fleet change applies: the fleet is set up again (new key prefix).
# (Once the last release round has ended: a lease being released still counts.)
all_idle() { [ "$(J | jfield 'set(r["state"] for r in d["resources"])')" = "{'idle'}" ]; }
wait_until 60 all_idle
write_conf 5s 6s info ""
sed -i 's/^key_prefix = r:/key_prefix = r2:/' "$C"
out=$(E reload); rc=$?
check "a fleet change with no lease held applies" "0 reloaded" "$rc $out"
wait_ready
out=$(E run valve-1 -- redis-cli -p "$REDIS_PORT_b" exists 'r2:{valve-1}')
check "leases use the new key prefix" 1 "$out"
finish
