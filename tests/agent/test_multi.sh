#!/bin/bash
# SPDX-License-Identifier: MIT
# elk run a,b: all or nothing through the agent, two elkd gateways on one real 3-node fleet.
# `elk run a,b` on one and `elk run b,a` on the other, repeatedly and at once: no deadlock
# (every run ends within a generous bound) and never both commands at once (from their own
# record). A resource of the set held elsewhere: the run fails without leaving the other
# held. The loss of one lease stops the command. Duplicates are refused.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
for n in a b c; do start_redis $n; done
D=$ELK_T_DIR
conf() { # conf GATEWAY SOCKET
  fleet3_conf "$1" t:
  echo
  resource a 10s 200ms
  echo
  resource b 10s 200ms
  echo
  # short leases for the loss below: a deleted key is found at the next renewal
  resource c 3s 200ms
  echo
  resource d 3s 200ms
  printf '\n[agent]\nsocket = %s\nlog_level = debug\n' "$2"
}
conf gw-1 "$D/1.sock" >"$D/1.conf"
conf gw-2 "$D/2.sock" >"$D/2.conf"
sup_elkd "$D/1.sock" "$D/elkd1.log" "$D/1.conf"
sup_elkd "$D/2.sock" "$D/elkd2.log" "$D/2.conf"
ready() { voting "$D/1.sock" && voting "$D/2.sock"; }
wait_until 60 ready || { echo "fleet not ready"; exit 1; }
G1() { "$ELK" --socket "$D/1.sock" "$@"; }
G2() { "$ELK" --socket "$D/2.sock" "$@"; }

# Duplicates: refused before anything is asked for.
out=$(G1 run a,b,a -- true 2>&1); rc=$?
check "a name twice: usage error" 64 $rc
check_contains "a name twice: said" "a is named twice" "$out"

# Opposite orders from two gateways, at once, 6 rounds.
LOG="$M/multi.log"
cmd='echo "start $(date +%s%N) $GW $ELK_RESOURCES $ELK_TOKENS" >>'"$LOG"'; sleep 0.1; echo "end $(date +%s%N) $GW" >>'"$LOG"
ROUNDS=6
for r in $(seq $ROUNDS); do
  GW=gw-1 G1 run -w 30 a,b -- sh -c "$cmd" >"$M/r$r.1.out" 2>&1 &
  p1=$!
  GW=gw-2 G2 run -w 30 b,a -- sh -c "$cmd" >"$M/r$r.2.out" 2>&1 &
  p2=$!
  track $p1
  track $p2
  # generous (each command takes 0.1 s): a deadlock holds both until their 30 s waits end,
  # and they fail
  wait_until 60 gone $p1 && wait_until 60 gone $p2
  check_true "round $r: both runs ended" $?
  wait $p1; rc1=$?
  wait $p2; rc2=$?
  check "round $r: both runs exit 0 (no deadlock)" "0 0" "$rc1 $rc2"
  [ "$rc1 $rc2" = "0 0" ] || break
done
check "every run started" $((2 * ROUNDS)) "$(grep -c ^start "$LOG")"
check "every run ended" $((2 * ROUNDS)) "$(grep -c ^end "$LOG")"
check "each was told both tokens" $((2 * ROUNDS)) "$(grep -cE '^start [0-9]+ gw-[12] a,b a=[0-9]+,b=[0-9]+$' "$LOG")"
python3 - "$LOG" <<'PY'
import sys
ev = []
for line in open(sys.argv[1]):
    w = line.split()
    ev.append((int(w[1]), 0 if w[0] == "end" else 1))
ev.sort()
run = peak = 0
for _, kind in ev:
    run += 1 if kind else -1
    peak = max(peak, run)
assert peak == 1, f"{peak} commands on a,b at once"
PY
check "from the record: never two commands on a,b at once" 0 $?

# A resource of the set held elsewhere: not acquired, and a is not left held.
keys_gone() { # keys_gone NAME: no server has t:{NAME}
  local p
  for p in $REDIS_PORT_a $REDIS_PORT_b $REDIS_PORT_c; do
    [ "$(rcli "$p" exists "t:{$1}")" = 0 ] || return 1
  done
}
"$ELK" --socket "$D/2.sock" acquire b >"$M/acq.out" 2>&1 &
A=$!
track $A
wait_for 30 'file_has acquired "$M/acq.out"'
before=$(wc -l <"$D/elkd1.log")
G1 run -w 2 a,b -- sh -c 'echo ran >'"$M/ran" 2>"$M/held.err"; rc=$?
check "b held on the other gateway: elk run a,b not acquired (73)" 73 $rc
[ ! -e "$M/ran" ]; check_true "b held: the command did not run" $?
check_contains "b held: says a was given back" "giving back the 1 taken before it" "$(cat "$M/held.err")"
# elkd's record: a was released at the client's word, before it went (not at its disconnect)
tail -n +"$((before + 1))" "$D/elkd1.log" | grep -q "a: released (its client asked)"
check_true "elkd's log: a released by its client's RELEASE" $?
G1 status --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
a = [r for r in d["resources"] if r["name"] == "a"][0]
assert a["holder"] is None and a["state"] != "held", a
'
check "STATUS: a not held after the failed run" 0 $?
wait_until 30 keys_gone a
check_true "no server keeps t:{a} after the failed run" $?
kill -TERM $A; wait $A

# The loss of one lease stops the command; the other is released only after it is gone.
G1 run c,d -- sh -c 'trap "echo term >>'"$M"'/loss; exit 0" TERM; echo started >>'"$M"'/loss; while :; do sleep 0.05; done' \
  >"$M/loss.out" 2>&1 &
L=$!
track $L
wait_for 30 'file_has started "$M/loss"'
for p in $REDIS_PORT_a $REDIS_PORT_b $REDIS_PORT_c; do rcli "$p" del "t:{d}" >/dev/null; done
wait_until 60 gone $L
check_true "the loss of d ended elk run c,d" $?
wait $L; rc=$?
check "elk run c,d exits with the lost code" 75 $rc
check_contains "the command was stopped (SIGTERM)" term "$(cat "$M/loss")"
wait_until 30 keys_gone c
check_true "c released after the command was gone" $?
finish
