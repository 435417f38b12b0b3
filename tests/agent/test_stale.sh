#!/bin/bash
# SPDX-License-Identifier: MIT
# elk run / elk acquire against a scripted elkd (a Python server on the control socket):
# a grant read late must not be used. The grant comes together with an EVENT LOST, or with
# an absolute deadline (deadline_boottime_ms, CLOCK_BOOTTIME) that has already passed, or
# with one that leaves less than its <validity_ms> says: the command must not start in the
# first two cases (exit 75), and ELK_DEADLINE_MS must follow the absolute deadline in the third.
ELK=$1
ELKD=unused
. "$(dirname "$0")/lib.sh"
SOCK="$ELK_T_DIR/fake.sock"

# fake_elkd MODE...: one scripted elkd for all the cases (a Python start costs seconds on a
# loaded machine: one process, not one per case). Its Nth connection is answered as the Nth
# MODE says (one ACQUIRE), then kept open until the client closes it; it exits after the last.
fake_elkd() {
  rm -f "$SOCK"
  python3 - "$SOCK" "$@" <<'PY' &
import os, socket, sys, time
path, modes = sys.argv[1], sys.argv[2:]
try:
    os.unlink(path)
except FileNotFoundError:
    pass
# bound and listening under another name first: the path appears only once a connect
# can succeed (the harness waits for the path; bind-then-listen left a refused window)
s = socket.socket(socket.AF_UNIX); s.bind(path + ".new"); s.listen(4); os.rename(path + ".new", path)
for mode in modes:
    c, _ = s.accept()
    req = b""
    while b"\n" not in req:
        d = c.recv(512)
        if not d:
            break
        req += d
    now = int(time.clock_gettime(time.CLOCK_BOOTTIME) * 1000)
    if mode == "lost":
        msg = "OK ACQUIRED valve-1 5 9000 300 deadline_boottime_ms=%d\nEVENT LOST valve-1 ELK_E_LOCK_LOST 300\n" % (now + 9000)
    elif mode == "shutdown":
        msg = "OK ACQUIRED valve-1 5 9000 300 deadline_boottime_ms=%d\nEVENT SHUTDOWN\n" % (now + 9000)
    elif mode == "expired":
        # validity_ms still says 9 s, but the absolute deadline is 2 s in the past
        msg = "OK ACQUIRED valve-1 5 9000 300 deadline_boottime_ms=%d\n" % (now - 2000)
    else:  # short: 9 s claimed, 3 s left by the absolute deadline (1.5 s: elk run held up
        # that long on a loaded machine found the lease over and never started the command)
        msg = "OK ACQUIRED valve-1 5 9000 300 deadline_boottime_ms=%d\n" % (now + 3000)
    try:
        c.sendall(msg.encode())
        c.settimeout(60)
        while True:
            data = c.recv(512)
            if not data:
                break
            # elk run hands its command's process group over before the command starts
            for line in data.decode().splitlines():
                if line.startswith("SUPERVISE "):
                    c.sendall(("OK SUPERVISED %s\n" % line.split()[1]).encode())
                # elk gives a grant it will not use back and waits for the word (2 s at
                # most): answer at once, as elkd does
                elif line.startswith("RELEASE "):
                    c.sendall(("OK RELEASED %s\n" % line.split()[1]).encode())
    except Exception:
        pass
    c.close()
PY
  FAKE_PID=$!
  track $FAKE_PID
  wait_until 30 test -S "$SOCK" && return 0
  echo "fake elkd did not start"; exit 1
}

fake_elkd lost lost shutdown shutdown expired expired short
for mode in lost shutdown expired; do
  rm -f "$ELK_T_DIR/started"
  "$ELK" --socket "$SOCK" run valve-1 -- touch "$ELK_T_DIR/started" 2>"$ELK_T_DIR/run.err"; rc=$?
  check "run, grant + $mode: exit 75" 75 $rc
  [ ! -e "$ELK_T_DIR/started" ]; check "run, grant + $mode: the command never started" 0 $?
  check_contains "run, grant + $mode: says why" "not starting it" "$(cat "$ELK_T_DIR/run.err")"

  "$ELK" --socket "$SOCK" acquire valve-1 >"$ELK_T_DIR/acq.out" 2>"$ELK_T_DIR/acq.err"; rc=$?
  check "acquire, grant + $mode: exit 75" 75 $rc
  out=$(cat "$ELK_T_DIR/acq.out")
  case "$out" in *acquired*) bad "acquire, grant + $mode: reported acquired: $out" ;;
    *) ok "acquire, grant + $mode: not reported as acquired ($out)" ;; esac
done

# The command's deadline follows the absolute one (3 s left), not the 9 s of validity_ms.
"$ELK" --socket "$SOCK" run valve-1 -- sh -c 'echo "$ELK_DEADLINE_MS" > "$0"; sleep 5' "$ELK_T_DIR/dl" \
  2>"$ELK_T_DIR/short.err"; rc=$?
dl=$(cat "$ELK_T_DIR/dl" 2>/dev/null)
[ -n "$dl" ] && [ "$dl" -le 3000 ] && [ "$dl" -gt 0 ]
check "ELK_DEADLINE_MS from the absolute deadline (at most 3000, got '$dl')" 0 $?
check "the command outliving the absolute deadline is stopped: exit 75" 75 $rc
check_contains "stopped by elk's own deadline" "lease deadline passed" "$(cat "$ELK_T_DIR/short.err")"
wait $FAKE_PID 2>/dev/null
finish
