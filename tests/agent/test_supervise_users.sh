#!/bin/bash
# SPDX-License-Identifier: MIT
# SUPERVISE never crosses users (issue 26). elkd holds CAP_KILL; a client must not make it
# signal another account's processes. Real elkd, real redis-server, two real accounts:
#   a) a root script starts a root process, then a client as nobody in the same process
#      group (setpriv keeps it), which takes the lease, asks elkd to supervise its own
#      group and exits: the answer is ELK_E_SUPERVISE_DENIED and the root process lives
#      on after the lease has ended. Before the fix: OK SUPERVISED, and elkd SIGTERMed
#      the root process (and the script) when the client left.
#   b) a valid SUPERVISE of a group of nobody's; then a root process joins the group and
#      the client exits: elkd sends no signal to the group at all (neither member gets
#      SIGTERM) and lets the lease run out instead of releasing it. Before the fix: both
#      got SIGTERM.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! command -v setsid >/dev/null; then
  echo "skipped: needs root, setpriv and setsid (two real accounts)"; exit 0
fi
chmod 0755 "$ELK_T_DIR" # nobody must reach the socket inside it
CLIENT="$(cd "$(dirname "$0")" && pwd)/sup_client.py"
as_nobody() { setpriv --reuid nobody --regid nogroup --clear-groups -- "$@"; }
# ttl 3 s: about 1.7 s between a renewal and its deadline. At 2 s (about 1 s) a stall while
# b)'s joiner started lost the lease before the client left, and elkd's record then named
# another end than the abandoned one b) checks.
elkd_up a <<CONF
$(resource valve-1 3s 300ms)
$(agent_section)
socket_mode = 0666
log_level = debug
CONF
LOG="$ELK_T_DIR/elkd.log"

# a) The root script, in a session (and process group) of its own so that elkd, before
#    the fix, kills only it and not this test.
A="$ELK_T_DIR/a"; mkdir -p "$A"; chmod 0777 "$A"
setsid bash -c '
  sleep 600 & echo $! > "$1/sleeper"
  echo $$ > "$1/script"
  setpriv --reuid nobody --regid nogroup --clear-groups -- /usr/bin/python3 "$2" "$3" valve-1 own "$1" > "$1/client.out" 2>&1
  echo $? > "$1/client.rc"
  wait' a-script "$A" "$CLIENT" "$SOCK" &
track $!
wait_until 60 file_has . "$A/client.rc"
check "a) the nobody client ran to its end" 0 "$(cat "$A/client.rc" 2>/dev/null)"
sleeper=$(cat "$A/sleeper"); track "$sleeper"
check_contains "a) nobody got the lease" "OK ACQUIRED valve-1" "$(cat "$A/client.out")"
check_contains "a) SUPERVISE of a group with a root process: ELK_E_SUPERVISE_DENIED" \
  "ERR ELK_E_SUPERVISE_DENIED" "$(sed -n 2p "$A/client.out")"
check_contains "a) the refusal names the root process" "runs as uid 0" "$(sed -n 2p "$A/client.out")"
# The lease has ended: another client gets it (generous bound; an orphaned lease would
# run out within its ttl anyway).
"$ELK" --socket "$SOCK" run --wait 60s valve-1 -- true
check "a) the lease ended: root takes valve-1 next" 0 $?
alive "$sleeper"; check "a) the root process is alive after the lease ended" 0 $?
alive "$(cat "$A/script")"; check "a) the root script is alive after the lease ended" 0 $?
grep -q "refused: process [0-9]* in the group runs as uid 0" "$LOG"
check "a) elkd logged the refusal" 0 $?
kill "$sleeper" 2>/dev/null

# b) A valid SUPERVISE; then root joins the group; then the client leaves.
B="$ELK_T_DIR/b"; mkdir -p "$B"; chmod 0777 "$B"
as_nobody /usr/bin/python3 "$CLIENT" "$SOCK" valve-1 child "$B" > "$B/client.out" 2>&1 &
b_client=$!
track $b_client
wait_until 60 file_has . "$B/supervised"
check_contains "b) nobody's own child group is supervised" "OK SUPERVISED valve-1" "$(cat "$B/client.out")"
G=$(cat "$B/supervised" 2>/dev/null); child=$(cat "$B/child" 2>/dev/null)
[ -n "$G" ] && [ -n "$child" ] || { bad "b) no supervised group: cannot go on"; finish; }
track "$child"
# a root process joins group G (same session: the client was started from here)
python3 - "$G" "$B" <<'PY' &
import os, signal, sys, time
g, d = int(sys.argv[1]), sys.argv[2]
signal.signal(signal.SIGTERM, lambda *a: open(d + "/root.termed", "w").close())
os.setpgid(0, g)
open(d + "/root", "w").write(str(os.getpid()))
end = time.monotonic() + 300
while time.monotonic() < end:
    time.sleep(0.05)
PY
joiner=$!
track $joiner
wait_until 60 file_has . "$B/root"
check "b) the root process is in group $G" "$G" "$(ps -o pgid= -p "$joiner" | tr -d ' ')"
: > "$B/go"
wait_until 60 gone "$b_client"
check "b) the client has left" 0 $?
wait_until 60 file_has "giving up on process group $G" "$LOG"
check "b) elkd gave up on the group instead of signalling it" 0 $?
grep -q "giving up on process group $G (process [0-9]* in the group runs as uid 0.*not releasing the lease" "$LOG"
check "b) elkd says why and that the lease is left to run out" 0 $?
"$ELK" --socket "$SOCK" run --wait 60s valve-1 -- true
check "b) the lease ended (ran out): root takes valve-1 next" 0 $?
alive "$joiner"; check "b) the root member is alive after the lease ended" 0 $?
[ ! -e "$B/root.termed" ]; check "b) the root member got no SIGTERM" 0 $?
[ ! -e "$B/child.termed" ]; check "b) nobody's member got no SIGTERM either (no signal to the group)" 0 $?
alive "$child"; check "b) nobody's member is alive" 0 $?
# ended only by running out: its LOST at the deadline, and no release of its token
tok=$(sed -n 's/^OK ACQUIRED valve-1 \([0-9]*\) .*/\1/p' "$B/client.out")
grep -q "valve-1: LOST (lease given up.*), token $tok," "$LOG"
check "b) the lease (token $tok) ended by running out (abandoned)" 0 $?
grep -q "valve-1: released .*token $tok," "$LOG"
check "b) the lease (token $tok) was never released early" 1 $?
kill -KILL "$joiner" "$child" 2>/dev/null
finish
