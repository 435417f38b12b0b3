#!/bin/bash
# SPDX-License-Identifier: MIT
# Issue 19: `elk status --watch` redraws the status on a terminal every second (checked
# in a tmux pane), plain frames when stdout is not a terminal; `elk run --wait` on a
# terminal shows who holds the resource and how long it has waited, on one line.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
start_redis a; start_redis b; start_redis c
{ fleet3_conf gw-watch w:; printf '[resource valve-1]\nttl = 3s\n[resource door]\nttl = 2s\n[agent]\nsocket = %s\n' "$SOCK"; } > "$C"
start_elkd "$C"
wait_ready
E() { "$ELK" --socket "$SOCK" "$@"; }
# held until the test lets it go (kill -TERM below): a fixed hold time would make the last
# part depend on how fast a loaded machine got there
E run valve-1 -- sleep 600 &
HOLD=$!
track $HOLD
wait_for 60 "E status | grep -q 'valve-1 .*held'"

# Not a terminal: plain frames, one per second.
out=$(E status --watch --count 2); rc=$?
check "--watch --count 2 exits 0" 0 $rc
check "two plain frames" 2 "$(printf '%s\n' "$out" | grep -c '^elkd ')"
check "no escape codes off a terminal" 0 "$(printf '%s\n' "$out" | grep -c $'\033')"
check_contains "validity bar" "[#" "$out"

if ! command -v tmux >/dev/null 2>&1; then
  echo "skip: tmux not installed"; finish
fi
# Each pane gets a tmux server of its own (-L): a second session started on the server the
# first one's kill-session is shutting down could be lost (a loaded CI machine saw the
# second pane's command never run). No tmux call may block the test: each is bounded.
TS="elkwatch$$"; TSRV=watch
T() { TMUX_TMPDIR="$ELK_T_DIR" timeout 20 tmux -L "$TSRV" -f /dev/null "$@"; }
pane() { # server command: a new session on its own server, running command
  TSRV=$1
  T new-session -d -s "$TS" -x 120 -y 50 "$2"
  check "tmux session for '$2' started" 0 $?
}
stop_tmux() { T kill-server 2>/dev/null; }
trap 'TSRV=watch stop_tmux; TSRV=wait stop_tmux; cleanup' EXIT
screen() { T capture-pane -p -t "$TS"; }
pane watch "$ELK --socket $SOCK status --watch; sleep 600"
wait_for 60 "screen | grep -q 'valve-1'"
s1=$(screen)
printf '%s\n' "$s1" > "$ELK_T_DIR/screen1.txt"
cat "$ELK_T_DIR/screen1.txt"
check_contains "the screen shows the held resource" "valve-1" "$s1"
check_contains "with its holder" "pid:" "$s1"
check_contains "and a validity bar" "█" "$s1"
check_contains "and the nodes" "ready" "$s1"
t1=$(printf '%s\n' "$s1" | grep -o '[0-9][0-9]:[0-9][0-9]:[0-9][0-9]$' | head -1)
# redrawn: the clock in the frame's corner moved on (t2 is read by the check below)
redrawn() {
  t2=$(screen | grep -o '[0-9][0-9]:[0-9][0-9]:[0-9][0-9]$' | head -1)
  [ -n "$t2" ] && [ "$t2" != "$t1" ]
}
wait_until 60 redrawn
[ -n "$t2" ] && [ "$t2" != "$t1" ]; check "the screen is redrawn ($t1 -> $t2)" 0 $?
check "one frame on the screen after a redraw (drawn over, not scrolled)" 1 "$(screen | grep -c '^elkd ')"
stop_tmux

# elk run --wait on a terminal: one updating line naming the holder and the time waited.
pane wait "$ELK --socket $SOCK run --wait 60s valve-1 -- echo got-it; sleep 600"
wait_for 60 "screen | grep -q 'waiting for valve-1'"
wait_for 60 "screen | grep -q 'waited [1-9]'"
w=$(screen)
printf '%s\n' "$w"
check_contains "the wait line names the holder" "held by pid" "$w"
check "one line, updated in place" 1 "$(printf '%s\n' "$w" | grep -c 'waiting for valve-1')"
secs=$(printf '%s\n' "$w" | grep -o 'waited [0-9]* s' | grep -o '[0-9]*')
[ "${secs:-0}" -ge 1 ]; check "and counts the wait (${secs:-none} s)" 0 $?
holder=$(printf '%s\n' "$w" | grep -o 'held by pid [0-9]*' | grep -o '[0-9]*$')
kill -TERM "${holder:-$HOLD}"
wait_for 60 "screen | grep -q 'got-it'"
check_contains "then gets the lease" "got-it" "$(screen)"
stop_tmux
# a reader that leaves (| head): elk ends, quietly, instead of writing frames into a closed
# pipe forever (SIGPIPE is ignored in elk); the 60 s bound only stops a broken elk
t0=$(now_ms)
timeout 60 "$ELK" --socket "$SOCK" status --watch 2>"$ELK_T_DIR/pipe.err" | head -3 >/dev/null
rc=${PIPESTATUS[0]}
check "status --watch | head: elk ends by itself (exit 0, not the timeout's 124)" 0 "$rc"
check "and says nothing on stderr" "" "$(cat "$ELK_T_DIR/pipe.err")"
figure watch_pipe_end_ms $(($(now_ms) - t0))
finish
