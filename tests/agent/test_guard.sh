#!/bin/bash
# SPDX-License-Identifier: MIT
# elk guard: the actuator-side fencing check with its durable state file.
ELK=$1
. "$(dirname "$0")/lib.sh"
ST="$ELK_T_DIR/valve.state"

"$ELK" guard --state "$ST" 5; check "first token accepted" 0 $?
"$ELK" guard --state "$ST" 5; check "same token accepted again (same holder)" 0 $?
out=$("$ELK" guard --state "$ST" 4 2>&1); rc=$?
check "stale token refused with exit 65" 65 $rc
check_contains "refusal names the accepted token" "token 4 refused: lower than token 5, which was already accepted" "$out"
"$ELK" guard --state "$ST" 6; check "higher token accepted" 0 $?
ELK_FENCE_TOKEN=6 "$ELK" guard --state "$ST"; check "token from ELK_FENCE_TOKEN" 0 $?
ELK_FENCE_TOKEN=3 "$ELK" guard --state "$ST" 2>/dev/null; check "stale token from the environment" 65 $?
check_contains "state file holds the highest" "elkfence 1 6 " "$(cat "$ST")"
[ ! -e "$ST.tmp" ]; check "no temp file left behind" 0 $?

# A new state after a "restart" of the actuator program: still 6.
"$ELK" guard --state "$ST" 5 2>/dev/null; check "highest survives across processes" 65 $?

# Corrupt file: fail closed with its own exit code and a clear message, file untouched.
echo "elkfence 1 9 00000000" > "$ST"
out=$("$ELK" guard --state "$ST" 100 2>&1); rc=$?
check "corrupt state refused with exit 66" 66 $rc
check_contains "corrupt message" "fencing state file is corrupt" "$out"
check "corrupt file left for inspection" "elkfence 1 9 00000000" "$(cat "$ST")"

# Storage that cannot be written: fail closed.
out=$("$ELK" guard --state "$ELK_T_DIR/missing-dir/state" 1 2>&1); rc=$?
check "unwritable state refused with exit 66" 66 $rc
check_contains "storage message names errno" "No such file or directory" "$out"

# wait_file F: until F exists; wait_gone PID: until PID has exited (bounded by time, 30 s,
# never by a count of tries: a loaded machine makes every try slower)
wait_file() { wait_until 30 test -e "$1"; }
wait_gone() { wait_until 30 gone "$1"; }

# Check and hold: CMD runs only when the token is accepted, with the guard held; exit is CMD's.
H="$ELK_T_DIR/hold.state"
"$ELK" guard --state "$H" 5 -- sh -c 'exit 3'; check "hold: CMD's exit status passed on" 3 $?
"$ELK" guard --state "$H" 4 -- sh -c "touch $ELK_T_DIR/ran-4" 2>/dev/null; rc=$?
check "hold: stale token refused (65)" 65 $rc
[ ! -e "$ELK_T_DIR/ran-4" ]; check "hold: a refused step never runs" 0 $?
"$ELK" guard --state "$H" 5 -- "$ELK_T_DIR/no-such-cmd" 2>/dev/null; check "hold: CMD not found (127)" 127 $?
"$ELK" guard --state "$H" 5 -- 2>/dev/null; check "hold: -- without CMD is a usage error" 64 $?
"$ELK" guard --state "$H" 5 -- sh -c 'kill -KILL $$'; check "hold: CMD killed by a signal gives 128+N" 137 $?

# While a step holds the guard, a newer holder waits (bounded by --wait: exit 68) and starts
# only after the step has ended; the older holder is then refused.
"$ELK" guard --state "$H" 6 -- sh -c "touch $ELK_T_DIR/s6.started; while [ ! -e $ELK_T_DIR/s6.go ]; do sleep 0.02; done; touch $ELK_T_DIR/s6.ended" &
g6=$!; track $g6
wait_file "$ELK_T_DIR/s6.started"; check "hold: step 6 started" 0 $?
out=$("$ELK" guard --state "$H" --wait 200ms 7 -- true 2>&1); rc=$?
check "hold: a newer token waits for the running step; --wait runs out with exit 68" 68 $rc
check_contains "busy message says what to do" "another step held the guard" "$out"
# ... and who holds it: token, the guard's pid, its step's pid, since when
echo "$out"
check_contains "busy message names the holder's token and pid" "held the guard for all of --wait 200ms: token 6 (elk guard pid $g6, step pid " "$out"
echo "$out" | grep -Eq "step pid [0-9]+, since [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z, [0-9]+ ms ago\)"
check "busy message says since when the holder holds it" 0 $?
"$ELK" guard --state "$H" 7 -- sh -c "[ -e $ELK_T_DIR/s6.ended ] && touch $ELK_T_DIR/s7.after" 2>"$ELK_T_DIR/g7.err" &
g7=$!; track $g7
# a guard that waits says so, and for whom, before it waits (no --wait: unbounded)
wait_until 30 file_has "token 7 waits for the guard" "$ELK_T_DIR/g7.err"
check "hold: the waiting guard says it waits" 0 $?
cat "$ELK_T_DIR/g7.err"
check_contains "hold: ... and who holds the guard" "(--wait unbounded): held by token 6 (elk guard pid $g6, step pid " "$(cat "$ELK_T_DIR/g7.err")"
touch "$ELK_T_DIR/s6.go"
wait $g6; check "hold: step 6 completes" 0 $?
wait $g7; check "hold: step 7 ran (exit 0)" 0 $?
[ -e "$ELK_T_DIR/s7.after" ]; check "hold: step 7 started only after step 6 ended" 0 $?
[ ! -e "$H.holder" ]; check "hold: the holder's record is gone once its step has ended" 0 $?
out=$("$ELK" guard --state "$H" --wait 0 7 2>&1); rc=$?
check "a free guard: --wait 0 decides at once (accepted)" 0 $rc
"$ELK" guard --state "$H" 6 -- true 2>/dev/null; check "hold: the older holder is refused now" 65 $?

# Signals sent to the guard reach CMD.
"$ELK" guard --state "$H" 7 -- sh -c "trap 'touch $ELK_T_DIR/term; exit 9' TERM; touch $ELK_T_DIR/sig.ready; while :; do sleep 0.02; done" &
gs=$!; track $gs
wait_file "$ELK_T_DIR/sig.ready"
kill -TERM $gs
wait $gs; check "hold: SIGTERM forwarded, CMD's status returned" 9 $?
[ -e "$ELK_T_DIR/term" ]; check "hold: CMD saw the SIGTERM" 0 $?

# SIGKILL of the guard: CMD dies with it (parent-death signal), and the OS lock lives on in
# every process that inherited it (here a background child of CMD), so no newer step can
# start until the last of them is gone.
"$ELK" guard --state "$H" 7 -- sh -c "sh -c 'echo \$\$ > $ELK_T_DIR/kid.pid; while [ ! -e $ELK_T_DIR/kid.go ]; do sleep 0.02; done' & echo \$\$ > $ELK_T_DIR/cmd.pid; wait" &
gk=$!; track $gk
wait_file "$ELK_T_DIR/kid.pid" && wait_file "$ELK_T_DIR/cmd.pid"
kill -KILL $gk; wait $gk 2>/dev/null
wait_gone "$(cat "$ELK_T_DIR/cmd.pid")"; check "hold: CMD dies with a SIGKILLed guard" 0 $?
out=$("$ELK" guard --state "$H" --wait 200ms 8 2>&1); rc=$?
check "hold: the lock outlives the guard while a step process runs" 68 $rc
check_contains "hold: the busy message says the holder's guard is gone" "token 7 (elk guard pid $gk gone, step pid " "$out"
touch "$ELK_T_DIR/kid.go"
wait_gone "$(cat "$ELK_T_DIR/kid.pid")"
"$ELK" guard --state "$H" --wait 10s 8; check "hold: released once the last step process is gone" 0 $?

# A guard inside a held step decides under the step's hold instead of waiting for itself.
out=$("$ELK" guard --state "$H" 8 -- sh -c "\"$ELK\" guard --state $H --wait 2s 8 && echo inner-ok; \"$ELK\" guard --state $H --wait 2s 7 2>/dev/null; echo inner-stale=\$?")
check "hold: a guard inside the step does not wait for its own parent" "inner-ok
inner-stale=65" "$out"

# A stale temp file (a crash between create and rename) never refuses a later call.
echo "elkfence 1 99 000" > "$H.tmp.12345.0"
: > "$H.tmp.1.1"
"$ELK" guard --state "$H" 9; check "stale temp files do not refuse a call" 0 $?
ls "$ELK_T_DIR" | grep -q "hold.state.tmp"; check "stale temp files are swept" 1 $?
check_contains "state holds 9, not the temp's 99" "elkfence 1 9 " "$(cat "$H")"
rm -f "$H.lock"
"$ELK" guard --state "$H" 9; check "a missing lock file is created again" 0 $?
check "lock file mode 0600" 600 "$(stat -c %a "$H.lock")"

# Lease file (ELK_LEASE_FILE from elk run): refuse a step whose lease is over.
L="$ELK_T_DIR/lease"
now=$(awk '{printf "%d", $1 * 1000}' /proc/uptime) # CLOCK_BOOTTIME in ms
echo "elklease 1 9 $((now + 600000))" > "$L"
"$ELK" guard --state "$H" --lease-file "$L" 9 -- true; check "lease current: accepted" 0 $?
ELK_LEASE_FILE=$L "$ELK" guard --state "$H" 9; check "lease file from ELK_LEASE_FILE" 0 $?
echo "elklease 1 9 $((now - 1))" > "$L"
out=$("$ELK" guard --state "$H" --lease-file "$L" 9 -- touch "$ELK_T_DIR/late" 2>&1); rc=$?
check "lease deadline passed: refused with 67" 67 $rc
check_contains "message says the deadline passed" "lease deadline passed" "$out"
[ ! -e "$ELK_T_DIR/late" ]; check "the late step never ran" 0 $?
echo "elklease 1 9 0" > "$L"
out=$(ELK_LEASE_FILE=$L "$ELK" guard --state "$H" 9 2>&1); rc=$?
check "lease ended (deadline 0): refused with 67" 67 $rc
check_contains "message says the lease ended" "lease ended" "$out"
echo "elklease 1 10 $((now + 600000))" > "$L"
out=$("$ELK" guard --state "$H" --lease-file "$L" 9 2>&1); rc=$?
check "lease of another token: refused with 67" 67 $rc
check_contains "message names the other token" "names another token" "$out"
printf 'elklease 1 9 %s' $((now + 600000)) > "$L"
"$ELK" guard --state "$H" --lease-file "$L" 9 2>/dev/null; check "malformed lease file (no newline): refused" 67 $?
"$ELK" guard --state "$H" --lease-file "$ELK_T_DIR/no-lease" 9 2>/dev/null; check "missing lease file: refused" 67 $?
"$ELK" guard --state "$H" --lease-file "" 9 2>/dev/null; check "empty --lease-file is a usage error" 64 $?
"$ELK" guard --state "$H" --wait 5x 9 2>/dev/null; check "bad --wait is a usage error" 64 $?
"$ELK" guard --help | grep -q "67 refused by the lease file"; check "guard --help lists exit 67" 0 $?
"$ELK" --help | grep -q "68 guard busy"; check "elk --help lists exit 68" 0 $?

# Usage errors.
"$ELK" guard --state "$ELK_T_DIR/u" 0 2>/dev/null; check "token 0 is a usage error" 64 $?
"$ELK" guard --state "$ELK_T_DIR/u" abc 2>/dev/null; check "non-numeric token" 64 $?
"$ELK" guard 5 2>/dev/null; check "missing --state" 64 $?
env -u ELK_FENCE_TOKEN "$ELK" guard --state "$ELK_T_DIR/u" 2>/dev/null; check "no token at all" 64 $?
"$ELK" guard --help | grep -q "Usage: elk guard"; check "guard --help" 0 $?
"$ELK" --help | grep -q "Exit codes"; check "elk --help" 0 $?
"$ELK" frob 2>/dev/null; check "unknown command" 64 $?
for c in run acquire status reload; do
  "$ELK" $c --help | grep -q "Usage: elk $c"; check "$c --help" 0 $?
done
"$ELK" release --help 2>/dev/null; check "release: removed, a usage error" 64 $?
# --reset (issue 29): a replaced actuator starts from no token, unless a lease is current
R="$ELK_T_DIR/reset-state" RL="$ELK_T_DIR/reset-lease"
"$ELK" guard --state "$R" 50 >/dev/null 2>&1; check "reset: token 50 accepted" 0 $?
"$ELK" guard --state "$R" 10 >/dev/null 2>&1; check "reset: token 10 refused before the reset" 65 $?
# a lease current for ten more minutes (CLOCK_BOOTTIME ms, as elk run writes it)
printf 'elklease 1 50 %s\n' $(($(awk '{print int($1 * 1000)}' /proc/uptime) + 600000)) >"$RL"
out=$("$ELK" guard --state "$R" --reset --lease-file "$RL" 2>&1); rc=$?
check "reset refused while the lease file says a lease is current" 67 $rc
check_contains "and says whose" "lease of token 50 is current" "$out"
"$ELK" guard --state "$R" 10 >/dev/null 2>&1; check "the refused reset left the guard as it was" 65 $?
printf 'elklease 1 50 0\n' >"$RL"
out=$("$ELK" guard --state "$R" --reset --lease-file "$RL" 2>&1); rc=$?
check "reset once the lease ended" 0 $rc
check_contains "reset says what was forgotten" "had accepted up to token 50" "$out"
"$ELK" guard --state "$R" 10 >/dev/null 2>&1; check "after the reset a lower token is accepted" 0 $?
"$ELK" guard --state "$R" --reset 7 >/dev/null 2>&1; check "--reset with a token: usage" 64 $?
finish
