#!/bin/bash
# SPDX-License-Identifier: MIT
# elk run --on-suspect (issue 20) against elkd and a real 3-node Redlock fleet: two of the
# three servers stop answering (SIGSTOP) mid-lease, so a renewal misses its quorum while the
# deadline has not passed: EVENT SUSPECT, and the hook runs with the lease in its
# environment. The servers come back, a renewal confirms the lease (EVENT RECOVERED): the
# command goes on to its own end (exit 0), the --on-lost hook never runs.
# renew_fraction is high so that the first renewal after the recovery would come after the
# deadline elk held at SUSPECT time: an elk that ignored RECOVERED stops its command (75).
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
elkd_up "a b c" <<CONF
$(redlock_section gw-test t:)
request_timeout = 300ms
# the servers are stopped, not restarted: their quarantine after a reconnect is not what
# this test is about (and would hold the recovery back past the deadline)
vote_hygiene = off
[resource valve-1]
ttl = 12s
renew_fraction = 0.5
stop_margin = 500ms
$(agent_section)
log_level = debug
CONF

"$ELK" --socket "$SOCK" run \
  --on-suspect "env | grep '^ELK_' | sort > $M/suspect.tmp; mv $M/suspect.tmp $M/suspect.env; exit 3" \
  --on-lost "touch $M/lost" \
  valve-1 -- sh -c "echo \$ELK_FENCE_TOKEN > $M/token; echo \$ELK_LEASE_FILE > $M/leasefile; touch $M/started
                    while [ ! -e $M/let-go ]; do sleep 0.05; done; exit 0" 2>"$ELK_T_DIR/run.err" &
R=$!
wait_for 30 '[ -e "$M/started" ]'
kill -STOP $REDIS_PID_b $REDIS_PID_c
wait_for 60 '[ -s "$M/suspect.env" ]'; check "the --on-suspect hook ran when the renewal missed its quorum" 0 $?
lf=$(cat "$M/leasefile")
dl_suspect=$(cut -d' ' -f4 "$lf" 2>/dev/null || echo 0)
kill -CONT $REDIS_PID_b $REDIS_PID_c
env=$(cat "$M/suspect.env" 2>/dev/null)
check_contains "hook: ELK_EVENT=suspect" "ELK_EVENT=suspect" "$env"
check_contains "hook: ELK_RESOURCE" "ELK_RESOURCE=valve-1" "$env"
check_contains "hook: ELK_TOKEN is the lease's token" "ELK_TOKEN=$(cat "$M/token")" "$env"
left=$(echo "$env" | sed -n 's/^ELK_TIME_LEFT_MS=//p')
[ "${left:-0}" -gt 0 ] 2>/dev/null; check "hook: ELK_TIME_LEFT_MS is the validity left (${left:-none})" 0 $?
# RECOVERED moves the deadline the command sees (the lease file) beyond the one it had
moved() { local d; d=$(cut -d' ' -f4 "$lf" 2>/dev/null); [ "${d:-0}" -gt "$dl_suspect" ] && return 0; [ "${d:-0}" = 0 ] && return 2; return 1; }
wait_until 60 moved; check "the lease recovered: the deadline moved on (from $dl_suspect)" 0 $?
touch "$M/let-go"
wait_until 60 gone $R; check "elk run ends" 0 $?
kill -KILL $R 2>/dev/null # only if it hangs: it is still unreaped, the pid is its own
wait $R; rc=$?
check "the command ran to its own end: exit 0, not 75" 0 $rc
[ -e "$M/lost" ]; check "the --on-lost hook did not run" 1 $?
check_contains "the failing hook is reported" "the --on-suspect hook exited 3" "$(cat "$ELK_T_DIR/run.err")"
finish
