#!/bin/bash
# SPDX-License-Identifier: MIT
# elk run beside flock(1) (issue 29): the same cases, side by side. -w takes seconds, -n fails
# at once on a held lock, -E sets the exit code for "held", -c runs a string through /bin/sh,
# a usage error is one line and a pointer to --help. Then elk's exit codes, one cause each,
# on a real fleet of three: held (73) is not "fleet unreachable" (76, 2 of 3 servers down).
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
command -v flock >/dev/null || { echo "flock(1) (util-linux) is needed"; exit 1; }
for n in a b c; do start_redis $n; done
{
  fleet3_conf gw-flock elkflock:
  printf '[resource valve-1]\nttl = 5s\nstop_margin = 300ms\nwait_min = 20ms\nwait_max = 50ms\n'
  printf '[agent]\nsocket = %s\n' "$SOCK"
} >"$C"
start_elkd "$C"
wait_ready
E() { "$ELK" --socket "$SOCK" "$@"; }
F="$ELK_T_DIR/flock.lock"

# both held: the resource by an elk acquire, the file by a flock
"$ELK" --socket "$SOCK" acquire valve-1 >"$ELK_T_DIR/hold.out" 2>&1 &
HOLD=$!; track $HOLD
# -o: the sleep does not inherit the lock, so ending flock ends the hold
flock -o "$F" sleep 600 &
FHOLD=$!; track $FHOLD
wait_for 60 'file_has "^acquired valve-1" "$ELK_T_DIR/hold.out"' || bad "the holder never got valve-1"
wait_for 60 '! flock -n "$F" true' || bad "flock never held $F"

# 1. -w SECONDS: a bare number is seconds, as in flock. Each waits its 2 s out (a lower
# bound: a millisecond wait would be back at once) and says "held".
t0=$(now_ms); flock -w 2 "$F" true; frc=$?; fel=$(($(now_ms) - t0))
t0=$(now_ms); E run -w 2 valve-1 -- true 2>"$ELK_T_DIR/w.err"; erc=$?; eel=$(($(now_ms) - t0))
check "flock -w 2 on a held lock: exit 1" 1 $frc
check "elk run -w 2 on a held resource: exit 73 (held)" 73 $erc
[ "$fel" -ge 1900 ]; check_true "flock -w 2 waited 2 s ($fel ms)" $?
[ "$eel" -ge 1900 ]; check_true "elk run -w 2 waited 2 s, not 2 ms ($eel ms)" $?
E run --wait=0.5 valve-1 -- true 2>/dev/null; check "--wait=0.5 (fractional seconds): exit 73" 73 $?
E run -w 1500ms valve-1 -- true 2>/dev/null; check "-w 1500ms (a unit): exit 73" 73 $?

# 2. -n: fail at once, and it wins over -w as in flock (a 600 s wait would time the test out)
t0=$(now_ms); flock -n -w 600 "$F" true; frc=$?; fel=$(($(now_ms) - t0))
t0=$(now_ms); E run -n -w 600 valve-1 -- true 2>/dev/null; erc=$?; eel=$(($(now_ms) - t0))
check "flock -n on a held lock: exit 1" 1 $frc
check "elk run -n on a held resource: exit 73" 73 $erc
[ "$eel" -lt 300000 ]; check_true "elk run -n -w 600 did not wait ($eel ms; flock: $fel ms)" $?
E run --nonblock valve-1 -- true 2>/dev/null; check "--nonblock: exit 73" 73 $?

# 3. -E CODE: the exit code for "held by another"
flock -n -E 42 "$F" true; check "flock -n -E 42: exit 42" 42 $?
E run -n -E 42 valve-1 -- true 2>/dev/null; check "elk run -n -E 42: exit 42" 42 $?
E run --conflict-exit-code=7 -w 0.2 valve-1 -- true 2>/dev/null; check "--conflict-exit-code=7 after a wait: 7" 7 $?
E acquire -n -E 9 valve-1 2>/dev/null; check "elk acquire -n -E 9: exit 9" 9 $?
E run -E 300 valve-1 -- true 2>/dev/null; check "-E 300 (not an exit code): usage, 64" 64 $?

for p in $(pgrep -P $FHOLD); do track $p; done
kill $HOLD $FHOLD; wait $HOLD $FHOLD 2>/dev/null; untrack $HOLD; untrack $FHOLD

# 4. -c STRING: through /bin/sh, its output and exit status passed on
fo=$(flock "$F" -c 'echo "one $((1 + 1))"; exit 3'); frc=$?
eo=$(E run -w 30 valve-1 -c 'echo "one $((1 + 1))"; exit 3'); erc=$?
check "flock -c: output" "one 2" "$fo"
check "elk run -c: the same output" "$fo" "$eo"
check "flock -c: the command's exit status" 3 $frc
check "elk run -c: the same exit status" $frc $erc
eo=$(E run -w 30 -c 'echo "$ELK_RESOURCE $((ELK_FENCE_TOKEN > 0))"' valve-1); erc=$?
check "-c before the resource, with the lease's environment" "valve-1 1" "$eo"
E run valve-1 -c true -- true 2>/dev/null; check "-c and '-- CMD' together: usage, 64" 64 $?

# 5. a usage error is one line, then where to look, as flock does it
fe=$(flock --bogus "$F" true 2>&1 >/dev/null); frc=$?
ee=$(E run --bogus valve-1 -- true 2>&1 >/dev/null); erc=$?
check "flock: usage error, 2 lines" 2 "$(printf '%s\n' "$fe" | wc -l)"
check "elk run: usage error, 2 lines (not the whole help)" 2 "$(printf '%s\n' "$ee" | wc -l)"
check "elk run: usage exit 64" 64 $erc
check_contains "the second line points at --help" "Try 'elk run --help'" "$ee"
ee=$(E run --wiat 3 valve-1 -- true 2>&1); check_contains "a near miss is named" "did you mean --wait?" "$ee"
ee=$(E stauts 2>&1); check "unknown command: exit 64" 64 $?
check_contains "unknown command: did you mean" "did you mean 'status'?" "$ee"
check "unknown command: 2 lines" 2 "$(printf '%s\n' "$ee" | wc -l)"
ee=$(E run valve-1 2>&1); check "missing command: 2 lines" 2 "$(printf '%s\n' "$ee" | wc -l)"
ee=$(E run -w soon valve-1 -- true 2>&1); check "bad -w: 2 lines" 2 "$(printf '%s\n' "$ee" | wc -l)"

# 6. exit codes, one cause each: with 2 of 3 servers down no quorum can be reached, which is
# not "held by another holder"
kill $REDIS_PID_a $REDIS_PID_b
down() { E status | grep -q "nodes_ready=1/3"; }
wait_until 60 down || bad "elkd never saw 2 of 3 nodes down"
out=$(E run valve-1 -- true 2>&1); rc=$?
check "2 of 3 servers down, one attempt: exit 76 (fleet unreachable)" 76 $rc
check_contains "and the cause is named" "ELK_E_FLEET_UNAVAILABLE" "$out"
echo "$out"
echo "$out" | grep -Eq '\(([0-9]+) ok, ([0-9]+) busy, ([0-9]+) failed[^)]* of 3'; check "with the node counts" 0 $?
sum=$(echo "$out" | sed -E 's/.*\(([0-9]+) ok, ([0-9]+) busy, ([0-9]+) failed(, ([0-9]+) quarantined)?(, ([0-9]+) without a vote)?(, ([0-9]+) not answered)? of 3.*/\1+\2+\3+0\5+0\7+0\9/')
case "$sum" in *[!0-9+]* | "") bad "no counts in: $out" ;; *) check "the counts add up to the fleet ($sum)" 3 $((sum)) ;; esac
out=$(E run -w 1 -E 42 valve-1 -- true 2>&1); rc=$?
check "2 of 3 down, a wait that runs out: 76 (-E is for held only)" 76 $rc
check_contains "the last round's cause" "last round: ELK_E_FLEET_UNAVAILABLE" "$out"
E acquire valve-1 >/dev/null 2>&1; check "elk acquire: 76 too" 76 $?
kill -TERM $ELKD_PID; wait $ELKD_PID
E run valve-1 -- true 2>/dev/null; check "elkd gone: 69" 69 $?
finish
