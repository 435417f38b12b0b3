#!/bin/bash
# SPDX-License-Identifier: MIT
# Shutdown with stop_margin = 0: elkd releases a supervised lease only once the command's
# process group is gone, even with no margin to wait for. elk run is stopped (SIGSTOP) so
# that only elkd can act, and the command ignores SIGTERM: elkd must SIGKILL the group and
# see it gone before it releases and exits. A release at the start of the shutdown (the
# margin being "over" at once) would leave the command driving after elkd let the lease go.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
elkd_up a <<CONF
$(resource valve-1 3s 0)
$(agent_section)
log_level = debug
CONF
LOG="$ELK_T_DIR/elkd.log"
"$ELK" --socket "$SOCK" run valve-1 -- sh -c "
  ( trap '' TERM; while :; do sleep 0.05; done ) & echo \$! > $M/child
  trap '' TERM
  echo \$\$ > $M/main
  while :; do sleep 0.05; done" 2>"$ELK_T_DIR/run.err" &
RUN=$!
track $RUN
wait_until 60 file_has . "$M/main"
main=$(cat "$M/main" 2>/dev/null) child=$(cat "$M/child" 2>/dev/null)
[ -n "$main" ] && [ -n "$child" ] || { bad "the command did not start"; finish; }
track "$main"; track "$child"
check "valve-1 held in Redis" 1 "$(rcli $REDIS_PORT_a exists 'elk:{valve-1}')"
kill -STOP $RUN
kill -TERM $ELKD_PID
wait_until 60 gone $ELKD_PID
check "elkd has exited" 0 $?
wait $ELKD_PID; check "elkd exits 0" 0 $?
# elk run is still stopped: whatever is gone now, elkd stopped.
alive "$main"; check "the command is gone when elkd has exited (elkd's SIGKILL)" 1 $?
alive "$child"; check "its child is gone too" 1 $?
grep -q "valve-1: released (its command has stopped)" "$LOG"
check "elkd released only once the command's group was gone" 0 $?
grep -q "valve-1: released (shutting down)" "$LOG"
check "no release at the start of the shutdown" 1 $?
check "valve-1 released in Redis" 0 "$(rcli $REDIS_PORT_a exists 'elk:{valve-1}')"
kill -CONT $RUN
wait_until 60 gone $RUN
wait $RUN; check "the resumed elk run exits 75" 75 $?
kill -KILL "$main" "$child" 2>/dev/null
finish
