#!/bin/bash
# SPDX-License-Identifier: MIT
# Each way a lease ends reaches `elk run` with its own cause and message (issue 13, item 5):
# deadline passed without a quorum (nodes up, renewals refused), another holder's value
# found, the fleet out of reach, max_renewals, max_hold. Before, all of them said
# "deadline passed without a confirmed renewal", even when a quorum had just been seen
# holding another value.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
start_redis a
# ttl 3 s renewed every 0.6 s: about 1.4 s between a renewal and its deadline. With ttl 2 s,
# a third, and the 1 s stop margin that was about 0.3 s, so a loaded machine's stall lost a
# lease before the case's own cause came into play, and the message named another cause.
write_conf() {
  cat > "$C" <<CONF
[node a]
host = 127.0.0.1
port = $1
request_timeout = 300ms
$(resource valve-1 3s 1s)
renew_fraction = 0.2
$(resource capped-renewals 3s 1s)
renew_fraction = 0.2
max_renewals = 2
$(resource capped-hold 3s 1s)
renew_fraction = 0.2
max_hold = 3s
$(agent_section)
log_level = debug
CONF
}
write_conf $REDIS_PORT_a
start_elkd "$C"
wait_ready

# lose RESOURCE NAME ACTION: hold RESOURCE with elk run, do ACTION once it drives, and
# collect elk run's message in $ELK_T_DIR/NAME.err. The command ignores SIGTERM, so elk run
# keeps reading elkd for the whole stop margin (1 s) after stopping on its own copy of the
# deadline: elkd's LOST, sent at that same deadline, reaches it with the cause.
lose() {
  local res=$1 name=$2 action=$3 r
  rm -f "$ELK_T_DIR/started"
  wc -l <"$ELK_T_DIR/elkd.log" >"$ELK_T_DIR/$name.mark"
  # --wait: after the ACL fault below the node's clock reading is old, and the first round's
  # reply only renews it (vote hygiene: an unverified clock gives no vote); the retry counts
  "$ELK" --socket "$SOCK" run --wait 10s "$res" -- sh -c "trap '' TERM; touch $ELK_T_DIR/started; while :; do sleep 0.05; done" \
    2>"$ELK_T_DIR/$name.err" &
  r=$!
  track $r
  wait_for 30 '[ -e "$ELK_T_DIR/started" ]'
  eval "$action"
  wait $r; check "$name: elk run exits 75" 75 $?
  # the next case starts on a free resource: the key is gone (released, or expired)
  key_gone() { [ "$(rcli $REDIS_PORT_a exists "elk:{$res}" 2>/dev/null)" = 0 ] || ! kill -0 $REDIS_PID_a 2>/dev/null; }
  wait_until 30 key_gone
}
# down_at_loss NAME: 0 when elkd's log shows node a down (not back) when the lease of case
# NAME was lost: the fleet was out of reach, and ELK_E_FLEET_LOST is then the right cause
# even for a case meant to keep the node up (a renewal that timed out on a loaded machine
# takes the connection down). Read from elkd's own record, between the case's start and its
# LOST line, not guessed from timing.
down_at_loss() {
  tail -n +$(($(cat "$ELK_T_DIR/$1.mark") + 1)) "$ELK_T_DIR/elkd.log" | awk -v a="127.0.0.1:$REDIS_PORT_a" '
    / elkd: [^ ]*: LOST \(/ { exit }
    index($0, "node: " a " down") { down = 1 }
    index($0, "node: " a " ready") || / elkd: node a .* is back after / { down = 0 }
    END { exit down ? 0 : 1 }'
}

lose valve-1 taken "rcli $REDIS_PORT_a set 'elk:{valve-1}' other-holder:1 px 5000 >/dev/null"
check_contains "taken: names another holder's value" "no longer holds this holder's value" \
  "$(cat "$ELK_T_DIR/taken.err")"
rcli $REDIS_PORT_a del 'elk:{valve-1}' >/dev/null

lose capped-renewals max_renewals ":"
check_contains "max_renewals: names the cap" "max_renewals reached" "$(cat "$ELK_T_DIR/max_renewals.err")"
lose capped-hold max_hold ":"
check_contains "max_hold: names the cap" "max_hold reached" "$(cat "$ELK_T_DIR/max_hold.err")"

# Renewals refused while the node stays connected: the deadline passes without a quorum.
lose valve-1 no_quorum "rcli $REDIS_PORT_a acl setuser default -evalsha -eval >/dev/null"
if down_at_loss no_quorum; then
  say "no quorum: elkd's log shows node a down at the loss (a renewal timed out): the fleet was lost"
  check_contains "no quorum (node down at the loss, elkd's log): names the unreachable fleet" \
    "too few nodes were reachable to renew it before the deadline [ELK_E_FLEET_LOST]" "$(cat "$ELK_T_DIR/no_quorum.err")"
  want_nq=FLEET_LOST
else
  check_contains "no quorum: names the deadline" "the deadline passed before a quorum confirmed a renewal [ELK_E_LOCK_LOST]" \
    "$(cat "$ELK_T_DIR/no_quorum.err")"
  want_nq=LOCK_LOST
fi
figure no_quorum_cause "$want_nq"
rcli $REDIS_PORT_a acl setuser default +@all >/dev/null

lose valve-1 fleet_lost "kill -KILL $REDIS_PID_a"
check_contains "fleet lost: names the unreachable fleet" "too few nodes were reachable to renew it before the deadline [ELK_E_FLEET_LOST]" \
  "$(cat "$ELK_T_DIR/fleet_lost.err")"

down_at_loss fleet_lost; check_true "fleet lost: elkd's log shows the node down at the loss" $?
# Five causes, five different messages (four when the log showed the no-quorum case's node
# down: its cause is then the fleet's, checked above)
want=5
[ "$want_nq" = FLEET_LOST ] && want=4
n=$(for f in taken max_renewals max_hold no_quorum fleet_lost; do grep -o '\[ELK_E_[A-Z_]*\]' "$ELK_T_DIR/$f.err" | head -1; done | sort -u | wc -l)
check "distinct causes reported" $want "$n"
finish
