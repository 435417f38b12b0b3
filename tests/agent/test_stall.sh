#!/bin/bash
# SPDX-License-Identifier: MIT
# A client that stops reading (docs/control-protocol.md): elkd declares it stalled only
# after client_stall_timeout without progress (ELK_E_CTL_STALLED), and since it may still
# be alive and driving, its lease is neither released nor handed on: no other local client
# (one that was already waiting, or one that asks after the drop) gets the resource before
# that lease has run out. Checked from elkd's own log: the times of the drop, of the
# lease's run-out and of each later grant.
ELKD=$1 ELK=$2
. "$(dirname "$0")/lib.sh"
STALL_MS=1000
elkd_up a <<CONF
$(resource valve-1 4s 300ms)
$(agent_section)
client_stall_timeout = ${STALL_MS}ms
CONF
L="$ELK_T_DIR/elkd.log"
out=$(/usr/bin/python3 - "$SOCK" "$L" <<'PY'
import socket, sys, time
path, log = sys.argv[1], sys.argv[2]
def conn():
    s = socket.socket(socket.AF_UNIX); s.connect(path); s.settimeout(90)
    return s, s.makefile("rb")
def answer(f):
    while True:
        l = f.readline().decode()
        if not l.startswith("EVENT"):
            return l.strip()
# A takes the lease, W waits for it behind A on this agent.
a, af = conn()
a.sendall(b"ACQUIRE valve-1\n")
print("A:", answer(af))
w, wf = conn()
w.sendall(b"ACQUIRE valve-1 90s\n")
# A stops reading: it keeps asking (STATUS METRICS) until elkd stops taking its requests,
# and reads nothing more; the process stays alive (it may still be driving).
a.setblocking(False)
sent = 0
try:
    while True:
        sent += a.send(b"STATUS METRICS\n" * 64)
except (BlockingIOError, BrokenPipeError, ConnectionResetError):
    pass
print("A stopped reading after sending %d bytes" % sent, flush=True)
# Wait (generously) for elkd to declare A stalled, then a newcomer N asks too.
for _ in range(1200):
    if "ELK_E_CTL_STALLED" in open(log, errors="replace").read():
        break
    time.sleep(0.05)
else:
    print("A was never declared stalled")
    sys.exit(1)
n, nf = conn()
n.sendall(b"ACQUIRE valve-1 90s\n")
gw = answer(wf)
print("W:", gw)
w.sendall(b"RELEASE valve-1\n"); print("W release:", answer(wf))
print("N:", answer(nf))
n.sendall(b"RELEASE valve-1\n"); print("N release:", answer(nf))
a.close()
PY
)
echo "$out"
check_contains "A got the lease" "A: OK ACQUIRED valve-1" "$out"
check_contains "W got the lease in the end" "W: OK ACQUIRED valve-1" "$out"
check_contains "N got the lease in the end" "N: OK ACQUIRED valve-1" "$out"
grep -q "ELK_E_CTL_STALLED" "$L"; check "elkd declared the client that stopped reading stalled" 0 $?
tok() { printf '%s\n' "$out" | sed -n "s/^$1: OK ACQUIRED valve-1 \([0-9]*\) .*/\1/p"; }
ta=$(tok A) tw=$(tok W) tn=$(tok N)
[ -n "$ta" ] && [ -n "$tw" ] && [ "$tw" -gt "$ta" ] && [ "$tn" -gt "$tw" ]
check "W and N got new leases (tokens A=$ta W=$tw N=$tn), not A's hold" 0 $?

# From elkd's log (HH:MM:SS.mmm): when A was dropped, when its lease ran out, every grant.
ms() { awk -F'[:.Z ]' '{ print (($1 * 60 + $2) * 60 + $3) * 1000 + $4 }'; }
stall_line=$(grep -m1 "ELK_E_CTL_STALLED" "$L")
ab_line=$(grep -m1 "valve-1: .*stopped reading its replies while holding it; it may still be driving: the lease is no longer renewed and runs out in" "$L")
echo "stalled: $stall_line"
echo "abandoned: $ab_line"
t_ab=$(printf '%s\n' "$ab_line" | ms)
left=$(printf '%s\n' "$ab_line" | sed -n 's/.*runs out in \([0-9]*\) ms.*/\1/p')
[ -n "$t_ab" ] && [ -n "$left" ]; check "elkd let A's lease run out instead of releasing it" 0 $?
runout=$(( ${t_ab:-0} + ${left:-0} ))
stuck=$(printf '%s\n' "$stall_line" | sed -n 's/.*none taken for \([0-9]*\) ms.*/\1/p')
[ -n "$stuck" ] && [ "$stuck" -ge "$STALL_MS" ]; check "stalled only after the bound ($stuck ms >= $STALL_MS ms)" 0 $?
early=0 n=0 first=
while read -r line; do
  t=$(printf '%s\n' "$line" | ms)
  n=$((n + 1))
  first=${first:-$t}
  # 5 ms: elkd's log clock (CLOCK_REALTIME) against its lease clock (CLOCK_BOOTTIME)
  if [ "$t" -lt $((runout - 5)) ]; then early=$((early + 1)); echo "early grant: $line"; fi
done < <(grep "valve-1: granted to client" "$L" | awk -v s="$t_ab" -F'[:.Z ]' '(($1 * 60 + $2) * 60 + $3) * 1000 + $4 >= s')
echo "measure: A dropped as stalled after ${stuck:-?} ms without progress; its lease ran out $left ms later; $n later grants, the first $(( ${first:-0} - runout )) ms after the run-out"
check "grants after A was dropped" 2 "$n"
check "grants before A's lease ran out" 0 "$early"
finish
