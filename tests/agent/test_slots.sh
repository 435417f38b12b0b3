#!/bin/bash
# SPDX-License-Identifier: MIT
# Client slots (docs/control-protocol.md): two accounts that fill every slot make every
# `elk` command exit 74 (agent full) with elkd's message, not 69 (unreachable) or 73 (not
# acquired); a connection that holds and sends nothing is closed after
# client_idle_timeout, one that holds a lease is not; a flood of refused connections
# writes a few log lines and a count of those left out, not one line each.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
  echo "skipped: needs root and setpriv (two real accounts)"; exit 0
fi
chmod 0755 "$ELK_T_DIR" # nobody and daemon must reach the socket inside it
IDLE_MS=3000
elkd_up a <<CONF
$(resource valve-1 3s 300ms)
$(agent_section)
socket_mode = 0666
client_idle_timeout = ${IDLE_MS}ms
CONF
L="$ELK_T_DIR/elkd.log"
slots=$("$ELK" --socket "$SOCK" status | sed -n 's/.* clients=[0-9]*\/\([0-9]*\).*/\1/p')
half=$(( ${slots:-16} / 2 ))

# 1. nobody and daemon take half the slots each (the default share) and keep them busy with
#    a PING every 300 ms, so the idle bound does not free them.
FILL="$ELK_T_DIR/fill.py"
cat > "$FILL" <<'PY'
import socket, sys, time
path, n, ready, stop = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
import os
conns = []
for i in range(n):
    end = time.monotonic() + 60   # bounded by time, not by a count of tries
    while time.monotonic() < end:
        c = socket.socket(socket.AF_UNIX); c.connect(path)
        c.sendall(b"PING\n")
        r = c.recv(300).decode()
        if r.startswith("OK PONG"):
            conns.append(c); break
        c.close(); time.sleep(0.1)   # a slot of a client that just left may not be free yet
open(ready, "w").write("%d\n" % len(conns))
while not os.path.exists(stop):
    for c in conns:
        c.sendall(b"PING\n"); c.recv(300)
    time.sleep(0.3)
PY
F="$ELK_T_DIR/fill"; mkdir -p "$F"; chmod 1777 "$F" # the fillers write their readiness there
STOP="$F/stop"
setpriv --reuid nobody --regid nogroup --clear-groups -- /usr/bin/python3 "$FILL" "$SOCK" "$half" "$F/ready-nobody" "$STOP" &
track $!
setpriv --reuid daemon --regid daemon --clear-groups -- /usr/bin/python3 "$FILL" "$SOCK" "$half" "$F/ready-daemon" "$STOP" &
track $!
wait_until 60 test -s "$F/ready-nobody" && wait_until 60 test -s "$F/ready-daemon"
check "nobody and daemon hold $half slots each" "$half $half" "$(cat "$F/ready-nobody") $(cat "$F/ready-daemon")"
out=$("$ELK" --socket "$SOCK" status 2>&1); rc=$?
echo "$out"
check "full agent: root's elk status exits 74 (agent full)" 74 $rc
check_contains "full agent: elk status prints elkd's answer" "ELK_E_AGENT_FULL" "$out"
out=$("$ELK" --socket "$SOCK" run valve-1 -- true 2>&1); rc=$?
echo "$out"
check "full agent: root's elk run exits 74 (agent full)" 74 $rc
check_contains "full agent: elk run prints elkd's answer" "ELK_E_AGENT_FULL" "$out"
out=$("$ELK" --socket "$SOCK" acquire valve-1 2>&1); rc=$?
check "full agent: root's elk acquire exits 74 (agent full)" 74 $rc
out=$(/usr/bin/python3 - "$SOCK" <<'PY'
import socket, sys
c = socket.socket(socket.AF_UNIX); c.connect(sys.argv[1]); c.settimeout(30)
print(c.makefile("rb").readline().decode().strip())
PY
)
check_contains "full agent: a raw client reads ERR ELK_E_AGENT_FULL before the close" "ERR ELK_E_AGENT_FULL" "$out"

# 2. A flood of refused connections: far fewer log lines than connections, and a count.
N=2000
before=$(wc -l < "$L")
/usr/bin/python3 - "$SOCK" "$N" <<'PY'
import socket, sys
for i in range(int(sys.argv[2])):
    c = socket.socket(socket.AF_UNIX); c.connect(sys.argv[1]); c.recv(300); c.close()
PY
touch "$STOP"
# refusal lines written since the flood began, and those counted in summaries (each comes
# when the rate limit's interval of 10 s ends): wait until every refusal is one or the other
flood_counts() {
  local t
  t=$(tail -n +"$((before + 1))" "$L")
  flood=$(printf '%s\n' "$t" | grep -v "similar lines\? suppressed" | grep -c "refused: all client slots are taken")
  sup=$(printf '%s\n' "$t" | sed -n 's/.* \([0-9]*\) similar lines\? suppressed in the last .*refused: all client slots are taken.*/\1/p' | awk '{s += $1} END {print s + 0}')
  [ $((flood + sup)) -ge "$N" ]
}
wait_until 90 flood_counts
echo "measure: flood of $N refused connections: $flood refusal lines written, $sup counted as suppressed, $(( $(wc -l < "$L") - before )) log lines in all"
[ "$flood" -ge 1 ] && [ "$flood" -le 50 ]; check "flood: a few refusal lines, not $N ($flood)" 0 $?
check "flood: every refusal is either written or counted" "$N" "$((flood + sup))"

# 3. Idle bound: a connection that holds nothing and says nothing is closed after it; one
#    holding a lease, as silent, is not.
out=$(/usr/bin/python3 - "$SOCK" "$IDLE_MS" <<'PY'
import socket, sys, time
path, idle = sys.argv[1], int(sys.argv[2]) / 1000.0
def conn():
    c = socket.socket(socket.AF_UNIX); c.connect(path); c.settimeout(60)
    return c, c.makefile("rb")
first = ""
end = time.monotonic() + 60
while time.monotonic() < end:   # the fillers' slots are being freed
    h, hf = conn()
    try:
        h.sendall(b"ACQUIRE valve-1 10s\n")
        first = hf.readline().decode()
    except OSError:
        first = ""
    if first.startswith("OK ACQUIRED"):
        break
    h.close(); time.sleep(0.1)
print("holder:", first.split(" deadline")[0].strip())
i, jf = conn(); i.sendall(b"PING\n"); print("idle:", jf.readline().decode().strip())
t0 = time.monotonic()
eof = jf.readline()           # blocks until elkd closes it (60 s at most)
print("idle closed: %s after %.1f s" % ("yes" if eof == b"" else repr(eof), time.monotonic() - t0))
time.sleep(idle)              # the holder has now been silent for more than twice the bound
h.sendall(b"PING\n")
while True:
    l = hf.readline().decode()
    if not l.startswith("EVENT"):
        break
print("holder after %.1f s of silence: %s" % (time.monotonic() - t0, l.strip()))
h.sendall(b"RELEASE valve-1\n")
while True:
    l = hf.readline().decode()
    if not l.startswith("EVENT"):
        break
print("holder release:", l.strip())
PY
)
echo "$out"
check_contains "idle: the holder got its lease" "holder: OK ACQUIRED valve-1" "$out"
check_contains "idle: the silent connection that held nothing was closed" "idle closed: yes" "$out"
check_contains "idle: the silent holder is still served" "s of silence: OK PONG" "$out"
check_contains "idle: and still holds its lease" "holder release: OK RELEASED valve-1" "$out"
ms=$(sed -n 's/.*closed: it held nothing and sent nothing for \([0-9]*\) ms.*/\1/p' "$L" | tail -1)
echo "measure: idle connection closed after ${ms:-?} ms (bound $IDLE_MS ms)"
[ -n "$ms" ] && [ "$ms" -ge "$IDLE_MS" ]; check "idle: closed no earlier than the bound (elkd's log: ${ms:-none} ms)" 0 $?

# 4. The refusals are counted for the metrics (the EdgelockAgentFull alert reads them): the
#    three of root's commands and the flood, at least (a slot is free again by now).
refusals=""
metric() { refusals=$("$ELK" --socket "$SOCK" status --metrics 2>/dev/null | sed -n 's/^elk_agent_full_refusals_total \([0-9]*\)$/\1/p'); [ -n "$refusals" ]; }
wait_until 60 metric
[ -n "$refusals" ] && [ "$refusals" -ge $((N + 3)) ]; check "metrics: elk_agent_full_refusals_total counts them (${refusals:-none} >= $((N + 3)))" 0 $?
check_contains "metrics: the slots are told" "elk_agent_client_slots " "$("$ELK" --socket "$SOCK" status --metrics)"
finish
