#!/bin/bash
# SPDX-License-Identifier: MIT
# [semaphore NAME] served by elkd on a real 3-node Redlock fleet: a semaphore of 2 permits,
# 4 concurrent `elk run`; from the commands' own record (start/end lines with timestamps):
# never more than 2 at once, all 4 ran, each permit's tokens strictly increase. STATUS
# shows the holders while they run; --check refuses permits = 0 and a name clash.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"

# --check: the refusals, each naming what to change
bad_conf() {
  printf '[node a]\nhost = 127.0.0.1\nport = 6379\n'
  cat
  printf '[agent]\nsocket = %s\n' "$SOCK"
}
bad_conf >"$ELK_T_DIR/zero.conf" <<'CONF'
[semaphore pumps]
permits = 0
CONF
out=$("$ELKD" --check -c "$ELK_T_DIR/zero.conf" 2>&1); rc=$?
check "--check refuses permits = 0 (exit 2)" 2 $rc
check_contains "--check names the limit" "has 1 to 64 permits" "$out"
bad_conf >"$ELK_T_DIR/clash.conf" <<'CONF'
[resource pumps]
[semaphore pumps]
permits = 2
CONF
out=$("$ELKD" --check -c "$ELK_T_DIR/clash.conf" 2>&1); rc=$?
check "--check refuses a semaphore named as a resource (exit 2)" 2 $rc
check_contains "--check says the names clash" "may not share a name" "$out"
bad_conf >"$ELK_T_DIR/missing.conf" <<'CONF'
[semaphore pumps]
ttl = 5s
CONF
"$ELKD" --check -c "$ELK_T_DIR/missing.conf" >/dev/null 2>&1
check "--check refuses a semaphore without permits (exit 2)" 2 $?

elkd_up "a b c" <<CONF
$(fleet3_conf gw-sem t:)
[semaphore pumps]
permits = 2
ttl = 10s
stop_margin = 300ms
$(agent_section)
log_level = debug
CONF
E() { "$ELK" --socket "$SOCK" "$@"; }
out=$("$ELKD" --check -c "$C" 2>&1)
check_contains "--check reports the semaphore" "[semaphore pumps] (2 permits)" "$out"

LOG="$M/runs.log"
GO="$M/go"
# Each command: its start (after the grant), waits for the go mark, then its end (before the
# release); timestamps of one clock (CLOCK_REALTIME, shared by every process here).
cmd='echo "start $(date +%s%N) $ELK_RESOURCE $ELK_FENCE_TOKEN $ELK_SEMAPHORE $ELK_PERMIT" >>'"$LOG"'
while [ ! -e '"$GO"' ]; do sleep 0.05; done
sleep 0.2
echo "end $(date +%s%N) $ELK_RESOURCE $ELK_FENCE_TOKEN" >>'"$LOG"
pids=""
for i in 1 2 3 4; do
  E run -w 300 pumps -- sh -c "$cmd" >"$M/run$i.out" 2>&1 &
  pids="$pids $!"
  track $!
done
# two of them get a permit, the other two wait (the command does not end before go)
# (the count of an absent file is 0: a failed test must not end the wait at once)
starts() { cat "$LOG" 2>/dev/null | grep -c ^start; }
wait_for 60 '[ "$(starts)" -ge 2 ]'
check "two commands started" 2 "$(starts)"
st=$(E status)
line=$(echo "$st" | grep -A2 '^SEMAPHORES:' | tail -1)
check_contains "elk status: the SEMAPHORES row names holder 1" "pumps#1:pid:" "$line"
check_contains "elk status: the SEMAPHORES row names holder 2" "pumps#2:pid:" "$line"
js=$(E status --json)
echo "$js" | python3 -c '
import json, sys
d = json.load(sys.stdin)
s = [x for x in d["semaphores"] if x["name"] == "pumps"][0]
assert s["permits"] == 2 and s["held"] == 2, s
assert sorted(h["permit"] for h in s["holders"]) == ["pumps#1", "pumps#2"], s
assert all(h["where"] == "local" and h["pid"] > 0 and h["token"] > 0 for h in s["holders"]), s
'
check "STATUS JSON: both permits held, each holder with pid and token" 0 $?
# the permits are ordinary locks named as lib/sem names them: t:{pumps#1}, t:{pumps#2}
n=0
for k in 1 2; do
  for p in $REDIS_PORT_a $REDIS_PORT_b $REDIS_PORT_c; do
    [ "$(rcli "$p" exists "t:{pumps#$k}")" = 1 ] && n=$((n + 1))
  done
done
[ "$n" -ge 4 ]; check "keys t:{pumps#1} and t:{pumps#2} on a quorum of the servers ($n of 6)" 0 $?
# no wait: every permit busy, said as such (the held exit code, not a usage error)
out=$(E run -n pumps -- true 2>&1); rc=$?
check_contains "run -n with every permit held: ELK_E_PERMITS_TAKEN" ELK_E_PERMITS_TAKEN "$out"
[ $rc -ne 0 ] && [ $rc -ne 64 ]; check "run -n with every permit held: not acquired (exit $rc)" 0 $?
touch "$GO"
allrc=0
for p in $pids; do
  wait "$p" || allrc=$?
done
check "all 4 runs exit 0" 0 $allrc
check "all 4 ran (start lines)" 4 "$(grep -c ^start "$LOG")"
check "all 4 ended (end lines)" 4 "$(grep -c ^end "$LOG")"
grep -q "ELK_SEMAPHORE" "$LOG"; check "no unexpanded variable in the record" 1 $?
check "every run was told its semaphore and permit" 4 "$(grep -cE '^start [0-9]+ pumps#([12]) [0-9]+ pumps [12]$' "$LOG")"
# From the record: at most 2 at once, and each permit's tokens strictly increase.
python3 - "$LOG" <<'PY'
import sys
ev = []
for line in open(sys.argv[1]):
    w = line.split()
    ev.append((int(w[1]), 0 if w[0] == "end" else 1, w[2], int(w[3])))
ev.sort()
run = peak = 0
tokens = {}
for t, kind, permit, token in ev:
    if kind == 1:
        run += 1
        peak = max(peak, run)
        prev = tokens.get(permit, 0)
        assert token > prev, f"{permit}: token {token} after {prev}"
        tokens[permit] = token
    else:
        run -= 1
assert peak <= 2, f"{peak} commands ran at once with 2 permits"
assert peak == 2, f"the 2 permits were never used at once (peak {peak})"
print(f"peak {peak}, tokens {tokens}")
PY
check "from the record: never more than 2 at once, tokens per permit strictly increase" 0 $?
wait_for 30 '[ "$(E status --json | python3 -c "import json,sys; print([s[\"held\"] for s in json.load(sys.stdin)[\"semaphores\"]][0])")" = 0 ]'
check "STATUS: no permit held once all ended" 0 "$(E status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["semaphores"][0]["held"])')"

# One connection, one permit; NAME stands for the connection's permit; a permit's own name
# cannot be asked for directly.
out=$(python3 - "$SOCK" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
f = s.makefile("rwb", buffering=0)
def ask(line):
    f.write((line + "\n").encode())
    return f.readline().decode().strip()
g = ask("ACQUIRE pumps 30000")
print(g.split()[0], g.split()[1], g.split()[2][:6])
print(ask("ACQUIRE pumps").split()[1])
print(ask("KEEPALIVE pumps").split()[1])
print(ask("ACQUIRE pumps#1").split()[1])
print(ask("RELEASE pumps").split()[:2] == ["OK", "RELEASED"])
PY
)
check "protocol: grant names the permit, second ACQUIRE refused, NAME maps to it" \
  "$(printf 'OK ACQUIRED pumps#\nELK_E_ALREADY_HELD\nKEEPALIVE\nELK_E_INVALID_ARG\nTrue')" "$out"

# Reload: permits changed while permits are held. More at once; fewer: a held permit
# that goes stays until it is released (as a removed resource does), none is handed out.
sem_json() { E status --json | python3 -c "import json,sys; s=json.load(sys.stdin)['semaphores'][0]; print($1)"; }
reloads() { E status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["reloads"])'; }
set_permits() { sed -i "s/^permits = .*/permits = $1/" "$C"; }
"$ELK" --socket "$SOCK" acquire pumps >"$M/h1.out" 2>&1 &
H1=$!
track $H1
"$ELK" --socket "$SOCK" acquire pumps >"$M/h2.out" 2>&1 &
H2=$!
track $H2
wait_for 60 'file_has acquired "$M/h1.out" && file_has acquired "$M/h2.out"'
check "two holders for the reload" 2 "$(sem_json 's["held"]')"
set_permits 3
kill -HUP "$ELKD_PID"
wait_for 30 '[ "$(reloads)" = 1 ]'
check "reload to 3 permits: STATUS says 3" 3 "$(sem_json 's["permits"]')"
out=$(E run -n pumps -- sh -c 'echo $ELK_RESOURCE' 2>&1)
check "reload to 3 permits: the third is handed out at once" "pumps#3" "$out"
set_permits 1
kill -HUP "$ELKD_PID"
wait_for 30 '[ "$(reloads)" = 2 ]'
check "reload to 1 permit: STATUS says 1" 1 "$(sem_json 's["permits"]')"
check "reload to 1 permit: both holders keep their permits" 2 "$(sem_json 's["held"]')"
out=$(E run -n pumps -- true 2>&1)
check_contains "reload to 1 permit: nothing more handed out" ELK_E_PERMITS_TAKEN "$out"
kill -TERM $H1 $H2
wait $H1 $H2
wait_for 30 '[ "$(sem_json "len(s[\"holders\"])")" = 0 ]'
out=$(E run -n pumps -- sh -c 'echo $ELK_RESOURCE' 2>&1)
check "after the release: the one permit left is pumps#1" "pumps#1" "$out"
E status | grep -q '^  pumps#2 '
check "after the release: pumps#2 is no longer served" 1 $?
finish
