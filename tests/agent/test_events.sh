#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 32: the lease event record. Two gateways (gw-a, gw-b) contend for valve-1 on one
# fleet of three; every grant, wait, refusal, SUSPECT, loss and release lands in each
# elkd's events_file, survives elkd being killed (-9) and continues its sequence after a
# restart; `elk events` filters and prints it, `elk timeline` merges both gateways into a
# page with one lane per gateway and resource and no overlap. Order is forced by files the
# commands create and wait for, never by sleeping.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
start_redis a; start_redis b; start_redis c
D=$ELK_T_DIR
conf() { # gateway socket events
  fleet3_conf "$1" ev:
  # ttl 3 s: about 1.8 s between a renewal and its deadline. At 2 s a stall of about a
  # second lost a hold whose record must read grant, refused, release before the planned loss.
  printf '[resource valve-1]\nttl = 3s\nstop_margin = 200ms\nmin_validity = 200ms\n'
  printf '[agent]\nsocket = %s\nevents_file = %s\nevents_max = 64\n' "$2" "$3"
}
conf gw-a "$D/a.sock" "$D/a.events" > "$D/a.conf"
conf gw-b "$D/b.sock" "$D/b.events" > "$D/b.conf"
sup_elkd "$D/a.sock" "$D/a.log" "$D/a.conf"; PID_A=$SUP_EPID
sup_elkd "$D/b.sock" "$D/b.log" "$D/b.conf"; PID_B=$SUP_EPID
ready() { voting "$D/a.sock" && voting "$D/b.sock"; }
wait_until 60 ready || { echo "fleet not ready"; exit 1; }
A() { "$ELK" --socket "$D/a.sock" "$@"; }
B() { "$ELK" --socket "$D/b.sock" "$@"; }
hold_until() { # file-to-create file-to-wait-for: a step that holds until told
  echo "touch $1; while [ ! -e $2 ]; do sleep 0.05; done"
}

# gw-a holds; gw-b waits for it (a fleet-level wait), and a one-shot on gw-a is refused
# locally while gw-a's own holder has it.
A run valve-1 -- sh -c "$(hold_until "$D/a.held" "$D/a.go")" &
wait_until 60 test -e "$D/a.held" || { echo "gw-a never held"; exit 1; }
B run --wait 60s valve-1 -- sh -c "$(hold_until "$D/b.held" "$D/b.go")" &
B_RUN=$!
wait_until 30 grep -q '"ev":"wait"' "$D/b.events" || { echo "gw-b's wait not recorded"; exit 1; }
A run valve-1 -- true; check "one-shot refused while held" 73 "$?"
touch "$D/a.go"
wait_until 60 test -e "$D/b.held" || { echo "gw-b never got it"; exit 1; }
touch "$D/b.go"; wait "$B_RUN"

# A loss on gw-a: two nodes frozen while it holds; SUSPECT, then LOST by the deadline.
A run --on-lost "touch $D/a.lost" valve-1 -- sh -c "$(hold_until "$D/a.held2" "$D/never")" &
wait_until 60 test -e "$D/a.held2" || { echo "gw-a never held again"; exit 1; }
kill -STOP "$REDIS_PID_b" "$REDIS_PID_c"
wait_until 60 test -e "$D/a.lost" || { echo "no loss reported"; kill -CONT "$REDIS_PID_b" "$REDIS_PID_c"; exit 1; }
kill -CONT "$REDIS_PID_b" "$REDIS_PID_c"
wait_until 60 grep -q '"ev":"lost"' "$D/a.events"

# Crash: elkd -9 keeps what it wrote; a restart continues the sequence.
kill -KILL "$PID_A"; wait "$PID_A" 2>/dev/null; untrack "$PID_A"
A events --file "$D/a.events" --json > "$D/a.before.jsonl"
kinds() { sed -E 's/.*"ev":"([a-z_]+)".*/\1/' "$1" | tr '\n' ' '; }
echo "gw-a: $(kinds "$D/a.before.jsonl")"
check "gw-a's record: grant, refused (busy), release, grant, suspect, lost, in that order" \
  "grant refused release grant suspect lost" \
  "$(kinds "$D/a.before.jsonl" | tr ' ' '\n' | grep -Ex 'grant|refused|release|suspect|lost' | uniq | tr '\n' ' ' | sed 's/ $//')"
check_contains "the loss names its cause" '"ev":"lost"' "$(grep ELK_E_ "$D/a.before.jsonl")"
check_contains "the refusal names its cause" 'ELK_E_LOCK_BUSY' "$(grep '"ev":"refused"' "$D/a.before.jsonl")"
check "grant records the holder's pid, uid and command" 1 \
  "$(grep -m1 '"ev":"grant"' "$D/a.before.jsonl" | grep -c '"uid":0,"pid":[1-9][0-9]*,"cmd":"elk"')"
check "a grant has a deadline after its time" yes \
  "$(grep -m1 '"ev":"grant"' "$D/a.before.jsonl" | sed -E 's/.*"t":([0-9]+).*"deadline":([0-9]+).*/\1 \2/' | awk '{ print ($2 > $1) ? "yes" : "no" }')"
last=$(tail -1 "$D/a.before.jsonl" | sed -E 's/.*"seq":([0-9]+).*/\1/')
sup_elkd "$D/a.sock" "$D/a.log" "$D/a.conf"; PID_A=$SUP_EPID
wait_until 60 voting "$D/a.sock"
# (late renewals the frozen nodes still had queued may keep the old key a TTL longer: wait)
A run --wait 30s valve-1 -- true
A events --file "$D/a.events" --json > "$D/a.after.jsonl"
seqs_new=$(tail -n +"$(($(wc -l < "$D/a.before.jsonl") + 1))" "$D/a.after.jsonl" | sed -E 's/.*"seq":([0-9]+).*/\1/' | tr '\n' ' ')
check "the sequence goes on after a restart" "$((last + 1))" "$(echo "$seqs_new" | awk '{ print $1 }')"
check "the restarted elkd recorded the new grant" 1 "$(tail -n +"$(($(wc -l < "$D/a.before.jsonl") + 1))" "$D/a.after.jsonl" | grep -c '"ev":"grant"')"
check "nothing written before the crash was lost" "$(wc -l < "$D/a.before.jsonl")" \
  "$(head -n "$(wc -l < "$D/a.before.jsonl")" "$D/a.after.jsonl" | cmp -s - "$D/a.before.jsonl" && wc -l < "$D/a.before.jsonl")"

# gw-b: wait, grant, release; the text form and the filters.
B events --file "$D/b.events" > "$D/b.txt"
check_contains "text: time, gateway, resource, kind, token" "gw-b valve-1 grant token=" "$(cat "$D/b.txt")"
check "--resource of another resource prints nothing" 0 "$(B events --file "$D/b.events" --resource pump-9 | wc -l)"
check "--since 1h keeps everything" "$(wc -l < "$D/b.txt")" "$(B events --file "$D/b.events" --since 1h | wc -l)"
check "--since a future time keeps nothing" 0 "$(B events --file "$D/b.events" --since 2099-01-01T00:00:00 | wc -l)"
B events --file "$D/none" >/dev/null 2>&1; check "a missing record: exit 1" 1 "$?"
B events --since yesterday >/dev/null 2>&1; check "a bad --since: exit 64" 64 "$?"

# Both gateways on one page: a lane per gateway, no overlap (the record's own times).
B events --file "$D/b.events" --json > "$D/b.jsonl"
"$ELK" timeline -o "$D/page.html" "$D/a.after.jsonl" "$D/b.jsonl" > "$D/timeline.out"
check "timeline written" 0 "$?"
cat "$D/timeline.out"
check "two lanes" 'data-lanes="2"' "$(grep -o 'data-lanes="[0-9]*"' "$D/page.html")"
check "no overlap between the gateways" 'data-overlaps="0"' "$(grep -o 'data-overlaps="[0-9]*"' "$D/page.html")"
check "one bar per grant" "$(cat "$D/a.after.jsonl" "$D/b.jsonl" | grep -c '"ev":"grant"')" \
  "$(sed 's/<table class="legend">.*//' "$D/page.html" | grep -o 'class="bar hold' | wc -l)"
if [ -n "${ELK_TIMELINE_OUT:-}" ]; then cp "$D/page.html" "$ELK_TIMELINE_OUT"; fi
finish
