#!/bin/bash
# SPDX-License-Identifier: MIT
# Scenario 8 (issue 13): check and hold. Two gateways drive one actuator in ~40 ms steps
# through `elk guard --state S TOKEN -- step` under `elk run`. The holder's elkd and elk run
# are paused (SIGSTOP) past the lease while its command keeps driving, so the other gateway
# gets the lease with a higher token while the old holder's steps still run; then both are
# resumed. Every step logs its start and end in true time; steplog.py asserts that no two
# accepted steps of different tokens overlap. No flock(1): the guard serialises itself.
# S8_MODE=check runs the same with check-then-act (`elk guard ... && step`): the negative
# control, which the checker is expected to catch (exit 1 then means "no overlap seen").
# usage: s8_guard_hold.sh ELKD ELK
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
MODE=${S8_MODE:-hold}
# TTL 3 s: about 1.7 s between a renewal and its deadline. gw-b holds through 40 guarded
# steps; at 1.5 s (about 0.7 s) a loaded machine's stall lost its lease (exit 75).
TTL=3000 STOP=300
two_gateways $TTL $STOP
export ELK STEP_LOG="$S_DIR/steps.log" ACT_STATE="$S_DIR/valve.state"
: >"$STEP_LOG"
GWORK="$S_HERE/guard_work.sh"
# wait_step GW [TRIES] [EVENT]: until GW logged EVENT (default start); prints its token.
# Bounded by 60 s (TRIES is accepted and ignored: a count of tries is no bound of time).
step_seen() {
  local t
  t=$(awk -v g="$1" -v e="$2" '$2 == g && $4 == e {t = $3} END {print t}' "$STEP_LOG")
  [ -n "$t" ] && echo "$t"
}
wait_step() { wait_until 60 step_seen "$1" "${3:-start}"; }
count_steps() { awk -v g="$1" '$2 == g && $4 == "start"' "$STEP_LOG" | wc -l; }

say "== mode $MODE: gw-a drives; its elkd and elk run are paused past the lease"
run_bg gw-a RA valve -- "$GWORK" gw-a 0 "$MODE"
tokA=$(wait_step gw-a) || { bad "gw-a never drove the actuator"; finish; }
run_bg gw-b RB --wait 30s valve -- "$GWORK" gw-b 40 "$MODE"
kill -STOP "${ELKD_PID[gw-a]}" "$RA"
t_stop=$(now_ms)
say "paused elkd and elk run of gw-a (token $tokA); its command drives on"
tokB=$(wait_step gw-b 1000) || { bad "gw-b never got the lease while gw-a was paused"; finish; }
say "gw-b drives with token $tokB after $(($(now_ms) - t_stop)) ms"
[ "${tokB:-0}" -gt "$tokA" ]; check_true "gw-b's token ($tokB) is higher than the paused holder's ($tokA)" $?
# let gw-b drive a while with gw-a's command still trying, then resume gw-a
wait_for 30 '[ "$(count_steps gw-b)" -ge 10 ]'
kill -CONT "$RA" "${ELKD_PID[gw-a]}"
figure ${MODE}_pause_ms $(($(now_ms) - t_stop))
wait "$RA"; rc=$?
say "gw-a's elk run exited $rc after resume"
[ "$rc" -ne 0 ]; check_true "the paused holder's elk run stops its command (exit $rc)" $?
wait "$RB"; check "gw-b's run completes (exit 0)" 0 $?
late=$(awk -v t="$tokA" -v b="$tokB" '$3 == b && $4 == "start" && !s {s = 1} s && $3 == t && $4 == "refused"' "$STEP_LOG" | wc -l)
say "steps gw-a tried with token $tokA after gw-b's first step and the guard refused: $late"
figure ${MODE}_old_holder_refused "$late"
[ "$late" -ge 1 ]; check_true "the old holder really tried to drive during gw-b's steps" $?
if [ "$MODE" = check ]; then
  python3 "$S_HERE/steplog.py" "$STEP_LOG" --tag s8_check --expect-overlap
  check "negative control: check-then-act lets accepted steps overlap (the checker sees it)" 0 $?
else
  python3 "$S_HERE/steplog.py" "$STEP_LOG" --tag s8_hold
  check "check and hold: no two accepted steps of different tokens overlap" 0 $?
fi
finish
