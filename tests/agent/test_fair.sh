#!/bin/bash
# SPDX-License-Identifier: MIT
# Fair waiting through the agent (issue 28): five elkd gateways on a real 3-node Redlock fleet,
# logged in as the least-privilege user `elkd --print-acl` prints, contend for one resource
# with fair = on. gw1 holds it; gw2..gw5 ask in turn, each once the one before has its ticket
# (STATUS ticket=). gw3's elkd is then stopped (SIGSTOP) while queued. From the commands' own
# record (start/end lines with timestamps) and STATUS: the tickets rise in the order asked,
# the grants come in ticket order skipping the stopped waiter (gw1 gw2 gw4 gw5), never two at
# once, and the stopped waiter blocked gw4 no longer than its ticket TTL plus a generous bound.
# gw3, continued, gets its turn last. A reload to fair = off applies once the resource is idle.
# ELK_FAIR_MODE=off runs the same contention with fair = off: only the parts that do not
# depend on order are checked (all ran, never two at once).
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
MODE=${ELK_FAIR_MODE:-on}
TICKET_TTL_S=3 # CONFIG_ELK_FAIR_TICKET_TTL_MS, the default build

# --check: fair = on is for a [resource]; a [semaphore] is refused with a message naming it
printf '[node a]\nhost = 127.0.0.1\nport = 6379\n[semaphore pumps]\npermits = 2\nfair = on\n[agent]\nsocket = %s\n' \
  "$SOCK" >"$ELK_T_DIR/semfair.conf"
out=$("$ELKD" --check -c "$ELK_T_DIR/semfair.conf" 2>&1); rc=$?
check "--check refuses fair = on in a [semaphore] (exit 2)" 2 $rc
check_contains "--check says fair waiting is for a [resource]" "fair waiting is for a [resource] only" "$out"

for n in a b c; do start_redis "$n"; done
conf() { # conf GATEWAY FAIR -> $ELK_T_DIR/GATEWAY.conf, socket $ELK_T_DIR/GATEWAY.sock
  (umask 077; cat >"$ELK_T_DIR/$1.conf" <<CONF
$(redlock_section "$1" elk:)
$(acl_nodes "a b c")
$(resource valve 3s 300ms)
wait_min = 100ms
wait_max = 200ms
release_channel = on
fair = $2
[agent]
socket = $ELK_T_DIR/$1.sock
log_level = debug
CONF
  )
}
GWS="gw1 gw2 gw3 gw4 gw5"
for g in $GWS; do conf "$g" "$MODE"; done
out=$("$ELKD" --check -c "$ELK_T_DIR/gw1.conf" 2>&1)
check "--check accepts fair = $MODE on a [resource]" 0 $?
acl=$("$ELKD" -c "$ELK_T_DIR/gw1.conf" --print-acl); check "--print-acl exits 0" 0 $?
check_contains "the printed rule grants the queue's ZSET commands" "+zadd +zrem +zrank" "$acl"
acl=${acl//>PASSWORD/>s3cret-elk}
for n in a b c; do
  eval "p=\$REDIS_PORT_$n"
  # shellcheck disable=SC2086 # one ACL argument per word
  rcli "$p" $acl >/dev/null
done
for g in $GWS; do sup_elkd "$ELK_T_DIR/$g.sock" "$ELK_T_DIR/$g.log" "$ELK_T_DIR/$g.conf"; eval "PID_$g=\$SUP_EPID"; done
for g in $GWS; do wait_until 90 voting "$ELK_T_DIR/$g.sock" || bad "$g's fleet ready"; done
E() { local g=$1; shift; "$ELK" --socket "$ELK_T_DIR/$g.sock" "$@"; }
# field GATEWAY KEY: KEY of valve in that gateway's STATUS JSON
field() {
  E "$1" status --json 2>/dev/null | python3 -c '
import json, sys
print([x for x in json.load(sys.stdin)["resources"] if x["name"] == "valve"][0][sys.argv[1]])
' "$2" 2>/dev/null
}

# ticketed GATEWAY: its acquire has a ticket (2: it is idle, not in the queue at all)
ticketed() {
  local f t
  f=$(field "$1" fair) t=$(field "$1" ticket)
  [ "$f" = idle ] || [ "$f" = - ] && return 2
  [ -n "$t" ] && [ "$t" -gt 0 ]
}

LOG="$M/runs.log"
GO="$M/go"
# A command's record: start after the grant, end before the release; one clock for all.
rec() { echo "echo \"start \$(date +%s%N) $1 \$ELK_FENCE_TOKEN\" >>$LOG; $2; echo \"end \$(date +%s%N) $1\" >>$LOG"; }
E gw1 run valve -- sh -c "$(rec gw1 "while [ ! -e $GO ]; do sleep 0.05; done")" >"$M/gw1.out" 2>&1 &
track $!
wait_until 60 file_has 'start .* gw1' "$LOG" || bad "gw1 granted"

for g in gw2 gw3 gw4 gw5; do
  E "$g" run -w 300 valve -- sh -c "$(rec "$g" "sleep 0.3")" >"$M/$g.out" 2>&1 &
  eval "RUN_$g=\$!"
  track $!
  wait_until 60 file_has 'acquire round started' "$ELK_T_DIR/$g.log" || bad "$g asked"
  if [ "$MODE" = on ]; then
    # in the queue with its ticket (the first one is at the head at once: locking); gw1
    # holds, so a waiter seen idle did not go through the queue: that ends the wait at once
    wait_until 60 ticketed "$g" || { bad "$g took a ticket in the fleet's queue"; finish; }
    eval "T_$g=\$(field $g ticket)"
    eval "echo \"$g: fair=\$(field $g fair) ticket=\$T_$g ahead=\$(field $g ahead)\""
  fi
done
if [ "$MODE" = on ]; then
  [ "$T_gw2" -gt 0 ] && [ "$T_gw3" -gt "$T_gw2" ] && [ "$T_gw4" -gt "$T_gw3" ] && [ "$T_gw5" -gt "$T_gw4" ]
  check "tickets rise in the order asked ($T_gw2 < $T_gw3 < $T_gw4 < $T_gw5)" 0 $?
  js=$(E gw5 status --json)
  echo "$js" | python3 -c '
import json, sys
r = [x for x in json.load(sys.stdin)["resources"] if x["name"] == "valve"][0]
assert r["fair"] == "queued" and r["ticket"] == int(sys.argv[1]) and r["ahead"] >= 1, r
' "$T_gw5"
  check "STATUS --json: gw5 queued with its ticket, waiters ahead" 0 $?
  st=$(E gw5 status)
  echo "$st" | head -4
  echo "$st" | grep -qiE 'fair +ticket +ahead'
  check "elk status prints the fair, ticket and ahead columns" 0 $?
  echo "$st" | grep -E '^ *valve ' | grep -qE " queued +$T_gw5 +[1-9]"
  check "elk status prints gw5's place in the queue (queued, ticket $T_gw5, waiters ahead)" 0 $?
fi
kill -STOP "$PID_gw3"
touch "$GO"
ends() { cat "$LOG" 2>/dev/null | grep -c ^end; }
wait_for 180 '[ "$(ends)" -ge 4 ]' || bad "four commands ended"
cat "$LOG"
order=$(grep ^start "$LOG" | awk '{print $3}' | tr '\n' ' ')
check_contains "gw1, gw2, gw4 and gw5 ran" "gw1" "$order"
for g in gw2 gw4 gw5; do check_contains "$g ran" "$g" "$order"; done
if [ "$MODE" = on ]; then
  check "grants in ticket order, the stopped waiter skipped" "gw1 gw2 gw4 gw5 " "$order"
  # the stopped waiter's ticket expired within its TTL: gw4 waited for gw3 no longer than
  # that plus a generous bound (60 s) after gw2's release
  e2=$(awk '$1=="end" && $3=="gw2" {print $2}' "$LOG")
  s4=$(awk '$1=="start" && $3=="gw4" {print $2}' "$LOG")
  gap=$(((s4 - e2) / 1000000))
  echo "gw2 end -> gw4 start: $gap ms (ticket TTL ${TICKET_TTL_S} s)"
  [ "$gap" -lt $((TICKET_TTL_S * 1000 + 60000)) ]
  check "a stopped waiter blocks the others no longer than its ticket TTL plus the bound" 0 $?
fi
kill -CONT "$PID_gw3"
wait_for 180 '[ "$(ends)" -ge 5 ]' || bad "gw3 ran once continued"
# never two at once: each start after the end before it, on the one clock
python3 - "$LOG" <<'PY'
import sys
ev = [l.split() for l in open(sys.argv[1])]
busy = None
for kind, ts, gw, *rest in ev:
    if kind == "start":
        assert busy is None, ("overlap", busy, gw)
        busy = gw
    else:
        assert busy == gw, ("end without start", busy, gw)
        busy = None
toks = [int(r[3]) for r in ev if r[0] == "start"]
assert toks == sorted(toks) and len(set(toks)) == len(toks), toks
PY
check "never two holders at once, tokens rise" 0 $?
for g in gw1 gw2 gw3 gw4 gw5; do
  wait "$(eval "echo \${RUN_$g:-}")" 2>/dev/null
done
! grep -q "LOST" "$ELK_T_DIR"/gw*.log
check "no lease was lost" 0 $?
! grep -qi "noperm" "$ELK_T_DIR"/gw*.log
check "the least-privilege user ran every script (no NOPERM)" 0 $?

# a reload that turns fair off applies once the resource is idle (it is now)
if [ "$MODE" = on ]; then
  conf gw2 off
  kill -HUP "$PID_gw2"
  wait_for 60 "[ \"\$(field gw2 fair)\" = - ]" || bad "gw2 reloaded"
  check "reload: fair = off in force on the idle resource" "-" "$(field gw2 fair)"
  conf gw2 on
  kill -HUP "$PID_gw2"
  wait_for 60 "[ \"\$(field gw2 fair)\" = idle ]" || bad "gw2 reloaded again"
  check "reload: fair = on in force again" "idle" "$(field gw2 fair)"
fi
finish
