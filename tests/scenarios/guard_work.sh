#!/bin/bash
# SPDX-License-Identifier: MIT
# A holder's command in scenario 8 (s8_guard_hold.sh): drives a pretend actuator in steps.
#   guard_work.sh GATEWAY STEPS [hold|check]     (STEPS 0 = until stopped)
#   guard_work.sh step GATEWAY TOKEN             (one step; run by elk guard in hold mode)
# Env: ELK, STEP_LOG, ACT_STATE; ELK_FENCE_TOKEN from elk run. Every step logs its start and
# its end in true time (date +%s%N; the scenario never fakes this clock):
#   <ns> <gateway> <token> start|end|refused
# hold:  elk guard --state S TOKEN -- <step>   (check and hold: the documented way)
# check: elk guard --state S TOKEN && <step>   (check, then act: the negative control)
unset LD_PRELOAD FAKETIME
step() { # step GW TOKEN: one actuator step of about 40 ms
  local gw=$1 tok=$2
  echo "$(date +%s%N) $gw $tok start" >>"$STEP_LOG"
  trap 'echo "$(date +%s%N) $gw $tok end" >>"$STEP_LOG"; exit 143' TERM INT
  sleep 0.04 &
  wait $!
  echo "$(date +%s%N) $gw $tok end" >>"$STEP_LOG"
}
if [ "$1" = step ]; then
  step "$2" "$3"
  exit 0
fi
gw=$1 steps=$2 mode=${3:-hold}
tok=${ELK_FENCE_TOKEN:-0}
stopping=0
trap 'stopping=1' TERM INT
i=0
while [ $stopping -eq 0 ]; do
  if [ "$mode" = check ]; then
    if "$ELK" guard --state "$ACT_STATE" "$tok" 2>/dev/null; then step "$gw" "$tok"; ok=1; else ok=0; fi
  else
    if "$ELK" guard --state "$ACT_STATE" "$tok" -- "$0" step "$gw" "$tok" 2>/dev/null; then ok=1; else ok=0; fi
  fi
  if [ $ok -eq 0 ]; then
    echo "$(date +%s%N) $gw $tok refused" >>"$STEP_LOG"
    sleep 0.01
  fi
  i=$((i + 1))
  [ "$steps" -gt 0 ] && [ $i -ge "$steps" ] && break
done
[ $stopping -eq 1 ] && exit 143
exit 0
