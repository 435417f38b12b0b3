#!/bin/bash
# elk guard: the actuator-side fencing check with its durable state file.
ELK=$1
. "$(dirname "$0")/lib.sh"
ST="$ELK_T_DIR/valve.state"

"$ELK" guard --state "$ST" 5; check "first token accepted" 0 $?
"$ELK" guard --state "$ST" 5; check "same token accepted again (same holder)" 0 $?
out=$("$ELK" guard --state "$ST" 4 2>&1); rc=$?
check "stale token refused with exit 65" 65 $rc
check_contains "refusal names the accepted token" "token 4 refused: 5 was already accepted" "$out"
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

# Usage errors.
"$ELK" guard --state "$ELK_T_DIR/u" 0 2>/dev/null; check "token 0 is a usage error" 64 $?
"$ELK" guard --state "$ELK_T_DIR/u" abc 2>/dev/null; check "non-numeric token" 64 $?
"$ELK" guard 5 2>/dev/null; check "missing --state" 64 $?
env -u ELK_FENCE_TOKEN "$ELK" guard --state "$ELK_T_DIR/u" 2>/dev/null; check "no token at all" 64 $?
"$ELK" guard --help | grep -q "Usage: elk guard"; check "guard --help" 0 $?
"$ELK" --help | grep -q "Exit codes"; check "elk --help" 0 $?
"$ELK" frob 2>/dev/null; check "unknown command" 64 $?
for c in run acquire release status; do
  "$ELK" $c --help | grep -q "Usage: elk $c"; check "$c --help" 0 $?
done
finish
