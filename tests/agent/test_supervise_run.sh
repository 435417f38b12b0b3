#!/bin/bash
# SPDX-License-Identifier: MIT
# What `elk run` does on its own, with elkd's supervision out of the picture (a scripted
# elkd, fake_elkd_supervise.py, that signals nothing):
#   a) elkd refuses SUPERVISE: the command never starts, elk exits 77 and says why, and
#      gives the lease back;
#   b) the lease is lost: elk sends the command's group SIGTERM, ends the lease file
#      (deadline 0) before that, and sends SIGKILL itself once the stop margin (300 ms) is
#      over to a command that ignores SIGTERM; then exits 75;
#   c) the command exits but leaves a child in its group that ignores SIGTERM: elk stops
#      it itself (SIGTERM, SIGKILL after the margin) and releases only once it is gone.
ELK=$1
ELKD=unused
. "$(dirname "$0")/lib.sh"
SOCK="$ELK_T_DIR/fake.sock"
LOG="$ELK_T_DIR/fake.lines"

fake_elkd() { fake_elkd_start fake_elkd_supervise.py "$1" "$M"; }

# a) SUPERVISE refused.
fake_elkd deny
"$ELK" --socket "$SOCK" run valve-1 -- sh -c "touch $M/started" 2>"$ELK_T_DIR/deny.err"; rc=$?
check "a) SUPERVISE refused: elk run exits 77" 77 $rc
[ ! -e "$M/started" ]; check "a) the command did not run" 0 $?
check_contains "a) elk says elkd refused to supervise it and names the code" \
  "elkd refused to supervise the command" "$(cat "$ELK_T_DIR/deny.err")"
check_contains "a) ... with elkd's reason" "ELK_E_SUPERVISE_DENIED" "$(cat "$ELK_T_DIR/deny.err")"
check_contains "a) ... and that it did not start it" "not starting it" "$(cat "$ELK_T_DIR/deny.err")"
wait_until 30 file_has "RELEASE valve-1" "$LOG"
check "a) elk gave the lease back" 0 $?
wait $FAKE_PID 2>/dev/null

# b) Lost: elk's own SIGTERM, lease file ended first, elk's own SIGKILL after the margin.
rm -f "$M"/*
fake_elkd lost
"$ELK" --socket "$SOCK" run valve-1 -- sh -c "
  ( trap '' TERM; while :; do sleep 0.05; done ) & echo \$! > $M/child
  echo \$\$ > $M/main
  trap 'cat \"\$ELK_LEASE_FILE\" > $M/lease_at_term; echo term >> $M/terms' TERM
  cat \"\$ELK_LEASE_FILE\" > $M/lease_at_start
  touch $M/ready
  while :; do sleep 0.05; done" 2>"$ELK_T_DIR/lost.err" &
RUN=$!
track $RUN
wait_until 60 file_has . "$M/child"
child=$(cat "$M/child" 2>/dev/null) main=$(cat "$M/main" 2>/dev/null)
[ -n "$child" ] && [ -n "$main" ] && track "$child" && track "$main"
wait_until 60 file_has "EVENT LOST sent" "$LOG"
check "b) the scripted elkd said LOST" 0 $?
wait_until 60 file_has term "$M/terms"
check "b) the command got SIGTERM from elk" 0 $?
# elk run ends only once its command is gone, and only its own SIGKILL can do that
wait_until 60 gone "$RUN"
check "b) elk run ended (its command is gone)" 0 $?
alive "$main"; check "b) the command, which ignored SIGTERM, is gone (elk's SIGKILL)" 1 $?
alive "$child"; check "b) its child, which ignored SIGTERM too, is gone" 1 $?
if gone "$RUN"; then
  wait $RUN; check "b) elk run exits 75" 75 $?
else
  kill -KILL "$RUN" "$main" "$child" 2>/dev/null
fi
check_contains "b) elk says it killed the command at the end of the margin" \
  "stop margin over; killing the command" "$(cat "$ELK_T_DIR/lost.err")"
start_deadline=$(cut -d' ' -f4 "$M/lease_at_start" 2>/dev/null)
[ "${start_deadline:-0}" -gt 0 ] 2>/dev/null; check "b) the lease file had the deadline at start ($start_deadline)" 0 $?
check "b) the lease file, read on SIGTERM, says the lease ended" "elklease 1 7 0" "$(cat "$M/lease_at_term" 2>/dev/null)"
grep -q "RELEASE valve-1" "$LOG"; check "b) a lost lease is not released by elk" 1 $?
kill -KILL "$main" "$child" 2>/dev/null
wait $FAKE_PID 2>/dev/null

# c) A left-over child that ignores SIGTERM: only elk's own SIGKILL ends it.
rm -f "$M"/*
fake_elkd plain
"$ELK" --socket "$SOCK" run valve-1 -- sh -c "
  ( trap '' TERM; while :; do sleep 0.05; done ) >/dev/null 2>&1 & echo \$! > $M/leftover.tmp
  mv $M/leftover.tmp $M/leftover
  exit 0" 2>"$ELK_T_DIR/leftover.err" &
RUN=$!
track $RUN
wait_until 60 file_has . "$M/leftover"
left=$(cat "$M/leftover" 2>/dev/null)
[ -n "$left" ] && track "$left"
wait_until 60 gone "$RUN"
check "c) elk run ended" 0 $?
if gone "$RUN"; then wait $RUN; check "c) elk run exits with the command's status" 0 $?; fi
check_contains "c) elk says it stops what the command left" "left processes in its group" \
  "$(cat "$ELK_T_DIR/leftover.err")"
grep -q "at RELEASE: leftover alive=0" "$LOG"
check "c) elk released, and only once the left-over child was gone (elk's SIGKILL)" 0 $?
alive "$left"; check "c) the left-over child is gone" 1 $?
kill -KILL "$RUN" "$left" 2>/dev/null
wait $FAKE_PID 2>/dev/null
finish
