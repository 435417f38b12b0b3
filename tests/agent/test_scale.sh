#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 30: elkd serving far more resources than the 32 it once took. Up to 300 of them (what
# the build allows: LIMIT, the smaller of CONFIG_ELKD_MAX_RESOURCES and CONFIG_ELK_MAX_LOCKS,
# keeping room for 16 more) on one redis-server: half taken through one connection, half
# through eight; STATUS (elk status, elk status --json, STATUS METRICS) lists every one held;
# a reload adds 16 more, which are taken too while the others stay held with their tokens;
# a file over the limit is refused by elkd --check and by a reload, naming the Kconfig
# symbol; everything released.
ELKD=$1 ELK=$2 LIMIT=$3
. "$(dirname "$0")/lib.sh"
ADD=16
N=$((LIMIT - ADD < 300 ? LIMIT - ADD : 300))
[ "$N" -gt 32 ] || { echo "this build serves $LIMIT resources: too few for this test"; exit 1; }
HALF=$((N / 2))
start_redis a
E() { "$ELK" --socket "$SOCK" "$@"; }
names() { local i; for i in $(seq "$1" "$2"); do echo "r$i"; done; }
write_conf() { # write_conf COUNT FILE: resources r0 .. r<COUNT-1>
  { printf '[fleet]\nmode = single\ngateway_id = gw-scale\nkey_prefix = sc:\n'
    node_sections a
    agent_section; printf '\nmax_clients_per_uid = 15\n'
    for r in $(names 0 $(($1 - 1))); do printf '[resource %s]\nttl = 10s\n' "$r"; done
  } >"$2.new"
  mv "$2.new" "$2"
}
J() { E status --json; }
jq_() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }

# Over the limit: --check refuses it, naming the limit and its Kconfig symbol.
write_conf $((LIMIT + 1)) "$ELK_T_DIR/over.conf"
out=$("$ELKD" --check -c "$ELK_T_DIR/over.conf" 2>&1); rc=$?
check "elkd --check refuses $((LIMIT + 1)) resources (exit 2)" 2 $rc
check_contains "and says the limit" "too many resources: at most $LIMIT in this build (CONFIG_" "$out"
write_conf $((N + ADD)) "$ELK_T_DIR/full.conf"
"$ELKD" --check -c "$ELK_T_DIR/full.conf" >/dev/null 2>&1
check "elkd --check takes $((N + ADD)) resources" 0 $?

write_conf "$N" "$C"
start_elkd "$C"
wait_ready
check "STATUS JSON lists all $N resources" "$N" "$(J | jq_ 'len(d["resources"])')"

# Half through one connection, half through eight.
mkdir -p "$M/one" "$M/eight" "$M/added"
python3 "$SUP_LIB/../agent/ctl_many.py" "$SOCK" 1 "$M/one" $(names 0 $((HALF - 1))) &
P1=$!; track $P1
python3 "$SUP_LIB/../agent/ctl_many.py" "$SOCK" 8 "$M/eight" $(names "$HALF" $((N - 1))) &
P2=$!; track $P2
wait_for 300 'test -e "$M/one/held" -a -e "$M/eight/held"'
check "one connection took its $HALF" "acquired $HALF/$HALF" "$(head -1 "$M/one/held")"
check "eight connections took their $((N - HALF))" "acquired $((N - HALF))/$((N - HALF))" "$(head -1 "$M/eight/held")"
check "STATUS JSON: all $N held" "$N" "$(J | jq_ 'sum(r["state"] in ("held", "renewing") for r in d["resources"])')"
check "STATUS JSON: each with a fencing token" "$N" "$(J | jq_ 'sum(r["token"] > 0 for r in d["resources"])')"
out=$(E status)
check "elk status: a row per resource" "$N" "$(echo "$out" | grep -c '^  r[0-9]')"
check "elk status: every row held by a pid" "$N" "$(echo "$out" | grep '^  r[0-9]' | grep -c ' pid:[0-9]')"
check "STATUS METRICS: every resource held" "$N" "$(E status --metrics | grep -c '^elk_resource_held{resource="r[0-9]*"} 1')"
tokens=$(J | jq_ 'sorted((r["name"], r["token"]) for r in d["resources"])')

# A reload adds 16 more; the held ones keep their leases; the new ones can be taken.
write_conf $((N + ADD)) "$C"
check "elk reload adds $ADD" "reloaded" "$(E reload)"
check "STATUS JSON lists all $((N + ADD))" "$((N + ADD))" "$(J | jq_ 'len(d["resources"])')"
check "the held leases kept their tokens" "$tokens" "$(J | jq_ 'sorted((r["name"], r["token"]) for r in d["resources"] if int(r["name"][1:]) < '"$N"')')"
python3 "$SUP_LIB/../agent/ctl_many.py" "$SOCK" 2 "$M/added" $(names "$N" $((N + ADD - 1))) &
P3=$!; track $P3
wait_for 300 'test -e "$M/added/held"'
check "the added ones taken" "acquired $ADD/$ADD" "$(head -1 "$M/added/held")"
check "elk status: $((N + ADD)) rows held" "$((N + ADD))" "$(E status | grep '^  r[0-9]' | grep -c ' pid:[0-9]')"

# A reload over the limit is refused; everything keeps running.
cp "$ELK_T_DIR/over.conf" "$C"
E reload >/dev/null 2>&1
check "a reload over the limit is refused (78)" 78 $?
check_contains "the log says why" "too many resources: at most $LIMIT" "$(grep 'reload failed' "$ELK_T_DIR/elkd.log" | tail -1)"
check "still $((N + ADD)) held" "$((N + ADD))" "$(J | jq_ 'sum(r["state"] in ("held", "renewing") for r in d["resources"])')"

# Release everything.
touch "$M/one/release" "$M/eight/release" "$M/added/release"
wait_for 300 'test -e "$M/one/released" -a -e "$M/eight/released" -a -e "$M/added/released"'
check "released through one" "released $HALF/$HALF" "$(cat "$M/one/released")"
check "released through eight" "released $((N - HALF))/$((N - HALF))" "$(cat "$M/eight/released")"
check "released the added" "released $ADD/$ADD" "$(cat "$M/added/released")"
idle() { [ "$(J | jq_ 'all(r["state"] == "idle" for r in d["resources"])')" = True ]; }
wait_until 120 idle
check "every resource idle again" 0 $?
check "no lease key left on the server" 0 "$(rcli "$REDIS_PORT_a" --scan --pattern 'sc:*' | grep -Ec '^sc:\{r[0-9]+\}$')"

# [fleet] batch_renewals: off renews each lease with its own request, on (the default) all
# that are due in one; a change applies at a reload while nothing is held. Read from the
# server's own record (MONITOR): the most lease keys one EVALSHA carried, once every
# lease was renewed at least twice (STATUS).
most_keys() { python3 -c '
import re, sys
print(max([len(set(re.findall(r"\"sc:\{(r[0-9]+)\}\"", l))) for l in open(sys.argv[1]) if "\"EVALSHA\"" in l] or [0]))' "$1"; }
renewed_twice() { [ "$(J | jq_ 'min(r["renewals"] for r in d["resources"])')" -ge 2 ] 2>/dev/null; }
batch_case() { # batch_case on|off
  { printf '[fleet]\nmode = single\ngateway_id = gw-scale\nkey_prefix = sc:\nbatch_renewals = %s\n' "$1"
    node_sections a
    agent_section; printf '\nmax_clients_per_uid = 15\n'
    # ttl 3 s: about 1.9 s between a renewal and its deadline (1500 ms left about 0.9 s, and a
    # loaded machine's stall lost a lease: 'released 8/8' then failed)
    for r in $(names 0 7); do printf '[resource %s]\nttl = 3s\nstop_margin = 100ms\n' "$r"; done
  } >"$C"
  local d="$M/b$1" mon p
  # a fleet setting: refused while a release round of the leases before is still running
  wait_until 60 reloaded
  check "elk reload: batch_renewals = $1" 0 $?
  rm -rf "$d"; mkdir -p "$d"
  redis-cli -p "$REDIS_PORT_a" monitor >"$M/monitor-$1" 2>/dev/null &
  mon=$!; track $mon
  python3 "$SUP_LIB/../agent/ctl_many.py" "$SOCK" 1 "$d" $(names 0 7) &
  p=$!; track $p
  wait_until 120 test -e "$d/held"
  check "batch_renewals = $1: 8 taken" "acquired 8/8" "$(head -1 "$d/held")"
  wait_until 120 renewed_twice
  check "batch_renewals = $1: every lease renewed twice" 0 $?
  kill $mon 2>/dev/null; wait $mon 2>/dev/null
  touch "$d/release"
  wait_until 120 test -e "$d/released"
  check "batch_renewals = $1: released" "released 8/8" "$(cat "$d/released")"
  wait_until 120 idle8
}
reloaded() { [ "$(E reload 2>/dev/null)" = reloaded ]; }
idle8() { [ "$(J | jq_ 'sum(r["state"] == "idle" for r in d["resources"])')" = 8 ]; }
batch_case off
check "batch_renewals = off: one lease a request" 1 "$(most_keys "$M/monitor-off")"
batch_case on
check "batch_renewals = on: the 8 leases renewed in one request" 8 "$(most_keys "$M/monitor-on")"
finish
