#!/bin/bash
# SPDX-License-Identifier: MIT
# The holder's command in the scenarios: drives the simulated actuator while `elk run`
# holds the lease (through the actuator process, actuator.py, when lib.sh started one). work.sh GATEWAY TICKS TICK_SECONDS  (TICKS 0 = until told to stop)
# Env: ELK_FENCE_TOKEN (from elk run), ELK, ACT_LOG, ACT_STATE (from lib.sh act_init).
# Each tick is one actuator command, run the way docs/guard.md says an actuator must: checked
# and acted on under one hold of the guard (`elk guard --state S TOKEN -- act`), so the log
# line of an accepted tick is written while no other tick can be decided. No flock(1): the
# guard serialises itself across processes. A refused tick is logged after the guard returns.
# The gateway's clock may be faked (libfaketime): the actuator's must not be.
# The gateway's clock may be faked (libfaketime) for elk run, and so for this shell: start
# again without it, since the log's times are read by this very shell ($EPOCHREALTIME).
if [ -n "${LD_PRELOAD:-}${FAKETIME:-}" ]; then
  exec env -u LD_PRELOAD -u FAKETIME bash "$0" "$@"
fi
# With the actuator process of lib.sh act_init (ACT_SOCK): this command only sends it steps;
# each runs under `elk guard` on the actuator's side, so freezing this gateway freezes no step.
if [ -n "${ACT_SOCK:-}" ] && [ -S "$ACT_SOCK" ]; then
  exec python3 "$(dirname "$0")/actuator.py" client "$@"
fi
# Without it (a caller of its own): the steps run here, as before the actuator process.
gw=$1 ticks=$2 tick=$3
tok=${ELK_FENCE_TOKEN:-0}
# Times come from bash's $EPOCHREALTIME, not $(date ...): elk run stops the whole process
# group with SIGTERM, and a `date` child killed by it left a line without its time.
act() { # act EVENT: for a tick, guard + log line under one hold of the guard
  local t
  if [ "$1" = tick ]; then
    "$ELK" guard --state "$ACT_STATE" "$tok" -- \
      bash -c 't=${EPOCHREALTIME/./}; echo "${t}000 $1 $2 tick accepted" >> "$ACT_LOG"' _ "$gw" "$tok" \
      2>/dev/null && return
    t=${EPOCHREALTIME/./}
    echo "${t}000 $gw $tok tick refused" >>"$ACT_LOG"
    return
  fi
  t=${EPOCHREALTIME/./}
  echo "${t}000 $gw $tok $1 -" >>"$ACT_LOG"
}
stopping=0
trap 'stopping=1' TERM INT
act start
i=0
while [ $stopping -eq 0 ]; do
  act tick
  i=$((i + 1))
  [ "$ticks" -gt 0 ] && [ $i -ge "$ticks" ] && break
  sleep "$tick" &
  wait $! 2>/dev/null
done
act stop
[ $stopping -eq 1 ] && exit 143
exit 0
