#!/bin/bash
# SPDX-License-Identifier: MIT
# Scenario 6: bad input wherever a person or a file can supply it, against a running elkd
# and a real server: resource names through the CLI and the raw control socket, CLI
# arguments, broken configuration files. Every case must end with a clear message and a
# named code or the documented exit status, nothing may crash, and nothing may stay locked.
# usage: s6_badinput.sh ELKD ELK
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
start_redis r1
gateway gw-a single "${RPORT[r1]}" "[resource valve]
ttl = 2s
stop_margin = 300ms"
act_init


say "== resource names through elk run / elk acquire"
long=$(printf 'v%.0s' $(seq 1 80))
names=("" "$long" $'bin\x01\x02ary' $'tab\tname' "two words" "{valve}" "val}ve" "valve{" "valve*" $'valve\nFROB')
for n in "${names[@]}"; do
  shown=$(printf '%q' "$n")
  out=$(timeout 10 "$ELK" --socket "$S_DIR/gw-a.sock" run "$n" -- "$WORK" gw-a 1 0.01 2>&1); rc=$?
  check "elk run $shown: usage error 64" 64 $rc
  check_contains "elk run $shown: says what a valid name is" "not a valid resource name" "$out"
  out=$(timeout 10 "$ELK" --socket "$S_DIR/gw-a.sock" acquire "$n" 2>&1); rc=$?
  check "elk acquire $shown: usage error 64" 64 $rc
done
out=$(timeout 10 "$ELK" --socket "$S_DIR/gw-a.sock" run ../etc -- "$WORK" gw-a 1 0.01 2>&1); rc=$?
check "elk run ../etc (valid name, not configured): 64" 64 $rc
check_contains "unconfigured resource: named code" "ELK_E_RESOURCE_UNKNOWN" "$out"
n=$(wc -l <"$ACT_LOG")
check "no command ever ran for a bad name" 0 "$n"

say "== raw control socket"
rawcase() { # rawcase DESCRIPTION EXPECTED-CODE REQUEST
  local out
  out=$(ctl gw-a --quiet-ms 200 "$3")
  check_contains "control: $1 -> $2" "ERR $2" "$out"
}
rawcase "ACQUIRE without a resource" ELK_E_CTL_SYNTAX "ACQUIRE"
rawcase "empty resource (two spaces)" ELK_E_CTL_SYNTAX "ACQUIRE  "
rawcase "unknown command" ELK_E_CTL_UNKNOWN "FROB valve"
rawcase "NUL byte in the name" ELK_E_CTL_SYNTAX 'ACQUIRE val\x00ve'
rawcase "control bytes in the name" ELK_E_NAME_INVALID 'ACQUIRE val\x01\x7fve'
rawcase "high bytes in the name" ELK_E_NAME_INVALID 'ACQUIRE v\xe9\xff'
rawcase "braces in the name" ELK_E_NAME_INVALID 'ACQUIRE {valve}'
rawcase "64-byte name" ELK_E_NAME_TOO_LONG "ACQUIRE $(printf 'v%.0s' $(seq 1 64))"
rawcase "unconfigured resource" ELK_E_RESOURCE_UNKNOWN "ACQUIRE nosuch"
rawcase "negative wait" ELK_E_CTL_SYNTAX "ACQUIRE valve -5"
rawcase "huge wait" ELK_E_CTL_SYNTAX "ACQUIRE valve 99999999999999999999999"
rawcase "wait with a bad unit" ELK_E_CTL_SYNTAX "ACQUIRE valve 10parsecs"
rawcase "extra words" ELK_E_CTL_SYNTAX "ACQUIRE valve 1s extra"
rawcase "RELEASE of a resource not held" ELK_E_NOT_HELD "RELEASE valve"
rawcase "600-byte line" ELK_E_CTL_TOO_LONG "ACQUIRE $(printf 'x%.0s' $(seq 1 600))"
out=$(ctl gw-a --quiet-ms 200 "ACQUIRE $(printf 'x%.0s' $(seq 1 600))" "PING")
check_contains "control: the connection still works after an over-long line" "OK PONG" "$out"
# A flood of garbage in one go, then a real request on the same connection.
garbage=$(head -c 3000 /dev/urandom | base64 -w 90 | sed 's/^/\\x01/' | tr '\n' ' ')
out=$(ctl gw-a --quiet-ms 300 $garbage "PING")
check_contains "control: still answers PING after 3 KB of garbage" "OK PONG" "$out"
errs=$(printf '%s\n' "$out" | grep -c '^ERR ELK_E_')
figure garbage_lines_answered_with_named_errors "$errs"
# A client that acquires over the raw socket and vanishes without a word: nothing stays locked.
out=$(ctl gw-a --quiet-ms 300 "ACQUIRE valve")
check_contains "control: raw ACQUIRE works" "OK ACQUIRED valve" "$out"
released() { [ "$(res_field gw-a valve state)" = idle ]; }
wait_until 30 released
st=$(res_field gw-a valve state)
check "the lease of a client that disconnected is released" idle "$st"
k=$(rcli r1 exists 'scen:{valve}')
check "no key left on the server" 0 "$k"
kill -0 "${ELKD_PID[gw-a]}"; check_true "elkd still running after all of it" $?

say "== CLI arguments"
cli() { # cli DESCRIPTION EXPECTED-EXIT ARGS...
  local d=$1 want=$2 out rc
  shift 2
  out=$(timeout 10 "$ELK" --socket "$S_DIR/gw-a.sock" "$@" 2>&1 </dev/null); rc=$?
  check "elk $d -> $want" "$want" $rc
  [ -n "$out" ]; check_true "elk $d prints a message" $?
}
cli "run without --" 64 run valve "$WORK" gw-a 1 0.01
cli "run with nothing after --" 64 run valve --
cli "run with an unknown option" 64 run --frob valve -- true
cli "run --wait -5" 64 run --wait -5 valve -- true
cli "run --wait 99999999999999999999" 64 run --wait 99999999999999999999 valve -- true
cli "run --wait 10parsecs" 64 run --wait 10parsecs valve -- true
cli "run --wait without a value" 64 run --wait
cli "acquire with no resource" 64 acquire
cli "acquire with two resources" 64 acquire valve other
cli "release with no resource" 64 release
cli "unknown command" 64 frobnicate
cli "no command" 64
cli "run of a command that does not exist" 127 run valve -- /nonexistent/cmd
cli "guard with a non-numeric token" 64 guard --state "$S_DIR/g.state" abc
cli "guard with a negative token" 64 guard --state "$S_DIR/g.state" -- -3
cli "guard with token 0" 64 guard --state "$S_DIR/g.state" 0
cli "guard with an overflowing token" 64 guard --state "$S_DIR/g.state" 99999999999999999999999
cli "guard with a token with trailing junk" 64 guard --state "$S_DIR/g.state" 12abc
cli "guard without --state" 64 guard 5
out=$(timeout 10 "$ELK" --socket "$S_DIR/nowhere.sock" status 2>&1); rc=$?
check "elk with no elkd behind the socket -> 69" 69 $rc
check_contains "and says what to check" "is elkd running" "$out"
n=$(wc -l <"$ACT_LOG")
check "still no actuator command (the only CMD runs were refused)" 0 "$n"

say "== broken configuration files (elkd --check)"
good="$S_DIR/good.conf"
cp "$S_DIR/gw-a.conf" "$good"
"$ELKD" -c "$good" --check >/dev/null 2>&1; check "elkd --check accepts the scenario's own file" 0 $?
confcase() { # confcase NAME LINE-EXPECTED CONTENT
  local f="$S_DIR/bad-$1.conf" out rc
  printf '%s\n' "$3" >"$f"
  out=$(timeout 10 "$ELKD" -c "$f" --check 2>&1); rc=$?
  check "config $1: exit 2" 2 $rc
  check_contains "config $1: message names file and line" "bad-$1.conf:$2:" "$out"
}
confcase ttl-unit 5 "[node a]
host = 127.0.0.1
port = 6379
[resource valve]
ttl = 10x"
confcase unknown-key 3 "[node a]
host = 127.0.0.1
colour = blue"
confcase no-equals 2 "[node a]
host 127.0.0.1"
confcase bad-section 1 "[nodes a]
host = 127.0.0.1"
confcase port-range 3 "[node a]
host = 127.0.0.1
port = 70000"
confcase binary-gateway-id 2 "[fleet]
gateway_id = gw$(printf '\001\002')x
[node a]
host = 127.0.0.1
[resource valve]
ttl = 2s"
confcase no-validity-left 4 "[node a]
host = 127.0.0.1
[resource valve]
ttl = 2s
stop_margin = 3s"
printf '[fleet]\nkey_prefix = a b\n[node a]\nhost = 127.0.0.1\n[resource valve]\nttl = 2s\n' >"$S_DIR/bad-prefix.conf"
out=$(timeout 10 "$ELKD" -c "$S_DIR/bad-prefix.conf" --check 2>&1); rc=$?
check "config key_prefix with a space: exit 2" 2 $rc
check_contains "and the message names the file and the key" "bad-prefix.conf" "$out"
check_contains "... the key" "key_prefix" "$out"
# A host with control bytes (or spaces) would only fail at run time (ELK_E_RESOLVE, retried
# forever): --check refuses it with the line of the key.
printf '[node a]\nhost = 127.0.0.1\001\002\n[resource valve]\nttl = 2s\n' >"$S_DIR/host-binary.conf"
out=$(timeout 10 "$ELKD" -c "$S_DIR/host-binary.conf" --check 2>&1); rc=$?
figure check_exit_for_host_with_control_bytes $rc
check "config host with control bytes: exit 2" 2 $rc
check_contains "config host with control bytes: file:line:key" "host-binary.conf:2: key 'host'" "$out"
confcase unterminated-section 1 "[node a
host = 127.0.0.1"
confcase bad-resource-name 4 "[node a]
host = 127.0.0.1
port = 6379
[resource {valve}]
ttl = 2s"
printf '[node a]\nhost = %s\n' "$(printf 'h%.0s' $(seq 1 5000))" >"$S_DIR/bad-long.conf"
out=$(timeout 10 "$ELKD" -c "$S_DIR/bad-long.conf" --check 2>&1); rc=$?
check "config with a 5000-byte line: exit 2" 2 $rc
check_contains "and a file:line message" "bad-long.conf:2:" "$out"
out=$(timeout 10 "$ELKD" -c "$S_DIR/missing.conf" --check 2>&1); rc=$?
check "missing config file: exit 2" 2 $rc
check_contains "and the message names it" "missing.conf" "$out"
head -c 4096 /dev/urandom >"$S_DIR/bad-random.conf"
timeout 10 "$ELKD" -c "$S_DIR/bad-random.conf" --check >/dev/null 2>&1; rc=$?
check "4 KB of random bytes as config: exit 2 (no crash)" 2 $rc
kill -0 "${ELKD_PID[gw-a]}"; check_true "the running elkd is unaffected" $?
finish
