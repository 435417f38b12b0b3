#!/bin/bash
# SPDX-License-Identifier: MIT
# The holder's command under `elk run --heartbeat` (scenario 12): work.sh drives the actuator,
# while a writer proves it alive on $ELK_HEARTBEAT_FD, one byte every 0.2 s.
# hb_work.sh GATEWAY TICKS TICK_SECONDS HEARTBEAT_MS MODE
#   HEARTBEAT_MS       how long the proof goes on (-1: as long as the command runs); after
#                      that the command hangs as far as elk can tell, but keeps driving
#   MODE term          the command stops on SIGTERM (work.sh's own handling)
#        ignore-term   it ignores SIGTERM (a hung program): only SIGKILL ends it
# The last proof's time (CLOCK_REALTIME ms) is in $S_DIR/hb-last; the pid in $S_DIR/hb-pid.
gw=$1 ticks=$2 tick=$3 hb=$4 mode=$5
[ -n "${ELK_HEARTBEAT_FD:-}" ] || { echo "hb_work.sh: no ELK_HEARTBEAT_FD" >&2; exit 2; }
echo $$ >"$S_DIR/hb-pid"
(
  end=$((${EPOCHREALTIME/./} / 1000 + hb))
  while [ "$hb" -lt 0 ] || [ $((${EPOCHREALTIME/./} / 1000)) -lt $end ]; do
    printf . >&"$ELK_HEARTBEAT_FD" || exit 0
    t=${EPOCHREALTIME/./}
    echo $((t / 1000)) >"$S_DIR/hb-last"
    sleep 0.2
  done
) &
wpid=$!
# only the writer proves life: the worker must not hold the pipe open
exec {ELK_HEARTBEAT_FD}>&-
[ "$mode" = ignore-term ] && trap '' TERM
bash "$(dirname "$0")/work.sh" "$gw" "$ticks" "$tick"
rc=$?
kill "$wpid" 2>/dev/null
exit $rc
